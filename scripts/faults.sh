#!/usr/bin/env bash
# The fault suite (benchmarks/faults.py): a service of its own under load, each fault for a few
# seconds (Redis killed and frozen; PostgreSQL, Elasticsearch and Milvus each frozen and killed
# behind a proxy of the suite's; the worker and a web worker killed; transcript storage full and
# unwritable), then every acknowledged write checked. Prints a table per fault and exits
# non-zero when an acknowledged write was lost.
#
#   ./scripts/faults.sh                 # every fault, 10 s each (about 15 minutes)
#   ./scripts/faults.sh --quick         # Redis frozen and PostgreSQL frozen, 5 s each
#   options: --faults a,b --fault-seconds N --budget SECONDS --threads N --settle SECONDS
#            --web-workers N
#
# PostgreSQL, the Elasticsearch stand-in and Milvus must be running (scripts/stores.sh starts
# the local ones); the suite starts its own Redis server and proxies and never stops or changes
# the shared stores. Mounting the tmpfs (for storage full and unwritable) needs root; without it
# a folder made read-only stands in.
set -euo pipefail
cd "$(dirname "$0")/.."

# shellcheck source=scripts/stores.sh
source scripts/stores.sh
trap stores_down EXIT
stores_up
export SECURE_COOKIES=0
.venv/bin/python benchmarks/faults.py "$@"
