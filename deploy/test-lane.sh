#!/usr/bin/env bash
# One lane of deploy/run-tests.sh: tox environments one after the other, output to
# LOGDIR/lane-N.log, each environment's seconds to LOGDIR/lane-N.times; stops at
# the first that fails and names it in LOGDIR/lane-N.failed.
#   deploy/test-lane.sh LOGDIR N NICENESS ENV [ENV...] -- [TOX POSARGS]
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
logdir=$1 lane=$2 niceness=$3
shift 3
envs=()
while [ $# -gt 0 ] && [ "$1" != "--" ]; do envs+=("$1"); shift; done
[ $# -gt 0 ] && shift
now() { date +%s.%N; }
for env in "${envs[@]}"; do
    t0=$(now)
    echo "=== tox -e $env ($(date -u +%H:%M:%S))" >>"$logdir/lane-$lane.log"
    # the lane's niceness is for its pure-CPU environments (lint, unit): a test
    # on a cluster of its own runs at the priority of the other lanes' clusters
    case $env in lint | unit*) n=$niceness ;; *) n=0 ;; esac
    if ! nice -n "$n" python3 -m tox run -e "$env" -- "$@" >>"$logdir/lane-$lane.log" 2>&1; then
        echo "$env" >"$logdir/lane-$lane.failed"
        exit 1
    fi
    python3 -c "import sys; print(f'{sys.argv[1]}={float(sys.argv[3]) - float(sys.argv[2]):.1f}')" \
        "$env" "$t0" "$(now)" >>"$logdir/lane-$lane.times"
done
