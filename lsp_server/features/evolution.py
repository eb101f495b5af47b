"""File evolution from the editor's side: typed edits, disk writes, renames, deletes, git moves.

Sources, each attributed to an actor (memory_core.evolution):
- document sync (`didChange`): the user typing, actor `editor`. Handling a change is O(size of
  the change): it only updates the touched line ranges of the document (`LineRanges`). Recording
  is debounced per document (`EDIT_DEBOUNCE_SECONDS` after the last keystroke, at the latest
  `EDIT_MAX_DELAY_SECONDS` after the first, and on save) and runs on the feature's own writer
  thread, so hashing and the store never sit on the request path.
- disk changes, actor `external`: `workspace/didChangeWatchedFiles` when the client watches (the
  watching feature registers it), else the server's own watcher (`watchfiles`, inotify through
  Rust's notify, started when `server.client_watches_files` is still False after `initialized`).
  Both honour every `.gitignore` (nested ones too), `.git/info/exclude` and `watch.exclude`,
  and never record `.engram/` or `.git/`. A disk change with the content the editor just saved is the save itself,
  not an external change: the hash chain in memory_core skips it. A burst where HEAD moved is one
  git event.
- `workspace/didRenameFiles` and `workspace/didDeleteFiles`: renames and deletes made in the
  editor, actor `editor`.

It also keeps, per open document, what is known to be on disk, so the drift feature can warn
about a buffer with unsaved edits whose file changed on disk. The code lens "N edits today ·
last by agent 5 min ago" sits on line 0 of a file with recorded activity; its command
`engram.evolution.history` opens the file's history.
"""

from __future__ import annotations

import asyncio
import bisect
import concurrent.futures
import logging
import os
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from lsprotocol import types
from pygls.uris import from_fs_path, to_fs_path
from pygls.workspace import TextDocument

from lsp_server.features.commands import engram_command
from lsp_server.server import DocumentListener, EngramServer, FolderState
from memory_core import clock, drift, evolution, journal
from memory_core import store as store_module
from memory_core.errors import UsageError
from memory_core.filenames import safe_filename
from memory_core.workspace import STORE_DIRNAME, relative_path

logger = logging.getLogger("engram.lsp")

EDIT_DEBOUNCE_SECONDS = 1.0
EDIT_MAX_DELAY_SECONDS = 5.0
DISK_DEBOUNCE_SECONDS = 0.25
MAX_RANGES = 64
# Recent contents of files seen on disk, so the next external change of one has its lines.
CACHE_FILES = 256
CACHE_MAX_BYTES = 256 * 1024
CACHE_TOTAL_BYTES = 16 * 1024 * 1024
FEATURE = "evolution"


