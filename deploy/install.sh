#!/usr/bin/env bash
# Install the ceph-sla mgr module on a package-based (non-container) Ceph host.
#
#   deploy/install.sh [--module-path DIR] [--dry-run] [--uninstall] [--force]
#   deploy/install.sh --cephadm-spec [--module-path DIR]
#
# Copies mgr_sla/ to <mgr module path>/sla/ and crush_rules/ to
# <mgr module path>/sla/crush_rules/ (the module imports it from there).
# Run it on every host that runs a ceph-mgr: a standby that lacks the module
# cannot run it after a failover. Running it again replaces the installed copy
# with the same files (idempotent). It never talks to the cluster.
# --cephadm-spec prints a cephadm mgr service spec whose mgr containers
# bind-mount DIR/sla (default DIR: /opt/ceph-sla) from the host, so cephadm
# clusters need no custom image; it changes nothing.
set -euo pipefail

PROG=${0##*/}
SRC=$(cd "$(dirname "$0")/.." && pwd)
MODULE_NAME=sla
MARKER=.ceph-sla-installed  # uninstall removes only a directory carrying it
MGR_PYTHON=${MGR_PYTHON:-/usr/bin/python3}  # the interpreter ceph-mgr embeds
MIN_MAJOR=16
MIN_PYTHON=3.9  # Ceph's CentOS Stream 9 images embed python3.9
CEPHADM_DEFAULT_DIR=/opt/ceph-sla

module_path=""
dry_run=0
uninstall=0
force=0
cephadm_spec=0
show_version=0

usage() {
    cat <<EOF
Usage: $PROG [options]
  --module-path DIR  mgr module directory (default: ceph-conf's mgr_module_path,
                     else /usr/share/ceph/mgr); the module goes to DIR/$MODULE_NAME
  --source DIR       ceph-sla source tree (default: $SRC)
  --dry-run          print what would be done, change nothing
  --uninstall        remove DIR/$MODULE_NAME (only if this script installed it)
  --force            install over / remove a $MODULE_NAME directory this script did
                     not create; install although the Ceph release is unknown
  --version          print the ceph-sla version of the source tree and exit
  --cephadm-spec     print a cephadm mgr service spec that bind-mounts DIR/$MODULE_NAME
                     (DIR from --module-path, default $CEPHADM_DEFAULT_DIR) into the
                     mgr containers; install there first with --module-path DIR
  -h, --help         this text
Environment: MGR_PYTHON (default /usr/bin/python3), the interpreter ceph-mgr embeds:
must be Python $MIN_PYTHON or newer. The metrics endpoint's exposition library
travels inside the module (sla/_vendor): nothing else to install.
EOF
}

die() { echo "$PROG: error: $*" >&2; exit 1; }
warn() { echo "$PROG: warning: $*" >&2; }
say() { echo "$PROG: $*"; }
run() {
    # Every change goes through here so --dry-run shows it and does nothing.
    if ((dry_run)); then
        echo "would run: $*"
    else
        "$@"
    fi
}

while (($#)); do
    case $1 in
        --module-path) [[ $# -ge 2 ]] || die "--module-path needs a directory"; module_path=$2; shift 2 ;;
        --module-path=*) module_path=${1#*=}; shift ;;
        --source) [[ $# -ge 2 ]] || die "--source needs a directory"; SRC=$2; shift 2 ;;
        --source=*) SRC=${1#*=}; shift ;;
        --dry-run) dry_run=1; shift ;;
        --uninstall) uninstall=1; shift ;;
        --force) force=1; shift ;;
        --cephadm-spec) cephadm_spec=1; shift ;;
        --version) show_version=1; shift ;;
        -h|--help) usage; exit 0 ;;
        *) usage >&2; die "unknown argument: $1" ;;
    esac
done

detect_module_path() {
    local p=""
    if command -v ceph-conf >/dev/null 2>&1; then
        # mgr_module_path is read from the [mgr] section when the mgr starts;
        # ask as a mgr so a [mgr] override in ceph.conf is seen.
        p=$(ceph-conf --name "mgr.$(hostname -s)" --show-config-value mgr_module_path 2>/dev/null) ||
            p=$(ceph-conf --show-config-value mgr_module_path 2>/dev/null) || p=""
    fi
    echo "${p:-/usr/share/ceph/mgr}"
}

