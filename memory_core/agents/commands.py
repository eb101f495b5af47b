"""Claude Code slash commands engram ships: `/session-summarize` (seed 002's summarize skill).

`engram hooks install claude-code` writes them to `.claude/commands/` (or `~/.claude/commands/`
with `--user`), where Claude Code finds project and personal commands. A command file that
differs from engram's (a person's own, or edited) is never overwritten; uninstall removes only
files still exactly as engram wrote them.
"""

from __future__ import annotations

import os
from pathlib import Path

COMMANDS_DIR = Path(__file__).with_name("claude_commands")


def shipped() -> dict[str, str]:
    """Command file name -> its text, as packaged (by name: installs report them in order)."""
    return {
        path.name: path.read_text(encoding="utf-8") for path in sorted(COMMANDS_DIR.glob("*.md"))
    }


def commands_dir(settings_file: Path) -> Path:
    """`.claude/commands/` beside the Claude Code settings file the hooks went into."""
    return settings_file.parent / "commands"


def install(settings_file: Path) -> dict[str, list[str]]:
    """Write the shipped commands: `written` files, and `kept` ones that differ from engram's."""
    folder = commands_dir(settings_file)
    written: list[str] = []
    kept: list[str] = []
    for name, text in shipped().items():
        target = folder / name
        if target.exists():
            if target.read_text(encoding="utf-8", errors="replace") != text:
                kept.append(str(target))
            continue
        folder.mkdir(parents=True, exist_ok=True)
        tmp = target.with_name(f".{name}.{os.getpid()}.tmp")
        tmp.write_text(text, encoding="utf-8")
        os.replace(tmp, target)
        written.append(str(target))
    return {"written": written, "kept": kept}


def uninstall(settings_file: Path) -> list[str]:
    folder = commands_dir(settings_file)
    removed = []
    for name, text in shipped().items():
        target = folder / name
        if target.is_file() and target.read_text(encoding="utf-8", errors="replace") == text:
            target.unlink()
            removed.append(str(target))
    return removed
