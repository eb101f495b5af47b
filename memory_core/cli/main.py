"""Entry point of the `engram` command: parse, dispatch, turn errors into one line.

Each feature's subcommands live in their own module listed in COMMAND_MODULES; a module
exposes `register(subparsers, common)` and sets `handler=` on the parsers it adds. Handlers
take a `Context` and return an exit code.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import json
import os
import sys
from collections.abc import Sequence
from typing import Any, NoReturn

from memory_core import __version__, log
from memory_core.errors import EXIT_FAILED, EXIT_USAGE, EngramError, UsageError

# Each module and the subcommands it registers. A command line builds only its own
# subcommand's module (importing every area for every command took about 80 of the 250 ms of
# an `engram checkpoint create`); help, a typo or no subcommand build them all. A test keeps
# this table in step with what the modules register.
COMMAND_MODULES = {
    "memory_core.cli.basics": ("init", "status", "config", "lsp"),
    "memory_core.cli.memory": (
        "memory",
        "export",
        "import",
        "delete",
        "undelete",
        "purge",
        "anonymize",
    ),
    "memory_core.cli.gotcha": ("gotcha", "error"),
    "memory_core.cli.session": ("session",),
    "memory_core.cli.checkpoint": ("checkpoint", "rollback"),
    "memory_core.cli.agents": ("hook", "hooks", "ingest", "mcp"),
    "memory_core.cli.evolution": ("evolution", "drift", "timeline", "snapshot"),
    "memory_core.cli.doctor": ("doctor",),
    "memory_core.cli.daemon": ("daemon",),
}
_TOP_LEVEL_VALUED = frozenset({"--workspace"})  # top-level options followed by a value


def command_word(words: Sequence[str]) -> str | None:
    """The subcommand a command line names, after the top-level options; None when it asks
    for help or the version first, or names none."""
    words_iter = iter(words)
    for word in words_iter:
        if word in ("-h", "--help", "--version"):
            return None
        if word in _TOP_LEVEL_VALUED:
            next(words_iter, None)
        elif not word.startswith("-"):
            return word
    return None


# Set by main() when `--json` is on the command line, before argparse runs: a usage error
# found while parsing is then printed as JSON too.
_JSON_ERRORS = False


def print_error(
    message: str, *, hint: str | None, code: str, exit_code: int, as_json: bool
) -> None:
    """An error as the user asked for output: one line on stderr, or with `--json` one JSON
    object `{"error", "hint", "code", "exit_code"}` on stdout (where a script reads the result),
    so that stdout holds exactly one JSON value whatever happens. `code` is the stable code of
    docs/errors.md (`MEM_E004`), or `internal` for a bug."""
    message = _one_line(message)
    if as_json:
        error = {"error": message, "hint": hint, "code": code, "exit_code": exit_code}
        print(json.dumps(error, ensure_ascii=False))
        return
    text = f"{message} ({hint})" if hint else message
    print(f"engram: error: {text}", file=sys.stderr)


# An error message quotes what it was given (an id, a path): a 100 KB argument makes a 100 KB
# "line". It is cut in the middle past this many characters.
MAX_ERROR_CHARS = 400


def _one_line(message: str) -> str:
    message = " ".join(message.splitlines())
    if len(message) > MAX_ERROR_CHARS:
        cut = len(message) - MAX_ERROR_CHARS
        half = MAX_ERROR_CHARS // 2
        message = f"{message[:half]}... ({cut} characters cut) ...{message[-half:]}"
    # A command-line argument that is not UTF-8 (surrogate escapes) is shown, not printed raw.
    return message.encode("utf-8", "backslashreplace").decode("utf-8")


def _not_utf8(word: str) -> bool:
    try:
        word.encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


def _terminal_columns() -> int:
    """What shutil.get_terminal_size() says of the width (COLUMNS, else the terminal's, else
    80), without importing shutil (and with it bz2 and lzma)."""
    try:
        columns = int(os.environ.get("COLUMNS", "0"))
    except ValueError:
        columns = 0
    if columns <= 0:
        try:
            columns = os.get_terminal_size(sys.__stdout__.fileno()).columns  # type: ignore[union-attr]
        except (AttributeError, ValueError, OSError):
            columns = 0
    return columns or 80


class _Parser(argparse.ArgumentParser):
    """argparse, but a usage error is one line on stderr (or JSON) and exit code 2."""

    def _get_formatter(self) -> argparse.HelpFormatter:
        # argparse makes a formatter for every argument it adds (to check its format), and one
        # without a width imports shutil to measure the terminal: a cold command that prints
        # no help paid that. The same width argparse would take (the terminal's, less 2).
        formatter: Any = self.formatter_class  # (typeshed's protocol names only `prog`)
        return formatter(prog=self.prog, width=_terminal_columns() - 2)  # type: ignore[no-any-return]

    def error(self, message: str) -> NoReturn:
        if _JSON_ERRORS:
            print_error(
                message,
                hint=f"see `{self.prog} --help`",
                code=UsageError.code,
                exit_code=EXIT_USAGE,
                as_json=True,
            )
            self.exit(EXIT_USAGE)
        self.exit(EXIT_USAGE, f"{self.prog}: error: {message} (see `{self.prog} --help`)\n")


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The command line's parser: every subcommand, or only the module that registers
    `command` when it is a known one."""
    parser = _Parser(
        prog="engram",
        description="engram: a durable memory for AI-assisted coding.",
    )
    parser.add_argument("--version", action="version", version=f"engram {__version__}")
    parser.add_argument(
        "--workspace",
        metavar="PATH",
        default=None,
        help="the workspace (default: the current folder, resolved to its project root)",
    )
    parser.add_argument("--json", action="store_true", default=False, help="print one JSON value")
    # Accepting --json after the subcommand too (`engram status --json`); SUPPRESS keeps a
    # subparser from resetting a --json given before it.
    common = _Parser(add_help=False)
    common.add_argument(
        "--json", action="store_true", default=argparse.SUPPRESS, help="print one JSON value"
    )
    subparsers = parser.add_subparsers(dest="command", metavar="SUBCOMMAND", parser_class=_Parser)
    subparsers.required = True
    modules = [module for module, names in COMMAND_MODULES.items() if command in names]
    # A known command builds its own parser, not its module's other ones: argparse builds each
    # parser as it is added (and asks gettext for a translation of every text on disk), most of
    # the parsing of an `engram ingest` that reads one file.
    adding: Any = _OnlyCommand(subparsers, command) if modules else subparsers
    for module_name in modules or COMMAND_MODULES:
        importlib.import_module(module_name).register(adding, common)
    return parser


