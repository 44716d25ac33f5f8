#!/usr/bin/env bash
# Everything the demo and the test suite need on a fresh Debian bookworm
# machine, as root: Ceph Pacific from Debian, promtool, and the Python test
# tools. Safe to run again.
set -euo pipefail
[ "$(id -u)" -eq 0 ] || { echo "install-deps: run as root (apt-get)" >&2; exit 1; }

PACKAGES=(ceph-mon ceph-mgr ceph-osd ceph-common ceph-base
          prometheus uuid-runtime python3-venv python3-pip fio debootstrap)
missing=()
for p in "${PACKAGES[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
    # Packages' own services (prometheus) must not start here: tests start
    # what they need on loopback ports of their own.
    created_policy=0
    if [ ! -e /usr/sbin/policy-rc.d ]; then
        printf '#!/bin/sh\nexit 101\n' >/usr/sbin/policy-rc.d
        chmod +x /usr/sbin/policy-rc.d
        created_policy=1
    fi
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}"
    [ "$created_policy" -eq 0 ] || rm -f /usr/sbin/policy-rc.d
fi
python3 -m pip --version >/dev/null 2>&1 || { echo "install-deps: python3 has no pip" >&2; exit 1; }
python3 -m pip install -q --root-user-action=ignore 'tox>=4' 2>/dev/null \
    || python3 -m pip install -q --break-system-packages 'tox>=4'
