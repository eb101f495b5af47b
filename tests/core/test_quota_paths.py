"""The session quota on every write path: warnings at 80 % and 95 % where the write happened
(CLI stderr, hook context, editor message elsewhere), compaction at 100 %, then refusal with
the documented error (MEM_E001), losing nothing already stored."""

from __future__ import annotations

import json
import re
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from memory_core import clock, memory, quota, sessions
from memory_core.agents import hooks
from memory_core.errors import QuotaExceededError
from memory_core.store import Store
from tests.agents_fixtures import hook_payload
from tests.conftest import run_cli

S = "9a1b2c3d-4e5f-4a6b-8c7d-0123456789ab"
DAY = 86400.0
BIG = "the build needs the generated protobuf stubs before the tests run; " * 300


def _set_quota(root: Path, quota_bytes: int) -> None:
    (root / ".engram" / "config.toml").write_text(
        f"[sessions]\nquota_bytes = {quota_bytes}\n", encoding="utf-8"
    )


def _quota_at(store: Store, percent: float) -> int:
    """Set the quota so the session's current use is `percent` of it; returns the quota."""
    used = quota.session_usage(store, S)
    quota_bytes = int(used / (percent / 100.0))
    _set_quota(store.root, quota_bytes)
    return quota_bytes


def _post_tool_use(root: Path, tool_use_id: str) -> dict[str, Any]:
    payload = hook_payload(
        "PostToolUse",
        S,
        root,
        tool_name="Bash",
        tool_input={"command": f"ls {tool_use_id}"},
        tool_use_id=tool_use_id,
        tool_response={"stdout": "a", "stderr": "", "interrupted": False, "isImage": False},
    )
    code, out = hooks.handle("claude-code", "PostToolUse", payload, workspace=str(root))
    assert code == 0
    return json.loads(out) if out else {}


def _context(output: dict[str, Any]) -> str:
    return str(output.get("hookSpecificOutput", {}).get("additionalContext", ""))


def _tool_recorded(root: Path, tool_use_id: str) -> bool:
    with sqlite3.connect(root / ".engram" / "engram.db") as conn:
        row = conn.execute(
            "SELECT 1 FROM agent_tool_uses WHERE tool_use_id = ?", (tool_use_id,)
        ).fetchone()
    return row is not None


@pytest.fixture
def full_session(store: Store) -> Store:
    sessions.start(store, session_id=S, agent="claude-code")
    memory.add(store, "pinned: " + BIG, session_id=S, pinned=True)
    return store


def test_a_hook_warns_the_agent_at_80_and_95_percent_once_each(full_session: Store) -> None:
    store = full_session
    _quota_at(store, 81)
    first = _context(_post_tool_use(store.root, "toolu_81a"))
    assert f"session {S} reached 8" in first and "% of its quota" in first
    assert "MEM_E001" in first  # says what happens at 100 %
    # Once per threshold: the next write at the same level says nothing more.
    assert _context(_post_tool_use(store.root, "toolu_81b")) == ""
    memory.add(store, "another pinned note: " + BIG[:4000], session_id=S, pinned=True)
    _quota_at(store, 96)
    second = _context(_post_tool_use(store.root, "toolu_96"))
    assert "reached 96 %" in second or "reached 97 %" in second
    log = (store.root / ".engram" / "engram.log").read_text(encoding="utf-8")
    assert log.count("% of its quota") == 2
    # Every write was recorded: a warning never costs the agent its record.
    assert all(_tool_recorded(store.root, t) for t in ("toolu_81a", "toolu_81b", "toolu_96"))


def test_under_80_percent_a_hook_says_nothing(full_session: Store) -> None:
    _quota_at(full_session, 60)
    assert _context(_post_tool_use(full_session.root, "toolu_60")) == ""


