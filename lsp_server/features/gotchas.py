"""Gotchas in the editor: diagnostics, hovers, code actions and the `engram.gotcha.*` commands.

Providers only (the shared `textDocument/*` methods belong to other modules): a diagnostic
provider, a hover provider and a code-action provider, plus a document listener that keeps the
store's in-code annotations in step with the file on open and save.

Freshness: each folder keeps a `GotchaIndex` built for one gotcha revision (a counter every
change bumps, from any process) and one state of the team file. While documents are open a
short asyncio timer compares both on a worker thread; when either moved (a CLI `engram gotcha
add`, a hook that learned a gotcha, a `git pull` of team/gotchas.toml) the index is rebuilt off
the event loop and every open document's diagnostics are refreshed. Edits are incremental:
matches are cached per line text, so a keystroke re-scans only the lines it changed.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from lsprotocol import types
from pygls.uris import from_fs_path, to_fs_path
from pygls.workspace import TextDocument

from lsp_server import gotcha_format
from lsp_server.features.commands import engram_command
from lsp_server.gotcha_format import split_lines
from lsp_server.server import DocumentListener, EngramServer, FolderState
from memory_core import clock, gotchas, views
from memory_core.errors import UsageError
from memory_core.gotchas import records, team
from memory_core.gotchas.records import Gotcha
from memory_core.gotchas.scan import (
    GotchaIndex,
    Hit,
    ScanResult,
    annotation_gotcha,
    find_annotations,
)

logger = logging.getLogger("engram.lsp")

POLL_SECONDS = 0.5
# Time-based visibility (snoozes ending, candidates decaying) is rechecked this often.
REBUILD_EVERY_SECONDS = 600.0
SOURCE = gotcha_format.SOURCE
TEAM_FILE_CODE = gotcha_format.TEAM_FILE_CODE
SLOW_PATTERN_CODE = gotcha_format.SLOW_PATTERN_CODE
SNOOZE_DAYS = 7


def diagnostic_severity(gotcha: Gotcha) -> types.DiagnosticSeverity:
    """Confirmed gotchas at their severity; candidates quietly, until a person confirms them."""
    return types.DiagnosticSeverity(gotcha_format.severity(gotcha))


@dataclass
class DocScan:
    version: int | None
    key: object
    path: str
    lines: list[str]
    result: ScanResult
    index: GotchaIndex


class GotchaFolder:
    """One workspace folder's gotcha index and the scans of its open documents."""

    def __init__(self, state: FolderState) -> None:
        self.state = state
        self.index: GotchaIndex | None = None
        self.key: object = None
        self.built_at = 0.0
        self.scans: dict[str, DocScan] = {}
        self.lock = threading.Lock()
        self.building: asyncio.Future[None] | None = None
        self.diagnostic_cache: dict[object, Any] = {}

    def current_key(self) -> object:
        return gotcha_format.index_key(self.state.store, self.state.root, self.state.settings)

    def stale(self) -> bool:
        return self.key != self.current_key() or clock.now() - self.built_at > REBUILD_EVERY_SECONDS

    def rebuild(self) -> GotchaIndex:
        key = gotcha_format.index_key(self.state.store, self.state.root, self.state.settings)
        now = clock.now()
        index = gotcha_format.build_folder_index(self.state.store, self.state.settings, key, now)
        with self.lock:
            self.index, self.key, self.built_at = index, key, now
            self.scans.clear()
        return index

    def adopt(self, key: object, index: GotchaIndex, built_at: float) -> bool:
        """Take the index the stdio front built while the server loaded (lsp_server/early.py)
        if nothing it depends on changed since: no second build, and the squiggles the front
        published are not cleared while one runs."""
        if key != self.current_key():
            return False
        with self.lock:
            self.index, self.key, self.built_at = index, key, built_at
            self.scans.clear()
        return True

    def ensure_index(self) -> GotchaIndex:
        """The index, built here if there is none yet (for worker threads only)."""
        return self.index if self.index is not None else self.rebuild()

    def index_or_build(self, server: EngramServer) -> GotchaIndex | None:
        """The index, or None while it is first built on a worker thread (on the event loop:
        10,000 gotchas take a good fraction of a second to load, and typing must not wait).
        Every document is refreshed once it is ready."""
        if self.index is not None:
            return self.index
        early = server.early_gotcha_indexes.pop(self.state.root, None)
        if early is not None:
            try:
                if self.adopt(*early):
                    return self.index
            except Exception:
                logger.exception("cannot take the early gotcha index of %s", self.state.root)
        if self.building is None:
            self.building = asyncio.ensure_future(self._build(server))
        return None

    async def _build(self, server: EngramServer) -> None:
        try:
            await server.run_blocking(self.rebuild)
            server.refresh_diagnostics()
        except Exception:
            logger.exception("cannot load the gotchas of %s", self.state.root)
        finally:
            self.building = None

    def relative(self, uri: str) -> str | None:
        fs_path = to_fs_path(uri)
        if not fs_path:
            return None
        try:
            return Path(fs_path).resolve().relative_to(self.state.root).as_posix()
        except (ValueError, OSError):
            return None

    def scan(self, document: TextDocument, server: EngramServer) -> DocScan | None:
        path = self.relative(document.uri)
        if path is None or path.startswith((".git/", ".engram/")):
            return None
        index = self.index_or_build(server)
        if index is None:
            return None
        with self.lock:
            cached = self.scans.get(document.uri)
        if cached is not None and cached.version == document.version and cached.key is self.key:
            return cached
        lines = split_lines(document.source)
        result = index.scan(path, lines)
        scan = DocScan(document.version, self.key, path, lines, result, index)
        with self.lock:
            self.scans[document.uri] = scan
        return scan


