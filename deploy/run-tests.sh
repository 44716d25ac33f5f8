#!/usr/bin/env bash
# The whole test suite: lint, types, unit tests, integration tests on a real
# Ceph cluster that the tests start and stop: Pacific from the host's packages,
# Reef and Tentacle from Debian roots built (once, then cached) by
# deploy/release-root.sh; then every benchmark script at its smallest size and
# the SLA benchmark's quick run. Installs what it needs first, and a real
# CPython 3.9 for the unit suite (deploy/python39.sh: python3.9 on PATH,
# pyenv's, or Debian bullseye's in a cached root).
#
# The tox environments run one after the other and the first that fails stops
# the run. With SLA_RECORD_SUITE=1 the run writes each environment's seconds to
# docs/benchmarks/suite.json (bench/suite_times.py); otherwise it writes nothing.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
ENVS=(lint unit unit-py39 integration integration-reef integration-tentacle bench-smoke bench)
now() { date +%s.%N; }
secs_since() { python3 -c "import sys; print(round(float(sys.argv[2]) - float(sys.argv[1]), 1))" "$1" "$(now)"; }
started=$(now)
bash deploy/install-deps.sh
eval "$(bash deploy/python39.sh)"   # exports SLA_PYTHON39 (and SLA_PYTHON39_LIBS) for unit-py39
times=()
for env in "${ENVS[@]}"; do
    t0=$(now)
    python3 -m tox run -e "$env" "$@"
    times+=("$env=$(secs_since "$t0")")
done
total=$(secs_since "$started")
echo "run-tests: ${times[*]}; total ${total} s"
if [ "${SLA_RECORD_SUITE:-0}" = 1 ]; then
    python3 -m bench.suite_times --total "$total" --out docs/benchmarks/suite.json \
        --command "bash deploy/run-tests.sh${*:+ $*}" "${times[@]}"
fi
