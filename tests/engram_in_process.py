"""Run the `engram` command inside the test process, as a fresh process would run it.

The CLI tests used to start `python -m memory_core ...` for every command: about 0.2 s each,
and invisible to mutation testing (mutmut only sees code that runs in the test process). This
runs the same entry point (`memory_core.cli.entry.main`, what the `engram` script and
`python -m memory_core` call) in the test process, with what a process would have had:

- its own command line (`sys.argv`), working folder and environment, put back afterwards;
- stdin, stdout and stderr of its own: stdin a pipe (never a terminal) holding the text given,
  encoded as `subprocess.run(input=...)` encodes it, read back through the encoding and errors
  Python gives a child process here; stdout and stderr decoded as `subprocess.run(text=True)`
  decodes them (universal newlines);
- the exit status Python gives `sys.exit(main())`: a returned or `SystemExit` code (an int
  taken modulo 256, None as 0, anything else printed on stderr as 1), and for an exception
  that escapes, its traceback on stderr and status 1, as the interpreter prints it;
- Python's own warning filters (what a process prints on stderr, not what pytest collects);
- none of what an earlier command left in the process: the per-process caches of
  `memory_core` (`PROCESS_CACHES`) are emptied before each command.

What only a process shows stays with `run_cli_process` (tests/conftest.py): the language
server and MCP server over stdio, a closed file descriptor 0, signals, parallel processes, the
hook's import budget, and environments that change Python's own start (`PYTHON*`, the locale).
docs/testing.md ("How the CLI tests run engram") lists which tests run which way.
"""

from __future__ import annotations

import io
import json
import locale
import os
import subprocess
import sys
import threading
import traceback
import warnings
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager, suppress
from functools import cache
from pathlib import Path
from typing import Any

import memory_core

MAIN_FILE = str(Path(memory_core.__file__).with_name("__main__.py"))

# Environment variables that change how Python itself starts (stdio encodings, UTF-8 mode, the
# locale, warnings, time zone): a command given one of them runs in a real process instead.
PROCESS_ONLY_ENV_PREFIXES = ("PYTHON", "LC_", "LANG", "TZ")
# Commands that serve a client over stdio for as long as it stays connected.
PROCESS_ONLY_COMMANDS = frozenset({"lsp", "mcp"})
# Each process has its own, so a command gets its own too.
STREAM_NAMES = ("stdin", "stdout", "stderr", "__stdin__", "__stdout__", "__stderr__")


def _reset_attribute(module: str, name: str, fresh: Callable[[], object]) -> Callable[[], None]:
    def reset() -> None:
        loaded = sys.modules.get(module)
        if loaded is not None:
            setattr(loaded, name, fresh())

    return reset


def _clear(module: str, name: str) -> Callable[[], None]:
    def clear() -> None:
        loaded = sys.modules.get(module)
        if loaded is not None:
            getattr(loaded, name).clear()

    return clear


def _close_deferred_stores() -> None:
    loaded = sys.modules.get("memory_core.store")
    if loaded is not None:
        loaded.close_deferred()


# State `memory_core` keeps for the life of a process, which a new `engram` process starts
# without. Each entry: (module, attribute) and how it is emptied. tests/cli/test_in_process.py
# checks that every module-level cache of memory_core is either here or in PURE_CACHES, so a
# new one cannot leak from one command into the next unnoticed.
PROCESS_CACHES: dict[tuple[str, str], Callable[[], None]] = {
    # Decompressed checkpoint packs by (store folder, pack id): a store made again at the
    # same path numbers its packs from 1 again.
    ("memory_core.checkpoints.storage", "_PACKS"): _clear(
        "memory_core.checkpoints.storage", "_PACKS"
    ),
    # The team file's gotchas by path, checked by mtime and size.
    ("memory_core.gotchas.team", "_cache"): _clear("memory_core.gotchas.team", "_cache"),
    # A file's committed content hash for 5 s: a commit in between would not be seen.
    ("memory_core.sessions.net", "_committed"): _clear("memory_core.sessions.net", "_committed"),
    # Table columns by database path and schema version.
    ("memory_core.quota", "_COLUMNS"): _clear("memory_core.quota", "_COLUMNS"),
    # The watchman socket found by asking watchman once.
    ("memory_core.journal", "_SOCKET"): _reset_attribute(
        "memory_core.journal", "_SOCKET", lambda: [None]
    ),
    # The transcript decoder switches to orjson once a process has read enough bytes.
    ("memory_core.agents.transcripts", "_orjson"): _reset_attribute(
        "memory_core.agents.transcripts", "_orjson", lambda: None
    ),
    ("memory_core.agents.transcripts", "_bytes_to_read"): _reset_attribute(
        "memory_core.agents.transcripts", "_bytes_to_read", lambda: 0
    ),
    # Checkpoint listings are decoded with orjson once a process has read 32 of them.
    ("memory_core.checkpoints.trees", "_LISTINGS_READ"): _reset_attribute(
        "memory_core.checkpoints.trees", "_LISTINGS_READ", lambda: [0]
    ),
    ("memory_core.checkpoints.trees", "_ORJSON"): _reset_attribute(
        "memory_core.checkpoints.trees", "_ORJSON", list
    ),
    # Watchman let a request time out: the capture stops asking it for a while.
    ("memory_core.journal", "_UNANSWERED"): _reset_attribute(
        "memory_core.journal", "_UNANSWERED", lambda: [False]
    ),
    # Set from each command line before it is parsed.
    ("memory_core.cli.main", "_JSON_ERRORS"): _reset_attribute(
        "memory_core.cli.main", "_JSON_ERRORS", lambda: False
    ),
    # Argument parsers the resident server builds before it forks; a cold process builds its own.
    ("memory_core.cli.main", "_PREBUILT"): _clear("memory_core.cli.main", "_PREBUILT"),
    # Closes a resident child leaves until its client has its answer: a cold process closes
    # each store when the command is done with it.
    ("memory_core.store", "_deferred_closes"): _close_deferred_stores,
    # Work a resident child leaves for after its answer (emptied by `close_deferred` above;
    # a cold process runs it at once).
    ("memory_core.store", "_after_answer"): _clear("memory_core.store", "_after_answer"),
    # Hook events a resident child records after its answer, and the after-answer locks it
    # holds until they are in (both emptied by `close_deferred`; a cold process has neither).
    ("memory_core.store", "_later"): _clear("memory_core.store", "_later"),
    ("memory_core.store", "_worked_on"): _clear("memory_core.store", "_worked_on"),
}

