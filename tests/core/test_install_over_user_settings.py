"""`engram hooks install|uninstall` over settings a user already wrote (issue 31): a user's hook
in the same group as engram's, engram named by an absolute path, a private file mode, an empty
file, a file with comments. What the user wrote must come out as it went in."""

from __future__ import annotations

import json
import stat
from pathlib import Path

import pytest

from memory_core.agents import install
from memory_core.agents.hooks import INSTALLED_EVENTS
from memory_core.errors import UsageError

EVENTS = INSTALLED_EVENTS["claude-code"]


@pytest.fixture(autouse=True)
def engram_on_path(monkeypatch: pytest.MonkeyPatch) -> None:
    """This installation's `engram` first on PATH, so the hooks name plain `engram`."""
    import sys

    monkeypatch.setenv("PATH", str(Path(sys.executable).parent))


def _write(root: Path, data: object, mode: int | None = None) -> Path:
    path = root / ".claude" / "settings.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, indent=2) if not isinstance(data, str) else data)
    if mode is not None:
        path.chmod(mode)
    return path


def _ours(data: dict, event: str) -> list[str]:
    return [
        h["command"]
        for group in data.get("hooks", {}).get(event, [])
        for h in group.get("hooks", [])
        if install.is_engram_handler(h)
    ]


LINTER = {"type": "command", "command": "./scripts/lint.sh", "timeout": 10}


def test_a_users_hook_sharing_a_group_with_engrams_survives_install_and_uninstall(
    workspace: Path,
) -> None:
    shared = {
        "matcher": "Bash",
        "hooks": [LINTER, {"type": "command", "command": "engram hook claude-code PostToolUse"}],
    }
    path = _write(workspace, {"hooks": {"PostToolUse": [shared]}})
    install.install("claude-code", root=workspace)
    data = json.loads(path.read_text())
    groups = data["hooks"]["PostToolUse"]
    assert groups[0] == {"matcher": "Bash", "hooks": [LINTER]}
    assert _ours(data, "PostToolUse") == ["engram hook claude-code PostToolUse"]
    install.uninstall("claude-code", root=workspace)
    assert json.loads(path.read_text()) == {
        "hooks": {"PostToolUse": [{"matcher": "Bash", "hooks": [LINTER]}]}
    }


def test_a_users_own_empty_group_is_left_alone(workspace: Path) -> None:
    empty = {"matcher": "Read", "hooks": []}
    path = _write(workspace, {"hooks": {"PreToolUse": [empty]}})
    install.install("claude-code", root=workspace)
    assert json.loads(path.read_text())["hooks"]["PreToolUse"][0] == empty
    install.uninstall("claude-code", root=workspace)
    assert json.loads(path.read_text()) == {"hooks": {"PreToolUse": [empty]}}


@pytest.mark.parametrize(
    "command",
    [
        "/home/dev/.local/bin/engram hook claude-code Stop",
        "'/opt/my tools/engram' hook claude-code Stop",
        "/usr/bin/python3 -m memory_core hook claude-code Stop",
        "engram --workspace /srv/app hook claude-code Stop",
    ],
)
def test_engram_named_by_a_path_is_replaced_not_added_again(workspace: Path, command: str) -> None:
    path = _write(
        workspace, {"hooks": {"Stop": [{"hooks": [{"type": "command", "command": command}]}]}}
    )
    install.install("claude-code", root=workspace)
    data = json.loads(path.read_text())
    assert _ours(data, "Stop") == ["engram hook claude-code Stop"]
    assert len(data["hooks"]["Stop"]) == 1


def test_a_command_that_only_mentions_engram_is_the_users(workspace: Path) -> None:
    mine = {"type": "command", "command": "echo engram-hook-claude-code is installed"}
    notes = {"type": "command", "command": "grep engram hooks.log"}
    path = _write(workspace, {"hooks": {"Stop": [{"hooks": [mine, notes]}]}})
    install.install("claude-code", root=workspace)
    assert json.loads(path.read_text())["hooks"]["Stop"][0] == {"hooks": [mine, notes]}


@pytest.mark.parametrize("mode", [0o600, 0o640, 0o644])
def test_the_files_mode_is_kept_by_install_and_uninstall(workspace: Path, mode: int) -> None:
    path = _write(workspace, {"model": "opus"}, mode=mode)
    install.install("claude-code", root=workspace)
    assert stat.S_IMODE(path.stat().st_mode) == mode
    install.uninstall("claude-code", root=workspace)
    assert stat.S_IMODE(path.stat().st_mode) == mode
    assert json.loads(path.read_text()) == {"model": "opus"}


def test_installing_again_leaves_the_file_as_it_is(workspace: Path) -> None:
    path = _write(workspace, {"model": "opus"})
    assert install.install("claude-code", root=workspace)["changed"] is True
    before = (path.read_bytes(), path.stat().st_mtime_ns)
    assert install.install("claude-code", root=workspace)["changed"] is False
    assert (path.read_bytes(), path.stat().st_mtime_ns) == before


@pytest.mark.parametrize("content", ["", "\n", "   \n\t\n"])
def test_an_empty_settings_file_is_filled_not_refused(workspace: Path, content: str) -> None:
    path = _write(workspace, content)
    install.install("claude-code", root=workspace)
    data = json.loads(path.read_text())
    assert all(_ours(data, event) == [f"engram hook claude-code {event}"] for event in EVENTS)


def test_a_settings_file_with_comments_is_refused_and_left_byte_for_byte(workspace: Path) -> None:
    text = '{\n  // my model\n  "model": "opus"\n}\n'
    path = _write(workspace, text)
    with pytest.raises(UsageError) as refused:
        install.install("claude-code", root=workspace)
    assert "not valid JSON" in str(refused.value) and "left untouched" in str(refused.value)
    assert path.read_text() == text


def test_other_keys_order_and_unicode_are_kept(workspace: Path) -> None:
    data = {
        "$schema": "https://json.schemastore.org/claude-code-settings.json",
        "env": {"GREETING": "héllo ✓"},
    }
    path = _write(workspace, data)
    install.install("claude-code", root=workspace)
    written = json.loads(path.read_text())
    assert list(written)[:2] == ["$schema", "env"] and written["env"] == data["env"]
    assert "héllo ✓" in path.read_text()  # not escaped
