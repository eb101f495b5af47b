"""A gotcha's squiggle lands on the right line whatever the file's line ends: the protocol
counts `\n`, `\r\n` and a lone `\r` (old Mac files, some generated ones) as line ends, and a
client numbers lines that way, so the server must too."""

from __future__ import annotations

from pygls.uris import from_fs_path
from pygls.workspace import TextDocument

from lsp_server.features import gotchas as lsp_gotchas
from lsp_server.server import EngramServer, FolderState
from memory_core import gotchas


def _squiggles(
    server: EngramServer, state: FolderState, rel: str, source: str
) -> list[tuple[int, int, int, int]]:
    path = state.root / rel
    path.write_text(source, encoding="utf-8", newline="")
    uri = from_fs_path(str(path))
    assert uri is not None
    lsp_gotchas.folder_of(state).rebuild()
    found = lsp_gotchas.diagnostics(server, state, TextDocument(uri, source, version=1))
    spans = []
    for diagnostic in found:
        r = diagnostic.range
        spans.append((r.start.line, r.start.character, r.end.line, r.end.character))
    return sorted(spans)


def test_a_lone_carriage_return_ends_a_line_like_a_newline(
    server: EngramServer, state: FolderState
) -> None:
    gotchas.add(state.store, "debug flag left on", pattern=r"^DEBUG = True$", pattern_kind="regex")
    expected = [(1, 0, 1, 12)]
    assert _squiggles(server, state, "lf.py", "import os\nDEBUG = True\nX = 1\n") == expected
    assert _squiggles(server, state, "cr.py", "import os\rDEBUG = True\rX = 1\r") == expected
    # Mixed line ends, as a file edited on two systems has: line 3 after \r\n, \r and \n.
    mixed = "import os\r\nX = 1\rY = 2\nDEBUG = True\r\n"
    assert _squiggles(server, state, "mixed.py", mixed) == [(3, 0, 3, 12)]


def test_lines_split_on_the_three_protocol_line_ends_only() -> None:
    assert lsp_gotchas.split_lines("a\rb\r\nc\nd") == ["a", "b", "c", "d"]
    assert lsp_gotchas.split_lines("a\r\r\nb") == ["a", "", "b"]
    # Form feed and the Unicode line separator are characters of a line to an LSP client.
    assert lsp_gotchas.split_lines("a\x0cb\u2028c\r") == ["a\x0cb\u2028c", ""]
