#!/usr/bin/env bash
# Re-record tests/fixtures/recorded/: run the real Gemini CLI and Codex CLI (from npm) against a
# local scripted model (scripts/fake_model_server.py, on 127.0.0.1 only) with engram's hooks
# installed, and keep the chat files, rollouts and hook calls they wrote. Not part of the test
# suite: it needs npm and takes a few minutes. Usage:
#   scripts/record-agents.sh [AGENTS_DIR]   (default /tmp/engram-agents; reused when present)
# Versions: GEMINI_VERSIONS and CODEX_VERSIONS (space-separated) override the defaults below.
set -euo pipefail
cd "$(dirname "$0")/.."
agents="${1:-/tmp/engram-agents}"
gemini_versions="${GEMINI_VERSIONS:-0.44.0 0.61.0}"
codex_versions="${CODEX_VERSIONS:-0.98.0 0.125.0 0.171.0}"
gemini_folders=()
codex_folders=()
for version in $gemini_versions; do
  folder="gemini-$version"
  [ -x "$agents/$folder/node_modules/.bin/gemini" ] ||
    npm install --silent --no-audit --no-fund --prefix "$agents/$folder" "@google/gemini-cli@$version"
  gemini_folders+=("$folder")
done
for version in $codex_versions; do
  folder="codex-$version"
  [ -x "$agents/$folder/node_modules/.bin/codex" ] ||
    npm install --silent --no-audit --no-fund --prefix "$agents/$folder" "@openai/codex@$version"
  codex_folders+=("$folder")
done
rm -rf tests/fixtures/recorded/gemini-* tests/fixtures/recorded/codex-*
.venv/bin/python scripts/record_agents.py --agents "$agents" \
  --gemini "${gemini_folders[@]}" --codex "${codex_folders[@]}"