class LineRanges:
    """Touched line ranges (0-based, inclusive) kept in the document's current coordinates.

    Sorted, disjoint start and end lists: `edit` finds the ranges an edit touches by bisection
    and shifts the ranges after it only when the edit adds or removes lines, so typing within a
    line costs O(log ranges) and no edit ever costs O(file). At most MAX_RANGES are read out;
    edits may leave up to twice as many before the closest are joined, all in one pass (joining
    one pair at every edit past the limit was most of an edit's cost in a busy document).
    """

    def __init__(self) -> None:
        self.starts: list[int] = []
        self.ends: list[int] = []
        self.whole = False

    @property
    def ranges(self) -> list[list[int]]:
        self._join_closest()
        return [[a, b] for a, b in zip(self.starts, self.ends, strict=True)]

    def edit(self, start: int, end: int, end_character: int, text: str) -> None:
        """Apply a replacement of (start, 0..end, end_character) by `text` to the ranges."""
        newlines = text.count("\n")
        delta = newlines - (end - start)
        # A range ending at column 0 leaves its last line untouched (it only moves), and a text
        # ending in a newline does not touch the line after it. That holds for an insertion at
        # column 0 too: a line typed above an edited line pushes that line down, it stays edited.
        old_end = end - 1 if end_character == 0 else end
        trailing = 1 if newlines and text.endswith("\n") and end_character == 0 else 0
        touched_end = max(start, start + newlines - trailing)
        starts, ends = self.starts, self.ends
        first = bisect.bisect_left(ends, start)  # the first range that does not end before
        after = bisect.bisect_right(starts, old_end)  # the first range that starts after
        merged_start, merged_end = start, touched_end
        if first < after:
            merged_start = min(start, starts[first])
            last_end = ends[after - 1]
            merged_end = max(touched_end, last_end + delta if last_end > old_end else touched_end)
        if delta:
            starts[after:] = [value + delta for value in starts[after:]]
            ends[after:] = [value + delta for value in ends[after:]]
        starts[first:after] = [merged_start]
        ends[first:after] = [merged_end]
        # Join neighbours that now touch.
        if first + 1 < len(starts) and starts[first + 1] <= ends[first] + 1:
            ends[first] = max(ends[first], ends[first + 1])
            del starts[first + 1], ends[first + 1]
        if first > 0 and starts[first] <= ends[first - 1] + 1:
            ends[first - 1] = max(ends[first - 1], ends[first])
            del starts[first], ends[first]
        if len(starts) > 2 * MAX_RANGES:
            self._join_closest()

    def _join_closest(self) -> None:
        """Join the ranges closest together until at most MAX_RANGES are left: fewer, slightly
        wider ranges, still covering every line touched."""
        starts, ends = self.starts, self.ends
        excess = len(starts) - MAX_RANGES
        if excess <= 0:
            return
        gaps = sorted(range(len(starts) - 1), key=lambda i: starts[i + 1] - ends[i])
        joined = set(gaps[:excess])  # range i is joined to range i + 1
        kept_starts, kept_ends = [starts[0]], [ends[0]]
        for i in range(1, len(starts)):
            if i - 1 in joined:
                kept_ends[-1] = ends[i]
            else:
                kept_starts.append(starts[i])
                kept_ends.append(ends[i])
        self.starts, self.ends = kept_starts, kept_ends

    def clear(self) -> None:
        self.starts, self.ends = [], []
        self.whole = False

    def one_based(self) -> list[tuple[int, int]]:
        self._join_closest()
        return [(a + 1, b + 1) for a, b in zip(self.starts, self.ends, strict=True)]


@dataclass
class DocState:
    uri: str
    rel: str
    base_source: str
    disk_text: str | None
    edits: LineRanges = field(default_factory=LineRanges)
    unsaved: LineRanges = field(default_factory=LineRanges)
    dirty: bool = False
    first_change: float | None = None
    last_change: float | None = None
    timer: asyncio.TimerHandle | None = None
    cursor: types.Position = field(default_factory=lambda: types.Position(line=0, character=0))
    selection: types.Range | None = None
    # Set when the file changed on disk while the buffer had unsaved edits.
    conflict: drift.DriftItem | None = None


# The watchers' ignore rules live in the core (shared with checkpoints and the CLI).
Ignore = journal.Ignore


def git_signal(rel: str) -> bool:
    """Files inside .git/ whose change means HEAD or a branch may have moved."""
    return rel in (".git/HEAD", ".git/packed-refs") or rel.startswith(".git/refs/")


