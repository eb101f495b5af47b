"""What the hook path records into a session, as `engram session ...` shows it afterwards:
the rolling summary and its compaction, the search footprint, modified files, commands,
tool calls, ages and crash detection."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from memory_core import sessions
from memory_core.errors import NotFoundError, UsageError
from memory_core.store import Store

T0 = 1_800_000_000.0
TOKEN = "ghp_" + "Q1w2E3r4T5" * 3 + "yuiop6"


def test_compaction_keeps_the_newest_whole_sentences_that_fit() -> None:
    text = "First point. Second point! Third point? Fourth."
    assert sessions.compact_text(text, limit=22) == "Third point? Fourth."
    assert sessions.compact_text(text, limit=20) == "Third point? Fourth."
    assert sessions.compact_text(text, limit=19) == "Fourth."
    assert sessions.compact_text(text, limit=100) == text
    # Not even the last sentence fits: cut at a word, marked with an ellipsis.
    assert sessions.compact_text("alpha beta gamma delta", limit=12) == "alpha beta…"


def test_the_rolling_summary_grows_redacted_and_is_compacted_past_the_threshold(
    store: Store,
) -> None:
    sessions.start(store, session_id="S-roll", now=T0)
    first = sessions.append_rolling_summary(store, "S-roll", "  Fixed the login.  ", now=T0 + 1)
    assert first == {"rolling_summary": "Fixed the login.", "compacted": False}
    second = sessions.append_rolling_summary(
        store, "S-roll", f"Pushed with {TOKEN}.", threshold=60, now=T0 + 2
    )
    assert second["rolling_summary"] == "Fixed the login. Pushed with [REDACTED:github-token]."
    assert second["compacted"] is False
    third = sessions.append_rolling_summary(
        store, "S-roll", "Added tests for the cookie.", threshold=60, now=T0 + 3
    )
    assert third["compacted"] is True
    # Compacted to the newest sentences within 500 characters: here all of them still fit.
    assert third["rolling_summary"] == (
        "Fixed the login. Pushed with [REDACTED:github-token]. Added tests for the cookie."
    )
    session = sessions.get(store, "S-roll")
    assert session["status"] == "compacted"
    assert session["rolling_summary"] == third["rolling_summary"]
    # A closed session stays closed when its summary is compacted.
    sessions.close(store, "S-roll", now=T0 + 4)
    sessions.append_rolling_summary(store, "S-roll", "x" * 100, threshold=10, now=T0 + 5)
    assert sessions.get(store, "S-roll")["status"] == "closed"


@pytest.mark.parametrize(
    ("age", "state"),
    [
        (0, "fresh"),
        (24 * 3600 - 1, "fresh"),
        (24 * 3600, "idle"),
        (7 * 86400 - 1, "idle"),
        (7 * 86400, "decaying"),
        (30 * 86400 - 1, "decaying"),
        (30 * 86400, "archived"),
    ],
)
def test_a_sessions_age_state_follows_its_silence(age: float, state: str) -> None:
    assert sessions.age_state(T0, now=T0 + age) == state


def test_the_search_footprint_keeps_the_last_50_distinct_queries_redacted(store: Store) -> None:
    sessions.start(store, session_id="S-search", now=T0)
    for n in range(55):
        sessions.record_search(store, "S-search", f"query {n}", ts=T0 + n)
    sessions.record_search(store, "S-search", "query 10", ts=T0 + 60)
    sessions.record_search(store, "S-search", f"token {TOKEN}", ts=T0 + 61)
    footprint = sessions.get(store, "S-search")["search_footprint"]
    assert len(footprint) == 50
    assert footprint[-2:] == ["query 10", "token [REDACTED:github-token]"]
    assert footprint[0] == "query 6"  # 0 to 5 fell out
    assert footprint.count("query 10") == 1


def test_modified_files_are_workspace_relative_and_counted_once_per_path(store: Store) -> None:
    sessions.start(store, session_id="S-files", now=T0)
    sessions.record_file_modified(store, "S-files", str(store.root / "src" / "a.py"), ts=T0 + 1)
    sessions.record_file_modified(store, "S-files", "src/a.py", ts=T0 + 5)
    sessions.record_file_modified(store, "S-files", "docs/b.md", ts=T0 + 3)
    # Most recently changed first.
    assert sessions.files_modified(store, "S-files") == ["src/a.py", "docs/b.md"]
    rows = store.query(
        "SELECT path, first_ts, last_ts, changes FROM session_files WHERE session_id = 'S-files' "
        "ORDER BY path"
    )
    assert [tuple(r) for r in rows] == [
        ("docs/b.md", T0 + 3, T0 + 3, 1),
        ("src/a.py", T0 + 1, T0 + 5, 2),
    ]
    assert sessions.metrics(store, "S-files")["files_modified"] == 2


def test_commands_and_tool_calls_make_the_success_figures(store: Store) -> None:
    sessions.start(store, session_id="S-cmd", now=T0)
    sessions.record_command(store, "S-cmd", f"deploy --token {TOKEN}", exit_code=0, ts=T0 + 1)
    sessions.record_command(store, "S-cmd", "make test", exit_code=2, ts=T0 + 2)
    sessions.record_command(store, "S-cmd", "make test", exit_code=None, ts=T0 + 3)
    sessions.record_tool_call(store, "S-cmd", tool="Bash", ok=True, summary="ls", ts=T0 + 4)
    sessions.record_tool_call(store, "S-cmd", tool="Edit", ok=False, ts=T0 + 5)
    sessions.record_tool_call(
        store, "S-cmd", tool="Bash", ok=True, summary=f"curl -H {TOKEN}", ts=T0 + 6
    )
    metrics = sessions.metrics(store, "S-cmd")
    assert (metrics["commands"], metrics["commands_failed"]) == (3, 1)
    assert (
        metrics["tool_calls"],
        metrics["tool_calls_succeeded"],
        metrics["tool_calls_failed"],
    ) == (
        3,
        2,
        1,
    )
    assert metrics["success_rate"] == pytest.approx(0.667)
    assert metrics["duration_seconds"] == 6.0
    stored = store.query("SELECT command FROM session_commands ORDER BY ts")
    assert stored[0]["command"] == "deploy --token [REDACTED:github-token]"
    summaries = [r["summary"] for r in store.query("SELECT summary FROM session_tool_calls")]
    assert summaries == ["ls", None, "curl -H [REDACTED:github-token]"]
    assert [c["command"] for c in sessions.failed_commands(store, "S-cmd")] == ["make test"]


def test_a_batch_of_activity_leaves_the_session_as_the_same_items_one_by_one(
    store: Store,
) -> None:
    """The ingest writes a chunk's activity in one batch; the hooks write item by item."""

    def items(record: dict[str, Callable[..., None]], sid: str) -> None:
        record["tool_call"](sid, tool="Bash", ok=True, summary=f"curl -H {TOKEN}", ts=T0 + 4)
        record["file_modified"](sid, str(store.root / "src" / "a.py"), ts=T0 + 1)
        record["command"](sid, "make test", exit_code=2, ts=T0 + 3)
        record["search"](sid, "needle", ts=T0 + 2)
        record["file_modified"](sid, "src/a.py", ts=T0 + 5)
        record["search"](sid, "haystack", ts=T0 + 6)
        record["search"](sid, "needle", ts=T0 + 7)
        record["tool_call"](sid, tool="Edit", ok=False, ts=T0 + 8)

    def one_by_one(name: str) -> Callable[..., None]:
        function = getattr(sessions, f"record_{name}")
        return lambda *args, **kwargs: function(store, *args, **kwargs)

    items({n: one_by_one(n) for n in ("tool_call", "file_modified", "command", "search")}, "S-one")
    batch = sessions.Activity(store)
    items(
        {n: getattr(batch, n) for n in ("tool_call", "file_modified", "command", "search")}, "S-all"
    )
    assert store.query_one("SELECT 1 FROM sessions WHERE id = 'S-all'") is None  # not yet written
    batch.write()

    def shown(sid: str) -> tuple[object, ...]:
        session = sessions.get(store, sid)
        row = store.query_one(
            "SELECT started_at, last_activity_at, last_action, bytes_used FROM sessions WHERE id = ?",
            (sid,),
        )
        files = store.query(
            "SELECT path, first_ts, last_ts, changes FROM session_files WHERE session_id = ?",
            (sid,),
        )
        calls = store.query(
            "SELECT tool, ok, summary, ts FROM session_tool_calls WHERE session_id = ? ORDER BY id",
            (sid,),
        )
        metrics = {k: v for k, v in sessions.metrics(store, sid).items() if k != "id"}
        return (
            session["search_footprint"],
            tuple(row),
            [tuple(r) for r in files],
            [tuple(r) for r in calls],
            sessions.failed_commands(store, sid),
            metrics,
        )

    assert shown("S-all") == shown("S-one")
    footprint, (_, last_activity, last_action, _), files, calls, *_ = shown("S-all")
    assert footprint == ["haystack", "needle"]
    assert (last_activity, last_action) == (T0 + 8, "tool")
    assert files == [("src/a.py", T0 + 1, T0 + 5, 2)]
    assert calls[0][2] == "curl -H [REDACTED:github-token]"


