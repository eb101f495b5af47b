"""Gemini CLI chats as 0.44 and later record them (read from gemini-cli v0.56.0's
chatRecordingService.ts, geminiChat.ts, chatCompressionService.ts and tools/shell.ts; no public
chat file with a license was found, so this one is written from that code): tool results sent
back to the model as `user` messages of functionResponse parts, the "Please continue." nudge,
a compression's `<state_snapshot>` summary, today's tool names and shell report wrapped in
`<untrusted_context>`, and an info line after the last reply."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from memory_core import clock, sessions
from memory_core.agents import gemini_chats
from memory_core.store import Store

SID = "9c0ffee0-1111-4222-8333-444455556666"


def _chat(path: Path) -> Path:
    def at(second: int) -> str:
        return f"2026-11-20T10:00:{second:02d}.000Z"

    def tokens(n: int) -> dict[str, int]:
        return {"input": n, "output": 10, "cached": 0, "thoughts": 0, "tool": 0, "total": n + 10}

    shell_text = (
        "<untrusted_context>\nOutput: FAILED tests/test_app.py::test_x\nExit Code: 2\n"
        "Process Group PGID: 77\n</untrusted_context>"
    )
    records = [
        {
            "sessionId": SID,
            "projectHash": "h",
            "startTime": at(0),
            "lastUpdated": at(9),
            "kind": "main",
        },
        {
            "id": "u1",
            "timestamp": at(1),
            "type": "user",
            "content": [{"text": "Fix the failing test"}],
        },
        {
            "id": "g1",
            "timestamp": at(2),
            "type": "gemini",
            "content": "",
            "tokens": tokens(100),
            "toolCalls": [
                {
                    "id": "c1",
                    "name": "grep_search",
                    "args": {"pattern": "test_x"},
                    "status": "success",
                    "result": [
                        {
                            "functionResponse": {
                                "id": "c1",
                                "name": "grep_search",
                                "response": {"output": "tests/test_app.py:3"},
                            }
                        }
                    ],
                },
                {
                    "id": "c2",
                    "name": "run_shell_command",
                    "args": {"command": "pytest -q"},
                    "status": "success",
                    "result": [
                        {
                            "functionResponse": {
                                "id": "c2",
                                "name": "run_shell_command",
                                "response": {"output": shell_text},
                            }
                        }
                    ],
                },
                {
                    "id": "c3",
                    "name": "run_shell_command",
                    "args": {"command": "rm -rf .venv"},
                    "status": "cancelled",
                    "result": [
                        {
                            "functionResponse": {
                                "id": "c3",
                                "name": "run_shell_command",
                                "response": {
                                    "error": "[Operation Cancelled] Reason: User denied execution."
                                },
                            }
                        }
                    ],
                },
            ],
        },
        # The results sent back: a `user` message of functionResponse parts, no prompt.
        {
            "id": "u2",
            "timestamp": at(3),
            "type": "user",
            "content": [
                {
                    "functionResponse": {
                        "id": "c1",
                        "name": "grep_search",
                        "response": {"output": "tests/test_app.py:3"},
                    }
                }
            ],
        },
        {"id": "g2", "timestamp": at(4), "type": "gemini", "content": "", "tokens": tokens(200)},
        {"id": "u3", "timestamp": at(5), "type": "user", "content": [{"text": "Please continue."}]},
        {
            "id": "g3",
            "timestamp": at(6),
            "type": "gemini",
            "content": "Fixed.",
            "tokens": tokens(300),
        },
        {"id": "u4", "timestamp": at(7), "type": "user", "content": [{"text": "/compress"}]},
        {
            "id": "u5",
            "timestamp": at(8),
            "type": "user",
            "content": [
                {
                    "text": "<state_snapshot>\n<overall_goal>Fix the test</overall_goal>\n</state_snapshot>"
                }
            ],
        },
        {
            "id": "g4",
            "timestamp": at(8),
            "type": "gemini",
            "content": "Got it. Thanks for the additional context!",
        },
        {
            "id": "i1",
            "timestamp": at(9),
            "type": "info",
            "content": "Chat history compressed from 600 to 90 tokens.",
        },
    ]
    # As seen in a real 0.4x chat (June 2026, public, unlicensed, so not copied): the model's
    # starting context as a `$set` of messages (not the history), a `$set` of lastUpdated after
    # records, and a response written first without its calls, then again with them.
    context = "<session_context>\nThis is the Gemini CLI. We are setting up the context.\n</session_context>"
    records.insert(
        1,
        {
            "$set": {
                "messages": [
                    {
                        "id": "ctx",
                        "timestamp": at(0),
                        "type": "user",
                        "content": [{"text": context}],
                    }
                ],
                "lastUpdated": at(0),
            }
        },
    )
    first_copy = {key: value for key, value in records[3].items() if key != "toolCalls"}
    records[3:3] = [{"$set": {"lastUpdated": at(1)}}, first_copy]
    path.write_text("\n".join(json.dumps(r) for r in records) + "\n", encoding="utf-8")
    return path


def _independent_count(path: Path) -> dict[str, int]:
    """Counted from the records as gemini-cli writes them (not from engram's code)."""
    prompts = calls = failed = compactions = 0
    last = ""
    for raw in path.read_text(encoding="utf-8").splitlines():
        record = json.loads(raw)
        last = max(last, record.get("timestamp", ""))
        if record.get("type") == "user":
            parts = record["content"]
            texts = [p.get("text", "") for p in parts if isinstance(p, dict)]
            if any("functionResponse" in p for p in parts):
                continue
            text = "\n".join(texts)
            if "<state_snapshot>" in text:
                compactions += 1
            elif not text.startswith(("/", "Please continue.", "System: ")):
                prompts += 1
        for call in record.get("toolCalls") or []:
            calls += 1
            output = json.dumps(call.get("result"))
            failed += (
                call["status"] == "error"
                or "Exit Code: 2" in output
                or call["status"] == "cancelled"
            )
    return {
        "prompts": prompts,
        "calls": calls,
        "failed": failed,
        "compactions": compactions,
        "last": int(clock.parse_iso(last)),
    }


def test_a_current_chat_counts_its_real_prompts_and_reads_todays_tool_output(
    store: Store, tmp_path: Path
) -> None:
    path = _chat(tmp_path / "session-2026-11-20T10-00-9c0ffee0.jsonl")
    expected = _independent_count(path)
    assert expected["prompts"] == 1  # not the tool results, the nudge, /compress or the summary
    stats = gemini_chats.ingest_chat_file(store, path)
    assert stats.prompts == expected["prompts"]
    assert stats.compactions == expected["compactions"] == 1
    metrics = sessions.metrics(store, SID)
    assert metrics["turns"] == expected["prompts"]
    assert metrics["tool_calls"] == expected["calls"] == 3
    assert metrics["tool_calls_failed"] == expected["failed"] == 2
    # The shell report is read: the command's exit code and its output, not the wrapper.
    command = store.query_one(
        "SELECT command, exit_code FROM session_commands WHERE command = 'pytest -q'"
    )
    assert command is not None and command["exit_code"] == 2
    error = store.query_one("SELECT error FROM agent_tool_uses WHERE tool_use_id = 'c2'")["error"]
    assert error.startswith("FAILED tests/test_app.py::test_x") and "untrusted_context" not in error
    # Today's name for the search tool is mapped like the others.
    assert (
        store.query_one("SELECT tool FROM agent_tool_uses WHERE tool_use_id = 'c1'")["tool"]
        == "Grep"
    )
    # The declined rm is no error to learn from.
    assert (
        store.query_one("SELECT COUNT(*) FROM error_occurrences WHERE message LIKE '%Cancelled%'")[
            0
        ]
        == 0
    )
    # The session ran until its last line (the info line after the last reply).
    row = store.query_one("SELECT last_seen FROM agent_sessions WHERE session_id = ?", (SID,))
    assert int(row["last_seen"]) == expected["last"]


def test_hooks_then_an_ingest_of_the_same_session_count_each_thing_once(
    store: Store, tmp_path: Path
) -> None:
    """The chat file grows as Gemini CLI writes it while the hooks fire; the hooks read it
    (Gemini names it as `transcript_path`), and a later `engram ingest gemini` adds nothing."""
    from memory_core.agents import hooks

    chat = tmp_path / "chats" / "session-2026-11-20T10-00-9c0ffee0.jsonl"
    chat.parent.mkdir()
    full = _chat(tmp_path / "full.jsonl").read_text(encoding="utf-8").splitlines()
    # The records as they reach the file: metadata; the prompt and the calls; the rest.
    steps = [full[:2], full[2:6], full[6:]]

    def fire(event: str, **extra: object) -> None:
        payload = {
            "session_id": SID,
            "transcript_path": str(chat),
            "cwd": str(store.root),
            "hook_event_name": event,
            "timestamp": "2026-11-20T10:00:00Z",
            **extra,
        }
        code, _ = hooks.handle("gemini", event, json.dumps(payload), now=clock.now())
        assert code == 0

    def write(records: list[str]) -> None:
        with chat.open("a", encoding="utf-8") as handle:
            handle.write("\n".join(records) + "\n")

    write(steps[0])
    fire("SessionStart", source="startup")
    fire("BeforeAgent", prompt="Fix the failing test")
    write(steps[1])
    for name, args in (
        ("grep_search", {"pattern": "test_x"}),
        ("run_shell_command", {"command": "pytest -q"}),
    ):
        fire(
            "AfterTool",
            tool_name=name,
            tool_input=args,
            tool_response={"llmContent": "ok", "returnDisplay": "ok"},
        )
    write(steps[2])
    fire(
        "AfterAgent",
        prompt="Fix the failing test",
        prompt_response="Fixed.",
        stop_hook_active=False,
    )
    fire("SessionEnd", reason="exit")
    expected = _independent_count(chat)
    after_hooks = sessions.metrics(store, SID)
    assert after_hooks["turns"] == expected["prompts"] == 1
    assert after_hooks["tool_calls"] == expected["calls"] == 3
    # Tokens, which no hook payload carries, from the chat: a hooks-only session has them.
    assert after_hooks["tokens"]["main"]["messages"] == 4
    assert after_hooks["tokens"]["main"]["input_tokens"] == 100 + 200 + 300
    # The same session ingested afterwards, from the file and from a copy: nothing twice.
    gemini_chats.ingest_chat_file(store, chat)
    copy = tmp_path / "copy" / chat.name
    copy.parent.mkdir()
    copy.write_bytes(chat.read_bytes())
    gemini_chats.ingest_chat_file(store, copy)
    assert sessions.metrics(store, SID) == after_hooks


REAL = os.environ.get("ENGRAM_REAL_GEMINI_CHATS")
# Written by the real Gemini CLI 0.44 and 0.61 binaries (scripts/record-agents.sh), with the
# header-only file a `--resume` in a later minute starts for the session, kept as it was.
RECORDED = sorted(
    (Path(__file__).resolve().parent.parent / "fixtures" / "recorded").glob("gemini-*")
)


@pytest.mark.parametrize("folder", RECORDED, ids=lambda p: p.name)
def test_chats_the_real_binaries_wrote_equal_the_independent_count(
    folder: Path, tmp_path: Path
) -> None:
    chats = sorted(folder.glob("session-*.jsonl"))
    assert _mismatches(chats, tmp_path) == []


@pytest.mark.skipif(not REAL, reason="set ENGRAM_REAL_GEMINI_CHATS to a folder of real chat files")
def test_real_chats_equal_the_independent_count(tmp_path: Path) -> None:
    """Every chat under the folder (a subagent's under its parent): prompts, responses, tokens,
    tool calls and failures equal the count written from gemini-cli's recording code."""
    assert REAL is not None
    chats = sorted(p for p in Path(REAL).rglob("*.json*") if p.suffix in (".json", ".jsonl"))
    assert chats
    mismatches = _mismatches(chats, tmp_path)
    print(f"{len(chats)} chats; mismatches: {mismatches}")
    assert mismatches == []


def _mismatches(chats: list[Path], tmp_path: Path) -> list[Any]:
    from tests.gemini_reference import count

    mismatches = []
    for index, path in enumerate(chats):
        root = tmp_path / str(index)
        (root / ".git").mkdir(parents=True)
        store = Store.open_or_init(root)
        try:
            stats = gemini_chats.ingest_chat_file(store, path)
            if not stats.sessions:
                continue
            subagent = path.parent.name != "chats" and path.parent.parent.name == "chats"
            metrics = sessions.metrics(store, stats.sessions[0])
            part = metrics.get("tokens", {}).get("subagents" if subagent else "main", {})
            want = count(path)
            got = {
                "prompts": metrics["turns"],
                "responses": part.get("messages", 0),
                "tool_calls": metrics["tool_calls"],
                "failed": metrics["tool_calls_failed"],
                "compactions": stats.compactions,
                "input": part.get("input_tokens", 0) + part.get("cache_read_tokens", 0),
                "cached": part.get("cache_read_tokens", 0),
                "output": part.get("output_tokens", 0),
            }
            if subagent:
                want["prompts"] = 0  # a subagent's task is no prompt of a person's
            want.pop("last")
            if got != want:
                mismatches.append(
                    (path.name, {k: (got[k], want[k]) for k in got if got[k] != want[k]})
                )
        finally:
            store.close()
    return mismatches


def test_a_declined_command_is_no_open_failure(store: Store, tmp_path: Path) -> None:
    path = _chat(tmp_path / "session-2026-11-20T10-00-9c0ffee0.jsonl")
    gemini_chats.ingest_chat_file(store, path)
    open_items = [item["command"] for item in sessions.open_failures(store, SID)]
    # pytest failed (Exit Code: 2) and is still open; the rm the user declined is not.
    assert open_items == ["pytest -q"]
    assert sessions.metrics(store, SID)["commands_failed"] == 1


def test_a_request_left_unanswered_is_the_task_in_progress_at_the_next_start(
    store: Store, tmp_path: Path
) -> None:
    """Gemini CLI stopped in the middle of a turn (no AfterAgent, no SessionEnd): the next
    session's start reads the chat, and tells the request as the task in progress."""
    from memory_core.agents import context, hooks

    chat = tmp_path / "chats" / "session-2026-11-20T10-00-9c0ffee0.jsonl"
    chat.parent.mkdir()
    start = clock.parse_iso("2026-11-20T10:00:00.000Z")

    def fire(sid: str, path: Path, event: str, at: float, **extra: object) -> str:
        payload = {
            "session_id": sid,
            "transcript_path": str(path),
            "cwd": str(store.root),
            "hook_event_name": event,
            **extra,
        }
        return hooks.handle("gemini", event, json.dumps(payload), now=at)[1]

    meta = {
        "sessionId": SID,
        "projectHash": "h",
        "startTime": "2026-11-20T10:00:00.000Z",
        "kind": "main",
    }
    chat.write_text(json.dumps(meta) + "\n", encoding="utf-8")
    fire(SID, chat, "SessionStart", start, source="startup")
    fire(SID, chat, "BeforeAgent", start + 1, prompt="Port the parser to Rust")
    prompt = {
        "id": "u1",
        "timestamp": "2026-11-20T10:00:01.000Z",
        "type": "user",
        "content": [{"text": "Port the parser to Rust"}],
    }
    with chat.open("a", encoding="utf-8") as handle:
        handle.write(json.dumps(prompt) + "\n")
    # An hour later, another session starts.
    later = tmp_path / "chats" / "session-2026-11-20T11-00-11111111.jsonl"
    later.write_text(json.dumps({**meta, "sessionId": "next-session"}) + "\n", encoding="utf-8")
    out = fire("next-session", later, "SessionStart", start + 3600, source="startup")
    assert "Port the parser to Rust" in out
    assert sessions.metrics(store, SID)["turns"] == 1
    assert "Port the parser to Rust" in context.session_start_text(store, current_session="x")