def folder_of(state: FolderState) -> GotchaFolder:
    folder = state.extras.get("gotchas")
    if not isinstance(folder, GotchaFolder):
        folder = GotchaFolder(state)
        state.extras["gotchas"] = folder
    return folder


def _column(document: TextDocument, line: str, units: int) -> int:
    """A client column (UTF-16 units by default) as a character offset in `line`."""
    if line.isascii():
        return units
    count = 0
    for index, char in enumerate(line):
        if count >= units:
            return index
        count += int(document.position_codec.client_num_units(char))
    return len(line)


def _gotcha_for_hit(index: GotchaIndex, scan: DocScan, hit: Hit) -> Gotcha | None:
    return gotcha_format.gotcha_for_hit(index, scan.result, scan.path, hit)


def _structure(diagnostic: dict[str, Any]) -> types.Diagnostic:
    """A diagnostic of lsp_server/gotcha_format.py (plain JSON, shared with the stdio front's
    early diagnostics) as lsprotocol's class."""
    position = types.Position
    start, end = diagnostic["range"]["start"], diagnostic["range"]["end"]
    return types.Diagnostic(
        range=types.Range(
            start=position(line=start["line"], character=start["character"]),
            end=position(line=end["line"], character=end["character"]),
        ),
        message=diagnostic["message"],
        severity=types.DiagnosticSeverity(diagnostic["severity"]),
        source=diagnostic["source"],
        code=diagnostic["code"],
        data=diagnostic.get("data"),
    )


def _team_file_diagnostics(state: FolderState) -> list[types.Diagnostic]:
    loaded = team.load(state.root)
    return [
        types.Diagnostic(
            range=types.Range(
                start=types.Position(line=problem.line, character=0),
                end=types.Position(line=problem.line + 1, character=0),
            ),
            message=problem.message,
            severity=types.DiagnosticSeverity.Error,
            source=SOURCE,
            code=TEAM_FILE_CODE,
        )
        for problem in loaded.problems
    ]


def diagnostics(
    server: EngramServer, state: FolderState, document: TextDocument
) -> list[types.Diagnostic]:
    folder = folder_of(state)
    if Path(to_fs_path(document.uri) or "") == team.team_path(state.root):
        return _team_file_diagnostics(state)
    scan = folder.scan(document, server)
    if scan is None:
        return []
    index = scan.index
    found: list[types.Diagnostic] = []
    # A hit on the same line text, for the same index, makes the same diagnostic: after an edit
    # only the changed lines' diagnostics are made again.
    cache = folder.diagnostic_cache
    if cache.get("index") is not index or len(cache) > 50_000:
        cache.clear()
        cache["index"] = index
    for hit in scan.result.hits:
        key = (hit, scan.lines[hit.line] if hit.line < len(scan.lines) else "")
        made = cache.get(key)
        if made is None:
            gotcha = _gotcha_for_hit(index, scan, hit)
            if gotcha is None:
                continue
            encoding = str(document.position_codec.encoding)
            made = _structure(gotcha_format.hit_diagnostic(gotcha, hit, scan.lines, encoding))
            cache[key] = made
        found.append(made)
    for slow in scan.result.slow:
        timeout_ms = state.settings["gotchas.regex_timeout_ms"]
        found.append(
            _structure(gotcha_format.slow_diagnostic(slow.gotcha_id, slow.pattern, timeout_ms))
        )
    return found


