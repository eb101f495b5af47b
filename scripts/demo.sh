#!/usr/bin/env bash
# See engram work end to end on a sample workspace: set up from nothing, then run the demo.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/bootstrap.sh
exec .venv/bin/python scripts/demo.py "$@"
