"""engram's hooks in Codex CLI's configuration (`engram hooks install|uninstall codex`).

Codex reads lifecycle hooks from each configuration layer (codex-rs/hooks discovery): the user's
`$CODEX_HOME` (`~/.codex`) and a trusted project's `.codex/` folder, from `hooks.json` and from
a `[hooks]` table in that layer's `config.toml`. Both nest event -> [{matcher?, hooks: [{type:
"command", command, timeout}]}], timeouts in seconds. Codex warns when one layer uses both, so
engram writes where the user's hooks already are: into `config.toml` when its `[hooks]` table
has events (comments, order and every other key kept, with tomlkit), else into `hooks.json`.

Codex runs a hook it has not seen before only once the user trusts it (`/hooks` in Codex keeps
the trusted hash in `[hooks.state]`): engram never writes that trust itself, and says so.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from memory_core.errors import UsageError

TRUST_NOTE = (
    "Codex runs new or changed hooks only once you trust them: start Codex and review them "
    "with /hooks. Releases that do not run hooks by default need `[features] hooks = true` "
    "(`codex_hooks` before 0.130) in config.toml."
)


def layer_dir(*, user: bool, root: Path) -> Path:
    if user:
        from memory_core.agents.codex_rollouts import codex_home

        return codex_home()
    return root / ".codex"


def _load_toml(path: Path) -> Any:
    import tomlkit
    from tomlkit.exceptions import TOMLKitError

    if not path.exists():
        return None
    try:
        return tomlkit.parse(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise UsageError(f"cannot read {path}: {exc.strerror or exc}") from None
    except (TOMLKitError, ValueError) as exc:
        raise UsageError(
            f"{path} is not valid TOML ({exc}); it was left untouched",
            hint="fix the file, then run this again",
        ) from None


def toml_has_hooks(path: Path) -> bool:
    """True when the config.toml's `[hooks]` table holds events (the user's hooks live there)."""
    doc = _load_toml(path)
    hooks = doc.get("hooks") if doc is not None else None
    if not isinstance(hooks, dict):
        return False
    return any(key != "state" and isinstance(value, list) for key, value in hooks.items())


def _save_text(path: Path, text: str) -> None:
    """Atomic write keeping the file's mode."""
    path.parent.mkdir(parents=True, exist_ok=True)
    mode = path.stat().st_mode & 0o777 if path.exists() else 0o644
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, mode)
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        handle.write(text)
        handle.flush()
        os.fsync(handle.fileno())
    os.chmod(tmp, mode)
    os.replace(tmp, path)


def _without_engram(groups: Any, is_ours: Any) -> tuple[list[Any], int]:
    """The event's groups without engram's handlers (groups left empty dropped), as tomlkit
    items so that what stays keeps its comments and layout."""
    kept: list[Any] = []
    removed = 0
    for group in groups:
        handlers = group.get("hooks") if isinstance(group, dict) else None
        if not isinstance(handlers, list):
            kept.append(group)
            continue
        ours = [index for index, handler in enumerate(handlers) if is_ours(handler)]
        if not ours:
            kept.append(group)
            continue
        removed += len(ours)
        for index in reversed(ours):
            del handlers[index]
        if handlers:
            kept.append(group)
    return kept, removed


def write_toml_hooks(path: Path, groups_by_event: dict[str, dict[str, Any]], is_ours: Any) -> bool:
    """Put engram's group for each event into config.toml's `[hooks]`; True when it changed."""
    import tomlkit

    doc = _load_toml(path)
    if doc is None:
        doc = tomlkit.document()
    before = tomlkit.dumps(doc)
    hooks = doc.get("hooks")
    if hooks is None:
        hooks = tomlkit.table(is_super_table=True)
        doc["hooks"] = hooks
    if not isinstance(hooks, dict):
        raise UsageError(f"{path}: [hooks] is not a table; it was left untouched")
    for event, group in groups_by_event.items():
        existing = hooks.get(event)
        if existing is not None and not isinstance(existing, list):
            raise UsageError(f"{path}: hooks.{event} is not a list; it was left untouched")
        kept, _ = _without_engram(existing or [], is_ours)
        inline = isinstance(existing, list) and not isinstance(existing, tomlkit.items.AoT)
        ours = _toml_group(group, inline=inline)
        if isinstance(existing, tomlkit.items.AoT):
            _replace_aot(existing, kept, ours)
        elif isinstance(existing, list):
            existing.clear()
            for item in [*kept, ours]:
                existing.append(item)
        else:
            hooks[event] = tomlkit.aot()
            hooks[event].append(ours)
    after = tomlkit.dumps(doc)
    if after == before:
        return False
    _save_text(path, after)
    return True


def _replace_aot(aot: Any, kept: list[Any], ours: Any) -> None:
    """The array of tables holds the kept groups, in order, then engram's."""
    keep_ids = {id(item) for item in kept}
    for item in list(aot.body):
        if id(item) not in keep_ids:
            aot.body.remove(item)
    aot.append(ours)


def _toml_group(group: dict[str, Any], *, inline: bool) -> Any:
    import tomlkit

    handlers = tomlkit.array()
    for handler in group["hooks"]:
        table = tomlkit.inline_table()
        table.update(handler)
        handlers.append(table)
    made = tomlkit.inline_table() if inline else tomlkit.table()
    if "matcher" in group:
        made["matcher"] = group["matcher"]
    made["hooks"] = handlers
    return made


def remove_toml_hooks(path: Path, is_ours: Any) -> int:
    """Take engram's handlers out of config.toml's `[hooks]` (and the events left empty)."""
    import tomlkit

    doc = _load_toml(path)
    hooks = doc.get("hooks") if doc is not None else None
    if not isinstance(hooks, dict):
        return 0
    removed = 0
    for event in [key for key in hooks if key != "state"]:
        groups = hooks[event]
        if not isinstance(groups, list):
            continue
        kept, count = _without_engram(groups, is_ours)
        if not count:
            continue
        removed += count
        if not kept:
            del hooks[event]
        elif isinstance(groups, tomlkit.items.AoT):
            keep_ids = {id(item) for item in kept}
            for item in list(groups.body):
                if id(item) not in keep_ids:
                    groups.body.remove(item)
        else:
            groups.clear()
            for item in kept:
                groups.append(item)
    if not hooks:
        del doc["hooks"]
    if removed:
        _save_text(path, tomlkit.dumps(doc))
    return removed
