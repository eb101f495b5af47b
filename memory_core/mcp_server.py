"""`engram mcp`: engram's memory as MCP tools, on stdio, with the official `mcp` Python SDK.

Tools: `session_list` (filter has_summary), `session_transcript`, `session_update_summary`
(overview, decisions, outcomes, open items, tags; lists merged without duplicates; the summary
`engram session summary` shows), `memory_search`, `memory_add`, `gotchas_for_task`,
`checkpoint_create`, `checkpoint_list`. Results are JSON objects shaped as the CLI's `--json`
(a plural list whose items carry their `id`). A user error comes back as a tool error with one
clear line; the server keeps running.

The projecthub session protocol's tools are served too, under their own names and with their
camelCase parameters: `projecthub_session_list` (hasSummary), `projecthub_session_transcript`
(sessionId) and `projecthub_session_update_summary` (sessionId, overview, decisions, outcomes,
openItems, tags, or the same inside `summary`). Their sessions carry the protocol's fields
(session_id, project_dir, turn_count, rolling_summary, decisions, search_footprint, summary,
status).

Every tool refuses a parameter it does not know: an agent that misspells `openItems` is told,
instead of losing what it sent.

Only `engram mcp` imports this module (the SDK is heavy; nothing on the hook path touches it).
"""

from __future__ import annotations

import contextlib
import functools
import json
import os
import re
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

from memory_core.errors import EngramError
from memory_core.store import Store

INSTRUCTIONS = (
    "engram is this project's durable memory. Call gotchas_for_task before a risky change, "
    "memory_search before re-deriving something, and session_update_summary before you stop "
    "(overview, decisions, outcomes, open items) so the next session starts where this one ended. "
    "To summarise earlier sessions (the projecthub protocol): projecthub_session_list with "
    "hasSummary=false, projecthub_session_transcript, then projecthub_session_update_summary."
)


def _turns(store: Store, session_id: str, limit: int | None) -> list[dict[str, Any]]:
    from memory_core import clock
    from memory_core.sessions.model import restore_archived

    # An archived session's turns are packed away: bring them back before reading them.
    restore_archived(store, session_id)
    rows = store.query(
        "SELECT * FROM agent_turns WHERE session_id = ? ORDER BY started_at LIMIT ?",
        (session_id, limit if limit else -1),
    )
    if rows:
        return [
            {
                "id": row["uuid"],
                "started_at": clock.iso(row["started_at"]),
                "ended_at": clock.iso(row["ended_at"]) if row["ended_at"] is not None else None,
                "user_message": row["user_message"],
                "assistant_response": row["assistant_response"],
                "tool_calls": json.loads(row["tool_calls"] or "[]"),
                "input_tokens": row["input_tokens"],
                "output_tokens": row["output_tokens"],
            }
            for row in rows
        ]
    from memory_core import sessions

    history: list[dict[str, Any]] = sessions.history(store, session_id, last=limit)
    return history


def _session(store: Store, session_id: str | None) -> dict[str, Any]:
    from memory_core import sessions
    from memory_core.errors import NotFoundError

    if session_id:
        found: dict[str, Any] = sessions.get(store, session_id)
        return found
    latest = sessions.latest(store)
    if latest is None:
        raise NotFoundError(
            "no session yet", hint="sessions start with the agent's hooks or `engram session start`"
        )
    return latest


SUMMARY_FIELDS = ("overview", "decisions", "outcomes", "openItems", "tags")


