"""The `engram` command's entry point (`[project.scripts]` in pyproject.toml).

`engram hook AGENT EVENT` runs as a cold process on every agent tool call and prompt, so it is
sent to the hook runner before anything else is imported: the full command line (argparse,
JSON errors, every area's commands) cost a hook about as much as Python's own start. Every
other command goes on to `memory_core.cli.main`.

Before either, a hook, `engram checkpoint ...`, `engram rollback ...` or `engram ingest ...` is
offered to the resident fork server (memory_core/resident.py, docs/resident.md), which runs the
same code in a process that has already imported it; when none is running the command runs here,
and a server is started in the background for the next one.
"""

from __future__ import annotations

import sys

from memory_core.cli.fast_hook import hook_fast_path

TYPE_CHECKING = False  # typing itself costs a hook a third of Python's start
if TYPE_CHECKING:
    from collections.abc import Sequence


def main(argv: Sequence[str] | None = None) -> int:
    words = sys.argv[1:] if argv is None else list(argv)
    from memory_core import resident

    code = resident.try_resident(words)
    if code is not None:
        return code
    try:
        return run_in_process(words, cold=True)
    finally:
        if resident.command_of(words) in resident.RESIDENT_COMMANDS:
            resident.start_in_background()


def run_in_process(argv: Sequence[str], *, cold: bool = False) -> int:
    """The command run in this process: what a cold `engram` does (`cold`: the agent's own
    process, whose hook may answer from a fork: memory_core.cli.fast_hook), and what the
    resident server's child runs."""
    code = hook_fast_path(argv, cold=cold)
    if code is not None:
        return code
    from memory_core.cli.main import main as full_command_line

    return full_command_line(argv)


if __name__ == "__main__":
    sys.exit(main())
