"""From an error message to what identifies it: its meaningful line, a normal form, a hash, a
title, a category, and the places in code it points at.

Two occurrences of "the same error" differ in numbers, quoted values, hex ids, temporary and
absolute paths; the normal form replaces those with placeholders so they hash alike. The title
keeps the error's own words ("TypeError: x is not a function"): people recognise their errors by
them, so it is never lower-cased, stripped of punctuation or cut mid-word.
"""

from __future__ import annotations

import hashlib
import re
from pathlib import Path

from memory_core.gotchas.tool_errors import key_error, unwrap
from memory_core.lazy_pattern import compile_later
from memory_core.values import Value

TITLE_MAX = 120

# Lines that carry no meaning of their own: traceback headers and frames, separators, prompts.
_NOISE_LINE = compile_later(
    r"""^\s*(?:
        Traceback\ \(most\ recent\ call\ last\):
      | File\ ".*",\ line\ \d+.*
      | at\ .+                                  # Node / Java stack frames
      | During\ handling\ of\ the\ above\ exception.*
      | The\ above\ exception\ was\ the\ direct\ cause.*
      | [-=_*~^#>|.\s]*                          # separators, carets, blank
      | \$\ .*                                  # a shell prompt echoing the command
    )$""",
    re.VERBOSE,
)
# An error named by its type, anywhere in a line: "TypeError: x", "E   KeyError: 'a'",
# "FAILED t.py::test - ValueError: bad". The type must end the line or be followed by ": ".
_TYPED_ERROR = compile_later(
    r"(?:^|[\s(\[-])(?P<text>[A-Za-z_][\w.]*(?:Error|Exception|Failure|Panic)(?::\s|$))"
)
# Source lines pytest and tracebacks quote ("    raise ValueError: ..." never happens, but
# ">       assert f(x)" and "    return a < b" do): not the error itself.
_FRAME_SOURCE = compile_later(r"^(?:>\s|\s{4})")
_PYTEST_E = compile_later(r"^E\s{2,}(\S.*)$")
_ERROR_WORD = compile_later(r"^(?:error|fatal|panic|failed|failure)\b", re.IGNORECASE)
# Headers and progress lines tools print before the error.
_HEADER_LINE = compile_later(
    r"""^(?:
        [=_*~-]{3,}.*[=_*~-]{3,}          # ===== test session starts =====
      | Exit\ code\ \d+
      | collected\ \d+\ items?
      | platform\ \S+\ --\ .*
      | rootdir:.*
      | \S+\s+[.FEsxX]+\s+\[\s*\d+%\]     # tests/test_a.py F.  [100%]
    )$""",
    re.VERBOSE,
)
# A Python exception line at the end of a traceback: `pkg.module.SomeError: message`.
_EXCEPTION_LINE = compile_later(r"^[A-Za-z_][\w.]*(?:Error|Exception|Warning|Interrupt|Exit)\b.*")

_PLACEHOLDERS: list[tuple[re.Pattern[str], str]] = [
    # Temporary and absolute paths (POSIX, Windows, file URLs), before numbers eat their digits.
    (compile_later(r"file://\S+"), "<path>"),
    (compile_later(r"(?<![\w.])(?:[A-Za-z]:)?(?:[\\/][\w.@+~-]+){2,}[\\/]?"), "<path>"),
    (compile_later(r"(?<![\w.])~[\\/][\w.@+~/\\-]+"), "<path>"),
    (
        compile_later(r"\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b", re.I),
        "<id>",
    ),
    (compile_later(r"\b0x[0-9a-f]+\b", re.I), "<hex>"),
    (compile_later(r"\b(?=[0-9a-f]*\d)(?=[0-9a-f]*[a-f])[0-9a-f]{7,}\b", re.I), "<hex>"),
    # Quoted values. A single quote counts as a quote only where it cannot be an apostrophe
    # ("can't", "it's"): not preceded by a letter, and the closing one not followed by one.
    (compile_later(r'"(?:[^"\\\n]|\\.)*"'), "<str>"),
    (compile_later(r"(?<!\w)'(?:[^'\\\n]|\\.)*'(?!\w)"), "<str>"),
    (compile_later(r"`[^`\n]*`"), "<str>"),
    (compile_later(r"\b\d{1,3}(?:\.\d{1,3}){3}\b"), "<ip>"),
    # Numbers with a unit glued on ("120ms", "3.5MB", "80%").
    (
        compile_later(
            r"(?<![\w<])\d+(?:\.\d+)?(?=(?:ns|us|µs|ms|s|m|h|d|b|kb|mb|gb|kib|mib|gib|px|%)\b)",
            re.I,
        ),
        "<n>",
    ),
    (compile_later(r"(?<![\w<])[-+]?\d+(?:\.\d+)?(?:e[-+]?\d+)?(?![\w>])", re.I), "<n>"),
    (compile_later(r"(?<=[A-Za-z_])\d+\b"), "<n>"),
]
_SPACES = compile_later(r"\s+")


