"""Ids from outside are data, never paths; and a store appears only where a project is.

A session id such as `x/../../../../../outside/dir/pwned` arrives in a hook payload or in an
export someone shares. Every command that derives a file name from it must leave every folder
outside the workspace as it was: no file written, no mode changed.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

from memory_core.filenames import child_path, safe_filename

# From `.engram/exports/sessions/<date>_` five `..` reach the folder holding the workspace.
CRAFTED = "x/../../../../../outside/dir/pwned"


def _tree(folder: Path) -> dict[str, int]:
    """Every path below `folder` (and itself) with its mode: what "untouched" compares."""
    found = {".": os.stat(folder).st_mode}
    for dirpath, dirnames, filenames in os.walk(folder):
        for name in dirnames + filenames:
            path = Path(dirpath) / name
            found[str(path.relative_to(folder))] = os.lstat(path).st_mode
    return found


def _outside(tmp_path: Path) -> Path:
    target = tmp_path / "outside" / "dir"
    target.mkdir(parents=True)
    os.chmod(target, 0o755)
    (target / "keep.txt").write_text("mine\n")
    return target


def _git_workspace(workspace: Path) -> Path:
    subprocess.run(["git", "init", "-q", str(workspace)], check=True)
    return workspace


def _hook(cli: Any, workspace: Path, event: str, **fields: Any) -> None:
    payload = {"hook_event_name": event, "cwd": str(workspace), **fields}
    result = cli("hook", "claude-code", event, cwd=workspace, stdin=json.dumps(payload))
    assert result.code == 0, result.stderr


def test_safe_filename_keeps_plain_ids_and_defuses_the_rest() -> None:
    assert safe_filename("S-20260101-abc_1.2") == "S-20260101-abc_1.2"
    crafted = safe_filename(CRAFTED)
    assert "/" not in crafted and not crafted.startswith(".")
    assert safe_filename("..") != ".." and "/" not in safe_filename("../..")
    # Two ids that clean to the same text still get different files.
    assert safe_filename("a/b") != safe_filename("a_b")
    assert len(safe_filename("y" * 5000)) <= 120
    assert safe_filename("a/b") == safe_filename("a/b")  # stable: the same id, the same file


def test_child_path_refuses_anything_but_a_plain_name(tmp_path: Path) -> None:
    assert child_path(tmp_path, "a.md") == tmp_path / "a.md"
    for bad in ("..", "a/../../b", "", "/etc/passwd"):
        try:
            child_path(tmp_path, bad)
        except Exception as exc:
            assert "refusing" in str(exc)
        else:
            raise AssertionError(f"{bad!r} was accepted")


def test_a_crafted_session_id_from_a_hook_stays_inside_the_store(
    cli: Any, workspace: Path, tmp_path: Path
) -> None:
    outside = _outside(tmp_path)
    before = _tree(tmp_path / "outside")
    _git_workspace(workspace)
    _hook(cli, workspace, "SessionStart", session_id=CRAFTED, source="startup")
    _hook(cli, workspace, "UserPromptSubmit", session_id=CRAFTED, prompt="write the parser")
    _hook(cli, workspace, "Stop", session_id=CRAFTED, last_assistant_message="done")
    _hook(cli, workspace, "SessionEnd", session_id=CRAFTED, reason="exit")

    saved = cli("session", "save", "crafted", "--json", cwd=workspace)
    assert saved.code == 0, saved.stderr
    export = Path(saved.json()["export_path"])
    assert (workspace / ".engram" / "exports" / "sessions") in export.parents
    assert export.is_file()
    summary = cli("session", "summary", CRAFTED, cwd=workspace)
    assert summary.code == 0, summary.stderr
    deleted = cli("session", "delete", CRAFTED, "--yes", cwd=workspace)
    assert deleted.code == 0, deleted.stderr

    assert _tree(tmp_path / "outside") == before
    assert not (outside / "pwned.md").exists()
    # Negative control: the tree comparison does notice a file written there.
    (outside / "pwned.md").write_text("x")
    assert _tree(tmp_path / "outside") != before


def test_an_imported_export_with_a_crafted_id_stays_inside_the_store(
    cli: Any, workspace: Path, tmp_path: Path
) -> None:
    _outside(tmp_path)
    before = _tree(tmp_path / "outside")
    source = tmp_path / "source"
    source.mkdir()
    assert cli("init", cwd=source).code == 0
    assert cli("session", "start", "shared", cwd=source).code == 0
    exported = cli("session", "export", "shared", cwd=source)
    assert exported.code == 0, exported.stderr
    document = json.loads(exported.stdout)
    text = json.dumps(document)
    old_id = document["session"]["id"] if "session" in document else None
    assert old_id, document.keys()
    crafted_file = tmp_path / "crafted.json"
    crafted_file.write_text(text.replace(json.dumps(old_id), json.dumps(CRAFTED)))

    assert cli("init", cwd=workspace).code == 0
    imported = cli("session", "import", str(crafted_file), cwd=workspace)
    assert imported.code == 0, imported.stderr
    for args in (("session", "save", "again"), ("session", "summary", CRAFTED)):
        result = cli(*args, cwd=workspace)
        assert result.code == 0, (args, result.stderr)

    # The whole-store export and import (`engram export` / `engram import`) too.
    full = cli("export", "--format", "json", cwd=workspace)
    assert full.code == 0, full.stderr
    other = tmp_path / "other"
    other.mkdir()
    assert cli("init", cwd=other).code == 0
    dump = tmp_path / "full.json"
    dump.write_text(full.stdout)
    assert cli("import", str(dump), cwd=other).code == 0
    assert cli("session", "save", "third", cwd=other).code == 0

    assert _tree(tmp_path / "outside") == before


def test_export_out_does_not_change_the_mode_of_the_users_folder(
    cli: Any, workspace: Path, tmp_path: Path
) -> None:
    target = tmp_path / "shared-folder"
    target.mkdir()
    os.chmod(target, 0o755)
    assert cli("init", cwd=workspace).code == 0
    result = cli("export", "--format", "json", "--out", str(target / "dump.json"), cwd=workspace)
    assert result.code == 0, result.stderr
    assert (target / "dump.json").is_file()
    assert os.stat(target).st_mode & 0o777 == 0o755


# -- where a store is --------------------------------------------------------------------------


def test_read_only_commands_outside_a_project_create_nothing(cli: Any, workspace: Path) -> None:
    for args in (
        ("gotcha", "list"),
        ("checkpoint", "list"),
        ("drift",),
        ("timeline",),
        ("session", "list"),
        ("memory", "search", "x"),
        ("status",),
    ):
        result = cli(*args, cwd=workspace)
        assert result.code == 1, (args, result.stdout)
        assert "no engram store here (run engram init)" in result.stderr, args
        assert len(result.stderr.strip().splitlines()) == 1
    assert not (workspace / ".engram").exists()
    # Inside a git repository too: reading never creates a store.
    _git_workspace(workspace)
    assert cli("gotcha", "list", cwd=workspace).code == 1
    assert not (workspace / ".engram").exists()
    # Negative control: `init` does create one, and then the same command works.
    assert cli("init", cwd=workspace).code == 0
    assert cli("gotcha", "list", cwd=workspace).code == 0


def test_a_hook_whose_cwd_is_no_project_creates_nothing(
    cli: Any, workspace: Path, tmp_path: Path
) -> None:
    plain = tmp_path / "x"
    plain.mkdir()
    for cwd in (plain, Path("/etc")):
        had_store = (cwd / ".engram").exists()
        payload = {"session_id": "s-1", "cwd": str(cwd), "prompt": "hello"}
        result = cli(
            "hook", "claude-code", "UserPromptSubmit", cwd=tmp_path, stdin=json.dumps(payload)
        )
        assert result.code == 0 and result.stderr == ""
        assert (cwd / ".engram").exists() == had_store
    # Negative control: the same hook inside a git repository records the session.
    _git_workspace(workspace)
    payload = {"session_id": "s-1", "cwd": str(workspace), "prompt": "hello"}
    assert (
        cli("hook", "claude-code", "UserPromptSubmit", cwd=tmp_path, stdin=json.dumps(payload)).code
        == 0
    )
    assert (workspace / ".engram" / "engram.db").is_file()


def test_init_in_a_repository_nested_below_a_store_creates_its_own(
    cli: Any, tmp_path: Path
) -> None:
    parent = tmp_path / "parent"
    parent.mkdir()
    assert cli("init", cwd=parent).code == 0
    nested = parent / "libs" / "repo"
    nested.mkdir(parents=True)
    _git_workspace(nested)
    result = cli("init", "--json", cwd=nested)
    assert result.code == 0, result.stderr
    assert result.json()["root"] == str(nested.resolve())
    assert result.json()["created"] is True
    assert (nested / ".engram" / "engram.db").is_file()
    # A plain folder below the parent still uses the parent's store.
    plain = parent / "notes"
    plain.mkdir()
    assert cli("status", "--json", cwd=plain).json()["root"] == str(parent.resolve())