# Module-level state that is the same whatever ran before: compiled patterns and pure
# functions' results keyed by their whole input, registrations made at import, and state that
# lives only inside one call.
PURE_CACHES: dict[tuple[str, str], str] = {
    ("memory_core.resident_server", "_POPULATE"): "the C library's madvise, looked up once",
    ("memory_core.redact", "_COMPILED"): "compiled regular expressions by their source",
    ("memory_core.redact", "_remembered"): "redaction of a text, a pure function of it",
    ("memory_core.redact", "_remembered_chars"): "the size of `_remembered`",
    ("memory_core.redact", "_provider_names"): "the provider names, loaded on first use",
    ("memory_core.redact", "_language_words"): "the other languages' secret words, compiled once",
    ("memory_core.redact", "_ascii_language_words"): "the same words spelled in ASCII, as a set",
    ("memory_core.redact", "_spelled_words"): "those words and the forms names spell them in",
    ("memory_core.redact", "_GUARDS_ONCE"): "the context rules' guard words, built at import",
    ("memory_core.redact", "_GATED_GUARDS"): "the same guard words by their gate, built at import",
    (
        "memory_core.redact",
        "_guard_search",
    ): "how to find every guard word in one pass, built on first use",
    ("memory_core.redact", "_context_guard_search"): "the same for short texts' context rules",
    ("memory_core.redact", "_short_texts"): "a count of texts, deciding only when to build it",
    ("memory_core.redact", "_guard_searched_chars"): "the same, in characters of larger texts",
    ("memory_core.redact", "_token_guard_search"): "the token formats' guards, for one pass",
    ("memory_core.compiled_patterns", "_entries"): "compiled patterns read from the cache file",
    ("memory_core.quota", "_COLUMNS_BY_DEFINITION"): "tables' columns by their definitions, pure",
    ("memory_core.gotchas.track", "_analysis"): "an error text's analysis, a pure function of it",
    ("memory_core.gotchas.tool_errors", "key_error"): "a tool output's key error, pure",
    ("memory_core.resident_server", "_FINISHED"): "the resident server's own children (no command)",
    ("memory_core.journal", "_MATCHERS"): "compiled ignore rules by their lines",
    ("memory_core.journal", "_pathspec_version"): "the installed pathspec's version",
    ("memory_core.gotchas.scan", "_glob_regex"): "a glob's compiled pattern",
    ("memory_core.agents.failures", "tests_run_by"): "how a command line runs tests",
    # Not pure, and not resettable: each feature module registers its table's retention rule
    # when it is imported, so the rules `limits.enforce` applies depend on what the process
    # imported before. A command run here sees the rules of every module an earlier test
    # imported; a fresh process, only its own. Tests whose outcome depends on that run in a
    # process (test_claude_code_exact.py's re-ingest of an old session).
    ("memory_core.limits", "_RULES"): "retention rules registered at import (see above)",
    ("memory_core.gotchas.records", "_DEFERRED"): "emptied when its `with` block ends",
    ("memory_core.search_index", "SOURCES"): "tables other areas register (none does yet)",
    ("memory_core.checkpoints.trees", "_ZSTD"): "a zstd compressor per thread",
}


def forget_process_state() -> None:
    for reset in PROCESS_CACHES.values():
        reset()


