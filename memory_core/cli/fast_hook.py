"""`engram hook AGENT EVENT` recognised on the raw command line, and run without the CLI.

The `engram` script (memory_core.cli.entry) asks here before anything else is imported, and so
does memory_core.cli.main for scripts an older engram installed: a hook is a cold process on
every agent event, and the full command line (argparse, JSON errors, every area's commands)
cost it about as much as Python's own start.
"""

from __future__ import annotations

TYPE_CHECKING = False  # typing itself costs a hook a third of Python's start
if TYPE_CHECKING:
    from collections.abc import Sequence


def hook_words(argv: Sequence[str]) -> tuple[str, str, str | None] | None:
    """(agent, event, workspace) of `[--workspace PATH] hook AGENT EVENT`; None for anything
    else (help, a typo, another command: the full command line handles those)."""
    args = list(argv)
    workspace = None
    if len(args) >= 2 and args[0] == "--workspace":
        workspace, args = args[1], args[2:]
    elif args and args[0].startswith("--workspace="):
        workspace, args = args[0].split("=", 1)[1], args[1:]
    if len(args) != 3 or args[0] != "hook" or args[1].startswith("-") or args[2].startswith("-"):
        return None
    return args[1], args[2], workspace


def hook_fast_path(argv: Sequence[str]) -> int | None:
    """Run `[--workspace PATH] hook AGENT EVENT`; None when `argv` is any other command."""
    words = hook_words(argv)
    if words is None:
        return None
    from memory_core.agents import hooks

    agent, event, workspace = words
    return hooks.main(agent, event, workspace=workspace)
