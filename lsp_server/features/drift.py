"""Drift in the editor: diagnostics (`code: "drift"`), hovers, a diff action, `engram.drift`.

- Overlapping edits: lines changed by two actors (or two agent sessions) within
  `drift.window_minutes` get a diagnostic whose severity follows memory_core.drift (critical ->
  Error, high -> Warning, medium -> Information, low -> Hint); the hover says who and when.
- A buffer with unsaved edits whose file changed on disk: a diagnostic on line 1 (the evolution
  feature notices the disk change), with the code action "Show the difference with the file on
  disk" (`engram.drift.diff`: a unified diff written to .engram/exports/views/ and opened with
  `window/showDocument`).
- A memory whose cited lines changed (or moved) since it was recorded: a diagnostic on those
  lines of the open document (the buffer as it is, unsaved edits included), with the code actions
  "Update the memory to the code as it is now" (`engram.memory.recite`) and "Forget this memory"
  (`engram.memory.forget`). The same check decides what the next agent is told
  (memory_core.verify).
- `engram.drift` reports every kind: the above for open documents, stale citations and the
  workspace since the latest snapshot or the active session.

Overlaps are computed from the store once per recorded change (a generation counter) and at
most every `RECOMPUTE_SECONDS` as they age, so pulling diagnostics while typing costs a lookup.
"""

from __future__ import annotations

import difflib
import re
import time
from typing import Any

from lsprotocol import types
from pygls.workspace import TextDocument

from lsp_server.features.commands import engram_command
from lsp_server.features.evolution import get_feature, show_view
from lsp_server.server import EngramServer, FolderState
from memory_core import drift, evolution
from memory_core.errors import UsageError

RECOMPUTE_SECONDS = 30.0
_LONE_SURROGATE = re.compile("[\ud800-\udfff]")
SEVERITY = {
    "critical": types.DiagnosticSeverity.Error,
    "high": types.DiagnosticSeverity.Warning,
    "medium": types.DiagnosticSeverity.Information,
    "low": types.DiagnosticSeverity.Hint,
}
DIFF_TITLE = "Show the difference with the file on disk"


# How long the memories' citations are kept before they are read again (they change only when
# a memory is added, updated or forgotten; engram's own commands clear the cache at once).
CITATIONS_SECONDS = 10.0
RECITE_TITLE = "Update the memory to the code as it is now"
FORGET_TITLE = "Forget this memory"


def memory_citations_of(state: FolderState, rel: str) -> list[drift.Citation]:
    cached = state.extras.get("drift.citations")
    now = time.monotonic()
    if cached is None or now - cached[0] > CITATIONS_SECONDS:
        by_path: dict[str, list[drift.Citation]] = {}
        for citation in drift.memory_citations(state.store):
            by_path.setdefault(citation.path, []).append(citation)
        cached = (now, by_path)
        state.extras["drift.citations"] = cached
    citations: list[drift.Citation] = cached[1].get(rel, [])
    return citations


def stale_memories(
    state: FolderState, rel: str, text: str, version: int | None = None
) -> list[drift.DriftItem]:
    """Stale-citation items for the memories citing `rel`, checked against `text` (the buffer).

    Kept per document version: looking for moved code scans the file, and diagnostics are
    pulled again and again while nothing changed."""
    citations = memory_citations_of(state, rel)
    if not citations:
        return []
    cache: dict[str, tuple[object, list[drift.DriftItem]]] = state.extras.setdefault(
        "drift.stale", {}
    )
    # The citations as read at that moment (engram's own commands read them again at once).
    read_at = state.extras["drift.citations"][0]
    key = (version, read_at) if version is not None else None
    cached = cache.get(rel)
    if key is not None and cached is not None and cached[0] == key:
        return cached[1]
    items = []
    for citation in citations:
        item = drift.check_citation(state.root, citation, text=text)
        if item is not None:
            items.append(item)
    cache[rel] = (key, items)
    return items