def test_at_100_percent_a_hook_compacts_then_past_that_refuses(full_session: Store) -> None:
    store = full_session
    old = memory.add(
        store, "an old learning nobody read: " + BIG, session_id=S, now=clock.now() - 200 * DAY
    )
    _quota_at(store, 100)
    output = _post_tool_use(store.root, "toolu_at_100")
    # Compaction dropped the decayed entry (recoverable), and the hook's write went through.
    assert _tool_recorded(store.root, "toolu_at_100")
    assert store.query_one("SELECT 1 FROM memories WHERE id = ?", (old["id"],)) is None
    assert store.query_one("SELECT count(*) FROM deletions WHERE actor = 'quota'")[0] == 1
    assert "MEM_E001" not in json.dumps(output) or "refused (MEM_E001)" in json.dumps(output)

    # Now only protected records are left: past 100 % nothing can be freed.
    before = {
        table: store.query_one(f'SELECT count(*) FROM "{table}"')[0]
        for table in ("memories", "agent_tool_uses", "session_tool_calls", "sessions")
    }
    _quota_at(store, 101)
    refused = _post_tool_use(store.root, "toolu_past_100")
    text = _context(refused)
    assert text.startswith(f"engram: error: session {S} is full (MEM_E001)")
    assert not _tool_recorded(store.root, "toolu_past_100")
    after = {
        table: store.query_one(f'SELECT count(*) FROM "{table}"')[0]
        for table in ("memories", "agent_tool_uses", "session_tool_calls", "sessions")
    }
    assert after == before  # nothing lost, nothing added
    log = (store.root / ".engram" / "engram.log").read_text(encoding="utf-8")
    assert "MEM_E001" in log


def test_a_refused_stop_hook_tells_the_user_not_the_agent(full_session: Store) -> None:
    _quota_at(full_session, 101)
    payload = hook_payload("Stop", S, full_session.root, last_assistant_message="done")
    code, out = hooks.handle("claude-code", "Stop", payload, workspace=str(full_session.root))
    assert code == 0
    assert "MEM_E001" in json.loads(out)["systemMessage"]


def test_the_library_refuses_before_writing(full_session: Store) -> None:
    store = full_session
    used = quota.session_usage(store, S)
    _set_quota(store.root, used - 1)
    from memory_core import config

    with pytest.raises(QuotaExceededError) as caught:
        quota.before_write(store, S, config.load(store.root))
    assert caught.value.code == "MEM_E001" and caught.value.exit_code == 1
    assert quota.session_usage(store, S) == used


def test_the_cli_warns_on_stderr_and_refuses_with_exit_1(full_session: Store) -> None:
    store = full_session
    root = store.root
    _quota_at(store, 81)
    store.close()
    result = run_cli("memory", "add", "a small note", "--session", S, "--json", cwd=root)
    assert result.code == 0, result.stderr
    assert result.json()["id"].startswith("M-")  # stdout stays one JSON value
    # 81 % before the note, a little more with it.
    assert re.search(rf"^engram: session {S} reached 8[1-4] % of its quota", result.stderr)
    reopened = Store.open(root)
    try:
        _set_quota(root, quota.session_usage(reopened, S) - 1)
        count = reopened.query_one("SELECT count(*) FROM memories")[0]
    finally:
        reopened.close()
    refused = run_cli("memory", "add", "one more", "--session", S, cwd=root)
    assert refused.code == 1
    assert refused.stderr.startswith(f"engram: error: session {S} is full (MEM_E001): ")
    assert refused.stderr.count("\n") == 1  # one line, no traceback
    reopened = Store.open(root)
    try:
        assert reopened.query_one("SELECT count(*) FROM memories")[0] == count
    finally:
        reopened.close()


def test_hooks_measure_a_session_far_from_its_quota_at_most_every_30_seconds(
    full_session: Store,
) -> None:
    store = full_session
    _quota_at(store, 30)
    start = clock.now()

    def post(tool_use_id: str, at: float) -> str:
        payload = hook_payload(
            "PostToolUse",
            S,
            store.root,
            tool_name="Bash",
            tool_input={"command": "ls"},
            tool_use_id=tool_use_id,
            tool_response={"stdout": "a", "stderr": "", "interrupted": False},
        )
        _code, out = hooks.handle(
            "claude-code", "PostToolUse", payload, workspace=str(store.root), now=at
        )
        return _context(json.loads(out)) if out else ""

    assert post("toolu_t0", start) == ""
    # The session jumps to about 90 % (a big write from elsewhere): within 30 s of a
    # measurement under 70 % the hooks do not measure again...
    memory.add(store, "pinned: " + BIG * 2, session_id=S, pinned=True)
    assert post("toolu_t10", start + 10) == ""
    # ...after that they do, and warn.
    assert "of its quota" in post("toolu_t31", start + 31)


def test_a_session_can_be_compacted_by_hand(full_session: Store) -> None:
    store = full_session
    old = memory.add(
        store, "an old learning nobody read: " + BIG, session_id=S, now=clock.now() - 200 * DAY
    )
    root = store.root
    store.close()
    result = run_cli("memory", "compact", S, "--json", cwd=root)
    assert result.code == 0, result.stderr
    assert [step["step"] for step in result.json()["steps"]] == ["drop_decayed"]
    assert result.json()["steps"][0]["memories"] == [old["id"]]
    missing = run_cli("memory", "compact", "S-nope", cwd=root)
    assert missing.code == 1 and "S-nope" in missing.stderr


