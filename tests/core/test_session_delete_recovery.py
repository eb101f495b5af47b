"""`engram session delete` is recoverable for 30 days like every other deletion."""

from __future__ import annotations

from pathlib import Path

import pytest

from memory_core import lifecycle, memory, privacy, sessions
from memory_core.errors import NotFoundError
from memory_core.store import Store
from tests.conftest import run_cli

T0 = 1_700_000_000.0
DAY = 86400.0


def _session(store: Store, sid: str = "claude-7") -> str:
    sessions.start(store, session_id=sid, agent="claude-code", now=T0)
    for index in range(3):
        sessions.record_turn(
            store,
            sid,
            user_message=f"question {index}",
            assistant_response=f"answer {index}",
            tool_calls=[{"tool": "Edit", "ok": True}],
            started_at=T0 + 10 * index,
            ended_at=T0 + 10 * index + 5,
        )
    sessions.record_command(store, sid, "pytest -x", exit_code=1, ts=T0 + 3)
    sessions.record_file_modified(store, sid, "src/app.py", ts=T0 + 4)
    return sid


def _counts(store: Store, sid: str) -> dict[str, int]:
    return {
        table: int(store.query_one(f"SELECT count(*) FROM {table} WHERE session_id = ?", (sid,))[0])
        for table in ("session_turns", "session_commands", "session_files", "saved_sessions")
    }


def test_a_deleted_session_comes_back_whole_with_undelete(store: Store) -> None:
    sid = _session(store)
    saved = sessions.save(store, sid, name="login-fix", now=T0 + 100)
    learned = memory.add(store, "login retries need jitter", session_id=sid, now=T0 + 50)
    before = _counts(store, sid)
    summary_before = sessions.get(store, sid)

    result = sessions.delete(store, "login-fix", now=T0 + 200)
    assert result["deleted"] and result["deletion"].startswith("D-")
    assert result["recover_until"].startswith("2023-12-14")  # 30 days later
    with pytest.raises(NotFoundError):
        sessions.get(store, sid)
    assert all(count == 0 for count in _counts(store, sid).values())
    assert not Path(saved["export_path"]).exists()
    # The long-term memory the session produced is not part of the session.
    assert memory.get(store, learned["id"], record_access=False)["session_id"] == sid

    restored = privacy.undelete(store, sid, now=T0 + 300)
    assert restored["state"] == "restored"
    assert _counts(store, sid) == before
    back = sessions.get(store, sid)
    assert back["turns"] == summary_before["turns"] and back["name"] == summary_before["name"]
    assert sessions.load(store, "login-fix")["session"]["id"] == sid
    assert Path(saved["export_path"]).exists()


def test_past_recovery_a_deleted_session_is_gone_for_good(store: Store) -> None:
    sid = _session(store)
    sessions.delete(store, sid, now=T0)
    lifecycle.purge(store, now=T0 + 31 * DAY)
    with pytest.raises(NotFoundError, match="past recovery"):
        lifecycle.undelete(store, sid, now=T0 + 31 * DAY)


def test_cli_session_delete_then_undelete(workspace: Path) -> None:
    store = Store.init(workspace)
    sid = _session(store)
    store.close()
    deleted = run_cli("session", "delete", sid, "--yes", cwd=workspace)
    assert deleted.code == 0, deleted.stderr
    assert f"`engram undelete {sid}` brings it back until" in deleted.stdout
    listed = run_cli("session", "list", "--json", cwd=workspace)
    assert sid not in listed.stdout
    undone = run_cli("undelete", sid, cwd=workspace)
    assert undone.code == 0, undone.stderr
    again = run_cli("session", "list", "--json", cwd=workspace)
    assert sid in again.stdout
