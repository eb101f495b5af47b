"""What every subcommand handler gets: the workspace, the store, settings and output."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable
from functools import cached_property
from pathlib import Path
from typing import Any, TextIO

from memory_core import config
from memory_core.errors import UsageError
from memory_core.store import Store
from memory_core.workspace import find_root

# Commands that record something and so may create the store where a person runs them. Every
# other command only reads or changes what is there: it never creates one (docs/design.md section 2).
CREATING_COMMANDS = frozenset(
    {
        "config set",
        "config unset",
        "memory add",
        "memory relate",
        "import",
        "gotcha add",
        "gotcha import",
        "error track",
        "session start",
        "session save",
        "session import",
        "checkpoint create",
        "snapshot capture",
        "ingest",
        "hooks install",
    }
)


def read_stdin_text() -> str:
    """All of standard input as text; a UsageError when there is none (stdin closed)."""
    if sys.stdin is None or sys.stdin.closed:
        raise UsageError(
            "standard input is closed", hint="pipe the text in, or pass it as an argument"
        )
    return sys.stdin.read()


def _warn(text: str) -> None:
    print(f"engram: warning: {text}", file=sys.stderr)


class Context:
    def __init__(self, args: argparse.Namespace, stdout: TextIO | None = None) -> None:
        self.args = args
        self.json: bool = bool(getattr(args, "json", False))
        self.stdout = stdout or sys.stdout
        self._store: Store | None = None

    @cached_property
    def root(self) -> Path:
        return find_root(self.args.workspace)

    @cached_property
    def settings(self) -> config.Settings:
        loaded = config.load(self.root)
        for problem in loaded.problems:
            print(f"engram: warning: {problem}", file=sys.stderr)
        return loaded

    @property
    def command_path(self) -> str:
        """The subcommand as typed: `gotcha list`, `drift`, `checkpoint create`."""
        # Each group's parser keeps its action in `<group>_command` (`error_command: "track"`);
        # `command` itself is not always set when a group's subparser sets its own defaults.
        for key, value in vars(self.args).items():
            if key.endswith("_command") and isinstance(value, str):
                return f"{key.removesuffix('_command')} {value}"
        return str(getattr(self.args, "command", "") or "")

    def store(self, *, create: bool = True) -> Store:
        """The workspace's store.

        Created only by `engram init` or a command that records something (CREATING_COMMANDS);
        for every read-only command a missing store is the error "no engram store here (run
        engram init)", and nothing is created.
        """
        if self._store is None:
            path = self.command_path
            if path == "init" or (create and path in CREATING_COMMANDS):
                # A person typed a command that records something, here: that is as explicit
                # as `engram init` (and `find_root` gives a nested repository its own store).
                self._store = Store.open_or_init(self.root)
            else:
                self._store = Store.open(self.root)
            for notice in self._store.notices:
                _warn(notice)
            self._store.notice_listeners.append(_warn)
        return self._store

    def close(self) -> None:
        if self._store is not None:
            self._store.close()
            self._store = None

    def emit(self, value: Any, human: Callable[[], str] | str | None = None) -> None:
        """Print `value` as one JSON value with --json, else the human text."""
        if self.json:
            print(json.dumps(value, indent=2, ensure_ascii=False, default=str), file=self.stdout)
            return
        text = human() if callable(human) else human
        if text is None:
            text = json.dumps(value, indent=2, ensure_ascii=False, default=str)
        if text:
            print(text, file=self.stdout)

    @property
    def interactive(self) -> bool:
        """Whether someone at a terminal can answer a question."""
        stdin = sys.stdin
        try:
            return stdin is not None and not stdin.closed and stdin.isatty()
        except (OSError, ValueError):
            return False

    def confirm(self, question: str) -> bool:
        """Ask on the terminal. Without one (a pipe, a closed stdin, a script) there is no one
        to ask: a UsageError says to pass --yes, and nothing is changed."""
        if not self.interactive:
            raise UsageError(
                f"engram {self.command_path} not confirmed: it needs --yes when not on a terminal",
                hint="nothing was changed; pass --yes to go ahead without asking",
            )
        try:
            answer = input(f"{question} [y/N] ")
        except EOFError:
            return False
        return answer.strip().lower() in ("y", "yes")
