"""A rollback (or checkpoint) without watchman in a git repository starts `git status` first and
works while git does: the stat cache's files changed in the second of git's previous look are
checked then too. And a rollback in a process that answers first (the resident server's child)
records its event and its session's records after its answer.

What a user would notice if these went wrong: a same-second edit git calls clean missing from
the pre-rollback checkpoint (lost for good once the rollback overwrites it), or a rollback whose
answer came before its undo was safe on disk."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from memory_core import checkpoints, config, journal
from memory_core import store as store_module
from memory_core.cli.main import main as engram
from memory_core.store import Store
from tests.conftest import git
from tests.conftest import write_file as _write


def _files(store: Store, checkpoint_id: str) -> dict[str, bytes]:
    return {
        item["path"]: checkpoints.read_blob(store, item["hash"])
        for item in checkpoints.manifest(store, checkpoint_id)
    }


def _git_project(store: Store) -> Path:
    root = store.root
    config.set_value(root, "checkpoints.watchman", False)
    git(root, "init", "-q")
    _write(root, ".gitignore", ".engram/\n")
    _write(root, "src/app.py", "print('checkpointed')\n")
    git(root, "add", "-A")
    git(root, "commit", "-qm", "start")
    return root


def _edit_within_the_second_of_gits_look(store: Store, name: str) -> tuple[str, Path]:
    """A checkpoint git vouched for, then a same-size edit of `name` with its mtime put back in
    the second of that checkpoint's git look (git sees the file as clean). Returns the
    checkpoint's id (or skips when the machine was too busy to make it within a second)."""
    root = store.root
    for attempt in range(5):
        rel = f"{name}{attempt}.ini"
        path = _write(root, rel, "mode=AAAA\n", age=3600)
        git(root, "add", "-A")
        git(root, "commit", "-qm", rel)
        checkpoints.create(store)
        made = checkpoints.create(store)  # the one whose git look the edit falls in
        st = os.stat(path)
        with open(path, "r+b") as handle:  # same size, same inode, mtime put back
            handle.write(b"mode=BBBB\n")
        os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))
        if os.stat(path).st_ctime_ns // 10**9 == st.st_ctime_ns // 10**9:
            return str(made["id"]), path
    pytest.skip("could not make the edit within one second five times (a busy machine)")


def _after_that_second(monkeypatch: pytest.MonkeyPatch) -> None:
    """From here the capture's clock is a second on: the second of the git look just made is
    over for it, so the check runs while git works, as it does a second later (without waiting
    for that second: git's own look is real)."""
    from memory_core.checkpoints import capture

    later = SimpleNamespace(time=lambda: time.time() + 1.0)
    monkeypatch.setattr(capture, "time", later)


