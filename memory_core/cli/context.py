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
from memory_core.store import Store
from memory_core.workspace import find_root


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

    def store(self, *, create: bool = True) -> Store:
        """The workspace's store; created on first use unless `create` is False."""
        if self._store is None:
            self._store = Store.open_or_init(self.root) if create else Store.open(self.root)
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

    def confirm(self, question: str) -> bool:
        """Ask on the terminal; on a pipe (no one to answer) the answer is no."""
        if not sys.stdin.isatty():
            return False
        try:
            answer = input(f"{question} [y/N] ")
        except EOFError:
            return False
        return answer.strip().lower() in ("y", "yes")
