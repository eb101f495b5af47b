"""Hook payloads as each agent writes them today (the recorded sessions of
tests/fixtures/recorded), and as they go wrong: a field of the wrong type, a newer agent's extra
fields, an event or tool under another agent's name, a Gemini tool error in each of its shapes,
Codex's tool output as a string; and the cutting of long strings at its exact edges."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from memory_core.agents import payload
from memory_core.agents.payload import CUT_ABOVE_BYTES, KEEP_BYTES, cut_long_strings, parse
from memory_core.errors import UsageError

RECORDED = Path(__file__).resolve().parents[1] / "fixtures" / "recorded"


def _recorded(folder: str) -> list[tuple[str, dict[str, Any]]]:
    lines = (RECORDED / folder / "hooks.jsonl").read_text(encoding="utf-8").splitlines()
    return [(entry["argv"][2], entry["payload"]) for entry in map(json.loads, lines)]


def _parse(agent: str, event: str, data: dict[str, Any]) -> payload.HookPayload:
    return parse(agent, event, json.dumps(data).encode())


# --- agent and event names as users and agents write them ---------------------------------


@pytest.mark.parametrize(
    ("typed", "agent"),
    [
        ("claude", "claude-code"),
        (" Claude_Code ", "claude-code"),
        ("CLAUDECODE", "claude-code"),
        ("Gemini", "gemini"),
        ("gemini_cli", "gemini"),
        ("codex", "codex"),
        ("Codex-CLI", "codex"),
        ("openai_codex", "codex"),
    ],
)
def test_an_agent_typed_any_usual_way_is_that_agent(typed: str, agent: str) -> None:
    assert payload.agent_name(typed) == agent


def test_an_unknown_agent_is_refused_with_its_name_and_the_known_ones() -> None:
    with pytest.raises(UsageError) as raised:
        payload.agent_name("cursor")
    assert "'cursor'" in str(raised.value)
    assert "claude-code, gemini or codex" in (raised.value.hint or "")


@pytest.mark.parametrize(
    ("gemini", "claude"),
    [
        ("BeforeAgent", "UserPromptSubmit"),
        ("AfterAgent", "Stop"),
        ("BeforeTool", "PreToolUse"),
        ("after-tool", "PostToolUse"),
        ("PRE_COMPRESS", "PreCompact"),
        ("SessionStart", "SessionStart"),
        ("sessionend", "SessionEnd"),
        ("Notification", "Notification"),
    ],
)
def test_each_gemini_event_is_handled_as_its_claude_code_event(gemini: str, claude: str) -> None:
    assert payload.canonical_event("gemini", gemini) == claude


def test_gemini_event_names_mean_nothing_from_another_agent() -> None:
    # A Claude Code or Codex hook named AfterTool is not Gemini's: it passes through unknown.
    assert payload.canonical_event("claude-code", "AfterTool") == "AfterTool"
    assert payload.canonical_event("codex", "BeforeAgent") == "BeforeAgent"


def test_claude_events_in_any_case_or_spelling_find_their_name() -> None:
    assert payload.canonical_event("claude-code", "precompact") == "PreCompact"
    assert payload.canonical_event("codex", "post_tool_use") == "PostToolUse"
    assert payload.canonical_event("claude-code", " user-prompt-submit ") == "UserPromptSubmit"
    # A newer agent's event engram does not know is kept as sent, without the spaces around it.
    assert payload.canonical_event("claude-code", " BrandNewEvent\n") == "BrandNewEvent"


@pytest.mark.parametrize(
    ("gemini", "claude"),
    [
        ("run_shell_command", "Bash"),
        ("write_file", "Write"),
        ("replace", "Edit"),
        ("read_file", "Read"),
        ("read_many_files", "Read"),
        ("glob", "Glob"),
        ("grep", "Grep"),
        ("search_file_content", "Grep"),
        ("grep_search", "Grep"),
        ("google_web_search", "WebSearch"),
        ("web_fetch", "WebFetch"),
        ("ls", "LS"),
        ("list_directory", "LS"),
        ("a_new_tool", "a_new_tool"),
    ],
)
def test_each_gemini_tool_is_handled_as_its_claude_code_tool(gemini: str, claude: str) -> None:
    assert payload.canonical_tool("gemini", gemini) == claude
    parsed = _parse("gemini", "AfterTool", {"session_id": "g", "tool_name": gemini})
    assert parsed.tool_name == claude


def test_a_claude_or_codex_tool_keeps_its_name_even_when_gemini_has_one_like_it() -> None:
    assert payload.canonical_tool("claude-code", "run_shell_command") == "run_shell_command"
    assert payload.canonical_tool("codex", "replace") == "replace"


# --- the recorded payloads of each agent ------------------------------------------------------


def test_gemini_0_61_payloads_read_as_claude_codes_events_and_tools() -> None:
    parsed = [
        parse("gemini", event, json.dumps(data)) for event, data in _recorded("gemini-0.61.0")
    ]
    events = [p.event for p in parsed]
    assert events[:5] == [
        "SessionStart",
        "UserPromptSubmit",
        "PreCompact",
        "PreToolUse",
        "PostToolUse",
    ]
    assert "Stop" in events and events[-1] == "SessionEnd"
    start = parsed[0]
    assert start.session_id == "065aa4b4-e4e3-46d7-90e6-9c76e5c56963"
    assert start.cwd == "/home/dev/project" and start.source == "startup"
    assert start.transcript_path and start.transcript_path.endswith("065aa4b4.jsonl")
    # The prompt as the user typed it, without the context engram's SessionStart added to it.
    assert parsed[1].prompt == "Create hello.py that prints hello"
    assert parsed[3].tool_name == "Write" and parsed[3].tool_input["file_path"] == "hello.py"
    tools = [p for p in parsed if p.event == "PostToolUse"]
    failed = [p for p in tools if p.failed]
    # The three runs of `python3 -c 'import missing_helper_module'` failed (Exit Code: 1),
    # the write, the first run of hello.py, the read, the edit, the search and the last run did not.
    assert len(failed) == 3 and len(tools) == 9
    for call in failed:
        assert call.tool_name == "Bash"
        assert "No module named 'missing_helper_module'" in (call.error or "")
    # An unknown field (Gemini's timestamp) is kept in raw, not lost.
    assert parsed[0].raw["timestamp"] == "2026-11-27T12:26:45.349Z"
    stop = next(p for p in parsed if p.event == "Stop")
    assert stop.prompt_response and stop.prompt


def test_gemini_0_44_shell_output_without_the_untrusted_context_wrapper_reads_the_same() -> None:
    parsed = [parse("gemini", e, json.dumps(d)) for e, d in _recorded("gemini-0.44.0")]
    failed = [p for p in parsed if p.failed]
    assert len(failed) == 3
    assert all("Exit Code: 1" in (p.error or "") for p in failed)


def test_codex_0_171_payloads_keep_the_model_and_read_an_output_string() -> None:
    parsed = [parse("codex", e, json.dumps(d)) for e, d in _recorded("codex-0.171.0")]
    assert parsed[0].event == "SessionStart" and parsed[0].model
    patch = next(p for p in parsed if p.event == "PostToolUse")
    # "Exit code: 0\nWall time: ..." is read for its exit code, not kept as text.
    assert patch.tool_response == {"exit_code": 0} and not patch.failed
    plain = [p for p in parsed if p.event == "PostToolUse"][1]
    assert plain.tool_response == {} and not plain.failed  # "hello\n": no exit code said
    assert parsed[0].raw["permission_mode"]  # a field engram does not use, kept


# --- wrong types, newer agents ----------------------------------------------------------------


def test_fields_of_the_wrong_type_read_as_missing_and_the_rest_still_counts() -> None:
    parsed = _parse(
        "claude-code",
        "PostToolUse",
        {
            "session_id": 12,
            "transcript_path": ["a"],
            "cwd": "",
            "tool_name": {"name": "Bash"},
            "tool_input": ["ls"],
            "tool_use_id": 7,
            "is_interrupt": "true",
            "prompt": None,
            "model": {"id": "claude-opus", "display_name": "Opus"},
            "agent_id": False,
            "agent_type": 3,
            "source": 1,
            "trigger": [],
            "reason": {},
            "last_assistant_message": 0,
            "compact_summary": 1.5,
            "custom_instructions": True,
            "prompt_response": ["x"],
        },
    )
    assert parsed.session_id is None and parsed.transcript_path is None and parsed.cwd is None
    assert parsed.tool_name is None and parsed.tool_input == {} and parsed.tool_use_id is None
    assert parsed.is_interrupt is False and parsed.model is None
    assert parsed.agent_id is None and not parsed.in_subagent and parsed.agent_type is None
    for name in ("source", "trigger", "reason", "last_assistant_message", "compact_summary"):
        assert getattr(parsed, name) is None, name
    assert parsed.custom_instructions is None and parsed.prompt_response is None
    assert parsed.event == "PostToolUse" and not parsed.failed


def test_every_field_of_a_full_claude_payload_is_read() -> None:
    parsed = _parse(
        "claude-code",
        "",
        {
            "hook_event_name": "PreCompact",
            "session_id": "s1",
            "transcript_path": "/t.jsonl",
            "cwd": "/w",
            "tool_name": "Bash",
            "tool_input": {"command": "ls"},
            "tool_response": {"stdout": "a"},
            "tool_use_id": "toolu_1",
            "is_interrupt": True,
            "prompt": "p",
            "prompt_response": "r",
            "source": "resume",
            "trigger": "manual",
            "reason": "clear",
            "last_assistant_message": "done",
            "compact_summary": "sum",
            "custom_instructions": "keep tests",
            "model": "claude-sonnet-4-5",
            "agent_id": "a1",
            "agent_type": "Explore",
            "a_field_from_next_year": {"x": 1},
        },
    )
    assert parsed.event == "PreCompact"  # the payload's name, when the command line gives none
    assert (parsed.session_id, parsed.transcript_path, parsed.cwd) == ("s1", "/t.jsonl", "/w")
    assert parsed.tool_name == "Bash" and parsed.tool_input == {"command": "ls"}
    assert parsed.tool_response == {"stdout": "a"} and parsed.tool_use_id == "toolu_1"
    assert parsed.is_interrupt is True
    assert (parsed.prompt, parsed.prompt_response) == ("p", "r")
    assert (parsed.source, parsed.trigger, parsed.reason) == ("resume", "manual", "clear")
    assert parsed.last_assistant_message == "done" and parsed.compact_summary == "sum"
    assert parsed.custom_instructions == "keep tests" and parsed.model == "claude-sonnet-4-5"
    assert parsed.agent_id == "a1" and parsed.in_subagent and parsed.agent_type == "Explore"
    assert parsed.raw["a_field_from_next_year"] == {"x": 1}
    assert parsed.error is None and not parsed.failed
    assert repr(parsed) == "HookPayload('claude-code', 'PreCompact', session_id='s1')"


def test_the_event_on_the_command_line_wins_over_the_payloads() -> None:
    parsed = _parse("claude-code", "stop", {"hook_event_name": "SessionEnd", "session_id": "s"})
    assert parsed.event == "Stop"
    assert _parse("gemini", "", {"hook_event_name": "AfterAgent"}).event == "Stop"
    assert _parse("claude-code", "", {}).event == ""


def test_an_empty_payload_is_an_event_without_fields() -> None:
    for empty in (b"", b"  \n", ""):
        parsed = parse("claude-code", "Stop", empty)
        assert parsed.event == "Stop" and parsed.session_id is None and parsed.raw == {}


@pytest.mark.parametrize(
    ("text", "says"),
    [
        (b"[1, 2]", "a JSON list, expected an object"),
        (b'"text"', "a JSON str, expected an object"),
        (b"{not json", "hook input is not JSON"),
        (b"\xff\xfe{}", "hook input is not JSON"),
    ],
)
def test_input_that_is_not_an_object_is_refused_saying_what_it_is(text: bytes, says: str) -> None:
    with pytest.raises(UsageError, match=says):
        parse("claude-code", "Stop", text)


def test_a_failed_tool_keeps_claudes_error_or_says_the_tool_failed() -> None:
    failed = _parse("claude-code", "PostToolUseFailure", {"error": "Exit code 2\nno such file"})
    assert failed.failed and failed.error == "Exit code 2\nno such file"
    bare = _parse("claude-code", "PostToolUseFailure", {"error": 5})
    assert bare.failed and bare.error == "tool failed"
    # Claude's PostToolUse with an error field is not a failure: only the failure event is.
    assert not _parse("claude-code", "PostToolUse", {"error": "x"}).failed


# --- Gemini's tool errors --------------------------------------------------------------------


@pytest.mark.parametrize(
    ("response", "error"),
    [
        ({"error": "File not found: a.py"}, "File not found: a.py"),
        ({"error": {"message": "Permission denied", "type": "x"}}, "Permission denied"),
        ({"error": {"type": "invalid_tool_params"}}, '{"type": "invalid_tool_params"}'),
        ({"error": "", "llmContent": "Output: boom\nExit Code: 2"}, "Output: boom\nExit Code: 2"),
        ({"llmContent": "Output: x\nexit code:   -1\n"}, "Output: x\nexit code:   -1\n"),
        ({"llmContent": "Output: x\nExit Code: 0"}, None),
        ({"llmContent": "Output: hello"}, None),
        ({"llmContent": ["Exit Code: 1"]}, None),
        ({"error": None, "llmContent": 3}, None),
        ("Exit Code: 1", None),
        ({"error": 404}, None),
    ],
)
def test_a_gemini_tool_fails_by_its_error_or_a_shells_non_zero_exit(
    response: Any, error: str | None
) -> None:
    parsed = _parse(
        "gemini", "AfterTool", {"tool_name": "run_shell_command", "tool_response": response}
    )
    assert parsed.error == error
    assert parsed.failed is (error is not None)


def test_a_gemini_error_is_read_only_after_a_tool_and_a_claude_response_never_so() -> None:
    response = {"llmContent": "Output: x\nExit Code: 1"}
    assert _parse("gemini", "BeforeTool", {"tool_response": response}).error is None
    assert _parse("claude-code", "PostToolUse", {"tool_response": response}).error is None


def test_gemini_prompts_lose_engrams_context_block_and_claude_prompts_keep_theirs() -> None:
    block = "<hook_context># engram\n- a gotcha</hook_context>\n\nFix the test"
    assert _parse("gemini", "BeforeAgent", {"prompt": block}).prompt == "Fix the test"
    assert _parse("claude-code", "UserPromptSubmit", {"prompt": block}).prompt == block
    middle = "Before <hook_context>x</hook_context> after"
    assert payload.without_hook_context(middle) == "Before\n\nafter"
    assert payload.without_hook_context("no block") == "no block"


# --- Codex's outputs in the hook --------------------------------------------------------------


@pytest.mark.parametrize(
    ("response", "failed", "error", "interrupted"),
    [
        ("Exit code: 1\nWall time: 0.1 seconds\nOutput:\nboom\n", True, None, False),
        ({"exit_code": 2, "output": "no such file"}, True, "no such file", False),
        ({"exitCode": 0, "output": "ok"}, False, None, False),
        ({"is_error": True}, True, '{"is_error": true}', False),
        ({"interrupted": True, "output": "stopped"}, False, None, True),
        ("aborted by user", False, None, True),
        # A non-zero exit without any output: the error says the tool failed.
        ({"exit_code": 2}, True, "tool failed", False),
    ],
)
def test_a_codex_tool_output_is_judged_by_its_exit_code(
    response: Any, failed: bool, error: str | None, interrupted: bool
) -> None:
    parsed = _parse("codex", "PostToolUse", {"tool_name": "shell", "tool_response": response})
    assert parsed.failed is failed
    if error is not None:
        assert parsed.error == error
    if failed and error is None:
        assert parsed.error and "boom" in parsed.error
    assert parsed.is_interrupt is interrupted


def test_a_codex_interrupt_the_payload_already_says_stays_an_interrupt() -> None:
    parsed = _parse("codex", "PostToolUse", {"is_interrupt": True, "tool_response": "hello\n"})
    assert parsed.is_interrupt is True and not parsed.failed


def test_a_codex_pre_tool_payload_keeps_its_response_as_sent() -> None:
    parsed = _parse("codex", "PreToolUse", {"tool_response": "Exit code: 1"})
    assert parsed.tool_response == "Exit code: 1" and not parsed.failed


# --- lone surrogates and nesting --------------------------------------------------------------


@pytest.mark.parametrize("escape", ["\\ud83d", "\\uDC00", "\\udbff", "\\uDfFf"])
def test_a_lone_surrogate_escape_anywhere_is_replaced_so_it_can_be_stored(escape: str) -> None:
    raw = '{"session_id": "s", "tool_response": {"k' + escape + '": ["a' + escape + '"]}}'
    parsed = parse("claude-code", "PostToolUse", raw.encode())
    assert parsed.tool_response == {"k?": ["a?"]}


def test_a_lone_surrogate_in_a_str_payload_is_replaced_too() -> None:
    parsed = parse("claude-code", "Stop", '{"last_assistant_message": "cut \ud83d"}')
    assert parsed.last_assistant_message == "cut ?"


def test_an_escaped_backslash_before_u_is_text_not_a_surrogate() -> None:
    parsed = parse("claude-code", "Stop", b'{"last_assistant_message": "C:\\\\ud83d"}')
    assert parsed.last_assistant_message == "C:\\ud83d"


def test_scrub_leaves_valid_text_and_other_values_as_they_are() -> None:
    value = {"a": ["é", 1, None, {"b": True}], "c": 2.5}
    assert payload.scrub(value) == value
    assert payload.scrub("\ud800x") == "?x"


def _nested(depth: int) -> bytes:
    # The object itself is one level: depth - 1 lists inside it.
    return b'{"tool_input": ' + b"[" * (depth - 1) + b"]" * (depth - 1) + b"}"


def test_nesting_up_to_the_limit_is_read_and_one_deeper_refused() -> None:
    parse("claude-code", "PostToolUse", _nested(payload.MAX_DEPTH))
    with pytest.raises(UsageError, match="nested too deeply"):
        parse("claude-code", "PostToolUse", _nested(payload.MAX_DEPTH + 1))


def test_many_brackets_in_strings_beside_shallow_data_are_not_nesting() -> None:
    text = json.dumps({"a": "[" * 300, "b": [[{"c": [1]}]]}).encode()
    assert parse("claude-code", "Stop", text).raw["b"] == [[{"c": [1]}]]


@pytest.mark.parametrize(
    ("depth", "refused"), [(payload.MAX_DEPTH, False), (payload.MAX_DEPTH + 1, True)]
)
def test_nesting_is_measured_exactly_when_brackets_in_strings_hide_it(
    depth: int, refused: bool
) -> None:
    # Brackets inside a string make the quick bound pass the limit: the real depth is counted.
    text = b'{"s": "' + b"[" * 300 + b'", "a": ' + b"[" * (depth - 1) + b"]" * (depth - 1) + b"}"
    if refused:
        with pytest.raises(UsageError, match="nested too deeply"):
            parse("claude-code", "Stop", text)
    else:
        assert parse("claude-code", "Stop", text).raw["s"] == "[" * 300


def test_a_deeply_nested_branch_beside_shallow_ones_is_found() -> None:
    deep = b"[" * (payload.MAX_DEPTH + 5) + b"]" * (payload.MAX_DEPTH + 5)
    text = b'{"a": [1, {"b": 2}], "z": ' + deep + b', "y": {"c": []}}'
    with pytest.raises(UsageError, match="nested too deeply"):
        parse("claude-code", "Stop", text)


# --- cutting long strings at their exact edges ------------------------------------------------


def _field(body: bytes) -> bytes:
    return b'{"session_id": "s", "prompt": "' + body + b'", "cwd": "/w"}'


def test_a_cut_keeps_exactly_the_head_and_tail_and_says_how_much_went() -> None:
    body = b"h" * KEEP_BYTES + b"m" * 70_000 + b"t" * KEEP_BYTES
    cut = json.loads(cut_long_strings(_field(body)))["prompt"]
    assert cut == "h" * KEEP_BYTES + "\n[... 70000 bytes cut ...]\n" + "t" * KEEP_BYTES


def test_a_string_one_byte_over_the_limit_is_cut_and_one_at_it_kept() -> None:
    over = json.loads(cut_long_strings(_field(b"x" * (CUT_ABOVE_BYTES + 1))))["prompt"]
    assert (
        over
        == "x" * KEEP_BYTES
        + f"\n[... {CUT_ABOVE_BYTES + 1 - 2 * KEEP_BYTES} bytes cut ...]\n"
        + "x" * KEEP_BYTES
    )
    # A payload over the limit whose one long string is exactly at it is returned unchanged.
    at = b'{"a": "' + b"x" * CUT_ABOVE_BYTES + b'", "b": "' + b"y" * 100 + b'"}'
    assert cut_long_strings(at) == at


def test_a_cut_moves_off_a_multibyte_character_to_keep_it_whole() -> None:
    # "é" is two bytes: the head's end falls between them (the head gives it up), and the
    # tail's start falls between those of the second one (the tail gives it up).
    e = "é".encode()
    body = b"a" * (KEEP_BYTES - 1) + e + b"b" * 70_000 + e + b"d" * (KEEP_BYTES - 1)
    text = json.loads(cut_long_strings(_field(body)))["prompt"]
    assert text == "a" * (KEEP_BYTES - 1) + "\n[... 70004 bytes cut ...]\n" + "d" * (KEEP_BYTES - 1)


def test_a_cut_never_splits_an_escape_or_a_surrogate_pair() -> None:
    for escape in (b'\\"', b"\\\\", b"\\u00e9", b"\\ud83d\\ude00", b"\\n"):
        for shift in range(len(escape) + 1):
            head = b"a" * (KEEP_BYTES - shift) + escape
            body = head + b"b" * 70_000 + escape + b"c" * (KEEP_BYTES - len(escape) + shift)
            text = json.loads(cut_long_strings(_field(body)))["prompt"]
            kept_head = text.split("\n[... ")[0]
            decoded = json.loads(b'"' + escape + b'"')
            # The escape is either wholly in the head or wholly cut, never half of it.
            assert kept_head in ("a" * (KEEP_BYTES - shift), "a" * (KEEP_BYTES - shift) + decoded)
            kept_tail = text.split(" bytes cut ...]\n")[1]
            assert kept_tail.endswith("c" * (KEEP_BYTES - len(escape) + shift))
            assert kept_tail.lstrip("b") in (
                "c" * (KEEP_BYTES - len(escape) + shift),
                decoded + "c" * (KEEP_BYTES - len(escape) + shift),
            )


def test_escaped_quotes_and_backslashes_throughout_a_long_string_do_not_end_it() -> None:
    # Windows of escaped quotes, then an escaped backslash right before the closing quote.
    body = (b'say \\"hi\\" ' * 30_000) + b"end\\\\"
    raw = b'{"a": "' + body + b'", "b": "after", "c": "' + b"q" * 10 + b'"}'
    data = json.loads(cut_long_strings(raw))
    assert data["b"] == "after" and data["c"] == "q" * 10
    assert data["a"].startswith('say "hi" ') and data["a"].endswith("end\\")


def test_a_string_longer_than_a_megabyte_window_is_found_to_its_real_end() -> None:
    long = "x" * (3 << 20) + '\\"' + "y" * 5000
    raw = json.dumps({"a": long, "b": "kept", "c": "x" * 200_000}).encode()
    data = json.loads(cut_long_strings(raw))
    assert data["b"] == "kept"
    assert data["a"].startswith("x" * 1000) and data["a"].endswith("y" * 5000)
    assert data["c"].endswith("x" * KEEP_BYTES) and " bytes cut ...]" in data["c"]


def test_a_closing_quote_after_escaped_backslashes_deep_in_a_window_ends_the_string() -> None:
    # The first string ends after `\\\\` well past the first 4 kB: nothing after it is text.
    first = "p" * 9000 + "\\"
    raw = json.dumps({"a": first, "b": "z" * (CUT_ABOVE_BYTES + 10)}).encode()
    data = json.loads(cut_long_strings(raw))
    assert data["a"] == first
    assert data["b"].startswith("z" * KEEP_BYTES + "\n[... ")


def test_an_unterminated_long_string_is_left_for_the_parser_to_refuse() -> None:
    raw = b'{"a": "' + b"x" * (CUT_ABOVE_BYTES + 10)
    assert cut_long_strings(raw) == raw
    with pytest.raises(UsageError, match="not JSON"):
        parse("claude-code", "Stop", raw)


def test_a_long_str_payload_is_cut_as_its_bytes_would_be() -> None:
    text = json.dumps({"session_id": "s", "prompt": "é" * CUT_ABOVE_BYTES})
    parsed = parse("claude-code", "UserPromptSubmit", text)
    assert parsed.session_id == "s" and parsed.prompt
    assert " bytes cut ...]" in parsed.prompt and len(parsed.prompt) < 2 * KEEP_BYTES


def test_a_long_string_of_invalid_utf8_at_a_cut_is_refused_as_not_json() -> None:
    # Bytes no UTF-8 text holds (a tool's binary output passed on raw): the cut cannot find a
    # character boundary near the cut point, and the parser then says what is wrong.
    body = b"a" * (KEEP_BYTES - 50) + b"\x80" * 100 + b"b" * (CUT_ABOVE_BYTES + 10)
    with pytest.raises(UsageError, match="not JSON"):
        parse("claude-code", "Stop", _field(body))
    tail = b"b" * (CUT_ABOVE_BYTES + 10) + b"\x80" * 100 + b"c" * (KEEP_BYTES - 50)
    with pytest.raises(UsageError, match="not JSON"):
        parse("claude-code", "Stop", _field(tail))


def test_a_long_json_string_on_its_own_is_cut_too() -> None:
    raw = b'"' + b"x" * (CUT_ABOVE_BYTES + 100) + b'"'
    cut = json.loads(cut_long_strings(raw))
    assert cut.startswith("x" * KEEP_BYTES + "\n[... ") and len(cut) < 3 * KEEP_BYTES
