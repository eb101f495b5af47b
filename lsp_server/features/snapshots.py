"""Context snapshots and the timeline from the editor.

`engram.snapshot.capture {note?, documents?, story?, subtask?}` records git's state, the task in
progress (by default the session's story and subtask) and the open documents with
their cursor and selection: given by the client in `documents` ([{uri, selection}]), else what
the server knows (the last code-action range the editor asked about, else the last edit).
`engram.snapshot.restore {id}` reopens each document at its selection with `window/showDocument`
and reports what moved (branch, HEAD, dirty tree, files gone) as warnings; it never checks out
or stashes. `engram.snapshot.list` and `engram.timeline {since?, until?, limit?, source?, file?}`
return `{"snapshots": [...]}` and `{"entries": [...]}`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from lsprotocol import types
from pygls.uris import from_fs_path, to_fs_path

from lsp_server.features.commands import engram_command
from lsp_server.features.evolution import get_feature
from lsp_server.server import EngramServer, FolderState
from memory_core import evolution, snapshots, timeline
from memory_core.errors import UsageError
from memory_core.workspace import relative_path


def _position(value: Any) -> dict[str, int]:
    if isinstance(value, types.Position):
        return {"line": value.line, "character": value.character}
    return value  # type: ignore[no-any-return]


def open_documents(ls: EngramServer, state: FolderState, given: Any) -> list[dict[str, Any]]:
    """The open documents of `state` with cursor and selection."""
    if given is not None:
        # (A list: engram_command checks `documents` before the command runs.)
        documents = []
        for item in given:
            if not isinstance(item, dict) or not isinstance(
                item.get("uri") or item.get("path"), str
            ):
                raise UsageError(f"each document needs a uri, got {item!r}")
            value = item.get("uri") or item["path"]
            path = to_fs_path(value) if "://" in value else value
            selection = item.get("selection")
            cursor = item.get("cursor") or (
                selection.get("end") if isinstance(selection, dict) else None
            )
            documents.append(
                {
                    "path": path,
                    "selection": selection,
                    "cursor": cursor,
                    "dirty": item.get("dirty", False),
                }
            )
        return documents
    documents = []
    feature = get_feature(ls)
    for doc in feature.docs.values():
        if ls.state_for_uri(doc.uri) is not state:
            continue
        selection = doc.selection or types.Range(start=doc.cursor, end=doc.cursor)
        documents.append(
            {
                "path": doc.rel,
                "cursor": _position(doc.cursor),
                "selection": {"start": _position(selection.start), "end": _position(selection.end)},
                "dirty": doc.dirty,
            }
        )
    return documents


def _current_lines(ls: EngramServer, uri: str, path: Path) -> list[str]:
    """The document's lines now, as an editor counts them: the editor's text when it is open,
    else the file's; a final newline ends the last line, it does not start another (Neovim
    refuses a cursor on that line)."""
    opened = ls.workspace.text_documents.get(uri)
    text: str
    if opened is not None:
        text = opened.source
    else:
        try:
            text = path.read_text(encoding="utf-8", errors="replace")
        except OSError:
            text = ""
    lines = text.split("\n")
    if len(lines) > 1 and lines[-1] == "":
        lines.pop()
    return lines


def _within(lines: list[str], position: types.Position) -> types.Position:
    """`position`, moved back to the end of the document or of its line when past it."""
    line = min(position.line, max(0, len(lines) - 1))
    width = len(lines[line].rstrip("\r").encode("utf-16-le")) // 2
    if line < position.line:
        return types.Position(line=line, character=width)
    return types.Position(line=line, character=min(position.character, width))


def capture(ls: EngramServer, args: dict[str, Any]) -> dict[str, Any]:
    state = ls.state_for_command(args)
    note = args.get("note")
    # The task in progress (AIOS storyId / subtask); default: the session's.
    story, subtask = args.get("story"), args.get("subtask")
    for name, value in (("story", story), ("subtask", subtask)):
        if value is not None and not isinstance(value, str):
            raise UsageError(f"{name} must be text")
    documents = open_documents(ls, state, args.get("documents"))
    evolution.observe_git(state.store)
    return snapshots.capture(
        state.store,
        note=note,
        open_documents=documents,
        story_id=story,
        subtask=subtask,
        settings=state.settings,
    )


def listing(ls: EngramServer, args: dict[str, Any]) -> dict[str, Any]:
    state = ls.state_for_command(args)
    return {"snapshots": snapshots.list_snapshots(state.store)}


async def restore(ls: EngramServer, args: dict[str, Any]) -> dict[str, Any]:
    state = ls.state_for_command(args)
    snapshot_id = args.get("id")
    if not isinstance(snapshot_id, str) or not snapshot_id:
        raise UsageError("give the snapshot as `id` (see engram.snapshot.list)")
    plan = await ls.run_blocking(snapshots.restore_plan, state.store, snapshot_id)
    reopened = []
    can_show = ls.client_supports("window", "show_document", "support")
    documents = [d for d in plan["documents"] if d["exists"]]
    for index, document in enumerate(documents):
        uri = from_fs_path(document["absolute_path"])
        if not uri or not can_show:
            continue
        selection = document["selection"]
        # The file may have shrunk since: a position past its end is put at its end (an
        # editor refuses to place the cursor outside the buffer, and Neovim fails on it).
        lines = _current_lines(ls, uri, Path(document["absolute_path"]))
        result = await ls.window_show_document_async(
            types.ShowDocumentParams(
                uri=uri,
                take_focus=index == len(documents) - 1,
                selection=types.Range(
                    start=_within(lines, types.Position(**selection["start"])),
                    end=_within(lines, types.Position(**selection["end"])),
                ),
            )
        )
        if result is not None and result.success:
            reopened.append(document["path"])
        else:
            plan["warnings"].append(f"the editor did not reopen {document['path']}")
    if not can_show and documents:
        plan["warnings"].append(
            "this editor cannot be asked to open documents (window/showDocument)"
        )
    for warning in plan["warnings"]:
        ls.show_message(f"engram: snapshot {snapshot_id}: {warning}", types.MessageType.Warning)
    return {**plan, "reopened": reopened}


def _when(args: dict[str, Any], key: str) -> float | None:
    """A time argument as Unix seconds: a number as is, text as `engram timeline` reads it
    (30m, 2h, 3d, an ISO date). engram_command has checked it is one or the other."""
    value = args.get(key)
    if isinstance(value, str):
        return timeline.parse_since(value)
    return None if value is None else float(value)


def timeline_command(ls: EngramServer, args: dict[str, Any]) -> dict[str, Any]:
    state = ls.state_for_command(args)
    source = args.get("source")
    sources = [source] if isinstance(source, str) else source
    file = args.get("file")
    rel = None
    if isinstance(file, str) and file:
        path = Path(to_fs_path(file) or file) if "://" in file else state.root / file
        rel = relative_path(state.root, path)
    evolution.observe_git(state.store)
    found = timeline.entries(
        state.store,
        state.settings,
        since=_when(args, "since"),
        until=_when(args, "until"),
        sources=sources,
        file=rel,
        limit=args.get("limit"),
    )
    return {"entries": found, "markdown": timeline.markdown(found)}


def register(server: EngramServer) -> None:
    engram_command(server, "engram.snapshot.capture")(capture)
    engram_command(server, "engram.snapshot.list")(listing)
    engram_command(server, "engram.snapshot.restore")(restore)
    engram_command(server, "engram.timeline")(timeline_command)
