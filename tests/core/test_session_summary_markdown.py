"""The session summary a user reads (`engram session show`, the vault note): every section as
it appears, built from the recorded facts when the agent wrote no summary of its own."""

from __future__ import annotations

from pathlib import Path

from memory_core import checkpoints, sessions
from memory_core.agents import transcripts
from memory_core.store import Store
from tests.agents_fixtures import Transcript, real_shaped_session, text

T0 = 1_700_000_000.0  # 2023-11-14T22:13:20Z


def _section(markdown: str, title: str) -> str:
    """The body of one `## title` section, up to the next heading."""
    return markdown.split(f"## {title}\n\n", 1)[1].split("\n## ", 1)[0]


def _worked_session(store: Store) -> str:
    sid = "S-work"
    sessions.start(store, session_id=sid, agent="claude-code", now=T0)
    sessions.record_turn(
        store,
        sid,
        user_message="Fix   the\nbuild " + "x" * 250,
        input_tokens=100,
        output_tokens=20,
        started_at=T0 + 1,
        ended_at=T0 + 2,
    )
    for n in range(7):
        sessions.record_file_modified(store, sid, f"src/f{n}.py", ts=T0 + 10 + n)
    sessions.record_file_modified(
        store, sid, "/home/u/.claude/plans/p.md", ts=T0 + 20, outside=True
    )
    sessions.record_command(store, sid, "make", exit_code=2, ts=T0 + 30)
    sessions.record_command(store, sid, "make", exit_code=0, ts=T0 + 31)
    sessions.record_command(store, sid, "npm test", failed=True, ts=T0 + 32)
    sessions.record_tool_call(
        store, sid, tool="rollback", ok=False, summary="to before", ts=T0 + 40
    )
    return sid


def test_a_summary_built_from_facts_tells_what_happened(store: Store) -> None:
    (store.root / "a.py").write_text("x = 1\n")
    sid = _worked_session(store)
    made = checkpoints.create(store, "before", reason="manual", session_id=sid, now=T0 + 35)
    sessions.append_rolling_summary(store, sid, "Fixed the build.", now=T0 + 50)
    text_ = sessions.summary_markdown(store, sid, now=T0 + 4000)

    assert text_.startswith(
        "# Session S-work\n\n"
        "claude-code session, active, started 2023-11-14T22:13:20Z, 1 turn over 50 s.\n\n"
        "## Overview\n\n"
    )
    # The first request, whitespace folded, cut at 200 characters; the files, the commands,
    # the checkpoints and rollbacks.
    assert _section(text_, "Overview") == (
        "Started with: \u201cFix the build " + "x" * 186 + "…\u201d. "
        "Changed 7 files: `src/f6.py`, `src/f5.py`, `src/f4.py`, `src/f3.py`, `src/f2.py` "
        "and 2 more. Ran 3 commands (2 failed). Made 1 checkpoint. Rolled back 1 time.\n"
    )
    assert _section(text_, "Rolling summary") == "Fixed the build.\n"
    assert _section(text_, "Decisions") == "- none recorded\n"
    assert _section(text_, "Outcomes") == (
        "- 7 files modified\n- 0 of 1 tool calls succeeded\n- 1 of 3 commands succeeded\n"
    )
    # `make` succeeded after failing: only `npm test` is still open.
    assert _section(text_, "Open items") == (
        "- `npm test` failed (no exit code reported, 2023-11-14T22:13:52Z)\n"
    )
    assert _section(text_, "Metrics") == (
        "| metric | value |\n|---|---|\n"
        "| duration | 50 s |\n"
        "| turns | 1 |\n"
        "| tokens (in / out) | 100 / 20 |\n"
        "| average tokens per turn | 120.0 |\n"
        "| files modified | 7 |\n"
        "| commands (failed) | 3 (2) |\n"
        "| tool calls ok / failed | 0 / 1 |\n"
        "| success rate | 0% |\n"
    )
    assert _section(text_, "Files touched") == "".join(
        f"- `src/f{n}.py`\n" for n in range(6, -1, -1)
    )
    assert (
        _section(text_, "Files changed outside the project") == "- `/home/u/.claude/plans/p.md`\n"
    )
    assert _section(text_, "Checkpoints and rollbacks") == (
        f"- checkpoint `{made['id']}` (before), manual, 2023-11-14T22:13:55Z\n"
        "- rollback: to before (incomplete), 2023-11-14T22:14:00Z\n"
    )
    assert text_.endswith(
        "## Commands that failed\n\n"
        "- `make` failed (last exit 2, 2023-11-14T22:13:50Z)\n"
        "- `npm test` failed (no exit code reported, 2023-11-14T22:13:52Z)\n"
    )