def test_turns_count_tokens_and_number_in_order(store: Store) -> None:
    sessions.start(store, session_id="S-turns", now=T0)
    seqs = [
        sessions.record_turn(
            store,
            "S-turns",
            user_message=f"ask {n}",
            assistant_response=f"answer {n}",
            tool_calls=[{"tool": "Bash", "ok": n != 1, "summary": "ls"}, "Read"],
            input_tokens=10 * n,
            output_tokens=n,
            started_at=T0 + n,
            ended_at=T0 + n + 0.5,
        )
        for n in range(1, 4)
    ]
    assert seqs == [1, 2, 3]
    metrics = sessions.metrics(store, "S-turns")
    assert (metrics["turns"], metrics["input_tokens"], metrics["output_tokens"]) == (3, 60, 6)
    assert metrics["avg_tokens_per_turn"] == 22.0
    assert (metrics["tool_calls"], metrics["tool_calls_failed"]) == (6, 1)
    assert [t["user_message"] for t in sessions.history(store, "S-turns", last=2)] == [
        "ask 2",
        "ask 3",
    ]
    assert sessions.history(store, "S-turns", last=0) == []


def test_a_session_that_went_silent_without_ending_is_reported_as_crashed(store: Store) -> None:
    sessions.start(store, session_id="S-quiet", now=T0)
    sessions.record_command(store, "S-quiet", "make", exit_code=0, ts=T0 + 10)
    sessions.start(store, session_id="S-paused", now=T0)
    sessions.pause(store, "S-paused", now=T0 + 10)
    sessions.start(store, session_id="S-done", now=T0)
    sessions.close(store, "S-done", now=T0 + 10)
    assert sessions.crashed(store, now=T0 + 10 + 29 * 60) == []
    assert [s["id"] for s in sessions.crashed(store, now=T0 + 10 + 31 * 60)] == ["S-quiet"]


