#!/usr/bin/env bash
# A real Ceph cluster on loopback for the tests and the demo: one mon, one mgr
# and N OSDs from Debian's packages, every file under DIR, cephx on, msgr2 on.
#
#   minicluster.sh up DIR [--osds N] [--objectstore memstore|bluestore] [--release R]
#                         [--packaged-modules] [--extra-conf FILE] [--db-class ssd]
#   minicluster.sh down DIR
#   minicluster.sh status DIR
#   minicluster.sh stop DIR NAME      (one daemon, e.g. osd.3, by its recorded PID)
#   minicluster.sh start DIR osd.N    (that OSD again, on its own store)
#
# --extra-conf appends FILE to ceph.conf, after its [osd] section (settings the
# daemons read only at start, e.g. bench/sla_bench.py's device emulation).
#
# --db-class CLASS (with --objectstore bluestore) gives every OSD a separate
# BlueStore block.db (RocksDB and its WAL) on a block device of its own: a loop
# device over a sparse file in /dev/shm (SLA_MINICLUSTER_DB_SIZE, default 4G;
# only what is written takes memory). The DB then has its own device number, so
# a blkio throttle can cap it apart from the block file (bench/data_metadata.py).
# CLASS names the device class the DB emulates; only `ssd` is accepted now.
# The loop devices and files are listed in DIR/dbdevs and `down` detaches and
# removes exactly those, also after a failed `up`. Works for every --release
# (the roots see the host's /dev).
#
# `up` returns when every OSD is up and every PG is active+clean. `down` stops
# exactly the daemons that `up` recorded in DIR/pids, by PID, and waits until
# they are gone. Nothing is ever stopped by name.
#
# --release pacific (default) uses the host's packages (Debian bookworm);
# reef and tentacle run every Ceph binary in a Debian root made by
# deploy/release-root.sh (trixie, sid), seen through DIR/root: a bind of the
# cached root with proc, sys, dev, DIR and this checkout mounted at their own
# paths. Those mounts are listed in DIR/mounts and undone by `down`.
set -euo pipefail

CHECKOUT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
PKG_MGR_DIR=/usr/share/ceph/mgr
UP_DEADLINE_SECS=${SLA_MINICLUSTER_DEADLINE:-180}
DB_SIZE=${SLA_MINICLUSTER_DB_SIZE:-4G}

die() { echo "minicluster: $*" >&2; exit 1; }

usage() {
    sed -n '5,11p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//' >&2
    exit 2
}

# A pid belongs to this cluster only if its command line names this DIR's
# ceph.conf: a recycled pid of some other process is never signalled.
owns_pid() {
    local pid=$1 dir=$2
    [ -r "/proc/$pid/cmdline" ] || return 1
    tr '\0' ' ' <"/proc/$pid/cmdline" | grep -qF -- "$dir/ceph.conf"
}

live_pids() {
    local dir=$1 name pid
    [ -f "$dir/pids" ] || return 0
    while read -r name pid; do
        if owns_pid "$pid" "$dir"; then echo "$pid"; fi
    done <"$dir/pids"
}

# Two consecutive free ports for the mon (v2, v1), a block of 200 for the mgr's
# and OSDs' messengers, and one each for the sla metrics endpoint and Ceph's
# prometheus module, so two clusters never share a port. Blocks lie below the
# kernel's ephemeral range (clients' own ports come from there), and clusters
# starting side by side claim theirs in a registry under a lock: a port free
# now may be another cluster's a second later, before its daemons bind it.
PORT_REGISTRY=/run/lock/ceph-sla-minicluster-ports
pick_ports() {
    /usr/bin/python3 - "$1" "$PORT_REGISTRY" <<'EOF'
import fcntl, os, random, socket, sys
cluster_dir, registry = sys.argv[1], sys.argv[2]
def free(port):
    s = socket.socket()
    try:
        s.bind(("127.0.0.1", port))
        return True
    except OSError:
        return False
    finally:
        s.close()
with open(registry + ".lock", "w") as lock:
    fcntl.flock(lock, fcntl.LOCK_EX)
    claims = {}
    if os.path.exists(registry):
        for line in open(registry).read().splitlines():
            base, owner = line.split(" ", 1)
            if owner != cluster_dir and os.path.isdir(owner):
                claims[int(base)] = owner  # a cluster that still exists keeps its block
    low = 10000
    high = int(open("/proc/sys/net/ipv4/ip_local_port_range").read().split()[0]) - 204
    rng = random.SystemRandom()
    for _ in range(500):
        base = rng.randrange(low, max(high, low + 2), 2)
        if any(abs(base - b) < 204 for b in claims):
            continue
        if all(free(p) for p in list(range(base, base + 204, 5)) + [base + 1, base + 202, base + 203]):
            claims[base] = cluster_dir
            with open(registry + ".tmp", "w") as f:
                f.writelines(f"{b} {o}\n" for b, o in sorted(claims.items()))
            os.replace(registry + ".tmp", registry)
            # mon v2/v1, messenger range, sla metrics port, prometheus module port
            print(base, base + 2, base + 201, base + 202, base + 203)
            break
    else:
        raise SystemExit("no free port block found")
EOF
}

