#!/usr/bin/env bash
# Set up engram's Python environment from nothing: a .venv with engram and its dev tools,
# at the exact versions of requirements/dev.lock (so ruff and mypy cannot change under CI).
# Idempotent and quick when nothing changed (keyed on pyproject.toml's hash).
set -euo pipefail
cd "$(dirname "$0")/.."

PYTHON="${PYTHON:-python3}"
if ! "$PYTHON" -c 'import sys; sys.exit(sys.version_info < (3, 11))' 2>/dev/null; then
    echo "engram needs Python 3.11 or newer (found: $("$PYTHON" --version 2>&1))" >&2
    exit 2
fi
if [ ! -x .venv/bin/python ]; then
    echo "==> creating .venv"
    "$PYTHON" -m venv .venv
fi
stamp=".venv/.engram-installed"
want="$(cat pyproject.toml requirements/dev.lock | sha256sum | cut -d' ' -f1)"
if [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "$want" ]; then
    echo "==> installing engram and its dev tools into .venv (exact versions: requirements/dev.lock)"
    .venv/bin/python -m pip install --quiet --disable-pip-version-check --upgrade pip
    # The lock carries hashes, so pip checks every download; engram itself is installed on top
    # without resolving again, so nothing unpinned slips in.
    .venv/bin/python -m pip install --quiet --disable-pip-version-check -r requirements/dev.lock
    .venv/bin/python -m pip install --quiet --disable-pip-version-check --no-deps -e .
    echo "$want" > "$stamp"
fi
# An editable install compiles nothing, and the agents' hooks start a fresh `engram` process
# per event: without bytecode the first hooks (and every one, under PYTHONDONTWRITEBYTECODE)
# compile engram's modules again. Written beside the sources, as Python itself would.
PYTHONDONTWRITEBYTECODE= .venv/bin/python -m compileall -q -j 0 memory_core lsp_server >/dev/null || true
