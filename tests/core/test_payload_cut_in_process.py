"""Long strings cut from a hook's payload before it is parsed, in-process: whatever sits at the
cut points (an escaped quote, a backslash, a `\\u` escape, an emoji's surrogate pair, a
multi-byte character), the payload stays valid JSON, its other fields stay exactly as they were,
and the long string keeps its head and tail. (tests/cli/test_hooks_large_payload.py drives the
same through `engram hook` processes.)"""

from __future__ import annotations

import json

from memory_core.agents.payload import CUT_ABOVE_BYTES, KEEP_BYTES, cut_long_strings

AWKWARD = ('\\"', "\\\\", "\\u00e9", "\\ud83d\\ude00", "é", "€", '\\\\\\"')


def _payload(body: str) -> bytes:
    return (
        '{"session_id": "s-1", "tool_input": {"command": "' + body + '"}, "cwd": "/w"}'
    ).encode()


def test_whatever_sits_at_a_cut_point_the_payload_stays_valid_json() -> None:
    size = CUT_ABOVE_BYTES + 10_000
    for awkward in AWKWARD:
        for offset in range(-8, 9):
            for at in (KEEP_BYTES + offset, size - KEEP_BYTES + offset):
                body = "a" * at + awkward + "b" * (size - at)
                raw = _payload(body)
                cut = cut_long_strings(raw)
                data = json.loads(cut)  # raises if a cut broke an escape or a character
                assert data["session_id"] == "s-1" and data["cwd"] == "/w"
                command = data["tool_input"]["command"]
                assert len(cut) < len(raw) and " bytes cut ...]" in command
                assert command.startswith("a" * (KEEP_BYTES - 16))
                assert command.endswith("b" * (KEEP_BYTES - len(awkward) - 16))


def test_a_payload_at_the_limit_or_without_long_strings_is_left_as_it_is() -> None:
    exact = _payload("x" * CUT_ABOVE_BYTES)
    assert cut_long_strings(exact) == exact
    many_short = ("[" + ",".join(['"' + "y" * 100 + '"'] * 3000) + "]").encode()
    assert cut_long_strings(many_short) == many_short
    over = _payload("x" * (CUT_ABOVE_BYTES + 1))
    assert len(cut_long_strings(over)) < len(over)


def test_every_long_string_is_cut_and_the_short_ones_between_kept() -> None:
    long = "z" * (CUT_ABOVE_BYTES + 5000)
    raw = json.dumps({"a": long, "keep": 'short "quoted"', "b": [long, "x"]}).encode()
    data = json.loads(cut_long_strings(raw))
    assert data["keep"] == 'short "quoted"' and data["b"][1] == "x"
    for cut in (data["a"], data["b"][0]):
        assert cut.startswith("z" * 1000) and cut.endswith("z" * 1000)
        assert len(cut) < KEEP_BYTES * 2 + 100
