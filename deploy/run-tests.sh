#!/usr/bin/env bash
# The whole test suite: lint, types, unit tests, integration tests on a real
# Ceph cluster that the tests start and stop: Pacific from the host's packages,
# Reef and Tentacle from Debian roots built (once, then cached) by
# deploy/release-root.sh; then the SLA benchmark's quick run. Installs what it
# needs first.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
bash deploy/install-deps.sh
exec python3 -m tox run -e lint,unit,integration,integration-reef,integration-tentacle,bench "$@"
