#!/usr/bin/env bash
# python39.sh - a real CPython 3.9 (the python3 that ceph-mgr embeds in Ceph's
# EL9 container images) for `tox -e unit-py39`.
#
#   eval "$(deploy/python39.sh [--root] [--cache DIR])"
#
# Prints shell assignments on stdout (everything else goes to stderr):
#   export SLA_PYTHON39=PATH          the interpreter
#   export SLA_PYTHON39_LIBS=DIR      only for the bullseye root's interpreter:
#                                     LD_LIBRARY_PATH it needs on this host
# Tries, in order: a python3.9 on PATH that runs, pyenv's
# /root/.pyenv/versions/3.9.*, then Debian bullseye's python3.9 (3.9.2) in a
# debootstrap root built once and cached by `release-root.sh ensure py39`
# (--root: that one only).
#
# The root's interpreter runs on the host, not in a chroot, so the tests keep
# the host's crushtool, osdmaptool and promtool. Its binary needs nothing the
# host lacks; four extension modules (_ssl, _hashlib, _ctypes, _decimal) need
# sonames that bookworm no longer ships (libssl/libcrypto 1.1, libffi 7,
# libmpdec 3). DIR holds links to exactly those sonames, found with the host's
# ldd, so putting it on LD_LIBRARY_PATH can never replace a library that a host
# program (crushtool, ...) loads: the root's glibc and libstdc++ stay out.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
die() { echo "python39: $*" >&2; exit 1; }

usage() { die "usage: python39.sh [--root] [--cache DIR]"; }
cache_args=() only_root=0
while [ $# -gt 0 ]; do
    case $1 in
        --cache) [ $# -ge 2 ] || usage; cache_args=(--cache "$2"); shift 2 ;;
        --root) only_root=1; shift ;;
        *) usage ;;
    esac
done

is_py39() { "$1" -c 'import sys; sys.exit(sys.version_info[:2] != (3, 9))' >/dev/null 2>&1; }

emit() {
    echo "python39: using $1 ($("$1" --version 2>&1))" >&2
    printf 'export SLA_PYTHON39=%q\n' "$1"
    [ -z "${2:-}" ] || printf 'export SLA_PYTHON39_LIBS=%q\n' "$2"
    exit 0
}

if [ "$only_root" = 0 ]; then
    # A python3.9 on PATH that really runs (pyenv's shim exists but may refuse).
    if p=$(command -v python3.9 2>/dev/null) && is_py39 "$p"; then
        emit "$("$p" -c 'import sys; print(sys.executable)')"
    fi
    for p in /root/.pyenv/versions/3.9*/bin/python3.9; do
        if [ -x "$p" ] && is_py39 "$p"; then emit "$p"; fi
    done
fi

root=$(bash "$here/release-root.sh" ensure py39 "${cache_args[@]}" | tail -n 1) ||
    die "no python3.9 found and the bullseye root could not be built (see above)"
py=$root/usr/bin/python3.9
libs=$root/.sla-host-libs
if [ ! -f "$libs/.done" ]; then
    [ "$(id -u)" = 0 ] || die "$libs is missing and must be made as root (rerun as root)"
    rm -rf "$libs"
    mkdir -p "$libs"
    # Every soname the interpreter or a stdlib extension needs that the host's
    # loader cannot find, linked from the root.
    for obj in "$py" "$root"/usr/lib/python3.9/lib-dynload/*.so; do
        ldd "$obj" 2>/dev/null | awk '$2 == "=>" && $3 == "not" { print $1 }'
    done | sort -u | while read -r so; do
        src=$(find "$root/lib" "$root/usr/lib" -maxdepth 2 -name "$so" 2>/dev/null | sed -n 1p)
        [ -n "$src" ] || die "$so (needed by python3.9) is not in the bullseye root"
        ln -sfn "$src" "$libs/$so"
    done
    # What those libraries need in turn (libssl -> libcrypto) is among them.
    for lib in "$libs"/*.so*; do
        [ -e "$lib" ] || continue
        if LD_LIBRARY_PATH=$libs ldd "$lib" | grep -q "not found"; then
            die "$(basename "$lib") still misses a library on this host"
        fi
    done
    touch "$libs/.done"
fi
LD_LIBRARY_PATH=$libs "$py" -c 'import ssl, ctypes, decimal, hashlib' ||
    die "$py cannot import ssl/ctypes/decimal/hashlib even with $libs"
LD_LIBRARY_PATH=$libs emit "$py" "$libs"