release_name() {
    case $1 in
        16) echo pacific ;; 17) echo quincy ;; 18) echo reef ;;
        19) echo squid ;; 20) echo tentacle ;; 21) echo umbrella ;; *) echo unknown ;;
    esac
}

check_ceph_release() {
    local out major
    if ! out=$(ceph --version 2>/dev/null); then
        if ((force)); then
            warn "'ceph --version' failed; release not checked (--force)"
            return
        fi
        warn "'ceph --version' failed (ceph-common not installed?); cannot check the Ceph release"
        warn "the module needs Ceph 16 (Pacific) or newer; continuing"
        return
    fi
    # "ceph version 18.2.7 (<sha1>) reef (stable)"
    major=$(sed -n 's/^ceph version \([0-9][0-9]*\)\..*/\1/p' <<<"$out")
    [[ -n $major ]] || die "cannot parse 'ceph --version' output: $out"
    if ((major < MIN_MAJOR)); then
        die "Ceph $major.x is too old: ceph-sla needs Ceph $MIN_MAJOR (Pacific) or newer (found: $out)"
    fi
    say "Ceph release: $major ($(release_name "$major"))"
    if ((major > 21)); then
        warn "Ceph $major is newer than the releases ceph-sla was written for (16-21)"
    fi
    # 'ceph --version' is this host's client; the mgr daemons may differ.
    say "check the running daemons with 'ceph versions' before enabling the module"
}

check_mgr_python() {
    local v
    if [[ ! -x $MGR_PYTHON ]]; then
        warn "$MGR_PYTHON not found; cannot check the mgr's Python (needs $MIN_PYTHON or newer)"
        return
    fi
    if ! v=$("$MGR_PYTHON" -c 'import sys; print("%d.%d" % sys.version_info[:2])' 2>/dev/null); then
        warn "$MGR_PYTHON did not report its version; the mgr's Python must be $MIN_PYTHON or newer"
        return
    fi
    if ! "$MGR_PYTHON" -c "import sys; sys.exit(sys.version_info[:2] < (${MIN_PYTHON/./, }))" 2>/dev/null; then
        die "$MGR_PYTHON is Python $v: the sla module needs Python $MIN_PYTHON or newer (the interpreter ceph-mgr embeds; override with MGR_PYTHON=)"
    fi
}

installed_by_us() { [[ -f $1/$MARKER ]]; }

version() {
    sed -n 's/^[[:space:]]*version="\([^"]*\)".*/\1/p' "$SRC/setup.py" 2>/dev/null | head -n1
}

do_install() {
    local dest=$1 parent stage
    [[ -f $SRC/mgr_sla/__init__.py ]] || die "$SRC/mgr_sla/__init__.py missing: not a ceph-sla source tree"
    [[ -f $SRC/crush_rules/__init__.py ]] || die "$SRC/crush_rules/__init__.py missing: not a ceph-sla source tree"
    if [[ -e $dest ]] && ! installed_by_us "$dest" && ((!force)); then
        die "$dest exists and was not installed by $PROG; remove it or use --force"
    fi
    parent=$(dirname "$dest")
    [[ -d $parent ]] || die "module path $parent does not exist (wrong --module-path?)"

    # Build the new copy next to the old one and swap, so a mgr starting
    # meanwhile sees either the old or the new module, never half of one.
    stage="$parent/.$MODULE_NAME.new.$$"
    run rm -rf "$stage"
    run mkdir -p "$stage"
    run cp -R "$SRC/mgr_sla/." "$stage/"
    run rm -rf "$stage/crush_rules"
    run cp -R "$SRC/crush_rules" "$stage/crush_rules"
    # Bytecode and test leftovers from the source tree are not part of the module.
    run find "$stage" \( -name __pycache__ -o -name '*.pyc' -o -name '*.pyo' \) -prune -exec rm -rf {} +
    if ((dry_run)); then
        echo "would write: $stage/$MARKER"
    else
        printf 'installed-by=ceph-sla deploy/install.sh\nversion=%s\n' "$(version)" >"$stage/$MARKER"
    fi
    run chmod -R u=rwX,go=rX "$stage"
    if [[ -e $dest ]]; then
        run rm -rf "$parent/.$MODULE_NAME.old.$$"
        run mv "$dest" "$parent/.$MODULE_NAME.old.$$"
        run mv "$stage" "$dest"
        run rm -rf "$parent/.$MODULE_NAME.old.$$"
    else
        run mv "$stage" "$dest"
    fi
    if ((dry_run)); then
        say "dry run: would install the sla module in $dest"
    else
        say "installed the sla module in $dest"
    fi
}

