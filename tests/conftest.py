"""Fixtures shared by every test: throwaway workspaces and a way to run the real CLI."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from memory_core.store import Store
from memory_core.workspace import STORE_DIRNAME

# No test depends on whether a resident server happens to run, and none may leave one behind:
# every `engram` the suite starts runs its command in process (tests/cli/test_resident.py turns
# the server on with a private socket folder and stops it). Set here, not in a fixture, so
# processes started by fixtures and helpers inherit it too.
os.environ["ENGRAM_NO_RESIDENT"] = "1"
# Likewise a cold hook records its event before it exits (not in a fork of itself after its
# answer, memory_core/cli/fast_hook.py), so that a test reading the store right after a hook
# sees it without waiting; tests/cli/test_hook_fork.py turns the fork on.
os.environ["ENGRAM_NO_HOOK_FORK"] = "1"


@pytest.fixture(autouse=True)
def _isolated_home(
    tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Never let a test touch the real home (Claude settings, transcripts, a stray store).
    home = tmp_path_factory.mktemp("home")
    monkeypatch.setenv("HOME", str(home))


@pytest.fixture(autouse=True)
def _watchman_forgets_test_folders(tmp_path: Path) -> Iterator[None]:
    """Where watchman is installed, every checkpoint asks it to watch the project; a test's
    project is gone after the test, but watchman keeps one inotify instance per watched folder,
    and at the system's limit (128) the server's own watchers can no longer start."""
    yield
    from memory_core import journal

    if journal.watchman_socket() is None and not shutil.which("watchman"):
        return
    listed = journal._watchman(["watch-list"]) or {}
    for root in listed.get("roots", []):
        if str(root).startswith(str(tmp_path)):
            journal._watchman(["watch-del", root])


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    """An empty project folder (not a git repository)."""
    root = tmp_path / "project"
    root.mkdir()
    return root.resolve()


@pytest.fixture(scope="session")
def initialised_store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """`.engram/` as `Store.init` leaves it in a new project (every migration applied, the log
    folded), made once per run: a test's copy costs a few milliseconds where applying the
    migrations again costs a tenth of a second, and half a second on a busy machine."""
    root = tmp_path_factory.mktemp("initialised-store")
    Store.init(root).close()
    return root / STORE_DIRNAME


def put_initialised_store(template: Path, root: Path) -> None:
    """A new project's store in `root`, copied from `initialised_store` (modes kept: the
    folders 0700, the files 0600, as `Store.init` makes them). Where `.engram/` is there
    already, nothing is copied: `Store.init` makes or opens what it finds, as it always did."""
    if not (root / STORE_DIRNAME).exists():
        shutil.copytree(template, root / STORE_DIRNAME)


@pytest.fixture
def store(workspace: Path, initialised_store: Path) -> Iterator[Store]:
    put_initialised_store(initialised_store, workspace)
    opened = Store.init(workspace)
    yield opened
    opened.close()


@dataclass
class CliResult:
    code: int
    stdout: str
    stderr: str

    def json(self) -> Any:
        return json.loads(self.stdout)


# How run_cli runs engram: "in-process" (the default, tests/engram_in_process.py) or
# "process" (every command in a process of its own, as before: a check that both agree).
CLI_MODE_VARIABLE = "ENGRAM_TESTS_CLI"


def run_cli(
    *args: str, cwd: Path | None = None, stdin: str | None = None, env: dict[str, str] | None = None
) -> CliResult:
    """Run the `engram` command as a user would: its exit status, stdout and stderr.

    In this process, the way a process of its own would run it (tests/engram_in_process.py),
    which is faster and lets mutation testing see the code run; in a real process where only
    one is faithful (the stdio servers, an environment that changes Python's start) or when
    ENGRAM_TESTS_CLI=process."""
    from tests.engram_in_process import needs_a_process, run_in_process

    if os.environ.get(CLI_MODE_VARIABLE) == "process" or needs_a_process(args, env):
        return run_cli_process(*args, cwd=cwd, stdin=stdin, env=env)
    return CliResult(*run_in_process(args, cwd=cwd, stdin=stdin, env=env))


def run_cli_process(
    *args: str, cwd: Path | None = None, stdin: str | None = None, env: dict[str, str] | None = None
) -> CliResult:
    """Run the real `engram` command in a fresh process: for what only a process shows."""
    completed = subprocess.run(
        [sys.executable, "-m", "memory_core", *args],
        cwd=cwd,
        input=stdin,
        capture_output=True,
        text=True,
        env={**os.environ, **(env or {})},
        timeout=120,
    )
    return CliResult(completed.returncode, completed.stdout, completed.stderr)


GIT_IDENTITY = {
    "GIT_AUTHOR_NAME": "engram tests",
    "GIT_AUTHOR_EMAIL": "tests@engram.invalid",
    "GIT_COMMITTER_NAME": "engram tests",
    "GIT_COMMITTER_EMAIL": "tests@engram.invalid",
}


def write_file(
    root: Path, rel: str, data: bytes | str, age: float = 60.0, *, mode: int | None = None
) -> Path:
    """Write a workspace file (folders made) dated `age` seconds ago: files a test wrote just
    now would be racy to a stat cache (git's and engram's) and read again."""
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data.encode() if isinstance(data, str) else data)
    if mode is not None:
        os.chmod(path, mode)
    past = time.time() - age
    os.utime(path, (past, past))
    return path


def count_file_reads(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The workspace files a checkpoint reads from now on, in order (relative paths): a file
    whose stat says it is unchanged must cost no read, and that is checked by counting."""
    from memory_core.checkpoints import build

    reads: list[str] = []
    real_read = build.read_file

    def counting(top: Path, rel: str, kind: str) -> bytes:
        reads.append(rel)
        return real_read(top, rel, kind)

    monkeypatch.setattr(build, "read_file", counting)
    return reads


def git(root: Path, *args: str) -> str:
    """Run git in `root` with a fixed identity (tests never read the user's git config)."""
    return subprocess.run(
        ["git", "-C", str(root), *args],
        check=True,
        capture_output=True,
        text=True,
        env={**os.environ, **GIT_IDENTITY},
    ).stdout


@pytest.fixture
def cli() -> Any:
    return run_cli
