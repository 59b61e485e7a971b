#!/usr/bin/env bash
# Install everything, start the local stores the tests need (if not running), run the tests.
# Extra arguments go to pytest, e.g. ./scripts/test.sh tests/transcripts -x
set -euo pipefail
cd "$(dirname "$0")/.."

./scripts/bootstrap.sh
# shellcheck source=scripts/stores.sh
source scripts/stores.sh
trap stores_down EXIT
stores_up

set +e
.venv/bin/python -m pytest "$@"
status=$?
set -e
exit $status
