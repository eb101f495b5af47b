"""Hooks never block the agent: with another process holding the store's write lock, a hook
gives up after its budget and keeps its event in the spool, which the next hook folds in; on a
read-only store it says so once and keeps the events until the store can be written. Real
processes, a real SQLite lock."""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from memory_core import config
from tests.agents_fixtures import hook_payload


@pytest.fixture
def repo(workspace: Path) -> Path:
    subprocess.run(["git", "init", "-q", str(workspace)], check=True)
    return workspace


def _hook(
    repo: Path, n: int, env: dict[str, str] | None = None, prefix: list[str] | None = None
) -> subprocess.CompletedProcess[bytes]:
    payload = hook_payload(
        "PostToolUse",
        "S-spool",
        repo,
        tool_name="Bash",
        tool_use_id=f"toolu_{n}",
        tool_input={"command": f"echo {n}"},
        tool_response={"stdout": str(n), "stderr": "", "interrupted": False, "isImage": False},
    )
    return subprocess.run(
        [
            *(prefix or []),
            sys.executable,
            "-m",
            "memory_core",
            "hook",
            "claude-code",
            "PostToolUse",
        ],
        input=payload.encode(),
        capture_output=True,
        cwd=repo,
        env={**os.environ, **(env or {})},
        timeout=120,
        check=False,
    )


def _commands(repo: Path) -> list[str]:
    with sqlite3.connect(repo / ".engram" / "engram.db") as conn:
        rows = conn.execute(
            "SELECT command FROM session_commands WHERE session_id = 'S-spool' ORDER BY rowid"
        ).fetchall()
    return [str(row[0]) for row in rows]


def test_a_hook_gives_up_on_a_locked_store_and_the_next_one_folds_its_event_in(
    repo: Path,
) -> None:
    assert _hook(repo, 0).returncode == 0  # the store exists
    config.set_value(repo, "agents.hook_wait_seconds", 0.3)
    holder = sqlite3.connect(repo / ".engram" / "engram.db", isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")  # another process's long write
    try:
        done = _hook(repo, 1)
        # It returned while the lock was still held: it did not wait for it.
        assert holder.in_transaction
        assert done.returncode == 0 and done.stdout == b""
        spooled = list((repo / ".engram" / "spool").glob("*.event"))
        assert len(spooled) == 1
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    assert _commands(repo) == ["echo 0"]
    assert _hook(repo, 2).returncode == 0
    assert _commands(repo) == ["echo 0", "echo 1", "echo 2"]  # in order, nothing lost or doubled
    assert not list((repo / ".engram" / "spool").glob("*.event"))


def test_a_read_only_store_is_reported_once_and_its_events_kept_until_it_is_writable() -> None:
    """Root writes a read-only store anyway: as root, the hooks run as `nobody` (setpriv) over
    a project `nobody` owns; as anyone else, as themselves."""
    import shutil
    import tempfile

    prefix: list[str] = []
    if os.geteuid() == 0:
        if shutil.which("setpriv") is None:
            pytest.skip("running as root without setpriv: cannot make the store read-only")
        prefix = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"]
    top = Path(tempfile.mkdtemp(prefix="engram-spool-")).resolve()
    try:
        repo = top / "project"
        repo.mkdir()
        subprocess.run(["git", "init", "-q", str(repo)], check=True)
        if prefix:
            subprocess.run(["chown", "-R", "65534:65534", str(top)], check=True)
        env = {
            "HOME": str(top),
            "XDG_CACHE_HOME": str(top / "cache"),
            "PYTHONPATH": str(Path(__file__).parents[2]),
            "ENGRAM_NO_RESIDENT": "1",  # no resident server left behind (docs/resident.md)
            "ENGRAM_NO_HOOK_FORK": "1",  # a hook records before it exits (docs/resident.md)
        }

        def hook(n: int) -> subprocess.CompletedProcess[bytes]:
            return _hook(repo, n, env, prefix)

        assert hook(0).returncode == 0
        store_dir = repo / ".engram"
        files = [store_dir, *store_dir.iterdir()]
        for path in files:
            os.chmod(path, 0o500 if path.is_dir() else 0o400)
        try:
            first, second = hook(1), hook(2)
        finally:
            for path in files:
                os.chmod(path, 0o700 if path.is_dir() else 0o600)
        assert first.returncode == second.returncode == 0
        assert b"read-only" in first.stderr, first.stderr
        assert second.stderr == b""  # said once
        assert hook(3).returncode == 0
        assert _commands(repo) == ["echo 0", "echo 1", "echo 2", "echo 3"]
    finally:
        shutil.rmtree(top, ignore_errors=True)


def test_hooks_folding_the_spool_at_once_record_each_event_once(repo: Path) -> None:
    assert _hook(repo, 0).returncode == 0
    config.set_value(repo, "agents.hook_wait_seconds", 0.2)
    holder = sqlite3.connect(repo / ".engram" / "engram.db", isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")
    try:
        for n in range(1, 6):
            assert _hook(repo, n).returncode == 0
        assert len(list((repo / ".engram" / "spool").glob("*.event"))) == 5
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    config.set_value(repo, "agents.hook_wait_seconds", 10.0)
    procs = [
        subprocess.Popen(
            [sys.executable, "-m", "memory_core", "hook", "claude-code", "PostToolUse"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            cwd=repo,
        )
        for _ in range(4)
    ]
    for n, proc in enumerate(procs, start=6):
        payload = hook_payload(
            "PostToolUse",
            "S-spool",
            repo,
            tool_name="Bash",
            tool_use_id=f"toolu_{n}",
            tool_input={"command": f"echo {n}"},
            tool_response={"stdout": str(n), "stderr": "", "interrupted": False, "isImage": False},
        )
        assert proc.stdin is not None
        proc.stdin.write(payload.encode())
    for proc in procs:  # all four read their payload at once, then race to fold the spool
        assert proc.stdin is not None
        proc.stdin.close()
    for proc in procs:
        assert proc.wait(timeout=120) == 0
    recorded = _commands(repo)
    assert sorted(recorded) == sorted(f"echo {n}" for n in range(10)), recorded


def test_the_language_servers_fold_records_spooled_events_without_another_hook(
    repo: Path,
) -> None:
    """The server folds the spool now and then (its autosave loop calls this): an event spooled
    at the end of a session is recorded even when no hook comes after it."""
    from memory_core.agents import hooks
    from memory_core.store import Store

    assert _hook(repo, 0).returncode == 0
    config.set_value(repo, "agents.hook_wait_seconds", 0.2)
    holder = sqlite3.connect(repo / ".engram" / "engram.db", isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")
    try:
        assert _hook(repo, 1).returncode == 0
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    assert _commands(repo) == ["echo 0"]
    store = Store.open(repo)
    try:
        assert hooks.fold_spool(store) == 1
    finally:
        store.close()
    assert _commands(repo) == ["echo 0", "echo 1"]
