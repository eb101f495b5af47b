"""`engram evolution [FILE]`, `engram drift`, `engram timeline`, `engram snapshot ...`.

Each command first looks at git's HEAD (two small file reads): a checkout or commit made while
no engram process was watching still lands in the record as one git event.
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path
from typing import Any

from memory_core import clock, drift, evolution, snapshots, timeline
from memory_core.cli.context import Context
from memory_core.errors import UsageError
from memory_core.workspace import relative_path


def register(sub: Any, common: argparse.ArgumentParser) -> None:
    evo = sub.add_parser(
        "evolution",
        parents=[common],
        help="a file's recorded changes, or the most active files",
        description="With FILE: its changes, newest first (who, when, lines, hashes). "
        "Without: the files changed most.",
    )
    evo.add_argument("file", nargs="?", metavar="FILE", help="a file of the workspace")
    evo.add_argument("--limit", type=int, default=50, help="at most this many rows (default 50)")
    evo.add_argument("--since", metavar="WHEN", help="only changes since (30m, 2h, 3d, ISO date)")
    evo.set_defaults(handler=run_evolution)

    dr = sub.add_parser(
        "drift",
        parents=[common],
        help="overlapping edits, stale citations, the workspace since a snapshot or session",
    )
    dr.add_argument(
        "--snapshot", metavar="ID", help="compare with this snapshot (default: the latest)"
    )
    dr.set_defaults(handler=run_drift)

    tl = sub.add_parser(
        "timeline",
        parents=[common],
        help="one timeline of file changes, git, snapshots, checkpoints, sessions, gotchas, events",
    )
    tl.add_argument("--since", metavar="WHEN", help="30m, 2h, 3d, 1w or an ISO date/time")
    tl.add_argument("--until", metavar="WHEN", help="30m, 2h, 3d, 1w or an ISO date/time")
    tl.add_argument("--limit", type=int, default=None, help="at most this many entries")
    tl.add_argument(
        "--source",
        action="append",
        choices=timeline.SOURCES,
        help="only these sources (repeatable)",
    )
    tl.add_argument("--file", metavar="PATH", help="only entries about this file")
    tl.set_defaults(handler=run_timeline)

    snap = sub.add_parser(
        "snapshot", parents=[common], help="context snapshots: capture, list, restore"
    )
    snap_sub = snap.add_subparsers(dest="snapshot_command", metavar="ACTION")
    snap_sub.required = True
    capture = snap_sub.add_parser("capture", parents=[common], help="take a snapshot now")
    capture.add_argument("--note", help="a note to remember why")
    capture.add_argument("--story", help="the story in progress (default: the session's)")
    capture.add_argument("--subtask", help="the subtask in progress (default: the session's)")
    capture.set_defaults(handler=run_snapshot_capture)
    listing = snap_sub.add_parser("list", parents=[common], help="snapshots, newest first")
    listing.set_defaults(handler=run_snapshot_list)
    restore = snap_sub.add_parser(
        "restore",
        parents=[common],
        help="what to reopen and what moved since (never checks out or stashes)",
    )
    restore.add_argument("id", metavar="ID")
    restore.set_defaults(handler=run_snapshot_restore)


def _since(text: str | None) -> float | None:
    return timeline.parse_since(text) if text else None


def _positive(value: int | None, flag: str) -> None:
    if value is not None and value < 1:
        raise UsageError(f"{flag} must be at least 1, got {value}")


def run_evolution(ctx: Context) -> int:
    store = ctx.store()
    evolution.observe_git(store)
    _positive(ctx.args.limit, "--limit")
    since = _since(ctx.args.since)
    if ctx.args.file:
        rel = relative_path(ctx.root, _absolute(ctx.args.file))
        rows = evolution.history(store, rel, limit=ctx.args.limit)
        if since is not None:
            rows = [row for row in rows if row["ts"] >= since]
        ctx.emit(
            {"path": rel, "history": rows},
            lambda: (
                "\n".join(evolution.describe(row) for row in rows)
                or f"no recorded changes of {rel}"
            ),
        )
        return 0
    files = evolution.most_active(store, since=since, limit=ctx.args.limit)

    def human() -> str:
        if not files:
            return "no recorded file changes yet\n" + _RECORDED_WHILE_RUNNING
        lines = [
            f"{'changes':>7}  {'editor':>6} {'agent':>6} {'extern':>6}  last                  file"
        ]
        for item in files:
            actors = item["actors"]
            lines.append(
                f"{item['changes']:>7}  {actors['editor']:>6} {actors['agent']:>6} "
                f"{actors['external']:>6}  {item['last_timestamp']}  {item['path']} "
                f"(last by {item['last_actor']})"
            )
        return "\n".join(lines)

    ctx.emit({"files": files}, human)
    return 0


# What a person needs to know when a history is empty: it is not kept by the command line.
_RECORDED_WHILE_RUNNING = (
    "engram records file changes while its language server runs in your editor or while an "
    "agent's hooks run (engram hooks install claude-code); commits are picked up by every command"
)


def _absolute(path: str) -> str:
    # A FILE argument is relative to where the user stands, not to the workspace root.
    return os.path.abspath(path)


def run_drift(ctx: Context) -> int:
    store = ctx.store()
    evolution.observe_git(store)
    items = drift.detect(store, ctx.settings, snapshot_id=ctx.args.snapshot)
    rows = [item.as_dict() for item in items]

    def human() -> str:
        if not rows and not snapshots.list_snapshots(store):
            return (
                "no drift among the recorded changes; there is no snapshot to compare the "
                "workspace with yet (engram snapshot capture takes one)\n" + _RECORDED_WHILE_RUNNING
            )
        if not rows:
            return "no drift: nothing collides and nothing moved since the last snapshot"
        return "\n".join(f"{row['severity']:<8} {row['kind']:<15} {row['summary']}" for row in rows)

    ctx.emit({"drift": rows}, human)
    return 0


def run_timeline(ctx: Context) -> int:
    store = ctx.store()
    evolution.observe_git(store)
    file = relative_path(ctx.root, _absolute(ctx.args.file)) if ctx.args.file else None
    found = timeline.entries(
        store,
        ctx.settings,
        since=_since(ctx.args.since),
        until=_since(ctx.args.until),
        sources=ctx.args.source,
        file=file,
        limit=ctx.args.limit,
    )
    ctx.emit(
        {"entries": found},
        lambda: (
            "\n".join(timeline.describe(entry) for entry in reversed(found))
            or "the timeline is empty\n" + _RECORDED_WHILE_RUNNING
        ),
    )
    return 0


def run_snapshot_capture(ctx: Context) -> int:
    store = ctx.store()
    evolution.observe_git(store)
    # Where the person works, when it is inside this workspace (a `--workspace` elsewhere
    # leaves it to the session's or the root).
    here = Path.cwd().resolve()
    inside = here == store.root or store.root in here.parents
    snap = snapshots.capture(
        store,
        note=ctx.args.note,
        story_id=ctx.args.story,
        subtask=ctx.args.subtask,
        working_directory=here if inside else None,
        settings=ctx.settings,
    )
    ctx.emit(snap, f"captured {snapshots.describe(snap)}")
    return 0


def run_snapshot_list(ctx: Context) -> int:
    store = ctx.store()
    evolution.observe_git(store)
    found = snapshots.list_snapshots(store)
    ctx.emit(
        {"snapshots": found},
        lambda: (
            "\n".join(snapshots.describe(s) for s in found)
            or "no snapshots yet (engram snapshot capture takes one; the editor takes them too)"
        ),
    )
    return 0


def run_snapshot_restore(ctx: Context) -> int:
    store = ctx.store()
    evolution.observe_git(store)
    plan = snapshots.restore_plan(store, ctx.args.id)

    def human() -> str:
        snap = plan["snapshot"]
        lines = [f"snapshot {snapshots.describe(snap)}"]
        if snap.get("working_directory"):
            lines.append(f"working directory: {snap['working_directory']}")
        if plan["documents"]:
            lines.append("reopen:")
            for doc in plan["documents"]:
                cursor = doc["cursor"]
                gone = "" if doc["exists"] else "  (gone)"
                lines.append(
                    f"  {doc['path']}:{cursor['line'] + 1}:{cursor['character'] + 1}{gone}"
                )
        for warning in plan["warnings"]:
            lines.append(f"warning: {warning}")
        lines.append(f"(captured {clock.ago(snap['ts'])}; engram does not check out or stash)")
        return "\n".join(lines)

    ctx.emit(plan, human)
    return 0
