"""`engram hooks install|uninstall claude-code|gemini|codex [--user]`: engram's entries in the agents' settings.

Claude Code reads hooks from `.claude/settings.json` (project, the default here; teams commit
it), `.claude/settings.local.json` (project, personal: Claude Code keeps it out of git) and
`~/.claude/settings.json` (`--user`); Gemini CLI from `.gemini/settings.json` and
`~/.gemini/settings.json`. Both nest hooks as event -> [{matcher?, hooks: [{type: "command",
command, timeout}]}].

A committed file must work on every teammate's machine, so it only ever gets the bare command
`engram hook ...` (engram on PATH). When this installation's `engram` is not what PATH finds,
its absolute path goes to `.claude/settings.local.json` instead, and engram's entries are taken
out of `.claude/settings.json` so that Claude Code does not run the hooks twice. Gemini CLI has
no personal project file: there the path is written with a warning (or use `--user`).

Install merges: every key and every other hook in the file stays as it was, engram's own entries
(recognised by their command, `... engram hook AGENT EVENT`) are replaced, so installing twice
changes nothing. Uninstall removes exactly engram's entries and the groups and events they leave
empty. A settings file that is not valid JSON is refused and left untouched.

Codex CLI: `$CODEX_HOME/hooks.json` (`--user`) or the project's `.codex/hooks.json`, or that
layer's `config.toml` when the user's hooks are there already (`codex_install`).
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import sys
from pathlib import Path
from typing import Any

from memory_core.agents.hooks import INSTALLED_EVENTS
from memory_core.errors import UsageError

# Claude Code's timeout is in seconds, Gemini CLI's in milliseconds.
_TIMEOUTS = {
    "claude-code": {"default": 30, "SessionStart": 30, "PreCompact": 60, "SessionEnd": 15},
    "gemini": {"default": 30000, "SessionStart": 30000, "PreCompress": 60000, "SessionEnd": 15000},
    "codex": {"default": 30, "SessionStart": 30, "PreCompact": 60},
}
# PreToolUse only helps before a file is changed: no process start for other tools.
_MATCHERS = {
    ("claude-code", "PreToolUse"): "Edit|Write|MultiEdit|NotebookEdit",
    ("gemini", "BeforeTool"): "write_file|replace",
    ("codex", "PreToolUse"): "apply_patch",
}
_OURS = re.compile(
    r"(?:^|[\s/\\'\"])(?:engram|memory_core)['\"]?\s+(?:--workspace\s+\S+\s+)?hook\s+(?:claude-code|gemini|codex)\b"
)


def settings_path(agent: str, *, user: bool, root: Path, personal: bool = False) -> Path:
    """The agent's settings file; `personal`: Claude Code's uncommitted project file."""
    if agent == "codex":
        from memory_core.agents import codex_install

        layer = codex_install.layer_dir(user=user, root=root)
        toml = layer / "config.toml"
        return toml if codex_install.toml_has_hooks(toml) else layer / "hooks.json"
    if agent == "claude-code":
        if user:
            base = os.environ.get("CLAUDE_CONFIG_DIR", "").split(",")[0].strip()
            return (Path(base).expanduser() if base else Path.home() / ".claude") / "settings.json"
        return root / ".claude" / ("settings.local.json" if personal else "settings.json")
    if user:
        return Path.home() / ".gemini" / "settings.json"
    return root / ".gemini" / "settings.json"


def engram_command() -> list[str]:
    """How the agent should start engram: this installation's `engram` script.

    A bare `engram` when that same script is first on PATH (a project settings file is often
    committed, and an absolute path only works on this machine); else its absolute path.
    """
    script = Path(sys.executable).with_name("engram")
    if script.is_file() and os.access(script, os.X_OK):
        on_path = shutil.which("engram")
        if on_path and Path(on_path).resolve() == script.resolve():
            return ["engram"]
        return [str(script)]
    return [sys.executable, "-m", "memory_core"]


def hook_command(agent: str, event: str) -> str:
    return " ".join(shlex.quote(part) for part in [*engram_command(), "hook", agent, event])


def is_portable() -> bool:
    """True when the hooks can name plain `engram`: the same on every machine that has it."""
    return engram_command() == ["engram"]


def is_engram_handler(handler: Any) -> bool:
    return (
        isinstance(handler, dict)
        and isinstance(handler.get("command"), str)
        and bool(_OURS.search(handler["command"]))
    )


def _load(path: Path) -> dict[str, Any]:
    if not path.exists():
        return {}
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise UsageError(f"cannot read {path}: {exc.strerror or exc}") from None
    if not text.strip():
        return {}
    try:
        data = json.loads(text)
    except (ValueError, RecursionError) as exc:
        raise UsageError(
            f"{path} is not valid JSON ({exc}); it was left untouched",
            hint="fix the file, then run this again",
        ) from None
    if not isinstance(data, dict):
        raise UsageError(f"{path} does not hold a JSON object; it was left untouched")
    return data


def _save(path: Path, data: dict[str, Any]) -> None:
    """Atomic write keeping the file's mode (a project settings file is usually committed)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    mode = path.stat().st_mode & 0o777 if path.exists() else 0o644
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, mode)
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        handle.write(json.dumps(data, indent=2, ensure_ascii=False) + "\n")
        handle.flush()
        os.fsync(handle.fileno())
    os.chmod(tmp, mode)
    os.replace(tmp, path)


