"""What `engram ... --help` tells a user, for every subcommand: kept in `tests/fixtures/cli_help.txt`
and compared whole, so any change to an option, a choice, a default or a help text shows up in
review as a change of that file.

After changing the command line on purpose, write the file again and read its diff:
`ENGRAM_WRITE_HELP=1 .venv/bin/python -m pytest tests/cli/test_help.py`.
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from memory_core.cli import main as cli

HELP_FILE = Path(__file__).resolve().parents[1] / "fixtures" / "cli_help.txt"


def _commands(
    parser: argparse.ArgumentParser, words: tuple[str, ...] = ()
) -> Iterator[tuple[tuple[str, ...], argparse.ArgumentParser]]:
    yield words, parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield from _commands(sub, (*words, name))


def _every_help() -> str:
    shown = []
    for words, parser in _commands(cli.build_parser()):
        shown.append(f"$ engram {' '.join((*words, '--help'))}\n{parser.format_help()}")
    return "\n".join(shown)


def test_every_subcommands_help_is_as_recorded(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", "100")  # the width help is wrapped to
    shown = _every_help()
    if os.environ.get("ENGRAM_WRITE_HELP"):
        HELP_FILE.write_text(shown, encoding="utf-8")
    recorded = HELP_FILE.read_text(encoding="utf-8")
    assert shown == recorded, "the help changed: see the module's docstring"
    # Every subcommand is there, each with its own help text.
    for name in (n for names in cli.COMMAND_MODULES.values() for n in names):
        assert f"$ engram {name} --help\nusage: engram {name} " in recorded


def test_the_help_a_command_prints_is_the_recorded_one(cli: Any, workspace: Path) -> None:
    """The command line prints the same help as the parser the file was made from."""
    done = cli("checkpoint", "create", "--help", cwd=workspace, env={"COLUMNS": "100"})
    assert done.code == 0 and done.stderr == ""
    recorded = HELP_FILE.read_text(encoding="utf-8")
    section = recorded.split("$ engram checkpoint create --help\n", 1)[1].split("\n$ engram ", 1)[0]
    assert done.stdout == section
