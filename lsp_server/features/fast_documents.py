"""Open documents that apply an incremental edit in O(size of the edit), not O(file).

pygls' `TextDocument` re-splits the whole text into lines and rewrites every line for each
incremental change (about 0.7 ms per keystroke at 5,000 lines), and re-splits again on every
`lines` access. A burst of edits then queues requests (hover) behind it. `FastTextDocument`
keeps the text as a list of lines: an edit re-splits only the lines it touches and replaces
that slice of the list (a C-level memmove); `source` is joined lazily, once per read after a
change. The results are the same as pygls' (same position codec, same line splitting); the
tests compare both on random edits.

Installed on the workspace during `initialize` (pygls creates the workspace just before).
"""

from __future__ import annotations

import logging
from functools import partial
from typing import Any

from lsprotocol import types
from pygls.workspace import TextDocument, Workspace

from lsp_server.server import EngramServer

logger = logging.getLogger("engram.lsp")

_LINE_BREAKS = ("\n", "\r", "\x0b", "\x0c", "\x1c", "\x1d", "\x1e", "\x85", "\u2028", "\u2029")


class FastTextDocument(TextDocument):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._line_list: list[str] | None = None

    @property
    def source(self) -> str:
        if self._source is None and self._line_list is not None:
            self._source = "".join(self._line_list)
        if self._source is None:
            return str(super().source)  # not opened with text: pygls reads the file
        return str(self._source)

    @property
    def lines(self) -> tuple[str, ...]:
        return tuple(self._lines())

    def _lines(self) -> list[str]:
        if self._line_list is None:
            self._line_list = self.source.splitlines(True)
        return self._line_list

    def _apply_full_change(self, change: types.TextDocumentContentChangeEvent) -> None:
        self._source = change.text
        self._line_list = None

    def _apply_incremental_change(self, change: types.TextDocumentContentChangePartial) -> None:
        lines = self._lines()
        text = change.text
        start = _ascii_position(lines, change.range.start)
        end = _ascii_position(lines, change.range.end)
        if start is None or end is None:
            span = self._position_codec.range_from_client_units(lines, change.range)
            start = (span.start.line, span.start.character)
            end = (span.end.line, span.end.character)
        start_line, start_col = start
        end_line, end_col = end
        if start_line == len(lines):
            # The same special case as pygls: an edit at the very end of the file.
            self._source = self.source + text
            self._line_list = None
            return
        if end_line < start_line:
            return  # an inverted range: pygls leaves the text as it is, and so do we
        middle = lines[start_line][:start_col] + text + lines[end_line][end_col:]
        low, high = start_line, end_line + 1
        # Re-split across the seams exactly as splitting the whole text would: a line that no
        # longer ends in a break joins the next one, and "\r" + "\n" across a seam is one break.
        while high < len(lines) and (
            not middle.endswith(_LINE_BREAKS)
            or (middle.endswith("\r") and lines[high].startswith("\n"))
        ):
            middle += lines[high]
            high += 1
        if low > 0 and lines[low - 1].endswith("\r") and middle.startswith("\n"):
            low -= 1
            middle = lines[low] + middle
        lines[low:high] = middle.splitlines(True)
        self._source = None


def _ascii_position(lines: list[str], position: types.Position) -> tuple[int, int] | None:
    """pygls' `position_from_client_units` for a position on an ASCII line, without its loop
    over every character of the line (about 0.1 ms a keystroke, a third of the cost of a flood
    of edits): on ASCII text UTF-8, UTF-16 and UTF-32 units are all characters. None when the
    line is not ASCII (the codec then does the work). Same results, quirks included."""
    if not lines:
        return (0, 0)
    if position.line >= len(lines):
        last = lines[-1]
        return (len(lines) - 1, len(last)) if last.isascii() else None
    line = lines[position.line]
    if not line.isascii():
        return None
    length = len(line) - (1 if line.endswith("\r\n") else 0)
    if length == 0:
        return (position.line, 0)
    character = position.character
    if character > length:
        character = length - 1  # pygls clamps one short of the end; so do we
    return (position.line, character)


def _create_document(
    workspace: Workspace,
    doc_uri: str,
    source: str | None = None,
    version: int | None = None,
    language_id: str | None = None,
) -> TextDocument:
    """The workspace's `_create_text_document`, making a `FastTextDocument` with the sync kind
    and position encoding the workspace was made with."""
    return FastTextDocument(
        doc_uri,
        source=source,
        version=version,
        language_id=language_id,
        sync_kind=workspace._sync_kind,
        position_codec=workspace._position_codec,
    )


def install(server: EngramServer) -> None:
    """Make the server's workspace create `FastTextDocument`s for the documents opened from now."""
    workspace = server.workspace
    workspace._create_text_document = partial(_create_document, workspace)  # type: ignore[method-assign]


def _install_at_initialize(ls: EngramServer, params: types.InitializeParams) -> None:
    try:
        install(ls)
    except Exception:
        # pygls changed its workspace internals: fall back to its own documents.
        logger.exception("fast documents not installed; using pygls' TextDocument")


def register(server: EngramServer) -> None:
    # At `initialize` (pygls creates the workspace just before the handler), not `initialized`:
    # that handler first waits for the client's settings, and a client opens documents
    # meanwhile, which then stayed pygls' slow documents for the whole session.
    server.initialize_listeners.insert(0, _install_at_initialize)
