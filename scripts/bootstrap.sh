#!/usr/bin/env bash
# Create .venv and install the project with its development extras; reruns only when
# pyproject.toml changed since the last install.
set -euo pipefail
cd "$(dirname "$0")/.."

PYTHON=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
  echo "==> creating .venv with $($PYTHON --version)"
  "$PYTHON" -m venv .venv
fi
stamp=".venv/.installed-$(sha256sum pyproject.toml | cut -c1-16)"
if [ ! -f "$stamp" ]; then
  echo "==> installing dependencies into .venv"
  .venv/bin/python -m pip install --quiet --upgrade pip
  .venv/bin/python -m pip install --quiet -e ".[dev]"
  rm -f .venv/.installed-*
  touch "$stamp"
fi
