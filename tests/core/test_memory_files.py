"""Claude Code's CLAUDE.md / MEMORY.md and Gemini CLI's GEMINI.md, connected to engram's memory:
engram's own section goes out, the agent's facts come in, a person's text never changes."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from memory_core import lifecycle, memory
from memory_core.agents import hooks, memory_files
from memory_core.agents.memory_files import BEGIN, END
from memory_core.errors import UsageError
from memory_core.gotchas import records
from memory_core.store import Store
from tests.agents_fixtures import hook_payload
from tests.conftest import run_cli

# A project CLAUDE.md as people write them: prose, headings, commands in code blocks (whose
# bullets are not facts), an HTML comment, a table, non-ASCII text, and no final newline.
PERSON_CLAUDE_MD = """# CLAUDE.md

This file provides guidance to Claude Code (claude.ai/code) when working with code in this repository.

## Commands

```bash
uv sync --all-extras
uv run pytest -q            # all tests
- not a bullet: this line is inside a code block
```

## Architecture

The API lives in `src/api/`, the workers in `src/workers/` (Celery, Redis broker).

<!-- TODO(maria): describe the deploy pipeline
- not a fact either: inside a comment
-->

## Conventions

- Use `uv`, never `pip install`, in scripts and docs
- Timestamps are UTC everywhere; the UI converts — never store local time
* Money is integer cents, not floats

| env | url |
|---|---|
| staging | https://staging.example.invalid |

Ünïcödé stays as it is: café, 東京."""

# Claude's auto memory as Claude itself writes it (headings and bullets).
AUTO_MEMORY = """# Project memory

## Gotchas
- The integration tests need `docker compose up -d redis` first, else they hang for 60 s
- `make lint` rewrites files; run it before committing, not after

## Decisions
- Chose httpx over requests for async support (2026-01-12)
"""

# GEMINI.md after Gemini CLI's save_memory tool appended to it.
GEMINI_MD = """# Project context for Gemini

Use the Makefile targets; do not call tools directly.

