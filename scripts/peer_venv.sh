#!/usr/bin/env bash
# var/peer-venv: an interpreter with the `peer` extra (mem0, Qdrant, fastembed) for
# benchmarks/peer_mem0.py. mem0's dependencies clash with the service's (protobuf), so they get
# an environment of their own; the service's .venv is left as it is.
set -euo pipefail
cd "$(dirname "$0")/.."
python3 -m venv var/peer-venv
var/peer-venv/bin/pip install --quiet --upgrade pip
var/peer-venv/bin/pip install --quiet ".[peer]"
echo "==> var/peer-venv ready: .venv/bin/python benchmarks/peer_mem0.py"
