"""Hooks in this process (`hooks.handle`, as `engram hook` runs them) where the store is not
simply there for them: another process holds its write lock (the event waits in the spool for
the next hook), or a resident child answered and was killed before it recorded the event (the
next hook records it exactly as a cold hook would have). Also the settings a hook reads from
the workspace's own config and what SessionStart takes in from the agent's memory file."""

from __future__ import annotations

import contextlib
import json
import os
import sqlite3
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from memory_core import config, memory, sessions
from memory_core import store as store_module
from memory_core.agents import hooks
from memory_core.store import Store
from memory_core.workspace import STORE_DIRNAME
from tests.agents_fixtures import hook_payload
from tests.conftest import put_initialised_store

SID = "5e6f7a8b-0000-4000-8000-00000000abcd"
T0 = 1_800_000_000.0


@pytest.fixture
def repo(
    tmp_path: Path, workspace: Path, initialised_store: Path, monkeypatch: pytest.MonkeyPatch
) -> Path:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    subprocess.run(["git", "init", "-q", str(workspace)], check=True)
    put_initialised_store(initialised_store, workspace)
    return workspace


@pytest.fixture(autouse=True)
def _no_work_left_behind() -> Iterator[None]:
    yield
    if store_module.answers_first():
        store_module.close_deferred()


def _hook(repo: Path, event: str, at: float, **extra: Any) -> tuple[int, str]:
    return hooks.handle("claude-code", event, hook_payload(event, SID, repo, **extra), now=at)


def _bash(n: int) -> dict[str, Any]:
    return {
        "tool_name": "Bash",
        "tool_use_id": f"toolu_{n}",
        "tool_input": {"command": f"echo {n}"},
        "tool_response": {"stdout": str(n), "stderr": "", "interrupted": False},
    }


def _rows(repo: Path, sql: str) -> list[tuple[Any, ...]]:
    with contextlib.closing(sqlite3.connect(repo / STORE_DIRNAME / "engram.db")) as conn:
        return [tuple(row) for row in conn.execute(sql)]


def _log(repo: Path) -> str:
    path = repo / STORE_DIRNAME / "engram.log"
    return path.read_text(encoding="utf-8") if path.exists() else ""


def _spooled(repo: Path) -> list[str]:
    folder = repo / STORE_DIRNAME / "spool"
    return sorted(os.listdir(folder)) if folder.is_dir() else []


