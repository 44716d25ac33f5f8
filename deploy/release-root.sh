#!/usr/bin/env bash
# release-root.sh - Debian roots holding a newer Ceph release, to run its
# daemons with `chroot ROOT ...` next to the host's Pacific; and one holding
# CPython 3.9, the mgr's interpreter in Ceph's EL9 images (deploy/python39.sh).
#
#   release-root.sh ensure reef|tentacle|py39 [--cache DIR]   build if missing; last stdout line = root
#   release-root.sh path   reef|tentacle|py39 [--cache DIR]   print the root if ready, else exit 1
#
# reef = Debian trixie (Ceph 18.2.x), tentacle = Debian sid (Ceph 20.2.x),
# py39 = Debian bullseye (python3.9 3.9.2, no Ceph).
# DIR defaults to $SLA_ROOT_CACHE or /var/cache/ceph-sla/roots. The mirror is
# the one the host's apt uses ($SLA_DEBIAN_MIRROR overrides). See
# docs/release-roots.md for running daemons from a root. `ensure` needs root.
set -euo pipefail

# fio (with its rados engine, against the root's own librados) drives the
# benchmarks' clients on a root's cluster.
PACKAGES=(ceph-mon ceph-mgr ceph-osd ceph-common ceph-base fio)

die() { echo "release-root: $*" >&2; exit 1; }
usage() { die "usage: release-root.sh ensure|path reef|tentacle|py39 [--cache DIR]"; }

[ $# -ge 2 ] || usage
cmd=$1 release=$2
shift 2
cache=${SLA_ROOT_CACHE:-/var/cache/ceph-sla/roots}
while [ $# -gt 0 ]; do
    case $1 in
        --cache) [ $# -ge 2 ] || usage; cache=$2; shift 2 ;;
        *) usage ;;
    esac
done
case $release in
    reef) suite=trixie ;;
    tentacle) suite=sid ;;
    py39) suite=bullseye
          PACKAGES=(python3.9 python3-distutils python3-venv) ;;
    *) usage ;;
esac
cache=$(realpath -m "$cache")
root=$cache/$release

if [ "$cmd" = path ]; then
    [ -f "$root/.sla-root-ok" ] || die "no $release root in $cache: run 'release-root.sh ensure $release'"
    echo "$root"
    exit 0
fi
[ "$cmd" = ensure ] || usage
[ "$(id -u)" = 0 ] || die "must run as root (debootstrap, mount and chroot need it)"

# Everything but the final path goes to stderr, so `r=$(release-root.sh ensure reef)` works.
exec 3>&1 1>&2

