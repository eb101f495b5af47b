"""The `engram` command line builds only the subcommand it runs (a cold `engram checkpoint
create` no longer imports every area), and still knows every subcommand for help and typos."""

from __future__ import annotations

import argparse
import importlib
import subprocess
import sys
from pathlib import Path

import pytest

from memory_core.cli import main as cli
from tests.conftest import run_cli

EVERY_COMMAND = [name for names in cli.COMMAND_MODULES.values() for name in names]


def test_the_table_names_exactly_what_each_module_registers() -> None:
    for module, names in cli.COMMAND_MODULES.items():
        parser = argparse.ArgumentParser()
        subparsers = parser.add_subparsers()
        importlib.import_module(module).register(
            subparsers, argparse.ArgumentParser(add_help=False)
        )
        assert tuple(subparsers.choices) == names, module


@pytest.mark.parametrize("name", EVERY_COMMAND)
def test_every_subcommand_is_reached_from_its_own_command_line(
    name: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as done:
        cli.main([name, "--help"])
    assert done.value.code == 0
    assert capsys.readouterr().out.startswith(f"usage: engram {name}")


def test_help_and_a_mistyped_subcommand_list_every_subcommand(workspace: Path) -> None:
    shown = run_cli("--help", cwd=workspace)
    assert shown.code == 0 and all(f"    {name}" in shown.stdout for name in EVERY_COMMAND)
    typo = run_cli("chekpoint", "create", cwd=workspace)
    assert typo.code == 2 and "invalid choice: 'chekpoint'" in typo.stderr
    assert all(f"'{name}'" in typo.stderr for name in EVERY_COMMAND)


@pytest.mark.parametrize(
    ("words", "command"),
    [
        (["checkpoint", "create"], "checkpoint"),
        (["--workspace", "some/where", "--json", "status"], "status"),
        (["--workspace=some/where", "rollback", "C-1"], "rollback"),
        (["--help", "status"], None),
        (["--version"], None),
        (["--workspace"], None),
        ([], None),
    ],
)
def test_the_subcommand_is_found_after_the_top_level_options(
    words: list[str], command: str | None
) -> None:
    assert cli.command_word(words) == command


def test_a_checkpoint_from_the_command_line_imports_no_other_area(workspace: Path) -> None:
    """What made a cold `engram checkpoint create` slow: every area's command-line module
    (and with it gotchas, memory, evolution, the MCP server) imported to build the parser."""
    run_cli("init", cwd=workspace)
    (workspace / "a.py").write_text("print(1)\n")
    done = subprocess.run(
        [
            sys.executable,
            "-c",
            "import sys; from memory_core.cli.main import main; code = main(sys.argv[1:]); "
            "print(sorted(m for m in sys.modules if m.startswith('memory_core.cli.'))); "
            "print(sorted(m for m in sys.modules if m.split('.')[:2] in "
            "(['memory_core', 'sessions'], ['memory_core', 'redact'], ['pathspec']) "
            "or m.startswith('memory_core.checkpoints.'))); "
            "sys.exit(code)",
            "checkpoint",
            "create",
        ],
        cwd=workspace,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert "Checkpoint C-" in done.stdout
    loaded, core = done.stdout.strip().splitlines()[-2:]
    assert "memory_core.cli.checkpoint" in loaded
    for other in ("session", "gotcha", "memory", "evolution", "doctor", "basics"):
        assert f"memory_core.cli.{other}'" not in loaded
    # Nor what a checkpoint outside an agent's session never uses: the sessions package,
    # redaction (no name given), the rollback; pathspec only for the first checkpoint, which
    # keeps the compiled ignore rules in the store (a second cold one needs none).
    assert "memory_core.checkpoints.capture" in core
    for unused in ("memory_core.sessions'", "memory_core.redact'", "checkpoints.restore'"):
        assert unused not in core
