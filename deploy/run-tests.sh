#!/usr/bin/env bash
# The whole test suite: lint, types, unit tests, integration tests on a real
# Ceph cluster that the tests start and stop: Pacific from the host's packages,
# Reef and Tentacle from Debian roots built (once, then cached) by
# deploy/release-root.sh; every benchmark script at its smallest size and the
# SLA benchmark's quick run. Installs what it needs first, and a real
# CPython 3.9 for the unit suite (deploy/python39.sh: python3.9 on PATH,
# pyenv's, or Debian bullseye's in a cached root).
#
# The live clusters mostly wait (stats periods, dwells, peering), so the tox
# environments run in lanes side by side (deploy/test-lane.sh); the CPU-bound
# lint and unit lane runs niced so that the clusters' timers keep time. The SLA
# benchmark's calibration judges the machine's CPU, so its quick run comes alone,
# after the lanes (beside them, its uncapped runs were CPU-bound). Each lane's output
# is printed when it ends; a lane stops at its first failing environment, the
# others finish, and the run fails. Arguments go to every pytest run
# (`bash deploy/run-tests.sh --durations=0`).
#
# With SLA_RECORD_SUITE=1 the run writes each environment's seconds to
# docs/benchmarks/suite.json (bench/suite_times.py); otherwise it writes nothing.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
LANES=("lint unit unit-py39" "integration" "integration-tentacle"
       "bench-smoke integration-reef integration-life" "bench-workloads")
NICENESS=(10 0 0 0 0)
THEN=bench
now() { date +%s.%N; }
secs_since() { python3 -c "import sys; print(round(float(sys.argv[2]) - float(sys.argv[1]), 1))" "$1" "$(now)"; }
# busy jiffies of the whole machine (user + nice + system + irq + softirq + steal)
cpu_busy() { awk '/^cpu /{print $2 + $3 + $4 + $7 + $8 + $9}' /proc/stat; }

started=$(now)
bash deploy/install-deps.sh
eval "$(bash deploy/python39.sh)"   # exports SLA_PYTHON39 (and SLA_PYTHON39_LIBS) for unit-py39
logs=$(mktemp -d /tmp/sla-suite.XXXXXX)
declare -A lane_of=()
stop_lanes() {
    # each lane is its own process group (setsid): TERM reaches tox and pytest,
    # whose finalizers stop their clusters by PID
    for pid in "${!lane_of[@]}"; do kill -TERM -- "-$pid" 2>/dev/null || true; done
    wait || true
    rm -rf "$logs"
}
trap 'stop_lanes; exit 130' INT TERM
trap 'rm -rf "$logs"' EXIT
busy0=$(cpu_busy)
for i in "${!LANES[@]}"; do
    # shellcheck disable=SC2086  # a lane is a list of environment names
    setsid bash deploy/test-lane.sh "$logs" "$i" "${NICENESS[$i]}" ${LANES[$i]} -- "$@" &
    lane_of[$!]=$i
done
failed=0
while [ ${#lane_of[@]} -gt 0 ]; do
    rc=0
    wait -n -p done_pid "${!lane_of[@]}" || rc=$?
    i=${lane_of[$done_pid]}
    unset "lane_of[$done_pid]"
    echo "----- lane $i (${LANES[$i]}): $([ $rc -eq 0 ] && echo passed || echo "FAILED in $(cat "$logs/lane-$i.failed" 2>/dev/null)") after $(secs_since "$started") s"
    cat "$logs/lane-$i.log"
    [ $rc -eq 0 ] || failed=1
done
times=()
for i in "${!LANES[@]}"; do
    [ -f "$logs/lane-$i.times" ] && mapfile -t -O "${#times[@]}" times <"$logs/lane-$i.times"
done
if [ $failed -ne 0 ]; then
    echo "run-tests: FAILED (${times[*]}); $THEN not run"
    exit 1
fi
t0=$(now)
python3 -m tox run -e "$THEN" -- "$@"
times+=("$THEN=$(secs_since "$t0")")
total=$(secs_since "$started")
cpu=$(python3 -c "import os, sys; print(round((int(sys.argv[2]) - int(sys.argv[1])) / os.sysconf('SC_CLK_TCK'), 1))" "$busy0" "$(cpu_busy)")
echo "run-tests: ${times[*]}; total ${total} s; machine CPU busy ${cpu} s of $(nproc) cores"
if [ "${SLA_RECORD_SUITE:-0}" = 1 ]; then
    lanes=()
    for lane in "${LANES[@]}"; do lanes+=(--lane "$lane"); done
    python3 -m bench.suite_times --total "$total" --cpu "$cpu" --then "$THEN" "${lanes[@]}" \
        --out docs/benchmarks/suite.json --command "bash deploy/run-tests.sh${*:+ $*}" "${times[@]}"
fi