def test_ingesting_a_transcript_warns_on_stderr(workspace: Path, tmp_path: Path) -> None:
    from tests.agents_fixtures import realistic_session

    session = "5f2c1d4e-aaaa-bbbb-cccc-123456789abc"
    transcript, _expected = realistic_session(workspace, session)
    path = transcript.save(tmp_path / "projects" / f"{session}.jsonl")
    Store.init(workspace).close()
    # Ingest once to learn the session's size, then set a quota it fills to about 85 %.
    assert run_cli("ingest", "claude-code", str(path), cwd=workspace).code == 0
    store = Store.open(workspace)
    try:
        used = quota.session_usage(store, session)
        with store.transaction() as db:  # so the next ingest reads the file again
            db.execute("DELETE FROM agent_ingest_offsets")
    finally:
        store.close()
    _set_quota(workspace, int(used / 0.85))
    result = run_cli("ingest", "claude-code", str(path), cwd=workspace)
    assert result.code == 0, result.stderr
    assert re.search(rf"engram: session {session} reached 8\d % of its quota", result.stderr)


def test_saving_a_session_near_its_quota_warns_on_stderr(full_session: Store) -> None:
    store = full_session
    _quota_at(store, 85)
    root = store.root
    store.close()
    result = run_cli("session", "save", "near-full", "--json", cwd=root)
    assert result.code == 0, result.stderr
    assert result.json()["id"] == S
    assert re.search(rf"^engram: session {S} reached (8\d|9\d) % of its quota", result.stderr)


def test_a_real_hook_process_refuses_a_full_session_and_exits_0(full_session: Store) -> None:
    store = full_session
    _quota_at(store, 101)
    root = store.root
    store.close()
    payload = hook_payload(
        "PostToolUse",
        S,
        root,
        tool_name="Bash",
        tool_input={"command": "ls"},
        tool_use_id="toolu_process",
        tool_response={"stdout": "a", "stderr": "", "interrupted": False},
    )
    result = run_cli("hook", "claude-code", "PostToolUse", cwd=root, stdin=payload)
    assert result.code == 0 and result.stderr == ""
    context = json.loads(result.stdout)["hookSpecificOutput"]["additionalContext"]
    assert f"session {S} is full (MEM_E001)" in context
    assert not _tool_recorded(root, "toolu_process")


def test_the_cli_warns_again_at_95_percent(full_session: Store) -> None:
    store = full_session
    _quota_at(store, 96)
    root = store.root
    store.close()
    result = run_cli("memory", "add", "a small note", "--session", S, cwd=root)
    assert result.code == 0, result.stderr
    assert re.search(rf"^engram: session {S} reached 9[6-9] % of its quota", result.stderr)


def test_a_full_session_still_starts_with_its_memory(full_session: Store) -> None:
    store = full_session
    memory.add(store, "the deploy key rotates every Monday", type="project", pinned=True)
    _quota_at(store, 101)
    payload = hook_payload("SessionStart", S, store.root, source="resume")
    code, out = hooks.handle("claude-code", "SessionStart", payload, workspace=str(store.root))
    assert code == 0
    context = _context(json.loads(out))
    memory_part, error_part = context.split("engram: error: ")
    assert "- project: the deploy key rotates every Monday" in memory_part
    assert error_part.startswith(f"session {S} is full (MEM_E001)")


def test_a_full_session_still_gets_gotchas_before_an_edit(full_session: Store) -> None:
    from memory_core.gotchas import records

    store = full_session
    (store.root / "app.py").write_text("import json\n")
    records.add(
        store,
        "app.py is generated; edit app.tmpl instead",
        severity="high",
        related_files=["app.py"],
    )
    _quota_at(store, 101)
    payload = hook_payload(
        "PreToolUse",
        S,
        store.root,
        tool_name="Edit",
        tool_input={"file_path": str(store.root / "app.py"), "old_string": "a", "new_string": "b"},
        tool_use_id="toolu_pre",
    )
    code, out = hooks.handle("claude-code", "PreToolUse", payload, workspace=str(store.root))
    assert code == 0
    context = _context(json.loads(out))
    assert "app.py is generated" in context and "MEM_E001" not in context
