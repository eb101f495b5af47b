"""Long-term memory in the editor: `engram.memory.add`, `engram.memory.search`, and memories
in the workspace-symbol search (`workspace/symbol`: Ctrl+T in VS Code, a symbol picker in
Neovim) found by any word of their content.

A memory that cites code is located at the cited lines; any other at its entry in
`.engram/exports/memories.md`, which is rewritten when memories changed since it was last
written. Store work runs on a worker thread; symbol lookups do not count as accesses.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

from lsprotocol import types
from pygls.uris import to_fs_path

from lsp_server.features.commands import engram_command
from lsp_server.server import EngramServer, FolderState
from memory_core import memory, quota, search, views
from memory_core.errors import UsageError

logger = logging.getLogger("engram.lsp")

SYMBOL_LIMIT = 100


def _impact_arg(args: dict[str, Any]) -> str | None:
    impact = args.get("impact")
    if impact is not None and not isinstance(impact, str):
        raise UsageError("impact must be one of critical, high, medium, low")
    return impact


def _pick(args: dict[str, Any], *names: str) -> Any:
    """The value of the first of `names` given (one option, two spellings)."""
    return next((args[name] for name in names if name in args), None)


def query_options(args: dict[str, Any]) -> dict[str, Any]:
    """Seed 003's query options from a command's arguments (snake_case or the seed's camelCase).

    Decayed entries (priority below 0.3) are left out unless `include_decayed` is true.
    """
    minimum = _pick(args, "min_priority", "minPriority")
    if minimum is not None and (
        isinstance(minimum, bool) or not isinstance(minimum, int | float) or not 0 <= minimum <= 1
    ):
        raise UsageError("min_priority must be a number between 0 and 1")
    decayed = _pick(args, "include_decayed", "includeDecayed")
    if decayed is not None and not isinstance(decayed, bool):
        raise UsageError("include_decayed must be true or false")
    offset = _pick(args, "offset")
    if offset is None:
        offset = 0
    if isinstance(offset, bool) or not isinstance(offset, int) or offset < 0:
        raise UsageError("offset must be a whole number, 0 or more")
    return {
        "min_priority": float(minimum) if minimum is not None else None,
        "include_decayed": bool(decayed),
        "offset": offset,
    }


def _symbols(state: FolderState, query: str) -> list[types.SymbolInformation]:
    store = state.store
    if query.strip():
        entries = search.search(
            store, query, limit=SYMBOL_LIMIT, kinds=("memory",), prefix=True, record_access=False
        )
    else:
        entries = memory.list_memories(store, limit=SYMBOL_LIMIT)
    if not entries:
        return []
    export_path, positions = _export(state)
    symbols = []
    for entry in entries:
        if entry.get("file") and entry.get("line"):
            target = state.root / entry["file"]
            start = max(0, int(entry["line"]) - 1)
            end = max(start, int(entry.get("end_line") or entry["line"]) - 1)
        else:
            target = export_path
            start = end = positions.get(entry["id"], 0)
        symbols.append(
            types.SymbolInformation(
                name=f"{entry['label']}",
                kind=types.SymbolKind.String,
                location=types.Location(
                    uri=target.as_uri(),
                    range=types.Range(
                        start=types.Position(line=start, character=0),
                        end=types.Position(line=end, character=0),
                    ),
                ),
                container_name=f"engram {entry['type']} {entry['id']}",
            )
        )
    return symbols


def _export(state: FolderState) -> tuple[Path, dict[str, int]]:
    # Rewrite the export only when the memories changed (count, newest row, accesses aside).
    row = state.store.query_one(
        "SELECT count(*), max(seq), total(length(content)), total(pinned) FROM memories"
    )
    signature = tuple(row) if row is not None else ()
    cached = state.extras.get("memory.export")
    path = state.store.dir / "exports" / memory.EXPORT_NAME
    if cached and cached[0] == signature and path.exists():
        return cached[1], cached[2]
    written, positions = memory.write_export(state.store)
    state.extras["memory.export"] = (signature, written, positions)
    return written, positions


def _file_arg(args: dict[str, Any]) -> str | None:
    # `file` and `uri` are text when given (engram_command checks every command's arguments
    # by name before it runs, so the checks here are only those the shared table cannot make).
    value: str | None = args.get("file") or args.get("uri")
    if not value:
        return None
    return to_fs_path(value) if "://" in value else value


async def add(ls: EngramServer, args: dict[str, Any]) -> dict[str, Any]:
    entry = await ls.run_blocking(_add, ls, args)
    if "quota_warning" in entry:
        ls.show_message(entry["quota_warning"], types.MessageType.Warning)
    return entry


def _add(ls: EngramServer, args: dict[str, Any]) -> dict[str, Any]:
    state = ls.state_for_command(args)
    content = args.get("content", args.get("text"))
    if not isinstance(content, str):
        raise UsageError("engram.memory.add needs `content` (text)")
    tags = args.get("tags") or []
    if isinstance(tags, str):
        tags = [tags]
    session_id = args.get("session_id")
    # The session quota: a full session, or one this entry would take past its quota,
    # refuses the write (MEM_E001) and nothing is stored.
    quota.before_write(
        state.store, session_id, state.settings, incoming=len(content.encode("utf-8"))
    )
    with quota.guarded_write(state.store, session_id, state.settings):
        entry: dict[str, Any] = memory.add(
            state.store,
            content,
            type=str(args.get("type", "learning")),
            tags=tags,
            pinned=bool(args.get("pinned", False)),
            explicit=bool(args.get("explicit", False)),
            impact=_impact_arg(args),
            session_id=session_id,
            agent="editor",
            provenance={"recorded_by": "editor"},
            file=_file_arg(args),
            line=args.get("line"),
        )
    notice = quota.after_write(state.store, session_id, state.settings)
    if notice is not None:
        # Shown in a window message by `add` (on the event loop) and returned as well.
        entry = {**entry, "quota_warning": notice["message"]}
    return entry


def list_command(ls: EngramServer, args: dict[str, Any]) -> dict[str, Any]:
    """The newest memories (VS Code's Memory view); `limit` (default 100)."""
    state = ls.state_for_command(args)
    limit = args.get("limit", 100)
    if not isinstance(limit, int) or limit < 1:
        raise UsageError("limit must be a positive number")
    return {"memories": memory.list_memories(state.store, limit=limit)}


def search_command(ls: EngramServer, args: dict[str, Any]) -> dict[str, Any]:
    state = ls.state_for_command(args)
    query = args.get("query")
    if not isinstance(query, str):
        raise UsageError("engram.memory.search needs `query` (text)")
    limit = args.get("limit", 10)
    if not isinstance(limit, int) or limit < 1:
        raise UsageError("limit must be a positive number")
    tags = args.get("tags") or []
    results = search.search(
        state.store,
        query,
        limit=limit,
        type=args.get("type"),
        tags=[tags] if isinstance(tags, str) else tags,
        kinds=args.get("kinds"),
        **query_options(args),
    )
    return {"query": query, "results": results, "markdown": views.memories(query, results)}


async def workspace_symbol(
    ls: EngramServer, params: types.WorkspaceSymbolParams
) -> list[types.SymbolInformation]:
    found: list[types.SymbolInformation] = []
    for state in list(ls.folders.values()):
        try:
            found.extend(await ls.run_blocking(_symbols, state, params.query))
        except Exception:
            # A broken store in one folder must not take the others' symbols away.
            logger.exception("workspace/symbol failed in %s", state.root)
    return found[:SYMBOL_LIMIT]


def register(server: EngramServer) -> None:
    engram_command(server, "engram.memory.add")(add)
    engram_command(server, "engram.memory.list")(list_command)
    engram_command(server, "engram.memory.search")(search_command)
    server.feature(types.WORKSPACE_SYMBOL)(workspace_symbol)
