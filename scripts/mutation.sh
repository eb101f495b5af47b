#!/usr/bin/env bash
# Mutation testing of memory_core and lsp_server, one module at a time (see docs/testing.md).
#   bash scripts/mutation.sh                 every module in turn (hours: name the ones you need)
#   bash scripts/mutation.sh store hooks     only these
#   bash scripts/mutation.sh --list          the modules, their tests and sample sizes
# Installs mutmut into .venv the first time, at the versions of requirements/mutation.lock.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/bootstrap.sh
if ! .venv/bin/python -c 'import mutmut' 2>/dev/null; then
    echo "==> installing mutmut into .venv (requirements/mutation.lock)"
    .venv/bin/python -m pip install --quiet --disable-pip-version-check -r requirements/mutation.lock
fi
exec "${PYTHON:-.venv/bin/python}" scripts/mutation.py "$@"