def projecthub_session(store: Store, session: dict[str, Any]) -> dict[str, Any]:
    """A session in the projecthub protocol's shape (its data model and SessionSummary)."""
    from memory_core.session_vault import has_summary
    from memory_core.sessions import decisions_of

    summary = session["summary"]
    written = has_summary(summary)
    # The decisions recorded in the summary and those the user stated in the session.
    decisions = decisions_of(store, session["id"], list(summary["decisions"]))
    return {
        "session_id": session["id"],
        "id": session["id"],
        "name": session["name"],
        "project_dir": str(store.root),
        "turn_count": session["turns"],
        "rolling_summary": session["rolling_summary"],
        "decisions": decisions,
        "search_footprint": session["search_footprint"],
        "status": session["status"],
        "started_at": session["started_at"],
        "last_activity_at": session["last_activity_at"],
        "hasSummary": written,
        "summary": {
            "overview": summary["overview"] or "",
            "decisions": decisions,
            "outcomes": summary["outcomes"],
            "openItems": summary["open_items"],
            "tags": summary["tags"],
        }
        if written
        else None,
    }


def _strict(server: Any, name: str) -> None:
    """Make the registered tool refuse parameters it does not know (pydantic drops them silently)."""
    from pydantic import ConfigDict, model_validator
    from pydantic_core import PydanticCustomError

    registered = server._tool_manager.get_tool(name)
    model = registered.fn_metadata.arg_model
    known = sorted((field.alias or field_name) for field_name, field in model.model_fields.items())

    def refuse_unknown(data: Any) -> Any:
        if isinstance(data, dict):
            unknown = sorted(set(data) - set(known))
            if unknown:
                raise PydanticCustomError(
                    "unknown_parameter",
                    "unknown parameter {unknown} for {tool}; it takes {known}",
                    {
                        "unknown": ", ".join(unknown),
                        "tool": name,
                        "known": ", ".join(known) or "no parameters",
                    },
                )
        return data

    strict = type(
        model.__name__,
        (model,),
        {
            "model_config": ConfigDict(arbitrary_types_allowed=True, extra="forbid"),
            "refuse_unknown": model_validator(mode="before")(staticmethod(refuse_unknown)),
        },
    )
    registered.fn_metadata.arg_model = strict
    registered.parameters["additionalProperties"] = False


