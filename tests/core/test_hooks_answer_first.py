"""Hooks in a process that answers first (a resident child: memory_core/resident_server.py's
`run_child`, docs/resident.md "Events recorded after the answer"), in this process: the agent
has its answer (exit 0, no output) before a silent event is recorded, and once the work after
the answer is done the store holds what a cold hook records. tests/cli/test_resident.py checks
the same through processes."""

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

from memory_core import store as store_module
from memory_core.agents import hooks
from memory_core.workspace import STORE_DIRNAME
from tests.bench.bench_hooks import A_SESSION
from tests.conftest import put_initialised_store

T0 = 1_800_000_000.0

# Each agent's events in a session, as tests/cli/test_resident.py sends them.
EVENTS = A_SESSION
# The events that tell the agent something (context, a message): recorded before the answer.
TELLING = {"SessionStart", "UserPromptSubmit", "PreToolUse", "BeforeAgent"}


@pytest.fixture
def project(tmp_path: Path, initialised_store: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    root = tmp_path / "project"
    root.mkdir()
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    put_initialised_store(initialised_store, root)
    return root.resolve()


@pytest.fixture(autouse=True)
def _no_work_left_behind() -> Iterator[None]:
    yield
    if store_module.answers_first():
        store_module.close_deferred()


def _payload(agent: str, event: str, root: Path, session: str) -> str:
    data: dict[str, Any] = {
        "session_id": session,
        "cwd": str(root),
        "hook_event_name": event,
        "transcript_path": f"/nonexistent/{session}.jsonl",
    }
    if event in ("UserPromptSubmit", "BeforeAgent"):
        data["prompt"] = "make the tests pass"
    if event in ("PreToolUse", "PostToolUse", "AfterTool"):
        data["tool_name"] = "Bash" if agent != "gemini" else "run_shell_command"
        data["tool_input"] = {"command": "pytest -q"}
        data["tool_use_id"] = f"{session}-call-1"
    if event in ("PostToolUse", "AfterTool"):
        data["tool_response"] = {"stdout": "3 passed", "stderr": "", "interrupted": False}
    if event == "AfterAgent":
        data["prompt"] = "make the tests pass"
        data["prompt_response"] = "They pass now."
    if event == "SessionEnd":
        data["reason"] = "exit"
    if event in ("PreCompact", "PostCompact"):
        data["trigger"] = "manual"
    return json.dumps(data)


def _store_rows(root: Path) -> dict[str, list[tuple[Any, ...]]]:
    """Every row of every table (search indexes aside): what the hooks recorded."""
    with contextlib.closing(sqlite3.connect(root / STORE_DIRNAME / "engram.db")) as conn:
        tables = [
            name
            for (name,) in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")
            if not name.startswith("sqlite_") and "_fts" not in name
        ]
        return {
            table: sorted(
                (tuple(row) for row in conn.execute(f'SELECT * FROM "{table}"')), key=repr
            )
            for table in tables
        }


def _spooled(root: Path) -> list[str]:
    folder = root / STORE_DIRNAME / "spool"
    return sorted(os.listdir(folder)) if folder.is_dir() else []


def _answer_first(agent: str, event: str, data: str, at: float) -> tuple[int, str]:
    """One hook as the resident child runs it: closes deferred, the command, the answer."""
    store_module.defer_closing()
    return hooks.handle(agent, event, data, now=at)


def _fresh_store(root: Path, initialised_store: Path) -> None:
    import shutil

    shutil.rmtree(root / STORE_DIRNAME)
    put_initialised_store(initialised_store, root)


@pytest.mark.parametrize("agent", sorted(EVENTS))
def test_silent_events_are_answered_before_they_are_recorded_and_then_as_cold(
    project: Path, initialised_store: Path, agent: str
) -> None:
    session = f"s-{agent}"
    events = [
        (e, _payload(agent, e, project, session), T0 + n) for n, e in enumerate(EVENTS[agent])
    ]
    cold_answers = []
    for event, data, at in events:
        cold_answers.append(hooks.handle(agent, event, data, now=at))
    cold = _store_rows(project)
    _fresh_store(project, initialised_store)

    silent = 0
    for (event, data, at), cold_answer in zip(events, cold_answers, strict=True):
        before = _store_rows(project)
        answer = _answer_first(agent, event, data, at)
        assert answer == cold_answer, event
        answered = _store_rows(project)
        if event in TELLING:
            if event != "PreToolUse":  # (which records nothing: it only tells the gotchas)
                assert answered != before, f"{event} is recorded before its answer"
            assert _spooled(project) == [], event
        else:
            silent += 1
            assert answer == (0, ""), event
            assert answered == before, f"{event} recorded nothing before the answer"
            kept = _spooled(project)
            assert len(kept) == 1 and kept[0].endswith(f".{os.getpid()}.claimed"), event
        store_module.close_deferred()
        assert not store_module.answers_first()
        assert _spooled(project) == [], f"{event}'s spooled copy is gone once recorded"
        if event in TELLING:
            # Recorded before its answer: nothing of it was left for after.
            assert _store_rows(project) == answered, event
        else:
            assert _store_rows(project) != before, f"{event} is recorded after the answer"
    assert silent >= 2
    assert _store_rows(project) == cold


def test_a_quota_warning_is_recorded_before_the_answer_that_carries_it(
    project: Path, initialised_store: Path
) -> None:
    events = [
        ("SessionStart", {}),
        ("UserPromptSubmit", {"prompt": "make the tests pass " * 20}),
        ("PostToolUse", {}),
        ("PostToolUseFailure", {"error": "exit status 1: " + "E" * 400}),
        ("Stop", {}),
    ]

    def payload(event: str, extra: dict[str, Any]) -> str:
        data = json.loads(_payload("claude-code", event, project, "s-full"))
        if event == "PostToolUseFailure":
            data["tool_name"], data["tool_input"] = "Bash", {"command": "pytest -q"}
        return json.dumps({**data, **extra})

    def run(answer_first: bool) -> tuple[list[tuple[int, str]], dict[str, Any]]:
        _fresh_store(project, initialised_store)
        (project / STORE_DIRNAME / "config.toml").write_text("[sessions]\nquota_bytes = 2500\n")
        answers = []
        for n, (event, extra) in enumerate(events):
            if not answer_first:
                answers.append(
                    hooks.handle("claude-code", event, payload(event, extra), now=T0 + n)
                )
                continue
            answer = _answer_first("claude-code", event, payload(event, extra), T0 + n)
            if answer[1]:
                # Told something: recorded before, nothing of it left in the spool for after.
                assert _spooled(project) == [], event
            answered = _store_rows(project)
            store_module.close_deferred()
            if answer[1]:
                assert _store_rows(project) == answered, event
            answers.append(answer)
        return answers, _store_rows(project)

    cold_answers, cold_rows = run(answer_first=False)
    warm_answers, warm_rows = run(answer_first=True)
    assert warm_answers == cold_answers
    told = [text for _, text in warm_answers[1:] if text]
    assert told and any("MEM_E001" in text or "quota" in text for text in told)
    assert warm_rows == cold_rows


def test_the_notes_of_sessions_a_start_settles_are_written_after_the_answer(
    project: Path,
) -> None:
    earlier = T0 - 3 * 3600
    for n, event in enumerate(("SessionStart", "UserPromptSubmit")):
        data = json.loads(_payload("codex", event, project, "s-earlier"))
        assert hooks.handle("codex", event, json.dumps(data), now=earlier + n)[0] == 0
    notes = project / STORE_DIRNAME / "exports" / "sessions"

    def settled_note() -> str:
        found = [p.read_text() for p in notes.glob("*_s-earlier.md")] if notes.is_dir() else []
        return found[0] if found else ""

    before = settled_note()
    assert 'status: "closed"' not in before
    answer = _answer_first(
        "codex", "SessionStart", _payload("codex", "SessionStart", project, "s-now"), T0
    )
    assert answer[0] == 0
    with contextlib.closing(sqlite3.connect(project / STORE_DIRNAME / "engram.db")) as conn:
        ended = conn.execute(
            "SELECT ended_at FROM agent_sessions WHERE session_id = 's-earlier'"
        ).fetchone()
    assert ended is not None and ended[0] is not None, "settled before the answer"
    assert settled_note() == before, "its note waits for the answer"
    store_module.close_deferred()
    assert 'status: "closed"' in settled_note()


@pytest.mark.parametrize("event", ["PostToolUse", "PreCompact"])
def test_an_event_that_cannot_be_kept_for_after_the_answer_is_recorded_before_it(
    project: Path, tmp_path: Path, event: str
) -> None:
    """Nowhere to keep it while it waits (the spool folder and the cache both blocked): were
    this process killed after its answer, the event would be lost, so it is recorded first."""
    start = _payload("claude-code", "SessionStart", project, "s-kept")
    assert hooks.handle("claude-code", "SessionStart", start, now=T0)[0] == 0
    (project / STORE_DIRNAME / "spool").write_text("in the way")
    (tmp_path / "cache").write_text("not a folder either")
    before = _store_rows(project)
    answer = _answer_first(
        "claude-code", event, _payload("claude-code", event, project, "s-kept"), T0 + 1
    )
    assert answer == (0, "")
    answered = _store_rows(project)
    assert answered != before, f"{event} recorded before the answer"
    store_module.close_deferred()
    assert _store_rows(project) == answered


def test_gemini_automatic_precompress_makes_no_digest_and_a_manual_one_does(
    project: Path,
) -> None:
    """Gemini CLI sends PreCompress "auto" before every model request, compressing or not: a
    digest each time would bury the session's real ones; a /compress (manual) is a real one."""

    def precompress(trigger: str, at: float) -> None:
        data = json.loads(_payload("gemini", "PreCompress", project, "s-gem"))
        data["trigger"] = trigger
        assert hooks.handle("gemini", "PreCompress", json.dumps(data), now=at) == (0, "")

    def digests() -> list[tuple[Any, ...]]:
        with contextlib.closing(sqlite3.connect(project / STORE_DIRNAME / "engram.db")) as conn:
            return conn.execute("SELECT trigger FROM digests WHERE session_id = 's-gem'").fetchall()

    start = _payload("gemini", "SessionStart", project, "s-gem")
    assert hooks.handle("gemini", "SessionStart", start, now=T0)[0] == 0
    for n in range(3):
        precompress("auto", T0 + 1 + n)
    assert digests() == []
    precompress("manual", T0 + 10)
    assert digests() == [("manual",)]


def test_codex_post_compact_says_what_started_each_compaction(
    project: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Codex's rollout records a compaction without its trigger; the PostCompact hook names it,
    each on its own compaction."""
    from datetime import UTC, datetime

    monkeypatch.setenv("CODEX_HOME", str(tmp_path / "codex-home"))
    session = "019e4a3b-7c2d-7e10-9f00-0123456789ab"
    rollout = tmp_path / "codex-home" / "sessions" / f"rollout-2026-05-20T08-00-00-{session}.jsonl"
    rollout.parent.mkdir(parents=True)

    def line(kind: str, payload: dict[str, Any]) -> None:
        stamp = datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")
        with rollout.open("a") as handle:
            handle.write(json.dumps({"timestamp": stamp, "type": kind, "payload": payload}) + "\n")

    def post_compact(trigger: str) -> None:
        data = {
            "session_id": session,
            "transcript_path": str(rollout),
            "cwd": str(project),
            "hook_event_name": "PostCompact",
            "trigger": trigger,
        }
        assert hooks.handle("codex", "PostCompact", json.dumps(data)) == (0, "")

    line("session_meta", {"id": session, "cwd": str(project), "cli_version": "0.125.0"})
    line("event_msg", {"type": "user_message", "message": "Summarise the design", "images": []})
    line("compacted", {"message": "First: one store per workspace."})
    post_compact("manual")
    line("event_msg", {"type": "user_message", "message": "Go on", "images": []})
    line("compacted", {"message": "Second: the hooks never fail the agent."})
    post_compact("auto")
    with contextlib.closing(sqlite3.connect(project / STORE_DIRNAME / "engram.db")) as conn:
        rows = conn.execute(
            "SELECT trigger, summary FROM agent_compactions WHERE session_id = ? ORDER BY ts",
            (session,),
        ).fetchall()
    assert rows == [
        ("manual", "First: one store per workspace."),
        ("auto", "Second: the hooks never fail the agent."),
    ]


def test_a_store_the_user_cannot_write_is_dealt_with_before_the_answer(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """What becomes of an event on a store this user cannot write (spooled aside, said on the
    hook's stderr) must happen while the hook's stderr is still the agent's: before the answer.
    (The tests run as root, whom every mode lets write: the access check is told otherwise.)"""
    start = _payload("claude-code", "SessionStart", project, "s-ro")
    assert hooks.handle("claude-code", "SessionStart", start, now=T0)[0] == 0
    folder = str(project / STORE_DIRNAME)
    real_access = os.access

    def access(path: Any, mode: int, **kwargs: Any) -> bool:
        if mode & os.W_OK and str(path).startswith(folder):
            return False
        return real_access(path, mode, **kwargs)

    monkeypatch.setattr(os, "access", access)
    before = _store_rows(project)
    compact = _payload("claude-code", "PreCompact", project, "s-ro")
    assert _answer_first("claude-code", "PreCompact", compact, T0 + 1) == (0, "")
    answered = _store_rows(project)
    assert answered != before, "dealt with before the answer"
    assert not [name for name in _spooled(project) if name.endswith(".claimed")]
    store_module.close_deferred()
    assert _store_rows(project) == answered


@pytest.mark.parametrize("event", ["PostToolUse", "PreCompact"])
def test_a_failure_after_the_answer_is_logged_in_the_workspace(project: Path, event: str) -> None:
    """Nobody reads the hook's stderr once it has answered: the workspace's log says why the
    event is not in the store."""
    start = _payload("claude-code", "SessionStart", project, "s-fail")
    assert hooks.handle("claude-code", "SessionStart", start, now=T0)[0] == 0
    data = _payload("claude-code", event, project, "s-fail")
    assert _answer_first("claude-code", event, data, T0 + 1) == (0, "")
    database = project / STORE_DIRNAME / "engram.db"
    database.write_bytes(b"this is no longer a database" * 200)
    store_module.close_deferred()
    logged = (project / STORE_DIRNAME / "engram.log").read_text(encoding="utf-8")
    assert f"hook claude-code {event} failed" in logged