class Evolution(DocumentListener):
    def __init__(self, server: EngramServer) -> None:
        self.server = server
        self.docs: dict[str, DocState] = {}
        # One writer thread: records land in the order they happened, never on the event loop.
        self.writer = concurrent.futures.ThreadPoolExecutor(
            1, thread_name_prefix="engram-evolution"
        )
        self.pending_disk: dict[Path, dict[str, int]] = {}
        self.disk_timers: dict[Path, asyncio.TimerHandle] = {}
        self.cache: OrderedDict[tuple[Path, str], str] = OrderedDict()
        self.cache_lock = threading.Lock()
        self.cache_bytes = 0
        self.ignores: dict[Path, Ignore] = {}
        self.watches: dict[Path, journal.Watcher] = {}
        self.generation = 0
        self.initialized = False
        self.counters = {"editor": 0, "external": 0, "git": 0, "batches": 0}
        self._loop: asyncio.AbstractEventLoop | None = None

    # -- helpers ---------------------------------------------------------------------------

    def loop(self) -> asyncio.AbstractEventLoop:
        """The server's event loop (remembered, so threads can hand work back to it)."""
        try:
            self._loop = asyncio.get_running_loop()
        except RuntimeError:
            if self._loop is None:
                raise
        return self._loop

    def call_on_loop(self, fn: Callable[..., Any], *args: Any) -> None:
        """From any thread: run `fn(*args)` on the event loop."""
        if self._loop is not None and not self._loop.is_closed():
            self._loop.call_soon_threadsafe(fn, *args)

    def submit(self, fn: Callable[..., Any], *args: Any) -> concurrent.futures.Future[Any]:
        def guarded() -> Any:
            try:
                return fn(*args)
            except Exception:
                logger.exception("evolution: %s failed", getattr(fn, "__name__", fn))
                return None

        return self.writer.submit(guarded)

    def changed(self) -> None:
        """Something was recorded: ask the client to refresh lenses and diagnostics (on the loop)."""
        self.generation += 1
        self.server.refresh_diagnostics()
        if self.server.client_supports("workspace", "code_lens", "refresh_support"):
            try:
                self.server.workspace_code_lens_refresh(None)
            except Exception:
                logger.debug("code lens refresh failed", exc_info=True)

    def notify_changed(self) -> None:
        """Thread-safe `changed`."""
        self.call_on_loop(self.changed)

    def ignore_for(self, state: FolderState) -> Ignore:
        ignore = self.ignores.get(state.root)
        if ignore is None:
            ignore = self.ignores[state.root] = Ignore(
                state.root,
                list(state.settings["watch.exclude"]),
                list(state.settings["watch.editor_files"]),
            )
        return ignore

    def remember(self, root: Path, rel: str, text: str | None) -> None:
        with self.cache_lock:
            key = (root, rel)
            old = self.cache.pop(key, None)
            if old is not None:
                self.cache_bytes -= len(old)
            if text is None or len(text) > CACHE_MAX_BYTES:
                return
            self.cache[key] = text
            self.cache_bytes += len(text)
            while len(self.cache) > CACHE_FILES or self.cache_bytes > CACHE_TOTAL_BYTES:
                _, dropped = self.cache.popitem(last=False)
                self.cache_bytes -= len(dropped)

    def recalled(self, root: Path, rel: str) -> str | None:
        with self.cache_lock:
            return self.cache.get((root, rel))

    def rel_of(self, state: FolderState, uri: str) -> str | None:
        """The workspace-relative path of a document or file URI, if it is one to record."""
        fs_path = to_fs_path(uri)
        if not fs_path:
            return None
        try:
            rel = relative_path(state.root, fs_path)
        except UsageError:
            return None
        return rel if evolution.is_recordable(rel) else None

    # -- editor edits --------------------------------------------------------------------

    def did_open(self, server: EngramServer, state: FolderState, document: TextDocument) -> None:
        rel = self.rel_of(state, document.uri)
        if rel is None:
            return
        # What the client opened is what is on disk (the usual case); a later disk change is
        # compared with it.
        self.docs[document.uri] = DocState(
            uri=document.uri, rel=rel, base_source=document.source, disk_text=document.source
        )
        self.remember(state.root, rel, document.source)

    def did_change(
        self,
        server: EngramServer,
        state: FolderState,
        document: TextDocument,
        changes: list[types.TextDocumentContentChangeEvent],
    ) -> None:
        doc = self.docs.get(document.uri)
        if doc is None:
            return
        now = time.time()
        last_partial = None
        for change in changes:
            if isinstance(change, types.TextDocumentContentChangePartial):
                start, end = change.range.start.line, change.range.end.line
                doc.edits.edit(start, end, change.range.end.character, change.text)
                doc.unsaved.edit(start, end, change.range.end.character, change.text)
                last_partial = change
            else:
                doc.edits.whole = True
                doc.unsaved.whole = True
        if last_partial is not None:
            # Where the last edit left the cursor (once per message: a burst of edits arrives
            # merged into one, and only its last edit decides).
            text, start_at = last_partial.text, last_partial.range.start
            added = text.count("\n")
            doc.cursor = types.Position(
                line=start_at.line + added,
                character=(start_at.character if added == 0 else 0)
                + len(text)
                - (text.rfind("\n") + 1),
            )
        doc.dirty = True
        doc.last_change = now
        if doc.first_change is None:
            doc.first_change = now
        self.schedule_flush(doc, state)

    def schedule_flush(self, doc: DocState, state: FolderState) -> None:
        if doc.timer is not None:
            doc.timer.cancel()
        waited = time.time() - (doc.first_change or time.time())
        delay = 0.0 if waited >= EDIT_MAX_DELAY_SECONDS else EDIT_DEBOUNCE_SECONDS
        doc.timer = self.loop().call_later(delay, self.flush, doc.uri)

    def flush(self, uri: str) -> concurrent.futures.Future[Any] | None:
        """Hand the document's edits since the last flush to the writer thread."""
        doc = self.docs.get(uri)
        document = self.server.workspace.text_documents.get(uri)
        state = self.server.state_for_uri(uri)
        if doc is None or document is None or state is None:
            return None
        if doc.timer is not None:
            doc.timer.cancel()
            doc.timer = None
        if doc.first_change is None:
            return None
        before, after = doc.base_source, document.source
        lines = None if doc.edits.whole else doc.edits.one_based()
        ts = doc.last_change
        doc.base_source = after
        doc.edits.clear()
        doc.first_change = None
        return self.submit(self.record_edits, state.store, doc.rel, before, after, lines, ts)

    def record_edits(
        self,
        store: store_module.Store,
        rel: str,
        before: str,
        after: str,
        lines: list[tuple[int, int]] | None,
        ts: float | None,
    ) -> None:
        """On the writer thread: record a document's edits (line ranges past the end of the
        text as saved are clamped to its last line)."""
        clamped = None
        if lines is not None:
            last = max(1, after.count("\n") + (0 if after.endswith("\n") else 1))
            clamped = [(min(a, last), min(b, last)) for a, b in lines]
        row = evolution.record_change(
            store, rel, actor="editor", before=before, after=after, lines=clamped, now=ts
        )
        if row is not None:
            self.counters["editor"] += 1
            self.notify_changed()

    def did_save(self, server: EngramServer, state: FolderState, document: TextDocument) -> None:
        doc = self.docs.get(document.uri)
        if doc is None:
            return
        # Recorded first, so the record's hash is the saved content and the watcher's view of
        # the same write is recognised as the save.
        self.flush(document.uri)
        had_conflict = doc.conflict is not None
        doc.disk_text = document.source
        doc.dirty = False
        doc.unsaved.clear()
        doc.conflict = None
        self.remember(state.root, doc.rel, document.source)
        if had_conflict:
            self.changed()

    def did_close(self, server: EngramServer, state: FolderState, uri: str) -> None:
        self.flush(uri)
        doc = self.docs.pop(uri, None)
        if doc is not None and doc.timer is not None:
            doc.timer.cancel()

    # -- disk changes ----------------------------------------------------------------------

    def on_watched_files(
        self, server: EngramServer, state: FolderState, changes: list[types.FileEvent]
    ) -> None:
        items = []
        for change in changes:
            fs_path = to_fs_path(change.uri)
            if fs_path:
                items.append((fs_path, int(change.type)))
        self.enqueue_disk(state, items)

    def enqueue_disk(self, state: FolderState, items: list[tuple[str, int]]) -> None:
        """Collect disk changes for a moment so a burst becomes one batch (on the loop)."""
        pending = self.pending_disk.setdefault(state.root, {})
        ignore = self.ignore_for(state)
        for fs_path, kind in items:
            try:
                rel = relative_path(state.root, fs_path)
            except UsageError:
                continue
            if rel.split("/", 1)[0] == STORE_DIRNAME:
                continue
            if rel.startswith(".git/") or rel == ".git":
                if git_signal(rel):
                    pending.setdefault(".git/HEAD", kind)
                continue
            if rel == ".gitignore" or rel.endswith("/.gitignore"):
                self.ignores.pop(state.root, None)  # read again for the next batch
            if ignore.ignored(rel):
                continue
            pending[rel] = kind
        if not pending:
            return
        if state.root not in self.disk_timers:
            self.disk_timers[state.root] = self.loop().call_later(
                DISK_DEBOUNCE_SECONDS, self.flush_disk, state.root
            )

    def flush_disk(self, root: Path) -> concurrent.futures.Future[Any] | None:
        self.disk_timers.pop(root, None)
        pending = self.pending_disk.pop(root, {})
        state = self.server.folders.get(root)
        if state is None or not pending:
            return None
        open_docs = {}
        for doc in self.docs.values():
            if self.server.state_for_uri(doc.uri) is not state:
                continue
            document = self.server.workspace.text_documents.get(doc.uri)
            # Dirty means "differs from what is on disk", not "was edited": an editor reloading a
            # file from disk edits the buffer back to the disk's content (one memcmp to tell).
            dirty = document is not None and document.source != doc.disk_text
            if not dirty:
                doc.unsaved.clear()
            doc.dirty = dirty
            open_docs[doc.rel] = (doc.uri, doc.disk_text, dirty, doc.unsaved.one_based())
        return self.submit(self.record_disk, state, pending, open_docs)

    def record_disk(
        self,
        state: FolderState,
        pending: dict[str, int],
        open_docs: dict[str, tuple[str, str | None, bool, list[tuple[int, int]]]],
    ) -> None:
        """On the writer thread: record a burst of disk changes, then look for unsaved conflicts."""
        root = state.root
        changes: list[evolution.Change] = []
        contents: dict[str, str | None] = {}
        for rel, kind in pending.items():
            if not evolution.is_recordable(rel):
                continue
            try:
                data: bytes | None = (root / rel).read_bytes()
            except (FileNotFoundError, NotADirectoryError):
                data = None
            except OSError:
                continue
            text = data.decode("utf-8", errors="replace") if data is not None else None
            contents[rel] = text
            before = open_docs[rel][1] if rel in open_docs else self.recalled(root, rel)
            change_kind = (
                "deleted" if data is None else ("created" if kind == 1 and before is None else None)
            )
            changes.append(
                evolution.Change(
                    path=rel,
                    actor="external",
                    before=before,
                    after=data,
                    change=change_kind,
                )
            )
        result = evolution.record_batch(state.store, changes)
        self.counters["batches"] += 1
        self.counters["external"] += len(result.recorded)
        if result.git_event is not None:
            self.counters["git"] += 1
        for rel, text in contents.items():
            self.remember(root, rel, text)
        recorded = {row["path"]: row for row in result.recorded}
        conflicts: dict[str, tuple[drift.DriftItem | None, str | None, str | None]] = {}
        for rel, (uri, disk_text, dirty, unsaved) in open_docs.items():
            if rel not in contents:
                continue
            text = contents[rel]
            if text == disk_text:
                continue
            if dirty:
                row = recorded.get(rel)
                lines = [(r[0], r[1]) for r in row["lines"]] if row and row["lines"] else None
                item = drift.unsaved_conflict(
                    rel, disk_lines=lines, unsaved_lines=unsaved, deleted=text is None
                )
                conflicts[uri] = (item, text, None)
            else:
                conflicts[uri] = (None, None, text)
        if conflicts:
            self.call_on_loop(self.apply_conflicts, conflicts)
        if result.recorded or result.git_event or conflicts:
            self.notify_changed()

    def apply_conflicts(
        self, conflicts: dict[str, tuple[drift.DriftItem | None, str | None, str | None]]
    ) -> None:
        for uri, (item, conflict_text, new_disk_text) in conflicts.items():
            doc = self.docs.get(uri)
            if doc is None:
                continue
            document = self.server.workspace.text_documents.get(uri)
            if item is not None and document is not None and document.source == conflict_text:
                item = None  # the buffer already holds what is on disk now
                new_disk_text = conflict_text
            if item is not None:
                doc.conflict = item
            elif new_disk_text is not None:
                # A clean buffer: the editor reloads it; what is on disk is known again.
                doc.disk_text = new_disk_text
                doc.base_source = new_disk_text
                doc.conflict = None

    # -- the server's own watcher ----------------------------------------------------------

    def start_watcher(self, state: FolderState) -> journal.Watcher:
        """The server's own watcher (in the core): it always runs, whether or not the client
        watches too, because its journal is what lets a checkpoint look only at changed files.
        Its events are recorded as file evolution only when the client does not report them."""
        existing = self.watches.get(state.root)
        if existing is not None and existing.alive:
            return existing

        def on_events(items: list[tuple[str, int]]) -> None:
            self.watcher_events(state, watcher, items)

        watcher = journal.Watcher(
            state.root,
            on_events=on_events,
            on_error=lambda error: self.watcher_failed(state, error),
        )
        self.watches[state.root] = watcher
        return watcher.start()

    def watcher_events(
        self, state: FolderState, watcher: journal.Watcher, items: list[tuple[str, int]]
    ) -> None:
        """From the server's watcher: disk changes, recorded when the client reports none."""
        if self.server.folders.get(state.root) is not state:
            watcher.stop()  # the folder was closed
            return
        if not self.server.client_watches_files:
            self.call_on_loop(self.enqueue_disk, state, items)

    def watcher_failed(self, state: FolderState, error: str) -> None:
        logger.error("the file watcher for %s stopped: %s", state.root, error)
        # Typically the inotify watch limit (fs.inotify.max_user_watches) on a huge tree.
        self.call_on_loop(
            self.server.show_message,
            f"engram: cannot watch {state.root} for changes on disk ({error}); "
            "edits made outside the editor are not recorded",
            types.MessageType.Warning,
        )

    def journal_for(self, state: FolderState) -> journal.ChangeJournal | None:
        """The server watcher's journal of a folder (None until its watches are in place)."""
        watcher = self.watches.get(state.root)
        return watcher.journal if watcher is not None else None

    def stop_watchers(self) -> None:
        for watch in self.watches.values():
            watch.stop()

    # -- folders ---------------------------------------------------------------------------

    def folder_ready(self, server: EngramServer, state: FolderState) -> None:
        self.loop()
        self.ignores.pop(state.root, None)
        # HEAD may have moved while no engram process was looking.
        self.submit(self.observe_git, state)
        if self.initialized:
            self.start_watcher(state)

    def observe_git(self, state: FolderState) -> None:
        if evolution.observe_git(state.store) is not None:
            self.counters["git"] += 1
            self.notify_changed()

    async def after_initialized(self, server: EngramServer) -> None:
        self.loop()
        self.initialized = True
        for state in list(server.folders.values()):
            self.start_watcher(state)

    # -- renames and deletes made in the editor ----------------------------------------------

    def renamed(self, server: EngramServer, files: list[types.FileRename]) -> None:
        for item in files:
            state = server.state_for_uri(item.new_uri)
            old_state = server.state_for_uri(item.old_uri)
            if state is None:
                continue
            new_rel, old_rel = self.rel_of(state, item.new_uri), None
            if old_state is state:
                old_rel = self.rel_of(state, item.old_uri)
            if new_rel is None:
                continue
            self.submit(self.record_rename, state, new_rel, old_rel)

    def record_rename(self, state: FolderState, new_rel: str, old_rel: str | None) -> None:
        if (state.root / new_rel).is_dir():
            return
        row = evolution.record_change(
            state.store,
            new_rel,
            actor="editor",
            change="renamed" if old_rel else None,
            old_path=old_rel,
        )
        if row is not None:
            self.remember(
                state.root, new_rel, self.recalled(state.root, old_rel) if old_rel else None
            )
            self.notify_changed()

    def deleted(self, server: EngramServer, files: list[types.FileDelete]) -> None:
        for item in files:
            state = server.state_for_uri(item.uri)
            rel = self.rel_of(state, item.uri) if state else None
            if state is None or rel is None:
                continue
            self.submit(self.record_delete, state.store, rel)

    def record_delete(self, store: store_module.Store, rel: str) -> None:
        if evolution.record_change(store, rel, actor="editor", change="deleted") is not None:
            self.notify_changed()

    # -- the code lens -----------------------------------------------------------------------

    def code_lens(
        self, server: EngramServer, state: FolderState, document: TextDocument
    ) -> list[types.CodeLens]:
        doc = self.docs.get(document.uri)
        rel = doc.rel if doc else self.rel_of(state, document.uri)
        if rel is None:
            return []
        facts = evolution.activity(state.store, rel)
        if facts is None:
            return []
        edits = facts["edits_today"]
        who = _LENS_ACTORS.get(str(facts["last_actor"]), str(facts["last_actor"]))
        title = f"{edits} edit{'s' if edits != 1 else ''} today · last by {who} {facts['last_ago']}"
        return [
            types.CodeLens(
                range=types.Range(
                    start=types.Position(line=0, character=0),
                    end=types.Position(line=0, character=0),
                ),
                command=types.Command(
                    title=title,
                    command="engram.evolution.history",
                    arguments=[{"uri": document.uri}],
                ),
            )
        ]


