#!/usr/bin/env bash
# The whole test suite: lint, types, unit tests, integration tests on a real
# Ceph cluster that the tests start and stop: Pacific from the host's packages,
# Reef and Tentacle from Debian roots built (once, then cached) by
# deploy/release-root.sh; then the SLA benchmark's quick run. Installs what it
# needs first, and a real CPython 3.9 for the unit suite (deploy/python39.sh:
# python3.9 on PATH, pyenv's, or Debian bullseye's in a cached root).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
bash deploy/install-deps.sh
eval "$(bash deploy/python39.sh)"   # exports SLA_PYTHON39 (and SLA_PYTHON39_LIBS) for unit-py39
exec python3 -m tox run -e lint,unit,unit-py39,integration,integration-reef,integration-tentacle,bench "$@"
