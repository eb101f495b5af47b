"""`engram session ...` (checkpoints and rollback: `memory_core.cli.checkpoint`)."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from memory_core import sessions
from memory_core.cli.context import Context
from memory_core.errors import EXIT_FAILED, EngramError, NotFoundError, UsageError

# Sessions come from agents, not from this command: say how they get here.
_NO_SESSIONS = (
    "No sessions yet. The agent's hooks record them as it works (engram hooks install "
    "claude-code, or gemini); past Claude Code sessions come in with engram ingest claude-code."
)


def register(sub: Any, common: argparse.ArgumentParser) -> None:
    session = sub.add_parser("session", parents=[common], help="agent and editor sessions")
    s_sub = session.add_subparsers(dest="session_command", metavar="ACTION")
    s_sub.required = True

    def add(name: str, help_text: str, handler: Any) -> argparse.ArgumentParser:
        parser: argparse.ArgumentParser = s_sub.add_parser(name, parents=[common], help=help_text)
        parser.set_defaults(handler=handler)
        return parser

    add("list", "sessions, most recent first", run_list)
    start = add("start", "start an editor session (agents start theirs through hooks)", run_start)
    start.add_argument("name", nargs="?", help="a unique name to find it by")
    start.add_argument("--agent", default="editor", help="who works in it (default: editor)")
    start.add_argument(
        "--type",
        dest="session_type",
        default=None,
        choices=sessions.SESSION_TYPES,
        help="default: detected (new after an hour of silence, workflow while one is active)",
    )
    close = add("close", "end a session (default: the latest) and show its metrics", run_close)
    close.add_argument("id", nargs="?", metavar="NAME_OR_ID")
    close.add_argument("--abort", action="store_true", help="it was abandoned, not completed")
    save = add(
        "save", "save the latest (or --session) session, optionally under a unique name", run_save
    )
    save.add_argument("name", nargs="?")
    save.add_argument(
        "--session", metavar="NAME_OR_ID", help="the session to save (default: the latest)"
    )
    save.add_argument(
        "--yes", action="store_true", help="take the name even if another session has it"
    )
    load = add(
        "load",
        "load a saved session by name or id, or from an exported session .json file",
        run_load,
    )
    load.add_argument("id", metavar="NAME_OR_ID")
    load.add_argument("--last", type=int, default=10, help="turns to show (default 10)")
    resume = add(
        "resume", "load a session and make it active again (default: the latest)", run_resume
    )
    resume.add_argument("id", nargs="?", metavar="NAME_OR_ID")
    resume.add_argument(
        "--context",
        action="store_true",
        help="only print the memory an agent gets at session start",
    )
    delete = add(
        "delete",
        "delete a session and its saved copies, recoverable for 30 days (asks first)",
        run_delete,
    )
    delete.add_argument("id", metavar="NAME_OR_ID")
    delete.add_argument("--yes", action="store_true", help="do not ask")
    hist = add("history", "the turns of a session (default: the latest)", run_history)
    hist.add_argument("id", nargs="?", metavar="NAME_OR_ID")
    hist.add_argument("--last", type=int, default=None, help="only the last N turns")
    met = add("metrics", "duration, turns, tokens, files, commands, tool-call success", run_metrics)
    met.add_argument("id", nargs="?", metavar="NAME_OR_ID")
    summ = add(
        "summary",
        "the session as Markdown (the agent's summary, else built from facts)",
        run_summary,
    )
    summ.add_argument("id", nargs="?", metavar="NAME_OR_ID")
    summ.add_argument("--out", metavar="PATH", help="write it to a file instead")
    exp = add(
        "export",
        "a session as JSON: engram's full document, or the beans tool's session layout",
        run_export,
    )
    exp.add_argument("id", nargs="?", metavar="NAME_OR_ID")
    exp.add_argument(
        "--format",
        dest="export_format",
        choices=("engram", "beans"),
        default="engram",
        help="engram: everything engram records (default); beans: session, turns and workspace as the beans tool writes them",
    )
    exp.add_argument("--out", metavar="PATH", help="write it to a file instead of stdout")
    imp = add(
        "import",
        "import a session from an exported .json file (engram's or the beans tool's)",
        run_import,
    )
    imp.add_argument("file", metavar="FILE")
    imp.add_argument("--replace", action="store_true", help="replace a session with the same id")
    cap = add(
        "capture",
        "back the session's agent transcript up to the vault, redacted and compressed",
        run_capture,
    )
    cap.add_argument("id", nargs="?", metavar="NAME_OR_ID")
    cap.add_argument(
        "--transcript", metavar="FILE", help="the JSONL transcript (default: the agent's)"
    )
    st = add(
        "state",
        "the session's working state: new or resumed, recent agents and commands, workflow, story and subtask; options change it",
        run_state,
    )
    st.add_argument("id", nargs="?", metavar="NAME_OR_ID")
    st.add_argument("--agent", help="an agent took over (e.g. @dev)")
    st.add_argument("--command", dest="state_command", help="a command the agent ran")
    st.add_argument("--workflow", help="the active workflow ('' clears it)")
    st.add_argument("--workflow-state", dest="workflow_state", help="its state ('' clears it)")
    st.add_argument("--story", help="the story in progress ('' clears it)")
    st.add_argument("--subtask", help="the subtask in progress ('' clears it)")
    st.add_argument(
        "--task-done",
        dest="task_done",
        metavar="TASK",
        help="a task the agent finished (kept in the task history, the last 20)",
    )
    st.add_argument(
        "--result", dest="task_result", default="done", help="how it ended (default: done)"
    )
    add("crashed", "sessions that stopped without ending (and how to resume them)", run_crashed)
    rec = add(
        "recover", "resolve a crashed session: continue, review, restart or discard", run_recover
    )
    rec.add_argument("id", metavar="NAME_OR_ID")
    rec.add_argument("choice", choices=sessions.RESUME_CHOICES)


# -- sessions ----------------------------------------------------------------------------------


def _session_ref(ctx: Context, ref: str | None) -> str:
    if ref:
        return ref
    current = sessions.latest(ctx.store())
    if current is None:
        raise NotFoundError(
            "no session recorded in this workspace yet",
            hint="start one with `engram session start`, or let the agent hooks record one",
        )
    return str(current["id"])


def _session_line(s: dict[str, Any]) -> str:
    state = s["status"] if s["age_state"] == "fresh" else f"{s['status']}, {s['age_state']}"
    name = f" {s['name']}" if s["name"] else ""
    return f"{s['id']}{name}  [{state}]  {s['agent']}, {s['turns']} turns, last active {s['last_activity_at']}"


def run_list(ctx: Context) -> int:
    items = sessions.list_sessions(ctx.store())
    ctx.emit(
        {"sessions": items},
        lambda: "\n".join(_session_line(s) for s in items) if items else _NO_SESSIONS,
    )
    return 0


def run_start(ctx: Context) -> int:
    session = sessions.start(
        ctx.store(), agent=ctx.args.agent, name=ctx.args.name, session_type=ctx.args.session_type
    )
    ctx.emit(session, f"Started session {session['label']} ({session['id']})")
    return 0


def _token_line(label: str, t: dict[str, Any]) -> str:
    return (
        f"{label:<19}{t['total_tokens']} ({t['input_tokens']} in, {t['output_tokens']} out, "
        f"{t['cache_creation_tokens']} cache write, {t['cache_read_tokens']} cache read; "
        f"{t['messages']} messages)"
    )


def _metrics_text(m: dict[str, Any]) -> str:
    rate = "n/a" if m["success_rate"] is None else f"{m['success_rate']:.0%}"
    tokens = [
        f"tokens:            {m['total_tokens']} ({m['input_tokens']} in, {m['output_tokens']} out; "
        f"{m['avg_tokens_per_turn']} per turn)"
    ]
    if m.get("tokens"):
        # An agent's session: the four kinds, main chain and subagents apart.
        tokens = [
            _token_line("tokens:", m["tokens"]["all"]),
            _token_line("  main chain:", m["tokens"]["main"]),
        ]
        if m["tokens"]["subagents"]["messages"]:
            tokens.append(_token_line("  subagents:", m["tokens"]["subagents"]))
    outside = m.get("files_outside_project")
    return "\n".join(
        [
            f"duration:          {m['duration_seconds']:.0f} s",
            f"turns:             {m['turns']}",
            *tokens,
            f"files modified:    {m['files_modified']}"
            + (
                f" ({m['files_touched']} touched, the others put back)"
                if m.get("files_touched", m["files_modified"]) != m["files_modified"]
                else ""
            )
            + (f" (and {outside} outside the project)" if outside else ""),
            f"commands:          {m['commands']} ({m['commands_failed']} failed)",
            f"tool calls:        {m['tool_calls_succeeded']} ok, {m['tool_calls_failed']} failed "
            f"(success rate {rate})",
        ]
    )


def run_close(ctx: Context) -> int:
    store = ctx.store()
    ref = sessions.get(store, _session_ref(ctx, ctx.args.id))["id"]
    numbers = sessions.close(store, ref, reason="abort" if ctx.args.abort else "completion")
    # beans FR5: the session's end shows its summary (the same text its vault note holds).
    summary = sessions.summary_markdown(store, ref)
    ctx.emit(
        {
            "id": ref,
            "closed": True,
            "metrics": numbers,
            "summary": summary,
            "note": str(sessions.export_path(store, sessions.get(store, ref))),
        },
        lambda: f"Closed {ref}\n{_metrics_text(numbers)}\n\n{summary}",
    )
    return 0


def run_save(ctx: Context) -> int:
    store = ctx.store()
    ref = ctx.args.session
    try:
        saved = sessions.save(store, ref, name=ctx.args.name, overwrite=ctx.args.yes)
    except sessions.NameTakenError as taken:
        if (
            ctx.json
            or not ctx.interactive
            or not ctx.confirm(
                f"The name {taken.name!r} belongs to session {taken.holder}. Take it over?"
            )
        ):
            raise
        saved = sessions.save(store, ref, name=ctx.args.name, overwrite=True)
    from memory_core import quota

    # A saved copy counts against the session's quota: compaction and a warning at 80 / 95 %.
    notice = quota.after_write(store, saved["id"], ctx.settings)
    if notice is not None:
        print(notice["message"], file=sys.stderr)
    ctx.emit(
        saved,
        f"Saved session {saved['label']} ({saved['id']}, {saved['turns']} turns)\n  {saved['export_path']}",
    )
    return 0


def _turn_lines(turns: list[dict[str, Any]]) -> list[str]:
    lines = []
    for turn in turns:
        when = turn["started_at"] or ""
        lines.append(
            f"--- turn {turn['seq']}  {when}  ({turn['input_tokens']} in / {turn['output_tokens']} out)"
        )
        if turn["user_message"]:
            lines.append(f"user: {turn['user_message']}")
        if turn["assistant_response"]:
            lines.append(f"assistant: {turn['assistant_response']}")
        if turn["tool_calls"]:
            calls = ", ".join(
                f"{c['tool']}{'' if c.get('ok', True) else ' (failed)'}" for c in turn["tool_calls"]
            )
            lines.append(f"tools: {calls}")
    return lines


def _loaded_text(verb: str, loaded: dict[str, Any]) -> str:
    s = loaded["session"]
    lines = [
        f"{verb} session {s['label']} ({s['id']}): {s['status']}, {_count(s['turns'], 'turn')}, {s['agent']}"
    ]
    if s["summary"]["overview"]:
        lines.append(f"overview: {s['summary']['overview']}")
    if s["summary"]["open_items"]:
        lines += ["open items:", *(f"  - {item}" for item in s["summary"]["open_items"])]
    if loaded["files"]:
        lines.append("files: " + ", ".join(loaded["files"][:10]))
    lines += _turn_lines(loaded["turns"])
    return "\n".join(lines)


def run_load(ctx: Context) -> int:
    loaded = sessions.load(ctx.store(), ctx.args.id, history_limit=max(0, ctx.args.last))
    ctx.emit(loaded, lambda: _loaded_text("Loaded", loaded))
    _print_notes(loaded)
    return 0


def run_resume(ctx: Context) -> int:
    if ctx.args.context:
        from memory_core.cli.agents import run_session_context

        return run_session_context(ctx)
    from memory_core import conversation

    loaded = conversation.resume(ctx.store(), ctx.args.id, settings=ctx.settings)
    changes = loaded["workspace_changes"]
    ctx.emit(
        loaded,
        lambda: _loaded_text("Resumed", loaded) + "\n" + conversation.changes_text(changes),
    )
    return 0


def run_delete(ctx: Context) -> int:
    store = ctx.store()
    session = sessions.get(store, ctx.args.id)
    question = f"Delete session {session['label']} ({session['turns']} turns) and its saved copies?"
    if not ctx.args.yes and not ctx.confirm(question):
        return _cancelled(ctx, "nothing was deleted; pass --yes to delete without asking")
    result = sessions.delete(store, session["id"], actor="cli", settings=ctx.settings)
    ctx.emit(
        result,
        f"Deleted session {session['label']} ({result['deletion']});"
        f" `engram undelete {session['id']}` brings it back until {result['recover_until']}.",
    )
    return 0


def _count(n: int, word: str) -> str:
    return f"{n} {word}{'' if n == 1 else 's'}"


def _cancelled(ctx: Context, why: str) -> int:
    ctx.emit({"done": False, "reason": "cancelled"}, "")
    print(f"engram: cancelled: {why}", file=sys.stderr)
    return EXIT_FAILED


def run_history(ctx: Context) -> int:
    ref = _session_ref(ctx, ctx.args.id)
    turns = sessions.history(ctx.store(), ref, last=ctx.args.last)
    sid = sessions.get(ctx.store(), ref)["id"]
    ctx.emit(
        {"id": sid, "turns": turns}, lambda: "\n".join(_turn_lines(turns)) or "No turns recorded."
    )
    return 0


def run_metrics(ctx: Context) -> int:
    numbers = sessions.metrics(ctx.store(), _session_ref(ctx, ctx.args.id))
    ctx.emit(numbers, lambda: f"session {numbers['id']}\n{_metrics_text(numbers)}")
    return 0


def run_summary(ctx: Context) -> int:
    store = ctx.store()
    ref = sessions.get(store, _session_ref(ctx, ctx.args.id))["id"]
    text = sessions.summary_markdown(store, ref)
    if ctx.args.out:
        Path(ctx.args.out).write_text(text, encoding="utf-8")
        ctx.emit({"id": ref, "path": ctx.args.out}, f"Wrote {ctx.args.out}")
        return 0
    ctx.emit({"id": ref, "markdown": text}, text)
    return 0


def run_export(ctx: Context) -> int:
    ref = _session_ref(ctx, ctx.args.id)
    if ctx.args.export_format == "beans":
        from memory_core import beans

        doc = beans.export(ctx.store(), ref)
        sid = doc["session"]["sessionId"]
    else:
        doc = sessions.export_document(ctx.store(), ref)
        sid = doc["session"]["id"]
    text = json.dumps(doc, indent=2, ensure_ascii=False)
    if ctx.args.out:
        Path(ctx.args.out).write_text(text + "\n", encoding="utf-8")
        if ctx.json:
            ctx.emit({"id": sid, "path": ctx.args.out})
        else:
            print(f"Wrote {ctx.args.out}", file=ctx.stdout)
        return 0
    print(text, file=ctx.stdout)
    return 0


def run_import(ctx: Context) -> int:
    imported = sessions.import_file(ctx.store(), Path(ctx.args.file), replace=ctx.args.replace)
    ctx.emit(imported, lambda: _loaded_text("Imported", imported))
    _print_notes(imported)
    return 0


def _print_notes(loaded: dict[str, Any]) -> None:
    """What an import changed on the way in, on stderr (stdout stays the result, JSON or not)."""
    for note in loaded.get("notes") or ():
        print(f"engram: note: {note}", file=sys.stderr)


def run_capture(ctx: Context) -> int:
    from memory_core import session_vault

    store = ctx.store()
    sid = sessions.get(store, _session_ref(ctx, ctx.args.id))["id"]
    path = ctx.args.transcript
    if path is None:
        row = store.query_one(
            "SELECT transcript_path FROM agent_sessions WHERE session_id = ?", (sid,)
        )
        path = row["transcript_path"] if row is not None else None
    if not path:
        raise UsageError(
            f"session {sid} has no known transcript", hint="name one with --transcript FILE"
        )
    if not Path(path).expanduser().is_file():
        raise UsageError(f"no transcript file {path!r}")
    done = session_vault.backup_transcript(
        store, sid, Path(path).expanduser(), settings=ctx.settings.values
    )
    if "skipped" in done:
        raise EngramError(f"transcript of {sid} not backed up: {done['skipped']}")
    ctx.emit(
        {"id": sid, **done},
        f"Backed up the transcript of {sid} ({done['original_bytes']} bytes, "
        f"{done['bytes']} compressed) to {done['path']}",
    )
    return 0


def run_state(ctx: Context) -> int:
    from memory_core import session_state

    store = ctx.store()
    sid = sessions.get(store, _session_ref(ctx, ctx.args.id))["id"]
    args = ctx.args
    changes = (
        args.agent,
        args.state_command,
        args.workflow,
        args.workflow_state,
        args.story,
        args.subtask,
        args.task_done,
    )
    if any(value is not None for value in changes):
        found = session_state.update(
            store,
            sid,
            agent=args.agent,
            command=args.state_command,
            workflow=args.workflow,
            workflow_state=args.workflow_state,
            story=args.story,
            subtask=args.subtask,
            task_done=args.task_done,
            task_result=args.task_result,
        )
    else:
        found = session_state.state(store, sid)

    def human() -> str:
        lines = [
            f"session {found['id']}: {found['session_type']}"
            + (" (expired: silent for over an hour)" if found["expired"] else ""),
            f"agents:   {' -> '.join(found['agent_sequence']) or found['agent']}",
            f"commands: {', '.join(found['last_commands']) or 'none'}",
            f"workflow: {found['active_workflow'] or 'none'}"
            + (f" ({found['workflow_state']})" if found["workflow_state"] else ""),
            f"task:     {found['active_story'] or 'none'}"
            + (f" / {found['active_subtask']}" if found["active_subtask"] else ""),
            "done:     "
            + (
                ", ".join(f"{t['task']} ({t['result']})" for t in found["task_history"][-5:])
                or "none"
            ),
        ]
        return "\n".join(lines)

    ctx.emit(found, human)
    return 0


def run_crashed(ctx: Context) -> int:
    found = sessions.crashed(ctx.store())

    def human() -> str:
        if not found:
            return "No crashed sessions."
        lines = [_session_line(s) for s in found]
        lines.append("resolve one with: engram session recover ID continue|review|restart|discard")
        return "\n".join(lines)

    ctx.emit({"sessions": found}, human)
    return 0


def run_recover(ctx: Context) -> int:
    result = sessions.resolve_crash(ctx.store(), ctx.args.id, ctx.args.choice)

    def human() -> str:
        if ctx.args.choice == "review":
            return str(result["summary"])
        text = (
            f"{ctx.args.choice}: session {result['session']['id']} is {result['session']['status']}"
        )
        if "new_session" in result:
            text += f"; new session {result['new_session']['id']} started"
        return text

    ctx.emit(result, human)
    return 0