def show_view(server: EngramServer, state: FolderState, name: str, text: str) -> str | None:
    """Write a generated view into .engram/exports/views/ and ask the client to show it."""
    safe = safe_filename(name)
    path = state.root / STORE_DIRNAME / "exports" / "views" / safe
    store_module.write_private_file(path, text)
    uri: str | None = from_fs_path(str(path))
    if uri and server.client_supports("window", "show_document", "support"):
        server.window_show_document(types.ShowDocumentParams(uri=uri, take_focus=True))
    return uri


# The code lens names the last actor in words, as the timeline does.
_LENS_ACTORS = {"editor": "you", "agent": "the agent", "external": "another program", "git": "git"}


def history_markdown(rel: str, rows: list[dict[str, Any]]) -> str:
    lines = [f"# History of {rel}", "", f"{len(rows)} recorded change(s), newest first.", ""]
    lines += ["| when | change | by | lines | hash after |", "| --- | --- | --- | --- | --- |"]
    for row in rows:
        who = row["actor"] + (f" ({row['session_id']})" if row["session_id"] else "")
        spans = (
            ", ".join(f"{a}-{b}" if a != b else str(a) for a, b in (row["lines"] or [])[:8]) or "-"
        )
        moved = f" from {row['old_path']}" if row["old_path"] else ""
        lines.append(
            f"| {row['timestamp']} ({clock.ago(row['ts'])}) | {row['change']}{moved} | {who} | {spans} | "
            f"{(row['hash_after'] or '-')[:12]} |"
        )
    return "\n".join(lines) + "\n"