class DriftView:
    def __init__(self, server: EngramServer) -> None:
        self.server = server
        self.cache: dict[str, tuple[int, float, list[drift.DriftItem]]] = {}

    def overlaps(self, state: FolderState, rel: str) -> list[drift.DriftItem]:
        generation = get_feature(self.server).generation
        now = time.time()
        cached = self.cache.get(rel)
        if cached and cached[0] == generation and now - cached[1] < RECOMPUTE_SECONDS:
            return cached[2]
        items = drift.overlaps(
            state.store, rel, window_minutes=float(state.settings["drift.window_minutes"]), now=now
        )
        self.cache[rel] = (generation, now, items)
        return items

    def items_for(self, state: FolderState, document: TextDocument) -> list[drift.DriftItem]:
        doc = get_feature(self.server).docs.get(document.uri)
        if doc is None:
            return []
        items = list(self.overlaps(state, doc.rel))
        if doc.conflict is not None:
            items.insert(0, doc.conflict)
        items.extend(stale_memories(state, doc.rel, document.source, document.version))
        return items

    def diagnostics(
        self, server: EngramServer, state: FolderState, document: TextDocument
    ) -> list[types.Diagnostic]:
        result = []
        line_count = max(1, len(document.lines))
        for item in self.items_for(state, document):
            start, end = item.lines or (1, 1)
            start, end = min(start, line_count) - 1, min(end, line_count) - 1
            end_text = document.lines[end] if end < len(document.lines) else ""
            result.append(
                types.Diagnostic(
                    range=types.Range(
                        start=types.Position(line=start, character=0),
                        end=types.Position(line=end, character=len(end_text.rstrip("\r\n"))),
                    ),
                    message=item.summary,
                    severity=SEVERITY[item.severity],
                    code="drift",
                    source="engram",
                    data={
                        "kind": item.kind,
                        "id": item.id,
                        "severity": item.severity,
                        "uri": document.uri,
                        **_citation_data(item),
                    },
                )
            )
        return result

    def hover(
        self,
        server: EngramServer,
        state: FolderState,
        document: TextDocument,
        position: types.Position,
    ) -> str | None:
        line = position.line + 1
        parts = []
        for item in self.items_for(state, document):
            start, end = item.lines or (1, 1)
            if not start <= line <= end:
                continue
            if item.kind == "stale-citation":
                parts.append(
                    f"**engram**: {item.summary}.\n\nWhat the memory says may no longer be true: "
                    f"the next agent is told it marked *needs checking*. Update the memory to "
                    f"the code as it is now, or forget it (quick fixes)."
                )
                continue
            if item.kind == "unsaved":
                parts.append(
                    f"**engram drift** ({item.severity}): {item.summary}.\n\n"
                    f"Use the quick fix *{DIFF_TITLE}* before saving over it."
                )
                continue
            rows = "\n".join(
                f"| {change['actor']}{' ' + change['session_id'] if change['session_id'] else ''} "
                f"| {change['ago']} | {change['timestamp']} |"
                for change in item.details.get("changes", [])
            )
            parts.append(
                f"**engram drift** ({item.severity}): lines {start}-{end} were changed by two hands.\n\n"
                f"| who | when | at |\n| --- | --- | --- |\n{rows}"
            )
        return "\n\n".join(parts) or None

    def code_actions(
        self,
        server: EngramServer,
        state: FolderState,
        document: TextDocument,
        params: types.CodeActionParams,
    ) -> list[types.CodeAction]:
        actions = []
        for diagnostic in params.context.diagnostics:
            if diagnostic.code != "drift" or diagnostic.source != "engram":
                continue
            kind = diagnostic.data.get("kind") if isinstance(diagnostic.data, dict) else None
            if kind == "unsaved":
                actions.append(
                    types.CodeAction(
                        title=DIFF_TITLE,
                        kind=types.CodeActionKind.QuickFix,
                        diagnostics=[diagnostic],
                        command=types.Command(
                            title=DIFF_TITLE,
                            command="engram.drift.diff",
                            arguments=[{"uri": document.uri}],
                        ),
                    )
                )
            elif kind == "stale-citation" and isinstance(diagnostic.data, dict):
                memory_id = diagnostic.data.get("memory")
                if not isinstance(memory_id, str):
                    continue
                moved_to = diagnostic.data.get("moved_to")
                if not diagnostic.data.get("gone"):
                    recite: dict[str, Any] = {"id": memory_id, "uri": document.uri}
                    if isinstance(moved_to, int):
                        recite["line"] = moved_to
                    actions.append(
                        types.CodeAction(
                            title=RECITE_TITLE,
                            kind=types.CodeActionKind.QuickFix,
                            diagnostics=[diagnostic],
                            is_preferred=isinstance(moved_to, int),
                            command=types.Command(
                                title=RECITE_TITLE,
                                command="engram.memory.recite",
                                arguments=[recite],
                            ),
                        )
                    )
                actions.append(
                    types.CodeAction(
                        title=FORGET_TITLE,
                        kind=types.CodeActionKind.QuickFix,
                        diagnostics=[diagnostic],
                        command=types.Command(
                            title=FORGET_TITLE,
                            command="engram.memory.forget",
                            arguments=[{"id": memory_id, "uri": document.uri}],
                        ),
                    )
                )
            elif kind == "overlap":
                actions.append(
                    types.CodeAction(
                        title="Show who changed this file",
                        kind=types.CodeActionKind.QuickFix,
                        diagnostics=[diagnostic],
                        command=types.Command(
                            title="Show who changed this file",
                            command="engram.evolution.history",
                            arguments=[{"uri": document.uri}],
                        ),
                    )
                )
        return actions