def test_closing_needs_a_known_session_and_a_known_status(store: Store) -> None:
    with pytest.raises(NotFoundError):
        sessions.close(store, "S-nobody")
    sessions.start(store, session_id="S-x", now=T0)
    with pytest.raises(UsageError, match="unknown session status"):
        sessions.close(store, "S-x", status="finished")
    closed = sessions.close(store, "S-x", reason="abort", now=T0 + 90)
    assert closed["duration_seconds"] == 90.0
    session = sessions.get(store, "S-x")
    assert (session["status"], session["end_reason"]) == ("closed", "abort")


def test_a_version_1_document_keeps_everything_it_held(store: Store) -> None:
    old = {
        "version": "1.0",
        "session": {
            "id": "legacy-2",
            "name": "legacy two",
            "agent": "gemini",
            "type": "workflow",
            "started_at": "2023-11-14T22:00:00Z",
            "summary": {"overview": "Old work.", "tags": ["auth", "café"], "decisions": ["keep"]},
        },
        "turns": [
            {
                "userMessage": "hello",
                "assistantResponse": "hi",
                "timestamp": "2023-11-14T22:01:00Z",
                "tokens": {"input": 5, "output": 7},
            },
        ],
    }
    sessions.import_document(store, old)
    session = sessions.get(store, "legacy-2")
    assert (session["agent"], session["session_type"]) == ("gemini", "workflow")
    assert session["started_at"] == "2023-11-14T22:00:00Z"
    assert session["summary"]["overview"] == "Old work."
    assert session["summary"]["tags"] == ["auth", "café"]
    [turn] = sessions.history(store, "legacy-2")
    assert (turn["user_message"], turn["assistant_response"]) == ("hello", "hi")
    assert (turn["input_tokens"], turn["output_tokens"]) == (5, 7)
    assert turn["started_at"] == turn["ended_at"] == "2023-11-14T22:01:00Z"