## Gemini Added Memories
- The staging database is reset every night at 02:00 UTC.
- My preferred test runner is pytest with -x.
"""


def _confirmed_gotcha(store: Store) -> str:
    gotcha = records.add(
        store,
        "pytest hangs when Redis is down",
        workaround="start it with docker compose up -d redis",
        severity="high",
        source_type="manual",
    )
    assert gotcha.status == "confirmed"  # manual gotchas are confirmed from the start
    return str(gotcha.id)


def test_first_sync_appends_engrams_section_and_keeps_the_persons_bytes(
    store: Store, workspace: Path
) -> None:
    path = workspace / "CLAUDE.md"
    path.write_bytes(PERSON_CLAUDE_MD.encode("utf-8"))
    gotcha_id = _confirmed_gotcha(store)
    decision = memory.add(
        store, "Deploys go through the blue-green switch", type="decision", pinned=True
    )
    unpinned = memory.add(store, "Maybe move to Postgres 17", type="decision")
    rule = memory.add(store, "Never commit generated files", type="preference", explicit=True)

    report = memory_files.sync(store, "claude")
    assert report["files"][0]["written"]
    after = path.read_bytes().decode("utf-8")
    assert after.startswith(PERSON_CLAUDE_MD)  # byte for byte, no final newline added inside
    section = after[len(PERSON_CLAUDE_MD) :]
    assert section.startswith("\n\n" + BEGIN) and section.endswith(END + "\n")
    assert (
        f"pytest hangs when Redis is down: start it with docker compose up -d redis ({gotcha_id})"
        in section
    )
    assert f"Deploys go through the blue-green switch ({decision['id']})" in section
    assert f"Never commit generated files ({rule['id']})" in section
    assert unpinned["id"] not in section


def test_with_nothing_confirmed_or_pinned_no_section_is_added(
    store: Store, workspace: Path
) -> None:
    path = workspace / "CLAUDE.md"
    path.write_bytes(PERSON_CLAUDE_MD.encode("utf-8"))
    entry = memory_files.sync(store, "claude")["files"][0]
    assert entry["nothing_to_write"] and not entry["written"]
    assert path.read_bytes() == PERSON_CLAUDE_MD.encode("utf-8")


def test_a_resync_rewrites_only_engrams_section(store: Store, workspace: Path) -> None:
    path = workspace / "CLAUDE.md"
    path.write_bytes(PERSON_CLAUDE_MD.encode("utf-8"))
    memory.add(store, "Deploys go through the blue-green switch", type="decision", pinned=True)
    memory_files.sync(store, "claude")
    # A person adds their own text after engram's section, and edits inside it (replaced).
    text = path.read_text(encoding="utf-8")
    text = text.replace(
        "Deploys go through the blue-green switch", "a person's edit inside the section"
    )
    tail = "\n## Added later by a person\n\nKeep PRs under 400 lines.\n"
    path.write_text(text + tail, encoding="utf-8")
    before = memory_files.split(path.read_text(encoding="utf-8"))

    memory.add(store, "Releases are cut on Tuesdays", type="decision", pinned=True)
    memory_files.sync(store, "claude")
    now = memory_files.split(path.read_text(encoding="utf-8"))
    assert now.before == before.before and now.after == before.after == tail
    assert "Releases are cut on Tuesdays" in now.section
    assert "a person's edit inside the section" not in now.section
    # Nothing new: the next sync writes nothing at all.
    assert not memory_files.sync(store, "claude")["files"][0]["written"]


def test_the_agents_facts_come_into_memory_once(store: Store, workspace: Path) -> None:
    path = workspace / "CLAUDE.md"
    path.write_bytes(PERSON_CLAUDE_MD.encode("utf-8"))
    auto = memory_files.claude_auto_memory(workspace)
    auto.parent.mkdir(parents=True)
    auto.write_text(AUTO_MEMORY, encoding="utf-8")

    report = memory_files.sync(store, "claude", write=False)
    assert [len(f["imported"]) for f in report["files"]] == [3, 3]
    facts = {m["content"]: m for m in memory.list_memories(store, tag="claude-memory")}
    assert set(facts) == {
        "Use `uv`, never `pip install`, in scripts and docs",
        "Timestamps are UTC everywhere; the UI converts — never store local time",
        "Money is integer cents, not floats",
        "The integration tests need `docker compose up -d redis` first, else they hang for 60 s",
        "`make lint` rewrites files; run it before committing, not after",
        "Chose httpx over requests for async support (2026-01-12)",
    }
    assert facts["Money is integer cents, not floats"]["type"] == "preference"  # "Conventions"
    assert (
        facts["`make lint` rewrites files; run it before committing, not after"]["type"]
        == "finding"
    )
    httpx = facts["Chose httpx over requests for async support (2026-01-12)"]
    assert httpx["type"] == "decision" and httpx["provenance"]["line"] == 8
    assert httpx["provenance"]["role"] == "auto"
    # Read, not written: both files are exactly as they were.
    assert path.read_bytes() == PERSON_CLAUDE_MD.encode("utf-8")
    assert auto.read_text(encoding="utf-8") == AUTO_MEMORY

    # Once: a second sync takes nothing; a fact forgotten in engram stays forgotten.
    memory.forget(store, httpx["id"])
    again = memory_files.sync(store, "claude", write=False)
    assert [f["imported"] for f in again["files"]] == [[], []]
    assert lifecycle.deletions(store)[0]["counts"]["memories"] == 1
    assert httpx["content"] not in {m["content"] for m in memory.list_memories(store, limit=50)}


def test_engrams_own_lines_and_imported_facts_never_echo(store: Store, workspace: Path) -> None:
    path = workspace / "CLAUDE.md"
    path.write_text("## Decisions\n- We pin every dependency\n", encoding="utf-8")
    memory.add(store, "Deploy on Tuesdays only", type="decision", pinned=True)
    memory_files.sync(store, "claude")
    memory_files.sync(store, "claude")
    contents = [m["content"] for m in memory.list_memories(store, limit=50)]
    # The file's fact came in once; engram's own decision was not read back from its section.
    assert sorted(contents) == ["Deploy on Tuesdays only", "We pin every dependency"]
    # An imported decision is not pinned, so it is not written back into engram's section.
    section = memory_files.split(path.read_text(encoding="utf-8")).section
    assert "We pin every dependency" not in section


def test_crlf_files_keep_their_line_endings(store: Store, workspace: Path) -> None:
    original = "# Notes\r\n\r\n- Windows paths use backslashes\r\n"
    path = workspace / "CLAUDE.md"
    path.write_bytes(original.encode("utf-8"))
    memory.add(store, "Line endings are CRLF in this repo", type="preference", explicit=True)
    memory_files.sync(store, "claude")
    data = path.read_bytes()
    assert data.startswith(original.encode("utf-8"))
    assert b"\n" not in data.replace(b"\r\n", b"")  # no bare LF anywhere


def test_gemini_md_with_save_memory_facts(store: Store, workspace: Path) -> None:
    path = workspace / "GEMINI.md"
    path.write_text(GEMINI_MD, encoding="utf-8")
    _confirmed_gotcha(store)
    report = memory_files.sync(store, "gemini")
    assert len(report["files"][0]["imported"]) == 2
    facts = memory.list_memories(store, tag="gemini-memory")
    assert {f["content"] for f in facts} == {
        "The staging database is reset every night at 02:00 UTC.",
        "My preferred test runner is pytest with -x.",
    }
    assert all(f["agent"] == "gemini" for f in facts)
    text = path.read_text(encoding="utf-8")
    assert text.startswith(GEMINI_MD) and "pytest hangs when Redis is down" in text


def test_a_lone_marker_is_refused_and_the_file_left_alone(store: Store, workspace: Path) -> None:
    broken = f"# Notes\n{BEGIN}\n- a person's line after a cut marker\n"
    path = workspace / "CLAUDE.md"
    path.write_text(broken, encoding="utf-8")
    with pytest.raises(UsageError, match="marker without its partner"):
        memory_files.sync(store, "claude")
    assert path.read_text(encoding="utf-8") == broken


def test_a_secret_in_a_memory_file_is_redacted_in_engram(store: Store, workspace: Path) -> None:
    key = "ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"
    (workspace / "CLAUDE.md").write_text(f"- The CI token is {key}\n", encoding="utf-8")
    memory_files.sync(store, "claude", write=False)
    [fact] = memory.list_memories(store, tag="claude-memory")
    assert key not in fact["content"] and "REDACTED" in fact["content"]


def test_hooks_take_facts_in_at_start_and_rewrite_only_existing_sections_at_end(
    workspace: Path,
) -> None:
    store = Store.init(workspace)
    _confirmed_gotcha(store)
    store.close()
    claude_md = workspace / "CLAUDE.md"
    claude_md.write_bytes(PERSON_CLAUDE_MD.encode("utf-8"))
    session = "0b8c7d6e-1111-2222-3333-444455556666"
    start = hook_payload("SessionStart", session, workspace, source="startup")
    hooks.handle("claude-code", "SessionStart", start, workspace=str(workspace))
    end = hook_payload("SessionEnd", session, workspace, reason="exit")
    hooks.handle("claude-code", "SessionEnd", end, workspace=str(workspace))
    # No section yet: the hooks only read the file.
    assert claude_md.read_bytes() == PERSON_CLAUDE_MD.encode("utf-8")
    reopened = Store.open(workspace)
    try:
        assert len(memory.list_memories(reopened, tag="claude-memory")) == 3
    finally:
        reopened.close()

    # Once the person ran `engram memory sync claude`, SessionEnd keeps the section current.
    assert run_cli("memory", "sync", "claude", cwd=workspace).code == 0
    reopened = Store.open(workspace)
    try:
        memory.add(reopened, "Feature flags live in flags.toml", type="decision", pinned=True)
    finally:
        reopened.close()
    hooks.handle("claude-code", "SessionEnd", end, workspace=str(workspace))
    text = claude_md.read_text(encoding="utf-8")
    assert text.startswith(PERSON_CLAUDE_MD) and "Feature flags live in flags.toml" in text


def test_the_cli_reports_what_it_did(workspace: Path) -> None:
    (workspace / "GEMINI.md").write_text(GEMINI_MD, encoding="utf-8")
    Store.init(workspace).close()
    result = run_cli("memory", "sync", "gemini", "--json", cwd=workspace)
    assert result.code == 0, result.stderr
    [entry] = result.json()["files"]
    # The two facts came from the file itself: nothing confirmed or pinned to write back yet.
    assert len(entry["imported"]) == 2 and not entry["written"] and entry["nothing_to_write"]
    assert (workspace / "GEMINI.md").read_text(encoding="utf-8") == GEMINI_MD
    with Store.open(workspace) as store:
        memory.add(store, "Releases are cut on Tuesdays", type="decision", pinned=True)
    said = run_cli("memory", "sync", "gemini", cwd=workspace)
    assert said.code == 0 and "engram's section written" in said.stdout
    bad = run_cli("memory", "sync", "copilot", cwd=workspace)
    assert bad.code == 2 and "invalid choice" in bad.stderr
    assert (
        json.loads(run_cli("memory", "sync", "gemini", "--json", cwd=workspace).stdout)["files"][0][
            "imported"
        ]
        == []
    )


def test_the_section_can_go_to_claudes_auto_memory(store: Store, workspace: Path) -> None:
    claude_md = workspace / "CLAUDE.md"
    claude_md.write_bytes(PERSON_CLAUDE_MD.encode("utf-8"))
    auto = memory_files.claude_auto_memory(workspace)
    # Where Claude Code keeps it: ~/.claude/projects/<path with every non-alphanumeric as ->/memory.
    expected_dir = re.sub(r"[^A-Za-z0-9]", "-", str(workspace))
    assert auto.parent.parent.name == expected_dir and auto.name == "MEMORY.md"
    assert auto.parents[2] == Path.home() / ".claude" / "projects"
    auto.parent.mkdir(parents=True)
    auto.write_text(AUTO_MEMORY, encoding="utf-8")
    memory.add(store, "Never force-push to main", type="preference", explicit=True)
    report = memory_files.sync(store, "claude", to="auto")
    assert [f["written"] for f in report["files"]] == [False, True]
    assert claude_md.read_bytes() == PERSON_CLAUDE_MD.encode("utf-8")
    text = auto.read_text(encoding="utf-8")
    assert text.startswith(AUTO_MEMORY) and "Never force-push to main" in text


def test_a_marker_quoted_in_prose_is_not_a_section(store: Store, workspace: Path) -> None:
    prose = f"# Notes\n\nengram writes between `{BEGIN}` and `{END}`; keep it.\n- Use tabs\n"
    path = workspace / "CLAUDE.md"
    path.write_text(prose, encoding="utf-8")
    memory.add(store, "Deploys go through the blue-green switch", type="decision", pinned=True)
    memory_files.sync(store, "claude")
    text = path.read_text(encoding="utf-8")
    assert text.startswith(prose)  # the quoted markers were not taken for engram's section
    assert text.count(BEGIN) == 2 and text.rstrip().endswith(END)


def test_gemini_session_start_takes_save_memory_facts_in(workspace: Path) -> None:
    Store.init(workspace).close()
    gemini_md = workspace / "GEMINI.md"
    gemini_md.write_text(GEMINI_MD, encoding="utf-8")
    payload = json.dumps(
        {
            "session_id": "gemini-7f3e",
            "transcript_path": str(workspace / "chat.json"),
            "cwd": str(workspace),
            "hook_event_name": "SessionStart",
            "timestamp": "2026-11-23T10:00:00.000Z",
            "source": "startup",
        }
    )
    code, _out = hooks.handle("gemini", "SessionStart", payload, workspace=str(workspace))
    assert code == 0
    assert gemini_md.read_text(encoding="utf-8") == GEMINI_MD  # read, not written
    store = Store.open(workspace)
    try:
        facts = memory.list_memories(store, tag="gemini-memory")
    finally:
        store.close()
    assert {f["content"] for f in facts} == {
        "The staging database is reset every night at 02:00 UTC.",
        "My preferred test runner is pytest with -x.",
    }
    assert {tag for f in facts for tag in f["tags"]} == {"gemini-memory", "gemini-added-memories"}


def test_subagent_memory_files_are_read_not_written(store: Store, workspace: Path) -> None:
    agent_file = workspace / ".claude" / "agent-memory" / "aios-dev" / "MEMORY.md"
    agent_file.parent.mkdir(parents=True)
    agent_text = "# aios-dev memory\n\n## Gotchas\n- Story files must keep their YAML header\n"
    agent_file.write_text(agent_text, encoding="utf-8")
    memory.add(store, "Always run the QA gate", type="preference", explicit=True)
    report = memory_files.sync(store, "claude")
    entry = next(f for f in report["files"] if f["role"] == "agent")
    assert len(entry["imported"]) == 1 and not entry["written"]
    assert agent_file.read_text(encoding="utf-8") == agent_text
    [fact] = [m for m in memory.list_memories(store, tag="claude-memory")]
    assert fact["type"] == "finding" and fact["provenance"]["role"] == "agent"
