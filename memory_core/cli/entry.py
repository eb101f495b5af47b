"""The `engram` command's entry point (`[project.scripts]` in pyproject.toml).

`engram hook AGENT EVENT` runs as a cold process on every agent tool call and prompt, so it is
sent to the hook runner before anything else is imported: the full command line (argparse,
JSON errors, every area's commands) cost a hook about as much as Python's own start. Every
other command goes on to `memory_core.cli.main`.
"""

from __future__ import annotations

import sys

from memory_core.cli.fast_hook import hook_fast_path

TYPE_CHECKING = False  # typing itself costs a hook a third of Python's start
if TYPE_CHECKING:
    from collections.abc import Sequence


def main(argv: Sequence[str] | None = None) -> int:
    code = hook_fast_path(sys.argv[1:] if argv is None else argv)
    if code is not None:
        return code
    from memory_core.cli.main import main as full_command_line

    return full_command_line(argv)


if __name__ == "__main__":
    sys.exit(main())
