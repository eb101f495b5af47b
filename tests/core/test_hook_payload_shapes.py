"""Hook payloads of hostile shapes: millions of short strings are not walked one by one (the
byte-level cut of long strings and the surrogate scrub both skip what cannot hold anything to
do), while a long string and a lone surrogate among them are still handled."""

from __future__ import annotations

import json

from memory_core.agents import payload


def _many_small(extra: dict[str, object]) -> bytes:
    items = [{"k": f"v{i}"} for i in range(200_000)]
    data = {
        "session_id": "S1",
        "hook_event_name": "PostToolUse",
        "tool_name": "Bash",
        "tool_input": {"command": "ls"},
        "tool_response": {"stdout": "x", "items": items, **extra},
    }
    return json.dumps(data).encode()


def test_a_payload_of_short_strings_is_passed_through_untouched() -> None:
    raw = _many_small({})
    assert payload.cut_long_strings(raw) is raw  # nothing to cut: not even copied
    parsed = payload.parse("claude-code", "PostToolUse", raw)
    assert len(parsed.tool_response["items"]) == 200_000


def test_a_long_string_among_short_ones_is_still_cut() -> None:
    raw = _many_small({"log": "y" * 1_000_000})
    parsed = payload.parse("claude-code", "PostToolUse", raw)
    log = parsed.tool_response["log"]
    assert len(log) < 100_000 and "bytes cut" in log
    assert len(parsed.tool_response["items"]) == 200_000


def test_a_lone_surrogate_among_short_strings_is_still_replaced() -> None:
    raw = _many_small({}).replace(b'"stdout": "x"', b'"stdout": "x\\ud83d"')
    parsed = payload.parse("claude-code", "PostToolUse", raw)
    assert parsed.tool_response["stdout"] == "x?"
    parsed.tool_response["stdout"].encode("utf-8")  # storable


def test_brackets_inside_strings_are_not_taken_for_nesting() -> None:
    raw = json.dumps(
        {"session_id": "S1", "tool_response": {"stdout": "[" * 5000 + "{" * 5000}}
    ).encode()
    parsed = payload.parse("claude-code", "PostToolUse", raw)
    assert parsed.tool_response["stdout"].startswith("[[[[")


def test_a_payload_nested_deeper_than_any_real_one_is_refused() -> None:
    import pytest

    from memory_core.errors import UsageError

    deep = b'{"session_id": "S1", "tool_input": ' + b"[" * 300 + b"]" * 300 + b"}"
    with pytest.raises(UsageError, match="nested too deeply"):
        payload.parse("claude-code", "PostToolUse", deep)