do_uninstall() {
    local dest=$1
    if [[ ! -e $dest ]]; then
        say "$dest does not exist: nothing to uninstall"
        return
    fi
    if ! installed_by_us "$dest" && ((!force)); then
        die "$dest was not installed by $PROG (no $MARKER); use --force to remove it anyway"
    fi
    run rm -rf "$dest"
    ((dry_run)) || say "removed $dest"
}

print_cephadm_spec() {
    local dir=${module_path:-$CEPHADM_DEFAULT_DIR}
    dir=${dir%/}
    [[ $dir == /* ]] || die "--module-path must be absolute for --cephadm-spec: $dir"
    [[ $dir != *[:,\"\'[:space:]]* ]] || die "--module-path for --cephadm-spec must not hold ':', ',', quotes or spaces: $dir"
    cat <<EOF
# cephadm mgr service spec: every mgr container bind-mounts the sla module
# from its host, read-only. First, on every host that can run a mgr:
#   deploy/install.sh --module-path $dir
# Keep the placement you have (ceph orch ls mgr --export), then:
#   ceph orch apply -i THIS_FILE && ceph orch redeploy mgr
#   ceph mgr module enable $MODULE_NAME
service_type: mgr
service_name: mgr
placement:
  count: 2
extra_container_args:
  - "--volume=$dir/$MODULE_NAME:/usr/share/ceph/mgr/$MODULE_NAME:ro,z"
EOF
}

main() {
    if ((show_version)); then
        local v
        v=$(version)
        [[ -n $v ]] || die "no version in $SRC/setup.py"
        echo "ceph-sla $v"
        return
    fi
    if ((cephadm_spec)); then
        ((!uninstall)) || die "--cephadm-spec and --uninstall do not go together"
        print_cephadm_spec
        return
    fi
    [[ -n $module_path ]] || module_path=$(detect_module_path)
    module_path=${module_path%/}
    local dest="$module_path/$MODULE_NAME"
    ((dry_run)) && say "dry run: nothing will be changed"

    if ((uninstall)); then
        do_uninstall "$dest"
        cat <<EOF

Removing the files is the last step of uninstalling. Before it, on a node with
the admin keyring (docs/install.md#uninstalling):
  ceph sla release                # FIRST: every managed pool back on its own rule,
                                  # the module's upmap entries and weight sets removed
  ceph mgr module disable $MODULE_NAME
  ceph osd crush rule ls | grep '^sla_' | xargs -r -n1 ceph osd crush rule rm
  ceph config dump | grep -o 'mgr/sla/[a-z_]*' | sort -u | xargs -r -n1 ceph config rm mgr
  ceph config-key ls | grep -o '"mgr/sla/[^"]*"' | tr -d '"' | xargs -r -n1 ceph config-key rm
A mgr that is running keeps the module it loaded until it restarts, so if you
have not run them yet, run them now, then remove the files on every mgr host.
EOF
        return
    fi

    check_ceph_release
    check_mgr_python
    do_install "$dest"
    cat <<EOF

Next steps:
  1. install on every mgr host, then restart every mgr: a mgr reads its module
     directory when it starts, and the monitors refuse to enable a module that
     any mgr, standbys included, lacks:
       systemctl restart ceph-mgr.target
  2. on a node with the admin keyring:
       ceph mgr module enable $MODULE_NAME
       ceph sla rules apply       # create the sla_* CRUSH rules
       ceph sla status
Metrics: http://<active mgr>:9284/metrics (mgr/sla/metrics_port); see docs/observability.md.
Undo: 'ceph sla release' first, then the steps of docs/install.md#uninstalling.
EOF
}

main