# Run a Ceph binary of the cluster's release: on the host, or in DIR/root.
IN_ROOT=()
in_release() { "${IN_ROOT[@]}" "$@"; }
cephc() { in_release ceph -c "$DIR/ceph.conf" --connect-timeout 20 "$@"; }

mkfs_osd() {  # mkfs_osd ID UUID [DB-ARGS...]
    local id=$1 uuid=$2; shift 2
    in_release ceph-osd -c "$DIR/ceph.conf" -i "$id" --mkfs --osd-uuid "$uuid" "$@" \
        >>"$DIR/log/mkfs.log" 2>&1
}

wait_for_key() {  # wait_for_key ENTITY: its key in the mon's auth database, 30 s at most
    local deadline=$((SECONDS + 30))
    until cephc auth get "$1" >/dev/null 2>&1; do
        [ $SECONDS -lt $deadline ] || return 1
        sleep 0.5
    done
}

mount_recorded() {  # mount_recorded [--ours] TARGET MOUNT-ARGS...: mount and remember it for `down`
    local ours=0 target d created=()
    if [ "$1" = --ours ]; then ours=1; shift; fi
    target=$1; shift
    # the directories made for it (inside the cached root, most of them) go at
    # `down` too: "+DIR" lines before the mount's own, shallowest first. --ours:
    # the target is this cluster's own path (DIR, the checkout), never one of
    # the root's, so it goes even when another cluster made it (the last one
    # down removes it; rmdir leaves a directory still mounted or not empty)
    d=$target
    while [ ! -e "$d" ]; do
        created=("$d" "${created[@]}")
        d=$(dirname "$d")
    done
    if [ $ours = 1 ] && [ -e "$target" ]; then created=("$target"); fi
    for d in "${created[@]}"; do echo "+$d" >>"$DIR/mounts"; done
    mkdir -p "$target"
    mount "$@" "$target" || fail_up "mount $* $target failed"
    echo "$target" >>"$DIR/mounts"
}

make_root_view() {
    local release=$1 root
    root=$(bash "$CHECKOUT/deploy/release-root.sh" ensure "$release" | tail -n 1) \
        || fail_up "no $release root: see the messages of deploy/release-root.sh above"
    : >"$DIR/mounts"
    mount_recorded "$DIR/root" --bind "$root"
    mount_recorded "$DIR/root/proc" -t proc proc
    mount_recorded "$DIR/root/sys" -t sysfs sysfs
    mount_recorded "$DIR/root/dev" --bind /dev
    mount_recorded --ours "$DIR/root$DIR" --bind "$DIR"
    mount_recorded --ours "$DIR/root$CHECKOUT" --bind "$CHECKOUT"
    IN_ROOT=(chroot "$DIR/root")
    PKG_MGR_DIR=$DIR/root/usr/share/ceph/mgr
}

undo_mounts() {
    local dir=$1 target
    [ -f "$dir/mounts" ] || return 0
    # reverse order: inner mounts first, each followed by the empty
    # directories made for it (seen through the root's mount, still there)
    tac "$dir/mounts" | while read -r target; do
        case $target in
            +*) rmdir "${target#+}" 2>/dev/null || true ;;
            *) umount "$target" 2>/dev/null || umount -l "$target" 2>/dev/null || true ;;
        esac
    done
    rm -f "$dir/mounts"
}