def get_feature(server: EngramServer) -> Evolution:
    feature: Evolution = getattr(server, "_engram_evolution")  # noqa: B009 - set by register
    return feature


def cursor_tracker(
    ls: EngramServer, state: FolderState, document: TextDocument, params: types.CodeActionParams
) -> list[types.CodeAction]:
    """A code-action provider that offers nothing: editors ask for code actions at the cursor
    or selection as it moves, the best knowledge of where the user is that a language server
    gets (used by snapshots)."""
    doc = get_feature(ls).docs.get(document.uri)
    if doc is not None:
        doc.selection = params.range
        doc.cursor = params.range.end
    return []


def did_rename_files(ls: EngramServer, params: types.RenameFilesParams) -> None:
    get_feature(ls).renamed(ls, list(params.files))


def did_delete_files(ls: EngramServer, params: types.DeleteFilesParams) -> None:
    get_feature(ls).deleted(ls, list(params.files))


def target(ls: EngramServer, args: dict[str, Any]) -> tuple[FolderState, str]:
    """The folder and workspace-relative path of a command's `uri` or `path` (a relative path
    is taken in the command's folder)."""
    value = args.get("uri") or args.get("path")
    if not isinstance(value, str) or not value:
        raise UsageError("give the file as `uri` or `path`")
    if "://" not in value and not os.path.isabs(value):
        state = ls.state_for_command(args)
        value = str(state.root / value)
    path = Path(to_fs_path(value) or value) if "://" in value else Path(value)
    found = ls.state_for_path(path)
    if found is None:
        raise UsageError(f"{value!r} is not in any workspace folder engram serves")
    return found, relative_path(found.root, path)


