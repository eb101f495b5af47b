"""The memory files' sync on its edges (memory_core/agents/memory_files.py): the exact section
engram writes, the file-size limit on both sides, `.claude/CLAUDE.md` as the project file, the
time an import is dated, a pinned imported fact never echoed back, what a skipped sync logs."""

from __future__ import annotations

from pathlib import Path

import pytest

from memory_core import memory
from memory_core.agents import memory_files
from memory_core.agents.memory_files import BEGIN, END, MAX_FILE_BYTES
from memory_core.errors import UsageError
from memory_core.store import Store

T = 1_900_000_000.0


def test_the_section_is_written_exactly_as_people_read_it() -> None:
    items = {"gotchas": ["Redis first (G-abc123)"], "decisions": ["Use uv (M-def456)"], "rules": []}
    assert memory_files.render_section(items) == (
        f"{BEGIN}\n## engram: what this project has learned\n\n"
        "<!-- Written by `engram memory sync`; edits between the engram markers are replaced."
        " Write your own notes outside them: engram reads those too. -->\n"
        "\n### Gotchas (confirmed)\n\n- Redis first (G-abc123)\n"
        "\n### Decisions (pinned)\n\n- Use uv (M-def456)\n"
        f"{END}\n"
    )


def test_an_empty_section_keeps_its_heading_and_says_nothing_is_learned_yet() -> None:
    items: dict[str, list[str]] = {"gotchas": [], "decisions": [], "rules": []}
    assert memory_files.render_section(items, "\r\n") == (
        f"{BEGIN}\r\n## engram: what this project has learned\r\n\r\n"
        "<!-- Written by `engram memory sync`; edits between the engram markers are replaced."
        " Write your own notes outside them: engram reads those too. -->\r\n"
        f"\r\nNothing confirmed or pinned yet.\r\n{END}\r\n"
    )


def test_the_rules_are_under_their_own_heading() -> None:
    section = memory_files.render_section({"rules": ["Run uv sync first (M-0a1b2c)"]})
    assert "\n### Rules\n\n- Run uv sync first (M-0a1b2c)\n" in section


@pytest.mark.parametrize("text", ["# Notes\n- a fact\n", f"# Notes\n{BEGIN}\n- cut off\n"])
def test_a_file_without_a_whole_section_is_all_the_persons(text: str) -> None:
    assert memory_files.split(text) == memory_files.Parts(text, "", "", "\n")


def test_a_file_at_the_size_limit_is_read_and_one_byte_more_is_refused(
    store: Store, workspace: Path
) -> None:
    path = workspace / "GEMINI.md"
    head = b"## Notes\n- kept at the limit\n"
    path.write_bytes(head + b"x" * (MAX_FILE_BYTES - len(head)))
    report = memory_files.sync(store, "gemini", write=False, now=T)
    assert len(report["files"][0]["imported"]) == 1
    path.write_bytes(head + b"x" * (MAX_FILE_BYTES - len(head) + 1))
    with pytest.raises(UsageError, match="larger than"):
        memory_files.sync(store, "gemini", write=False, now=T)


def test_claude_md_under_dot_claude_is_the_project_file_when_the_root_has_none(
    workspace: Path,
) -> None:
    (workspace / ".claude").mkdir()
    (workspace / ".claude" / "CLAUDE.md").write_text("- x\n", encoding="utf-8")
    project = memory_files.targets(workspace, "claude")[0]
    assert project.path == workspace / ".claude" / "CLAUDE.md"
    (workspace / "CLAUDE.md").write_text("- y\n", encoding="utf-8")
    assert memory_files.targets(workspace, "claude")[0].path == workspace / "CLAUDE.md"


def test_imported_facts_are_dated_at_the_syncs_time(store: Store, workspace: Path) -> None:
    (workspace / "GEMINI.md").write_text("## Gemini Added Memories\n- The API is v2\n")
    memory_files.sync(store, "gemini", write=False, now=T - 3600)
    [fact] = memory.list_memories(store, tag="gemini-memory", now=T)
    assert fact["created_at"].startswith("2030-03-17T16:46:40")
    (workspace / "GEMINI.md").write_text("## Notes\n- Deploys are on Tuesdays\n")
    memory_files.on_hook(store, "gemini", "SessionStart", now=T - 7200)
    dated = {m["content"]: m["created_at"] for m in memory.list_memories(store, now=T)}
    assert dated["Deploys are on Tuesdays"].startswith("2030-03-17T15:46:40")


def test_a_file_named_by_path_is_reported_as_a_project_file(store: Store, tmp_path: Path) -> None:
    other = tmp_path / "NOTES.md"
    other.write_text("- a fact\n", encoding="utf-8")
    report = memory_files.sync(store, "claude", write=False, path=other, now=T)
    assert [(f["path"], f["role"]) for f in report["files"]] == [(str(other), "project")]


def test_an_unknown_target_says_which_there_are(store: Store) -> None:
    with pytest.raises(UsageError) as raised:
        memory_files.sync(store, "claude", to="global")
    assert raised.value.hint == "project or auto"


def test_an_imported_fact_pinned_in_engram_is_not_written_back_into_its_file(
    store: Store, workspace: Path
) -> None:
    path = workspace / "CLAUDE.md"
    path.write_text("## Decisions\n- We pin every dependency\n", encoding="utf-8")
    memory_files.sync(store, "claude", write=False, now=T)
    [fact] = memory.list_memories(store, tag="claude-memory")
    memory.update(store, fact["id"], pinned=True)
    memory.add(store, "Deploy on Tuesdays only", type="decision", pinned=True)
    memory_files.sync(store, "claude", now=T)
    section = memory_files.split(path.read_text(encoding="utf-8")).section
    assert "Deploy on Tuesdays only" in section
    assert "We pin every dependency" not in section


def test_a_sync_a_hook_cannot_do_is_logged_with_why(store: Store, workspace: Path) -> None:
    (workspace / "CLAUDE.md").write_bytes(b"- caf\xe9\n")  # Latin-1, not UTF-8
    memory_files.on_hook(store, "claude-code", "SessionStart", now=T)
    log = (workspace / ".engram" / "engram.log").read_text(encoding="utf-8")
    assert "memory sync (claude, SessionStart) skipped:" in log
    assert "is not UTF-8 text" in log