# block.db devices (--db-class): DIR/dbdevs holds, in the order they were made,
#   dir PATH              the /dev/shm directory of this cluster's DB files
#   file PATH             a DB file, recorded before it is created
#   loop DEV PATH osd.N   a loop device, recorded as soon as it is attached
DBDEV=""
make_db_device() {  # make_db_device OSD-ID: attaches its block.db device, in DBDEV
    local id=$1 shm="" file
    if [ -f "$DIR/dbdevs" ]; then shm=$(awk '$1 == "dir" {print $2; exit}' "$DIR/dbdevs"); fi
    if [ -z "$shm" ]; then
        shm=$(mktemp -d "/dev/shm/ceph-sla-db.$(basename "$DIR").XXXXXX") \
            || fail_up "cannot make a directory in /dev/shm for the DB devices"
        echo "dir $shm" >>"$DIR/dbdevs"
    fi
    file=$shm/osd.$id.db
    echo "file $file" >>"$DIR/dbdevs"
    truncate -s "$DB_SIZE" "$file" || fail_up "cannot create $file ($DB_SIZE, sparse)"
    DBDEV=$(losetup --find --show "$file") || fail_up "losetup of $file failed (no free loop device?)"
    echo "loop $DBDEV $file osd.$id" >>"$DIR/dbdevs"
    # a loop device over tmpfs reports itself non-rotational already; say it anyway
    echo 0 >"/sys/block/$(basename "$DBDEV")/queue/rotational" 2>/dev/null || true
}

undo_db_devices() {
    local dir=$1 kind path back dev
    [ -f "$dir/dbdevs" ] || return 0
    # every loop device still backed by a recorded file, whether or not its
    # attach was recorded; a recorded device now backed by another file is not ours
    while read -r kind path _; do
        [ "$kind" = file ] && [ -e "$path" ] || continue
        for dev in $(losetup --list --noheadings --output NAME --associated "$path" 2>/dev/null); do
            losetup --detach "$dev" 2>/dev/null || echo "minicluster: could not detach $dev ($path)" >&2
        done
    done <"$dir/dbdevs"
    while read -r kind dev path _; do
        [ "$kind" = loop ] || continue
        back=$(losetup --noheadings --output BACK-FILE "$dev" 2>/dev/null || true)
        if [ -n "$back" ] && [ "${back% (deleted)}" = "$path" ]; then
            losetup --detach "$dev" 2>/dev/null || echo "minicluster: could not detach $dev ($path)" >&2
        fi
    done <"$dir/dbdevs"
    while read -r kind path _; do
        if [ "$kind" = file ]; then rm -f "$path"; fi
    done <"$dir/dbdevs"
    while read -r kind path _; do
        if [ "$kind" = dir ]; then rmdir "$path" 2>/dev/null || true; fi
    done <"$dir/dbdevs"
    rm -f "$dir/dbdevs"
}

start_daemon() {
    # start_daemon NAME BINARY ARGS... : foreground daemon in its own session,
    # stdio to its log, pid recorded before anything else can fail.
    # TMPDIR inside the cluster directory: a daemon stopped in the middle of
    # writing a scratch file (the mgr module's crushtool runs) leaves it there,
    # removed with the cluster, not in /tmp.
    local name=$1; shift
    mkdir -p "$DIR/tmp"
    TMPDIR="$DIR/tmp" setsid "$@" -f -c "$DIR/ceph.conf" </dev/null >>"$DIR/log/$name.stdout" 2>&1 &
    echo "$name $!" >>"$DIR/pids"
}

