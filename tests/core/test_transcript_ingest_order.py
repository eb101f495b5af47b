"""Claude Code transcripts read the way hooks read them: a result written before its call, a
session read in several appends (after a `cd` into a subfolder), subagent files of 2.0 beside
the session's own. Each asserts what `engram session` and the SessionStart context show."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path

import pytest

from memory_core import sessions
from memory_core.agents import transcripts
from memory_core.agents.transcripts import ingest_file
from memory_core.store import Store
from tests.agents_fixtures import Transcript, text, tool_use

SESSION = "7a1e9c3b-1111-2222-3333-444455556666"


def _append(path: Path, more: Transcript) -> None:
    with path.open("a", encoding="utf-8") as handle:
        handle.write("\n".join(more.lines) + "\n")


def test_a_result_written_before_its_call_still_gives_the_call_its_outcome(
    store: Store, tmp_path: Path
) -> None:
    """Claude Code sometimes writes a tool's result line before the line of the call: the
    failure still counts against that call, as if the lines were in order."""
    talk = Transcript(SESSION, store.root)
    talk.prompt("Run the tests")
    talk.tool_result("toolu_early", "FAILED tests/test_app.py::test_login", is_error=True)
    talk.response([tool_use("toolu_early", "Bash", command="pytest -q")])
    talk.response([text("The login test fails.")])
    path = talk.save(tmp_path / f"{SESSION}.jsonl")
    stats = ingest_file(store, path)
    assert stats.tool_calls == 1 and stats.failures == 1
    metrics = sessions.metrics(store, SESSION)
    assert (metrics["tool_calls"], metrics["tool_calls_failed"]) == (1, 1)
    row = store.query_one("SELECT ok FROM agent_tool_uses WHERE tool_use_id = 'toolu_early'")
    assert row is not None and row["ok"] == 0


def test_a_session_read_in_two_appends_keeps_its_start_and_its_last_activity(
    store: Store, tmp_path: Path
) -> None:
    """A hook reads only what was appended since the last one: the session still started at
    its first line, and its last activity is the newest line, not the newest run's span."""
    talk = Transcript(SESSION, store.root)
    talk.prompt("Add a health check")
    talk.response([text("Added /health.")])
    path = talk.save(tmp_path / f"{SESSION}.jsonl")
    ingest_file(store, path, flush=False)
    first = store.query_one(
        "SELECT started_at, last_seen FROM agent_sessions WHERE session_id = ?", (SESSION,)
    )
    assert first is not None
    more = Transcript(SESSION, store.root, start=talk.start)
    more._clock, more._uuid, more._message = 600, 100, 50  # ten minutes later
    more.prompt("Now document it")
    more.response([text("Documented in README.")])
    _append(path, more)
    ingest_file(store, path, flush=False)
    row = store.query_one(
        "SELECT started_at, last_seen FROM agent_sessions WHERE session_id = ?", (SESSION,)
    )
    assert row is not None
    assert row["started_at"] == first["started_at"]
    assert row["last_seen"] - first["last_seen"] >= 590


def test_after_a_cd_into_a_subfolder_files_keep_their_project_names(
    store: Store, tmp_path: Path
) -> None:
    """A transcript written in another checkout of the project (a worktree, a teammate's): the
    session started at its top; a later hook reads lines whose cwd is a subfolder (the agent
    ran `cd pkg`). The file it edits is still pkg/mod.py of this workspace, not mod.py."""
    checkout = tmp_path / "other-checkout"
    (checkout / "pkg").mkdir(parents=True)
    (store.root / "pkg").mkdir()
    (store.root / "pkg" / "mod.py").write_text("VALUE = 2\n", encoding="utf-8")
    talk = Transcript(SESSION, checkout)
    talk.prompt("Change VALUE to 2 in pkg/mod.py")
    talk.response([tool_use("toolu_cd", "Bash", command="cd pkg")])
    talk.tool_result("toolu_cd", "")
    path = talk.save(tmp_path / f"{SESSION}.jsonl")
    ingest_file(store, path, flush=False)
    more = Transcript(SESSION, checkout / "pkg", start=talk.start)
    more._clock, more._uuid, more._message = 60, 100, 50
    # (Claude Code's Edit takes an absolute path.)
    edit = {
        "file_path": str(checkout / "pkg" / "mod.py"),
        "old_string": "VALUE = 1",
        "new_string": "VALUE = 2",
    }
    more.response([tool_use("toolu_edit", "Edit", **edit)])
    more.tool_result("toolu_edit", "The file mod.py has been updated.")
    more.response([text("Done.")])
    _append(path, more)
    ingest_file(store, path)
    assert sessions.files_modified(store, SESSION) == ["pkg/mod.py"]