def test_a_fresh_session_says_nothing_was_recorded(store: Store) -> None:
    sessions.start(store, session_id="S-new", agent="gemini", now=T0)
    text_ = sessions.summary_markdown(store, "S-new", now=T0 + 5)
    assert "gemini session, active, started 2023-11-14T22:13:20Z, 0 turns over 0 s." in text_
    assert _section(text_, "Overview") == (
        "Nothing recorded yet beyond the start of the session.\n"
    )
    for title in ("Decisions", "Outcomes", "Open items"):
        assert _section(text_, title) == "- none recorded\n"
    assert "| success rate | n/a |" in text_
    assert _section(text_, "Files touched") == "- none\n"
    for absent in (
        "## Rolling summary",
        "## Tags",
        "outside the project",
        "## Checkpoints",
        "## Commands that failed",
    ):
        assert absent not in text_


def test_durations_read_in_seconds_minutes_and_hours(store: Store) -> None:
    for sid, seconds, shown in (
        ("S-s", 59.9, "59 s"),
        ("S-m", 60, "1 min"),
        ("S-m2", 3599, "59 min"),
        ("S-h", 3600, "1 h 00 min"),
        ("S-h2", 2 * 3600 + 5 * 60 + 30, "2 h 05 min"),
    ):
        sessions.start(store, session_id=sid, now=T0)
        sessions.close(store, sid, now=T0 + seconds)
        assert f"| duration | {shown} |" in sessions.summary_markdown(store, sid), sid


def test_the_agents_own_summary_replaces_the_one_from_facts(store: Store) -> None:
    sid = _worked_session(store)
    sessions.append_rolling_summary(store, sid, "Rolling words.", now=T0 + 50)
    sessions.set_summary(
        store,
        sid,
        overview="Fixed the build.",
        decisions=["pin make 4.3"],
        outcomes=["build green"],
        open_items=["flaky npm test"],
        tags=["build", "ci"],
    )
    text_ = sessions.summary_markdown(store, sid)
    assert _section(text_, "Overview") == "Fixed the build.\n"
    # The agent's overview says it all: the rolling summary is not repeated.
    assert "## Rolling summary" not in text_
    assert _section(text_, "Decisions") == "- pin make 4.3\n"
    assert _section(text_, "Outcomes") == "- build green\n"
    assert _section(text_, "Open items") == "- flaky npm test\n"
    assert _section(text_, "Tags") == "build, ci\n"


def test_open_items_show_the_five_newest_failing_commands(store: Store) -> None:
    sessions.start(store, session_id="S-f", now=T0)
    for n in range(7):
        sessions.record_command(store, "S-f", f"step{n}", exit_code=1, ts=T0 + n)
    items = _section(sessions.summary_markdown(store, "S-f"), "Open items").splitlines()
    assert [line.split("`")[1] for line in items] == ["step2", "step3", "step4", "step5", "step6"]


