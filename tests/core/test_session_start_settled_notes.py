"""A session start settles the earlier sessions that never reported their end, and each settled
session's vault note is rewritten. Where the answer can go first (the resident server's child,
which defers its stores' closes until its client has the exit code), the notes are written after
the answer: the agent must get the same answer, and the notes must end up the same, as when a
cold process writes them before answering."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

from memory_core import store as store_module
from memory_core.agents import hooks
from memory_core.store import Store
from tests.conftest import put_initialised_store

T0 = 1_800_000_000.0
LATER = T0 + 3 * 3600  # three hours on: the earlier sessions are due to be settled
NEW_SESSION = "new-session"


def _hook(root: Path, event: str, session: str, at: float, **fields: Any) -> str:
    data = {"session_id": session, "cwd": str(root), "hook_event_name": event, **fields}
    code, out = hooks.handle("codex", event, json.dumps(data), now=at)
    assert code == 0
    return out


def _project_with_unfinished_sessions(root: Path, initialised_store: Path) -> Path:
    """Three Codex sessions (Codex reports no session end): two answered, one left mid-task."""
    root.mkdir()
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    put_initialised_store(initialised_store, root)
    for n, (prompt, reply) in enumerate(
        [
            ("add the export command", "The export command is added."),
            ("fix the login test", "Fixed: the fixture's password was stale."),
            ("migrate the users table", None),
        ]
    ):
        session, at = f"old-{n}", T0 + 600 * n
        _hook(root, "SessionStart", session, at, source="startup")
        _hook(root, "UserPromptSubmit", session, at + 1, prompt=prompt)
        if reply is not None:
            _hook(root, "Stop", session, at + 30, last_assistant_message=reply)
    return root


def _notes(root: Path) -> dict[str, str]:
    """Each vault note by its name, with the project's folder written as `<root>`."""
    folder = root / ".engram" / "exports" / "sessions"
    return {
        path.name: path.read_text().replace(str(root), "<root>")
        for path in sorted(folder.glob("*.md"))
    }


def _old(notes: dict[str, str]) -> dict[str, str]:
    return {name: text for name, text in notes.items() if "_old-" in name}


def _ended(root: Path) -> list[tuple[str, str]]:
    with Store.open(root) as opened:
        rows = opened.query("SELECT id, status FROM sessions ORDER BY id")
        return [(str(row["id"]), str(row["status"])) for row in rows]


@pytest.fixture
def projects(tmp_path: Path, initialised_store: Path) -> tuple[Path, Path]:
    return (
        _project_with_unfinished_sessions(tmp_path / "cold", initialised_store),
        _project_with_unfinished_sessions(tmp_path / "answer-first", initialised_store),
    )


def test_the_answer_and_the_settled_notes_are_the_same_when_the_notes_come_after_it(
    projects: tuple[Path, Path],
) -> None:
    cold, answer_first = projects
    before = _notes(answer_first)
    assert before == _notes(cold)
    assert [status for _, status in _ended(cold)] == ["active"] * 3

    cold_answer = _hook(cold, "SessionStart", NEW_SESSION, LATER, source="startup")

    store_module.defer_closing()  # what the resident child does before it runs the command
    try:
        answer = _hook(answer_first, "SessionStart", NEW_SESSION, LATER, source="startup")
        # Answered: the sessions are settled in the store, their notes not yet rewritten.
        assert _ended(answer_first) == _ended(cold)
        assert _old(_notes(answer_first)) == _old(before)
    finally:
        store_module.close_deferred()  # the child, once its client has the exit code

    assert answer == cold_answer
    assert "migrate the users table" in answer  # the task left mid-way, told as before
    assert [status for sid, status in _ended(cold) if sid != NEW_SESSION] == ["closed"] * 3
    notes = _notes(answer_first)
    assert notes == _notes(cold)
    assert len(_old(notes)) == 3
    assert all('status: "closed"' in text for text in _old(notes).values())
    assert all(text != before.get(name) for name, text in _old(notes).items())


def test_a_store_gone_before_the_notes_are_written_loses_only_the_notes(
    tmp_path: Path, initialised_store: Path
) -> None:
    answer_first = _project_with_unfinished_sessions(tmp_path / "project", initialised_store)
    store_module.defer_closing()
    try:
        answer = _hook(answer_first, "SessionStart", NEW_SESSION, LATER, source="startup")
        # The workspace moved away between the answer and the notes: nothing is raised.
        answer_first.rename(tmp_path / "moved")
    finally:
        store_module.close_deferred()
    assert "migrate the users table" in answer
    moved = tmp_path / "moved"
    assert [status for sid, status in _ended(moved) if sid != NEW_SESSION] == ["closed"] * 3


def _rows(root: Path) -> dict[str, list[tuple[Any, ...]]]:
    """Every row of every table, the project's folder written as `<root>`."""
    with Store.open(root) as opened:
        return {
            table: [
                tuple(str(value).replace(str(root), "<root>") for value in row)
                for row in sorted(
                    (tuple(row) for row in opened.query(f'SELECT * FROM "{table}"')), key=repr
                )
            ]
            for table in opened.tables()
            if table != "store_meta"  # the quota's last measurement: when it was taken
        }


def test_a_session_start_answers_and_records_the_same_on_the_resident_servers_shortcuts(
    projects: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The shortcuts a resident child takes (the quota's columns learnt by its server, the
    settled sessions' end events stored without redacting engram's own words) change neither
    the answer nor any row."""
    from memory_core import quota
    from memory_core.sessions import recording

    plain, shortcuts = projects
    monkeypatch.setattr(quota, "_COLUMNS", {})
    monkeypatch.setattr(quota, "_COLUMNS_BY_DEFINITION", {})
    monkeypatch.setattr(recording, "_OWN_END_REASONS", frozenset())
    plain_answer = _hook(plain, "SessionStart", NEW_SESSION, LATER, source="startup")

    monkeypatch.undo()
    monkeypatch.setattr(quota, "_COLUMNS", {})
    monkeypatch.setattr(quota, "_COLUMNS_BY_DEFINITION", {})
    quota.learn_latest_columns()
    with monkeypatch.context() as never_asked:
        never_asked.setattr(quota, "_columns_asked", lambda store: pytest.fail("asked SQLite"))
        answer = _hook(shortcuts, "SessionStart", NEW_SESSION, LATER, source="startup")

    assert answer == plain_answer
    assert "migrate the users table" in answer
    rows = _rows(shortcuts)
    assert rows == _rows(plain)
    closed = [row for row in rows["events"] if "session.closed" in row]
    assert len(closed) == 3 and all('"reason":"' in "".join(row) for row in closed)
