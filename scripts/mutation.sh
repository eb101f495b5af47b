#!/usr/bin/env bash
# Mutation testing of the safety-critical modules, one module at a time (see docs/testing.md).
#   bash scripts/mutation.sh                 every module in turn
#   bash scripts/mutation.sh store hooks     only these
#   bash scripts/mutation.sh --list          the modules, their tests and sample sizes
# Needs mutmut: .venv/bin/pip install -e '.[mutation]'
set -euo pipefail
cd "$(dirname "$0")/.."
exec "${PYTHON:-.venv/bin/python}" scripts/mutation.py "$@"