def test_an_agents_tokens_show_every_kind_for_the_main_chain_and_subagents(
    store: Store, tmp_path: Path
) -> None:
    sid = "7d0c2a9e-1111-4222-8333-444455556666"
    for path in real_shaped_session(store.root, store.root, tmp_path / "projects", sid):
        transcripts.ingest_file(store, path)
    transcripts.settle_sessions(store, [sid])
    numbers = sessions.metrics(store, sid)
    rows = _section(sessions.summary_markdown(store, sid), "Metrics").splitlines()
    expected = []
    for part, label in (("all", "tokens"), ("main", "main chain"), ("subagents", "subagents")):
        t = numbers["tokens"][part]
        expected.append(
            f"| {label} (in / out / cache write / cache read) | {t['input_tokens']} / "
            f"{t['output_tokens']} / {t['cache_creation_tokens']} / {t['cache_read_tokens']} "
            f"({t['messages']} message{'' if t['messages'] == 1 else 's'}) |"
        )
    assert rows[4:7] == expected
    assert numbers["tokens"]["subagents"]["messages"] > 0
    # `session get` gives the same full figures as the metrics.
    got = sessions.get(store, sid)
    assert got["tokens"] == numbers["tokens"]
    assert (
        got["total_tokens"] == numbers["total_tokens"] == numbers["tokens"]["all"]["total_tokens"]
    )
    assert (got["cache_creation_tokens"], got["cache_read_tokens"]) == (
        numbers["tokens"]["all"]["cache_creation_tokens"],
        numbers["tokens"]["all"]["cache_read_tokens"],
    )


def test_an_agent_without_subagents_has_no_subagent_row(store: Store, tmp_path: Path) -> None:
    t = Transcript("solo-session", store.root)
    t.prompt("Say hello")
    t.response([text("Hello.")], input_tokens=7, output_tokens=3, cache_creation=11, cache_read=13)
    transcripts.ingest_file(store, t.save(tmp_path / "solo-session.jsonl"))
    transcripts.settle_sessions(store, ["solo-session"])
    metrics = _section(sessions.summary_markdown(store, "solo-session"), "Metrics")
    assert (
        "| tokens (in / out / cache write / cache read) | 7 / 3 / 11 / 13 (1 message) |" in metrics
    )
    assert (
        "| main chain (in / out / cache write / cache read) | 7 / 3 / 11 / 13 (1 message) |"
        in metrics
    )
    assert "subagents" not in metrics
    session = sessions.get(store, "solo-session")
    assert (session["input_tokens"], session["output_tokens"], session["total_tokens"]) == (
        7,
        3,
        34,
    )
    listed = sessions.list_sessions(store)
    assert [(s["id"], s["total_tokens"]) for s in listed] == [("solo-session", 34)]


def test_checkpoints_or_rollbacks_alone_are_listed(store: Store) -> None:
    (store.root / "a.py").write_text("x = 1\n")
    sessions.start(store, session_id="S-cp", now=T0)
    made = checkpoints.create(store, reason="turns", session_id="S-cp", now=T0 + 1)
    (store.root / "a.py").write_text("x = 2\n")
    safety = checkpoints.create(store, reason="pre-rollback", session_id="S-cp", now=T0 + 2)
    text_ = sessions.summary_markdown(store, "S-cp")
    assert _section(text_, "Checkpoints and rollbacks") == (
        f"- checkpoint `{made['id']}`, turns, 2023-11-14T22:13:21Z\n"
        f"- checkpoint `{safety['id']}`, pre-rollback, 2023-11-14T22:13:22Z\n"
    )
    # The safety checkpoint a rollback takes is not one the session made.
    assert _section(text_, "Overview") == "Made 1 checkpoint.\n"
    sessions.start(store, session_id="S-rb", now=T0)
    sessions.record_tool_call(store, "S-rb", tool="rollback", ok=True, summary="to C-1", ts=T0 + 2)
    assert _section(sessions.summary_markdown(store, "S-rb"), "Checkpoints and rollbacks") == (
        "- rollback: to C-1, 2023-11-14T22:13:22Z\n"
    )


def test_a_command_that_failed_twice_says_so(store: Store) -> None:
    sessions.start(store, session_id="S-2x", now=T0)
    sessions.record_command(store, "S-2x", "make", exit_code=2, ts=T0 + 1)
    sessions.record_command(store, "S-2x", "make", exit_code=3, ts=T0 + 2)
    assert _section(sessions.summary_markdown(store, "S-2x"), "Open items") == (
        "- `make` failed 2 times (last exit 3, 2023-11-14T22:13:22Z)\n"
    )
