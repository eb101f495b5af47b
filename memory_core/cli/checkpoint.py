"""`engram checkpoint ...` and `engram rollback CHECKPOINT`.

Apart from the session commands: a cold `engram checkpoint create` loads the checkpoint code
and nothing of sessions unless an agent's session is active (the sessions package was a fifth
of the command's start)."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from memory_core import checkpoints, clock
from memory_core.cli.context import Context
from memory_core.errors import EXIT_FAILED, UsageError
from memory_core.store import Store


def register(sub: Any, common: argparse.ArgumentParser) -> None:
    checkpoint = sub.add_parser(
        "checkpoint", parents=[common], help="snapshots of the workspace's files"
    )
    c_sub = checkpoint.add_subparsers(dest="checkpoint_command", metavar="ACTION")
    c_sub.required = True
    create = c_sub.add_parser("create", parents=[common], help="capture the workspace's files now")
    create.add_argument("name", nargs="?")
    create.add_argument("--description", default=None)
    create.set_defaults(handler=run_checkpoint_create)
    c_list = c_sub.add_parser("list", parents=[common], help="checkpoints, newest first")
    c_list.set_defaults(handler=run_checkpoint_list)
    c_diff = c_sub.add_parser("diff", parents=[common], help="what changed since a checkpoint")
    c_diff.add_argument("id", metavar="CHECKPOINT")
    c_diff.add_argument("--against", metavar="CHECKPOINT", help="compare with another checkpoint")
    c_diff.add_argument("--patch", action="store_true", help="show a unified diff of text files")
    c_diff.set_defaults(handler=run_checkpoint_diff)
    c_show = c_sub.add_parser("show", parents=[common], help="the files a checkpoint holds")
    c_show.add_argument("id", metavar="CHECKPOINT")
    c_show.set_defaults(handler=run_checkpoint_show)
    c_delete = c_sub.add_parser("delete", parents=[common], help="delete a checkpoint (asks first)")
    c_delete.add_argument("id", metavar="CHECKPOINT")
    c_delete.add_argument("--yes", action="store_true", help="do not ask")
    c_delete.set_defaults(handler=run_checkpoint_delete)

    rollback = sub.add_parser(
        "rollback",
        parents=[common],
        help="restore the workspace's files to a checkpoint (asks first)",
    )
    rollback.add_argument("checkpoint", metavar="CHECKPOINT")
    rollback.add_argument("--yes", action="store_true", help="do not ask")
    rollback.add_argument(
        "--rewind",
        action="store_true",
        help="also rewind the checkpoint's session to the turn it was taken at",
    )
    rollback.set_defaults(handler=run_rollback)


def _cancelled(ctx: Context, why: str) -> int:
    ctx.emit({"done": False, "reason": "cancelled"}, "")
    print(f"engram: cancelled: {why}", file=sys.stderr)
    return EXIT_FAILED


# -- checkpoints -------------------------------------------------------------------------------


def _count(n: int, word: str) -> str:
    return f"{n} {word}{'' if n == 1 else 's'}"


def _size(n: float) -> str:
    for unit in ("B", "KB", "MB"):
        if n < 1024:
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n:.1f} GB"


def _active_session(ctx: Context) -> str | None:
    """The session a checkpoint or rollback belongs to: the latest one, unless it is closed
    (`sessions.latest`, read here without loading the sessions package, which a checkpoint
    outside an agent's session never needs)."""
    current = ctx.store().query_one(
        "SELECT id, status FROM sessions ORDER BY last_activity_at DESC, rowid DESC LIMIT 1"
    )
    return str(current["id"]) if current and current["status"] != "closed" else None


def _git_status_ahead(ctx: Context) -> Any:
    """`git status` started now on a thread, when git is what will vouch for the checkpoint
    (watchman turned off, a git repository): the checkpoint code loads while git runs, instead
    of before it (None otherwise)."""
    if ctx.settings["checkpoints.watchman"] or not (ctx.root / ".git").exists():
        return None
    from memory_core.journal import GitInBackground

    return GitInBackground(ctx.root)


def run_checkpoint_create(ctx: Context) -> int:
    git = _git_status_ahead(ctx)  # first: the store opens while git works
    session_id = _active_session(ctx)
    made = checkpoints.create(
        ctx.store(),
        ctx.args.name,
        description=ctx.args.description,
        settings=ctx.settings,
        session_id=session_id,
        git=git,
    )
    if session_id:
        from memory_core import sessions

        sessions.record_tool_call(
            ctx.store(), session_id, tool="checkpoint", ok=True, summary=made["id"]
        )

    def human() -> str:
        text = (
            f"Checkpoint {made['id']}{' (' + made['name'] + ')' if made['name'] else ''}: "
            f"{_count(made['files'], 'file')}, {made['changed']} changed, "
            f"{_size(made['added_bytes'])} added to the store"
        )
        if made["skipped"]:
            text += f"\n  left out (over the size cap): {', '.join(made['skipped'][:10])}"
        if made["unreadable"]:
            text += (
                f"\n  NOT SAVED (could not be read; a rollback leaves them as they are): "
                f"{', '.join(made['unreadable'][:10])}"
            )
        return text

    ctx.emit(made, human)
    return 0


def run_checkpoint_list(ctx: Context) -> int:
    items = checkpoints.list_checkpoints(ctx.store())

    def human() -> str:
        if not items:
            return "No checkpoints yet. Make one with `engram checkpoint create`."
        return "\n".join(
            f"{c['id']}  {c['created_at']}  {c['reason']:<12} {_count(c['files'], 'file'):>12}  "
            f"{_turn_label(c):<10} {c['name'] or ''}".rstrip()
            for c in items
        )

    ctx.emit({"checkpoints": items}, human)
    return 0


def _turn_label(checkpoint: dict[str, Any]) -> str:
    """`turn 12` for a checkpoint taken during a session (what `rollback --rewind` goes back to)."""
    turn = checkpoint.get("turn_number")
    return f"turn {turn}" if turn is not None else ""


def run_checkpoint_diff(ctx: Context) -> int:
    store = ctx.store()
    changes = checkpoints.diff(store, ctx.args.id, ctx.args.against, settings=ctx.settings)
    if ctx.args.patch and not ctx.args.against:
        changes["patch"] = checkpoints.patch(store, ctx.args.id, settings=ctx.settings)

    def human() -> str:
        lines = [
            f"{flag} {path}"
            for flag, key in (
                ("A", "added"),
                ("M", "modified"),
                ("D", "deleted"),
                ("m", "mode_changed"),
            )
            for path in changes[key]
        ]
        if not lines:
            return f"No changes since {changes['id']}."
        if "patch" in changes:
            lines += ["", changes["patch"].rstrip("\n")]
        return "\n".join(lines)

    ctx.emit(changes, human)
    return 0


def run_checkpoint_show(ctx: Context) -> int:
    store = ctx.store()
    info = checkpoints.get(store, ctx.args.id)
    files = checkpoints.manifest(store, info["id"])
    ctx.emit(
        {**info, "manifest": files},
        lambda: "\n".join(f"{oct(f['mode'])[2:]:>4} {f['size']:>9}  {f['path']}" for f in files),
    )
    return 0


def run_checkpoint_delete(ctx: Context) -> int:
    store = ctx.store()
    info = checkpoints.get(store, ctx.args.id)
    if not ctx.args.yes and not ctx.confirm(f"Delete checkpoint {info['id']} ({info['label']})?"):
        return _cancelled(ctx, "nothing was deleted; pass --yes to delete without asking")
    result = checkpoints.delete(store, info["id"])
    ctx.emit(result, f"Deleted checkpoint {info['id']} ({_size(result['freed_bytes'])} freed)")
    return 0


def _record_rollback(
    ctx: Context, result: dict[str, Any], ts: float, session_id: str | None, undo_id: str
) -> None:
    """The rollback's event and its session's records (the tool call, every file it wrote or
    removed, in one transaction). Nothing of the answer reads them: a process that answers
    first (the resident server's child) records them after its answer, holding the store's
    after-answer lock so that whatever opens the store next finds them (docs/resident.md);
    any other records them now, on its open store."""
    recorded = dict(result)
    recorded.pop("rewound", None)  # (the event never held it)

    def record(store: Store) -> None:
        checkpoints.record_rollback(store, recorded, ts)
        if session_id:
            from memory_core import sessions

            activity = sessions.Activity(store)
            activity.tool_call(
                session_id,
                tool="rollback",
                ok=result["done"],
                summary=f"to {result['checkpoint']}: restored {len(result['restored'])}, "
                f"removed {len(result['removed'])}; undo with {undo_id}",
                ts=ts,
            )
            for rel in [*result["restored"], *result["removed"]]:
                activity.file_modified(session_id, rel, ts)
            activity.write()

    from memory_core import store as stores

    if not stores.answers_first():
        record(ctx.store())
        return
    stores.later_with_store(ctx.root, record, "the rollback's record not written")


def run_rollback(ctx: Context) -> int:
    git = _git_status_ahead(ctx)  # first: the store opens while git works
    store = ctx.store()
    plan = checkpoints.plan_rollback(store, ctx.args.checkpoint, settings=ctx.settings, git=git)
    target = plan.checkpoint
    if ctx.args.rewind and target.get("turn_number") is None:
        raise UsageError(
            f"checkpoint {target['id']} was not taken during a session: there is no conversation to rewind",
            hint="roll back without --rewind",
        )
    if not plan.writes and not plan.removes and not plan.blocked:
        done: dict[str, Any] = {"done": True, **plan.as_dict(), "restored": [], "removed": []}
        text = f"Nothing to do: the workspace already matches {target['id']}."
        if ctx.args.rewind:
            from memory_core import conversation

            done["rewound"] = conversation.rewind(store, target["id"])
            text = (
                f"The workspace already matches {target['id']}; session "
                f"{done['rewound']['session_id']} rewound to turn {done['rewound']['turn']}."
            )
        ctx.emit(done, text)
        return 0
    if not ctx.args.yes:
        if ctx.json:
            raise UsageError("rollback with --json needs --yes (there is no one to ask)")
        print(
            f"Roll back to {target['id']} ({target['label']}, {target['created_at']}):",
            file=sys.stderr,
        )
        for write in plan.writes:
            print(f"  restore {write.path}", file=sys.stderr)
        for rel in plan.removes:
            print(f"  remove  {rel}  (created after the checkpoint)", file=sys.stderr)
        if not ctx.confirm("Roll back these files?"):
            return _cancelled(ctx, "nothing was written; pass --yes to roll back without asking")
    session_id = _active_session(ctx)
    undo = checkpoints.prepare_undo(store, plan, settings=ctx.settings, session_id=session_id)
    result = checkpoints.apply_plan(store, plan, undo_checkpoint=undo["id"], record=False)
    done_at = clock.now()
    rewound = False
    try:
        if ctx.args.rewind:
            from memory_core import conversation

            result["rewound"] = conversation.rewind(store, target["id"])
        rewound = True
    finally:
        # After the rewind, which sets aside the session's records made after the checkpoint
        # (not the rollback's own); its event is recorded even when the rewind failed.
        _record_rollback(ctx, result, done_at, session_id if rewound else None, undo["id"])

    def human() -> str:
        lines = [
            f"Rolled back to {target['id']}: restored {_count(len(result['restored']), 'file')}, "
            f"removed {len(result['removed'])}, {result['unchanged']} already matched."
        ]
        lines += [f"  restored {p}" for p in result["restored"]]
        lines += [f"  removed  {p}" for p in result["removed"]]
        lines += [f"  FAILED   {f['path']}: {f['error']}" for f in result["failed"]]
        if "rewound" in result:
            rewound = result["rewound"]
            lines.append(
                f"Session {rewound['session_id']} rewound to turn {rewound['turn']} "
                f"({_count(rewound['turns_removed'], 'turn')} after it set aside; "
                "the whole session was saved first)"
            )
        lines.append(
            f"Undo with: engram rollback {undo['id']} --yes{' --rewind' if 'rewound' in result else ''}"
        )
        return "\n".join(lines)

    ctx.emit(result, human)
    return 0 if result["done"] else EXIT_FAILED
