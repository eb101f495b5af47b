"""How a Codex CLI tool call's output is read (memory_core/agents/codex_outputs.py), on the
outputs real Codex releases write (tests/fixtures/recorded, tests/fixtures/codex): each release's
header (`Exit code: N`, `Process exited with code N`, the 0.4x-0.5x JSON envelope), the exit code
deciding over the command's own words, the header only in the first lines, an MCP error, an
interruption, a call Codex could not run; and the files an `apply_patch` names."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from memory_core.agents.codex_outputs import (
    Outcome,
    content_text,
    output_text,
    patch_files,
    read_hook_response,
    read_output,
)

RECORDED = Path(__file__).resolve().parents[1] / "fixtures" / "recorded"


def _outputs(folder: str) -> list[str]:
    """The `..._output` texts of a recorded rollout, in order."""
    [rollout] = (RECORDED / folder).glob("rollout-*.jsonl")
    found = []
    for line in rollout.read_text(encoding="utf-8").splitlines():
        payload = json.loads(line).get("payload", {})
        if str(payload.get("type", "")).endswith("_output"):
            found.append(payload["output"])
    return found


def test_the_recorded_0_125_session_reads_its_three_failed_imports_and_nothing_else() -> None:
    outcomes = [read_output(o) for o in _outputs("codex-0.125.0")]
    failed = [o for o in outcomes if o.failed]
    assert len(failed) == 3
    assert all("No module named 'missing_helper_module'" in o.text for o in failed)
    assert all(o.structured == {"exit_code": 1} for o in failed)
    assert all(o.text == "" for o in outcomes if not o.failed)
    # The patch's JSON envelope (0.4x-0.5x style, still written by apply_patch in 0.125).
    assert outcomes[0] == Outcome(False, "", structured={"exit_code": 0})


def test_the_recorded_0_171_session_reads_the_same() -> None:
    outcomes = [read_output(o) for o in _outputs("codex-0.171.0")]
    assert sum(o.failed for o in outcomes) == 3
    assert all(o.structured is not None for o in outcomes)


@pytest.mark.parametrize(
    ("output", "failed", "code"),
    [
        ("Exit code: 2\nWall time: 0.1 seconds\nOutput:\nboom\n", True, 2),
        ("exit code:0\nOutput:\n", False, 0),
        (
            "Chunk ID: 1\nWall time: 0 s\nProcess exited with code 127\nOutput:\nnot found\n",
            True,
            127,
        ),
        ("Exit code: -1\nOutput:\nkilled\n", True, -1),
        # The command's own output says "Exit code: 1" below the header: the header decides.
        ("Exit code: 0\nOutput:\nExit code: 1\n", False, 0),
    ],
)
def test_the_exit_code_in_the_header_decides(output: str, failed: bool, code: int) -> None:
    outcome = read_output(output)
    assert outcome.failed is failed and outcome.structured == {"exit_code": code}
    assert (outcome.text == output) is failed


def test_an_exit_line_below_the_first_six_lines_is_the_commands_output_not_the_header() -> None:
    output = "Output:\n1\n2\n3\n4\n5\nExit code: 1\n"
    assert read_output(output) == Outcome(False)
    # Within the first six lines it is the header.
    assert read_output("a\nb\nc\nd\ne\nExit code: 1\n").failed


def test_the_json_envelope_gives_its_exit_code_and_keeps_the_inner_output_as_the_error() -> None:
    envelope = json.dumps({"output": "F.\nAssertionError", "metadata": {"exit_code": 1}})
    assert read_output(envelope) == Outcome(True, "F.\nAssertionError", structured={"exit_code": 1})
    # An envelope whose output is not text keeps the whole output as the error.
    odd = json.dumps({"output": ["x"], "metadata": {"exit_code": 3}})
    assert read_output(odd) == Outcome(True, odd, structured={"exit_code": 3})
    # A boolean or text exit code is no exit code.
    for metadata in ({"exit_code": True}, {"exit_code": "1"}, "x"):
        text = json.dumps({"output": "ok", "metadata": metadata})
        assert read_output(text) == Outcome(False)


def test_the_exit_code_of_the_exec_event_counts_when_the_output_has_none() -> None:
    assert read_output("plain output", exit_code=4) == Outcome(
        True, "plain output", structured={"exit_code": 4}
    )
    assert read_output("plain output", exit_code=0) == Outcome(
        False, "", structured={"exit_code": 0}
    )
    # The output's own header wins over the event's.
    assert read_output("Exit code: 0\n", exit_code=9).failed is False


def test_an_mcp_error_fails_whatever_else_it_says() -> None:
    for key in ("isError", "is_error"):
        text = json.dumps({key: True, "content": [{"type": "text", "text": "no such repo"}]})
        assert read_output(text) == Outcome(True, text)
    assert read_output(json.dumps({"isError": False, "content": []})) == Outcome(False)


@pytest.mark.parametrize("head", ["aborted", "  Aborted by user", "aborted by user after 3s"])
def test_an_aborted_call_is_an_interruption_not_a_failure(head: str) -> None:
    outcome = read_output(head)
    assert outcome.interrupted and not outcome.failed and outcome.text == head


def test_an_output_that_only_mentions_aborting_is_a_success() -> None:
    assert read_output("aborted transactions: 0") == Outcome(False)


@pytest.mark.parametrize(
    "text",
    [
        "execution error: sandbox denied",
        "failed to parse function arguments: x",
        "unsupported call: y",
    ],
)
def test_a_call_codex_could_not_run_is_a_failure(text: str) -> None:
    assert read_output(text) == Outcome(True, text)
    assert read_output(text.upper()).failed


def test_a_success_without_exit_code_is_not_searched_for_failure_words() -> None:
    assert read_output("the log says: exit status 1, error, failed") == Outcome(False)
    assert read_output("{not json") == Outcome(False)
    assert read_output("[" * 5000) == Outcome(False)


def test_content_items_and_dict_outputs_give_their_text() -> None:
    items = [
        {"type": "input_text", "text": "a"},
        {"type": "image"},
        {"text": 3},
        "x",
        {"text": "b"},
    ]
    assert content_text(items) == "a\nb"
    assert content_text("plain") == "plain" and content_text(None) == ""
    assert output_text({"content": "c"}) == "c"
    assert output_text({"output": "o"}) == "o"
    assert output_text({"text": "t"}) == "t"
    assert output_text({"content_items": [{"text": "i"}]}) == "i"
    assert output_text({"content": [{"text": "j"}]}) == "j"
    assert output_text([{"text": "k"}]) == "k"
    assert output_text(5) == ""


@pytest.mark.parametrize(
    ("response", "outcome"),
    [
        ({"exit_code": 1, "output": "boom"}, Outcome(True, "boom", structured={"exit_code": 1})),
        ({"exitCode": 0, "output": "ok"}, Outcome(False, "", structured={"exit_code": 0})),
        (
            {"exit_code": True, "output": "Exit code: 2\n"},
            Outcome(True, "Exit code: 2\n", structured={"exit_code": 2}),
        ),
        ({"is_error": True, "content": "denied"}, Outcome(True, "denied")),
        ({"isError": True}, Outcome(True, '{"isError": true}')),
        ({"interrupted": True}, Outcome(False, '{"interrupted": true}', interrupted=True)),
        ({"stdout": "x"}, Outcome(False)),
        ({}, Outcome(False)),
        ("Exit code: 3\n", Outcome(True, "Exit code: 3\n", structured={"exit_code": 3})),
        (None, Outcome(False)),
    ],
)
def test_a_hooks_tool_response_reads_as_the_rollouts_output(
    response: Any, outcome: Outcome
) -> None:
    assert read_hook_response(response) == outcome


def test_a_long_error_response_without_text_is_kept_cut() -> None:
    response = {"is_error": True, "detail": "x" * 10_000}
    assert len(read_hook_response(response).text) == 4000


def test_a_patch_names_each_file_it_adds_updates_deletes_or_moves_once_in_order() -> None:
    patch = (
        "*** Begin Patch\n"
        "*** Update File: shop/checkout.py\n@@\n-a\n+b\n"
        "*** Add File: tests/test_new.py  \n+x\n"
        "*** Delete File: old.py\n"
        "*** Update File: shop/cli.py\n*** Move to: shop/command.py\n@@\n-c\n+d\n"
        "*** Update File: shop/checkout.py\n@@\n-e\n+f\n"
        "*** End Patch\n"
    )
    assert patch_files({"input": patch, "other": 3}) == [
        "shop/checkout.py",
        "tests/test_new.py",
        "old.py",
        "shop/cli.py",
        "shop/command.py",
    ]
    assert patch_files({"command": "*** Update File: a.py"}) == []  # not a patch
    assert patch_files({}) == []