def hover_markdown(gotcha: Gotcha, hit: Hit | None = None) -> str:
    """The full story of a gotcha, as the hover shows it."""
    status = {"candidate": "candidate (learned, not yet confirmed)", "confirmed": "confirmed"}.get(
        gotcha.status, gotcha.status
    )
    # No title: the diagnostic's message, shown just above in every editor, is the title.
    lines = [
        f"engram gotcha `{gotcha.id}` · severity **{gotcha.severity}** · category "
        f"**{gotcha.category}** · {status}",
    ]
    if gotcha.status == "candidate":
        lines += [
            "",
            f"Learned from {gotcha.occurrences} repeated errors: confirm it (quick fix) if it is real.",
        ]
    if gotcha.description and gotcha.description != gotcha.title:
        lines += ["", gotcha.description]
    if gotcha.workaround:
        lines += ["", f"**Workaround:** {gotcha.workaround}"]
    facts = []
    if gotcha.occurrences:
        facts.append(f"occurrences: {gotcha.occurrences}")
    if gotcha.first_seen is not None:
        facts.append(f"first seen {clock.iso(gotcha.first_seen)}")
    if gotcha.last_seen is not None:
        facts.append(f"last seen {clock.iso(gotcha.last_seen)} ({clock.ago(gotcha.last_seen)})")
    if facts:
        lines += ["", " · ".join(facts)]
    provenance = [f"source: {gotcha.source_type}"]
    for key in ("command", "tool", "session_id", "file", "line"):
        if gotcha.provenance.get(key) is not None:
            provenance.append(f"{key}: `{gotcha.provenance[key]}`")
    if gotcha.related_files:
        provenance.append("files: " + ", ".join(f"`{f}`" for f in gotcha.related_files))
    if gotcha.code_pattern:
        provenance.append(f"pattern ({gotcha.pattern_kind}): `{gotcha.code_pattern}`")
    lines += ["", " · ".join(provenance)]
    if hit is not None and hit.kind == "anchor":
        lines += [
            "",
            "⚠ **The code changed since this was recorded.**"
            if hit.stale
            else "The cited code is unchanged since it was recorded.",
        ]
    return "\n".join(lines)


def hover(
    server: EngramServer, state: FolderState, document: TextDocument, position: types.Position
) -> str | None:
    folder = folder_of(state)
    scan = folder.scan(document, server)
    if scan is None or position.line >= len(scan.lines):
        return None
    index = scan.index
    line = scan.lines[position.line]
    column = _column(document, line, position.character)
    parts: list[str] = []
    shown: set[str] = set()
    for hit in scan.result.hits:
        if hit.line != position.line or hit.gotcha_id in shown:
            continue
        if not (hit.start <= column <= hit.end or hit.kind == "file"):
            continue
        gotcha = _gotcha_for_hit(index, scan, hit)
        if gotcha is not None:
            shown.add(gotcha.id)
            parts.append(hover_markdown(gotcha, hit))
    return "\n\n---\n\n".join(parts) or None


def _command(title: str, name: str, args: dict[str, Any]) -> types.Command:
    return types.Command(title=title, command=name, arguments=[args])


