"""The first gotcha squiggles sent by the stdio front while the server loads (lsp_server/early.py).

The real server over stdio, its load held on a gate file (lsp_server/front.py
TEST_LOAD_GATE_ENV): whatever arrives before the gate opens came from the front. Without
timing: the order of the server's output says what came before the loaded server's first
message of its own (its `workspace/configuration` request).
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from pygls.workspace import PositionCodec, TextDocument

from lsp_server import early, front, gotcha_format
from lsp_server.features import gotchas as lsp_gotchas
from lsp_server.server import EngramServer, FolderState
from memory_core import gotchas
from memory_core.store import Store
from tests.lsp.conftest import make_project
from tests.lsp.raw_client import RawServer

# 'x = "😀"; ' is 9 characters, 10 UTF-16 units, 12 UTF-8 bytes: the column says which counted.
SOURCE = 'x = "😀"; eval(y)\nvalue = 1\n'
PULLS = {
    "textDocument": {"diagnostic": {}},
    "workspace": {"diagnostics": {"refreshSupport": True}, "configuration": True},
}


def _until(predicate: Any, what: str, timeout: float = 30.0) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = predicate()
        if found:
            return found
        time.sleep(0.005)
    raise AssertionError(f"timed out waiting for {what}")


def _project(tmp_path: Path) -> tuple[Path, str, str]:
    folder = make_project(tmp_path / "ws")
    with Store.init(folder) as store:
        gotcha = gotchas.add(store, "eval is unsafe", pattern="eval(", pattern_kind="literal")
    (folder / "app.py").write_text(SOURCE, encoding="utf-8")
    return folder, (folder / "app.py").as_uri(), gotcha.id


def _start(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, folder: Path, *, enabled: bool = True
) -> tuple[RawServer, Path]:
    gate = tmp_path / "load-now"
    monkeypatch.setenv(front.TEST_LOAD_GATE_ENV, str(gate))
    monkeypatch.setenv(early.ENABLE_ENV, "1" if enabled else "0")
    return RawServer(folder, tmp_path / "server.log"), gate


def _open(raw: RawServer, uri: str, capabilities: dict[str, Any]) -> None:
    root = raw.folder.as_uri()
    params = {
        "processId": None,
        "rootUri": root,
        "capabilities": capabilities,
        "workspaceFolders": [{"uri": root, "name": "ws"}],
    }
    raw.request_async("initialize", params)
    raw.notify("initialized", {})
    document = {"uri": uri, "languageId": "python", "version": 3, "text": SOURCE}
    raw.notify("textDocument/didOpen", {"textDocument": document})


def _publishes(raw: RawServer, uri: str) -> list[dict[str, Any]]:
    return [
        m["params"]
        for m in list(raw.received)
        if m.get("method") == "textDocument/publishDiagnostics" and m["params"]["uri"] == uri
    ]


def _first_server_request(raw: RawServer) -> int:
    """Where in the output the loaded server's first message of its own came."""
    methods = [m.get("method") for m in list(raw.received)]
    return methods.index("workspace/configuration")


