"""`engram gotcha ...` and `engram error track`: the command-line face of memory_core.gotchas."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from memory_core import clock
from memory_core.cli.context import Context
from memory_core.gotchas.normalize import CATEGORIES, SEVERITIES

# What fills the list, for a person who expected something in it.
_NO_GOTCHAS = (
    "No gotchas yet. engram learns one when the same error comes back 3 times in a day (through "
    "the agent's hooks, the editor or engram error track); engram gotcha add writes one by hand."
)


def register(sub: Any, common: argparse.ArgumentParser) -> None:
    gotcha = sub.add_parser("gotcha", parents=[common], help="known pitfalls and their workarounds")
    actions = gotcha.add_subparsers(dest="gotcha_command", metavar="ACTION")
    actions.required = True

    add = actions.add_parser(
        "add", parents=[common], help="write down a gotcha (confirmed from the start)"
    )
    add.add_argument("title")
    add.add_argument("--description", default="")
    add.add_argument("--workaround", default="")
    add.add_argument(
        "--category", choices=CATEGORIES, default=None, help="default: inferred from the text"
    )
    add.add_argument("--severity", choices=SEVERITIES, default="medium")
    add.add_argument(
        "--file",
        dest="files",
        action="append",
        default=[],
        metavar="GLOB",
        help="a related file glob (repeat for several); the gotcha shows in matching files",
    )
    add.add_argument(
        "--pattern",
        default=None,
        metavar="RE",
        help="code pattern (a regular expression) it shows on",
    )
    add.add_argument(
        "--literal", action="store_true", help="treat --pattern as literal text, not a regex"
    )
    add.add_argument(
        "--error-pattern",
        default=None,
        metavar="TEXT",
        help="error text that counts as this gotcha",
    )
    add.set_defaults(handler=run_add)

    listing = actions.add_parser("list", parents=[common], help="open gotchas, most severe first")
    listing.add_argument("--all", action="store_true", help="include resolved gotchas")
    listing.set_defaults(handler=run_list)

    for name, help_text, handler in (
        ("show", "everything about one gotcha", run_show),
        ("resolve", "mark a gotcha resolved (it reopens if its error returns)", run_resolve),
        ("promote", "write a gotcha into .engram/team/gotchas.toml for the team", run_promote),
    ):
        parser = actions.add_parser(name, parents=[common], help=help_text)
        parser.add_argument("id", help="gotcha id (G-xxxxxxxx; a unique prefix will do)")
        parser.set_defaults(handler=handler)

    confirm = actions.add_parser(
        "confirm",
        parents=[common],
        help="confirm a learned (candidate) gotcha, optionally writing down what to do about it",
    )
    confirm.add_argument("id", help="gotcha id (G-xxxxxxxx; a unique prefix will do)")
    confirm.add_argument("--title")
    confirm.add_argument("--description")
    confirm.add_argument("--workaround", help="what to do instead (shown in the hover)")
    confirm.add_argument("--severity", choices=["critical", "high", "medium", "low"])
    confirm.set_defaults(handler=run_confirm)

    snooze = actions.add_parser(
        "snooze", parents=[common], help="hide a gotcha from the editor for some days"
    )
    snooze.add_argument("id")
    snooze.add_argument("--days", type=float, default=7.0)
    snooze.set_defaults(handler=run_snooze)

    context = actions.add_parser(
        "context", parents=[common], help="the gotchas relevant to a task, for a prompt"
    )
    context.add_argument("task")
    context.add_argument("--file", dest="files", action="append", default=[], metavar="PATH")
    context.add_argument(
        "--limit", type=int, default=None, help="how many (default: gotchas.context_limit)"
    )
    context.set_defaults(handler=run_context)

    importing = actions.add_parser(
        "import",
        parents=[common],
        help="import gotchas from a gotchas.json file (engram's export, or the AIOS gotchas-memory layout)",
    )
    importing.add_argument("file", type=Path)
    importing.set_defaults(handler=run_import)

    export = actions.add_parser(
        "export", parents=[common], help="rewrite exports/gotchas.md and gotchas.json"
    )
    export.set_defaults(handler=run_export)

    error = sub.add_parser("error", parents=[common], help="errors that may become gotchas")
    error_actions = error.add_subparsers(dest="error_command", metavar="ACTION")
    error_actions.required = True
    track = error_actions.add_parser(
        "track", parents=[common], help="record one occurrence of an error"
    )
    track.add_argument("message", help="the error text (a traceback, a compiler line, ...)")
    track.add_argument(
        "--file", default=None, help="the file it points at (default: parsed from the message)"
    )
    track.add_argument("--line", type=int, default=None, help="the line it points at (1-based)")
    track.add_argument("--command", default=None, help="the command that failed")
    track.add_argument(
        "--at", default=None, metavar="TIME", help="when it happened (ISO-8601; default: now)"
    )
    track.set_defaults(handler=run_track)


def _line(gotcha: Any) -> str:
    status = {"candidate": " (candidate)", "resolved": " (resolved)"}.get(gotcha.status, "")
    seen = f", {gotcha.occurrences}x" if gotcha.occurrences else ""
    return f"{gotcha.id}  {gotcha.severity:<8} {gotcha.category:<11} {gotcha.title}{status}{seen}"


def run_add(ctx: Context) -> int:
    from memory_core import gotchas

    args = ctx.args
    gotcha = gotchas.add(
        ctx.store(),
        args.title,
        description=args.description,
        workaround=args.workaround,
        category=args.category,
        severity=args.severity,
        related_files=args.files,
        pattern=args.pattern,
        pattern_kind="literal" if args.literal else "regex",
        error_pattern=args.error_pattern,
    )
    ctx.emit(gotcha.to_dict(), f"Added {_line(gotcha)}")
    return 0


def run_list(ctx: Context) -> int:
    from memory_core import gotchas

    found = gotchas.list_gotchas(ctx.store(), include_resolved=ctx.args.all)
    ctx.emit(
        {"gotchas": [g.to_dict() for g in found]},
        lambda: "\n".join(_line(g) for g in found) if found else _NO_GOTCHAS,
    )
    return 0


def _details(gotcha: Any) -> str:
    lines = [
        f"{gotcha.id}: {gotcha.title}",
        f"  severity {gotcha.severity}, category {gotcha.category}, "
        f"status {gotcha.status}, source {gotcha.source_type}",
    ]
    for label, value in (
        ("description", gotcha.description),
        ("workaround", gotcha.workaround),
        ("pattern", gotcha.code_pattern),
        ("error", gotcha.error_pattern),
    ):
        if value:
            lines.append(f"  {label}: {value}")
    if gotcha.related_files:
        lines.append(f"  files: {', '.join(gotcha.related_files)}")
    if gotcha.occurrences:
        lines.append(
            f"  occurrences: {gotcha.occurrences}, first seen {clock.iso(gotcha.first_seen)}, "
            f"last seen {clock.iso(gotcha.last_seen)}"
        )
    for anchor in gotcha.anchors:
        lines.append(f"  at {anchor.path}:{anchor.line + 1}: {anchor.text or ''}".rstrip())
    for sample in gotcha.samples:
        lines.append(f"  sample {sample.get('ts', '')}: {sample.get('message', '')}")
    return "\n".join(lines)


def run_show(ctx: Context) -> int:
    from memory_core import gotchas

    gotcha = gotchas.get(ctx.store(), ctx.args.id)
    ctx.emit(gotcha.to_dict(), _details(gotcha))
    return 0


def _change(ctx: Context, verb: str, fn: Any, *extra: Any) -> int:
    gotcha = fn(ctx.store(), ctx.args.id, *extra)
    ctx.emit(gotcha.to_dict(), f"{verb} {_line(gotcha)}")
    return 0


def run_resolve(ctx: Context) -> int:
    from memory_core import gotchas

    return _change(ctx, "Resolved", gotchas.resolve)


def run_confirm(ctx: Context) -> int:
    from memory_core import gotchas

    # Confirming is when a person knows what the candidate is about: take what they know with it.
    fields = {
        name: getattr(ctx.args, name)
        for name in ("title", "description", "workaround", "severity")
        if getattr(ctx.args, name) is not None
    }
    if fields:
        gotchas.update(ctx.store(), ctx.args.id, **fields)
    return _change(ctx, "Confirmed", gotchas.confirm)


def run_snooze(ctx: Context) -> int:
    from memory_core import gotchas

    return _change(ctx, f"Snoozed for {ctx.args.days:g} days:", gotchas.snooze, ctx.args.days)


def run_promote(ctx: Context) -> int:
    from memory_core.gotchas import team

    store = ctx.store()
    gotcha = team.promote(store, ctx.args.id)
    path = team.team_path(store.root)
    ctx.emit({**gotcha.to_dict(), "team_file": str(path)}, f"Promoted {gotcha.id} into {path}")
    return 0


def run_context(ctx: Context) -> int:
    from memory_core import gotchas
    from memory_core.errors import UsageError

    limit = (
        ctx.args.limit if ctx.args.limit is not None else int(ctx.settings["gotchas.context_limit"])
    )
    if limit < 1:
        raise UsageError(f"--limit must be at least 1, got {limit}")
    store = ctx.store()
    ranked = gotchas.rank_for_task(store, ctx.args.task, ctx.args.files, limit)
    from memory_core.gotchas.context import format_markdown

    markdown = format_markdown([g for _score, g in ranked])
    ctx.emit(
        {"gotchas": [{**g.to_dict(), "score": score} for score, g in ranked], "markdown": markdown},
        markdown.rstrip() if markdown else "No known gotcha is relevant to this task.",
    )
    return 0


def run_import(ctx: Context) -> int:
    from memory_core.gotchas import exports

    report = exports.import_file(ctx.store(), ctx.args.file)

    def human() -> str:
        lines = [
            f"Imported {len(report.imported)} gotchas, skipped {len(report.skipped)} already present."
        ]
        lines += [f"  note: {problem}" for problem in report.problems]
        return "\n".join(lines)

    ctx.emit(report.to_dict(), human)
    return 0


def run_export(ctx: Context) -> int:
    from memory_core.gotchas import exports

    md_path, json_path = exports.write_exports(ctx.store())
    ctx.emit({"markdown": str(md_path), "json": str(json_path)}, f"Wrote {md_path} and {json_path}")
    return 0


def run_track(ctx: Context) -> int:
    from memory_core import gotchas
    from memory_core.errors import UsageError

    args = ctx.args
    when = None
    if args.at is not None:
        try:
            when = clock.parse_iso(args.at)
        except ValueError:
            raise UsageError(f"--at must be an ISO-8601 time, got {args.at!r}") from None
    result = gotchas.track_error(
        ctx.store(),
        args.message,
        settings=ctx.settings,
        file=args.file,
        line=args.line,
        command=args.command,
        tool="cli",
        now=when,
    )

    def human() -> str:
        if result.created:
            return (
                f"Tracked (seen {result.occurrences}x): learned candidate gotcha {result.gotcha_id}; "
                f"confirm it with `engram gotcha confirm {result.gotcha_id}`"
            )
        if result.reopened:
            return (
                f"Tracked: the error of resolved gotcha {result.gotcha_id} came back; reopened it"
            )
        if result.gotcha_id:
            return f"Tracked: known gotcha {result.gotcha_id} (seen {result.occurrences}x)"
        threshold = int(ctx.settings["gotchas.threshold"])
        return f"Tracked: seen {result.occurrences} of {threshold} times needed to learn a gotcha"

    ctx.emit(result.to_dict(), human)
    return 0