def _without_engram(groups: Any) -> tuple[list[Any], int]:
    """The event's groups with engram's handlers removed (and groups left empty dropped)."""
    if not isinstance(groups, list):
        return [], 0
    kept: list[Any] = []
    removed = 0
    for group in groups:
        if not isinstance(group, dict) or not isinstance(group.get("hooks"), list):
            kept.append(group)
            continue
        handlers = [h for h in group["hooks"] if not is_engram_handler(h)]
        removed += len(group["hooks"]) - len(handlers)
        if handlers:
            kept.append({**group, "hooks": handlers})
        elif not group["hooks"]:
            kept.append(group)
    return kept, removed


def install(agent: str, *, root: Path, user: bool = False) -> dict[str, Any]:
    portable = is_portable()
    personal = agent == "claude-code" and not user and not portable
    path = settings_path(agent, user=user, root=root, personal=personal)
    changed = _write_codex_toml(path) if path.suffix == ".toml" else _write_hooks(agent, path)
    result: dict[str, Any] = {
        "agent": agent,
        "scope": "user" if user else ("personal" if personal else "project"),
        "settings": str(path),
        "events": list(INSTALLED_EVENTS[agent]),
        "changed": changed,
        "portable": portable,
    }
    if personal:
        # The committed file must not keep entries this machine cannot run, nor run them twice.
        shared = settings_path(agent, user=False, root=root)
        result["removed_from_shared"] = _remove_hooks(shared) if shared.exists() else 0
        result["note"] = (
            "engram is not on PATH, so its path on this machine went to the personal "
            f"{path.name}; {settings_path(agent, user=False, root=root).name} (the file "
            "teams commit) has no engram entries. Put engram on PATH (pipx install "
            "engram-lsp) and install again to share the hooks with the team."
        )
    elif portable and agent == "claude-code" and not user:
        personal_path = settings_path(agent, user=False, root=root, personal=True)
        if personal_path.exists():
            _remove_hooks(personal_path)
    elif not portable and not user:
        result["note"] = (
            f"{path} names engram by its path on this machine, which a teammate's machine "
            "does not have; put engram on PATH (pipx install engram-lsp) or use --user."
        )
    if agent == "claude-code":
        from memory_core.agents import commands  # /session-summarize, beside the settings

        result["commands"] = commands.install(path)
    if agent == "codex":
        from memory_core.agents.codex_install import TRUST_NOTE

        result["note"] = f"{result['note']}\n{TRUST_NOTE}" if result.get("note") else TRUST_NOTE
    return result


def _write_codex_toml(path: Path) -> bool:
    from memory_core.agents import codex_install

    groups = {
        event: hook_group("codex", event, hook_command("codex", event))
        for event in INSTALLED_EVENTS["codex"]
    }
    return codex_install.write_toml_hooks(path, groups, is_engram_handler)


def hook_group(agent: str, event: str, command: str) -> dict[str, Any]:
    """engram's entry for one event, as the agent's settings (and plugin hook files) nest it."""
    timeouts = _TIMEOUTS[agent]
    handler: dict[str, Any] = {
        "type": "command",
        "command": command,
        "timeout": timeouts.get(event, timeouts["default"]),
    }
    if agent == "gemini":
        handler = {"name": f"engram-{event}", **handler, "description": "engram: session memory"}
    group: dict[str, Any] = {"hooks": [handler]}
    matcher = _MATCHERS.get((agent, event))
    if matcher:
        group = {"matcher": matcher, **group}
    return group


def packaged_hooks(agent: str, runner: str) -> dict[str, Any]:
    """Every installed event's entry, each running `RUNNER hook AGENT EVENT` (plugin files)."""
    return {
        event: [hook_group(agent, event, f"{runner} hook {agent} {event}")]
        for event in INSTALLED_EVENTS[agent]
    }


def _write_hooks(agent: str, path: Path) -> bool:
    data = _load(path)
    before = json.dumps(data, sort_keys=True)
    hooks = data.get("hooks")
    if hooks is None:
        hooks = {}
    if not isinstance(hooks, dict):
        raise UsageError(f'{path}: "hooks" is not an object; it was left untouched')
    for event in INSTALLED_EVENTS[agent]:
        groups, _ = _without_engram(hooks.get(event))
        hooks[event] = [*groups, hook_group(agent, event, hook_command(agent, event))]
    data["hooks"] = hooks
    changed = json.dumps(data, sort_keys=True) != before
    if changed:
        _save(path, data)
    return changed


def uninstall(agent: str, *, root: Path, user: bool = False) -> dict[str, Any]:
    """Remove engram's entries; for a project, from both Claude Code project files."""
    paths = [settings_path(agent, user=user, root=root)]
    if agent == "claude-code" and not user:
        paths.append(settings_path(agent, user=False, root=root, personal=True))
    removed = sum(_remove_hooks(path) for path in paths if path.exists() and path.suffix == ".json")
    if agent == "codex":
        from memory_core.agents import codex_install

        # Both representations Codex reads in this layer: engram's entries may be in either.
        layer = codex_install.layer_dir(user=user, root=root)
        if (layer / "hooks.json").exists() and layer / "hooks.json" not in paths:
            removed += _remove_hooks(layer / "hooks.json")
        if (layer / "config.toml").exists():
            removed += codex_install.remove_toml_hooks(layer / "config.toml", is_engram_handler)
    if agent == "claude-code":
        from memory_core.agents import commands

        commands.uninstall(paths[0])
    return {
        "agent": agent,
        "scope": "user" if user else "project",
        "settings": str(paths[0]),
        "removed": removed,
    }


def _remove_hooks(path: Path) -> int:
    data = _load(path)
    hooks = data.get("hooks")
    removed = 0
    if isinstance(hooks, dict):
        for event in list(hooks):
            groups, count = _without_engram(hooks[event])
            if not count:
                continue
            removed += count
            if groups:
                hooks[event] = groups
            else:
                del hooks[event]
        if not hooks:
            del data["hooks"]
    if removed:
        _save(path, data)
    return removed
