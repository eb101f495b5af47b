"""Codex rollout items the recorded sessions do not hold (memory_core/agents/codex_rollouts.py),
appended to the head of a real 0.171 rollout (tests/fixtures/recorded): a `local_shell_call`
(the Responses API's shell call, read as `Bash` with its command), one without an action, and a
web search that ended `incomplete`."""

from __future__ import annotations

import json
from pathlib import Path

from memory_core.agents import codex_rollouts
from memory_core.store import Store

RECORDED = Path(__file__).resolve().parents[1] / "fixtures" / "recorded" / "codex-0.171.0"


def _item(ts: str, payload: dict[str, object]) -> str:
    return json.dumps({"timestamp": ts, "type": "response_item", "payload": payload})


def test_shell_calls_and_searches_of_the_responses_api_are_recorded(
    store: Store, tmp_path: Path
) -> None:
    [real] = RECORDED.glob("rollout-*.jsonl")
    head = real.read_text(encoding="utf-8").splitlines()[:4]
    lines = [
        *head,
        _item(
            "2026-11-27T12:31:00.000Z",
            {
                "type": "local_shell_call",
                "call_id": "ls_1",
                "status": "completed",
                "action": {"type": "exec", "command": ["bash", "-lc", "make check"]},
            },
        ),
        _item(
            "2026-11-27T12:31:01.000Z",
            {
                "type": "function_call_output",
                "call_id": "ls_1",
                "output": "Exit code: 2\nOutput:\nboom\n",
            },
        ),
        _item("2026-11-27T12:31:02.000Z", {"type": "local_shell_call", "call_id": "ls_2"}),
        _item(
            "2026-11-27T12:31:03.000Z",
            {
                "type": "web_search_call",
                "id": "ws_1",
                "status": "incomplete",
                "action": {"type": "search", "query": "sqlite busy timeout"},
            },
        ),
    ]
    path = tmp_path / real.name
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    codex_rollouts.ingest_file(store, path)
    calls = {
        str(r["tool_use_id"]): (r["tool"], r["command"], r["ok"])
        for r in store.query("SELECT tool_use_id, tool, command, ok FROM agent_tool_uses")
    }
    assert calls["ls_1"] == ("Bash", "make check", 0)
    assert calls["ws_1"] == ("WebSearch", None, 0)
    assert "ls_2" not in calls  # no action: nothing to record