def history(ls: EngramServer, args: dict[str, Any]) -> dict[str, Any]:
    """`engram.evolution.history {uri|path, limit?, show?}`: a file's recorded changes."""
    state, rel = target(ls, args)
    limit = args.get("limit", 100)
    if not isinstance(limit, int) or limit < 1:
        raise UsageError(f"limit must be a whole number of at least 1, got {limit!r}")
    rows = evolution.history(state.store, rel, limit=limit)
    shown = None
    if args.get("show", True):
        shown = show_view(ls, state, f"history-{rel}.md", history_markdown(rel, rows))
    return {"path": rel, "history": rows, "view": shown}


def active(ls: EngramServer, args: dict[str, Any]) -> dict[str, Any]:
    state = ls.state_for_command(args)
    return {"files": evolution.most_active(state.store)}


def status(ls: EngramServer, args: dict[str, Any]) -> dict[str, Any]:
    state = ls.state_for_command(args)
    feature = get_feature(ls)
    watch = feature.watches.get(state.root)
    mode = "client" if ls.client_watches_files else ("server" if watch else "off")
    journal_ = watch.journal if watch else None
    return {
        "watching": mode,
        "ready": bool(
            ls.client_watches_files or (watch and watch.ready.is_set() and not watch.error)
        ),
        "watcher_start_seconds": watch.started_in if watch else None,
        "error": watch.error if watch else None,
        # The server's own watcher runs either way; checkpoints trust its journal.
        "server_watcher": bool(watch and watch.alive),
        "journal_epoch": journal_.epoch if journal_ and journal_.alive else None,
        "recorded": dict(feature.counters),
    }


