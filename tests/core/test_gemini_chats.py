"""`engram ingest gemini`: Gemini CLI's recorded chats into the same session records."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from memory_core import sessions
from memory_core.agents import gemini_chats
from memory_core.store import Store
from tests.agents_fixtures import gemini_chat

SESSION = "3b7e9f10-aaaa-4bbb-8ccc-ddddeeeeffff"


def _chat(root: Path) -> Path:
    folder = gemini_chats.gemini_home() / "tmp" / "myproject" / "chats"
    (folder.parent / ".project_root").parent.mkdir(parents=True, exist_ok=True)
    (folder.parent / ".project_root").write_text(str(root))
    return gemini_chat(root, folder / f"session-2026-11-22T10-00-{SESSION[:8]}.jsonl", SESSION)


def test_a_chat_becomes_a_session_with_turns_tokens_and_failures(store: Store) -> None:
    (store.root / "src").mkdir()
    (store.root / "src/app.py").write_text("x = 2\n")
    path = _chat(store.root)
    assert gemini_chats.default_chats(store.root) == [path]
    gemini_chats.ingest_chat_file(store, path)
    session = sessions.get(store, SESSION)
    assert session["agent"] == "gemini"
    metrics = sessions.metrics(store, SESSION)
    # Two prompts: not the info line, the rewound request or the /stats command.
    assert metrics["turns"] == 2
    # Tokens of the last copy of each response; the rewound response is not counted.
    main = metrics["tokens"]["main"]
    assert main["messages"] == 4
    assert main["cache_read_tokens"] == 6000 + 8000 + 9000
    assert main["input_tokens"] == (8200 - 6000) + (9100 - 8000 + 15) + (9400 - 9000)
    assert main["output_tokens"] == (120 + 40) + 60 + (30 + 10)
    # npm test failed (Exit Code: 1 although Gemini says success), rm was cancelled.
    assert metrics["tool_calls"] == 4
    assert metrics["tool_calls_failed"] == 2
    # The rm the user cancelled is an unsuccessful call, but no failed command (nor open item).
    assert (metrics["commands"], metrics["commands_failed"]) == (3, 1)
    assert sessions.files_modified(store, SESSION) == ["src/app.py"]
    turns = sessions.history(store, SESSION)
    assert [t["user_message"] for t in turns] == ["Run the tests", "Fix it, then run them again"]
    assert "The tests pass now." in turns[1]["assistant_response"]


def test_ingesting_again_counts_nothing_twice(store: Store) -> None:
    path = _chat(store.root)
    gemini_chats.ingest_chat_file(store, path)
    before = sessions.metrics(store, SESSION)
    gemini_chats.ingest_chat_file(store, path)
    # The file grew (a message rewritten with the same content): read again, counted once.
    path.write_text(path.read_text() + path.read_text().splitlines()[-2] + "\n")
    gemini_chats.ingest_chat_file(store, path)
    assert sessions.metrics(store, SESSION) == before


def test_the_cli_ingests_this_workspaces_gemini_chats(cli: Any, workspace: Path) -> None:
    (workspace / ".git").mkdir()
    _chat(workspace)
    done = cli("ingest", "gemini", "--json", cwd=workspace)
    assert done.code == 0, done.stderr
    assert done.json()["prompts"] == 2
    metrics = cli("session", "metrics", SESSION, "--json", cwd=workspace).json()
    assert metrics["tokens"]["main"]["cache_read_tokens"] == 23000
    missing = cli("ingest", "gemini", str(workspace / "nope.jsonl"), cwd=workspace)
    assert missing.code == 2 and "no transcript at" in missing.stderr


def test_a_subagent_chat_is_sidechain_work_of_its_parent(store: Store) -> None:
    import json

    main = _chat(store.root)
    sub = main.parent / SESSION / "sub-1.jsonl"
    sub.parent.mkdir()
    records = [
        {
            "sessionId": "sub-1",
            "projectHash": "x",
            "startTime": "2026-11-22T10:00:05.000Z",
            "lastUpdated": "2026-11-22T10:00:09.000Z",
            "kind": "subagent",
        },
        {
            "id": "s-u",
            "timestamp": "2026-11-22T10:00:05.000Z",
            "type": "user",
            "content": "find callers",
        },
        {
            "id": "s-g",
            "timestamp": "2026-11-22T10:00:09.000Z",
            "type": "gemini",
            "content": "Two callers.",
            "model": "gemini-2.5-flash",
            "tokens": {"input": 700, "output": 40, "cached": 500, "total": 740},
        },
    ]
    sub.write_text("".join(json.dumps(r) + "\n" for r in records))
    for path in gemini_chats.default_chats(store.root):
        gemini_chats.ingest_chat_file(store, path)
    metrics = sessions.metrics(store, SESSION)
    assert metrics["turns"] == 2  # the subagent's task is not a prompt of the session
    subagents = metrics["tokens"]["subagents"]
    assert (subagents["messages"], subagents["input_tokens"], subagents["cache_read_tokens"]) == (
        1,
        200,
        500,
    )
    assert store.query_one("SELECT COUNT(*) FROM agent_sessions WHERE session_id = 'sub-1'")[0] == 0


def test_a_line_nested_too_deeply_is_skipped_and_the_rest_ingested(store: Store) -> None:
    path = _chat(store.root)
    lines = path.read_text().splitlines()
    hostile = '{"type": "user", "content": ' + "[" * 100_000 + "]" * 100_000 + "}"
    decodable = '{"type": "user", "content": ' + "[" * 900 + "]" * 900 + "}"  # too deep to scrub
    path.write_text("\n".join([lines[0], hostile, decodable, *lines[1:]]) + "\n")
    gemini_chats.ingest_chat_file(store, path)
    assert sessions.metrics(store, SESSION)["turns"] == 2
