"""`engram memory ...`, `engram export|import|delete|undelete|purge|anonymize`.

Long-term memory (add, search, list, show, related, forget, pin, resolve) and the lifecycle
and privacy commands that act on everything the store holds.
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path
from typing import Any

from memory_core import clock
from memory_core.cli.context import Context
from memory_core.errors import UsageError

_RELATIVE = re.compile(r"^(\d+(?:\.\d+)?)\s*([mhdw])$")
_UNIT_SECONDS = {"m": 60, "h": 3600, "d": 86400, "w": 7 * 86400}


def parse_when(text: str, *, now: float | None = None) -> float:
    """An ISO date or timestamp (UTC), or an age like `30d`, `12h`, `2w` (that long ago)."""
    value = text.strip()
    relative = _RELATIVE.match(value.lower())
    if relative:
        seconds = float(relative.group(1)) * _UNIT_SECONDS[relative.group(2)]
        return (clock.now() if now is None else now) - seconds
    try:
        return clock.parse_iso(value)
    except ValueError:
        raise UsageError(
            f"cannot read {text!r} as a date",
            hint="use an ISO date like 2026-01-31 (UTC) or an age like 30d, 12h, 2w",
        ) from None


def register(sub: Any, common: argparse.ArgumentParser) -> None:
    from memory_core.memory import RELATIONS, TYPES

    memory = sub.add_parser(
        "memory", parents=[common], help="long-term memory: add, search, list, forget"
    )
    msub = memory.add_subparsers(dest="memory_command", metavar="ACTION")
    msub.required = True

    add = msub.add_parser("add", parents=[common], help="remember TEXT")
    add.add_argument("text", help="what to remember (use - to read it from stdin)")
    add.add_argument(
        "--type", default="learning", choices=TYPES, help="kind of memory (default learning)"
    )
    add.add_argument("--tag", action="append", default=[], metavar="TAG", help="a tag (repeatable)")
    add.add_argument("--pin", action="store_true", help="never let it decay")
    add.add_argument(
        "--explicit", action="store_true", help="a preference the user stated (never below 0.6)"
    )
    add.add_argument(
        "--impact",
        choices=("critical", "high", "medium", "low"),
        help="a finding's severity or a decision's impact (critical findings stay >= 0.8,"
        " high-impact open decisions >= 0.9)",
    )
    add.add_argument("--session", metavar="ID", help="the session it came from")
    add.add_argument("--agent", metavar="NAME", help="who recorded it (default: cli)")
    add.add_argument("--file", metavar="PATH", help="a file it is about")
    add.add_argument("--line", type=int, metavar="N", help="the cited line (1-based)")
    add.add_argument("--end-line", type=int, metavar="N", help="the last cited line")
    for kind in RELATIONS:
        add.add_argument(
            f"--{kind.replace('_', '-')}",
            action="append",
            default=[],
            metavar="ID",
            dest=f"rel_{kind}",
            help=f"this memory {kind.replace('_', ' ')} memory ID",
        )
    add.set_defaults(handler=run_add)

    search = msub.add_parser(
        "search", parents=[common], help="search memories, gotchas, sessions, digests"
    )
    search.add_argument("query")
    search.add_argument("--limit", type=int, default=10)
    _filters(search, TYPES)
    _query_options(search)
    search.add_argument(
        "--kind",
        action="append",
        default=[],
        choices=("memory", "gotcha", "session", "digest"),
        help="only these kinds of results (repeatable)",
    )
    search.add_argument("--no-access", action="store_true", help="do not count this as an access")
    search.set_defaults(handler=run_search)

    lst = msub.add_parser("list", parents=[common], help="memories, newest first")
    lst.add_argument("--limit", type=int, default=50)
    _filters(lst, TYPES)
    _query_options(lst, decayed_flag=False)
    lst.add_argument("--all", action="store_true", help="include archived memories")
    lst.set_defaults(handler=run_list)

    show = msub.add_parser("show", parents=[common], help="one memory with its relations")
    show.add_argument("id")
    show.set_defaults(handler=run_show)

    related = msub.add_parser(
        "related", parents=[common], help="memories linked to ID (resolves, led_to, influenced)"
    )
    related.add_argument("id")
    related.add_argument("--depth", type=int, default=2)
    related.set_defaults(handler=run_related)

    relate = msub.add_parser("relate", parents=[common], help="record SOURCE KIND TARGET")
    relate.add_argument("source")
    relate.add_argument("kind", choices=RELATIONS)
    relate.add_argument("target")
    relate.set_defaults(handler=run_relate)

    for name, helptext in (
        ("pin", "never let ID decay"),
        ("unpin", "let ID decay again"),
        ("resolve", "mark ID resolved (a resolved finding decays faster)"),
        ("reopen", "mark ID open again"),
    ):
        action = msub.add_parser(name, parents=[common], help=helptext)
        action.add_argument("id")
        action.set_defaults(handler=run_update, action=name)

    forget = msub.add_parser(
        "forget", parents=[common], help="delete ID (recoverable with `engram undelete`)"
    )
    forget.add_argument("id")
    forget.add_argument("--reason", help="why (kept in the deletion record)")
    forget.set_defaults(handler=run_forget)

    sync = msub.add_parser(
        "sync",
        parents=[common],
        help="connect Claude Code's CLAUDE.md / MEMORY.md or Gemini CLI's GEMINI.md both ways",
    )
    sync.add_argument("agent", choices=("claude", "gemini"))
    sync.add_argument(
        "--to",
        choices=("project", "auto"),
        default="project",
        help="where engram's section goes: the project's CLAUDE.md / GEMINI.md (default) or"
        " Claude's auto memory MEMORY.md",
    )
    sync.add_argument("--file", metavar="PATH", help="use this memory file instead")
    sync.add_argument(
        "--read-only", action="store_true", help="only take facts in; write no section"
    )
    sync.set_defaults(handler=run_memory_sync)

    compact = msub.add_parser(
        "compact",
        parents=[common],
        help="compact a session now: every step the quota runs at 80 %% and 95 %%",
    )
    compact.add_argument("session", metavar="SESSION_ID")
    compact.set_defaults(handler=run_memory_compact)

    status = msub.add_parser(
        "status", parents=[common], help="memory counts by tier, quota use per session"
    )
    status.set_defaults(handler=run_memory_status)

    export = sub.add_parser(
        "export", parents=[common], help="everything (or one session) as json, yaml or md"
    )
    export.add_argument("--format", default="json", choices=("json", "yaml", "md"))
    export.add_argument("--out", metavar="PATH", help="write here (default: print)")
    export.add_argument("--session", metavar="ID", help="only this session and what cites it")
    export.set_defaults(handler=run_export)

    imp = sub.add_parser(
        "import", parents=[common], help="load an `engram export` (json or yaml) into this store"
    )
    imp.add_argument("path", help="the export file (- for stdin)")
    imp.add_argument("--format", choices=("json", "yaml"), help="default: from the file name")
    imp.set_defaults(handler=run_import)

    delete = sub.add_parser(
        "delete", parents=[common], help="delete into a recoverable state (30 days)"
    )
    delete.add_argument(
        "--memory", action="append", default=[], metavar="ID", help="a memory id (repeatable)"
    )
    delete.add_argument("--session", metavar="ID", help="a session and everything that cites it")
    delete.add_argument("--topic", metavar="TAG", help="memories with this tag")
    delete.add_argument("--agent", metavar="NAME", help="what this agent recorded")
    delete.add_argument(
        "--before", metavar="DATE", help="created before (ISO date or age like 90d)"
    )
    delete.add_argument("--after", metavar="DATE", help="created on or after")
    delete.add_argument("--reason", help="why (kept in the deletion record)")
    delete.add_argument("--list", action="store_true", help="list deletion records instead")
    delete.set_defaults(handler=run_delete)

    undelete = sub.add_parser(
        "undelete", parents=[common], help="restore a deletion (its id, or a deleted item's id)"
    )
    undelete.add_argument("id")
    undelete.set_defaults(handler=run_undelete)

    purge = sub.add_parser(
        "purge", parents=[common], help="remove for good what is past recovery; reclaim space"
    )
    purge.add_argument("--all", action="store_true", help="also what is still recoverable")
    purge.add_argument(
        "--yes", action="store_true", help="do not ask (needed with --all on a pipe)"
    )
    purge.set_defaults(handler=run_purge)

    anonymize = sub.add_parser(
        "anonymize",
        parents=[common],
        help="an export with names, e-mails, home paths and project names replaced by placeholders",
    )
    anonymize.add_argument("--format", default="json", choices=("json", "yaml", "md"))
    anonymize.add_argument("--out", metavar="PATH", help="write here (default: print)")
    anonymize.add_argument("--session", metavar="ID", help="only this session")
    anonymize.add_argument(
        "--name",
        action="append",
        default=[],
        metavar="NAME",
        help="another name to hide (repeatable)",
    )
    anonymize.add_argument(
        "--in-place", action="store_true", help="rewrite the store itself (asks first)"
    )
    anonymize.add_argument("--yes", action="store_true", help="do not ask")
    anonymize.set_defaults(handler=run_anonymize)


def _filters(parser: argparse.ArgumentParser, types: tuple[str, ...]) -> None:
    parser.add_argument("--type", choices=types, help="only this type")
    parser.add_argument(
        "--tag", action="append", default=[], metavar="TAG", help="with this tag (repeatable)"
    )
    parser.add_argument("--agent", metavar="NAME", help="recorded by this agent")
    parser.add_argument("--session", metavar="ID", help="from this session")
    parser.add_argument(
        "--since", metavar="DATE", help="created on or after (ISO date or age like 7d)"
    )
    parser.add_argument("--until", metavar="DATE", help="created before")


def _query_options(parser: argparse.ArgumentParser, *, decayed_flag: bool = True) -> None:
    parser.add_argument(
        "--min-priority", type=float, metavar="P", help="only entries whose priority is at least P"
    )
    if decayed_flag:
        parser.add_argument(
            "--include-decayed",
            action="store_true",
            help="also entries decayed below 0.3 (left out by default)",
        )
    parser.add_argument(
        "--offset", type=int, default=0, metavar="N", help="skip the first N results (paging)"
    )


def _query_values(args: argparse.Namespace) -> dict[str, Any]:
    if args.offset < 0:
        raise UsageError("--offset must be 0 or more")
    return {
        "min_priority": args.min_priority,
        # `memory list` is the inspection view: it shows decayed entries too.
        "include_decayed": getattr(args, "include_decayed", True),
        "offset": args.offset,
    }


def _filter_values(args: argparse.Namespace) -> dict[str, Any]:
    return {
        "agent": args.agent,
        "session_id": args.session,
        "since": parse_when(args.since) if args.since else None,
        "until": parse_when(args.until) if args.until else None,
    }


def _filtered(args: argparse.Namespace) -> bool:
    return bool(args.type or args.tag or args.agent or args.session or args.since or args.until)


def _line(entry: dict[str, Any]) -> str:
    tags = f"  [{', '.join(entry['tags'])}]" if entry.get("tags") else ""
    kind = entry.get("type") or entry.get("kind")
    pin = " pinned" if entry.get("pinned") else ""
    return f"{entry['id']}  {kind:<10} {entry['tier']:<4} {entry['priority']:.2f}{pin}  {entry['label']}{tags}"


def _text_arg(text: str) -> str:
    from memory_core.cli.context import read_stdin_text

    return read_stdin_text() if text == "-" else text


# -- memory ----------------------------------------------------------------------------------


def run_add(ctx: Context) -> int:
    from memory_core import memory, quota

    args = ctx.args
    relations = [
        (kind, target) for kind in memory.RELATIONS for target in getattr(args, f"rel_{kind}")
    ]
    store = ctx.store()
    text = _text_arg(args.text)
    # A full session, or one this entry would take past its quota, refuses the write (MEM_E001)
    # and nothing is stored.
    quota.before_write(store, args.session, ctx.settings, incoming=len(text.encode("utf-8")))
    with quota.guarded_write(store, args.session, ctx.settings):
        entry = memory.add(
            store,
            text,
            type=args.type,
            tags=args.tag,
            pinned=args.pin,
            explicit=args.explicit,
            impact=args.impact,
            session_id=args.session,
            agent=args.agent or "cli",
            provenance={"recorded_by": "cli"},
            file=args.file,
            line=args.line,
            end_line=args.end_line,
            relations=relations,
        )
    notice = quota.after_write(store, args.session, ctx.settings)
    if notice is not None:
        print(notice["message"], file=sys.stderr)
    ctx.emit(entry, f"Remembered {entry['id']} ({entry['type']}): {entry['label']}")
    return 0


def run_search(ctx: Context) -> int:
    from memory_core import search

    args = ctx.args
    if args.limit < 1:
        raise UsageError("--limit must be at least 1")
    results = search.search(
        ctx.store(),
        args.query,
        limit=args.limit,
        type=args.type,
        tags=args.tag,
        kinds=args.kind or None,
        record_access=not args.no_access,
        **_query_values(args),
        **_filter_values(args),
    )

    def human() -> str:
        if not results:
            return f"Nothing found for {args.query!r}."
        return "\n".join(_line(entry) for entry in results)

    ctx.emit({"query": args.query, "results": results}, human)
    return 0


def run_list(ctx: Context) -> int:
    from memory_core import memory

    args = ctx.args
    entries = memory.list_memories(
        ctx.store(),
        type=args.type,
        tags=args.tag,
        include_archived=args.all,
        limit=args.limit,
        **_query_values(args),
        **_filter_values(args),
    )
    ctx.emit(
        {"memories": entries},
        lambda: (
            "\n".join(_line(e) for e in entries)
            if entries
            else ("No memories match." if _filtered(args) else "No memories yet.")
        ),
    )
    return 0


def run_show(ctx: Context) -> int:
    from memory_core import memory

    entry = memory.get(ctx.store(), ctx.args.id)

    def human() -> str:
        lines = [
            f"{entry['id']}  {entry['type']}  priority {entry['priority']:.2f} ({entry['tier']})"
            + ("  pinned" if entry["pinned"] else ""),
            entry["content"],
            f"tags: {', '.join(entry['tags']) or '-'}   status: {entry['status']}",
            f"created {entry['created_at']}, last accessed {entry['last_accessed']},"
            f" {entry['access_count']} accesses",
        ]
        if entry["file"]:
            lines.append(f"cites {entry['file']}" + (f":{entry['line']}" if entry["line"] else ""))
        for rel in entry["relations"]:
            arrow = "->" if rel["direction"] == "out" else "<-"
            lines.append(f"  {rel['kind']} {arrow} {rel['id']}")
        return "\n".join(lines)

    ctx.emit(entry, human)
    return 0


def run_related(ctx: Context) -> int:
    from memory_core import memory

    related = memory.find_related(ctx.store(), ctx.args.id, depth=ctx.args.depth)
    ctx.emit(
        {"id": ctx.args.id, "related": related},
        lambda: (
            "\n".join(f"{' > '.join(e['via'])}: {_line(e)}" for e in related)
            or f"Nothing is related to {ctx.args.id}."
        ),
    )
    return 0


def run_relate(ctx: Context) -> int:
    from memory_core import memory

    args = ctx.args
    memory.relate(ctx.store(), args.source, args.kind, args.target)
    ctx.emit(
        {"source": args.source, "kind": args.kind, "target": args.target},
        f"{args.source} {args.kind} {args.target}",
    )
    return 0


def run_update(ctx: Context) -> int:
    from memory_core import memory

    action = ctx.args.action
    table: dict[str, dict[str, Any]] = {
        "pin": {"pinned": True},
        "unpin": {"pinned": False},
        "resolve": {"status": "resolved"},
        "reopen": {"status": "open"},
    }
    changes = table[action]
    entry = memory.update(ctx.store(), ctx.args.id, **changes)
    ctx.emit(entry, f"{entry['id']}: {action} done")
    return 0


def run_forget(ctx: Context) -> int:
    from memory_core import lifecycle

    record = lifecycle.delete(
        ctx.store(),
        memory_ids=[ctx.args.id],
        reason=ctx.args.reason,
        actor="cli",
        settings=ctx.settings,
    )
    ctx.emit(
        record,
        f"Forgot {ctx.args.id} ({record['id']}); `engram undelete {ctx.args.id}` brings it back"
        f" until {record['recover_until']}.",
    )
    return 0


def run_memory_status(ctx: Context) -> int:
    from memory_core import quota

    facts = quota.memory_status(ctx.store(), ctx.settings)

    def human() -> str:
        tiers = facts["tiers"]
        lines = [
            f"memories: {facts['memories']} (hot {tiers['hot']}, warm {tiers['warm']}, cold {tiers['cold']},"
            f" pinned {facts['pinned']}, archived {facts['archived']})",
            f"deleted, recoverable: {facts['recoverable_deletions']}",
        ]
        for session in facts["sessions"]:
            lines.append(
                f"  session {session['session_id']}: {session['used_bytes']:,} of"
                f" {session['quota_bytes']:,} bytes ({session['percent']:.0f} %)"
            )
        return "\n".join(lines)

    ctx.emit(facts, human)
    return 0


# -- lifecycle -------------------------------------------------------------------------------


def run_delete(ctx: Context) -> int:
    from memory_core import lifecycle

    args = ctx.args
    store = ctx.store()
    if args.list:
        records = lifecycle.deletions(store)
        ctx.emit(
            {"deletions": records},
            lambda: (
                "\n".join(
                    f"{r['id']}  {r['state']:<8} {r['created_at']}  {r['what']}"
                    + (f"  ({r['reason']})" if r["reason"] else "")
                    for r in records
                )
                or "Nothing was deleted."
            ),
        )
        return 0
    if not (args.memory or args.session or args.topic or args.agent or args.before or args.after):
        raise UsageError(
            "say what to delete",
            hint="--session ID, --topic TAG, --before DATE, --after DATE, --agent NAME or --memory ID",
        )
    record = lifecycle.delete(
        store,
        memory_ids=args.memory,
        topic=args.topic,
        session_id=args.session,
        agent=args.agent,
        before=parse_when(args.before) if args.before else None,
        after=parse_when(args.after) if args.after else None,
        reason=args.reason,
        actor="cli",
        settings=ctx.settings,
    )
    counts = ", ".join(f"{n} {table}" for table, n in record["counts"].items())
    ctx.emit(
        record,
        f"Deleted {record['what']} ({counts}) as {record['id']}; recoverable with"
        f" `engram undelete {record['id']}` until {record['recover_until']}.",
    )
    return 0


def run_undelete(ctx: Context) -> int:
    from memory_core import privacy

    record = privacy.undelete(ctx.store(), ctx.args.id)
    counts = ", ".join(f"{n} {table}" for table, n in record["restored"].items())
    ctx.emit(record, f"Restored {record['what']} ({counts}).")
    return 0


def run_purge(ctx: Context) -> int:
    from memory_core import lifecycle

    args = ctx.args
    if (
        args.all
        and not args.yes
        and not ctx.confirm("Purge everything deleted, including what could still be recovered?")
    ):
        raise UsageError("purge --all not confirmed; nothing removed", hint="add --yes to confirm")
    store = ctx.store()
    # Housekeeping first: sessions idle for 30 days keep their summary, their detail is
    # compressed (and the space it took is reclaimed by the VACUUM of the purge).
    archived = lifecycle.archive_sessions(store)
    result = lifecycle.purge(store, everything=args.all)
    result["archived_sessions"] = archived["sessions"]
    note = f" Archived {len(archived['sessions'])} idle session(s)." if archived["sessions"] else ""
    ctx.emit(
        result,
        f"Purged {len(result['purged'])} deletion(s) for good; store {result['size_before']:,} ->"
        f" {result['size_after']:,} bytes.{note}",
    )
    return 0


# -- privacy ---------------------------------------------------------------------------------


def _write_or_print(ctx: Context, text: str, out: str | None, what: str) -> None:
    from memory_core.store import write_private_file

    if out:
        path = Path(out).expanduser()
        if not path.is_absolute():
            path = Path.cwd() / path
        write_private_file(path, text)
        ctx.emit({"path": str(path), "bytes": len(text.encode("utf-8"))}, f"Wrote {what} to {path}")
    else:
        sys.stdout.write(text if text.endswith("\n") else text + "\n")


def run_export(ctx: Context) -> int:
    from memory_core import privacy

    data = privacy.export_data(ctx.store(), session_id=ctx.args.session)
    text = privacy.render(data, ctx.args.format)
    _write_or_print(ctx, text, ctx.args.out, "the export")
    return 0


def run_import(ctx: Context) -> int:
    from memory_core import privacy

    args = ctx.args
    if args.path == "-":
        from memory_core.cli.context import read_stdin_text

        text = read_stdin_text()
        fmt = args.format or "json"
    else:
        path = Path(args.path).expanduser()
        try:
            text = path.read_text(encoding="utf-8")
        except OSError as exc:
            raise UsageError(f"cannot read {path}: {exc.strerror or exc}") from None
        fmt = args.format or ("yaml" if path.suffix.lower() in (".yaml", ".yml") else "json")
    result = privacy.import_data(ctx.store(), privacy.parse(text, fmt))
    added = ", ".join(f"{n} {table}" for table, n in result["inserted"].items()) or "nothing new"
    ctx.emit(result, f"Imported {added} ({result['skipped']} already present or unknown).")
    return 0


def run_anonymize(ctx: Context) -> int:
    from memory_core import privacy

    args = ctx.args
    store = ctx.store()
    if args.in_place:
        if not args.yes and not ctx.confirm(
            "Rewrite the store with names replaced? This cannot be undone."
        ):
            raise UsageError(
                "anonymize --in-place not confirmed; nothing changed", hint="add --yes to confirm"
            )
        result = privacy.anonymize_store(store, extra_names=args.name)
        ctx.emit(result, f"Anonymized the store: {result['replaced']} value(s) rewritten.")
        return 0
    data = privacy.export_data(store, session_id=args.session)
    anonymized, mapping = privacy.anonymize(data, privacy.identities(store, extra=args.name))
    _write_or_print(
        ctx,
        privacy.render(anonymized, args.format),
        args.out,
        f"an anonymized export ({len(mapping)} names replaced)",
    )
    return 0


def run_memory_sync(ctx: Context) -> int:
    from memory_core.agents import memory_files

    args = ctx.args
    path = Path(args.file).expanduser().resolve() if args.file else None
    report = memory_files.sync(
        ctx.store(), args.agent, write=not args.read_only, to=args.to, path=path
    )

    def human() -> str:
        lines = []
        for entry in report["files"]:
            if entry.get("nothing_to_write"):
                lines.append(
                    f"{entry['path']}: {len(entry.get('imported', []))} new fact(s) taken in; "
                    "no section written: nothing confirmed or pinned yet (confirm a gotcha, "
                    "pin a decision or add a rule first)"
                )
                continue
            if not entry["exists"] and not entry["written"]:
                lines.append(f"{entry['path']}: not there")
                continue
            done = [f"{len(entry['imported'])} new fact(s) taken in"]
            if entry["written"]:
                done.append("engram's section written")
            lines.append(f"{entry['path']}: {', '.join(done)}")
        return "\n".join(lines)

    ctx.emit(report, human)
    return 0


def run_memory_compact(ctx: Context) -> int:
    from memory_core import quota, sessions

    store = ctx.store()
    session_id = sessions.get(store, ctx.args.session)["id"]
    result = quota.compact(store, session_id, ctx.settings, every_step=True)
    steps = ", ".join(step["step"] for step in result["steps"]) or "nothing it may remove"
    ctx.emit(
        result,
        f"Compacted {session_id}: {result['before_bytes']:,} -> {result['after_bytes']:,} bytes"
        f" of {result['quota_bytes']:,} ({steps}).",
    )
    return 0
