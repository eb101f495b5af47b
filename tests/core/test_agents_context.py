"""The memory given to an agent at session start: what it holds, its ranking, its budget."""

from __future__ import annotations

from pathlib import Path

from memory_core import sessions
from memory_core.agents import context
from memory_core.agents.transcripts import ingest_file
from memory_core.store import Store
from tests.agents_fixtures import (
    CORRECTION,
    FAILING_COMMAND,
    WORKING_COMMAND,
    Transcript,
    realistic_session,
    text,
    tool_use,
)

SESSION = "5f2c1d4e-aaaa-bbbb-cccc-123456789abc"


def _ingest(store: Store, tmp_path: Path) -> None:
    transcript, _ = realistic_session(store.root, SESSION)
    ingest_file(store, transcript.save(tmp_path / f"{SESSION}.jsonl"))


def test_session_start_text_holds_the_correction_the_rule_and_the_dead_end(
    store: Store, tmp_path: Path
) -> None:
    _ingest(store, tmp_path)
    sessions.set_summary(
        store,
        SESSION,
        overview="Fixed the login test via the session cookie",
        open_items=["Add a regression test for SECURE cookies"],
    )
    text_out = context.session_start_text(store, current_session="new-session", now=1_772_450_000.0)
    assert CORRECTION in text_out
    assert "Always run the tests with --no-cov." in text_out
    assert f"`{FAILING_COMMAND}` failed 3 times" in text_out
    assert f"what worked instead: `{WORKING_COMMAND}`" in text_out
    assert "AssertionError: expected status 200" in text_out
    assert "Fixed the login test via the session cookie" in text_out
    assert "Open: Add a regression test for SECURE cookies" in text_out
    assert "src/auth.py" in text_out and "src/cookie.py" in text_out
    # Sections come in rank order.
    assert (
        text_out.index("## Last session")
        < text_out.index("## User corrections")
        < text_out.index("## Dead ends")
    )


def test_the_text_fits_the_token_budget_and_keeps_every_section_represented(
    store: Store, tmp_path: Path
) -> None:
    _ingest(store, tmp_path)
    t = Transcript("S-many", store.root)
    for n in range(200):
        t.prompt(
            f"No, don't rename variable number {n} in the parser module, keep the old names please"
        )
        t.response([text("ok")], stop_reason="end_turn")
    ingest_file(store, t.save(tmp_path / "many.jsonl"))
    small = context.session_start_text(store, token_budget=300, now=1_772_450_000.0)
    assert len(small) <= 300 * context.CHARS_PER_TOKEN
    assert "## User corrections" in small and "## Dead ends" in small
    huge = context.session_start_text(store, token_budget=100_000, now=1_772_450_000.0)
    assert len(huge) <= context.AGENT_OUTPUT_CAP_CHARS
    assert context.session_start_text(store, token_budget=0) == ""


def test_nothing_known_gives_an_empty_text(store: Store) -> None:
    assert context.session_start_text(store) == ""


def test_a_session_whose_transcript_ends_with_a_reply_is_finished_not_crashed(
    store: Store, tmp_path: Path
) -> None:
    t = Transcript("S-done", store.root)
    t.prompt("continue implementation")
    t.response([tool_use("toolu_ls", "Bash", command="ls")])
    t.tool_result("toolu_ls", "a.py", result={"stdout": "a.py", "stderr": "", "interrupted": False})
    t.response([text("All done.")])
    ingest_file(store, t.save(tmp_path / "done.jsonl"))
    out = context.session_start_text(store, current_session="S-next", now=1_900_000_000.0)
    assert "S-done" in out  # it is remembered ...
    for word in ("crash", "abnormal", "stopped", "no end"):
        assert word not in out.lower()  # ... and never said to have broken off


def test_a_session_that_stopped_on_a_tool_call_is_described_in_plain_words(
    store: Store, tmp_path: Path
) -> None:
    t = Transcript("S-cut", store.root)
    t.prompt("Refactor the billing module")
    t.response([text("Starting."), tool_use("toolu_cut", "Bash", command="pytest -q")])
    ingest_file(store, t.save(tmp_path / "cut.jsonl"))
    out = context.session_start_text(store, current_session="S-next", now=1_900_000_000.0)
    assert "## Where the previous session stopped" in out
    assert "Session S-cut recorded no end" in out
    assert "a tool call whose result was never recorded" in out
    assert 'while working on: "Refactor the billing module"' in out
    assert "crash" not in out.lower()


def test_hot_decisions_are_remembered_and_decayed_ones_left_out(store: Store) -> None:
    from memory_core import memory

    day = 86400.0
    now = 1_800_000_000.0
    memory.add(store, "Use uv, not pip, in this repository", type="decision", now=now - day)
    memory.add(
        store, "The staging database is read-only on Fridays", type="finding", now=now - 400 * day
    )
    memory.add(
        store, "Always run mypy before pushing", type="preference", pinned=True, now=now - 400 * day
    )
    text = context.session_start_text(store, now=now)
    kept = text.split("## Decisions and knowledge to keep")[1].split("##")[0]
    assert "decision: Use uv, not pip" in kept
    assert "preference: Always run mypy" in kept  # pinned: never decays
    assert "staging database" not in text  # a year untouched: cold
    assert kept.index("Always run mypy") < kept.index("Use uv")  # pinned first


def test_the_context_names_the_branch_and_the_task_in_progress(
    store: Store, tmp_path: Path
) -> None:
    from tests.conftest import git

    git(store.root, "init", "-q", "-b", "feature/parser")
    t = Transcript("S-wip", store.root)
    t.prompt("Add error recovery to the parser")
    t.response([tool_use("toolu_wip", "Edit", file_path=str(store.root / "p.py"))])
    ingest_file(store, t.save(tmp_path / "wip.jsonl"))
    out = context.session_start_text(store, current_session="next", now=1_900_000_000.0)
    assert "Git branch: feature/parser" in out
    assert "Task in progress (not finished): \u201cAdd error recovery to the parser\u201d" in out


def test_the_memories_kept_are_those_of_the_newest_listed_entries_by_priority(
    store: Store,
) -> None:
    """More entries than the 200 read, of every type, pinned or not, tagged as rules,
    resolved, fresh and decayed: the section tells the same entries in the same order as
    choosing among `list_memories`' entries did."""
    import random

    from memory_core import memory

    day = 86400.0
    now = 1_800_000_000.0
    chooser = random.Random(32)
    types = ("decision", "preference", "learning", "finding", "project", "todo")
    for index in range(230):
        kind = chooser.choice([t for t in types if t in memory.TYPES])
        memory.add(
            store,
            f"Entry {index}: the cache of module {index % 17} is cleared at start",
            type=kind,
            pinned=chooser.random() < 0.1,
            tags=["user-rule"] if chooser.random() < 0.1 else [],
            status="resolved" if kind == "finding" and chooser.random() < 0.3 else "open",
            now=now - chooser.choice([1, 5, 40, 200, 600]) * day - index,
        )
    entries = memory.list_memories(store, limit=200, now=now)
    chosen = [
        e
        for e in entries
        if e["type"] in ("decision", "preference", "learning", "finding", "project")
        and "user-rule" not in e["tags"]
        and e["status"] != "resolved"
        and (e["pinned"] or float(e["priority"]) >= 0.3)
    ]
    chosen.sort(key=lambda e: (not e["pinned"], -float(e["priority"])))
    told = context.remembered(store, now).items
    assert len(told) == min(8, len(chosen)) > 0
    assert [item.split(": ", 1)[1][:10] for item in told] == [e["content"][:10] for e in chosen[:8]]