def build(root: Path) -> Any:
    """The MCP server for the workspace at `root` (not started)."""
    try:
        from mcp.server.mcpserver import MCPServer
    except ImportError:
        raise EngramError(
            "the MCP server needs the `mcp` package (2.x)", hint="pip install 'mcp>=2.3,<3'"
        ) from None

    from memory_core import __version__

    state: dict[str, Store] = {}  # opened on the first call: listing tools needs no store

    @contextlib.asynccontextmanager
    async def connected(_server: Any) -> AsyncIterator[None]:
        """One client's connection: the store it opened is closed when the client leaves (its
        log folded and the thread that folds it ended), and opened again by the next."""
        try:
            yield
        finally:
            opened = state.pop("store", None)
            if opened is not None:
                opened.close()

    server = MCPServer(
        name="engram", version=__version__, instructions=INSTRUCTIONS, lifespan=connected
    )

    def tool() -> Callable[[Callable[..., Any]], Callable[..., Any]]:
        """Register a tool whose EngramError reaches the agent as one clear line (a tool error)."""
        from mcp.server.mcpserver.exceptions import ToolError

        def register(fn: Callable[..., Any]) -> Callable[..., Any]:
            @functools.wraps(fn)
            def as_tool_error(*args: Any, **kwargs: Any) -> Any:
                try:
                    return fn(*args, **kwargs)
                except EngramError as exc:
                    raise ToolError(exc.one_line()) from None

            server.tool()(as_tool_error)
            _strict(server, fn.__name__)
            return fn

        return register

    def store() -> Store:
        if "store" not in state:
            # A front end: it creates a store only inside a git repository (docs/design.md section 2).
            state["store"] = Store.open_or_init_in_git(root)
            state["store"].fold_log_when_idle()  # long-lived, like the language server
        return state["store"]

    @tool()
    def session_list(has_summary: bool | None = None, limit: int = 20) -> dict[str, Any]:
        """List sessions, most recent first. has_summary=true keeps those with a written summary, false those without."""
        from memory_core import sessions

        items = sessions.list_sessions(store(), limit=None)
        if has_summary is not None:

            def written(session: dict[str, Any]) -> bool:
                summary = session.get("summary") or {}
                return bool(
                    summary.get("overview")
                    or summary.get("decisions")
                    or summary.get("outcomes")
                    or summary.get("open_items")
                )

            items = [s for s in items if written(s) == has_summary]
        return {"sessions": items[: max(1, limit)]}

    @tool()
    def session_transcript(
        session_id: str | None = None, limit: int | None = None
    ) -> dict[str, Any]:
        """A session's turns in order: user message, assistant response, tool calls, tokens.

        Without session_id: the most recently active session (usually the caller's own)."""
        session = _session(store(), session_id)
        return {"session": session, "turns": _turns(store(), session["id"], limit)}

    @tool()
    def session_update_summary(
        session_id: str | None = None,
        overview: str | None = None,
        decisions: list[str] | None = None,
        outcomes: list[str] | None = None,
        open_items: list[str] | None = None,
        tags: list[str] | None = None,
    ) -> dict[str, Any]:
        """Write a session's structured summary; list fields are merged with what is there, without duplicates.

        Without session_id: the most recently active session (an agent rarely knows its own id)."""
        from memory_core import sessions

        session = _session(store(), session_id)
        summary = sessions.set_summary(
            store(),
            session["id"],
            overview=overview,
            decisions=decisions or (),
            outcomes=outcomes or (),
            open_items=open_items or (),
            tags=tags or (),
        )
        return {"id": session["id"], "summary": summary}

    @tool()
    def projecthub_session_list(hasSummary: bool | None = None, limit: int = 20) -> dict[str, Any]:
        """List sessions (projecthub protocol), most recent first. hasSummary=false finds the unsummarised ones."""
        from memory_core import sessions

        items = [projecthub_session(store(), s) for s in sessions.list_sessions(store())]
        if hasSummary is not None:
            items = [s for s in items if s["hasSummary"] == hasSummary]
        return {"sessions": items[: max(1, limit)]}

    @tool()
    def projecthub_session_transcript(
        sessionId: str | None = None, limit: int | None = None
    ) -> dict[str, Any]:
        """Read a session's full conversation (projecthub protocol): its turns in order.

        Without sessionId: the most recently active session."""
        session = _session(store(), sessionId)
        return {
            "session": projecthub_session(store(), session),
            "turns": _turns(store(), session["id"], limit),
        }

    @tool()
    def projecthub_session_update_summary(
        sessionId: str | None = None,
        overview: str | None = None,
        decisions: list[str] | None = None,
        outcomes: list[str] | None = None,
        openItems: list[str] | None = None,
        tags: list[str] | None = None,
        summary: dict[str, Any] | None = None,
    ) -> dict[str, Any]:
        """Save a session's structured SessionSummary (projecthub protocol): overview, decisions,
        outcomes, openItems, tags, given directly or inside `summary`. Lists are merged with what
        is there, without duplicates. Without sessionId: the most recently active session."""
        from memory_core import sessions
        from memory_core.errors import UsageError

        fields: dict[str, Any] = {
            "overview": overview,
            "decisions": decisions,
            "outcomes": outcomes,
            "openItems": openItems,
            "tags": tags,
        }
        if summary is not None:
            unknown = sorted(set(summary) - set(SUMMARY_FIELDS))
            if unknown:
                raise UsageError(
                    f"unknown SessionSummary field {', '.join(unknown)}; "
                    f"it has {', '.join(SUMMARY_FIELDS)}"
                )
            for key, value in summary.items():
                if key == "overview" and value is not None and not isinstance(value, str):
                    raise UsageError("SessionSummary overview must be a string")
                if key != "overview" and not (
                    isinstance(value, list) and all(isinstance(v, str) for v in value)
                ):
                    raise UsageError(f"SessionSummary {key} must be a list of strings")
                if fields[key] is None:
                    fields[key] = value
        session = _session(store(), sessionId)
        sessions.set_summary(
            store(),
            session["id"],
            overview=fields["overview"],
            decisions=fields["decisions"] or (),
            outcomes=fields["outcomes"] or (),
            open_items=fields["openItems"] or (),
            tags=fields["tags"] or (),
        )
        return projecthub_session(store(), sessions.get(store(), session["id"]))

    @tool()
    def memory_search(
        query: str,
        limit: int = 10,
        min_priority: float | None = None,
        include_decayed: bool = False,
        offset: int = 0,
    ) -> dict[str, Any]:
        """Search the project's memories (ranked by relevance times priority).

        Entries decayed below priority 0.3 are left out unless include_decayed is true;
        min_priority keeps only entries at least that high; offset skips results (paging).
        An entry that cites code says what became of it (`citation`: unchanged, moved, changed,
        gone); one whose code changed or is gone has `needs_checking`: do not take it as true
        before looking at the code."""
        from memory_core import search, verify

        found = search.search(
            store(),
            query,
            limit=limit,
            min_priority=min_priority,
            include_decayed=include_decayed,
            offset=offset,
        )
        return {"results": verify.annotate(store(), found)}

    @tool()
    def memory_add(
        content: str,
        type: str = "learning",
        tags: list[str] | None = None,
        impact: str | None = None,
    ) -> dict[str, Any]:
        """Remember something: type is project, preference, action, decision, finding or learning.

        impact (critical, high, medium, low): a finding's severity or a decision's impact; an
        open critical finding stays at priority 0.8 or more, an open high-impact decision at 0.9."""
        from memory_core import memory

        entry: dict[str, Any] = memory.add(
            store(),
            content,
            type=type,
            tags=tags or (),
            impact=impact,
            agent="mcp",
            explicit=True,
            provenance={"source": "mcp"},
        )
        return entry

    @tool()
    def gotchas_for_task(
        task: str, files: list[str] | None = None, limit: int = 5
    ) -> dict[str, Any]:
        """Known gotchas (recurring errors and their workarounds) relevant to a task and files, as Markdown."""
        from memory_core import gotchas

        text = gotchas.context_for_task(store(), task, files or [], limit)
        return {"task": task, "context": text}

    @tool()
    def checkpoint_create(
        name: str | None = None, description: str | None = None
    ) -> dict[str, Any]:
        """Save the workspace's files as a checkpoint that can be rolled back to."""
        from memory_core import checkpoints, config

        created: dict[str, Any] = checkpoints.create(
            store(), name, description=description, reason="manual", settings=config.load(root)
        )
        return created

    @tool()
    def checkpoint_list(limit: int = 20) -> dict[str, Any]:
        """The workspace's checkpoints, newest first."""
        from memory_core import checkpoints

        return {"checkpoints": checkpoints.list_checkpoints(store(), limit=limit)}

    return server