def _citation_data(item: drift.DriftItem) -> dict[str, Any]:
    if item.kind != "stale-citation":
        return {}
    data: dict[str, Any] = {"memory": item.details.get("owner")}
    if "moved_to" in item.details:
        data["moved_to"] = item.details["moved_to"]
    if item.severity == "critical":
        data["gone"] = True
    return data


def _memory_id(args: dict[str, Any]) -> str:
    memory_id = args.get("id")
    if not isinstance(memory_id, str) or not memory_id:
        raise UsageError("give the memory as `id`")
    return memory_id


def diff(ls: EngramServer, args: dict[str, Any]) -> dict[str, Any]:
    """`engram.drift.diff {uri}`: the unsaved buffer against the file on disk, as a unified diff
    written to .engram/exports/views/ and shown."""
    uri = args.get("uri")
    if not isinstance(uri, str) or not uri:
        raise UsageError("give the document as `uri`")
    doc = get_feature(ls).docs.get(uri)
    document = ls.workspace.text_documents.get(uri)
    state = ls.state_for_uri(uri)
    if doc is None or document is None or state is None:
        raise UsageError(f"{uri} is not open in the editor")
    try:
        disk = (state.root / doc.rel).read_text(encoding="utf-8", errors="replace")
    except FileNotFoundError:
        disk = ""
    # A lone surrogate (a client may send "\ud800" in an edit) cannot be written as UTF-8
    # nor sent back: it is shown as U+FFFD, as the disk side's undecodable bytes are.
    buffer = _LONE_SURROGATE.sub("\ufffd", document.source)
    text = "".join(
        difflib.unified_diff(
            disk.splitlines(keepends=True),
            buffer.splitlines(keepends=True),
            fromfile=f"{doc.rel} (on disk)",
            tofile=f"{doc.rel} (unsaved buffer)",
        )
    )
    shown = show_view(ls, state, f"diff-{doc.rel}.diff", text or "no difference\n")
    return {"path": doc.rel, "diff": text, "view": shown}


def report(ls: EngramServer, args: dict[str, Any]) -> dict[str, Any]:
    """`engram.drift {snapshot?}`: every kind of drift, the most severe first."""
    state = ls.state_for_command(args)
    evolution.observe_git(state.store)
    # `snapshot` is text when given (engram_command checks it).
    items = drift.detect(state.store, state.settings, snapshot_id=args.get("snapshot"))
    feature = get_feature(ls)
    for doc in list(feature.docs.values()):
        if doc.conflict is not None and ls.state_for_uri(doc.uri) is state:
            items.insert(0, doc.conflict)
    items.sort(key=lambda item: -drift.severity_rank(item.severity))
    found = [item.as_dict() for item in items]
    return {"drift": found, "markdown": drift.markdown(found)}


# The quick fixes of a stale memory citation: after either, the diagnostic goes away.
def _recite(ls: EngramServer, args: dict[str, Any]) -> dict[str, Any]:
    from memory_core import memory

    state = ls.state_for_command(args)
    # `line` (1-based) is a whole number when given: engram_command checks it.
    entry: dict[str, Any] = memory.recite(state.store, _memory_id(args), line=args.get("line"))
    state.extras.pop("drift.citations", None)
    return entry


def _forget(ls: EngramServer, args: dict[str, Any]) -> dict[str, Any]:
    from memory_core import memory

    state = ls.state_for_command(args)
    deleted: dict[str, Any] = memory.forget(state.store, _memory_id(args), reason="stale citation")
    state.extras.pop("drift.citations", None)
    return deleted


async def recite(ls: EngramServer, args: dict[str, Any]) -> dict[str, Any]:
    entry: dict[str, Any] = await ls.run_blocking(_recite, ls, args)
    ls.refresh_diagnostics()
    return entry


async def forget(ls: EngramServer, args: dict[str, Any]) -> dict[str, Any]:
    deleted: dict[str, Any] = await ls.run_blocking(_forget, ls, args)
    ls.refresh_diagnostics()
    return deleted


def register(server: EngramServer) -> None:
    view = DriftView(server)
    server.diagnostic_providers.append(view.diagnostics)
    server.hover_providers.append(view.hover)
    server.code_action_providers.append(view.code_actions)
    engram_command(server, "engram.drift.diff")(diff)
    engram_command(server, "engram.drift")(report)
    engram_command(server, "engram.memory.recite")(recite)
    engram_command(server, "engram.memory.forget")(forget)
