"""The server and its store: a deleted engram.db, crafted ids, plain-text hovers."""

from __future__ import annotations

import json
import os
from pathlib import Path

from memory_core import sessions
from memory_core.store import Store
from tests.conftest import run_cli
from tests.lsp.conftest import make_project
from tests.lsp.raw_client import RawServer


def _command(server: RawServer, name: str, args: dict[str, object]) -> dict[str, object]:
    answer = server.request("workspace/executeCommand", {"command": name, "arguments": [args]})
    assert "result" in answer, answer
    result: dict[str, object] = answer["result"]
    return result


def test_a_store_deleted_under_the_server_is_noticed_before_the_next_write(
    tmp_path: Path,
) -> None:
    folder = make_project(tmp_path / "ws")
    server = RawServer(folder.resolve(), tmp_path / "server.log")
    try:
        server.initialize()
        _command(server, "engram.memory.add", {"content": "written before the deletion"})
        for name in os.listdir(folder / ".engram"):
            if name.startswith("engram.db"):
                os.unlink(folder / ".engram" / name)
        _command(server, "engram.memory.add", {"content": "written after the deletion"})
        told = [
            n["params"]["message"]
            for n in server.notifications
            if n["method"] == "window/showMessage" and "was deleted" in n["params"]["message"]
        ]
        assert len(told) == 1, server.notifications
    finally:
        server.close()
    # Both acknowledged writes are in the file on disk, for any other process to read.
    listed = run_cli("memory", "list", "--json", cwd=folder)
    assert listed.code == 0, listed.stderr
    contents = sorted(m["content"] for m in listed.json()["memories"])
    assert contents == ["written after the deletion", "written before the deletion"]


def test_the_summary_command_keeps_a_crafted_session_id_inside_the_store(tmp_path: Path) -> None:
    folder = make_project(tmp_path / "ws")
    outside = tmp_path / "outside" / "dir"
    outside.mkdir(parents=True)
    os.chmod(outside, 0o755)
    crafted = "x/../../../../../outside/dir/pwned"
    with Store.init(folder) as store:
        sessions.start(store, session_id=crafted, agent="claude-code")
    server = RawServer(folder.resolve(), tmp_path / "server.log")
    try:
        server.initialize()
        result = _command(server, "engram.session.summary", {"id": crafted})
        assert json.dumps(result)
    finally:
        server.close()
    assert os.listdir(outside) == []
    assert os.stat(outside).st_mode & 0o777 == 0o755
    written = list((folder / ".engram" / "exports" / "sessions").iterdir())
    assert len(written) == 1 and "/" not in written[0].name


def _hover_kind(tmp_path: Path, content_format: list[str] | None) -> tuple[str, str]:
    folder = tmp_path / f"ws-{len(content_format or [])}-{'-'.join(content_format or [])}"
    make_project(folder)
    source = "x = eval(data)\n"
    (folder / "app.py").write_text(source)
    server = RawServer(folder.resolve(), tmp_path / f"{folder.name}.log")
    try:
        caps = (
            {"textDocument": {"hover": {"contentFormat": content_format}}} if content_format else {}
        )
        server.initialize(caps)
        _command(
            server,
            "engram.gotcha.add",
            {
                "title": "eval runs untrusted input",
                "pattern": "eval(",
                "literal": True,
                "description": "Use `ast.literal_eval`, **never** eval.",
            },
        )
        uri = (folder / "app.py").as_uri()
        server.notify(
            "textDocument/didOpen",
            {"textDocument": {"uri": uri, "languageId": "python", "version": 1, "text": source}},
        )
        answer = server.request(
            "textDocument/hover",
            {"textDocument": {"uri": uri}, "position": {"line": 0, "character": 5}},
        )
    finally:
        server.close()
    contents = answer["result"]["contents"]
    return contents["kind"], contents["value"]


def test_hover_follows_the_clients_content_format(tmp_path: Path) -> None:
    kind, value = _hover_kind(tmp_path, ["plaintext"])
    assert kind == "plaintext"

    # The hover adds to the diagnostic (whose message is the title): the workaround, in plain text.
    assert "Use ast.literal_eval, never eval." in value
    assert "**" not in value and "`" not in value
    # Negative control: a client that accepts Markdown gets Markdown.
    kind, value = _hover_kind(tmp_path, ["markdown", "plaintext"])
    assert kind == "markdown" and "`ast.literal_eval`" in value