def run(root: Path) -> None:
    """Serve on stdio until the client closes the connection."""
    server = build(root)
    guard_stdio()
    server.run("stdio")


# -- every line answered -------------------------------------------------------------------
#
# The MCP library drops a line it cannot read (invalid JSON, "jsonrpc": "1.0", params that are
# no object, JSON nested deeper than its models go) without a word, and the client waits
# forever. A guard between the process's stdio and the library reads each line first: what the
# library would drop is answered here with the JSON-RPC error the specification names; the rest
# goes through unchanged. Both the library's lines and the guard's go out through one writer.

PARSE_ERROR, INVALID_REQUEST, INVALID_PARAMS = -32700, -32600, -32602
MAX_DEPTH = 64  # deeper than any MCP message; pydantic models recurse per level
MAX_LINE_BYTES = 64 * 1024 * 1024


def line_problem(line: bytes) -> tuple[Any, int, str] | None:
    """(id, code, message) for a line that is not a JSON-RPC 2.0 message MCP can read."""
    try:
        message = json.loads(line)
    except (ValueError, RecursionError) as exc:
        return None, PARSE_ERROR, f"invalid JSON: {exc}"
    if not isinstance(message, dict):
        return None, INVALID_REQUEST, "a message must be a JSON object (no batches)"
    msg_id = message.get("id")
    if not (msg_id is None or (isinstance(msg_id, int | str) and not isinstance(msg_id, bool))):
        return None, INVALID_REQUEST, "a request id is a string or an integer"
    if message.get("jsonrpc") != "2.0":
        return msg_id, INVALID_REQUEST, 'only JSON-RPC "2.0" messages are served'
    if "method" not in message:
        return None  # a response to the server's own request: the library's to match
    if not isinstance(message["method"], str) or not message["method"]:
        return msg_id, INVALID_REQUEST, "a request needs a method name (a string)"
    params = message.get("params")
    if params is not None and not isinstance(params, dict):  # MCP's params are objects
        return msg_id, INVALID_PARAMS, f"{message['method']}: params must be an object"
    problem = _value_problem(message)
    return (msg_id, INVALID_REQUEST, problem) if problem is not None else None


