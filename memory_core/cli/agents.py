"""`engram hook`, `engram hooks install|uninstall`, `engram ingest claude-code|gemini|codex`,
`engram mcp`.

`engram hook AGENT EVENT` runs on every agent tool call as a cold process, so the `engram` script
(`memory_core.cli.entry`) sends it to the hook runner before this module or any argparse tree is
loaded; the parser entry below exists for --help.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    # Only a type here: importing it would load the settings machinery on the hook's fast path.
    from memory_core.cli.context import Context


class _Intermixed(argparse.ArgumentParser):
    """A subcommand's parser that takes its options anywhere among its positionals."""

    _mixing = False

    def parse_known_args(self, args: Any = None, namespace: Any = None) -> Any:
        if self._mixing:  # parse_known_intermixed_args calls back here
            return super().parse_known_args(args, namespace)
        self._mixing = True
        try:
            return self.parse_known_intermixed_args(args, namespace)
        finally:
            self._mixing = False


def register(sub: Any, common: argparse.ArgumentParser) -> None:
    hook = sub.add_parser(
        "hook",
        help="handle one agent hook event (JSON on stdin); the agent's settings call this",
        description="Record an agent event. Always exits 0: problems go to .engram/engram.log.",
    )
    hook.add_argument("agent", help="claude-code, gemini or codex")
    hook.add_argument(
        "event", help="the event as the agent names it (PreCompact, AfterTool, ...), any case"
    )
    hook.set_defaults(handler=run_hook)

    hooks = sub.add_parser("hooks", help="install or remove engram's hooks in an agent's settings")
    actions = hooks.add_subparsers(dest="hooks_command", metavar="ACTION")
    actions.required = True
    for name, handler, text in (
        (
            "install",
            run_hooks_install,
            "merge engram's hook entries into the agent's settings file",
        ),
        (
            "uninstall",
            run_hooks_uninstall,
            "remove exactly engram's hook entries from the agent's settings",
        ),
    ):
        action = actions.add_parser(name, parents=[common], help=text)
        action.add_argument("agent", help="claude-code, gemini or codex")
        action.add_argument(
            "--user", action="store_true", help="the user's settings instead of the project's"
        )
        action.set_defaults(handler=handler)

    # Options may come between the paths (`engram ingest claude-code --json FILE`): plain
    # argparse takes the positionals in one go and would leave FILE unrecognized.
    default_class = sub._parser_class
    sub._parser_class = type("IntermixedParser", (_Intermixed, default_class), {})
    try:
        ingest = sub.add_parser(
            "ingest", parents=[common], help="read agent transcripts into the store"
        )
    finally:
        sub._parser_class = default_class
    ingest.add_argument(
        "agent",
        choices=["claude-code", "gemini", "codex"],
        help="whose transcripts: Claude Code (JSONL), Gemini CLI (recorded chats) or Codex CLI "
        "(rollouts)",
    )
    ingest.add_argument(
        "paths", nargs="*", metavar="PATH", help="transcript files (default: this workspace's)"
    )
    ingest.set_defaults(handler=run_ingest)

    mcp = sub.add_parser(
        "mcp", help="run the MCP server on stdio (sessions, memory, gotchas, checkpoints)"
    )
    mcp.set_defaults(handler=run_mcp)


def run_hook(ctx: Context) -> int:
    from memory_core.agents import hooks

    return hooks.main(ctx.args.agent, ctx.args.event, workspace=ctx.args.workspace)


def _agent(ctx: Context) -> str:
    from memory_core.agents.payload import agent_name

    return agent_name(ctx.args.agent)