def code_actions(
    server: EngramServer, state: FolderState, document: TextDocument, params: types.CodeActionParams
) -> list[types.CodeAction]:
    index = folder_of(state).index_or_build(server)
    actions: list[types.CodeAction] = []
    seen: set[str] = set()
    for diagnostic in params.context.diagnostics:
        if diagnostic.source != SOURCE or not isinstance(diagnostic.code, str):
            continue
        gotcha = index.get(diagnostic.code) if index is not None else None
        if gotcha is None or gotcha.id in seen:
            continue
        seen.add(gotcha.id)
        args = {"id": gotcha.id, "uri": document.uri}
        short = gotcha.title if len(gotcha.title) <= 50 else gotcha.title[:49] + "…"
        choices: list[tuple[str, str, dict[str, Any]]] = []
        if gotcha.status == "candidate":
            choices.append((f"Confirm gotcha: {short}", "engram.gotcha.confirm", {}))
        choices.append(
            (f"Resolve gotcha for the whole project: {short}", "engram.gotcha.resolve", {})
        )
        choices.append(
            (f"Snooze gotcha for {SNOOZE_DAYS} days", "engram.gotcha.snooze", {"days": SNOOZE_DAYS})
        )
        if gotcha.source_type not in ("team", "annotation") and not gotcha.promoted:
            choices.append(
                ("Promote gotcha to team (team/gotchas.toml)", "engram.gotcha.promote", {})
            )
        choices.append(("Show all gotchas", "engram.gotcha.showAll", {}))
        for position, (title, name, extra) in enumerate(choices):
            actions.append(
                types.CodeAction(
                    title=title,
                    kind=types.CodeActionKind.QuickFix,
                    diagnostics=[diagnostic],
                    is_preferred=True if position == 0 and gotcha.status == "candidate" else None,
                    command=_command(title, name, {**args, **extra}),
                )
            )
    selection = params.range
    if selection.start != selection.end:
        actions.append(
            types.CodeAction(
                title="Add gotcha from selection",
                kind=types.CodeActionKind.Source,
                command=_command(
                    "Add gotcha from selection",
                    "engram.gotcha.add",
                    {
                        "uri": document.uri,
                        "range": server.protocol._converter.unstructure(selection),
                    },
                ),
            )
        )
    return actions


class AnnotationSync(DocumentListener):
    """Keeps the store's annotation gotchas equal to the `gotcha:` comments of saved files."""

    def __init__(self) -> None:
        self.pending: set[asyncio.Future[None]] = set()

    def _sync(self, server: EngramServer, state: FolderState, document: TextDocument) -> None:
        path = folder_of(state).relative(document.uri)
        if path is None or path.startswith((".git/", ".engram/")):
            return
        lines = split_lines(document.source)
        if len(document.source) > int(state.settings["gotchas.max_file_bytes"]):
            return
        now = clock.now()
        found = [
            annotation_gotcha(path, a, now) for a in find_annotations(path, lines, document.source)
        ]

        async def run() -> None:
            try:
                changed = await server.run_blocking(
                    records.sync_annotations, state.store, path, found
                )
                if changed:
                    await refresh(server, state)
            except Exception:
                logger.exception("cannot sync the gotcha annotations of %s", path)

        task = asyncio.ensure_future(run())
        self.pending.add(task)
        task.add_done_callback(self.pending.discard)

    def did_open(self, server: EngramServer, state: FolderState, document: TextDocument) -> None:
        self._sync(server, state, document)

    def did_save(self, server: EngramServer, state: FolderState, document: TextDocument) -> None:
        self._sync(server, state, document)

    def did_close(self, server: EngramServer, state: FolderState, uri: str) -> None:
        with folder_of(state).lock:
            folder_of(state).scans.pop(uri, None)


async def refresh(server: EngramServer, state: FolderState) -> None:
    """Rebuild a folder's index off the event loop, then refresh every open document."""
    await server.run_blocking(folder_of(state).rebuild)
    server.refresh_diagnostics()


async def _watch(server: EngramServer) -> None:
    """Notice gotcha changes made by other processes (and team-file edits) while documents are open."""
    while True:
        await asyncio.sleep(POLL_SECONDS)
        if not server.workspace.text_documents:
            continue
        for state in list(server.folders.values()):
            folder = folder_of(state)
            try:
                if folder.index is not None and await server.run_blocking(folder.stale):
                    await refresh(server, state)
            except Exception:
                logger.exception("cannot refresh the gotchas of %s", state.root)