def flush_pending(feature: Evolution) -> list[concurrent.futures.Future[Any]]:
    """On the loop: hand every document's pending edits and every folder's pending disk
    changes to the writer now."""
    futures: list[concurrent.futures.Future[Any]] = []
    for uri in list(feature.docs):
        future = feature.flush(uri)
        if future is not None:
            futures.append(future)
    for root in list(feature.pending_disk):
        timer = feature.disk_timers.pop(root, None)
        if timer is not None:
            timer.cancel()
        future = feature.flush_disk(root)
        if future is not None:
            futures.append(future)
    return futures


def flush_all(ls: EngramServer, args: dict[str, Any]) -> dict[str, Any]:
    """Record pending edits now and wait for the writer (tests, and before a snapshot)."""
    feature = get_feature(ls)
    futures: list[concurrent.futures.Future[Any]] = []
    event = threading.Event()

    def on_loop() -> None:
        futures.extend(flush_pending(feature))
        event.set()

    feature.call_on_loop(on_loop)
    event.wait(10)
    feature.writer.submit(lambda: None).result(timeout=30)
    return {"flushed": len(futures)}


_ALL_FILES = types.FileOperationRegistrationOptions(
    filters=[types.FileOperationFilter(pattern=types.FileOperationPattern(glob="**/*"))]
)


def register(server: EngramServer) -> None:
    feature = Evolution(server)
    server._engram_evolution = feature  # type: ignore[attr-defined]
    server.document_listeners.append(feature)
    server.watched_files_listeners.append(feature.on_watched_files)
    server.folder_ready_listeners.append(feature.folder_ready)
    server.initialized_listeners.append(feature.after_initialized)
    server.code_lens_providers.append(feature.code_lens)
    server.code_action_providers.append(cursor_tracker)
    server.feature(types.WORKSPACE_DID_RENAME_FILES, _ALL_FILES)(did_rename_files)
    server.feature(types.WORKSPACE_DID_DELETE_FILES, _ALL_FILES)(did_delete_files)
    engram_command(server, "engram.evolution.history")(history)
    engram_command(server, "engram.evolution.active")(active)
    engram_command(server, "engram.evolution.status")(status)
    engram_command(server, "engram.evolution.flush")(flush_all)
