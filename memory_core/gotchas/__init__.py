"""Gotchas: known pitfalls and their workarounds, learned from repeated errors or written by people,
and shown where the code is.

One module per concern:
- `normalize`: an error message to its normal form, hash, title, category and code locations;
- `records`: the model and every change (add, resolve, confirm, snooze, ...);
- `track`: auto-capture (`track_error`);
- `patterns`: code patterns (literal or regex) checked, bounded in time, matched fast;
- `scan`: where gotchas show in a document (patterns, error anchors, in-code annotations);
- `exports`: `exports/gotchas.md` and AIOS-compatible `exports/gotchas.json`, and import;
- `team`: `.engram/team/gotchas.toml`, edited with tomlkit so reviews' comments survive;
- `context`: the gotchas relevant to a task, as Markdown for a prompt.

This package imports only the standard library at import time (hooks call `track_error`).
"""

from __future__ import annotations

from memory_core.gotchas import records
from memory_core.gotchas.context import context_for_task, rank_for_task
from memory_core.gotchas.records import (
    Anchor,
    Gotcha,
    add,
    confirm,
    delete,
    get,
    list_gotchas,
    resolve,
    revision,
    snooze,
    update,
    visible_in_editor,
)

TYPE_CHECKING = False  # `typing` costs a cold hook a third of Python's start
if TYPE_CHECKING:
    from pathlib import Path

    from memory_core.gotchas.track import TrackResult, track_error
    from memory_core.store import Store


def __getattr__(name: str) -> object:
    # Error tracking loaded when first used: the hooks that only read gotchas (before a file
    # is edited, with a prompt) are cold processes that never track an error.
    if name in ("TrackResult", "track_error"):
        from memory_core.gotchas import track

        return getattr(track, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def _team_gotchas(root: Path) -> list[Gotcha]:
    from memory_core.gotchas import team

    return team.load(root).gotchas


def _write_exports(store: Store) -> None:
    from memory_core.gotchas import exports

    exports.write_exports(store)


# `records` reaches the team file and the exports through these (they import `records`).
records.team_gotchas = _team_gotchas
records.change_listeners.append(_write_exports)

__all__ = [
    "Anchor",
    "Gotcha",
    "TrackResult",
    "add",
    "confirm",
    "context_for_task",
    "delete",
    "get",
    "list_gotchas",
    "promote",
    "rank_for_task",
    "resolve",
    "revision",
    "snooze",
    "track_error",
    "update",
    "visible_in_editor",
]


def promote(store: object, gotcha_id: str) -> Gotcha:
    """Write a gotcha into `.engram/team/gotchas.toml` (see `team.promote`)."""
    from memory_core.gotchas import team
    from memory_core.store import Store

    assert isinstance(store, Store)
    return team.promote(store, gotcha_id)