def meaningful_line(message: str) -> str:
    """The line of `message` that says what went wrong.

    First the error a known tool's output names (`tool_errors.key_error`: pytest's ERRORS and
    FAILURES sections, the exception raised last in a traceback whatever its name, compilers
    and linters); else, in order: the exception line at the end of a Python traceback; the first line naming an
    error type (`TypeError: ...`, also inside pytest's `E   ...` or `FAILED ... - X: ...`
    lines, from the type on); pytest's first `E` line; a line starting with error/fatal/panic;
    else the first line that is not a frame, a separator, a header or a prompt.
    """
    found = key_error(message)
    if found is not None:
        return found.message
    # Without the wrappers' lines, unless they are all there is (`npm ERR! code ELIFECYCLE`).
    own = unwrap(message)
    lines = [line.rstrip() for line in (own if own.strip() else message).splitlines()]
    if any(line.startswith("Traceback (most recent call last)") for line in lines):
        for line in reversed(lines):
            if _EXCEPTION_LINE.match(line.strip()):
                return line.strip()
    for line in lines:
        if _NOISE_LINE.match(line) or _FRAME_SOURCE.match(line):
            continue
        typed = _TYPED_ERROR.search(line)
        if typed:
            return line[typed.start("text") :].strip()
    for line in lines:
        pytest_e = _PYTEST_E.match(line)
        if pytest_e:
            return pytest_e.group(1).strip()
    for line in lines:
        if _ERROR_WORD.match(line.strip()):
            return line.strip()
    for line in lines:
        if line.strip() and not _NOISE_LINE.match(line) and not _HEADER_LINE.match(line.strip()):
            return line.strip()
    for line in lines:
        if line.strip():
            return line.strip()
    return ""


def normalize(message: str) -> str:
    """The normal form of an error: its meaningful line with variable parts as placeholders."""
    return normal_form(meaningful_line(message))


def normal_form(text: str) -> str:
    """A meaningful line (`meaningful_line`) with its variable parts as placeholders."""
    for pattern, placeholder in _PLACEHOLDERS:
        text = pattern.sub(placeholder, text)
    return _SPACES.sub(" ", text).strip()


def error_hash(normalized: str) -> str:
    return hashlib.sha256(normalized.encode("utf-8")).hexdigest()[:16]


def title_for(message: str) -> str:
    """A title in the error's own words, shortened in the middle if it is long (see `shorten`)."""
    line = _SPACES.sub(" ", meaningful_line(message)).strip() or "Recurring error"
    return shorten(line, TITLE_MAX)


_LONG_PATH = compile_later(r"(?<![\w.])/(?:[\w.@+~-]+/){3,}[\w.@+~-]+")


