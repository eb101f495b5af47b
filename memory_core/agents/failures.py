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

import functools
import re

from memory_core.lazy_pattern import compile_later

# Every tool call's hook asks here: `dataclasses` (inspect, ast, dis) and `typing` would cost it
# more than Python's own start, so the classes below are plain, the types for the checker only.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterable, Sequence
    from typing import Any

KINDS = ("error", "exit", "interrupted", "blocked", "timeout")

# Non-zero exit, as a line of its own (Claude Code puts it first; Gemini CLI in its report).
_EXIT_LINE = compile_later(
    r"^\s*(?:Error:\s*)?Exit[ _]code:?\s*(?P<code>-?\d+)\b",
    re.IGNORECASE | re.MULTILINE,
)
# Other phrasings, anywhere in the first lines of the output.
_EXIT_ELSEWHERE = compile_later(
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
_BLOCKED = compile_later(
    r"(?:\bhook\b[^\n]{0,80}\b(?:error|blocked|denied|deny)\b"
    r"|\bblocked by\b[^\n]{0,60}\bhook\b"
    r"|\b(?:PreToolUse|BeforeTool)\b[^\n]{0,40}\b(?:blocked|denied)\b)",
    re.IGNORECASE,
)
_TIMEOUT = compile_later(r"\b(?:timed out|timeout exceeded|deadline exceeded)\b", re.IGNORECASE)
# How much of a long output the phrasings above are looked for in (they come first or last).
_HEAD = 2000
_TAIL = 2000


class _Value:
    """Compared, hashed and printed by its fields (`__slots__`), never changed once made."""

    __slots__: tuple[str, ...] = ()

    def _fields(self) -> tuple[object, ...]:
        return tuple(getattr(self, name) for name in self.__slots__)

    def __eq__(self, other: object) -> bool:
        if type(other) is not type(self):
            return NotImplemented
        return self._fields() == other._fields()

    def __hash__(self) -> int:
        return hash(self._fields())

    def __repr__(self) -> str:
        fields = ", ".join(f"{name}={getattr(self, name)!r}" for name in self.__slots__)
        return f"{type(self).__name__}({fields})"


class Failure(_Value):
    """Why a call failed: `kind` is one of KINDS; `exit_code` when one was reported."""

    __slots__ = ("exit_code", "kind")

    def __init__(self, kind: str, exit_code: int | None = None) -> None:
        self.kind = kind
        self.exit_code = exit_code


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


# Flags that change only what a test run prints, never whether it passes: a run with them and
# one without are the same run (`pytest -s x` and `pytest x`; `node --test --test-reporter=spec
# test/` and `node --test test/`). `--no-cov`, `-x`, `-p` change how the tests run: not here.
_OUTPUT_ONLY_FLAGS = {
    "-s", "-v", "-vv", "-vvv", "-q", "-qq", "--verbose", "--quiet", "--silent", "--tb",
    "--capture", "--color", "--colors", "--no-color", "--test-reporter", "--reporter", "-R",
    "--format", "-f", "--durations", "-rA", "-ra", "-rf",
}  # fmt: skip
_OUTPUT_FLAGS_WITH_VALUE = {"--reporter", "-R", "--format", "-f", "--test-reporter"}


def output_key(command: str) -> str:
    """`command_key` without the flags that change only what a test run prints (other
    commands keep theirs: `rm -f x` is not `rm x`)."""
    import shlex

    if tests_run_by(command) is None:
        return command_key(command)
    try:
        words = shlex.split(command)
    except ValueError:
        return command_key(command)
    kept: list[str] = []
    skip_value = False
    for word in words:
        if skip_value:
            skip_value = False
            continue
        flag, has_value, _ = word.partition("=")
        if flag in _OUTPUT_ONLY_FLAGS:
            skip_value = flag in _OUTPUT_FLAGS_WITH_VALUE and not has_value
            continue
        kept.append(word)
    return " ".join(kept)


def still_failing(runs: Iterable[tuple[str, bool, float]]) -> list[str]:
    """Commands whose last run failed, given (command, ok, ts) runs; a later success of the same
    command, or of a run of the same tests (`covers`), clears it.

    In the order of their last failure.
    """
    failing: dict[str, tuple[float, str]] = {}
    for command, ok, ts in sorted(runs, key=lambda run: run[2]):
        key = command_key(command)
        if not ok:
            failing[key] = (ts, key)
            continue
        # `covers(key, k)` for every failing k, with the success read once: a session's end
        # compares each success with each failure.
        failing.pop(key, None)
        wide = tests_run_by(key)
        if wide is not None:
            for other in [k for k in failing if _run_covers(wide, tests_run_by(k))]:
                del failing[other]
    return [command for _, command in sorted(failing.values())]


# -- the same test, run another way ------------------------------------------------------------

# Test runners as agents type them, by their first words (after `npx`, `uv run`, `python -m`,
# `bundle exec`, a venv's bin/ folder ...): the canonical name of each.
_RUNNERS = {
    "pytest": "pytest",
    "py.test": "pytest",
    "unittest": "unittest",
    "jest": "jest",
    "vitest": "vitest",
    "mocha": "mocha",
    "rspec": "rspec",
    "phpunit": "phpunit",
}
_TWO_WORD_RUNNERS = {
    ("go", "test"): "go test",
    ("cargo", "test"): "cargo test",
    ("npm", "test"): "npm test",
    ("npm", "t"): "npm test",
    ("yarn", "test"): "npm test",
    ("pnpm", "test"): "npm test",
    ("node", "--test"): "node --test",
    ("mvn", "test"): "mvn test",
    ("gradle", "test"): "gradle test",
    ("./gradlew", "test"): "gradle test",
    ("make", "test"): "make test",
}
# What the text of a command running tests holds: a runner's name, or the `test` (`npm t`:
# `npm`) of a two-word runner.
_RUNNER_MARKS = (*_RUNNERS, "test", "npm")
_NO_QUOTES = str.maketrans("", "", "'\"\\")
_LAUNCHERS = {"npx", "pnpx", "bunx", "exec", "run", "uv", "poetry", "pipenv", "bundle", "hatch"}
# Flags that choose which tests run (with their value): they are part of the selection.
# Every other flag (-s, -v, -x, --tb=short, --no-cov, --silent, -count=1 ...) changes how the
# tests run or report, not which tests they are.
_SELECTING_FLAGS = {
    "-k", "-m", "-run", "--run", "-t", "--testNamePattern", "--grep", "-g", "--filter",
    "-e", "--example", "--tag", "-Dtest", "--tests", "-p", "--package",
}  # fmt: skip


# Flags that take a value as the next word (`--format documentation`): the value is no target.
_FLAGS_WITH_VALUE = {
    "--format", "-f", "--reporter", "-R", "--color", "--junitxml", "--out", "-o", "--config",
    "-c", "--maxfail", "--timeout", "--require", "-r", "--seed", "--order", "--rootdir",
    "--testPathPattern", "--project", "--workers", "-n", "-count", "-timeout", "-tags",
}  # fmt: skip


class RunOfTests(_Value):
    __slots__ = ("runner", "selection", "targets")

    def __init__(self, runner: str, selection: tuple[str, ...], targets: tuple[str, ...]) -> None:
        self.runner = runner
        self.selection = selection
        self.targets = targets


@functools.lru_cache(maxsize=4096)
def tests_run_by(command: str) -> RunOfTests | None:
    """What a command runs when it runs tests (runner, selecting flags, targets), else None.

    Kept per command: a session's open failures compare every success with every failure
    (`still_failing`), and splitting the same commands again was most of closing a session."""
    import shlex

    if any(mark in command for mark in ("&&", "||", ";", "|", "`", "$(")):
        return None  # a pipeline: its outcome is not one test run's
    # A word shlex makes is a piece of the text once its quotes and escapes are taken out
    # (`py"test"` is `pytest`): without a runner's name in that, no word is a runner (most
    # commands agents run), and splitting a long command with shlex is slow.
    unquoted = command.translate(_NO_QUOTES)
    if not any(mark in unquoted for mark in _RUNNER_MARKS):
        return None
    try:
        words = shlex.split(command)
    except ValueError:
        return None
    while words and "=" in words[0] and not words[0].startswith("-"):
        words = words[1:]  # FOO=1 pytest ...
    runner = None
    rest: list[str] = []
    for index, word in enumerate(words):
        name = word.rsplit("/", 1)[-1]
        pair = (word, words[index + 1]) if index + 1 < len(words) else None
        if pair in _TWO_WORD_RUNNERS:
            runner, rest = _TWO_WORD_RUNNERS[pair], words[index + 2 :]
            break
        if name in _RUNNERS:
            runner, rest = _RUNNERS[name], words[index + 1 :]
            break
        if name in _LAUNCHERS or name.startswith("python") or word == "-m" or index == 0:
            continue
        return None
    if runner is None:
        return None
    if runner == "vitest" and rest[:1] == ["run"]:
        rest = rest[1:]
    selection: list[str] = []
    targets: list[str] = []
    words_left = iter(rest)
    for word in words_left:
        if word == "--":
            continue
        if word.startswith("-"):
            flag, _, value = word.partition("=")
            if flag in _SELECTING_FLAGS:
                selection.append(f"{flag}={value or next(words_left, '')}")
            elif flag in _FLAGS_WITH_VALUE and not value:
                next(words_left, None)
            continue
        targets.append(word.removeprefix("./") if word != "./..." else "...")
    return RunOfTests(runner, tuple(selection), tuple(targets))


def _target_covers(wide: str, narrow: str) -> bool:
    if wide in (".", "...", "") or wide == narrow:
        return True
    base = wide.removesuffix("/...").rstrip("/")
    # `go test ./pkg/...` runs ./pkg itself too; `pytest tests/` the folder `tests`.
    return narrow == base or narrow.startswith((base + "/", base + "::", base + ":"))


def covers(success: str, failed: str) -> bool:
    """True when `success` passing shows that `failed` would pass now: the same command, or a
    run of the same tests (or more of them) by the same runner, whatever flags only change how
    they run or report (`pytest tests/x.py` covers `pytest -s tests/x.py::test_a`)."""
    if command_key(success) == command_key(failed):
        return True
    wide = tests_run_by(success)
    return wide is not None and _run_covers(wide, tests_run_by(failed))


def _run_covers(wide: RunOfTests, narrow: RunOfTests | None) -> bool:
    """Whether the run of tests `wide` passing shows that `narrow` would pass (`covers`)."""
    if narrow is None or wide.runner != narrow.runner:
        return False
    if wide.selection and wide.selection != narrow.selection:
        return False
    if not wide.targets:
        return True  # the whole suite (with the same selection, if any) passed
    if not narrow.targets:
        return False
    return all(any(_target_covers(w, n) for w in wide.targets) for n in narrow.targets)


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
