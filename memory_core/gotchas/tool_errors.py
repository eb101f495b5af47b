"""The error that matters inside the output of the tools agents run most.

A failing command prints banners, progress, warnings, stack frames and summaries around the one
line that says what went wrong. `key_error` finds that line and where it points, for:

- pytest: the first error under its ERRORS or FAILURES section (`E   ModuleNotFoundError: ...`),
  never the `==== test session starts ====` banner or the summary;
- Python tracebacks, chained ones included: the exception raised last, whatever its name
  (`click.exceptions.BadParameter: ...`), located at the innermost frame of its traceback;
- TypeScript (`src/a.ts(3,13): error TS2304: ...`), mypy (`a.py:9: error: ...`), ruff
  (`F401 ... --> a.py:1:8`), cargo/rustc (`error[E0425]: ... --> src/main.rs:2:17`), go
  (`./main.go:6:14: undefined: total`), node (`TypeError: ...` under the source excerpt), and
  npm, whose own lines only say that a script failed: the tool's error inside is the one.

The corpus these rules are tested on is real output, captured by running the tools on small
broken programs (tests/fixtures/tool_output/capture.sh).
"""

from __future__ import annotations

import re
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class ToolError:
    """The line that says what went wrong, and the code location it names (when it names one)."""

    message: str
    path: str | None = None
    line: int | None = None


_PYTEST_SECTION = re.compile(r"^=+ (ERRORS|FAILURES) =+$", re.MULTILINE)
_PYTEST_SECTION_END = re.compile(r"^=+ .* =+$", re.MULTILINE)
_PYTEST_E = re.compile(r"^E\s+(\S.*)$")
# "tests/calc.py:2: ZeroDivisionError" (the failure's last frame) or "t.py:1: in <module>".
_PYTEST_LOCATION = re.compile(r"^(?P<path>[^\s:][^:]*\.py):(?P<line>\d+): (?:in \S+|[\w.]+)$")

_TRACEBACK = "Traceback (most recent call last):"
_PY_FRAME = re.compile(r'^\s*File "(?P<path>[^"]+)", line (?P<line>\d+)')
# The exception line ending a traceback: a (dotted) name at column 0, then ": message" or nothing.
_PY_EXCEPTION = re.compile(r"^(?P<name>[A-Za-z_][\w]*(?:\.[A-Za-z_]\w*)*)(?::\s?(?P<text>.*))?$")

_TSC = re.compile(
    r"^(?P<path>[^\s(][^(\n]*?)\((?P<line>\d+),(?P<col>\d+)\): (?P<msg>error TS\d+: .*)$",
    re.MULTILINE,
)
_MYPY = re.compile(
    r"^(?P<path>[^\s:][^:]*\.pyi?):(?P<line>\d+)(?::\d+)?: (?P<msg>error: .*)$", re.MULTILINE
)
_RUST = re.compile(
    r"^(?P<msg>error(?:\[E\d+\])?: .*)\n\s*--> (?P<path>[^:\n]+):(?P<line>\d+):\d+", re.MULTILINE
)
_RUFF = re.compile(
    r"^(?P<msg>[A-Z]{1,4}\d{3,4} .*)\n\s*--> (?P<path>[^:\n]+):(?P<line>\d+):\d+", re.MULTILINE
)
_RUFF_CONCISE = re.compile(
    r"^(?P<path>[^\s:][^:]*\.pyi?):(?P<line>\d+):\d+: (?P<msg>[A-Z]{1,4}\d{3,4} .*)$", re.MULTILINE
)
_GO = re.compile(
    r"^(?P<path>\.{0,2}/?[\w./-]+\.go):(?P<line>\d+):\d+: (?P<msg>.+)$",
    re.MULTILINE,
)
# node prints the failing source line, a caret, a blank line, then the error.
_NODE_HEADER = re.compile(r"^(?P<path>/[^\s:]+\.[cm]?[jt]s):(?P<line>\d+)$", re.MULTILINE)
_JS_ERROR = re.compile(
    r"^(?P<msg>(?:[A-Z]\w*)?(?:Error|Exception)(?: \[\w+\])?: .*)$", re.MULTILINE
)


def _python_traceback(text: str) -> ToolError | None:
    """The exception raised last (the last traceback's), at its innermost frame."""
    start = text.rfind(_TRACEBACK)
    if start < 0:
        return _python_syntax_error(text)
    lines = text[start:].splitlines()[1:]
    path: str | None = None
    line_no: int | None = None
    for line in lines:
        frame = _PY_FRAME.match(line)
        if frame:
            path, line_no = frame.group("path"), int(frame.group("line"))
            continue
        if not line or line[0].isspace():
            continue  # quoted source and carets
        exception = _PY_EXCEPTION.match(line.rstrip())
        if exception:
            return ToolError(line.rstrip(), path, line_no)
    return None


_PY_SYNTAX = re.compile(
    r'^\s*File "(?P<path>[^"]+)", line (?P<line>\d+)\n(?:.*\n){0,3}?'
    r"(?P<msg>(?:SyntaxError|IndentationError|TabError): .*)$",
    re.MULTILINE,
)


def _python_syntax_error(text: str) -> ToolError | None:
    """Python's report of a file it could not parse: no traceback, the file and a caret."""
    match = _PY_SYNTAX.search(text)
    if match is None:
        return None
    return ToolError(match.group("msg").strip(), match.group("path"), int(match.group("line")))


def _pytest(text: str) -> ToolError | None:
    section = _PYTEST_SECTION.search(text)
    if section is None:
        return None
    rest = text[section.end() :]
    end = None
    for match in _PYTEST_SECTION_END.finditer(rest):
        end = match.start()
        break
    body = rest[:end].splitlines()
    message: str | None = None
    path: str | None = None
    line_no: int | None = None
    for index, line in enumerate(body):
        found = _PYTEST_E.match(line)
        if found and message is None:
            message = found.group(1).strip()
            # The location pytest prints after the E lines (the failure's last frame), else the
            # last one before them (a collection error's import line).
            for after in body[index + 1 :]:
                where = _PYTEST_LOCATION.match(after.strip())
                if where:
                    path, line_no = where.group("path"), int(where.group("line"))
                    break
                if after.startswith("_____"):
                    break
            if path is None:
                for before in reversed(body[:index]):
                    where = _PYTEST_LOCATION.match(before.strip())
                    if where:
                        path, line_no = where.group("path"), int(where.group("line"))
                        break
            break
    if message is None:
        return None
    return ToolError(message, path, line_no)


def _first(pattern: re.Pattern[str], text: str) -> ToolError | None:
    match = pattern.search(text)
    if match is None:
        return None
    return ToolError(match.group("msg").strip(), match.group("path"), int(match.group("line")))


def _node(text: str) -> ToolError | None:
    error = _JS_ERROR.search(text)
    if error is None:
        return None
    header = _NODE_HEADER.search(text, 0, error.start())
    if header is not None:
        return ToolError(
            error.group("msg").strip(), header.group("path"), int(header.group("line"))
        )
    return ToolError(error.group("msg").strip())


def key_error(text: str) -> ToolError | None:
    """The error that matters in a tool's output, or None when no known shape is in it."""
    if not text:
        return None
    for finder in (_pytest, _python_traceback):
        found = finder(text)
        if found is not None:
            return found
    for pattern in (_TSC, _RUST, _MYPY, _RUFF, _RUFF_CONCISE, _GO):
        found = _first(pattern, text)
        if found is not None:
            return found
    return _node(text)