class _Unbuilt:
    """Stands for the parser of a subcommand the command line does not name: takes whatever
    its module does with it (arguments, defaults, actions of its own) and builds nothing."""

    def __getattr__(self, name: str) -> Any:
        return self

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self

    def __iter__(self) -> Any:
        return iter(())


class _OnlyCommand:
    """A module's view of the subcommands: only `command`'s parser is built."""

    def __init__(self, subparsers: Any, command: str | None) -> None:
        object.__setattr__(self, "_subparsers", subparsers)
        object.__setattr__(self, "_command", command)

    def add_parser(self, name: str, **kwargs: Any) -> Any:
        if self._command == name or self._command in kwargs.get("aliases", ()):
            return self._subparsers.add_parser(name, **kwargs)
        return _Unbuilt()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._subparsers, name)

    def __setattr__(self, name: str, value: Any) -> None:
        setattr(self._subparsers, name, value)


# Parsers built ahead, by the command word they were built for: the resident server builds
# those of its commands before it forks (memory_core/resident_server.py), and each child parses
# with its own copy of them instead of building argparse's tree again (a few ms of CPU of an
# `engram checkpoint create`). A cold process builds its one parser in `main`, as before.
_PREBUILT: dict[str | None, argparse.ArgumentParser] = {}


def prebuild_parsers(commands: Sequence[str]) -> None:
    for command in commands:
        _PREBUILT[command] = build_parser(command)


def main(argv: Sequence[str] | None = None) -> int:
    if list(sys.argv[1:] if argv is None else argv) == ["lsp"]:
        # What editors start: the language server answers `initialize` from the standard
        # library alone (lsp_server/front.py), so it starts before the CLI's own imports.
        # Imported by name, as `run_lsp` does: memory_core never imports the LSP stack.
        importlib.import_module("lsp_server.main").run()
        return 0
    # `engram hook AGENT EVENT` runs as a cold process on every agent tool call: it is dispatched
    # before the argparse tree (and every area's CLI module) is built. The `engram` script enters
    # at memory_core.cli.entry, which does this before this module is even imported; this stays
    # for scripts an older engram installed (`from memory_core.cli.main import main`).
    from memory_core.cli.fast_hook import hook_fast_path

    hook_code = hook_fast_path(sys.argv[1:] if argv is None else argv)
    if hook_code is not None:
        return hook_code
    from memory_core.cli.context import Context

    global _JSON_ERRORS
    words = list(sys.argv[1:] if argv is None else argv)
    _JSON_ERRORS = "--json" in words
    for word in words:
        if _not_utf8(word):
            print_error(
                f"an argument is not valid UTF-8: '{_one_line(word)[:80]}'",
                hint="engram takes its arguments as UTF-8 text",
                code=UsageError.code,
                exit_code=EXIT_USAGE,
                as_json=_JSON_ERRORS,
            )
            return EXIT_USAGE
    command = command_word(words)
    parser = _PREBUILT.get(command) or build_parser(command)
    args = parser.parse_args(argv)
    handler: Any = getattr(args, "handler", None)
    if handler is None:
        parser.parse_args([*(argv if argv is not None else sys.argv[1:]), "--help"])
        return EXIT_USAGE
    context = Context(args)
    try:
        return int(handler(context) or 0)
    except EngramError as exc:
        print_error(
            exc.message,
            hint=exc.hint,
            code=exc.code,
            exit_code=exc.exit_code,
            as_json=context.json,
        )
        return exc.exit_code
    except OverflowError as exc:
        # A number given on the command line past what SQLite or the clock can hold
        # (`--limit 99999999999999999999999`): the user's input, not a bug.
        print_error(
            f"a number is too large: {exc}",
            hint="give a smaller number",
            code=UsageError.code,
            exit_code=EXIT_USAGE,
            as_json=context.json,
        )
        return EXIT_USAGE
    except KeyboardInterrupt:
        print("engram: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        # `engram ... | head`: the reader went away; nothing to report.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return EXIT_FAILED
    except Exception as exc:
        # A bug, not a user's mistake: one line here, the traceback in the store's log.
        root = None
        with contextlib.suppress(Exception):  # the workspace itself may be what failed
            root = context.root
        log.write(root, "error", f"engram {' '.join(argv or sys.argv[1:])} failed", exc=exc)
        where = f"details in {log.log_path(root)}" if root is not None else None
        message = f"internal error: {type(exc).__name__}: {exc}"
        if context.json:
            print_error(message, hint=where, code="internal", exit_code=EXIT_FAILED, as_json=True)
        else:
            print(f"engram: {message}{f' ({where})' if where else ''}", file=sys.stderr)
        if os.environ.get("ENGRAM_DEBUG"):
            raise
        return EXIT_FAILED
    finally:
        context.close()


if __name__ == "__main__":
    sys.exit(main())
