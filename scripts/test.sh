#!/usr/bin/env bash
# Every check engram has, from nothing: set up, lint, type-check, unit + protocol + reliability
# tests, and the end-to-end tests in real editors (Neovim, VS Code via code-server).
set -euo pipefail
cd "$(dirname "$0")/.."

bash scripts/bootstrap.sh
if [ -f scripts/setup-editors.sh ]; then
    bash scripts/setup-editors.sh
fi

echo "==> ruff"
.venv/bin/ruff check .
.venv/bin/ruff format --check .
echo "==> mypy"
.venv/bin/mypy
echo "==> pytest"
mkdir -p test-output
# The slowest tests are listed so a run that nears CI's time shows where it goes.
.venv/bin/python -m pytest -ra --durations=30 "$@"