def shorten(line: str, limit: int) -> str:
    """`line` cut to `limit` characters in its middle, on word boundaries.

    An error says what kind it is first and what it is about last (`OperationalError: connection
    to server at "127.0.0.1", port 5433 failed: FATAL: database "engram_test" does not exist`):
    both ends are kept whole, and the words between them give way.
    """
    line = " ".join(line.split())
    if len(line) <= limit:
        return line
    # Long absolute paths first give way to their last two parts (the file is what identifies).
    line = _LONG_PATH.sub(lambda m: "…/" + "/".join(m.group(0).split("/")[-2:]), line)
    if len(line) <= limit:
        return line
    # The head: the error's kind and its first words, up to a third of the room.
    kind = line.find(": ")
    head = line[: limit // 3]
    if " " in head[max(0, kind) + 2 :]:
        head = head[: head.rindex(" ")]
    elif 0 <= kind < len(head):
        head = head[: kind + 1]  # the first word after the kind would be cut: the kind alone
    room = max(1, limit - len(head) - 3)
    tail = line[-room:]
    space = tail.find(" ")
    if 0 <= space < room // 3 and not line[-room - 1].isspace():
        tail = tail[space + 1 :]  # start the tail on a whole word
    return f"{head} … {tail}"


CATEGORIES = ("build", "test", "lint", "runtime", "integration", "security", "general")


def _vocabulary(text: str) -> frozenset[str]:
    return frozenset(text.split())


# Whole words only: "latest" is not "test", "rapid" is not "api". Checked in this order, so an
# assertion failing inside a test run is a test problem before it is a runtime one, and an
# exception's own type name says more than a word like "request" in its message.
_CATEGORY_WORDS: list[tuple[str, frozenset[str]]] = [
    (
        "security",
        _vocabulary(
            "security vulnerability vulnerabilities cve xss csrf injection unauthorized forbidden "
            "secret secrets credentials csp ssrf"
        ),
    ),
    (
        "test",
        _vocabulary(
            "test tests testing pytest jest vitest mocha unittest assert assertion assertionerror "
            "spec specs fixture fixtures"
        ),
    ),
    (
        "lint",
        _vocabulary(
            "lint linter linting eslint ruff flake8 pylint mypy prettier stylelint pyright clippy typecheck"
        ),
    ),
    (
        "build",
        _vocabulary(
            "build builds compile compiler compilation webpack vite rollup esbuild tsc bundle bundler "
            "linker cmake make makefile gradle maven cargo npm pip setuptools wheel modulenotfounderror "
            "importerror dependency dependencies"
        ),
    ),
    (
        "runtime",
        _vocabulary(
            "typeerror valueerror keyerror attributeerror indexerror nameerror referenceerror rangeerror "
            "zerodivisionerror runtimeerror recursionerror memoryerror nullpointerexception segfault "
            "segmentation panic"
        ),
    ),
    (
        "integration",
        _vocabulary(
            "api apis http https endpoint request response status webhook graphql grpc cors econnrefused "
            "econnreset etimedout connection network socket database postgres mysql redis timeout timedout"
        ),
    ),
    ("runtime", _vocabulary("runtime exception crash undefined null none traceback oserror")),
]
_WORD = compile_later(r"[A-Za-z][A-Za-z0-9]*")


def words(text: str) -> set[str]:
    """Lower-cased whole words of `text` (underscores, dots and digits split words)."""
    return {match.group(0).lower() for match in _WORD.finditer(text)}


def infer_category(text: str) -> str:
    found = words(text)
    for category, vocabulary in _CATEGORY_WORDS:
        if found & vocabulary:
            return category
    return "general"


SEVERITIES = ("critical", "high", "medium", "low")
SEVERITY_RANK = {name: rank for rank, name in enumerate(SEVERITIES)}


def infer_severity(category: str) -> str:
    return "high" if category == "security" else "medium"


class ErrorLocation(Value):
    """Where an error message says the error is: `path` as written in the message, `line`
    1-based as tools print it."""

    __slots__ = ("column", "line", "path")
    FIELDS = ("path", "line", "column")

    def __init__(self, path: str, line: int, column: int | None = None) -> None:
        self.path = path
        self.line = line
        self.column = column


_PYTHON_FRAME = compile_later(r'File "(?P<path>[^"]+)", line (?P<line>\d+)')
# file:line[:col] as printed by compilers, linters, pytest, mypy and Node stacks ("at f (x.js:3:9)").
_FILE_LINE = compile_later(
    r"(?P<path>(?:[A-Za-z]:)?[\w.@+~/\\-]*[\w-]\.[A-Za-z0-9]{1,8}):(?P<line>\d+)(?::(?P<col>\d+))?"
)


# What `_FILE_LINE` reads of a URL: its scheme's last letter taken for a drive, then "//".
_URL_PATH = compile_later(r"(?:[A-Za-z]:)?//")
_PYTEST_FRAME = compile_later(r"^E {2,}\S|^\S+\.py:\d+: in \w+", re.MULTILINE)


def error_locations(message: str) -> list[ErrorLocation]:
    """Every code location `message` points at, most specific first.

    Python frames come innermost first (the last frame is where it broke); then every
    `file:line[:col]` in the order written.
    """
    found: list[ErrorLocation] = []
    # The location of the error that matters (the last exception's innermost frame, the
    # compiler's file:line) comes first, so that title and anchor name the same error.
    key = key_error(message)
    if key is not None and key.path and key.line:
        found.append(ErrorLocation(key.path, key.line))
    frames = [
        ErrorLocation(m.group("path"), int(m.group("line")))
        for m in _PYTHON_FRAME.finditer(message)
    ]
    found.extend(reversed(frames))
    located = []
    for match in _FILE_LINE.finditer(message):
        path = match.group("path")
        if _URL_PATH.match(path):
            continue  # a web address (`https://x.io/a.js:5` is read as "s://x.io/a.js")
        col = match.group("col")
        located.append(ErrorLocation(path, int(match.group("line")), int(col) if col else None))
    # pytest prints a failure's frames outermost first ("tests/test_x.py:7:", then
    # "app/x.py:8: in f", then the "E   TypeError" line): the innermost is the last one.
    if _PYTEST_FRAME.search(message):
        located.reverse()
    found.extend(located)
    return found


def resolve_location(root: Path, location: ErrorLocation) -> tuple[str, int] | None:
    """(workspace-relative path, 0-based line) of a location inside `root` that exists, else None."""
    raw = location.path.replace("\\", "/")
    if raw.startswith("file://"):
        raw = raw[len("file://") :]
    candidate = Path(raw)
    if not candidate.is_absolute():
        candidate = root / candidate
    try:
        resolved = candidate.resolve()
        relative = resolved.relative_to(root)
    except (OSError, ValueError):
        return None
    if not resolved.is_file() or relative.parts[:1] in ((".git",), (".engram",)):
        return None
    return relative.as_posix(), max(0, location.line - 1)
