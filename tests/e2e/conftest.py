"""Shared pieces of the end-to-end tests in real editors (Neovim, VS Code through code-server).

What they need is installed by `scripts/setup-editors.sh`. A missing editor skips its tests
with the reason, except under CI (or ENGRAM_E2E_REQUIRED=1), where it fails them: a green run
that skipped every editor would hide a broken install step.
"""

from __future__ import annotations

import json
import os
import pwd
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import run_cli

REPO = Path(__file__).resolve().parents[2]
E2E_DIR = Path(__file__).resolve().parent
OUTPUT = REPO / "test-output" / "e2e"
# Read at import, before the autouse fixture points HOME at a throwaway folder; the same rule
# as scripts/setup-editors.sh, which installs there.
_REAL_HOME = Path(os.environ.get("HOME") or pwd.getpwuid(os.getuid()).pw_dir)
EDITORS_CACHE = Path(
    os.environ.get("ENGRAM_EDITORS_CACHE")
    or Path(os.environ.get("XDG_CACHE_HOME") or _REAL_HOME / ".cache") / "engram-editors"
)
CODE_SERVER = EDITORS_CACHE / "code-server" / "node_modules" / ".bin" / "code-server"
VSCODE_BUILTIN_EXTENSIONS = (
    EDITORS_CACHE / "code-server" / "node_modules" / "code-server" / "lib" / "vscode" / "extensions"
)
CLIENT_DIR = REPO / "client-vscode"
VSIX = CLIENT_DIR / "build" / "engram.vsix"
NVIM_DEBIAN = Path("/usr/bin/nvim")
NVIM_PIP = Path(sys.executable).parent / "nvim"
CHROMIUM = Path("/usr/bin/chromium")
ENGRAM = Path(sys.executable).parent / "engram"
BROKEN_SERVER = E2E_DIR / "broken_server.py"

# The sample workspace: a gotcha anchored by a code pattern on line GOTCHA_LINE of app.py.
GOTCHA_TITLE = "read_csv drops the leading zeros of ZIP codes"
GOTCHA_PATTERN = r"read_csv\("
GOTCHA_WORKAROUND = "pass dtype=str to read_csv so ZIP codes keep their leading zeros"
APP_PY = '''"""Load the customer table."""
import pandas as pd


def load_customers(path):
    frame = pd.read_csv(path)
    return frame.set_index("zip")
'''
GOTCHA_LINE = 6
# An in-code annotation, for the grammars (and a gotcha of its own once the file is opened).
NOTES_PY = "# gotcha: the nightly export runs in UTC, not local time\nEXPORT_HOUR = 2\n"
# An agent session recorded through the Claude Code hooks, as an agent would leave it.
SESSION_ID = "e2e-agent-session"
SESSION_PROMPTS = ("load the customers table", "index it by ZIP code")


def require(path: Path, what: str) -> None:
    """Skip (or, under CI, fail) when an editor piece is not installed."""
    if path.exists():
        return
    message = f"{what} not found at {path}: run scripts/setup-editors.sh"
    if os.environ.get("CI") or os.environ.get("ENGRAM_E2E_REQUIRED"):
        pytest.fail(message)
    pytest.skip(message)


def real_server_command() -> list[str]:
    """`engram lsp` of this checkout; ENGRAM_E2E_SERVER (a JSON list) runs another command line."""
    override = os.environ.get("ENGRAM_E2E_SERVER")
    if override:
        return [str(part) for part in json.loads(override)]
    return [str(ENGRAM), "lsp"]


def broken_server_command(*how: str) -> list[str]:
    return [sys.executable, str(BROKEN_SERVER), *how]


@dataclass
class SampleWorkspace:
    root: Path
    app: Path
    gotcha_id: str


@pytest.fixture
def sample_workspace(tmp_path: Path) -> SampleWorkspace:
    """A project with engram initialised and one gotcha added through the real CLI."""
    root = (tmp_path / "shop").resolve()
    root.mkdir()
    app = root / "app.py"
    app.write_text(APP_PY, encoding="utf-8")
    (root / "README.md").write_text("# shop\n", encoding="utf-8")
    (root / "notes.py").write_text(NOTES_PY, encoding="utf-8")
    added = run_cli(
        "gotcha",
        "add",
        GOTCHA_TITLE,
        "--pattern",
        GOTCHA_PATTERN,
        "--workaround",
        GOTCHA_WORKAROUND,
        "--severity",
        "high",
        "--json",
        cwd=root,
    )
    assert added.code == 0, f"engram gotcha add failed: {added.stderr}"
    payload = added.json()
    gotcha_id = (payload.get("gotcha") or payload)["id"] if isinstance(payload, dict) else None
    assert isinstance(gotcha_id, str) and gotcha_id.startswith("G-"), payload
    events: list[tuple[str, dict[str, str]]] = [("SessionStart", {"source": "startup"})]
    for prompt in SESSION_PROMPTS:
        events += [("UserPromptSubmit", {"prompt": prompt}), ("Stop", {})]
    for event, extra in events:
        payload_in = {"session_id": SESSION_ID, "cwd": str(root), "hook_event_name": event, **extra}
        hooked = run_cli("hook", "claude-code", event, cwd=root, stdin=json.dumps(payload_in))
        assert hooked.code == 0, f"engram hook claude-code {event} failed: {hooked.stderr}"
    return SampleWorkspace(root=root, app=app, gotcha_id=gotcha_id)


def write_output(name: str, data: Any) -> Path:
    OUTPUT.mkdir(parents=True, exist_ok=True)
    path = OUTPUT / name
    path.write_text(json.dumps(data, indent=2, default=str), encoding="utf-8")
    return path


def clean_env(tmp: Path) -> dict[str, str]:
    """An environment whose XDG folders are throwaway: no user config leaks into an editor."""
    env = dict(os.environ)
    for name in (
        "XDG_CONFIG_HOME",
        "XDG_DATA_HOME",
        "XDG_STATE_HOME",
        "XDG_CACHE_HOME",
        "XDG_RUNTIME_DIR",
    ):
        folder = tmp / name.lower()
        folder.mkdir(parents=True, exist_ok=True, mode=0o700)
        env[name] = str(folder)
    # The server must be the repository's, whatever else is on PATH.
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    return env


def run(cmd: list[str], **kwargs: Any) -> subprocess.CompletedProcess[str]:
    return subprocess.run(cmd, capture_output=True, text=True, check=False, **kwargs)
