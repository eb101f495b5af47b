"""What a Codex CLI tool call's output says: failed or not, its exit code, the files a patch
names. Shared by the rollout ingest (`codex_rollouts`) and the hooks, which must read a call
the same way whichever of them records it first; kept light (no ingest machinery), as a hook is
a cold process on every tool call.
"""

from __future__ import annotations

import json
import re

TYPE_CHECKING = False  # `typing` costs a cold hook a third of Python's start
if TYPE_CHECKING:
    from typing import Any

# The exit status a shell output reports in its header (first lines only: the command's own
# output below it may say anything): `Exit code: N` (shell, shell_command, apply_patch) or
# `Process exited with code N` (exec_command).
_EXIT_HEADER = re.compile(
    r"^(?:Exit code:\s*|Process exited with code\s+)(-?\d+)\s*$", re.IGNORECASE | re.MULTILINE
)
_PATCH_FILE = re.compile(
    r"^\*\*\* (?:Add|Update|Delete) File: (.+?)\s*$|^\*\*\* Move to: (.+?)\s*$"
)
# Codex's words for a call it could not run at all.
_NOT_RUN = ("execution error", "failed to parse function arguments", "unsupported call")


class Outcome:
    """How a call ended: `text` is kept only when it failed (the error worth tracking).

    A plain class, not a dataclass: a Codex tool call's hook reads its response with it, and
    `dataclasses` loads inspect, ast, dis and tokenize, as much again as Python's own start."""

    __slots__ = ("failed", "interrupted", "structured", "text")

    def __init__(
        self,
        failed: bool,
        text: str = "",
        interrupted: bool = False,
        structured: dict[str, Any] | None = None,
    ) -> None:
        self.failed = failed
        self.text = text
        self.interrupted = interrupted
        self.structured = structured

    def _fields(self) -> tuple[object, ...]:
        return (self.failed, self.text, self.interrupted, self.structured)

    def __eq__(self, other: object) -> bool:
        if other.__class__ is not self.__class__:
            return NotImplemented
        assert isinstance(other, Outcome)
        return self._fields() == other._fields()

    __hash__ = None  # type: ignore[assignment]  # mutable, as the dataclass was

    def __repr__(self) -> str:
        return (
            f"Outcome(failed={self.failed!r}, text={self.text!r}, "
            f"interrupted={self.interrupted!r}, structured={self.structured!r})"
        )


def content_text(content: Any) -> str:
    """The text of content items (`input_text`, `output_text`, `text`), or a plain string."""
    if isinstance(content, str):
        return content
    parts = []
    for item in content if isinstance(content, list) else []:
        if isinstance(item, dict) and isinstance(item.get("text"), str):
            parts.append(item["text"])
    return "\n".join(parts)


def output_text(output: Any) -> str:
    """A call output's text: a string, `{content|output|text}`, or content items."""
    if isinstance(output, str):
        return output
    if isinstance(output, dict):
        for key in ("content", "output", "text"):
            if isinstance(output.get(key), str):
                return str(output[key])
        return content_text(output.get("content_items", output.get("content")))
    return content_text(output)


def read_output(output: Any, exit_code: int | None = None) -> Outcome:
    """A call's outcome from its output (a rollout's `..._output` line), with the exit code
    Codex reported: in the output, else `exit_code` (its exec_command_end event)."""
    text = output_text(output)
    reported = exit_code
    exit_code = None
    body = text
    parsed: Any = None
    if text.startswith("{"):
        try:
            parsed = json.loads(text)
        except (ValueError, RecursionError):
            parsed = None
    if isinstance(parsed, dict):
        metadata = parsed.get("metadata")
        if isinstance(metadata, dict) and type(metadata.get("exit_code")) is int:
            exit_code = metadata["exit_code"]  # 0.4x-0.5x: {"output", "metadata"}
            inner = parsed.get("output")
            body = inner if isinstance(inner, str) else text
        if parsed.get("isError") is True or parsed.get("is_error") is True:
            return Outcome(True, text)  # an MCP result
    if exit_code is None:
        match = _EXIT_HEADER.search("\n".join(text.splitlines()[:6]))
        if match:
            exit_code = int(match.group(1))
    if exit_code is None:
        exit_code = reported
    head = text.lstrip()[:80].lower()
    if head == "aborted" or head.startswith("aborted by user"):
        return Outcome(False, text, interrupted=True)
    if exit_code is not None:
        # The exit code decides; the output's own words ("exit status 1" in a test log) do not.
        failed = exit_code != 0
        return Outcome(failed, body if failed else "", structured={"exit_code": exit_code})
    if head.startswith(_NOT_RUN):
        return Outcome(True, text)
    # No exit code and no error: a success. Its text is not searched for failure words (a
    # file read or a web page may say "exit status 1"); only a command reports an exit.
    return Outcome(False)


def read_hook_response(response: Any) -> Outcome:
    """A PostToolUse hook's `tool_response`, read as the rollout's output of the same call."""
    if isinstance(response, dict):
        code = response.get("exit_code", response.get("exitCode"))
        text = output_text(response)
        if type(code) is int:
            return Outcome(code != 0, text if code else "", structured={"exit_code": code})
        if any(response.get(k) is True for k in ("isError", "is_error", "interrupted")):
            return Outcome(
                response.get("interrupted") is not True,
                text or json.dumps(response)[:4000],
                interrupted=response.get("interrupted") is True,
            )
        return read_output(text) if text else Outcome(False)
    return read_output(response)


def patch_files(call_input: dict[str, Any]) -> list[str]:
    """The files an apply_patch call names (added, updated, deleted, moved to), in order.

    Reads whichever value holds the patch: the ingest's `patch`, a hook's `command`/`input`.
    """
    files: list[str] = []
    for value in call_input.values():
        if isinstance(value, str) and "*** Begin Patch" in value:
            for line in value.splitlines():
                match = _PATCH_FILE.match(line)
                if match:
                    files.append(match.group(1) or match.group(2))
    return list(dict.fromkeys(files))
