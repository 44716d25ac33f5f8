#!/usr/bin/env bash
# The Python 3.9 floor of everything ceph-mgr loads (mgr_sla, crush_rules):
# Ceph's EL9 images (Squid, Tentacle) embed python3.9. Run by `tox -e lint`.
#
# vermin finds 3.10+ syntax and stdlib use (match, zip(strict=), new modules
# and functions). Its `X | Y` detection (--feature union-types) cannot tell a
# postponed annotation from an evaluated one, so it runs only on the files
# without `from __future__ import annotations`, where every annotation is
# evaluated at import (a dataclass field `x: int | None` raises TypeError on 3.9).
# The unit suite under a real 3.9 (tox -e unit-py39) backs this up.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
command -v vermin >/dev/null || { echo "check-py39: vermin is not installed (pip install vermin)" >&2; exit 1; }
vermin -q -t=3.9- --no-tips --violations mgr_sla crush_rules
mapfile -t evaluated < <(find mgr_sla crush_rules -name '*.py' -exec grep -L '^from __future__ import annotations' {} +)
if [ ${#evaluated[@]} -gt 0 ]; then
    vermin -q -t=3.9- --no-tips --violations --eval-annotations --feature union-types "${evaluated[@]}"
fi
echo "check-py39: mgr_sla and crush_rules need at most Python 3.9"