def run_hooks_install(ctx: Context) -> int:
    from memory_core.agents import install

    agent = _agent(ctx)
    root = ctx.root
    if not ctx.args.user:
        ctx.store(create=True)
    result = install.install(agent, root=root, user=ctx.args.user)
    verb = "Installed" if result["changed"] else "Already installed:"
    text = f"{verb} engram's {agent} hooks ({', '.join(result['events'])}) in {result['settings']}"
    if result.get("note"):
        text += f"\nNote: {result['note']}"
    for path in result.get("commands", {}).get("written", []):
        text += f"\nAdded the /session-summarize command: {path}"
    for path in result.get("commands", {}).get("kept", []):
        text += f"\nKept your own {path} (it differs from engram's)"
    ctx.emit(result, text)
    return 0


def run_hooks_uninstall(ctx: Context) -> int:
    from memory_core.agents import install

    agent = _agent(ctx)
    result = install.uninstall(agent, root=ctx.root, user=ctx.args.user)
    text = (
        f"Removed {result['removed']} engram hook entries from {result['settings']}"
        if result["removed"]
        else f"No engram hooks in {result['settings']}"
    )
    ctx.emit(result, text)
    return 0


def run_ingest(ctx: Context) -> int:
    from memory_core import limits
    from memory_core.agents import gemini_chats, transcripts
    from memory_core.cli.progress import progress
    from memory_core.errors import UsageError

    store = ctx.store(create=True)
    limits.enforce(store, ctx.settings)
    gemini = ctx.args.agent == "gemini"
    codex = ctx.args.agent == "codex"
    if codex:
        from memory_core.agents import codex_rollouts

        paths = codex_rollouts.requested_rollouts(ctx.args.paths, ctx.root)
    elif ctx.args.paths:
        paths = []
        for raw in ctx.args.paths:
            path = Path(raw).expanduser()
            if not path.exists():
                raise UsageError(
                    f"no transcript at {raw}",
                    hint="pass .jsonl files Claude Code wrote, or their folder"
                    if not gemini
                    else "pass the chat files Gemini CLI wrote, or their folder (~/.gemini/tmp/*/chats/)",
                )
            if gemini:
                if path.is_dir():
                    paths.extend(gemini_chats.chat_files(path))
                else:
                    paths.append(path)
            else:
                # A session's file brings its subagents' files; a folder, every transcript in it.
                paths.extend(transcripts.session_files(path))
        paths = list(dict.fromkeys(p.resolve() for p in paths))
    elif gemini:
        paths = gemini_chats.default_chats(ctx.root)
    else:
        paths = transcripts.default_transcripts(ctx.root)
    from memory_core.gotchas.records import exports_deferred

    results = []
    total = sum(p.stat().st_size for p in paths)
    # The gotcha exports are rewritten once, after every file (not after each error tracked).
    # Several files to a commit (`WriteBatches`); a file's offset is committed with its rows.
    batches = transcripts.WriteBatches(store)
    with progress("ingesting transcripts", total or None) as bar, exports_deferred(store), batches:
        for path in paths:
            if len(paths) > 1:  # (one file: its own transactions, no lock when nothing is new)
                batches.next()
            done = 0

            def advance(position: int) -> None:
                nonlocal done
                bar.advance(position - done)
                done = position

            # flush: the end of an ingested transcript ends its last turn (real transcripts
            # carry no stop reason to say so).
            if gemini:
                stats = gemini_chats.ingest_chat_file(store, path, settings=ctx.settings)
                advance(stats.bytes)
            elif codex:
                from memory_core.agents import codex_rollouts

                stats = codex_rollouts.ingest_file(
                    store, path, settings=ctx.settings, flush=True, progress=advance
                )
            else:
                stats = transcripts.ingest_file(
                    store, path, settings=ctx.settings, flush=True, progress=advance
                )
            results.append(stats.as_dict())
    ingested = list(dict.fromkeys(sid for r in results for sid in r["sessions"]))
    unanswered: list[int] = []
    # A transcript read to its end before, with nothing new now, whose session an interrupted
    # run never settled (it stopped after the file's commit): settled now, if it is over.
    unsettled = (
        [
            sid
            for r in results
            if not r["sessions"]
            for sid in transcripts.sessions_of_file(store, r["path"])
        ]
        if not (gemini or codex)
        else []
    )
    transcripts.settle_sessions(store, [*ingested, *unsettled], unanswered=unanswered)
    # History older than the retention: its session figures, turns and the rules the user
    # stated are kept; the per-event detail goes now, as a session's end prunes after its
    # hook's ingest, so that what this command reports is what the next one finds (a session's
    # net effect reads its file history while it is kept). Say so, not silently.
    limits.enforce(store, ctx.settings)
    max_age_days = float(ctx.settings["timeline.max_age_days"] or 0)
    old_sessions: list[str] = []
    if max_age_days > 0 and ingested:
        from memory_core import clock

        cutoff = clock.now() - max_age_days * 86400
        for sid in ingested:
            row = store.query_one(
                "SELECT last_seen FROM agent_sessions WHERE session_id = ?", (sid,)
            )
            if row is not None and float(row["last_seen"]) < cutoff:
                old_sessions.append(sid)
    # The session quota (80 % / 95 %: compaction and a warning line) for what was ingested.
    from memory_core import quota

    for session_id in sorted(ingested):
        notice = quota.after_write(store, session_id, ctx.settings)
        if notice is not None:
            print(notice["message"], file=sys.stderr)
    summary = {
        "files": len(results),
        "lines": sum(r["lines"] for r in results),
        "bytes": sum(r["bytes"] for r in results),
        "prompts": sum(r["prompts"] for r in results),
        "turns": sum(r["turns"] for r in results),
        # With the calls of ended sessions that never got a result (counted, not failed).
        "tool_calls": sum(r["tool_calls"] for r in results) + sum(unanswered),
        "failures": sum(r["failures"] for r in results),
        "interrupted": sum(r.get("interrupted", 0) for r in results),
        "compactions": sum(r["compactions"] for r in results),
        "malformed": sum(r.get("malformed", 0) for r in results),
        "older_than_retention": old_sessions,
        "transcripts": results,
    }

    def human() -> str:
        if not results:
            if gemini:
                return f"No Gemini CLI chats for {ctx.root} (looked in ~/.gemini/tmp/*/chats/)"
            if codex:
                from memory_core.agents.codex_rollouts import codex_home

                return (
                    f"No Codex CLI sessions for {ctx.root} (looked in {codex_home() / 'sessions'})"
                )
            return f"No Claude Code transcripts for {ctx.root} (looked in ~/.claude/projects/)"
        return (
            (
                f"Ingested {summary['files']} transcript(s): {summary['lines']} new lines, {summary['prompts']} prompts, "
                f"{summary['turns']} turns, {summary['tool_calls']} tool calls ({summary['failures']} failed"
                + (
                    f", {summary['interrupted']} of them interrupted or rejected"
                    if summary["interrupted"]
                    else ""
                )
                + f"), {summary['compactions']} compactions"
            )
            + (
                f"\n{summary['malformed']} line(s) were not valid JSON and were skipped"
                if summary["malformed"]
                else ""
            )
            + (
                f"\n{len(old_sessions)} session(s) are older than the {max_age_days:g}-day retention "
                "(timeline.max_age_days): their figures, turns and the rules the user stated are "
                "kept; the text of their prompts, commands and errors is not."
                if old_sessions
                else ""
            )
        )

    ctx.emit(summary, human)
    return 0


def run_mcp(ctx: Context) -> int:
    from memory_core import mcp_server

    mcp_server.run(ctx.root)
    return 0


def run_session_context(ctx: Context) -> int:
    """`engram session resume --context`: the text the SessionStart hook gives the agent."""
    from memory_core.agents.context import session_start_text

    store = ctx.store(create=True)
    budget = int(ctx.settings["agents.context_token_budget"])
    text = session_start_text(store, current_session=ctx.args.id, token_budget=budget)
    ctx.emit(
        {"context": text, "token_budget": budget},
        text or "engram: nothing remembered for this workspace yet",
    )
    return 0
