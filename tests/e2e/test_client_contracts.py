"""The editor clients against the server's contract, without starting an editor (fast).

- Every server command of docs/design.md section 5 is reachable from the VS Code palette (an
  "engram: ..." command that runs it) and from a Neovim :Engram* user command.
- Every command the clients send exists in the real server (a renamed server command would
  otherwise break a palette entry silently).
- The extension's contributed settings mirror memory_core.config.SETTINGS exactly.
- The palette titles are the human ones the issue names.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys

from lsp_server.setup import create_server
from tests.e2e.conftest import CLIENT_DIR, REPO

DESIGN_COMMANDS = {
    "engram.session.save",
    "engram.session.restore",
    "engram.session.list",
    "engram.session.delete",
    "engram.session.summary",
    "engram.session.history",
    "engram.session.metrics",
    "engram.checkpoint.create",
    "engram.checkpoint.list",
    "engram.checkpoint.rollback",
    "engram.snapshot.capture",
    "engram.snapshot.restore",
    "engram.gotcha.add",
    "engram.gotcha.resolve",
    "engram.gotcha.list",
    "engram.error.track",
    "engram.memory.add",
    "engram.memory.search",
    "engram.timeline",
    "engram.drift",
}

MANIFEST = json.loads((CLIENT_DIR / "package.json").read_text(encoding="utf-8"))
VSCODE_SOURCES = "\n".join(
    p.read_text(encoding="utf-8") for p in sorted((CLIENT_DIR / "src").glob("*.ts"))
)
NVIM_MODULE = (REPO / "editors" / "nvim" / "lua" / "engram" / "init.lua").read_text(
    encoding="utf-8"
)


def _sent(source: str, call: str) -> set[str]:
    return set(re.findall(rf'{re.escape(call)}\(\s*"(engram\.[A-Za-z.]+)"', source))


def _picked(source: str) -> set[str]:
    """List commands that fill quick picks: pick(engram, "engram.x.list", ...)."""
    return set(re.findall(r'pick\(\s*engram,\s*"(engram\.[A-Za-z.]+)"', source))


def test_every_design_command_is_in_the_vscode_palette() -> None:
    sent = _sent(VSCODE_SOURCES, "engram.execute") | _picked(VSCODE_SOURCES)
    assert sent >= DESIGN_COMMANDS, (
        f"not reachable from the palette: {sorted(DESIGN_COMMANDS - sent)}"
    )


def test_every_design_command_has_a_neovim_user_command() -> None:
    sent = _sent(NVIM_MODULE, "M.execute") | set(
        re.findall(r'choose\(\s*"(engram\.[A-Za-z.]+)"', NVIM_MODULE)
    )
    assert sent >= DESIGN_COMMANDS, f"no :Engram* command runs {sorted(DESIGN_COMMANDS - sent)}"
    for name in (
        "EngramCheckpoint",
        "EngramRollback",
        "EngramSummary",
        "EngramSaveSession",
        "EngramRestoreSession",
        "EngramAddGotcha",
        "EngramTrackError",
    ):
        assert f'command("{name}"' in NVIM_MODULE, name


def test_the_clients_send_only_commands_the_server_has() -> None:
    server_commands = set(create_server().protocol.fm.commands)
    sent = (
        _sent(VSCODE_SOURCES, "engram.execute")
        | _picked(VSCODE_SOURCES)
        | _sent(VSCODE_SOURCES, "this.list")
        | _sent(NVIM_MODULE, "M.execute")
        | set(re.findall(r'choose\(\s*"(engram\.[A-Za-z.]+)"', NVIM_MODULE))
    )
    missing = sorted(sent - server_commands)
    assert not missing, f"the clients call commands the server does not register: {missing}"


def test_palette_commands_are_registered_titled_and_in_the_engram_category() -> None:
    contributed = {c["command"]: c for c in MANIFEST["contributes"]["commands"]}
    registered = set(re.findall(r'"(engram\.ui\.[A-Za-z]+)": async', VSCODE_SOURCES))
    assert set(contributed) == registered
    assert all(c["category"] == "engram" for c in contributed.values())
    titles = {c["title"] for c in contributed.values()}
    for title in (
        "Create Checkpoint",
        "Roll Back to Checkpoint…",
        "Save Session",
        "Restore Session…",
        "Show Session Summary",
        "Add Gotcha",
        "Track Error",
        "Restart Server",
        "Show Output",
    ):
        assert title in titles, title


def test_contributed_settings_mirror_memory_core_settings() -> None:
    completed = subprocess.run(
        [sys.executable, str(CLIENT_DIR / "scripts" / "sync_settings.py"), "--check"],
        capture_output=True,
        text=True,
        check=False,
        cwd=REPO,
    )
    assert completed.returncode == 0, completed.stderr
    groups = MANIFEST["contributes"]["configuration"]
    properties = {k: v for group in groups for k, v in group["properties"].items()}
    # Grouped under readable headings, and titled without underscores ("Window Hours").
    assert {"Gotchas", "Checkpoints", "Sessions"} <= {group["title"] for group in groups}
    assert not [key for key in properties if "_" in key]
    assert "engram.gotchas.windowHours" in properties
    assert (
        "`[gotchas]` `window_hours = 24.0`"
        in properties["engram.gotchas.windowHours"]["markdownDescription"]
    )
    assert properties["engram.gotchas.threshold"]["default"] == 3
    assert properties["engram.log.level"]["enum"] == ["debug", "info", "warning", "error"]
    assert "engram.server.command" in properties
