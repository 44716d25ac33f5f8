#!/usr/bin/env bash
# The main job: a local Ceph cluster (Debian's packages, loopback) with the
# `sla` module, showing the adaptive mapping switch modes under real load.
#
#   deploy/demo.sh [--keep]     (--keep leaves the cluster running)
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
KEEP=0
[ "${1:-}" = "--keep" ] && KEEP=1
bash deploy/install-deps.sh

DIR=$(mktemp -d /tmp/ceph-sla-demo-XXXXXX)
cleanup() {
    bench_stop
    for pid in $CLIENT_PIDS; do kill "$pid" 2>/dev/null || true; done
    if [ "$KEEP" -eq 0 ]; then
        deploy/minicluster.sh down "$DIR" || true
        rm -rf "$DIR"
    fi
}
BENCH_PID=""
CLIENT_PIDS=""
bench_stop() {
    if [ -n "$BENCH_PID" ] && kill -0 "$BENCH_PID" 2>/dev/null; then
        kill -INT "$BENCH_PID" 2>/dev/null || true
        wait "$BENCH_PID" 2>/dev/null || true
    fi
    BENCH_PID=""
}
trap cleanup EXIT
export CEPH_CONF=$DIR/ceph.conf

say() { printf '\n\033[1m== %s\033[0m\n' "$*"; }
mode() { ceph sla status -f json | python3 -c 'import json,sys; print(json.load(sys.stdin)["mode"])'; }
wait_mode() {  # wait_mode MODE TIMEOUT
    local deadline=$(($(date +%s) + $2))
    until [ "$(mode)" = "$1" ]; do
        [ "$(date +%s)" -lt "$deadline" ] || { echo "demo: mode $1 not reached in $2 s" >&2; ceph sla status >&2; exit 1; }
        sleep 0.5
    done
}

wait_recorded() {  # the module fills in what a switch moved a tick after it
    local deadline=$(($(date +%s) + 60))
    until ceph sla history -f json | python3 -c 'import json,sys; h=json.load(sys.stdin); sys.exit(0 if h and h[0]["pgs_moved"] is not None else 1)'; do
        [ "$(date +%s)" -lt "$deadline" ] || { echo "demo: the last switch not recorded in 60 s" >&2; ceph sla history >&2; exit 1; }
        sleep 0.5
    done
}

wait_clean() {  # the data of the last switch in place before the next act
    local deadline=$(($(date +%s) + 180))
    until ceph pg stat -f json | python3 -c 'import json,sys; s=json.load(sys.stdin); s=s.get("pg_summary", s); sys.exit(0 if sum(d["num"] for d in s["num_pg_by_state"] if d["name"]=="active+clean")==s["num_pgs"] else 1)'; do
        [ "$(date +%s)" -lt "$deadline" ] || { echo "demo: PGs not clean in 180 s" >&2; ceph -s >&2; exit 1; }
        sleep 0.5
    done
}

say "Starting a cluster: 1 mon, 1 mgr, 8 OSDs in 4 hosts (each 1 hdd + 1 ssd)"
deploy/minicluster.sh up "$DIR"
ceph osd tree

say "Enabling the sla module and installing its CRUSH rules (generated, verified)"
ceph mgr module enable sla
until ceph sla status >/dev/null 2>&1; do sleep 0.5; done
ceph sla rules apply
ceph osd crush rule ls

say "Pools: 'urgent' (SLA clients); 'normal' and 'logs' (best effort)"
for p in urgent normal logs; do
    ceph osd pool create "$p" 32 32 >/dev/null
    ceph osd pool application enable "$p" rados >/dev/null
done
# short timings so the demo takes a minute; production defaults are in docs/operating.md
ceph config set mgr mgr/sla/interval_secs 1
ceph config set mgr mgr/sla/min_dwell_secs 15
ceph config set mgr mgr/sla/rate_window_secs 3
ceph sla set-threshold 60 25
ceph sla pool set urgent urgent
ceph sla pool set normal normal
ceph sla pool set logs normal