log_tail() {
    local f
    for f in "$DIR"/log/*.log "$DIR"/log/*.stdout; do
        [ -s "$f" ] || continue
        echo "---- last lines of $f" >&2
        tail -n 15 "$f" >&2
    done
}

fail_up() {
    echo "minicluster: $*" >&2
    log_tail
    do_down "$DIR" >&2 || true
    exit 1
}

# Wait until a condition command succeeds, or fail with what was seen.
wait_for() {
    local what=$1 deadline=$2; shift 2
    local seen=""
    while :; do
        dead_daemon_check
        if seen=$("$@" 2>&1); then return 0; fi
        if [ "$(date +%s)" -ge "$deadline" ]; then
            fail_up "timed out waiting for $what; last seen: ${seen:0:400}"
        fi
        sleep 0.5
    done
}

dead_daemon_check() {
    local name pid
    while read -r name pid; do
        if ! kill -0 "$pid" 2>/dev/null; then
            fail_up "daemon $name (pid $pid) died; see $DIR/log/$name.log"
        fi
    done <"$DIR/pids"
}

write_conf() {
    local fsid=$1 mon_port=$2 port_min=$3 port_max=$4 objectstore=$5 release=$6 hosts=$7
    local extra="" pool_size=$(( hosts < 3 ? hosts : 3 ))  # replicas never share a host
    # Tentacle stretches the stats period by itself; the module's reaction
    # time and the tests want the configured period.
    if [ "$release" = tentacle ]; then extra="mgr stats period autotune = false"; fi
    cat >"$DIR/ceph.conf" <<EOF
[global]
fsid = $fsid
mon host = [v2:127.0.0.1:$mon_port,v1:127.0.0.1:$((mon_port + 1))]
public addr = 127.0.0.1
ms bind ipv6 = false
ms bind port min = $port_min
ms bind port max = $port_max
auth cluster required = cephx
auth service required = cephx
auth client required = cephx
auth allow insecure global id reclaim = false
run dir = $DIR/run
log file = $DIR/log/\$name.log
log to stderr = false
err to stderr = true
crash dir = $DIR/crash
exporter sock dir = $DIR/run
mon data = $DIR/mon/\$cluster-\$id
mgr data = $DIR/mgr/\$cluster-\$id
osd data = $DIR/osd/\$cluster-\$id
mon allow pool delete = true
mon allow pool size one = true
mon data avail warn = 1
mon data avail crit = 0
mon warn on pool no redundancy = false
mon max pg per osd = 1000
osd pool default size = $pool_size
osd pool default min size = $(( pool_size > 1 ? pool_size - 1 : 1 ))
osd pool default pg autoscale mode = off
osd crush chooseleaf type = 1
osd crush update on start = false
osd class update on start = false
osd objectstore = $objectstore
memstore device bytes = 2147483648
bluestore block path = $DIR/osd/\$cluster-\$id.block
bluestore block create = true
bluestore block size = 10737418240
bluestore fsck on mkfs = false
osd memory target = 536870912
bluestore cache autotune = false
bluestore cache size = 67108864
# memstore reports itself rotational: without this, recovery sleeps 0.1 s per
# object (osd_recovery_sleep_hdd) and a switch of a few thousand objects takes minutes
osd recovery sleep hdd = 0
osd recovery sleep hybrid = 0
osd op num shards = 2
osd op num threads per shard = 1
mgr module path = $DIR/mgr-modules
mgr initial modules = iostat
$extra

[client]
keyring = $DIR/keyring

[mon]
keyring = \$mon_data/keyring

[mgr]
keyring = \$mgr_data/keyring

[osd]
keyring = \$osd_data/keyring
EOF
}

# Every packaged module, plus `sla` from this checkout: ceph-mgr loads modules
# from exactly one directory (measured).
make_module_path() {
    mkdir -p "$DIR/mgr-modules"
    local m
    for m in "$PKG_MGR_DIR"/*; do
        # links resolve where the mgr runs: /usr/share/ceph/mgr of its release
        ln -sfn "/usr/share/ceph/mgr/$(basename "$m")" "$DIR/mgr-modules/$(basename "$m")"
    done
    ln -sfn "$CHECKOUT/mgr_sla" "$DIR/mgr-modules/sla"
    # Ceph's packages and images carry no prometheus_client, but Debian's may
    # bring it in: hidden here (the module path comes first on the mgr's
    # sys.path; a file is never probed as a mgr module), so the tests run the
    # module as it runs where Ceph's images run it.
    printf '%s\n' 'raise ImportError("prometheus_client: hidden by minicluster.sh, as Ceph images lack it")' \
        >"$DIR/mgr-modules/prometheus_client.py"
}

mgr_available() {
    cephc mgr stat -f json | /usr/bin/python3 -c '
import json, sys
s = json.load(sys.stdin)
print(s)
sys.exit(0 if s.get("available") else 1)'
}

osds_up_and_clean() {
    cephc status -f json | /usr/bin/python3 -c '
import json, sys
want = int(sys.argv[1])
s = json.load(sys.stdin)
om = s["osdmap"].get("osdmap", s["osdmap"])
pg = s["pgmap"]
states = {d["state_name"]: d["count"] for d in pg.get("pgs_by_state", [])}
clean = states.get("active+clean", 0)
ok = om["num_up_osds"] == want and om["num_in_osds"] == want and clean == pg["num_pgs"]
print("osds up %s/%s, pgs %s" % (om["num_up_osds"], want, states))
sys.exit(0 if ok else 1)' "$1"
}

do_up() {
    local osds=8 objectstore=memstore release=pacific packaged=0 extra_conf="" db_class=""
    while [ $# -gt 0 ]; do
        case $1 in
            # the mgr's default module path, as a package install has it (deploy/install.sh)
            --packaged-modules) packaged=1; shift ;;
            --release) release=${2:?--release needs pacific, reef or tentacle}; shift 2 ;;
            --osds) osds=${2:?--osds needs a number}; shift 2 ;;
            --objectstore) objectstore=${2:?--objectstore needs memstore or bluestore}; shift 2 ;;
            # appended to ceph.conf: settings daemons read only at start (bench/sla_bench.py)
            --extra-conf) extra_conf=${2:?--extra-conf needs a file}; shift 2 ;;
            # a separate block.db per OSD on a loop device (bench/data_metadata.py)
            --db-class) db_class=${2:?--db-class needs a device class: ssd}; shift 2 ;;
            *) die "unknown option '$1'" ;;
        esac
    done
    case $objectstore in memstore|bluestore) ;; *) die "objectstore must be memstore or bluestore, not '$objectstore'" ;; esac
    [[ $osds =~ ^[0-9]+$ ]] && [ "$osds" -ge 2 ] && [ $((osds % 2)) -eq 0 ] \
        || die "--osds must be an even number >= 2 (hosts hold one hdd and one ssd OSD), not '$osds'"
    case $release in pacific|reef|tentacle) ;; *) die "release must be pacific, reef or tentacle, not '$release'" ;; esac
    if [ -n "$extra_conf" ] && [ ! -r "$extra_conf" ]; then die "--extra-conf: cannot read '$extra_conf'"; fi
    if [ -n "$db_class" ]; then
        [ "$db_class" = ssd ] || die "--db-class: only 'ssd' is supported, not '$db_class'"
        [ "$objectstore" = bluestore ] \
            || die "--db-class needs --objectstore bluestore (block.db is a BlueStore device; $objectstore has none)"
        command -v losetup >/dev/null || die "--db-class needs losetup (util-linux)"
        [ -d /dev/shm ] && [ -w /dev/shm ] || die "--db-class needs a writable /dev/shm for the DB files"
    fi
    local bin
    if [ "$release" = pacific ]; then
        for bin in ceph-mon ceph-mgr ceph-osd ceph ceph-authtool monmaptool; do
            command -v "$bin" >/dev/null || die "$bin not found: install Ceph with 'apt-get install -y --no-install-recommends ceph-mon ceph-mgr ceph-osd ceph-common ceph-base'"
        done
    fi
    if [ -n "$(live_pids "$DIR")" ]; then
        die "$DIR holds a running cluster: run '$0 down $DIR' first or use another DIR"
    fi
    if [ -e "$DIR" ] && [ -n "$(ls -A "$DIR" 2>/dev/null)" ]; then
        die "$DIR is not empty: remove it or use another DIR"
    fi
    mkdir -p "$DIR"/{run,log,crash,mon,mgr/ceph-x,osd}
    : >"$DIR/pids"
    local t0 ports mon_port port_min port_max sla_port prom_port fsid deadline
    ports=$(pick_ports "$DIR") || die "no free ports on 127.0.0.1"
    read -r mon_port port_min port_max sla_port prom_port <<<"$ports"
    fsid=$(uuidgen)
    trap 'fail_up "interrupted"' INT TERM
    if [ "$release" != pacific ]; then make_root_view "$release"; fi
    # the daemons' deadline: a release root's first build (minutes) is not theirs
    t0=$(date +%s)
    deadline=$((t0 + UP_DEADLINE_SECS))
    printf 'SLA_RELEASE=%s\nSLA_CHROOT=%s\n' "$release" "${IN_ROOT[1]:-}" >"$DIR/cluster.env"
    write_conf "$fsid" "$mon_port" "$port_min" "$port_max" "$objectstore" "$release" $((osds / 2))
    if [ -n "$extra_conf" ]; then cat "$extra_conf" >>"$DIR/ceph.conf"; fi
    if [ "$packaged" -eq 1 ]; then
        sed -i '/^mgr module path = /d' "$DIR/ceph.conf"
    else
        make_module_path
    fi

    # mon
    in_release ceph-authtool --create-keyring "$DIR/mon.keyring" --gen-key -n mon. --cap mon 'allow *' >/dev/null
    in_release ceph-authtool --create-keyring "$DIR/keyring" --gen-key -n client.admin \
        --cap mon 'allow *' --cap osd 'allow *' --cap mds 'allow *' --cap mgr 'allow *' >/dev/null
    in_release ceph-authtool "$DIR/mon.keyring" --import-keyring "$DIR/keyring" >/dev/null
    in_release monmaptool --create --fsid "$fsid" --addv a "[v2:127.0.0.1:$mon_port,v1:127.0.0.1:$((mon_port + 1))]" \
        "$DIR/monmap" >/dev/null
    in_release ceph-mon -c "$DIR/ceph.conf" --mkfs -i a --monmap "$DIR/monmap" \
        --keyring "$DIR/mon.keyring" >>"$DIR/log/mkfs.log" 2>&1 || fail_up "mon mkfs failed"
    start_daemon mon.a "${IN_ROOT[@]}" ceph-mon -i a
    wait_for "the mon to answer" "$deadline" cephc mon stat

    # mgr: module endpoints on loopback and on this cluster's own ports
    cephc config set mgr mgr/sla/metrics_addr 127.0.0.1 --force
    cephc config set mgr mgr/sla/metrics_port "$sla_port" --force
    cephc config set mgr mgr/prometheus/server_addr 127.0.0.1 --force
    cephc config set mgr mgr/prometheus/server_port "$prom_port" --force
    printf 'SLA_METRICS_PORT=%s\nPROMETHEUS_MODULE_PORT=%s\n' "$sla_port" "$prom_port" >"$DIR/ports.env"
    cephc auth get-or-create mgr.x mon 'allow profile mgr' osd 'allow *' mds 'allow *' \
        -o "$DIR/mgr/ceph-x/keyring" >/dev/null
    start_daemon mgr.x "${IN_ROOT[@]}" ceph-mgr -i x

    # OSDs: host K holds osd.2K (hdd) and osd.2K+1 (ssd)
    local i uuid key id host cls
    local hdd=() ssd=() db_args=()
    for ((i = 0; i < osds; i++)); do
        uuid=$(uuidgen)
        key=$(in_release ceph-authtool --gen-print-key)
        id=$(echo "{\"cephx_secret\": \"$key\"}" | cephc osd new "$uuid" -i -)
        [ "$id" = "$i" ] || fail_up "expected osd id $i, got '$id'"
        mkdir -p "$DIR/osd/ceph-$id"
        printf '[osd.%s]\n\tkey = %s\n' "$id" "$key" >"$DIR/osd/ceph-$id/keyring"
        if [ -n "$db_class" ]; then
            # mkfs links osd/ceph-N/block.db to the device; the OSD opens that link
            make_db_device "$id"
            db_args=(--bluestore-block-db-path "$DBDEV")
        fi
        if ! mkfs_osd "$id" "$uuid" "${db_args[@]}"; then
            # the mon can answer `osd new` before the OSD's key is committed (seen
            # on Tentacle: "couldn't find entity name"), and the mkfs, which first
            # fetches its config as that OSD, fails: once the key is there, again
            wait_for_key "osd.$id" || fail_up "mkfs of osd.$id failed, and its key never came"
            mkfs_osd "$id" "$uuid" "${db_args[@]}" || fail_up "mkfs of osd.$id failed"
        fi
        host=host$((i / 2))
        if [ $((i % 2)) -eq 0 ]; then cls=hdd; hdd+=("osd.$id"); else cls=ssd; ssd+=("osd.$id"); fi
        cephc osd crush add "osd.$id" 1.0 "host=$host" root=default >/dev/null 2>&1 \
            || fail_up "could not place osd.$id in $host"
        start_daemon "osd.$id" "${IN_ROOT[@]}" ceph-osd -i "$id"
    done
    cephc osd crush set-device-class hdd "${hdd[@]}" >/dev/null 2>&1
    cephc osd crush set-device-class ssd "${ssd[@]}" >/dev/null 2>&1
    wait_for "the mgr to be active" "$deadline" mgr_available
    wait_for "$osds OSDs up and all PGs active+clean" "$deadline" osds_up_and_clean "$osds"
    trap - INT TERM
    echo "minicluster: up in $(($(date +%s) - t0)) s: 1 mon, 1 mgr, $osds OSDs ($objectstore${db_class:+, block.db on $db_class loop devices}, $release) in $DIR"
    echo "minicluster: export CEPH_CONF=$DIR/ceph.conf"
}

do_down() {
    local dir=$1 pids pid waited=0
    [ -f "$dir/pids" ] || { undo_mounts "$dir"; undo_db_devices "$dir"; echo "minicluster: nothing recorded in $dir"; return 0; }
    pids=$(live_pids "$dir")
    for pid in $pids; do kill -TERM "$pid" 2>/dev/null || true; done
    while [ -n "$(live_pids "$dir")" ]; do
        if [ "$waited" -ge 300 ]; then   # 30 s: then the hard way, still by pid
            for pid in $(live_pids "$dir"); do kill -KILL "$pid" 2>/dev/null || true; done
        fi
        if [ "$waited" -ge 400 ]; then die "daemons of $dir did not stop: $(live_pids "$dir" | tr '\n' ' ')"; fi
        sleep 0.1
        waited=$((waited + 1))
    done
    : >"$dir/pids"
    undo_mounts "$dir"
    undo_db_devices "$dir"
    echo "minicluster: stopped $(echo "$pids" | wc -w) daemons of $dir"
}

recorded_pid() {
    awk -v n="$2" '$1 == n {p = $2} END {print p}' "$1/pids"
}

do_stop() {
    # stop DIR NAME: one daemon, by the PID recorded for it, waited for until gone
    local dir=$1 name=${2:?stop needs a daemon name, e.g. osd.3} pid waited=0
    [ -f "$dir/pids" ] || die "no cluster recorded in $dir"
    pid=$(recorded_pid "$dir" "$name")
    [ -n "$pid" ] && owns_pid "$pid" "$dir" || die "$name of $dir is not running"
    kill -TERM "$pid"
    while owns_pid "$pid" "$dir"; do
        [ "$waited" -ge 600 ] && die "$name ($pid) of $dir did not stop in 60 s"
        sleep 0.1
        waited=$((waited + 1))
    done
    echo "minicluster: stopped $name ($pid)"
}

do_start() {
    # start DIR osd.N: a stopped OSD again on its own store (a restart; memstore
    # OSDs come back with their PGs stale: restart BlueStore ones)
    local dir=$1 name=${2:?start needs an OSD, e.g. osd.3} pid chroot
    [ -f "$dir/pids" ] || die "no cluster recorded in $dir"
    [[ $name =~ ^osd\.[0-9]+$ ]] || die "start takes an OSD (osd.N), not '$name'"
    pid=$(recorded_pid "$dir" "$name")
    [ -n "$pid" ] || die "no $name recorded in $dir"
    if owns_pid "$pid" "$dir"; then die "$name of $dir is running ($pid)"; fi
    DIR=$dir
    chroot=$(sed -n 's/^SLA_CHROOT=//p' "$dir/cluster.env")
    IN_ROOT=()
    if [ -n "$chroot" ]; then IN_ROOT=(chroot "$chroot"); fi
    sed -i "/^$name /d" "$dir/pids"
    start_daemon "$name" "${IN_ROOT[@]}" ceph-osd -i "${name#osd.}"
    echo "minicluster: started $name ($(recorded_pid "$dir" "$name"))"
}

do_status() {
    local name pid
    [ -f "$1/pids" ] || die "no cluster recorded in $1"
    while read -r name pid; do
        if owns_pid "$pid" "$1"; then echo "$name $pid running"; else echo "$name $pid gone"; fi
    done <"$1/pids"
}

[ $# -ge 2 ] || usage
cmd=$1
DIR=$(realpath -m "$2")
shift 2
case $cmd in
    up) do_up "$@" ;;
    down) do_down "$DIR" ;;
    status) do_status "$DIR" ;;
    stop) do_stop "$DIR" "$@" ;;
    start) do_start "$DIR" "$@" ;;
    *) usage ;;
esac
