"""Codex rollouts at their edges (memory_core/agents/codex_rollouts.py): a turn the user
stopped, the branch a session ran on, a web search's query, damaged lines (a compaction without
text, an exit code that is no number), a rollout read again after it was replaced or as it
grows (its progress, the times of lines that carry none), and a fork whose own first prompt
follows the copy of its parent's history the way Codex writes a prompt (its message item, then
its event). Rollouts written here in the shape of the derived 0.125 and 0.30 fixtures
(tests/fixtures/codex)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from memory_core import sessions
from memory_core.agents import codex_rollouts
from memory_core.store import Store

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "codex"
CURRENT_0125 = FIXTURES / "derived-0.125-current.jsonl"
LEGACY_030 = FIXTURES / "derived-0.30-legacy.jsonl"
SID = "019e0a11-2b3c-7d4e-8f50-6a7b8c9d0e1f"


def _line(ts: str, kind: str, payload: dict[str, Any]) -> str:
    return json.dumps({"timestamp": f"2026-11-27T10:{ts}.000Z", "type": kind, "payload": payload})


def _meta(branch: str | None = "main") -> str:
    git = {"commit_hash": "b7c6d5e4", "branch": branch} if branch else None
    return _line(
        "00:00",
        "session_meta",
        {"id": SID, "cwd": "/home/dev/shop", "cli_version": "0.125.0", "source": "cli", "git": git},
    )


def _prompt(ts: str, text: str) -> list[str]:
    """A prompt as Codex writes it: the message item the model sees, then the event."""
    item = {"type": "message", "role": "user", "content": [{"type": "input_text", "text": text}]}
    event = {"type": "user_message", "message": text, "images": []}
    return [_line(ts, "response_item", item), _line(ts, "event_msg", event)]


def _call(ts: str, call_id: str, cmd: str, output: str) -> list[str]:
    call = {
        "type": "function_call",
        "name": "exec_command",
        "arguments": json.dumps({"cmd": cmd}),
        "call_id": call_id,
    }
    done = {"type": "function_call_output", "call_id": call_id, "output": output}
    return [_line(ts, "response_item", call), _line(ts, "response_item", done)]


def _write(path: Path, lines: list[str]) -> Path:
    path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    return path


def _rollout(tmp_path: Path, lines: list[str]) -> Path:
    return _write(tmp_path / f"rollout-2026-11-27T10-00-00-{SID}.jsonl", lines)


def test_a_turn_the_user_stopped_is_where_the_session_stopped(store: Store, tmp_path: Path) -> None:
    path = _rollout(
        tmp_path,
        [
            _meta(branch="feature/eu-export"),
            *_prompt("00:05", "Run the whole test suite."),
            _line(
                "00:06",
                "response_item",
                {
                    "type": "function_call",
                    "name": "exec_command",
                    "arguments": json.dumps({"cmd": "pytest"}),
                    "call_id": "c1",
                },
            ),
            _line("00:40", "event_msg", {"type": "turn_aborted", "reason": "interrupted"}),
        ],
    )
    codex_rollouts.ingest_file(store, path)
    row = store.query_one(
        "SELECT last_event, last_seen, git_branch FROM agent_sessions WHERE session_id = ?",
        (SID,),
    )
    assert row is not None
    # What SessionStart tells the next session: stopped by the user, on that branch, then.
    assert row["last_event"] == "interrupt"
    assert row["git_branch"] == "feature/eu-export"
    assert sessions.metrics(store, SID)["duration_seconds"] == 40.0


def test_a_web_search_leaves_its_query_in_the_sessions_footprint(
    store: Store, tmp_path: Path
) -> None:
    search = {
        "type": "web_search_call",
        "status": "completed",
        "action": {"type": "search", "query": "python csv DictWriter extrasaction"},
    }
    path = _rollout(
        tmp_path,
        [
            _meta(),
            *_prompt("00:05", "Why does the export fail?"),
            _line("00:07", "response_item", search),
        ],
    )
    codex_rollouts.ingest_file(store, path)
    footprint = sessions.get(store, SID)["search_footprint"]
    assert "python csv DictWriter extrasaction" in json.dumps(footprint)


def test_a_compaction_without_text_still_counts_and_the_rollout_reads_on(
    store: Store, tmp_path: Path
) -> None:
    path = _rollout(
        tmp_path,
        [
            _meta(),
            *_prompt("00:05", "Add the discount column."),
            _line("00:10", "compacted", {"message": ["not", "text"]}),
            _line("00:11", "compacted", {"message": ""}),
            *_prompt("00:20", "Now the EU export."),
        ],
    )
    codex_rollouts.ingest_file(store, path)
    compactions = store.query(
        "SELECT summary FROM agent_compactions WHERE session_id = ? ORDER BY ts", (SID,)
    )
    assert [row["summary"] for row in compactions] == [None, None]
    assert [t["user_message"] for t in sessions.history(store, SID)] == [
        "Add the discount column.",
        "Now the EU export.",
    ]


@pytest.mark.parametrize(
    ("exit_code", "failed"),
    [(2, True), (0, False), ("2", False), (True, False), (None, False)],
)
def test_an_exit_code_is_taken_from_an_end_event_only_when_it_is_a_number(
    store: Store, tmp_path: Path, exit_code: object, failed: bool
) -> None:
    end = {"type": "exec_command_end", "call_id": "c1", "exit_code": exit_code}
    path = _rollout(
        tmp_path,
        [
            _meta(),
            *_prompt("00:05", "Build it."),
            *_call("00:06", "c1", "make", "Output:\nbuilt\n")[:1],
            _line("00:07", "event_msg", end),
            *_call("00:06", "c1", "make", "Output:\nbuilt\n")[1:],
        ],
    )
    codex_rollouts.ingest_file(store, path)
    metrics = sessions.metrics(store, SID)
    assert (metrics["tool_calls"], metrics["tool_calls_failed"]) == (1, int(failed))


def test_a_rollout_replaced_by_a_longer_one_is_read_again_from_its_start(
    store: Store, tmp_path: Path
) -> None:
    path = _rollout(tmp_path, [_meta(), *_prompt("00:05", "A short session.")])
    codex_rollouts.ingest_file(store, path)
    # The same name now holds another session, longer (a restored backup, a copy over it).
    shutil.copy(CURRENT_0125, path)
    stats = codex_rollouts.ingest_file(store, path)
    assert stats.restarted
    other = "019d6e2a-4b7c-7f10-8a3e-5c9d1b2e4f60"
    assert [t["user_message"][:20] for t in sessions.history(store, other)] == [
        "Make the CSV export ",
        "We'll go with semico",
    ]


def test_a_growing_rollouts_progress_counts_from_where_the_last_read_stopped(
    store: Store, tmp_path: Path
) -> None:
    data = CURRENT_0125.read_bytes()
    lines = data.splitlines(keepends=True)
    live = tmp_path / "rollout-live.jsonl"
    first = b"".join(lines[:20])
    live.write_bytes(first)
    codex_rollouts.ingest_file(store, live, flush=False)
    live.write_bytes(data)
    seen: list[int] = []
    stats = codex_rollouts.ingest_file(store, live, progress=seen.append)
    assert seen and seen[-1] == stats.bytes == len(data) - len(first)


def test_an_old_rollout_read_in_parts_keeps_its_one_time(store: Store, tmp_path: Path) -> None:
    """Rollouts before envelopes carry one time, the header's: lines read by a later run are
    of that time too, not of the moment engram read them."""
    data = LEGACY_030.read_bytes()
    lines = data.splitlines(keepends=True)
    path = tmp_path / "rollout-2025-09-03T14-02-11-5f0c7a3e-1c2d-4e5f-8a9b-0c1d2e3f4a5b.jsonl"
    path.write_bytes(b"".join(lines[:6]))
    codex_rollouts.ingest_file(store, path, flush=False)
    path.write_bytes(data)
    codex_rollouts.ingest_file(store, path)
    sid = "5f0c7a3e-1c2d-4e5f-8a9b-0c1d2e3f4a5b"
    assert sessions.metrics(store, sid)["duration_seconds"] == 0.0
    assert len(sessions.history(store, sid)) == 2


def test_a_forks_own_prompt_after_the_copy_counts_in_the_fork(
    store: Store, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The fork's own prompt comes where the parent's next prompt was, written the same way
    (a user message item, then its event): only its text tells them apart."""
    home = tmp_path / "codex-home"
    monkeypatch.setenv("CODEX_HOME", str(home))
    day = home / "sessions" / "2026" / "05" / "14"
    day.mkdir(parents=True)
    parent_id = "019d6e2a-4b7c-7f10-8a3e-5c9d1b2e4f60"
    shutil.copy(CURRENT_0125, day / f"rollout-2026-05-14T16-10-00-{parent_id}.jsonl")
    codex_rollouts.ingest_file(store, day / f"rollout-2026-05-14T16-10-00-{parent_id}.jsonl")
    fork_id = "019d6e40-aaaa-7bbb-8ccc-ddddeeee0002"
    copied = []
    for line in CURRENT_0125.read_text(encoding="utf-8").splitlines():
        if "semicolons" in line:
            break  # Codex cuts before the user message being edited
        obj = json.loads(line)
        obj["timestamp"] = "2026-05-14T17:00:00.000Z"
        copied.append(json.dumps(obj))
    own_meta = {"id": fork_id, "forked_from_id": parent_id, "cwd": "/home/dev/shop"}
    fork = _write(
        day / f"rollout-2026-05-14T17-00-00-{fork_id}.jsonl",
        [
            json.dumps(
                {
                    "timestamp": "2026-05-14T17:00:00.000Z",
                    "type": "session_meta",
                    "payload": own_meta,
                }
            ),
            *copied,
            *[
                line.replace("2026-11-27T10:01:00", "2026-05-14T17:01:00")
                for line in _prompt("01:00", "Use tabs as the delimiter instead.")
            ],
        ],
    )
    codex_rollouts.ingest_file(store, fork)
    assert [t["user_message"] for t in sessions.history(store, fork_id)] == [
        "Use tabs as the delimiter instead."
    ]
    assert len(sessions.history(store, parent_id)) == 2


def test_each_compaction_is_known_by_its_summary_whichever_copy_is_read_first(
    store: Store, tmp_path: Path
) -> None:
    """A copy of a session's later part (its first lines lost; the name says whose it is),
    read before the whole rollout: each compaction counts once, with its own summary."""
    whole = [
        _meta(),
        *_prompt("00:05", "Add the discount column."),
        _line("00:10", "compacted", {"message": "Discount column added."}),
        *_prompt("00:20", "Now the EU export."),
        _line("00:30", "compacted", {"message": "EU export uses semicolons."}),
    ]
    part = tmp_path / "part"
    part.mkdir()
    _write(part / f"rollout-2026-11-27T10-00-00-{SID}.jsonl", whole[4:])
    codex_rollouts.ingest_file(store, part / f"rollout-2026-11-27T10-00-00-{SID}.jsonl")
    codex_rollouts.ingest_file(store, _rollout(tmp_path, whole))
    summaries = store.query(
        "SELECT summary FROM agent_compactions WHERE session_id = ? ORDER BY ts", (SID,)
    )
    assert [row["summary"] for row in summaries] == [
        "Discount column added.",
        "EU export uses semicolons.",
    ]