def test_every_session_error_says_what_to_do(store: Store) -> None:
    with pytest.raises(NotFoundError) as missing:
        sessions.close(store, "S-none")
    assert missing.value.one_line().endswith("(see `engram session list`)")
    with pytest.raises(NotFoundError) as nothing:
        sessions.resume(store)
    assert nothing.value.one_line() == "there is no session to resume (start one, or import one)"
    sessions.start(store, session_id="S-a", now=T0)
    sessions.start(store, session_id="S-b", now=T0)
    sessions.save(store, "S-a", name="shared")
    with pytest.raises(sessions.NameTakenError) as taken:
        sessions.save(store, "S-b", name="shared")
    assert taken.value.one_line().endswith("(choose another name or overwrite it (--yes))")


def test_a_saved_export_keeps_non_ascii_text_readable(store: Store) -> None:
    sessions.start(store, session_id="S-utf", name="réunion", now=T0)
    sessions.set_summary(store, "S-utf", overview="Fixed the café page.", tags=["données"])
    path = sessions.write_export(store, "S-utf")
    text = path.read_text(encoding="utf-8")
    assert "réunion" in text and "\\u" not in text
    assert 'tags: ["données"]' in text


def test_a_turn_keeps_the_times_it_was_given(store: Store) -> None:
    sessions.start(store, session_id="S-t", now=T0)
    sessions.record_turn(store, "S-t", user_message="q", started_at=T0 + 5, ended_at=T0 + 9)
    [turn] = sessions.history(store, "S-t")
    assert (turn["started_at"], turn["ended_at"]) == (
        "2027-01-15T08:00:05Z",
        "2027-01-15T08:00:09Z",
    )


def test_listing_deleting_and_quota_answers(store: Store) -> None:
    for n in range(3):
        sessions.start(store, session_id=f"S-{n}", now=T0 + n)
    assert [s["id"] for s in sessions.list_sessions(store, limit=2)] == ["S-2", "S-1"]
    assert len(sessions.list_sessions(store)) == 3
    deleted = sessions.delete(store, "S-0")
    assert (deleted["id"], deleted["name"], deleted["deleted"]) == ("S-0", None, True)
    assert [s["id"] for s in sessions.list_sessions(store)] == ["S-2", "S-1"]
    assert sessions.enforce_quota(store, "S-1", quota_bytes=10_000_000) == {
        "compacted": False,
        "bytes_used": 0,
    }