say "Best-effort clients: 'normal' only reads, 'logs' only writes (20 ops/s each)"
/usr/bin/python3 harness/paced_writer.py "$CEPH_CONF" normal 20 3600 1.0 &
CLIENT_PIDS="$CLIENT_PIDS $!"
/usr/bin/python3 harness/paced_writer.py "$CEPH_CONF" logs 20 3600 &
CLIENT_PIDS="$CLIENT_PIDS $!"

say "No urgent client: after the dwell, shared mode; each normal pool the way it gains most"
wait_mode shared 120
# auto picks per pool once it has seen its clients: a copy on ssd serves reads;
# writes gain when a share of the replicas moves to ssd
deadline=$(($(date +%s) + 180))
until ceph osd pool get normal size | grep -q "size: 4" \
        && [ "$(ceph osd pool get logs crush_rule)" = "crush_rule: sla_shared" ]; do
    [ "$(date +%s)" -lt "$deadline" ] || { echo "demo: 'normal' and 'logs' not shared in 180 s" >&2; ceph sla status >&2; exit 1; }
    sleep 0.5
done
wait_clean
ceph sla status
echo "pool 'normal' (auto: copy): $(ceph osd pool get normal size): one more copy, on an ssd OSD, serves its reads"
echo "pool 'logs' (auto: move): $(ceph osd pool get logs crush_rule), size 3: a share of its replicas moved to ssd (a copy would not speed up its writes)"

say "What the next switch costs, per strategy"
ceph sla plan

say "An urgent client starts (rados bench on pool 'urgent'): the module isolates"
t0=$(date +%s%N)
rados -p urgent bench 60 write -b 4096 -t 8 --no-cleanup >/dev/null 2>&1 &
BENCH_PID=$!
wait_mode isolated 60
tenths=$((($(date +%s%N) - t0) / 100000000))
echo "reaction: isolated $((tenths / 10)).$((tenths % 10)) s after the urgent load started"
deadline=$(($(date +%s) + 30))
until ceph osd pool get normal size | grep -q "size: 3"; do
    [ "$(date +%s)" -lt "$deadline" ] || { echo "demo: pool 'normal' not back to size 3" >&2; exit 1; }
    sleep 0.2
done
echo "pool 'normal': size 3: the ssd copy dropped at peering, nothing copied back"
echo "pool 'logs': $(ceph osd pool get logs crush_rule): its replicas on ssd backfilled back to hdd"
ceph sla status

say "The urgent client stops: after 15 s below the low threshold, shared again"
bench_stop
wait_mode shared 120
wait_recorded
ceph sla status

say "Switch history"
ceph sla history

say "Sizing advice from what the module saw (osd bench measures each class's OSDs)"
ceph sla advise --calibrate --cost-ratio 5

say "Metrics (Prometheus text) from the module"
. "$DIR/ports.env"
# The endpoint is served by the module's own thread: wait for it with a
# deadline, and say what the mgr logged if it never answers.
python3 - "$SLA_METRICS_PORT" "$DIR/log/mgr.x.log" <<'PY'
import sys, time, urllib.error, urllib.request
port, log = sys.argv[1], sys.argv[2]
deadline = time.monotonic() + 30
while True:
    try:
        body = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10).read().decode()
        break
    except (urllib.error.URLError, OSError) as e:
        if time.monotonic() > deadline:
            tail = [l for l in open(log, errors="replace") if "sla" in l][-15:]
            sys.exit(f"demo: metrics endpoint 127.0.0.1:{port} not answering after 30 s ({e}); "
                     "last sla lines of the mgr log:\n" + "".join(tail))
        time.sleep(0.5)
print("\n".join(l for l in body.splitlines() if l.startswith("ceph_sla_") and "pool" not in l))
PY
echo "Prometheus endpoint: http://127.0.0.1:$SLA_METRICS_PORT/metrics (dashboard: deploy/grafana/ceph-sla.json)"
if [ "$KEEP" -eq 1 ]; then
    echo "cluster left running: export CEPH_CONF=$DIR/ceph.conf; stop it with: deploy/minicluster.sh down $DIR"
fi
