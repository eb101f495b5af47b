"""The hook entry under hostile input, in-process (fast enough for many cases)."""

from __future__ import annotations

import json
import random
from pathlib import Path

from memory_core.agents import hooks
from memory_core.store import Store

EVENTS = [
    "SessionStart",
    "UserPromptSubmit",
    "PreToolUse",
    "PostToolUse",
    "PostToolUseFailure",
    "PreCompact",
    "PostCompact",
    "Stop",
    "SubagentStop",
    "SessionEnd",
    "Notification",
    "BeforeAgent",
    "AfterTool",
    "AfterAgent",
]
FIELDS = [
    "session_id",
    "transcript_path",
    "cwd",
    "tool_name",
    "tool_input",
    "tool_response",
    "tool_use_id",
    "error",
    "prompt",
    "source",
    "trigger",
    "reason",
    "last_assistant_message",
    "compact_summary",
    "agent_id",
    "model",
    "is_interrupt",
    "prompt_response",
    "agent_transcript_path",
]


def _value(rng: random.Random, root: Path) -> object:
    return rng.choice(
        [
            None,
            True,
            0,
            -1,
            3.5,
            "",
            "x" * rng.randint(1, 3000),
            "S-fuzz",
            str(root),
            str(root / "a.py"),
            "/etc/passwd",
            [],
            [1, "a", None],
            {},
            {"file_path": 7},
            {"command": ["ls"]},
            {"file_path": str(root / "a.py"), "content": None},
            {"stdout": None, "interrupted": "yes"},
            {"llmContent": 5, "error": {"message": None}},
            "Bash",
            "Edit",
            "\ud800",
        ]
    )


def test_random_payloads_never_raise_and_never_log_a_crash(store: Store) -> None:
    root = store.root
    store.close()
    (root / "a.py").write_text("x = 1\n")
    rng = random.Random(20261122)
    for _ in range(300):
        data = {
            field: _value(rng, root) for field in rng.sample(FIELDS, rng.randint(0, len(FIELDS)))
        }
        if rng.random() < 0.7:
            data["session_id"] = "S-fuzz"
            data["cwd"] = str(root)
        agent = rng.choice(["claude-code", "gemini"])
        event = rng.choice(EVENTS)
        text = json.dumps(data)
        code, out = hooks.handle(agent, event, text, workspace=str(root))
        assert code == 0
        if out:
            assert json.loads(out)["hookSpecificOutput"]["additionalContext"]
    log = root / ".engram" / "engram.log"
    crashes = (
        [line for line in log.read_text().splitlines() if " ERROR " in line] if log.exists() else []
    )
    assert crashes == []
