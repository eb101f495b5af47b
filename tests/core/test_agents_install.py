"""`engram hooks install|uninstall`: merging into settings files people already have."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from memory_core.agents import install
from memory_core.agents.hooks import INSTALLED_EVENTS
from memory_core.errors import UsageError

EXISTING = {
    "permissions": {"allow": ["Bash(npm test:*)"]},
    "model": "opus",
    "hooks": {
        "PostToolUse": [
            {
                "matcher": "Edit|Write",
                "hooks": [
                    {
                        "type": "command",
                        "command": '"$CLAUDE_PROJECT_DIR"/.claude/hooks/fmt.sh',
                        "timeout": 30,
                    }
                ],
            }
        ],
        "Notification": [{"hooks": [{"type": "command", "command": "notify-send claude"}]}],
    },
}


@pytest.fixture(autouse=True)
def engram_on_path(monkeypatch: pytest.MonkeyPatch) -> Path:
    """This installation's `engram` first on PATH, as after `pipx install engram-lsp`."""
    import sys

    script = Path(sys.executable).with_name("engram")
    monkeypatch.setenv("PATH", str(script.parent))
    return script


def _settings(root: Path, data: dict) -> Path:
    path = root / ".claude" / "settings.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, indent=2))
    return path


def _engram_commands(data: dict) -> dict[str, list[str]]:
    return {
        event: [h["command"] for g in groups for h in g["hooks"] if install.is_engram_handler(h)]
        for event, groups in data.get("hooks", {}).items()
    }


def test_install_merges_keeping_every_existing_key_and_hook(workspace: Path) -> None:
    path = _settings(workspace, EXISTING)
    result = install.install("claude-code", root=workspace)
    assert result["changed"] and result["settings"] == str(path)
    data = json.loads(path.read_text())
    assert data["permissions"] == EXISTING["permissions"] and data["model"] == "opus"
    assert data["hooks"]["PostToolUse"][0] == EXISTING["hooks"]["PostToolUse"][0]
    assert data["hooks"]["Notification"] == EXISTING["hooks"]["Notification"]
    ours = _engram_commands(data)
    for event in INSTALLED_EVENTS["claude-code"]:
        assert len(ours[event]) == 1 and ours[event][0].endswith(f"hook claude-code {event}")
    assert data["hooks"]["PreToolUse"][-1]["matcher"] == "Edit|Write|MultiEdit|NotebookEdit"
    assert data["hooks"]["PreCompact"][-1]["hooks"][0]["timeout"] == 60


def test_install_twice_changes_nothing_and_uninstall_removes_exactly_engram(
    workspace: Path,
) -> None:
    path = _settings(workspace, EXISTING)
    install.install("claude-code", root=workspace)
    once = path.read_text()
    assert install.install("claude-code", root=workspace)["changed"] is False
    assert path.read_text() == once
    removed = install.uninstall("claude-code", root=workspace)
    assert removed["removed"] == len(INSTALLED_EVENTS["claude-code"])
    assert json.loads(path.read_text()) == EXISTING
    assert install.uninstall("claude-code", root=workspace)["removed"] == 0


def test_install_creates_a_missing_file_and_uninstall_leaves_no_empty_hooks(
    workspace: Path,
) -> None:
    install.install("claude-code", root=workspace)
    path = workspace / ".claude" / "settings.json"
    assert set(json.loads(path.read_text())["hooks"]) == set(INSTALLED_EVENTS["claude-code"])
    install.uninstall("claude-code", root=workspace)
    assert json.loads(path.read_text()) == {}


def test_invalid_settings_are_refused_and_left_untouched(workspace: Path) -> None:
    path = workspace / ".claude" / "settings.json"
    path.parent.mkdir()
    path.write_text('{"hooks": {,}')
    with pytest.raises(UsageError, match="not valid JSON"):
        install.install("claude-code", root=workspace)
    assert path.read_text() == '{"hooks": {,}'
    path.write_text('{"hooks": []}')
    with pytest.raises(UsageError, match='"hooks" is not an object'):
        install.install("claude-code", root=workspace)


def test_user_scope_and_gemini_settings(workspace: Path) -> None:
    result = install.install("claude-code", root=workspace, user=True)
    assert result["settings"] == str(Path.home() / ".claude" / "settings.json")
    gemini = install.install("gemini", root=workspace)
    data = json.loads((workspace / ".gemini" / "settings.json").read_text())
    assert gemini["scope"] == "project"
    assert set(data["hooks"]) == set(INSTALLED_EVENTS["gemini"])
    handler = data["hooks"]["AfterTool"][0]["hooks"][0]
    assert handler["timeout"] == 30000 and handler["name"] == "engram-AfterTool"
    assert handler["command"].endswith("hook gemini AfterTool")


def test_only_engram_commands_are_recognised_as_engram() -> None:
    assert install.is_engram_handler({"command": "/opt/venv/bin/engram hook claude-code Stop"})
    assert install.is_engram_handler({"command": "python -m memory_core hook gemini AfterTool"})
    assert not install.is_engram_handler({"command": "engram-lint hook claude-code Stop"})
    assert not install.is_engram_handler({"command": "echo engram"})
    assert not install.is_engram_handler({"type": "http", "url": "http://x"})


def test_the_command_is_portable_when_engram_is_on_path(monkeypatch: pytest.MonkeyPatch) -> None:
    import sys

    script = Path(sys.executable).with_name("engram")
    monkeypatch.setenv("PATH", str(script.parent))
    assert install.hook_command("claude-code", "Stop") == "engram hook claude-code Stop"
    monkeypatch.setenv("PATH", "/nonexistent")
    assert install.hook_command("claude-code", "Stop") == f"{script} hook claude-code Stop"


def test_without_engram_on_path_the_committed_settings_get_no_machine_path(
    workspace: Path, monkeypatch: pytest.MonkeyPatch, engram_on_path: Path
) -> None:
    shared = _settings(workspace, EXISTING)
    assert install.install("claude-code", root=workspace)["portable"] is True  # a teammate's
    monkeypatch.setenv("PATH", "/nonexistent")
    result = install.install("claude-code", root=workspace)
    personal = workspace / ".claude" / "settings.local.json"
    assert result["settings"] == str(personal) and result["scope"] == "personal"
    assert "settings.local.json" in result["note"]
    # The committed file is as the team had it before engram, byte for byte in meaning:
    # no path of this machine, and no bare entries that would run the hooks a second time.
    assert json.loads(shared.read_text()) == EXISTING
    assert str(engram_on_path.parent) not in shared.read_text()
    ours = _engram_commands(json.loads(personal.read_text()))
    assert ours["Stop"] == [f"{engram_on_path} hook claude-code Stop"]
    # Installing again with engram on PATH moves the hooks back into the shared file.
    monkeypatch.setenv("PATH", str(engram_on_path.parent))
    back = install.install("claude-code", root=workspace)
    assert back["settings"] == str(shared)
    assert _engram_commands(json.loads(shared.read_text()))["Stop"] == [
        "engram hook claude-code Stop"
    ]
    assert _engram_commands(json.loads(personal.read_text())) == {}
    assert install.uninstall("claude-code", root=workspace)["removed"] == len(
        INSTALLED_EVENTS["claude-code"]
    )
    assert json.loads(shared.read_text()) == EXISTING
