"""`engram session ...`, `engram checkpoint ...` and `engram rollback` as a user runs them."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from memory_core import sessions
from memory_core.store import Store


def _record(root: Path, sid: str = "agent-1") -> None:
    with Store.open_or_init(root) as store:
        sessions.start(store, session_id=sid, agent="claude-code")
        sessions.record_turn(
            store,
            sid,
            user_message="write the parser",
            assistant_response="ok",
            input_tokens=300,
            output_tokens=100,
            tool_calls=[{"tool": "Write", "ok": True}],
        )
        sessions.record_file_modified(store, sid, "parser.py")
        sessions.record_command(store, sid, "pytest -x", exit_code=2)


def test_checkpoint_change_rollback_and_summary(cli: Any, workspace: Path) -> None:
    """The README's main job: a checkpoint, a change, a rollback and a summary."""
    assert cli("init", cwd=workspace).code == 0
    assert cli("session", "start", "demo", cwd=workspace).code == 0
    (workspace / "app.py").write_text("def answer():\n    return 42\n")
    made = cli("checkpoint", "create", "before-change", "--json", cwd=workspace)
    assert made.code == 0, made.stderr
    checkpoint = made.json()
    assert checkpoint["files"] == 1

    (workspace / "app.py").write_text("def answer():\n    return 41  # oops\n")
    (workspace / "scratch.txt").write_text("temporary\n")
    diff = cli("checkpoint", "diff", checkpoint["id"], cwd=workspace)
    assert "M app.py" in diff.stdout and "A scratch.txt" in diff.stdout

    rolled = cli("rollback", checkpoint["id"], "--yes", cwd=workspace)
    assert rolled.code == 0, rolled.stderr
    assert "restored app.py" in rolled.stdout and "removed  scratch.txt" in rolled.stdout
    assert "Undo with: engram rollback C-" in rolled.stdout
    assert (workspace / "app.py").read_text() == "def answer():\n    return 42\n"
    assert not (workspace / "scratch.txt").exists()

    summary = cli("session", "summary", cwd=workspace)
    assert summary.code == 0
    assert summary.stdout.startswith("# Session demo")
    assert "Made 1 checkpoint. Rolled back 1 time." in summary.stdout
    assert "pre-rollback" in summary.stdout  # listed, so the rollback can be undone
    assert "`app.py`" in summary.stdout


def test_rollback_without_yes_on_a_pipe_writes_nothing(cli: Any, workspace: Path) -> None:
    (workspace / "a.txt").write_text("one\n")
    checkpoint = cli("checkpoint", "create", "--json", cwd=workspace).json()
    (workspace / "a.txt").write_text("two\n")
    result = cli("rollback", checkpoint["id"], cwd=workspace)
    assert result.code == 2
    assert "restore a.txt" in result.stderr
    assert "needs --yes when not on a terminal" in result.stderr
    assert "nothing was changed" in result.stderr
    assert (workspace / "a.txt").read_text() == "two\n"
    assert len(cli("checkpoint", "list", "--json", cwd=workspace).json()["checkpoints"]) == 1


def test_rollback_to_an_unknown_checkpoint_is_one_clear_line(cli: Any, workspace: Path) -> None:
    cli("init", cwd=workspace)
    result = cli("rollback", "C-missing", "--yes", cwd=workspace)
    assert result.code == 1
    assert (
        result.stderr.strip()
        == "engram: error: no checkpoint 'C-missing' (see `engram checkpoint list`)"
    )


def test_session_list_save_load_resume_and_metrics(cli: Any, workspace: Path) -> None:
    _record(workspace)
    listed = cli("session", "list", "--json", cwd=workspace).json()
    assert [s["id"] for s in listed["sessions"]] == ["agent-1"]

    saved = cli("session", "save", "parser-work", "--json", cwd=workspace)
    assert saved.code == 0, saved.stderr
    export = Path(saved.json()["export_path"])
    assert export.parent == workspace / ".engram" / "exports" / "sessions" and export.is_file()

    loaded = cli("session", "load", "parser-work", cwd=workspace)
    assert loaded.code == 0 and "user: write the parser" in loaded.stdout

    cli("session", "close", "agent-1", cwd=workspace)
    resumed = cli("session", "resume", "--json", cwd=workspace).json()
    assert resumed["session"]["id"] == "agent-1" and resumed["session"]["status"] == "active"

    metrics = cli("session", "metrics", "--json", cwd=workspace).json()
    assert (
        metrics["turns"] == 1 and metrics["total_tokens"] == 400 and metrics["commands_failed"] == 1
    )
    history = cli("session", "history", "--last", "1", "--json", cwd=workspace).json()
    assert history["turns"][0]["tool_calls"] == [{"tool": "Write", "ok": True}]


def test_saving_under_a_taken_name_needs_yes(cli: Any, workspace: Path) -> None:
    _record(workspace, "one")
    _record(workspace, "two")
    assert cli("session", "save", "shared", "--session", "one", cwd=workspace).code == 0
    refused = cli("session", "save", "shared", "--session", "two", cwd=workspace)
    assert refused.code == 1 and "already used by session one" in refused.stderr
    taken = cli("session", "save", "shared", "--session", "two", "--yes", "--json", cwd=workspace)
    assert taken.code == 0 and taken.json()["id"] == "two"


def test_delete_asks_first(cli: Any, workspace: Path) -> None:
    _record(workspace)
    asked = cli("session", "delete", "agent-1", cwd=workspace)
    assert asked.code == 2 and "needs --yes when not on a terminal" in asked.stderr
    assert len(cli("session", "list", "--json", cwd=workspace).json()["sessions"]) == 1
    assert cli("session", "delete", "agent-1", "--yes", cwd=workspace).code == 0
    assert cli("session", "list", "--json", cwd=workspace).json()["sessions"] == []


def test_export_import_and_versions(cli: Any, workspace: Path, tmp_path: Path) -> None:
    _record(workspace)
    out = tmp_path / "session.json"
    assert cli("session", "export", "agent-1", "--out", str(out), cwd=workspace).code == 0
    doc = json.loads(out.read_text())
    assert doc["version"] == sessions.FORMAT_VERSION and doc["session"]["id"] == "agent-1"

    other = tmp_path / "other"
    other.mkdir()
    imported = cli("session", "import", str(out), "--json", cwd=other)
    assert imported.code == 0 and imported.json()["session"]["turns"] == 1

    older = tmp_path / "older.json"
    older.write_text(
        json.dumps(
            {
                "version": 1,
                "session": {"id": "v1", "startedAt": "2024-01-01T00:00:00Z"},
                "turns": [{"user": "hi", "tokens": {"input": 1, "output": 2}}],
            }
        )
    )
    assert cli("session", "load", str(older), cwd=other).code == 0
    assert cli("session", "metrics", "v1", "--json", cwd=other).json()["total_tokens"] == 3

    newer = tmp_path / "newer.json"
    newer.write_text(json.dumps({**doc, "version": sessions.FORMAT_VERSION + 1}))
    refused = cli("session", "import", str(newer), cwd=other)
    assert refused.code == 1
    assert "newer engram" in refused.stderr and "Traceback" not in refused.stderr


def test_session_commands_without_any_session_explain_what_to_do(cli: Any, workspace: Path) -> None:
    cli("init", cwd=workspace)
    result = cli("session", "summary", cwd=workspace)
    assert result.code == 1
    assert "no session recorded" in result.stderr and "engram session start" in result.stderr