def test_a_same_second_edit_is_in_a_checkpoint_checked_while_git_works(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    _git_project(store)
    _, path = _edit_within_the_second_of_gits_look(store, "config")
    _after_that_second(monkeypatch)
    made = checkpoints.create(store, git=journal.GitInBackground(store.root))
    assert made["source"] == "git", made
    assert _files(store, made["id"])[path.name] == b"mode=BBBB\n"


def test_a_same_second_edit_is_undone_by_a_rollback_and_saved_first(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = _git_project(store)
    target, path = _edit_within_the_second_of_gits_look(store, "settings")
    _after_that_second(monkeypatch)
    plan = checkpoints.plan_rollback(store, target, git=journal.GitInBackground(root))
    assert [write.path for write in plan.writes] == [path.name]
    undo = checkpoints.prepare_undo(store, plan)
    checkpoints.apply_plan(store, plan, undo_checkpoint=undo["id"])
    assert path.read_bytes() == b"mode=AAAA\n"
    assert _files(store, undo["id"])[path.name] == b"mode=BBBB\n"


# -- the rollback's records after its answer ----------------------------------------------------


def _project(root: Path, initialised_store: Path) -> str:
    """A project in an agent's session with a checkpoint and three edits since: the id of the
    checkpoint."""
    from memory_core import sessions
    from tests.conftest import put_initialised_store

    root.mkdir()
    put_initialised_store(initialised_store, root)
    with Store.open(root) as store:
        config.set_value(root, "checkpoints.watchman", False)
        sessions.start(store, session_id="agent-session", agent="claude-code")
        for n in range(3):
            _write(root, f"src/mod{n}.py", f"VERSION = {n}\n")
        made = checkpoints.create(store, "before")
    for n in range(3):
        _write(root, f"src/mod{n}.py", f"VERSION = {n}  # edited\n")
    _write(root, "notes.txt", "made after the checkpoint\n")
    return str(made["id"])


def _rollback(root: Path, target: str, capsys: pytest.CaptureFixture[str]) -> dict[str, Any]:
    code = engram(["--workspace", str(root), "rollback", target, "--yes", "--json"])
    assert code == 0
    return dict(json.loads(capsys.readouterr().out))


def _records(root: Path) -> tuple[list[dict[str, Any]], list[str], list[str]]:
    """The rollback's events (their data), the session's tool calls and its files."""
    with Store.open(root) as store:
        rolled = [
            json.loads(row[0])
            for row in store.query("SELECT data FROM events WHERE kind = 'checkpoint.rollback'")
        ]
        calls = [str(r[0]) for r in store.query("SELECT tool FROM session_tool_calls")]
        files = [str(r[0]) for r in store.query("SELECT path FROM session_files ORDER BY path")]
    return rolled, calls, files


def _without_ids(answer: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in answer.items() if k not in ("checkpoint", "undo_checkpoint")}


def test_a_rollback_that_answers_first_records_after_its_answer_what_a_cold_one_does(
    tmp_path: Path, initialised_store: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cold, first = tmp_path / "cold", tmp_path / "answer-first"
    cold_target, first_target = (
        _project(cold, initialised_store),
        _project(first, initialised_store),
    )
    cold_answer = _rollback(cold, cold_target, capsys)

    store_module.defer_closing()  # what the resident child does before it runs the command
    try:
        answer = _rollback(first, first_target, capsys)
        # Answered: every file is back and the undo is committed; the records are still to come.
        assert (first / "src/mod1.py").read_text() == "VERSION = 1\n"
        assert not (first / "notes.txt").exists()
        with Store.open(first) as store:
            undo = _files(store, answer["undo_checkpoint"])
        assert undo["notes.txt"] == b"made after the checkpoint\n"
        assert _records(first) == ([], [], [])
    finally:
        store_module.close_deferred()  # the child, once its client has the exit code

    assert _without_ids(answer) == _without_ids(cold_answer)
    rolled, calls, files = _records(first)
    cold_rolled, cold_calls, cold_files = _records(cold)
    assert [_without_ids(event) for event in rolled] == [_without_ids(e) for e in cold_rolled]
    assert rolled[0]["undo_checkpoint"] == answer["undo_checkpoint"]
    assert calls == cold_calls == ["rollback"]
    assert files == cold_files == ["notes.txt", "src/mod0.py", "src/mod1.py", "src/mod2.py"]


def test_a_rollback_whose_records_never_come_loses_no_byte(
    tmp_path: Path, initialised_store: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The child killed between its answer and its records: only the records are missing; the
    rollback is done and its undo brings back every byte."""
    root = tmp_path / "project"
    target = _project(root, initialised_store)
    edited = {rel: (root / rel).read_bytes() for rel in ("src/mod0.py", "notes.txt")}
    store_module.defer_closing()
    try:
        answer = _rollback(root, target, capsys)
    finally:
        store_module._later.clear()  # (killed: the work after the answer never runs)
        store_module.close_deferred()
    assert _records(root) == ([], [], [])
    assert (root / "src/mod0.py").read_text() == "VERSION = 0\n"
    undone = _rollback(root, answer["undo_checkpoint"], capsys)
    assert undone["done"] and sorted(undone["restored"]) == [
        "notes.txt",
        "src/mod0.py",
        "src/mod1.py",
        "src/mod2.py",
    ]
    assert {rel: (root / rel).read_bytes() for rel in edited} == edited


@pytest.mark.parametrize("answers_first", [False, True], ids=["cold", "answer-first"])
def test_a_rewinding_rollback_keeps_its_own_records(
    tmp_path: Path, initialised_store: Path, capsys: pytest.CaptureFixture[str], answers_first: bool
) -> None:
    """`--rewind` sets aside what the session recorded after the checkpoint's turn: the
    rollback's own tool call and files come after it, cold or after the answer."""
    import subprocess

    from memory_core.agents import hooks
    from tests.agents_fixtures import hook_payload
    from tests.conftest import put_initialised_store

    root, session = tmp_path / "repo", "b7d1c0de-0000-4000-8000-000000000077"
    root.mkdir()
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    put_initialised_store(initialised_store, root)
    config.set_value(root, "checkpoints.every_n_turns", 1)
    config.set_value(root, "checkpoints.watchman", False)
    t0 = time.time() - 600

    def hook(event: str, at: float, **extra: object) -> None:
        code, _ = hooks.handle(
            "claude-code", event, hook_payload(event, session, root, **extra), now=at
        )
        assert code == 0

    hook("SessionStart", t0, source="startup")
    for turn in (1, 2):
        hook("UserPromptSubmit", t0 + turn * 60, prompt=f"do step {turn}")
        (root / "app.py").write_text(f"VERSION = {turn}\n")
        hook("Stop", t0 + turn * 60 + 30, last_assistant_message=f"Finished step {turn}.")
    with Store.open(root) as store:
        target = next(
            c["id"] for c in checkpoints.list_checkpoints(store) if c.get("turn_number") == 1
        )
    if answers_first:
        store_module.defer_closing()
    try:
        code = engram(["--workspace", str(root), "rollback", target, "--yes", "--rewind", "--json"])
        assert code == 0
    finally:
        if answers_first:
            store_module.close_deferred()
    assert json.loads(capsys.readouterr().out)["rewound"]["turn"] == 1
    assert (root / "app.py").read_text() == "VERSION = 1\n"
    with Store.open(root) as store:
        tools = [str(r[0]) for r in store.query("SELECT tool FROM session_tool_calls")]
        files = [str(r[0]) for r in store.query("SELECT path FROM session_files")]
    assert tools.count("rollback") == 1 and "app.py" in files
