"""`/session-summarize` beside the Claude Code settings engram installs its hooks into: written
once, a person's own or edited file never overwritten, uninstall taking only engram's file."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from memory_core.agents import commands, install

NAME = "session-summarize.md"


@pytest.fixture(autouse=True)
def engram_on_path(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", str(Path(sys.executable).parent))


def _shipped_text() -> str:
    return (commands.COMMANDS_DIR / NAME).read_text(encoding="utf-8")


def test_the_packaged_command_is_shipped_as_written() -> None:
    shipped = commands.shipped()
    assert list(shipped) == [NAME]
    assert shipped[NAME] == _shipped_text()
    assert shipped[NAME].startswith("---\ndescription: Summarise this project")


def test_a_project_install_puts_the_command_beside_the_settings_and_uninstall_takes_it(
    workspace: Path,
) -> None:
    result = install.install("claude-code", root=workspace)
    target = workspace / ".claude" / "commands" / NAME
    assert result["commands"] == {"written": [str(target)], "kept": []}
    assert target.read_text(encoding="utf-8") == _shipped_text()
    assert [p.name for p in target.parent.iterdir()] == [NAME]  # no temporary file left
    # Installing again writes nothing and keeps nothing back.
    assert install.install("claude-code", root=workspace)["commands"] == {
        "written": [],
        "kept": [],
    }
    assert commands.uninstall(workspace / ".claude" / "settings.json") == [str(target)]
    assert not target.exists()


def test_a_persons_own_command_of_that_name_is_kept_and_never_removed(tmp_path: Path) -> None:
    settings = tmp_path / ".claude" / "settings.json"
    target = tmp_path / ".claude" / "commands" / NAME
    target.parent.mkdir(parents=True)
    target.write_text("my own summary command\n")
    assert commands.install(settings) == {"written": [], "kept": [str(target)]}
    assert target.read_text() == "my own summary command\n"
    assert commands.uninstall(settings) == []
    assert target.read_text() == "my own summary command\n"


def test_an_edited_copy_of_engrams_command_is_the_persons_now(tmp_path: Path) -> None:
    settings = tmp_path / "settings.json"
    commands.install(settings)
    target = tmp_path / "commands" / NAME
    target.write_text(_shipped_text() + "\nAlso list the files touched.\n")
    assert commands.uninstall(settings) == []
    assert target.exists()
    assert commands.install(settings)["kept"] == [str(target)]


def test_a_command_file_that_is_not_utf8_is_kept_not_a_crash(tmp_path: Path) -> None:
    settings = tmp_path / "settings.json"
    target = tmp_path / "commands" / NAME
    target.parent.mkdir()
    target.write_bytes(b"\xff\xfe latin-1 notes \xe9")
    assert commands.install(settings)["kept"] == [str(target)]
    assert commands.uninstall(settings) == []
    assert target.read_bytes() == b"\xff\xfe latin-1 notes \xe9"


def test_a_folder_in_the_commands_place_is_left_alone(tmp_path: Path) -> None:
    settings = tmp_path / "settings.json"
    (tmp_path / "commands" / NAME).mkdir(parents=True)
    assert commands.uninstall(settings) == []
    assert (tmp_path / "commands" / NAME).is_dir()


def test_uninstall_with_nothing_installed_removes_nothing(tmp_path: Path) -> None:
    assert commands.uninstall(tmp_path / "settings.json") == []
    assert not (tmp_path / "commands").exists()


def test_a_user_install_writes_the_command_under_the_users_claude_folder(
    workspace: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    config = tmp_path / "claude-config"
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(config))
    result = install.install("claude-code", root=workspace, user=True)
    assert result["commands"]["written"] == [str(config / "commands" / NAME)]
    assert not (workspace / ".claude").exists()


def test_a_commands_folder_with_the_persons_own_commands_gets_engrams_beside_them(
    tmp_path: Path,
) -> None:
    folder = tmp_path / ".claude" / "commands"
    folder.mkdir(parents=True)
    (folder / "review.md").write_text("review my diff\n")
    settings = tmp_path / ".claude" / "settings.json"
    assert commands.install(settings)["written"] == [str(folder / NAME)]
    assert commands.uninstall(settings) == [str(folder / NAME)]
    assert [p.name for p in folder.iterdir()] == ["review.md"]


def test_the_settings_folder_is_created_when_it_is_not_there_yet(tmp_path: Path) -> None:
    settings = tmp_path / "home" / ".claude" / "settings.json"
    written = commands.install(settings)["written"]
    assert written == [str(tmp_path / "home" / ".claude" / "commands" / NAME)]


def test_every_shipped_command_is_written_past_one_the_person_already_has(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    shipped = tmp_path / "shipped"
    shipped.mkdir()
    (shipped / "a-first.md").write_text("first\n")
    (shipped / "b-second.md").write_text("second\n")
    monkeypatch.setattr(commands, "COMMANDS_DIR", shipped)
    settings = tmp_path / ".claude" / "settings.json"
    folder = tmp_path / ".claude" / "commands"
    folder.mkdir(parents=True)
    (folder / "a-first.md").write_text("first\n")  # already there, as engram wrote it
    result = commands.install(settings)
    assert result == {"written": [str(folder / "b-second.md")], "kept": []}
    assert sorted(commands.uninstall(settings)) == [
        str(folder / "a-first.md"),
        str(folder / "b-second.md"),
    ]
