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


# -- what install and uninstall report ---------------------------------------------------------


def test_a_project_install_reports_what_it_did(workspace: Path) -> None:
    result = install.install("claude-code", root=workspace)
    path = workspace / ".claude" / "settings.json"
    assert {k: result[k] for k in ("agent", "scope", "settings", "changed", "portable")} == {
        "agent": "claude-code",
        "scope": "project",
        "settings": str(path),
        "changed": True,
        "portable": True,
    }
    assert result["events"] == list(EVENTS) and "note" not in result
    assert result["commands"]  # /session-summarize beside the settings
    removed = install.uninstall("claude-code", root=workspace)
    assert removed == {
        "agent": "claude-code",
        "scope": "project",
        "settings": str(path),
        "removed": len(EVENTS),
    }


def test_without_engram_on_path_the_hooks_go_to_the_personal_file_and_say_why(
    workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    shared = _write(
        workspace,
        {
            "hooks": {
                "Stop": [
                    {"hooks": [{"type": "command", "command": "engram hook claude-code Stop"}]}
                ]
            }
        },
    )
    monkeypatch.setenv("PATH", str(workspace))  # no engram there
    result = install.install("claude-code", root=workspace)
    assert result["scope"] == "personal"
    assert result["settings"] == str(workspace / ".claude" / "settings.local.json")
    assert result["removed_from_shared"] == 1 and json.loads(shared.read_text()) == {}
    assert result["note"].startswith("engram is not on PATH, so its path on this machine went")
    assert "Put engram on PATH" in result["note"]
    # Back on PATH: the personal file loses its machine paths, the shared one gets the hooks.
    monkeypatch.setenv("PATH", str(Path(__import__("sys").executable).parent))
    again = install.install("claude-code", root=workspace)
    assert again["scope"] == "project" and "note" not in again
    personal = json.loads((workspace / ".claude" / "settings.local.json").read_text())
    assert all(_ours(personal, event) == [] for event in EVENTS)
    removed = install.uninstall("claude-code", root=workspace)
    assert removed["removed"] == len(EVENTS)


def test_gemini_says_nothing_more_when_engram_is_on_path(workspace: Path) -> None:
    result = install.install("gemini", root=workspace)
    assert result["scope"] == "project" and "note" not in result
    path = workspace / ".gemini" / "settings.json"
    assert result["settings"] == str(path)
    stop = json.loads(path.read_text())["hooks"]["AfterAgent"][0]["hooks"][0]
    assert stop["type"] == "command" and stop["timeout"] == 30000
    assert stop["name"] == "engram-AfterAgent"


def test_gemini_without_engram_on_path_warns_that_the_path_is_this_machines(
    workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PATH", str(workspace))
    result = install.install("gemini", root=workspace)
    assert result["scope"] == "project"
    assert "names engram by its path on this machine" in result["note"]
    user = install.install("gemini", root=workspace, user=True)
    assert user["scope"] == "user" and "note" not in user


def test_user_scope_follows_claude_config_dir_and_creates_its_folders(
    workspace: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    first = tmp_path / "conf" / "claude" / "main"
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", f"{first}, {tmp_path / 'other'}")
    result = install.install("claude-code", root=workspace, user=True)
    assert result["scope"] == "user" and result["settings"] == str(first / "settings.json")
    assert all(_ours(json.loads((first / "settings.json").read_text()), e) for e in EVENTS)
    removed = install.uninstall("claude-code", root=workspace, user=True)
    assert removed["scope"] == "user" and removed["removed"] == len(EVENTS)
    monkeypatch.delenv("CLAUDE_CONFIG_DIR")
    assert install.settings_path("claude-code", user=True, root=workspace) == (
        Path.home() / ".claude" / "settings.json"
    )


def test_invalid_json_says_how_to_go_on(workspace: Path) -> None:
    _write(workspace, "{not json")
    with pytest.raises(UsageError) as refused:
        install.install("claude-code", root=workspace)
    assert refused.value.hint == "fix the file, then run this again"


def test_without_an_engram_script_the_hooks_run_the_module(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    import sys

    monkeypatch.setattr(sys, "executable", str(tmp_path / "python3"))
    assert install.engram_command() == [str(tmp_path / "python3"), "-m", "memory_core"]
    assert install.hook_command("gemini", "AfterAgent").endswith(
        "python3 -m memory_core hook gemini AfterAgent"
    )


def test_packaged_hooks_name_the_runner_for_every_event() -> None:
    hooks = install.packaged_hooks("gemini", "uvx engram")
    assert list(hooks) == list(INSTALLED_EVENTS["gemini"])
    handler = hooks["BeforeTool"][0]["hooks"][0]
    assert handler["command"] == "uvx engram hook gemini BeforeTool"
    assert handler["name"] == "engram-BeforeTool" and handler["timeout"] == 30000
    assert hooks["BeforeTool"][0]["matcher"] == "write_file|replace"


# -- Codex: hooks.json, or config.toml where the user's hooks are (comments kept) ---------------

CODEX_TOML = """# my Codex settings
model = "gpt-5"

[hooks]
# my own hook, keep it
[[hooks.Stop]]
hooks = [{ type = "command", command = "./notify.sh" }]
"""


def test_codex_hooks_go_to_hooks_json_and_come_out_again(workspace: Path) -> None:
    result = install.install("codex", root=workspace)
    path = workspace / ".codex" / "hooks.json"
    assert result["settings"] == str(path) and result["note"].startswith("Codex runs new")
    data = json.loads(path.read_text())
    assert all(_ours(data, event) for event in INSTALLED_EVENTS["codex"])
    assert data["hooks"]["PreToolUse"][0]["matcher"] == "apply_patch"
    assert install.uninstall("codex", root=workspace)["removed"] == len(INSTALLED_EVENTS["codex"])
    assert json.loads(path.read_text()) == {}


def test_codex_hooks_join_the_users_in_config_toml_keeping_comments(workspace: Path) -> None:
    toml = workspace / ".codex" / "config.toml"
    toml.parent.mkdir()
    toml.write_text(CODEX_TOML)
    result = install.install("codex", root=workspace)
    assert result["settings"] == str(toml) and result["changed"] is True
    text = toml.read_text()
    assert text.startswith("# my Codex settings\n") and "# my own hook, keep it" in text
    assert "./notify.sh" in text and "engram hook codex Stop" in text
    assert not (workspace / ".codex" / "hooks.json").exists()
    assert install.install("codex", root=workspace)["changed"] is False
    removed = install.uninstall("codex", root=workspace)
    assert removed["removed"] == len(INSTALLED_EVENTS["codex"])
    after = toml.read_text()
    assert "engram hook" not in after
    assert (
        "# my own hook, keep it" in after and "./notify.sh" in after and 'model = "gpt-5"' in after
    )


def test_codex_without_engram_on_path_gives_both_notes(
    workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PATH", str(workspace))
    note = install.install("codex", root=workspace)["note"]
    first, second = note.split("\n")
    assert "names engram by its path on this machine" in first
    assert second.startswith("Codex runs new or changed hooks only once you trust them")
