"""The one definition of a failed tool call or command (`agents.failures`)."""

from __future__ import annotations

import pytest

from memory_core.agents import failures
from tests.agents_fixtures import HOOK_BLOCK, NPM_BUILD_FAILURE, gemini_shell_output


@pytest.mark.parametrize(
    ("kwargs", "kind", "code"),
    [
        # Claude Code: a non-zero exit, with and without the "Error: " of toolUseResult.
        ({"is_error": True, "text": "Exit code 1\nFAIL x"}, "exit", 1),
        ({"is_error": True, "text": "Error: Exit code 137\nKilled"}, "exit", 137),
        # npm's own words, no "Exit code" anywhere: still failed (is_error).
        ({"is_error": True, "text": NPM_BUILD_FAILURE}, "error", None),
        # Gemini CLI reports a failing shell command with status success and "Exit Code: N".
        ({"text": gemini_shell_output("npm test", "1 failing", 1), "status": "success"}, "exit", 1),
        ({"status": "error", "text": "File not found"}, "error", None),
        ({"status": "cancelled"}, "interrupted", None),
        # Interrupted and rejected calls.
        (
            {"is_error": True, "text": "[Request interrupted by user for tool use]"},
            "interrupted",
            None,
        ),
        (
            {
                "is_error": True,
                "text": "The user doesn't want to proceed with this tool use. The tool use was rejected",
            },
            "interrupted",
            None,
        ),
        ({"structured": {"stdout": "", "stderr": "", "interrupted": True}}, "interrupted", None),
        # A call a hook blocked (Claude Code's own text), and a timeout.
        ({"is_error": True, "text": HOOK_BLOCK}, "blocked", None),
        ({"is_error": True, "text": "PreToolUse:Edit hook error: not allowed"}, "blocked", None),
        ({"is_error": True, "text": "Command timed out after 2m 0.0s"}, "timeout", None),
        # Other phrasings of an exit code, when the call is marked failed.
        ({"is_error": True, "text": "go: exit status 2"}, "exit", 2),
        ({"is_error": True, "text": "Command failed with exit code 3: make"}, "exit", 3),
    ],
)
def test_every_phrasing_of_a_failure_is_a_failure(
    kwargs: dict, kind: str, code: int | None
) -> None:
    failure = failures.classify(**kwargs)
    assert failure is not None
    assert (failure.kind, failure.exit_code) == (kind, code)


@pytest.mark.parametrize(
    "kwargs",
    [
        {"text": "3 passed in 0.12s"},
        {"structured": {"stdout": "ok", "stderr": "", "interrupted": False}},
        {"text": gemini_shell_output("npm test", "all passing", 0), "status": "success"},
        # Output that talks about exit codes without being one (a successful grep).
        {"text": "docs/x.md:12: the process exit status is logged"},
    ],
)
def test_a_success_is_not_a_failure(kwargs: dict) -> None:
    assert failures.classify(**kwargs) is None


def test_a_failure_followed_by_a_success_of_the_same_command_is_not_still_failing() -> None:
    runs = [
        ("git push", False, 1.0),
        ("pytest  -q", False, 2.0),
        ("git push", True, 3.0),
        ("pytest -q", False, 4.0),
        ("make", False, 5.0),
    ]
    assert failures.still_failing(runs) == ["pytest -q", "make"]