# The URI of the host's apt source for its own codename (one-line and deb822 files).
host_mirror() {
    local codename f
    codename=$(. /etc/os-release && echo "${VERSION_CODENAME:-}")
    [ -n "$codename" ] || return 0
    for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.list; do
        [ -f "$f" ] || continue
        sed -e 's/\[[^]]*\]//' "$f" | awk -v c="$codename" '$1 == "deb" && $3 == c { print $2 }'
    done
    for f in /etc/apt/sources.list.d/*.sources; do
        [ -f "$f" ] || continue
        awk -v c="$codename" '
            function flush() { if (on && uris != "" && (" " suites " ") ~ (" " c " ")) { split(uris, u, " "); print u[1] } uris = suites = ""; on = 1 }
            BEGIN { on = 1 }
            /^[ \t]*$/ { flush(); next }
            tolower($1) == "uris:"    { $1 = ""; uris = $0 }
            tolower($1) == "suites:"  { $1 = ""; suites = $0 }
            tolower($1) == "enabled:" { on = (tolower($2) != "no") }
            END { flush() }' "$f"
    done
}

# Unmount everything mounted at or below $1 (deepest first).
umount_below() {
    local m
    awk -v d="$1" '$2 == d || index($2, d "/") == 1 { print $2 }' /proc/mounts | sort -r |
        while read -r m; do umount "$m" 2>/dev/null || umount -l "$m"; done
}

# Remove a half-built root, never following a mount into the host.
discard() {
    umount_below "$1"
    if awk -v d="$1" 'index($2, d "/") == 1 { found = 1 } END { exit !found }' /proc/mounts; then
        die "$1 still has mounts: unmount them (findmnt -R $1), delete it, rerun"
    fi
    rm -rf --one-file-system "$1"
}

mkdir -p "$cache"
exec 9>"$cache/.lock"
flock 9   # one builder per cache; later callers wait and then find the root ready

# The packages of PACKAGES a ready root lacks (one built before a package was added).
missing_in() {
    local p
    for p in "${PACKAGES[@]}"; do
        chroot "$1" dpkg-query -W -f='${Status}\n' "$p" 2>/dev/null | grep -q ' installed$' || echo "$p"
    done
}

# Install packages into a ready root in place; a failure leaves the root as it was.
top_up() {
    local r=$1; shift
    echo "release-root: adding $* to the $release root"
    mount -t proc proc "$r/proc"
    mount -t sysfs sys "$r/sys"
    mount --bind /dev "$r/dev"
    local rc=0
    { chroot "$r" env DEBIAN_FRONTEND=noninteractive LC_ALL=C.UTF-8 \
        apt-get -o Acquire::Check-Valid-Until=false update &&
      chroot "$r" env DEBIAN_FRONTEND=noninteractive LC_ALL=C.UTF-8 \
        apt-get -o Acquire::Check-Valid-Until=false install -y --no-install-recommends "$@" &&
      chroot "$r" apt-get clean; } || rc=$?
    umount_below "$r"
    [ $rc = 0 ] || die "could not add $* to $r (see above); rerun to retry"
}

if [ -f "$root/.sla-root-ok" ]; then
    mapfile -t lacking < <(missing_in "$root")
    [ ${#lacking[@]} = 0 ] || top_up "$root" "${lacking[@]}"
    echo "$root" >&3
    exit 0
fi

# Leftovers of a builder that was killed (we hold the lock, so none is running).
for old in "$cache/.$release".* "$root"; do   # $root without .sla-root-ok is unfinished
    if [ -d "$old" ]; then discard "$old"; fi
done

if ! command -v debootstrap >/dev/null; then
    { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq debootstrap; } ||
        die "could not install debootstrap: run 'apt-get update && apt-get install debootstrap'"
fi

mirror=${SLA_DEBIAN_MIRROR:-$(host_mirror | sed -n 1p)}  # sed reads all: no SIGPIPE
[ -n "$mirror" ] || die "no Debian mirror found in /etc/apt/sources.list*: set SLA_DEBIAN_MIRROR=URL"

tmp=$(mktemp -d "$cache/.$release.XXXXXX")
chmod 755 "$tmp"   # mktemp's 0700 would lock out _apt and the ceph user
trap '[ -z "$tmp" ] || discard "$tmp"' EXIT
trap 'exit 130' INT TERM HUP

start=$SECONDS
echo "release-root: debootstrap $suite from $mirror into $tmp"
debootstrap --variant=minbase "$suite" "$tmp" "$mirror" ||
    die "debootstrap $suite from $mirror failed (see above); fix the mirror/network and rerun"
echo "release-root: debootstrap done in $((SECONDS - start)) s"

# No service starts inside the root, ever; sid's Release is often past Valid-Until.
printf '#!/bin/sh\nexit 101\n' >"$tmp/usr/sbin/policy-rc.d"
chmod +x "$tmp/usr/sbin/policy-rc.d"
[ "$suite" != sid ] || echo 'Acquire::Check-Valid-Until "false";' >"$tmp/etc/apt/apt.conf.d/99sla-valid-until"

mount -t proc proc "$tmp/proc"
mount -t sysfs sys "$tmp/sys"
mount --bind /dev "$tmp/dev"
in_root() { chroot "$tmp" env DEBIAN_FRONTEND=noninteractive LC_ALL=C.UTF-8 "$@"; }
in_root apt-get -o Acquire::Check-Valid-Until=false update ||
    die "apt-get update inside the $suite root failed (see above); rerun to retry"
in_root apt-get -o Acquire::Check-Valid-Until=false install -y --no-install-recommends "${PACKAGES[@]}" ||
    die "apt-get install of Ceph in the $suite root failed (see above); rerun to retry"
in_root apt-get clean
# Reef's mgr_util.py imports bcrypt at the top; trixie's bcrypt is PyO3, which
# refuses mgr subinterpreters, so every mgr module fails to load. Import it
# only where it is used (password_hash, dashboard only). Tentacle needs none.
util=$tmp/usr/share/ceph/mgr/mgr_util.py
if grep -q '^import bcrypt$' "$util" 2>/dev/null; then
    sed -i -e 's/^import bcrypt$/# bcrypt (PyO3) cannot load in mgr subinterpreters: imported in password_hash()/' \
        -e '/^def password_hash(/a\    import bcrypt' "$util"
    grep -q '^    import bcrypt$' "$util" || die "could not patch $util for bcrypt; rerun to rebuild"
fi
if [ "$release" = py39 ]; then
    version=$(in_root python3.9 --version) || die "python3.9 fails inside the new $suite root; rerun to rebuild"
else
    version=$(in_root ceph --version) || die "ceph --version fails inside the new $suite root; rerun to rebuild"
fi
umount_below "$tmp"

echo "$version" >"$tmp/.sla-root-ok"
mv -T "$tmp" "$root"
tmp=
echo "release-root: $release root ready in $((SECONDS - start)) s: $version"
echo "$root" >&3