@cache
def _child_stdio() -> dict[str, Any]:
    """How a child Python started here sets up its stdio and warnings (asked once)."""
    probe = (
        "import json, sys, warnings\n"
        # a filter's message and module: None, a plain string, or a compiled pattern
        "def w(x): return x if x is None or isinstance(x, str) else [x.pattern, x.flags]\n"
        "print(json.dumps({\n"
        "  'stdin': [sys.stdin.encoding, sys.stdin.errors],\n"
        "  'stdout': [sys.stdout.encoding, sys.stdout.errors],\n"
        "  'stderr': [sys.stderr.encoding, sys.stderr.errors],\n"
        "  'warnings': [[a, w(m), c.__name__, w(mod), n] for a, m, c, mod, n in warnings.filters],\n"
        "}))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe],
        capture_output=True,
        text=True,
        check=True,
        stdin=subprocess.PIPE,
        timeout=60,
    )
    answer: dict[str, Any] = json.loads(done.stdout)
    return answer


def _fresh_warning_filters() -> None:
    """The warning filters of a fresh process (inside `warnings.catch_warnings()`)."""
    import builtins
    import re

    def matcher(given: str | list[Any] | None) -> Any:
        return given if given is None or isinstance(given, str) else re.compile(*given)

    warnings.filters[:] = [
        (action, matcher(message), getattr(builtins, category, Warning), matcher(module), line)
        for action, message, category, module, line in _child_stdio()["warnings"]
    ]
    warnings._filters_mutated()  # type: ignore[attr-defined]


def needs_a_process(args: Sequence[str], env: Mapping[str, str] | None) -> bool:
    """Whether this command line can only be run faithfully in a process of its own."""
    if any(word in PROCESS_ONLY_COMMANDS for word in args[:3]):
        return True
    return any(name.startswith(PROCESS_ONLY_ENV_PREFIXES) for name in (env or {}))


def _as_text(data: bytes) -> str:
    # What subprocess.run(text=True) does with a child's output.
    text = data.decode(locale.getpreferredencoding(False))
    return text.replace("\r\n", "\n").replace("\r", "\n")


class _Pipe(io.BytesIO):
    """What the test reads of a command's stdout or stderr, kept if the command closes it."""

    kept = b""

    def close(self) -> None:
        if not self.closed:
            self.kept = self.getvalue()
        super().close()

    def written(self) -> bytes:
        return self.kept if self.closed else self.getvalue()


def _exit_status(code: object) -> tuple[int, str]:
    """The exit status and stderr text of `sys.exit(code)` in a process."""
    if code is None:
        return 0, ""
    if isinstance(code, int):
        return code & 0xFF, ""
    return 1, f"{code}\n"


@contextmanager
def _process_state(
    args: Sequence[str], cwd: Path | str | None, env: Mapping[str, str] | None
) -> Iterator[None]:
    saved_argv = sys.argv
    saved_env = dict(os.environ)
    saved_cwd = os.getcwd()
    saved_streams = {name: getattr(sys, name) for name in STREAM_NAMES}
    try:
        if cwd is not None:
            os.chdir(cwd)
        os.environ.update(env or {})
        sys.argv = [MAIN_FILE, *args]
        with warnings.catch_warnings():
            _fresh_warning_filters()
            yield
    finally:
        for name, stream in saved_streams.items():
            setattr(sys, name, stream)
        sys.argv = saved_argv
        os.chdir(saved_cwd)
        if dict(os.environ) != saved_env:
            os.environ.clear()
            os.environ.update(saved_env)


def run_in_process(
    args: Sequence[str],
    *,
    cwd: Path | str | None = None,
    stdin: str | None = None,
    env: Mapping[str, str] | None = None,
) -> tuple[int, str, str]:
    """(exit status, stdout, stderr) of `engram ARGS`, run in this process."""
    stdio = _child_stdio()
    given = b"" if stdin is None else stdin.encode(locale.getpreferredencoding(False))
    out, err = _Pipe(), _Pipe()
    # Python opens a process's stdio with newline="\n": no translation either way.
    streams = (
        io.TextIOWrapper(io.BytesIO(given), *stdio["stdin"], newline="\n"),
        io.TextIOWrapper(out, *stdio["stdout"], newline="\n"),
        io.TextIOWrapper(err, *stdio["stderr"], newline="\n"),
    )
    threads_before = set(threading.enumerate())
    forget_process_state()
    with _process_state(args, cwd, env):
        for name, stream in zip(("stdin", "stdout", "stderr"), streams, strict=True):
            setattr(sys, name, stream)
            setattr(sys, f"__{name}__", stream)
        from memory_core.cli.entry import main

        try:
            status, message = _exit_status(main(list(args)))
        except SystemExit as exc:
            status, message = _exit_status(exc.code)
        except KeyboardInterrupt:  # the test run's own Ctrl-C (engram catches its own)
            raise
        except BaseException:  # what the interpreter does with an exception nobody caught
            status, message = 1, traceback.format_exc()
        for stream, text in ((streams[1], ""), (streams[2], message)):
            with suppress(ValueError):  # a command closed its own stdout or stderr
                stream.write(text)
                stream.flush()
    left = [t for t in threading.enumerate() if t not in threads_before and t.is_alive()]
    for thread in left:  # a process would end its daemon threads with it
        thread.join(timeout=5)
    still = [t.name for t in left if t.is_alive()]
    assert not still, f"engram {' '.join(args)} left threads running: {still}"
    return status, _as_text(out.written()), _as_text(err.written())
