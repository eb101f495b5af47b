"""beans sessions (seed 004) through the real `engram` command: the seed's own SessionExport
example loads, engram exports in that shape on request, resume shows the workspace changes since
the session, and closing a session shows its summary."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from memory_core import checkpoints, sessions
from memory_core.store import Store

SEED_EXAMPLE = Path(__file__).parent.parent / "fixtures" / "seeds" / "beans-session-example.json"
# The same example as the seed prints it, `"toolCalls": [...]` included.
SEED_VERBATIM = SEED_EXAMPLE.with_name("beans-session-example-verbatim.json")
SESSION_CONTEXT = {
    "sessionId",
    "startedAt",
    "turnCount",
    "totalTokens",
    "modifiedFiles",
    "commandsExecuted",
}
TURN_FIELDS = {
    "turnNumber",
    "userMessage",
    "assistantResponse",
    "toolCalls",
    "timestamp",
    "tokens",
}


@pytest.fixture
def repo(workspace: Path) -> Path:
    subprocess.run(["git", "init", "-q", "-b", "main", str(workspace)], check=True)
    return workspace


def test_the_seeds_example_loads_and_exports_back_in_its_shape(
    cli, repo: Path, tmp_path: Path
) -> None:  # type: ignore[no-untyped-def]
    seed = json.loads(SEED_EXAMPLE.read_text())
    assert cli("init", cwd=repo).code == 0
    imported = cli("session", "import", str(SEED_EXAMPLE), "--json", cwd=repo)
    assert imported.code == 0, imported.stderr
    session = imported.json()["session"]
    assert session["id"] == "uuid-here" and session["turns"] == 1
    assert session["started_at"] == "2024-01-15T10:30:00Z"

    exported = cli("session", "export", "uuid-here", "--format", "beans", cwd=repo)
    assert exported.code == 0, exported.stderr
    doc = json.loads(exported.stdout)
    assert set(seed) <= set(doc) and doc["version"] == "1.0"
    assert set(doc["session"]) == SESSION_CONTEXT
    assert doc["turns"] == seed["turns"]  # every field of the seed's turn, as the seed wrote it
    assert set(doc["turns"][0]) == TURN_FIELDS
    assert doc["session"]["sessionId"] == "uuid-here"
    assert doc["session"]["startedAt"] == seed["session"]["startedAt"]
    assert doc["session"]["modifiedFiles"] == seed["session"]["modifiedFiles"]
    # Recomputed from the turns the document holds, not copied: the seed's header (5 turns,
    # 12,500 tokens) does not match its one turn of 700 tokens.
    assert (doc["session"]["turnCount"], doc["session"]["totalTokens"]) == (1, 700)
    assert doc["workspace"] == {"rootPath": str(repo), "isGitRepo": True, "gitBranch": "main"}
    assert doc["metrics"]["sessionId"] == "uuid-here" and doc["metrics"]["totalTokens"] == 700

    # Round trip: engram's beans export imports again and exports the same conversation.
    again_root = tmp_path / "again"
    again_root.mkdir()
    subprocess.run(["git", "init", "-q", "-b", "main", str(again_root)], check=True)
    out = tmp_path / "beans.json"
    out.write_text(exported.stdout)
    assert cli("init", cwd=again_root).code == 0
    assert cli("session", "import", str(out), cwd=again_root).code == 0
    second = json.loads(
        cli("session", "export", "uuid-here", "--format", "beans", cwd=again_root).stdout
    )
    assert second["turns"] == doc["turns"] and second["session"] == doc["session"]


def test_the_seeds_example_as_written_imports_and_says_what_it_changed(
    cli, repo: Path, tmp_path: Path
) -> None:  # type: ignore[no-untyped-def]
    """The example exactly as seed 004 prints it: `"toolCalls": [...]` and a rootPath of
    another machine. It imports; the person is told the placeholder was read as empty and the
    session now belongs to this workspace."""
    assert "[...]" in SEED_VERBATIM.read_text()  # the seed's own text, not a cleaned copy
    assert cli("init", cwd=repo).code == 0
    imported = cli("session", "import", str(SEED_VERBATIM), "--json", cwd=repo)
    assert imported.code == 0, imported.stderr
    result = imported.json()
    assert result["session"]["id"] == "uuid-here" and result["turns"][0]["tool_calls"] == []
    assert result["turns"][0]["user_message"] == "Fix the bug"
    notes = imported.stderr.splitlines()
    assert notes == [
        f"engram: note: {SEED_VERBATIM.name} has 1 placeholder(s) (`[...]`), read as empty",
        "engram: note: the session was recorded in /path/to/project; it is imported into this"
        f" workspace ({repo}), and its files are read as this workspace's",
    ]
    assert result["notes"] == [line.removeprefix("engram: note: ") for line in notes]
    # `session load FILE.json` takes the same road and says the same.
    again = tmp_path / "again"
    again.mkdir()
    assert cli("init", cwd=again).code == 0
    loaded = cli("session", "load", str(SEED_VERBATIM), cwd=again)
    assert loaded.code == 0, loaded.stderr
    assert "Loaded session uuid-here" in loaded.stdout and "read as empty" in loaded.stderr
    # An export from this workspace, imported here again, has nothing to report (the control).
    out = tmp_path / "here.json"
    out.write_text(cli("session", "export", "uuid-here", "--format", "beans", cwd=repo).stdout)
    quiet = cli("session", "import", str(out), "--replace", cwd=repo)
    assert quiet.code == 0 and quiet.stderr == ""


def test_a_beans_file_that_is_not_a_session_is_refused_clearly(
    cli, repo: Path, tmp_path: Path
) -> None:  # type: ignore[no-untyped-def]
    assert cli("init", cwd=repo).code == 0
    bad = tmp_path / "cut.json"
    bad.write_text(SEED_EXAMPLE.read_text()[:200])  # a file cut short is not JSON
    refused = cli("session", "import", str(bad), cwd=repo)
    assert refused.code == 2 and "is not JSON" in refused.stderr
    assert "Traceback" not in refused.stderr
    no_id = tmp_path / "no-id.json"
    no_id.write_text(json.dumps({"version": "1.0", "session": {}, "turns": []}))
    refused = cli("session", "import", str(no_id), cwd=repo)
    assert refused.code == 2 and "session.id" in refused.stderr


@pytest.mark.parametrize("version", ["2.0", "99", "0.9"])
def test_a_beans_file_of_another_version_says_which_version_it_found(
    cli, repo: Path, tmp_path: Path, version: str
) -> None:  # type: ignore[no-untyped-def]
    assert cli("init", cwd=repo).code == 0
    doc = json.loads(SEED_EXAMPLE.read_text())
    doc["version"] = version
    path = tmp_path / f"beans-{version}.json"
    path.write_text(json.dumps(doc))
    refused = cli("session", "import", str(path), cwd=repo)
    assert refused.code == 1
    assert refused.stderr.startswith(
        f"engram: error: this beans session file has version {version}; this engram reads"
        " beans session files of version 1.x"
    )
    assert cli("session", "list", "--json", cwd=repo).json()["sessions"] == []
    doc["version"] = "1.1"  # a newer minor version of 1.x reads (the control)
    path.write_text(json.dumps(doc))
    assert cli("session", "import", str(path), cwd=repo).code == 0


def test_resume_shows_the_workspace_changes_since_the_session(cli, repo: Path) -> None:  # type: ignore[no-untyped-def]
    (repo / "a.py").write_text("A = 1\n")
    (repo / "b.py").write_text("B = 1\n")
    store = Store.init(repo)
    try:
        sessions.start(store, session_id="S-beans", agent="claude-code")
        checkpoints.create(store, "end of work", session_id="S-beans")
        sessions.close(store, "S-beans")
    finally:
        store.close()
    quiet = cli("session", "resume", "S-beans", cwd=repo)
    assert quiet.code == 0, quiet.stderr
    assert "workspace: unchanged since the session" in quiet.stdout  # the negative control
    assert cli("session", "close", "S-beans", cwd=repo).code == 0

    (repo / "a.py").write_text("A = 2\n")
    (repo / "b.py").unlink()
    (repo / "c.py").write_text("C = 1\n")
    resumed = cli("session", "resume", "S-beans", "--json", cwd=repo)
    changes = resumed.json()["workspace_changes"]
    assert (changes["added"], changes["modified"], changes["deleted"]) == (
        ["c.py"],
        ["a.py"],
        ["b.py"],
    )
    text = cli("session", "resume", "S-beans", cwd=repo).stdout
    assert "added: c.py" in text and "modified: a.py" in text and "deleted: b.py" in text


def test_closing_a_session_shows_its_summary(cli, repo: Path) -> None:  # type: ignore[no-untyped-def]
    store = Store.init(repo)
    try:
        sessions.start(store, session_id="S-end", agent="claude-code")
        sessions.record_turn(
            store, "S-end", user_message="rename the module", assistant_response="done"
        )
        sessions.set_summary(store, "S-end", open_items=["update the imports in docs"])
    finally:
        store.close()
    closed = cli("session", "close", "S-end", cwd=repo)
    assert closed.code == 0, closed.stderr
    assert "# Session S-end" in closed.stdout
    assert "- update the imports in docs" in closed.stdout
    note = repo / ".engram" / "exports" / "sessions"
    assert any('status: "closed"' in p.read_text() for p in note.glob("*_S-end.md"))


def test_resume_without_a_checkpoint_finds_files_edited_since(cli, repo: Path) -> None:  # type: ignore[no-untyped-def]
    """A session recorded by hooks alone, no checkpoint, no editor: files edited afterwards are
    found by their modification times, and a file the session wrote that is gone is deleted."""
    from tests.agents_fixtures import hook_payload
    from tests.conftest import write_file

    sid = "b0b5e551-aaaa-bbbb-cccc-123456789abc"
    write_file(repo, "README.md", "# app\n", age=3600)
    write_file(repo, "src/app.py", "def main():\n    pass\n", age=3600)
    write_file(repo, "src/old.py", "OLD = 1\n", age=3600)
    assert cli("config", "set", "checkpoints.every_n_turns", "0", cwd=repo).code == 0

    def hook(event: str, **extra: object) -> None:
        payload = hook_payload(event, sid, repo, **extra)
        assert cli("hook", "claude-code", event, cwd=repo, stdin=payload).code == 0

    hook("SessionStart", source="startup")
    hook("UserPromptSubmit", prompt="drop the old module")
    for i, (tool, path) in enumerate((("Edit", "src/app.py"), ("Write", "src/old.py"))):
        hook(
            "PostToolUse",
            tool_name=tool,
            tool_input={"file_path": str(repo / path), "old_string": "a", "new_string": "b"},
            tool_use_id=f"toolu_edit_{i}",
            tool_response={"filePath": str(repo / path)},
        )
    hook("Stop", stop_hook_active=False, last_assistant_message="Done.")
    hook("SessionEnd", reason="prompt_input_exit")
    with Store.open(repo) as store:
        assert store.query_one("SELECT count(*) FROM checkpoints")[0] == 0
    quiet = cli("session", "resume", sid, cwd=repo)
    assert quiet.code == 0, quiet.stderr
    assert "workspace: unchanged since the session" in quiet.stdout  # the control
    assert cli("session", "close", sid, cwd=repo).code == 0

    (repo / "src" / "app.py").write_text("def main():\n    return 1\n")
    (repo / "README.md").write_text("# app\n\nUsage: app run\n")
    (repo / "src" / "old.py").unlink()
    resumed = cli("session", "resume", sid, "--json", cwd=repo)
    changes = resumed.json()["workspace_changes"]
    assert changes["checkpoint"] is None
    assert (changes["modified"], changes["deleted"]) == (
        ["README.md", "src/app.py"],
        ["src/old.py"],
    )
    (repo / "README.md").write_text("# app\n\nUsage: app run --fast\n")
    text = cli("session", "resume", sid, cwd=repo).stdout
    # Measured since the last resume: only what changed after it, and the file still gone.
    assert "  modified: README.md\n" in text and "  deleted: src/old.py" in text
