#!/usr/bin/env bash
# Create .venv and install the project with its development extras, and the Python SDK
# (clients/python, with its MCP server) in editable mode; reruns only when either
# pyproject.toml changed since the last install.
set -euo pipefail
cd "$(dirname "$0")/.."

PYTHON=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
  echo "==> creating .venv with $($PYTHON --version)"
  "$PYTHON" -m venv .venv
fi
stamp=".venv/.installed-$(cat pyproject.toml clients/python/pyproject.toml | sha256sum | cut -c1-16)"
if [ ! -f "$stamp" ]; then
  echo "==> installing dependencies into .venv"
  .venv/bin/python -m pip install --quiet --upgrade pip
  .venv/bin/python -m pip install --quiet -e ".[dev]"
  .venv/bin/python -m pip install --quiet -e "clients/python[mcp,langgraph,openai-agents]"
  rm -f .venv/.installed-*
  touch "$stamp"
fi
