"""The stdio front's first gotcha squiggles (lsp_server/early.py), frame by frame, in process.

`EarlyDiagnostics` is fed the frames a client sends while the server loads, as the front feeds
them, and what it would write to the client is collected: a push client gets
`publishDiagnostics` for the documents it opens (cleared when it closes them), a pull client gets
its `textDocument/diagnostic` answered while the answer is still for the text it has, and
anything odd is left to the server. test_early_diagnostics.py shows the same through the real
front over stdio.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

import pytest

from lsp_server import gotcha_format
from lsp_server.early import EarlyDiagnostics, fs_path
from memory_core import gotchas
from memory_core.store import Store
from tests.lsp.conftest import make_project

# 'x = "😀"; ' is 9 characters, 10 UTF-16 units, 12 UTF-8 bytes: the column says which counted.
SOURCE = 'x = "😀"; eval(y)\nvalue = 1\n'
PUSH = {"capabilities": {"positionEncoding": "utf-16"}}
PULL = {"capabilities": {"positionEncoding": "utf-16", "diagnosticProvider": {}}}


def _with_gotcha(folder: Path, title: str = "eval is unsafe", pattern: str = "eval(") -> str:
    with Store.open_or_init(folder) as store:
        return gotchas.add(store, title, pattern=pattern, pattern_kind="literal").id


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    folder = make_project(tmp_path_factory.mktemp("early") / "ws")
    return folder, _with_gotcha(folder)


def _watcher(folder: Path, result: dict[str, Any] = PUSH, **params: Any) -> EarlyDiagnostics:
    sent: list[dict[str, Any]] = []
    watcher = EarlyDiagnostics(params or {"rootUri": folder.as_uri()}, result, sent.append)
    watcher.sent = sent  # type: ignore[attr-defined]
    return watcher


def _sent(watcher: EarlyDiagnostics) -> list[dict[str, Any]]:
    return watcher.sent  # type: ignore[attr-defined, no-any-return]


def _message(method: str, params: Any, msg_id: Any = None) -> bytes:
    message: dict[str, Any] = {"jsonrpc": "2.0", "method": method, "params": params}
    if msg_id is not None:
        message["id"] = msg_id
    return json.dumps(message).encode()


def _open(uri: str, text: str = SOURCE, version: Any = 3) -> bytes:
    document = {"uri": uri, "languageId": "python", "version": version, "text": text}
    return _message("textDocument/didOpen", {"textDocument": document})


def _pull(uri: str, msg_id: Any = 9) -> bytes:
    return _message("textDocument/diagnostic", {"textDocument": {"uri": uri}}, msg_id)


def _close(uri: str) -> bytes:
    return _message("textDocument/didClose", {"textDocument": {"uri": uri}})


def _change(uri: str) -> bytes:
    params = {"textDocument": {"uri": uri, "version": 4}, "contentChanges": [{"text": ""}]}
    return _message("textDocument/didChange", params)


# -- push clients -----------------------------------------------------------------------------


@pytest.mark.parametrize(("encoding", "column"), [("utf-16", 10), ("utf-8", 12), ("utf-32", 9)])
def test_a_push_client_gets_the_squiggle_in_its_position_encoding(
    project: tuple[Path, str], encoding: str, column: int
) -> None:
    folder, gotcha_id = project
    watcher = _watcher(folder, {"capabilities": {"positionEncoding": encoding}})
    uri = (folder / "app.py").as_uri()
    watcher.handle(_open(uri))
    [published] = _sent(watcher)
    assert published["method"] == "textDocument/publishDiagnostics"
    assert published["params"]["uri"] == uri and published["params"]["version"] == 3
    [squiggle] = published["params"]["diagnostics"]
    assert squiggle["code"] == gotcha_id and squiggle["message"] == "eval is unsafe"
    assert squiggle["range"]["start"] == {"line": 0, "character": column}
    assert squiggle["range"]["end"] == {"line": 0, "character": column + 5}


def test_an_answer_without_an_encoding_is_utf_16(project: tuple[Path, str]) -> None:
    folder, _ = project
    watcher = _watcher(folder, {"capabilities": {}})
    watcher.handle(_open((folder / "app.py").as_uri()))
    assert _sent(watcher)[0]["params"]["diagnostics"][0]["range"]["start"]["character"] == 10


def test_closing_a_document_clears_its_early_squiggle_once(project: tuple[Path, str]) -> None:
    folder, _ = project
    watcher = _watcher(folder)
    uri, other = (folder / "app.py").as_uri(), (folder / "other.py").as_uri()
    watcher.handle(_open(uri))
    watcher.handle(_close(other))  # never published: nothing to clear
    watcher.handle(_close(uri))
    watcher.handle(_close(uri))
    assert len(_sent(watcher)) == 2
    assert _sent(watcher)[1] == {
        "params": {"uri": uri, "diagnostics": []},
        "method": "textDocument/publishDiagnostics",
        "jsonrpc": "2.0",
    }


def test_a_push_client_never_gets_a_pull_answered(project: tuple[Path, str]) -> None:
    folder, _ = project
    watcher = _watcher(folder)
    uri = (folder / "app.py").as_uri()
    watcher.handle(_open(uri))
    watcher.handle(_pull(uri))
    assert [m.get("method") for m in _sent(watcher)] == ["textDocument/publishDiagnostics"]
    assert watcher.pulls_answered == {}


# -- pull clients -----------------------------------------------------------------------------


def test_a_pull_client_gets_its_pull_answered_and_is_never_pushed_to(
    project: tuple[Path, str],
) -> None:
    folder, gotcha_id = project
    watcher = _watcher(folder, PULL)
    uri = (folder / "app.py").as_uri()
    watcher.handle(_open(uri))
    assert _sent(watcher) == []
    watcher.handle(_pull(uri, msg_id="p1"))
    [answer] = _sent(watcher)
    assert answer["id"] == "p1" and answer["jsonrpc"] == "2.0"
    assert answer["result"]["kind"] == "full"
    assert [item["code"] for item in answer["result"]["items"]] == [gotcha_id]
    assert watcher.pulls_answered == {"p1": answer["result"]}


@pytest.mark.parametrize(
    "between",
    [_change, _close, lambda uri: _open(uri, text="nothing to see\n")],
    ids=["changed", "closed", "reopened"],
)
def test_a_pull_after_the_text_changed_is_left_to_the_server(
    project: tuple[Path, str], between: Any
) -> None:
    folder, _ = project
    watcher = _watcher(folder, PULL)
    uri = (folder / "app.py").as_uri()
    watcher.handle(_open(uri))
    watcher.handle(between(uri))
    watcher.handle(_pull(uri))
    assert _sent(watcher) == [] and watcher.pulls_answered == {}


@pytest.mark.parametrize("msg_id", [True, None, 1.5])
def test_a_pull_without_a_valid_id_is_not_answered(project: tuple[Path, str], msg_id: Any) -> None:
    folder, _ = project
    watcher = _watcher(folder, PULL)
    uri = (folder / "app.py").as_uri()
    watcher.handle(_open(uri))
    body = json.loads(_pull(uri))
    body["id"] = msg_id
    watcher.handle(json.dumps(body).encode())
    assert _sent(watcher) == []


def test_a_pull_for_another_document_is_left_to_the_server(project: tuple[Path, str]) -> None:
    folder, _ = project
    watcher = _watcher(folder, PULL)
    watcher.handle(_open((folder / "app.py").as_uri()))
    watcher.handle(_pull((folder / "other.py").as_uri()))
    assert _sent(watcher) == []


# -- what is left to the server -----------------------------------------------------------------


@pytest.mark.parametrize("method", ["shutdown", "exit"])
def test_nothing_is_sent_after_shutdown_or_exit(project: tuple[Path, str], method: str) -> None:
    folder, _ = project
    watcher = _watcher(folder)
    watcher.handle(json.dumps({"jsonrpc": "2.0", "id": 1, "method": method}).encode())
    watcher.handle(_open((folder / "app.py").as_uri()))
    assert _sent(watcher) == [] and not watcher.active


@pytest.mark.parametrize(
    "body",
    [
        None,
        b'{"jsonrpc": "2.0", "method": "textDocument/didOp',
        b"[1, 2]",
        b'"text"',
        _message("textDocument/didOpen", None),
        _message("textDocument/didOpen", ["x"]),
        _message("textDocument/didOpen", {"textDocument": "nonsense"}),
        _message("textDocument/didOpen", {"textDocument": {"uri": 5, "text": SOURCE}}),
        _message("textDocument/didOpen", {"other": {}}),
    ],
)
def test_a_frame_it_cannot_read_is_skipped_and_the_next_open_still_shows(
    project: tuple[Path, str], body: bytes | None
) -> None:
    folder, _ = project
    watcher = _watcher(folder)
    watcher.handle(body)
    assert watcher.active and _sent(watcher) == []
    watcher.handle(_open((folder / "app.py").as_uri()))
    assert len(_sent(watcher)) == 1


@pytest.mark.parametrize(
    "document",
    [
        {"version": 3},  # no text
        {"version": 3, "text": None},
        {"version": True, "text": SOURCE},  # the server refuses such a didOpen
        {"version": "3", "text": SOURCE},
        {"text": SOURCE},
    ],
)
def test_an_open_the_server_would_refuse_shows_nothing_early(
    project: tuple[Path, str], document: dict[str, Any]
) -> None:
    folder, _ = project
    watcher = _watcher(folder)
    params = {"textDocument": {"uri": (folder / "app.py").as_uri(), **document}}
    watcher.handle(_message("textDocument/didOpen", params))
    assert _sent(watcher) == [] and watcher.active


def test_a_version_of_zero_is_a_version(project: tuple[Path, str]) -> None:
    folder, _ = project
    watcher = _watcher(folder)
    watcher.handle(_open((folder / "app.py").as_uri(), version=0))
    assert _sent(watcher)[0]["params"]["version"] == 0


@pytest.mark.parametrize(
    "where", [".git/COMMIT_EDITMSG", ".engram/gotchas.toml", "../elsewhere/app.py"]
)
def test_files_of_the_store_and_outside_the_folder_show_nothing_early(
    project: tuple[Path, str], where: str
) -> None:
    folder, _ = project
    watcher = _watcher(folder)
    watcher.handle(_open((folder / where).resolve().as_uri()))
    assert _sent(watcher) == []


def test_a_document_without_a_hit_shows_nothing(project: tuple[Path, str]) -> None:
    folder, _ = project
    for result in (PUSH, PULL):
        watcher = _watcher(folder, result)
        uri = (folder / "app.py").as_uri()
        watcher.handle(_open(uri, text="value = 1\n"))
        watcher.handle(_pull(uri))
        assert _sent(watcher) == []


@pytest.mark.parametrize("uri", ["untitled:1", "file://host/ws/app.py", "file:", "vscode://x"])
def test_a_document_that_is_no_local_file_is_left_to_the_server(
    project: tuple[Path, str], uri: str
) -> None:
    folder, _ = project
    watcher = _watcher(folder)
    watcher.handle(_open(uri))
    assert _sent(watcher) == []


def test_a_failure_turns_the_early_path_off(
    project: tuple[Path, str], caplog: pytest.LogCaptureFixture
) -> None:
    folder, _ = project

    def broken(message: dict[str, Any]) -> None:
        raise OSError("the client went away")

    watcher = EarlyDiagnostics({"rootUri": folder.as_uri()}, PUSH, broken)
    with caplog.at_level(logging.ERROR, logger="engram.lsp"):
        watcher.handle(_open((folder / "app.py").as_uri()))
    assert not watcher.active
    assert "early diagnostics failed" in caplog.text


# -- folders ----------------------------------------------------------------------------------


def test_the_folders_are_read_as_the_server_reads_them(tmp_path: Path) -> None:
    one, two, three = (make_project(tmp_path / name) for name in ("one", "two", "three"))
    for folder in (one, two, three):
        _with_gotcha(folder, title=f"eval in {folder.name}")
    app = "app.py"
    for folder in (one, two, three):
        (folder / app).write_text(SOURCE, encoding="utf-8")

    def titles(params: dict[str, Any], folder: Path) -> list[str]:
        watcher = EarlyDiagnostics(params, PUSH, (sent := []).append)
        watcher.handle(_open((folder / app).as_uri()))
        return [d["message"] for m in sent for d in m["params"]["diagnostics"]]

    folders = [{"uri": one.as_uri(), "name": "one"}, {"uri": "untitled:x", "name": "odd"}]
    both = {"workspaceFolders": folders, "rootUri": two.as_uri(), "rootPath": str(three)}
    # The folders win over rootUri, rootUri over rootPath.
    assert titles(both, one) == ["eval in one"]
    assert titles(both, two) == []
    assert titles({"rootUri": two.as_uri(), "rootPath": str(three)}, two) == ["eval in two"]
    assert titles({"rootUri": two.as_uri(), "rootPath": str(three)}, three) == []
    assert titles({"rootPath": str(three)}, three) == ["eval in three"]
    assert titles({"rootUri": "untitled:1", "rootPath": str(three)}, three) == []
    assert titles({"workspaceFolders": [], "rootPath": str(three)}, three) == ["eval in three"]
    assert titles({}, one) == []


def test_the_innermost_folder_gives_the_squiggles_and_its_index_is_handed_over(
    tmp_path: Path,
) -> None:
    outer = make_project(tmp_path / "outer")
    inner = make_project(outer / "packages" / "inner")
    _with_gotcha(outer, title="outer eval")
    inner_id = _with_gotcha(inner, title="inner eval")
    params = {
        "workspaceFolders": [
            {"uri": outer.as_uri(), "name": "outer"},
            {"uri": inner.as_uri(), "name": "inner"},
        ]
    }
    for order in (params["workspaceFolders"], params["workspaceFolders"][::-1]):
        watcher = EarlyDiagnostics({"workspaceFolders": order}, PUSH, (sent := []).append)
        watcher.handle(_open((inner / "src" / "app.py").as_uri()))
        assert [d["code"] for d in sent[0]["params"]["diagnostics"]] == [inner_id]
        indexes = watcher.gotcha_indexes()
        assert list(indexes) == [inner]
        key, index, built_at = indexes[inner]
        with Store.open(inner) as store:
            from memory_core import config

            assert key == gotcha_format.index_key(store, inner, config.load(inner))
        assert index.revision == key[0] and built_at > 0
        watcher.handle(_open((outer / "app.py").as_uri()))
        assert sent[1]["params"]["diagnostics"][0]["message"] == "outer eval"
        assert set(watcher.gotcha_indexes()) == {inner, outer}


def test_a_folder_without_a_store_is_built_once_and_handed_over_as_nothing(tmp_path: Path) -> None:
    folder = make_project(tmp_path / "new")
    watcher = _watcher(folder)
    for version in (1, 2):
        watcher.handle(_open((folder / "a.py").as_uri(), version=version))
    assert watcher.folders == {folder: None} and watcher.gotcha_indexes() == {}
    assert _sent(watcher) == [] and not (folder / ".engram").exists()


def test_the_folders_settings_are_used(tmp_path: Path) -> None:
    """A slow pattern's warning names the folder's own regex time limit."""
    folder = make_project(tmp_path / "ws")
    (folder / ".engram").mkdir()
    (folder / ".engram" / "config.toml").write_text("[gotchas]\nregex_timeout_ms = 250\n")
    _with_gotcha(folder)
    watcher = _watcher(folder)
    watcher.handle(_open((folder / "app.py").as_uri()))
    [(_, folder_state)] = watcher.folders.items()
    assert folder_state is not None
    assert folder_state.settings["gotchas.regex_timeout_ms"] == 250
    assert watcher.gotcha_indexes()[folder][0][3] == 250


@pytest.mark.parametrize(
    ("uri", "expected"),
    [
        ("file:///w/a%20b.py", Path("/w/a b.py")),
        ("file:///w/a.py", Path("/w/a.py")),
        ("file://server/w/a.py", None),  # a network share: the server's business
        ("file://", None),
        ("untitled:1", None),
        ("https:///w/a.py", None),
        (None, None),
        (5, None),
    ],
)
def test_only_plain_file_uris_are_local_paths(uri: Any, expected: Path | None) -> None:
    assert fs_path(uri) == expected


def test_a_change_to_one_document_keeps_the_early_answer_of_another(
    project: tuple[Path, str],
) -> None:
    folder, gotcha_id = project
    watcher = _watcher(folder, PULL)
    first, second = (folder / "app.py").as_uri(), (folder / "lib.py").as_uri()
    watcher.handle(_open(first))
    watcher.handle(_open(second))
    watcher.handle(_change(first))
    watcher.handle(_pull(first, msg_id=1))
    watcher.handle(_pull(second, msg_id=2))
    assert [m["id"] for m in _sent(watcher)] == [2]
    assert _sent(watcher)[0]["result"]["items"][0]["code"] == gotcha_id
    assert watcher.active


def test_a_gotcha_scoped_to_some_files_shows_only_in_them(tmp_path: Path) -> None:
    folder = make_project(tmp_path / "ws")
    with Store.init(folder) as store:
        scoped = gotchas.add(
            store, "src eval", pattern="eval(", pattern_kind="literal", related_files=["src/*.py"]
        )
    watcher = _watcher(folder)
    watcher.handle(_open((folder / "src" / "a.py").as_uri()))
    watcher.handle(_open((folder / "tools" / "a.py").as_uri()))
    assert [m["params"]["uri"] for m in _sent(watcher)] == [(folder / "src" / "a.py").as_uri()]
    assert _sent(watcher)[0]["params"]["diagnostics"][0]["code"] == scoped.id


def test_a_learned_gotcha_shows_early_while_it_is_fresh(tmp_path: Path) -> None:
    """Gotchas engram learned fade after `gotchas.candidate_decay_days` unused: the early
    index judges that at the time it is built, as the server's does."""
    folder = make_project(tmp_path / "ws")
    with Store.init(folder) as store:
        learned = gotchas.add(
            store,
            "learned eval",
            pattern="eval(",
            pattern_kind="literal",
            source_type="auto_detected",
        )
    watcher = _watcher(folder)
    watcher.handle(_open((folder / "a.py").as_uri()))
    assert [d["code"] for m in _sent(watcher) for d in m["params"]["diagnostics"]] == [learned.id]


def test_a_folder_whose_root_cannot_be_found_is_logged_and_skipped(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    folder, _ = _project_with_gotcha(tmp_path)
    missing = tmp_path / "gone"
    watcher = EarlyDiagnostics(
        {"workspaceFolders": [{"uri": missing.as_uri()}, {"uri": folder.as_uri()}]},
        PUSH,
        (sent := []).append,
    )
    with caplog.at_level(logging.DEBUG, logger="engram.lsp"):
        watcher.handle(_open((folder / "app.py").as_uri()))
    assert len(sent) == 1
    assert f"no workspace root for {missing}" in caplog.text


def _project_with_gotcha(tmp_path: Path) -> tuple[Path, str]:
    folder = make_project(tmp_path / "ws")
    return folder, _with_gotcha(folder)
