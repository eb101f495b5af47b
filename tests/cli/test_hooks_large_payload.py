"""A hook with a huge payload: handled, stored cut, and fast (the bench prints the figure)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

from memory_core.agents.payload import KEEP_BYTES, cut_long_strings
from memory_core.store import Store


def test_a_15_mb_prompt_is_recorded_cut_to_head_and_tail(cli: Any, workspace: Path) -> None:
    subprocess.run(["git", "init", "-q", str(workspace)], check=True)
    head = "HEAD-MARKER please fix the build\n"
    tail = "\nTAIL-MARKER the last line the user typed"
    filler = 'a line of pasted log output — ünïcode 日本 "quoted" \\ backslash\n' * 230_000
    prompt = head + filler + tail
    payload = {"session_id": "big-1", "cwd": str(workspace), "prompt": prompt}
    data = json.dumps(payload)
    assert len(data.encode()) > 15_000_000
    started = cli(
        "hook",
        "claude-code",
        "SessionStart",
        cwd=workspace,
        stdin=json.dumps({"session_id": "big-1", "cwd": str(workspace)}),
    )
    assert started.code == 0
    result = cli("hook", "claude-code", "UserPromptSubmit", cwd=workspace, stdin=data)
    assert result.code == 0 and result.stderr == ""
    with Store.open(workspace) as store:
        rows = store.query("SELECT user_message FROM agent_turns WHERE session_id = 'big-1'")
    assert len(rows) == 1
    stored = rows[0]["user_message"]
    assert stored.startswith("HEAD-MARKER") and stored.endswith(
        "TAIL-MARKER the last line the user typed"
    )
    assert "cut" in stored and len(stored) < 10_000


def test_cutting_keeps_the_json_valid_and_short_strings_whole() -> None:
    long_text = 'x\\"y😀é' * 100_000
    document = {"short": 'kept "as" is', "long": long_text, "list": ["a", long_text, "z"]}
    for ascii_only in (True, False):
        raw = json.dumps(document, ensure_ascii=ascii_only).encode()
        cut = json.loads(cut_long_strings(raw))
        assert cut["short"] == document["short"]
        assert cut["list"][0] == "a" and cut["list"][2] == "z"
        for value in (cut["long"], cut["list"][1]):
            start, _, end = value.partition(" bytes cut ...]\n")
            kept_head = start.rsplit("\n[... ", 1)[0]
            assert long_text.startswith(kept_head) and long_text.endswith(end)
            assert len(value.encode()) < 3 * KEEP_BYTES
    # Negative control: a payload below the threshold is not touched at all.
    small = json.dumps({"prompt": "y" * 1000}).encode()
    assert cut_long_strings(small) is small