def test_a_push_client_gets_the_squiggle_before_the_server_has_loaded_and_the_same_after(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder, uri, gotcha_id = _project(tmp_path)
    raw, gate = _start(tmp_path, monkeypatch, folder)
    try:
        # UTF-8 columns (bytes): the column shows the negotiated encoding was used.
        _open(raw, uri, {"general": {"positionEncodings": ["utf-8", "utf-16"]}})
        first = _until(lambda: _publishes(raw, uri), "the early squiggle")[0]
        assert not gate.exists()  # the server is still held: this came from the front
        assert first["version"] == 3
        [squiggle] = first["diagnostics"]
        assert squiggle["code"] == gotcha_id and squiggle["message"] == "eval is unsafe"
        assert squiggle["range"]["start"] == {"line": 0, "character": 12}
        gate.touch()
        _until(lambda: len(_publishes(raw, uri)) >= 2, "the server's own push")
        # The server's push replaces the early one with the same squiggle, and there was no
        # empty push in between (the index built early was handed over).
        assert _publishes(raw, uri)[1] == first
        assert all(p["diagnostics"] for p in _publishes(raw, uri))
        assert "Traceback" not in raw.log_text()
    finally:
        gate.touch()
        raw.close()


def test_without_the_early_path_the_squiggle_waits_for_the_server(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The negative control: the first push comes after the loaded server's first request."""
    folder, uri, _ = _project(tmp_path)
    raw, gate = _start(tmp_path, monkeypatch, folder, enabled=False)
    try:
        _open(raw, uri, {"workspace": {"configuration": True}})
        gate.touch()
        _until(lambda: _publishes(raw, uri), "the server's push")
        methods = [m.get("method") for m in list(raw.received)]
        assert methods.index("textDocument/publishDiagnostics") > _first_server_request(raw)
    finally:
        gate.touch()
        raw.close()


def test_a_pull_client_gets_its_pull_answered_early_then_the_complete_set_after_a_refresh(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder, uri, gotcha_id = _project(tmp_path)
    raw, gate = _start(tmp_path, monkeypatch, folder)
    try:
        _open(raw, uri, PULLS)
        pulled = raw.request_async("textDocument/diagnostic", {"textDocument": {"uri": uri}})
        early_answer = raw.wait(pulled)
        assert not gate.exists()
        [squiggle] = early_answer["result"]["items"]
        assert early_answer["result"]["kind"] == "full" and squiggle["code"] == gotcha_id
        assert not _publishes(raw, uri)  # a pull client is never pushed to
        # A gotcha added while the server loads: the early answer no longer is the whole set.
        with Store.open(folder) as store:
            added = gotchas.add(store, "value is global", pattern="value =", pattern_kind="literal")
        gate.touch()
        _until(
            lambda: any(m.get("method") == "workspace/diagnostic/refresh" for m in raw.received),
            "the server asking for a new pull",
        )
        again = raw.request("textDocument/diagnostic", {"textDocument": {"uri": uri}})
        assert {item["code"] for item in again["result"]["items"]} == {gotcha_id, added.id}
        assert squiggle in again["result"]["items"]  # the same diagnostic, early or not
        # The pull the front answered was answered once.
        assert [m.get("id") for m in raw.received].count(pulled) == 1
        assert not _publishes(raw, uri)
    finally:
        gate.touch()
        raw.close()


def test_malformed_opens_are_skipped_and_the_next_good_one_still_gets_its_squiggle(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder, uri, gotcha_id = _project(tmp_path)
    raw, gate = _start(tmp_path, monkeypatch, folder)
    try:
        root = folder.as_uri()
        raw.request_async("initialize", {"processId": None, "rootUri": root, "capabilities": {}})
        raw.notify("textDocument/didOpen", {"textDocument": {"uri": uri, "version": 4}})
        raw.notify("textDocument/didOpen", {"textDocument": "nonsense"})
        other = {"uri": "untitled:1", "languageId": "python", "version": 1, "text": SOURCE}
        raw.notify("textDocument/didOpen", {"textDocument": other})
        raw.send_bytes(raw.frame(b'{"jsonrpc": "2.0", "method": "textDocument/didOp'))
        document = {"uri": uri, "languageId": "python", "version": 5, "text": SOURCE}
        raw.notify("textDocument/didOpen", {"textDocument": document})
        first = _until(lambda: _publishes(raw, uri), "the early squiggle")[0]
        assert not gate.exists()
        assert first["version"] == 5 and first["diagnostics"][0]["code"] == gotcha_id
        gate.touch()
        hover = raw.request(
            "textDocument/hover",
            {"textDocument": {"uri": uri}, "position": {"line": 0, "character": 11}},
        )
        assert f"`{gotcha_id}`" in hover["result"]["contents"]["value"]
    finally:
        gate.touch()
        raw.close()


def test_a_store_the_front_cannot_read_leaves_the_diagnostics_to_the_server(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder, uri, _ = _project(tmp_path)
    for suffix in ("-wal", "-shm"):
        (folder / ".engram" / f"engram.db{suffix}").unlink(missing_ok=True)
    (folder / ".engram" / "engram.db").write_bytes(b"this is no SQLite database" * 100)
    raw, gate = _start(tmp_path, monkeypatch, folder)
    try:
        _open(raw, uri, {})
        hover = raw.request_async(
            "textDocument/hover",
            {"textDocument": {"uri": uri}, "position": {"line": 0, "character": 0}},
        )
        gate.touch()
        assert "error" not in raw.wait(hover)
        assert "early diagnostics failed" in raw.log_text()
        assert not any(p["diagnostics"] for p in _publishes(raw, uri))
        assert raw.request("shutdown", None, timeout=10)["result"] is None
        raw.notify("exit", None)
        assert raw.proc.wait(timeout=10) == 0
    finally:
        gate.touch()
        raw.close()


@pytest.mark.parametrize("encoding", ["utf-16", "utf-8", "utf-32"])
def test_the_front_and_the_server_make_the_same_diagnostics(
    server: EngramServer, state: FolderState, encoding: str
) -> None:
    """In process, pattern hits after characters of 2 and 4 bytes and a gotcha comment, in
    each position encoding: the front's JSON is the server's, serialised."""
    gotchas.add(state.store, "eval is unsafe", pattern="eval(", pattern_kind="literal")
    source = 'x = "😀"; eval(y)  # gotcha(high): 𝒳 never retried\r\neval(z)\n'
    uri = "file://" + str(state.root / "a.py")
    document = TextDocument(uri, source, version=2, position_codec=PositionCodec(encoding))
    folder = lsp_gotchas.folder_of(state)
    index = folder.rebuild()
    made = lsp_gotchas.diagnostics(server, state, document)
    expected = [server.protocol._converter.unstructure(d) for d in made]
    early_made = gotcha_format.document_diagnostics(
        index, "a.py", gotcha_format.split_lines(source), encoding, 100
    )
    assert {d["data"]["kind"] for d in expected} == {"pattern", "annotation"}
    assert early_made == expected


def test_the_early_squiggle_is_made_without_pygls_or_lsprotocol(tmp_path: Path) -> None:
    """What makes it early: the store, the index and the formatting are memory_core's."""
    folder, uri, gotcha_id = _project(tmp_path)
    code = (
        "import json, sys\n"
        "from lsp_server.early import EarlyDiagnostics\n"
        "sent = []\n"
        f"params = {{'rootUri': {folder.as_uri()!r}}}\n"
        "result = {'capabilities': {'positionEncoding': 'utf-16'}}\n"
        "early = EarlyDiagnostics(params, result, sent.append)\n"
        f"document = {{'uri': {uri!r}, 'version': 1, 'text': {SOURCE!r}}}\n"
        "message = {'method': 'textDocument/didOpen', 'params': {'textDocument': document}}\n"
        "early.handle(json.dumps(message).encode())\n"
        "print(sent[0]['params']['diagnostics'][0]['code'])\n"
        "print(sorted({m.split('.')[0] for m in sys.modules} & "
        "{'pygls', 'lsprotocol', 'attrs', 'attr', 'cattrs', 'asyncio'}))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True
    )
    assert done.stdout.split("\n")[:2] == [gotcha_id, "[]"]


def test_a_folder_without_a_database_yet_is_no_failure(tmp_path: Path) -> None:
    """`.engram/` holding only settings (written before the first store): nothing to show,
    nothing logged as a failure, and the early path stays on for the other folders."""
    folder = make_project(tmp_path / "new")
    (folder / ".engram").mkdir()
    (folder / ".engram" / "config.toml").write_text("[gotchas]\nthreshold = 3\n")
    sent: list[dict[str, Any]] = []
    watcher = early.EarlyDiagnostics(
        {"rootUri": folder.as_uri()}, {"capabilities": {"positionEncoding": "utf-16"}}, sent.append
    )
    document = {"uri": (folder / "a.py").as_uri(), "version": 1, "text": SOURCE}
    watcher.handle(
        json.dumps(
            {"method": "textDocument/didOpen", "params": {"textDocument": document}}
        ).encode()
    )
    assert watcher.active and not sent and not (folder / ".engram" / "engram.db").exists()