def test_a_hook_on_a_busy_store_waits_the_workspaces_budget_then_spools_its_event(
    repo: Path,
) -> None:
    """The wait is the workspace's `agents.hook_wait_seconds` (not the default 2 s), the log
    says so in those words, and the event comes in with the next hook, in order: as the event
    the hook was run for, even where the payload does not name its event itself."""
    assert _hook(repo, "SessionStart", T0, source="startup")[0] == 0
    assert _hook(repo, "PostToolUse", T0 + 1, **_bash(0)) == (0, "")
    config.set_value(repo, "agents.hook_wait_seconds", 0.1)
    holder = sqlite3.connect(repo / STORE_DIRNAME / "engram.db", isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")  # another process's long write
    try:
        unnamed = json.loads(hook_payload("PostToolUse", SID, repo, **_bash(1)))
        del unnamed["hook_event_name"]
        assert hooks.handle("claude-code", "PostToolUse", json.dumps(unnamed), now=T0 + 2) == (
            0,
            "",
        )
        assert holder.in_transaction
        assert [name for name in _spooled(repo) if name.endswith(".event")] != []
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    logged = _log(repo)
    assert "hook claude-code PostToolUse: store busy for 0.1 s; spooled" in logged
    assert "failed" not in logged
    assert _hook(repo, "PostToolUse", T0 + 3, **_bash(2)) == (0, "")
    commands = _rows(repo, "SELECT command FROM session_commands ORDER BY ts")
    assert commands == [("echo 0",), ("echo 1",), ("echo 2",)]
    assert _spooled(repo) == []


def _killed_after_answer(repo: Path, event: str, at: float, **extra: Any) -> None:
    """A resident child answers `event` and is killed before its work after the answer."""
    data = hook_payload(event, SID, repo, **extra)
    pid = os.fork()
    if pid == 0:  # pragma: no cover (the child never returns to pytest)
        code = 1
        try:
            store_module.defer_closing()
            code = 0 if hooks.handle("claude-code", event, data, now=at) == (0, "") else 2
        finally:
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0, event


def _all_rows(repo: Path) -> dict[str, list[tuple[Any, ...]]]:
    with contextlib.closing(sqlite3.connect(repo / STORE_DIRNAME / "engram.db")) as conn:
        tables = [
            name
            for (name,) in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")
            if not name.startswith("sqlite_") and "_fts" not in name
        ]
        return {
            table: sorted((tuple(r) for r in conn.execute(f'SELECT * FROM "{table}"')), key=repr)
            for table in tables
        }


@pytest.mark.skipif(not hasattr(os, "fork"), reason="a resident child needs fork")
def test_events_a_killed_resident_child_answered_are_recorded_by_the_next_hook_as_cold(
    repo: Path, initialised_store: Path
) -> None:
    """The agent got its answer, so the event must not be lost: its spooled copy (the same
    event, the same time) is recorded by the next hook, and the store ends as if every hook
    had been a cold process, down to the quota's running total of what the session's hooks
    may have written since it was last measured (a spooled event counts its payload too)."""
    import shutil

    steps: list[tuple[str, float, dict[str, Any]]] = [
        ("SessionStart", T0, {"source": "startup"}),
        ("UserPromptSubmit", T0 + 1, {"prompt": "run the tests", "prompt_id": "p1"}),
        ("PostToolUse", T0 + 2, _bash(1)),
        ("Stop", T0 + 3, {"last_assistant_message": "They pass."}),
        ("PreCompact", T0 + 4, {"trigger": "manual"}),
        ("UserPromptSubmit", T0 + 5, {"prompt": "and the docs", "prompt_id": "p2"}),
    ]
    for event, at, extra in steps:
        assert _hook(repo, event, at, **extra)[0] == 0
    cold = _all_rows(repo)
    shutil.rmtree(repo / STORE_DIRNAME)
    put_initialised_store(initialised_store, repo)

    killed = 0
    for event, at, extra in steps:
        if event in ("PostToolUse", "Stop", "PreCompact"):
            _killed_after_answer(repo, event, at, **extra)
            assert [name for name in _spooled(repo) if name.endswith(".claimed")], event
            killed += 1
        else:
            assert _hook(repo, event, at, **extra)[0] == 0
            assert _spooled(repo) == [], f"the hook after {event} folded the spool"
    assert killed == 3
    assert "failed" not in _log(repo)
    assert _all_rows(repo) == cold


def test_the_rolling_summary_is_compacted_at_the_workspaces_threshold(repo: Path) -> None:
    config.set_value(repo, "sessions.summary_compact_chars", 200)
    _hook(repo, "SessionStart", T0, source="startup")
    _hook(repo, "UserPromptSubmit", T0 + 1, prompt="explain the cache", prompt_id="p1")
    said = "The cache keeps one entry per file and drops the oldest first. " * 6
    assert _hook(repo, "Stop", T0 + 2, last_assistant_message=said)[0] == 0
    with Store.open(repo) as store:
        session = sessions.get(store, SID)
    assert session["status"] == "compacted"
    assert len(session["rolling_summary"] or "") <= 500


def test_a_session_remembers_the_folder_its_agent_ran_in(repo: Path) -> None:
    """(Snapshots of the session are taken there, transcripts' relative paths read from it.)"""
    sub = repo / "pkg"
    sub.mkdir()
    payload = json.loads(hook_payload("SessionStart", SID, repo, source="startup"))
    payload["cwd"] = str(sub)
    code, _ = hooks.handle("claude-code", "SessionStart", json.dumps(payload), now=T0)
    assert code == 0
    assert _rows(repo, "SELECT cwd FROM agent_sessions") == [(str(sub),)]


def test_session_start_takes_in_the_facts_the_agent_wrote_into_its_memory_file(
    repo: Path,
) -> None:
    (repo / "CLAUDE.md").write_text(
        "# Project\n\n## Decisions\n\n- Releases are cut from the main branch only.\n",
        encoding="utf-8",
    )
    assert _hook(repo, "SessionStart", T0, source="startup")[0] == 0
    with Store.open(repo) as store:
        facts = memory.list_memories(store, tag="claude-memory")
    assert [fact["content"] for fact in facts] == ["Releases are cut from the main branch only."]


def test_an_auto_save_the_quota_refuses_is_logged_as_skipped_and_the_turn_kept(
    repo: Path,
) -> None:
    """A session close to its quota: the turn's records fit, its auto-save (a copy of the
    session) would not. The save is skipped, said in the log as such (not as a failure), and
    what the hook recorded stays."""
    from memory_core import quota

    config.set_value(repo, "sessions.autosave_minutes", 1)
    _hook(repo, "SessionStart", T0, source="startup")
    _hook(repo, "UserPromptSubmit", T0 + 1, prompt="describe the cache " * 150, prompt_id="p1")
    _hook(repo, "Stop", T0 + 2, last_assistant_message="It keeps one entry per file.")
    with Store.open(repo) as store:
        used = quota.session_usage(store, SID)
    config.set_value(repo, "sessions.quota_bytes", used + 200)
    assert _hook(repo, "Stop", T0 + 120)[0] == 0  # a save is due: a minute has passed
    logged = _log(repo)
    [skipped] = [line for line in logged.splitlines() if "auto-save skipped:" in line]
    assert " INFO " in skipped and f"session {SID} has no room" in skipped
    assert "MEM_E001" in skipped
    assert "failed" not in logged
    with Store.open(repo) as store:
        session = sessions.get(store, SID)
    assert session["saved_at"] is None
    assert "It keeps one entry per file." in (session["rolling_summary"] or "")


def test_engram_hook_reads_stdin_records_for_its_agent_and_prints_the_context(
    repo: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """`engram hook claude-code SessionStart` as the agent runs it: the payload on stdin, the
    session recorded as Claude Code's, the context printed as one JSON line, exit 0."""
    import io
    import types

    with Store.open(repo) as store:
        memory.add(store, "Releases are cut from the main branch only.", type="decision")
    payload = hook_payload("SessionStart", SID, repo, source="startup").encode()
    stdin = types.SimpleNamespace(buffer=io.BytesIO(payload))
    monkeypatch.setattr("sys.stdin", stdin)
    assert hooks.main("claude-code", "SessionStart", workspace=str(repo)) == 0
    printed = capsys.readouterr().out
    assert printed.endswith("\n") and printed.count("\n") == 1
    context = json.loads(printed)["hookSpecificOutput"]
    assert context["hookEventName"] == "SessionStart"
    assert "Releases are cut from the main branch only." in context["additionalContext"]
    assert _rows(repo, "SELECT agent FROM agent_sessions") == [("claude-code",)]


@pytest.mark.parametrize("source", ["resume", "compact", "fork"])
def test_a_conversation_engram_first_sees_resumed_is_an_existing_session(
    repo: Path, source: str
) -> None:
    """Claude Code starting with `source` resume, compact or fork continues a conversation
    (one recorded before engram was installed, say): not a new session."""
    assert _hook(repo, "SessionStart", T0, source=source)[0] == 0
    with Store.open(repo) as store:
        assert sessions.get(store, SID)["session_type"] == "existing"


def test_a_transcript_not_backed_up_says_why_in_the_log_and_the_session_still_ends(
    repo: Path, tmp_path: Path
) -> None:
    from tests.agents_fixtures import Transcript, text

    transcript = Transcript(SID, repo)
    transcript.prompt("list the sources")
    transcript.response([text("a.py and b.py")])
    path = transcript.save(tmp_path / f"{SID}.jsonl")
    config.set_value(repo, "sessions.backup_transcripts", False)
    _hook(repo, "SessionStart", T0, source="startup", transcript_path=str(path))
    assert _hook(repo, "SessionEnd", T0 + 5, reason="exit", transcript_path=str(path))[0] == 0
    [line] = [line for line in _log(repo).splitlines() if "not backed up" in line]
    assert " INFO " in line
    assert line.endswith("transcript not backed up: sessions.backup_transcripts is off")
    assert "failed" not in _log(repo)
    with Store.open(repo) as store:
        assert sessions.get(store, SID)["status"] == "closed"


def test_an_auto_save_that_fails_is_logged_with_its_reason_and_the_turn_kept(
    repo: Path,
) -> None:
    """The save's own write fails (SQLite refuses it: here a trigger, in life a full disk):
    the log says the auto-save failed and why, as a warning; the turn is recorded anyway."""
    config.set_value(repo, "sessions.autosave_minutes", 1)
    _hook(repo, "SessionStart", T0, source="startup")
    _hook(repo, "UserPromptSubmit", T0 + 1, prompt="describe the cache", prompt_id="p1")
    with contextlib.closing(sqlite3.connect(repo / STORE_DIRNAME / "engram.db")) as conn:
        conn.execute(
            "CREATE TRIGGER refuse_saves BEFORE INSERT ON saved_sessions "
            "BEGIN SELECT RAISE(ABORT, 'database or disk is full'); END"
        )
        conn.commit()
    said = "It keeps one entry per file."
    assert _hook(repo, "Stop", T0 + 120, last_assistant_message=said)[0] == 0
    [line] = [line for line in _log(repo).splitlines() if "auto-save" in line]
    assert " WARNING " in line
    assert "auto-save failed: database or disk is full" in line
    with Store.open(repo) as store:
        assert said in (sessions.get(store, SID)["rolling_summary"] or "")
        turns = sessions.history(store, SID)
    assert [turn["assistant_response"] for turn in turns] == [said]


def test_a_correction_known_only_from_the_answer_hook_reaches_the_sessions_digest(
    repo: Path,
) -> None:
    """Gemini CLI's AfterAgent carries the prompt with the answer; where no BeforeAgent was
    recorded (engram installed mid-session, a hook that timed out), the request is still the
    user's: a correction in it is one of the digest's user corrections."""
    from memory_core.agents import digest

    def gemini(event: str, at: float, **extra: Any) -> tuple[int, str]:
        data = json.loads(hook_payload(event, "gemini-7f3e", repo, **extra))
        data["transcript_path"] = str(repo / "no-chat-yet.json")
        return hooks.handle("gemini", event, json.dumps(data), now=at)

    gemini("SessionStart", T0, source="startup")
    turns = [
        ("add a cache to the loader", "Added one."),
        ("No, don't use functools.lru_cache, use the store's cache instead", "Done."),
    ]
    for n, (prompt, answer) in enumerate(turns, start=1):
        assert gemini("AfterAgent", T0 + n, prompt=prompt, prompt_response=answer) == (0, "")
    with Store.open(repo) as store:
        corrections = digest.extract(store, "gemini-7f3e")["user_corrections"]
    assert [c["text"] for c in corrections] == [
        "Do not use functools.lru_cache, use the store's cache instead"
    ]


def test_with_memory_injection_off_the_context_is_the_continuity_line_and_reminder_alone(
    repo: Path,
) -> None:
    """`agents.context_token_budget = 0` leaves no memory section: what is left starts with
    its own first line, not with the blank lines that would separate it from one."""
    config.set_value(repo, "agents.context_token_budget", 0)
    other = "0f1e2d3c-0000-4000-8000-000000000001"
    for event, at, extra in (
        ("SessionStart", T0, {"source": "startup"}),
        ("UserPromptSubmit", T0 + 1, {"prompt": "fix the loader", "prompt_id": "p1"}),
        ("Stop", T0 + 2, {}),
    ):
        assert _hook(repo, event, at, **extra)[0] == 0
    start = hook_payload("SessionStart", other, repo, source="startup")
    _, told = hooks.handle("claude-code", "SessionStart", start, now=T0 + 120)
    context = json.loads(told)["hookSpecificOutput"]["additionalContext"]
    assert context.startswith("Continuing (existing session) from claude-code.\n\n")
    assert f"1 earlier session has no summary yet ({SID})" in context


def test_a_store_that_cannot_be_written_keeps_the_event_says_so_and_folds_it_later(
    repo: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """SQLite says the store is read-only (as root, whom file modes do not stop, a shared-memory
    file it cannot make does it: the same "attempt to write a readonly database"). The hook
    answers, keeps its event, says once on stderr where; once the store can be written
    again, the next hook records the event."""
    assert _hook(repo, "SessionStart", T0, source="startup")[0] == 0
    folder = repo / STORE_DIRNAME
    for name in ("engram.db-wal", "engram.db-shm"):
        with contextlib.suppress(FileNotFoundError):
            (folder / name).unlink()
    (folder / "engram.db-shm").mkdir()
    capsys.readouterr()
    assert _hook(repo, "PostToolUse", T0 + 1, **_bash(1)) == (0, "")
    said = capsys.readouterr().err
    assert f"engram: the store of {repo} is read-only: hook events are kept in" in said
    assert "failed" not in _log(repo)
    (folder / "engram.db-shm").rmdir()
    assert _hook(repo, "PostToolUse", T0 + 2, **_bash(2)) == (0, "")
    commands = _rows(repo, "SELECT command FROM session_commands ORDER BY ts")
    assert commands == [("echo 1",), ("echo 2",)]