def _selection_text(server: EngramServer, args: dict[str, Any]) -> tuple[str, str | None]:
    """(selected text, its file's workspace-relative glob) of a `uri` + `range` argument."""
    uri, raw_range = args.get("uri"), args.get("range")
    if not isinstance(uri, str) or not isinstance(raw_range, dict):
        raise UsageError("a selection needs `uri` and `range`")
    try:
        selection = server.protocol._converter.structure(raw_range, types.Range)
    except Exception:
        raise UsageError(f"`range` is not an LSP range: {raw_range!r}") from None
    document = server.workspace.get_text_document(uri)
    lines = split_lines(document.source)
    start, end = selection.start, selection.end
    if start.line >= len(lines):
        raise UsageError("the selection is outside the document")
    if start.line == end.line:
        line = lines[start.line]
        text = line[
            _column(document, line, start.character) : _column(document, line, end.character)
        ]
    else:
        first = lines[start.line]
        text = first[_column(document, first, start.character) :]
    text = text.strip() or next(
        (
            lines[n].strip()
            for n in range(start.line, min(end.line + 1, len(lines)))
            if lines[n].strip()
        ),
        "",
    )
    if not text:
        raise UsageError("the selection is empty")
    suffix = Path(to_fs_path(uri) or "").suffix
    return text, f"*{suffix}" if suffix else None


async def start_watch(ls: EngramServer) -> None:
    ls.extras_gotcha_watch = asyncio.ensure_future(_watch(ls))  # type: ignore[attr-defined]
    # Documents opened while `initialized` was still being handled (before the server knew
    # whether to push or be pulled) get their gotchas now.
    if ls.workspace.text_documents:
        ls.refresh_diagnostics()


def load_early(ls: EngramServer, state: FolderState) -> None:
    folder_of(state).index_or_build(ls)


def after(ls: EngramServer, state: FolderState) -> Any:
    return refresh(ls, state)


async def add(ls: EngramServer, args: dict[str, Any]) -> dict[str, Any]:
    state = ls.state_for_command(args)
    title = args.get("title")
    pattern = args.get("pattern")
    kind = args.get("pattern_kind") or ("literal" if args.get("literal") else "regex")
    files = args.get("related_files", args.get("files", [])) or []
    if isinstance(files, str):
        files = [files]
    if "range" in args:
        text, glob = _selection_text(ls, args)
        pattern, kind = text, "literal"
        if not files and glob:
            files = [glob]
        if not title:
            shown = text if len(text) <= 60 else text[:59] + "…"
            title = f"Careful with `{shown}`"
    if not isinstance(title, str) or not title.strip():
        raise UsageError("engram.gotcha.add needs a `title`")
    gotcha = await ls.run_blocking(
        gotchas.add,
        state.store,
        title,
        description=str(args.get("description") or ""),
        workaround=str(args.get("workaround") or ""),
        category=args.get("category") or None,
        severity=str(args.get("severity") or "medium"),
        related_files=[str(f) for f in files],
        pattern=pattern if isinstance(pattern, str) and pattern else None,
        pattern_kind=str(kind),
        error_pattern=args.get("error_pattern") or None,
    )
    await after(ls, state)
    return {"id": gotcha.id, "gotcha": gotcha.to_dict()}


def _id(args: dict[str, Any]) -> str:
    value = args.get("id")
    if not isinstance(value, str) or not value:
        raise UsageError("the command needs the gotcha `id`")
    return value


async def change(ls: EngramServer, args: dict[str, Any], fn: Any, *extra: Any) -> dict[str, Any]:
    state = ls.state_for_command(args)
    gotcha = await ls.run_blocking(fn, state.store, _id(args), *extra)
    await after(ls, state)
    return {"id": gotcha.id, "gotcha": gotcha.to_dict()}


async def resolve(ls: EngramServer, args: dict[str, Any]) -> dict[str, Any]:
    result = await change(ls, args, gotchas.resolve)
    if args.get("uri"):
        # From a quick fix (which carries the document): say what happened, and where.
        ls.show_message(
            f"engram: gotcha “{result['gotcha']['title']}” resolved for the whole project; "
            "it comes back if its error happens again.",
            types.MessageType.Info,
        )
    return result


async def confirm(ls: EngramServer, args: dict[str, Any]) -> dict[str, Any]:
    return await change(ls, args, gotchas.confirm)


async def snooze(ls: EngramServer, args: dict[str, Any]) -> dict[str, Any]:
    # A number when given (engram_command checks it); null, like every argument, is left out.
    days = args.get("days")
    return await change(ls, args, gotchas.snooze, float(SNOOZE_DAYS if days is None else days))


