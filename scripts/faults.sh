#!/usr/bin/env bash
# The fault suite (benchmarks/faults.py): a service of its own under load, each fault for a few
# seconds (Redis killed and frozen, PostgreSQL frozen and cut off behind a proxy, the worker and
# a web worker killed, transcript storage full), then every acknowledged write checked. Prints a
# table per fault and exits non-zero when an acknowledged write was lost.
#
#   ./scripts/faults.sh                 # every fault, 8 s each (about 8 minutes)
#   ./scripts/faults.sh --quick         # Redis frozen and PostgreSQL frozen, 5 s each
#   options: --faults a,b --fault-seconds N --budget SECONDS --threads N --settle SECONDS
#
# PostgreSQL, the Elasticsearch stand-in and Milvus must be running (scripts/stores.sh starts
# the local ones); the suite starts its own Redis server and never touches the shared stores.
set -euo pipefail
cd "$(dirname "$0")/.."

# shellcheck source=scripts/stores.sh
source scripts/stores.sh
trap stores_down EXIT
stores_up
export SECURE_COOKIES=0
.venv/bin/python benchmarks/faults.py "$@"