_LONE_SURROGATE = re.compile("[\ud800-\udfff]")


def _value_problem(value: Any) -> str | None:
    """What in a decoded message the library cannot take (each of these stopped it reading, or
    made it drop the line): nesting past MAX_DEPTH, a whole number past 64 bits, a string
    holding a lone surrogate (`"\\ud800"`: valid JSON, no Unicode). A stack, not recursion."""
    stack = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict | list):
            if depth > MAX_DEPTH:
                return f"a message nested deeper than {MAX_DEPTH} levels"
            children = [*item.keys(), *item.values()] if isinstance(item, dict) else item
            stack.extend((child, depth + 1) for child in children)
        elif isinstance(item, int) and not isinstance(item, bool):
            if not -(2**63) <= item < 2**64:
                return f"a whole number past 64 bits ({str(item)[:30]})"
        elif isinstance(item, str) and _LONE_SURROGATE.search(item):
            return "a string holding a lone surrogate (\\ud800-\\udfff): not Unicode"
    return None


def guard_stdio() -> None:
    """Put the line guard between fd 0/1 and whatever reads and writes them from now on."""
    client_in, client_out = os.dup(0), os.dup(1)
    library_in_read, library_in_write = os.pipe()
    library_out_read, library_out_write = os.pipe()
    os.dup2(library_in_read, 0)
    os.dup2(library_out_write, 1)
    os.close(library_in_read)
    os.close(library_out_write)
    guard_lines(client_in, client_out, library_in_write, library_out_read)


def guard_lines(client_in: int, client_out: int, library_in: int, library_out: int) -> list[Any]:
    """Copy the client's lines to the library (answering those it would drop) and the library's
    lines to the client, each way on a daemon thread. Each thread closes what it reads from
    when that ends (and `library_in`, `client_out` with it)."""
    import threading

    lock = threading.Lock()
    out = os.fdopen(client_out, "wb", buffering=0)

    def send(data: bytes) -> None:
        with lock:
            if not out.closed:
                out.write(data)

    def from_client() -> None:
        with os.fdopen(client_in, "rb") as lines, os.fdopen(library_in, "wb", 0) as library:
            for line in lines:
                if not line.strip():
                    continue
                problem = line_problem(line[:MAX_LINE_BYTES])
                if problem is None:
                    library.write(line if line.endswith(b"\n") else line + b"\n")
                    continue
                msg_id, code, text = problem
                error = {"code": code, "message": text}
                send(json.dumps({"jsonrpc": "2.0", "id": msg_id, "error": error}).encode() + b"\n")

    def to_client() -> None:
        with os.fdopen(library_out, "rb") as lines:
            for line in lines:
                send(line)
        with lock:  # the library is done: so is the client's side
            out.close()

    threads = [
        threading.Thread(target=from_client, name="engram-mcp-in", daemon=True),
        threading.Thread(target=to_client, name="engram-mcp-out", daemon=True),
    ]
    for thread in threads:
        thread.start()
    return threads