async def promote(ls: EngramServer, args: dict[str, Any]) -> dict[str, Any]:
    state = ls.state_for_command(args)
    result = await change(ls, args, team.promote)
    result["team_file"] = str(team.team_path(state.root))
    return result


def list_command(ls: EngramServer, args: dict[str, Any]) -> dict[str, Any]:
    state = ls.state_for_command(args)
    found = records.list_gotchas(state.store, include_resolved=bool(args.get("all")))
    listed = [g.to_dict() for g in found]
    return {"gotchas": listed, "markdown": views.gotchas(listed)}


def show(ls: EngramServer, args: dict[str, Any]) -> dict[str, Any]:
    state = ls.state_for_command(args)
    return records.get(state.store, _id(args)).to_dict()


def context(ls: EngramServer, args: dict[str, Any]) -> dict[str, Any]:
    state = ls.state_for_command(args)
    task = str(args.get("task") or "")
    files = [str(f) for f in args.get("files", []) or []]
    limit = int(args.get("limit") or state.settings["gotchas.context_limit"])
    ranked = gotchas.rank_for_task(state.store, task, files, limit)
    return {
        "gotchas": [{**g.to_dict(), "score": score} for score, g in ranked],
        "markdown": gotchas.context_for_task(state.store, task, files, limit),
    }


async def show_all(ls: EngramServer, args: dict[str, Any]) -> dict[str, Any]:
    state = ls.state_for_command(args)
    from memory_core.gotchas import exports

    md_path, _json_path = await ls.run_blocking(exports.write_exports, state.store)
    found = await ls.run_blocking(records.list_gotchas, state.store)
    uri = from_fs_path(str(md_path)) or md_path.as_uri()
    shown = False
    if ls.client_supports("window", "show_document", "support"):
        with contextlib.suppress(Exception):
            result = await ls.window_show_document_async(
                types.ShowDocumentParams(uri=uri, take_focus=True)
            )
            shown = bool(result and result.success)
    if not shown:
        ls.show_message(f"engram: {len(found)} open gotchas; see {md_path}")
    return {"uri": uri, "shown": shown, "gotchas": [g.to_dict() for g in found]}


async def track(ls: EngramServer, args: dict[str, Any]) -> dict[str, Any]:
    state = ls.state_for_command(args)
    message = args.get("message")
    if not isinstance(message, str) or not message.strip():
        raise UsageError("engram.error.track needs the error `message`")
    line = args.get("line")  # a whole number when given (checked by engram_command)
    at = args.get("at")
    when: float | None = None
    if at is not None:
        # When the error happened (ISO-8601), for clients replaying errors from a log.
        try:
            when = clock.parse_iso(str(at))
        except ValueError:
            raise UsageError(f"`at` must be an ISO-8601 time, got {at!r}") from None
    file = args.get("file")
    if isinstance(file, str) and "://" in file:
        file = to_fs_path(file)
    result = await ls.run_blocking(
        gotchas.track_error,
        state.store,
        message,
        settings=state.settings,
        file=file if isinstance(file, str) else None,
        line=line,
        command=args.get("command") if isinstance(args.get("command"), str) else None,
        tool=args.get("tool") if isinstance(args.get("tool"), str) else "editor",
        now=when,
    )
    if result.gotcha_id is not None:
        await after(ls, state)
    return result.to_dict()


def register(server: EngramServer) -> None:
    server.diagnostic_providers.append(diagnostics)
    server.hover_providers.append(hover)
    server.code_action_providers.append(code_actions)
    server.document_listeners.append(AnnotationSync())
    server.initialized_listeners.append(start_watch)
    server.folder_ready_listeners.append(load_early)
    engram_command(server, "engram.gotcha.add")(add)
    engram_command(server, "engram.gotcha.resolve")(resolve)
    engram_command(server, "engram.gotcha.confirm")(confirm)
    engram_command(server, "engram.gotcha.snooze")(snooze)
    engram_command(server, "engram.gotcha.promote")(promote)
    engram_command(server, "engram.gotcha.list")(list_command)
    engram_command(server, "engram.gotcha.show")(show)
    engram_command(server, "engram.gotcha.context")(context)
    engram_command(server, "engram.gotcha.showAll")(show_all)
    engram_command(server, "engram.error.track")(track)
