"""The one definition of a failed command or tool call, for every part of engram.

Metrics, session summaries, digests, open items, dead ends and the session-start context all
ask here, so that a call is failed everywhere or nowhere. A call failed when:

- the agent marked its result as an error (`is_error` on a Claude Code tool_result, `status`
  "error" on a Gemini CLI tool call, a PostToolUseFailure hook);
- it reports a non-zero exit, in any phrasing the agents write: Claude Code's `Exit code N`
  (also `Error: Exit code N`), Gemini CLI's `Exit Code: N` line, `exit status N` (go),
  `exited with code N`, `Command failed with exit code N` (npm and friends);
- it was interrupted or rejected by the user (`interrupted: true`, `[Request interrupted`,
  "The user doesn't want to proceed with this tool use", Gemini's "cancelled");
- a hook blocked it (PreToolUse exit 2 or `deny`: "... hook error", "blocked by ... hook");
- it timed out ("Command timed out after ...").

A failure followed later in the session by a success of the same command is not an open item
(`still_failing`).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

KINDS = ("error", "exit", "interrupted", "blocked", "timeout")

# Non-zero exit, as a line of its own (Claude Code puts it first; Gemini CLI in its report).
_EXIT_LINE = re.compile(
    r"^\s*(?:Error:\s*)?Exit[ _]code:?\s*(?P<code>-?\d+)\b",
    re.IGNORECASE | re.MULTILINE,
)
# Other phrasings, anywhere in the first lines of the output.
_EXIT_ELSEWHERE = re.compile(
    r"(?:\bexit status (?P<a>-?\d+)\b"  # go run / go build / os/exec
    r"|\bexited with (?:exit )?code:? (?P<b>-?\d+)\b"  # node child_process, docker, make
    r"|\bfailed with exit code:? (?P<c>-?\d+)\b"  # npm, gh, cargo-make
    r"|\breturned non-zero exit status (?P<d>-?\d+)\b)",  # python subprocess
    re.IGNORECASE,
)
_INTERRUPTED = (
    "[request interrupted by user",
    "the user doesn't want to proceed with this tool use",
    "the user doesn't want to take this action",
    "user rejected",
    "operation cancelled by user",
    "request cancelled",
    "tool call cancelled",
)
_BLOCKED = re.compile(
    r"(?:\bhook\b[^\n]{0,80}\b(?:error|blocked|denied|deny)\b"
    r"|\bblocked by\b[^\n]{0,60}\bhook\b"
    r"|\b(?:PreToolUse|BeforeTool)\b[^\n]{0,40}\b(?:blocked|denied)\b)",
    re.IGNORECASE,
)
_TIMEOUT = re.compile(r"\b(?:timed out|timeout exceeded|deadline exceeded)\b", re.IGNORECASE)
# How much of a long output the phrasings above are looked for in (they come first or last).
_HEAD = 2000
_TAIL = 2000


@dataclass(frozen=True, slots=True)
class Failure:
    """Why a call failed: `kind` is one of KINDS; `exit_code` when one was reported."""

    kind: str
    exit_code: int | None = None


def exit_code_in(text: str | None) -> int | None:
    """The exit code a command's output or error text reports, in any known phrasing."""
    if not text or ("xit" not in text and "XIT" not in text):
        return None  # every phrasing has "exit"/"Exit"/"EXIT" (the common case: no exit code)
    window = text if len(text) <= _HEAD + _TAIL else text[:_HEAD] + "\n" + text[-_TAIL:]
    match = _EXIT_LINE.search(window)
    if match:
        return int(match.group("code"))
    match = _EXIT_ELSEWHERE.search(window)
    if match:
        return int(next(g for g in match.groups() if g is not None))
    return None


def _first_lines(text: str) -> str:
    return text[:600].lstrip()[:400].lower()


def classify(
    *,
    is_error: bool = False,
    text: str | None = None,
    structured: Any = None,
    interrupted: bool = False,
    status: str | None = None,
) -> Failure | None:
    """None when the call succeeded, else why it failed.

    `text`: the result's text (tool_result content, hook `error`, Gemini `llmContent`);
    `structured`: the tool's structured result (`toolUseResult`, hook `tool_response`);
    `status`: an agent's own status word ("error", "cancelled", "success").
    """
    body = text or ""
    if isinstance(structured, str) and not body:
        body = structured
    if isinstance(structured, dict):
        if structured.get("interrupted") is True:
            interrupted = True
        code = structured.get("exitCode", structured.get("exit_code"))
        if isinstance(code, int) and not isinstance(code, bool) and code != 0:
            return Failure("exit", code)
    word = (status or "").lower()
    if (
        not (is_error or interrupted or word)
        and "xit" not in body
        and "XIT" not in body
        and not body[:200].lstrip().lower().startswith(_INTERRUPTED)
    ):
        return None  # the common case, a plain success: no flag, no exit code, no interruption
    head = _first_lines(body)
    if interrupted or word in ("cancelled", "canceled") or head.startswith(_INTERRUPTED):
        return Failure("interrupted", exit_code_in(body))
    code = exit_code_in(body)
    if code is not None and code != 0:
        if _TIMEOUT.search(head):
            return Failure("timeout", code)
        return Failure("exit", code)
    if not (is_error or word in ("error", "failed", "failure")):
        return None
    if _BLOCKED.search(head):
        return Failure("blocked", code)
    if _TIMEOUT.search(head):
        return Failure("timeout", code)
    return Failure("error", code)


def failed(**kwargs: Any) -> bool:
    return classify(**kwargs) is not None


def command_key(command: str) -> str:
    """What makes two runs "the same command": the text with its spacing normalised."""
    return " ".join(command.split())


def still_failing(runs: Iterable[tuple[str, bool, float]]) -> list[str]:
    """Commands whose last run failed, given (command, ok, ts) runs; a later success clears it.

    In the order of their last failure.
    """
    last: dict[str, tuple[bool, float]] = {}
    for command, ok, ts in sorted(runs, key=lambda run: run[2]):
        last[command_key(command)] = (ok, ts)
    failing = [(ts, command) for command, (ok, ts) in last.items() if not ok]
    return [command for _, command in sorted(failing)]


def describe(failure: Failure) -> str:
    """Plain words for a person: "exit code 2", "interrupted", "blocked by a hook"."""
    if failure.kind == "exit":
        return f"exit code {failure.exit_code}"
    if failure.kind == "blocked":
        return "blocked by a hook"
    if failure.kind == "timeout":
        return "timed out"
    if failure.kind == "interrupted":
        return "interrupted"
    return "error" if failure.exit_code is None else f"error (exit code {failure.exit_code})"


def counts(outcomes: Sequence[bool]) -> tuple[int, int]:
    """(succeeded, failed) of a list of ok flags."""
    ok = sum(1 for flag in outcomes if flag)
    return ok, len(outcomes) - ok