def test_the_subagent_files_of_claude_code_2_0_beside_the_session_are_its_own(
    tmp_path: Path,
) -> None:
    """2.0 wrote subagents as `agent-*.jsonl` beside the session's file, naming the session in
    their lines: a session's files are its own and its subagents', not another session's."""
    folder = tmp_path / "project"
    main = Transcript(SESSION, tmp_path).save(folder / f"{SESSION}.jsonl")
    main.write_text('{"type":"user","sessionId":"' + SESSION + '"}\n', encoding="utf-8")
    ours = folder / "agent-1a2b3c4d.jsonl"
    ours.write_text(
        '{"type":"summary","summary":"x"}\n{"parentUuid":null,"sessionId": "' + SESSION + '"}\n',
        encoding="utf-8",
    )
    other = folder / "agent-9f8e7d6c.jsonl"
    other.write_text('{"sessionId":"0000aaaa-other"}\n', encoding="utf-8")
    assert transcripts.session_files(main) == [main, ours]


def test_a_resumed_session_longer_than_one_read_starts_at_its_own_first_line(
    store: Store, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`claude --resume` of a long session writes a file that replays more lines than one
    chunk of the ingest reads: the new session starts at its first new prompt, hours later,
    not at the replayed parent's first line. (Chunks of 10 lines stand for CHUNK_LINES, so
    the test needs no 5,000-line transcript.)"""
    monkeypatch.setattr(transcripts, "CHUNK_LINES", 10)
    parent = Transcript(SESSION, store.root)
    for _ in range(12):
        parent.prompt("Next step")
        parent.response([text("Done.")])
    ingest_file(store, parent.save(tmp_path / f"{SESSION}.jsonl"))
    resumed = Transcript("S-resumed", store.root, start=parent.start)
    resumed.lines = [
        line.replace(f'"sessionId": "{SESSION}"', '"sessionId": "S-resumed"')
        for line in parent.lines
    ]
    resumed._clock, resumed._uuid, resumed._message = 3 * 3600, 90_000, 9_000
    resumed.prompt("Continue with the changelog")
    resumed.response([text("Added.")])
    stats = ingest_file(store, resumed.save(tmp_path / "S-resumed.jsonl"))
    assert stats.prompts == 1
    started = datetime.fromisoformat(sessions.get(store, "S-resumed")["started_at"])
    parent_started = datetime.fromisoformat(sessions.get(store, SESSION)["started_at"])
    assert (started - parent_started).total_seconds() >= 3 * 3600 - 60


def test_a_sessions_task_is_not_a_correction_but_the_same_words_later_are(
    store: Store, tmp_path: Path
) -> None:
    """The first prompt states the task ("... instead of ..." reports a bug, nothing the agent
    did yet); the same words later in the session correct the agent and are remembered."""
    talk = Transcript(SESSION, store.root)
    talk.prompt("The invoices show 19% instead of 20% VAT, fix the rounding")
    talk.response([text("Fixed the rounding.")])
    talk.prompt("The total should use 20% instead of 19% on every line")
    talk.response([text("Changed.")])
    ingest_file(store, talk.save(tmp_path / f"{SESSION}.jsonl"))
    remembered = [
        row["content"]
        for row in store.query("SELECT content FROM memories WHERE type = 'preference'")
    ]
    assert remembered == ["The total should use 20% instead of 19% on every line"]


def test_a_line_written_while_a_hook_reads_is_read_once_by_the_next_hook(
    store: Store, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Claude Code appends while a hook reads: a line written after the hook took the file's
    size is left to the next hook, which reads it once; every line is read exactly once."""
    talk = Transcript(SESSION, store.root)
    for n in range(3):
        talk.prompt(f"Step {n}")
        talk.response([text(f"Done {n}.")])
    path = talk.save(tmp_path / f"{SESSION}.jsonl")
    assert ingest_file(store, path, flush=False).lines == 6
    more = Transcript(SESSION, store.root, start=talk.start)
    more._clock, more._uuid, more._message = 100, 100, 50
    more.prompt("Step 3")
    _append(path, more)
    late = Transcript(SESSION, store.root, start=talk.start)
    late._clock, late._uuid, late._message = 200, 200, 60
    late.response([text("Done 3.")])
    real = transcripts.fast_decoder_for

    def agent_writes(unread: int) -> None:  # between the hook's look at the size and its read
        monkeypatch.setattr(transcripts, "fast_decoder_for", real)
        _append(path, late)
        real(unread)

    monkeypatch.setattr(transcripts, "fast_decoder_for", agent_writes)
    assert ingest_file(store, path, flush=False).lines == 1
    assert ingest_file(store, path).lines == 1
    assert sessions.get(store, SESSION)["turns"] == 4
