"""The resident fork server (memory_core/resident.py, docs/resident.md) against cold processes.

The suite runs every `engram` in process (ENGRAM_NO_RESIDENT=1, tests/conftest.py); these tests
turn the server on with a private socket folder, prove that a hook of each agent, a checkpoint, a
rollback and an ingest give the same output, exit codes and store as a cold process, and cover what
can go wrong: a stale socket, a child killed mid-request (never run twice), Ctrl-C at a terminal,
idle exit, changed code. Every server started here is stopped before its test ends.
"""

from __future__ import annotations

import contextlib
import json
import os
import pty
import re
import select
import signal
import socket
import sqlite3
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.bench.bench_hooks import A_SESSION, SESSIONS

# Each agent's session in the order it sends its events (tests/bench/bench_hooks.py's
# `A_SESSION`). The tool call's end, the turn's end, a compaction and the session's end are
# recorded after the child has answered (docs/resident.md): they are here so that the store is
# compared too.
EVENTS = A_SESSION

ENGRAM = [sys.executable, "-m", "memory_core"]


def _env(folder: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "ENGRAM_NO_RESIDENT"}
    # The server's warm-up writes compiled patterns to the user's cache: a module-scoped server
    # starts before the test's own HOME is set, so its cache is given here.
    cache = str(folder.parent / "cache")
    return {**env, "ENGRAM_RESIDENT_DIR": str(folder), "XDG_CACHE_HOME": cache, **extra}


def _engram(
    *args: str, env: dict[str, str], cwd: Path, stdin: bytes | None = None
) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        [*ENGRAM, *args], input=stdin, capture_output=True, env=env, cwd=cwd, timeout=60
    )


def _status(env: dict[str, str]) -> dict[str, object]:
    done = _engram("daemon", "status", "--json", env=env, cwd=Path("/"))
    return json.loads(done.stdout)  # type: ignore[no-any-return]


class Resident:
    """A running server of this checkout in a private folder, and how to reach it."""

    def __init__(self, folder: Path, **extra: str) -> None:
        folder.mkdir(mode=0o700, exist_ok=True)
        self.env = _env(folder, **extra)
        started = _engram("daemon", "start", "--json", env=self.env, cwd=Path("/"))
        assert started.returncode == 0, started.stderr
        self.pid = json.loads(started.stdout)["pid"]

    def requests(self) -> int:
        return int(_status(self.env)["requests"])  # type: ignore[call-overload]

    def stop(self) -> None:
        _engram("daemon", "stop", env=self.env, cwd=Path("/"))
        assert not _status(self.env)["running"]


@pytest.fixture(scope="module")
def resident(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Resident]:
    """One server for the tests that only use one (its warm-up is a second or two)."""
    server = Resident(tmp_path_factory.mktemp("resident") / "sockets")
    yield server
    server.stop()


def _no_restart(server: Resident) -> None:
    """A cold run starts a server for the next command unless one was tried a moment ago."""
    status = _status(server.env)
    Path(str(status["socket"])).with_suffix(".spawned").touch()


def _project(root: Path) -> Path:
    root.mkdir(parents=True)
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    (root / "app.py").write_text("print('hello')\n")
    env = {**os.environ, "ENGRAM_NO_RESIDENT": "1"}
    subprocess.run([*ENGRAM, "init"], cwd=root, env=env, capture_output=True, check=True)
    return root


def _store_rows(root: Path) -> dict[str, int]:
    """Rows per table of a workspace's store: what the commands recorded."""
    with sqlite3.connect(root / ".engram" / "engram.db") as conn:
        tables = [
            name
            for (name,) in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")
            if not name.startswith("sqlite_") and "_fts" not in name and name != "store_meta"
        ]
        return {
            table: conn.execute(f'SELECT count(*) FROM "{table}"').fetchone()[0] for table in tables
        }


def _what_sessions_hold(root: Path) -> list[tuple[object, ...]]:
    """Each agent session's end and digests, and each session's status: what the events
    recorded after the answer decide (their times differ between two runs)."""
    with contextlib.closing(sqlite3.connect(root / ".engram" / "engram.db")) as conn:
        return conn.execute(
            "SELECT a.session_id, a.ended_at IS NULL, a.end_reason, a.compactions, "
            "(SELECT group_concat(d.trigger) FROM digests d WHERE d.session_id = a.session_id), "
            "(SELECT count(*) FROM agent_tool_uses t WHERE t.session_id = a.session_id), "
            "s.status FROM agent_sessions a LEFT JOIN sessions s ON s.id = a.session_id "
            "ORDER BY a.session_id"
        ).fetchall()


def _same_text(root: Path, data: bytes) -> bytes:
    """Output with what differs between two runs a few seconds apart (the folder, the times
    of the earlier session) put in words."""
    data = data.replace(os.fsencode(root.parent), b"<top>")
    return re.sub(rb"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z", b"<time>", data)


def _log_folded(root: Path, within: float = 10.0) -> bool:
    """Whether the store's write-ahead log is gone (its last connection closed), waiting up to
    `within` seconds for children that answered their client and are closing."""
    wal = root / ".engram" / "engram.db-wal"
    deadline = time.monotonic() + within
    while wal.exists():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.01)
    return True


def _unfinished_codex_session(root: Path, at: float) -> None:
    """A Codex session (Codex reports no end) left mid-task at `at`: the next session start
    settles it and rewrites its vault note (after the answer, through the server)."""
    from memory_core.agents import hooks

    for event, fields in (("SessionStart", {}), ("UserPromptSubmit", {"prompt": "migrate it"})):
        data = {"session_id": "s-earlier", "cwd": str(root), "hook_event_name": event, **fields}
        assert hooks.handle("codex", event, json.dumps(data), now=at)[0] == 0


def _notes(root: Path) -> dict[str, bytes]:
    folder = root / ".engram" / "exports" / "sessions"
    return {path.name: _same_text(root, path.read_bytes()) for path in folder.glob("*.md")}


def test_hooks_of_every_agent_give_the_same_output_codes_and_store_as_cold(
    tmp_path: Path, resident: Resident
) -> None:
    cold_env = {**os.environ, "ENGRAM_NO_RESIDENT": "1"}
    runs = {}
    before = resident.requests()
    earlier = float(int(time.time()) - 3 * 3600)  # the same in both workspaces
    for label, env in (("cold", cold_env), ("resident", resident.env)):
        root = _project(tmp_path / label / "project")
        _unfinished_codex_session(root, earlier)
        outputs = []
        for agent, events in EVENTS.items():
            session = SESSIONS[agent](root, f"s-{agent}")
            for event in events:
                data = json.dumps(session.payload(event)).encode()
                done = _engram("hook", agent, event, env=env, cwd=root, stdin=data)
                outputs.append(
                    (agent, event, done.returncode, _same_text(root, done.stdout), done.stderr)
                )
        # The resident child answers first and closes the store after (its write-ahead log
        # folded then, as a cold process folds it at its exit): once every child is gone,
        # the log is folded and removed either way.
        assert _log_folded(root), label
        runs[label] = (outputs, _store_rows(root), _what_sessions_hold(root), _notes(root))
    hooks = sum(len(events) for events in EVENTS.values())
    assert resident.requests() == before + hooks  # every resident hook ran in the server
    cold_outputs, cold_rows, cold_sessions, cold_notes = runs["cold"]
    resident_outputs, resident_rows, resident_sessions, resident_notes = runs["resident"]
    for cold, warm in zip(cold_outputs, resident_outputs, strict=True):
        assert warm[:3] == cold[:3], (cold, warm)
        assert warm[3] == cold[3], (cold, warm)  # what the agent reads on stdout
        assert warm[4] == cold[4] == b""
    assert resident_rows == cold_rows
    assert resident_rows["session_tool_calls"] > 0 and resident_rows["sessions"] == 4
    assert resident_sessions == cold_sessions
    # Claude's and Gemini's ended by their SessionEnd, the earlier Codex session settled
    assert [row[1] for row in resident_sessions].count(0) == 3
    assert not list((tmp_path / "resident" / "project" / ".engram" / "spool").glob("*"))
    # The earlier session, settled by the first session start: its note, written after the
    # answer by the resident child (before its store closed), is the cold process's.
    settled = next(name for name in cold_notes if name.endswith("_s-earlier.md"))
    assert b'status: "closed"' in cold_notes[settled]
    assert resident_notes[settled] == cold_notes[settled]
    assert resident_notes.keys() == cold_notes.keys()  # (the others hold real durations)


def _checkpoint_flow(root: Path, env: dict[str, str]) -> list[tuple[int, object]]:
    """create, change, create, rollback, list: each (exit code, JSON without ids and times)."""

    def run(*args: str) -> tuple[int, object]:
        done = _engram(*args, "--json", env=env, cwd=root)
        value = json.loads(done.stdout)
        if isinstance(value, dict):
            value = {
                k: v
                for k, v in value.items()
                if k not in ("id", "created_at", "undo_checkpoint", "checkpoint")
            }
        return done.returncode, value

    first = json.loads(_engram("checkpoint", "create", "base", "--json", env=env, cwd=root).stdout)
    (root / "app.py").write_text("print('changed')\n")
    (root / "new.py").write_text("x = 1\n")
    results = [run("checkpoint", "create", "second")]
    results.append(run("rollback", first["id"], "--yes"))
    assert (root / "app.py").read_text() == "print('hello')\n" and not (root / "new.py").exists()
    results.append(run("rollback", "C-nonexistent", "--yes"))
    listed = json.loads(_engram("checkpoint", "list", "--json", env=env, cwd=root).stdout)
    results.append((0, [(c["name"], c["files"], c["reason"]) for c in listed["checkpoints"]]))
    # The server's children parse with a parser built before they forked: a mistake and a
    # request for help read as from a parser built for them.
    for words in (("checkpoint", "create", "--no-such-option"), ("rollback", "--help")):
        done = _engram(*words, env={**env, "COLUMNS": "60"}, cwd=root)
        results.append((done.returncode, (done.stdout.decode(), done.stderr.decode())))
    return results


def test_checkpoint_and_rollback_resident_match_cold(tmp_path: Path, resident: Resident) -> None:
    cold_env = {**os.environ, "ENGRAM_NO_RESIDENT": "1"}
    cold = _checkpoint_flow(_project(tmp_path / "cold" / "project"), cold_env)
    before = resident.requests()
    warm = _checkpoint_flow(_project(tmp_path / "warm" / "project"), resident.env)
    assert resident.requests() == before + 7
    assert warm == cold
    assert cold[2][0] != 0  # the unknown checkpoint's exit code made it through
    assert cold[-2][0] == 2 and "--no-such-option" in str(cold[-2][1])
    assert cold[-1][0] == 0 and "usage: engram rollback" in str(cold[-1][1])


def _ingest_file_by_file(root: Path, files: list[Path], env: dict[str, str]) -> list[object]:
    """`engram ingest claude-code FILE --json` per file, then a mistake: each (exit code, output
    without its times), and what the store holds."""
    results: list[object] = []
    for path in files:
        done = _engram("ingest", "claude-code", str(path), "--json", env=env, cwd=root)
        results.append((done.returncode, done.stderr, json.loads(done.stdout)))
    wrong = _engram("ingest", "claude-code", str(root / "missing.jsonl"), env=env, cwd=root)
    results.append((wrong.returncode, wrong.stdout, wrong.stderr.replace(str(root).encode(), b"")))
    return [*results, _store_rows(root), _what_sessions_hold(root)]


def test_ingest_file_by_file_resident_matches_cold(tmp_path: Path, resident: Resident) -> None:
    from tests.agents_fixtures import real_shaped_session

    transcripts = tmp_path / "transcripts"
    files = real_shaped_session(tmp_path / "elsewhere", tmp_path / "elsewhere", transcripts)
    assert len(files) == 3  # the session and its two subagents' files
    cold_env = {**os.environ, "ENGRAM_NO_RESIDENT": "1"}
    cold = _ingest_file_by_file(_project(tmp_path / "cold" / "project"), files, cold_env)
    before = resident.requests()
    warm = _ingest_file_by_file(_project(tmp_path / "warm" / "project"), files, resident.env)
    assert resident.requests() == before + len(files) + 1
    assert warm == cold
    assert cold[0][0] == 0 and cold[0][2]["turns"] > 0  # type: ignore[index]
    assert cold[len(files)][0] != 0 and b"missing.jsonl" in cold[len(files)][2]  # type: ignore[index]


def test_a_stale_socket_falls_back_to_a_cold_run_once(tmp_path: Path) -> None:
    folder = tmp_path / "stale"
    folder.mkdir(mode=0o700)
    env = _env(folder)
    # A socket file nobody listens on (a server killed with SIGKILL leaves one).
    socket_path = _status(env)["socket"]
    dead = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    dead.bind(str(socket_path))
    dead.close()
    root = _project(tmp_path / "project")
    try:
        done = _engram("checkpoint", "create", "once", "--json", env=env, cwd=root)
        assert done.returncode == 0, done.stderr
        listed = json.loads(_engram("checkpoint", "list", "--json", env=env, cwd=root).stdout)
        assert [c["name"] for c in listed["checkpoints"]] == ["once"]
    finally:
        # The cold run started a server for the next command; it must not outlive the test.
        deadline = time.monotonic() + 15
        while not _status(env)["running"] and time.monotonic() < deadline:
            time.sleep(0.05)
        _engram("daemon", "stop", env=env, cwd=Path("/"))
    assert not _status(env)["running"]


def _children(pid: int) -> list[int]:
    listed = subprocess.run(
        ["ps", "-o", "pid=", "--ppid", str(pid)], capture_output=True, text=True
    )
    return [int(word) for word in listed.stdout.split()]


def test_two_agents_at_once_are_two_children(tmp_path: Path, resident: Resident) -> None:
    root = _project(tmp_path / "project")
    payloads = []
    for n in range(4):
        session = SESSIONS["claude-code"](root, f"s-at-once-{n}")
        session.payload("SessionStart")
        payloads.append(json.dumps(session.payload("UserPromptSubmit")).encode())
    before = resident.requests()
    clients = [
        subprocess.Popen(
            [*ENGRAM, "hook", "claude-code", "UserPromptSubmit"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=resident.env,
            cwd=root,
        )
        for _ in payloads
    ]
    # Fed last first: a server that ran one request at a time would wait on the first child,
    # which waits for a payload that comes last (and the clients would then run cold).
    for client, payload in reversed(list(zip(clients, payloads, strict=True))):
        assert client.stdin is not None
        client.stdin.write(payload)
        client.stdin.close()
    results = [(client.wait(timeout=60), client.stderr.read()) for client in clients]  # type: ignore[union-attr]
    assert [client.returncode for client in clients] == [0, 0, 0, 0]
    assert all(err == b"" for _, err in results)
    assert resident.requests() == before + 4
    with sqlite3.connect(root / ".engram" / "engram.db") as conn:
        prompts = conn.execute("SELECT count(*) FROM agent_prompts").fetchone()[0]
    assert prompts == 4


@pytest.mark.skipif(not Path("/proc/self/fd").exists(), reason="reads /proc")
def test_a_child_killed_mid_request_is_not_run_again(tmp_path: Path, resident: Resident) -> None:
    root = _project(tmp_path / "project")
    session = SESSIONS["claude-code"](root, "s-killed")
    session.payload("SessionStart")
    payload = json.dumps(session.payload("UserPromptSubmit")).encode()
    client = subprocess.Popen(
        [*ENGRAM, "hook", "claude-code", "UserPromptSubmit"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=resident.env,
        cwd=root,
    )
    assert client.stdin is not None
    client.stdin.write(payload[:10])  # the hook's child is now reading the rest of its payload
    client.stdin.flush()
    # The child has been told to go once it has taken the client's stdin (the same pipe).
    client_stdin = os.readlink(f"/proc/{client.pid}/fd/0")
    deadline = time.monotonic() + 15
    child = None
    while child is None and time.monotonic() < deadline:
        for pid in _children(resident.pid):
            with contextlib.suppress(OSError):
                if os.readlink(f"/proc/{pid}/fd/0") == client_stdin:
                    child = pid
        time.sleep(0.02)
    assert child is not None, (client_stdin, _children(resident.pid), client.poll(), resident.pid)
    os.kill(child, signal.SIGKILL)
    client.stdin.write(payload[10:])
    client.stdin.close()
    assert client.wait(timeout=30) == 0  # a hook never fails the agent
    assert client.stderr is not None
    err = client.stderr.read()
    assert b"ended before the command finished" in err, (
        err,
        client.stdout.read() if client.stdout else None,
        child,
    )
    with sqlite3.connect(root / ".engram" / "engram.db") as conn:
        prompts = conn.execute("SELECT count(*) FROM agent_prompts").fetchone()[0]
    assert prompts == 0  # the prompt was not recorded by a second, cold run


def test_a_session_at_its_quota_is_told_so_through_the_server_as_cold(
    tmp_path: Path, resident: Resident
) -> None:
    """The end of a turn is recorded after the answer only when the quota will say nothing:
    a session at its quota still reads the refusal in the hook's answer, as cold."""
    cold_env = {**os.environ, "ENGRAM_NO_RESIDENT": "1"}
    answers = {}
    for label, env in (("cold", cold_env), ("warm", resident.env)):
        root = _project(tmp_path / label / "project")
        done = _engram("config", "set", "sessions.quota_bytes", "2500", env=cold_env, cwd=root)
        assert done.returncode == 0, done.stderr
        session = SESSIONS["claude-code"](root, "s-full")
        answers[label] = [
            _engram(
                "hook", "claude-code", event, env=env, cwd=root, stdin=json.dumps(payload).encode()
            ).stdout
            for event in (
                "SessionStart",
                "UserPromptSubmit",
                "PostToolUse",
                "PostToolUseFailure",
                "Stop",
            )
            for payload in [session.payload(event)]
        ][1:]
    # (The session's size differs by a few bytes between two runs: ids hold the time.)
    sized = re.compile(rb"take it to [\d,]+ bytes")
    assert [sized.sub(b"<size>", out) for out in answers["warm"]] == [
        sized.sub(b"<size>", out) for out in answers["cold"]
    ]
    assert b"MEM_E001" in answers["warm"][-1]


def _ended_at(root: Path, session_id: str) -> object:
    # Closed at once: a connection left to the collector would keep the log from being folded.
    with contextlib.closing(sqlite3.connect(root / ".engram" / "engram.db")) as conn:
        row = conn.execute(
            "SELECT ended_at FROM agent_sessions WHERE session_id = ?", (session_id,)
        ).fetchone()
    return row[0] if row else None


def _child_in(server: Resident, root: Path) -> int:
    """The server's child working in `root` (a child takes its client's folder)."""
    deadline = time.monotonic() + 15
    while time.monotonic() < deadline:
        for pid in _children(server.pid):
            with contextlib.suppress(OSError):
                if os.readlink(f"/proc/{pid}/cwd") == str(root):
                    return pid
        time.sleep(0.01)
    raise AssertionError(f"no child of {server.pid} works in {root}")


def _session_until_its_end(root: Path, name: str, env: dict[str, str]) -> bytes:
    """A Claude Code session run through its turn; the payload of its SessionEnd. The hooks
    of this store wait 10 s for a busy store (not 2) before they spool: the tests below hold
    its write lock while a child records, and a loaded machine must not make it spool."""
    cold_env = {**os.environ, "ENGRAM_NO_RESIDENT": "1"}
    done = _engram("config", "set", "agents.hook_wait_seconds", "10", env=cold_env, cwd=root)
    assert done.returncode == 0, done.stderr
    session = SESSIONS["claude-code"](root, name)
    for event in ("SessionStart", "UserPromptSubmit", "PostToolUse", "Stop"):
        data = json.dumps(session.payload(event)).encode()
        assert _engram("hook", "claude-code", event, env=env, cwd=root, stdin=data).returncode == 0
    return json.dumps(session.payload("SessionEnd")).encode()


@pytest.mark.skipif(not Path("/proc/self/fd").exists(), reason="reads /proc")
def test_the_next_reader_waits_for_what_a_child_records_after_its_answer(
    tmp_path: Path, resident: Resident
) -> None:
    """A session's end is recorded after the agent has its answer; whatever opens the store
    next (the agent's next hook, the user's command) reads it recorded, not half-way."""
    from memory_core.store import Store

    root = _project(tmp_path / "project")
    end = _session_until_its_end(root, "s-waited-for", resident.env)
    assert _log_folded(root)
    # Another writer holds the store: the child answers, then waits for it to record the end.
    holder = sqlite3.connect(root / ".engram" / "engram.db", isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")
    try:
        done = _engram("hook", "claude-code", "SessionEnd", env=resident.env, cwd=root, stdin=end)
        assert (done.returncode, done.stdout, done.stderr) == (0, b"", b"")
        assert _ended_at(root, "s-waited-for") is None  # answered before it was recorded
        opened: list[object] = []
        reader = threading.Thread(
            target=lambda: opened.append(_open_and_read_end(Store, root, "s-waited-for"))
        )
        reader.start()
        reader.join(0.3)
        assert reader.is_alive(), opened  # the reader waits for the child's work...
    finally:
        holder.execute("COMMIT")
        holder.close()
    reader.join(30)
    assert opened and opened[0] is not None  # ...and reads the session ended
    assert not list((root / ".engram" / "spool").glob("*"))


def test_the_next_hook_arriving_while_a_child_records_sees_the_session_ended(
    tmp_path: Path, resident: Resident
) -> None:
    """The agent's next session starts while the child of the last one's SessionEnd still
    records it: the new session's context tells the last one as ended, as after a cold run.
    (The reader test above is the one that fails deterministically without the lock; here
    both children then wait for the same write lock, and without it either may get it first.)"""
    root = _project(tmp_path / "project")
    end = _session_until_its_end(root, "s-last", resident.env)
    assert _log_folded(root)
    holder = sqlite3.connect(root / ".engram" / "engram.db", isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")
    try:
        done = _engram("hook", "claude-code", "SessionEnd", env=resident.env, cwd=root, stdin=end)
        assert done.returncode == 0
        start = json.dumps(SESSIONS["claude-code"](root, "s-new").payload("SessionStart"))
        client = subprocess.Popen(
            [*ENGRAM, "hook", "claude-code", "SessionStart"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=resident.env,
            cwd=root,
        )
        assert client.stdin is not None
        client.stdin.write(start.encode())
        client.stdin.close()
        time.sleep(0.5)  # the new session's hook is waiting by now
        assert client.poll() is None
    finally:
        holder.execute("COMMIT")
        holder.close()
    assert client.wait(timeout=60) == 0
    assert client.stdout is not None and client.stderr is not None
    assert client.stderr.read() == b""
    out = client.stdout.read()
    assert b"s-last (claude-code, 1 turns, ended " in out, out


def _open_and_read_end(store_class: Any, root: Path, session_id: str) -> object:
    store = store_class.open(root)
    try:
        row = store.query_one(
            "SELECT ended_at FROM agent_sessions WHERE session_id = ?", (session_id,)
        )
        return row[0] if row else None
    finally:
        store.close()


@pytest.mark.skipif(not Path("/proc/self/fd").exists(), reason="reads /proc")
def test_a_child_killed_after_its_answer_loses_nothing(tmp_path: Path, resident: Resident) -> None:
    root = _project(tmp_path / "project")
    end = _session_until_its_end(root, "s-killed-after", resident.env)
    assert _log_folded(root)
    holder = sqlite3.connect(root / ".engram" / "engram.db", isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")
    try:
        done = _engram("hook", "claude-code", "SessionEnd", env=resident.env, cwd=root, stdin=end)
        assert done.returncode == 0
        child = _child_in(resident, root)
        os.kill(child, signal.SIGKILL)  # answered, and gone before it recorded anything
        with contextlib.suppress(ChildProcessError, OSError):
            deadline = time.monotonic() + 10
            while time.monotonic() < deadline and Path(f"/proc/{child}").exists():
                time.sleep(0.01)
    finally:
        holder.execute("COMMIT")
        holder.close()
    assert _ended_at(root, "s-killed-after") is None
    assert len(list((root / ".engram" / "spool").glob("*.claimed"))) == 1
    # The next hook, of any session, records the acknowledged event before its own.
    other = SESSIONS["claude-code"](root, "s-next")
    data = json.dumps(other.payload("SessionStart")).encode()
    done = _engram("hook", "claude-code", "SessionStart", env=resident.env, cwd=root, stdin=data)
    assert (done.returncode, done.stderr) == (0, b"")
    assert _log_folded(root)
    assert _ended_at(root, "s-killed-after") is not None
    assert not list((root / ".engram" / "spool").glob("*"))


def _as_a_terminal_starts_it() -> None:
    """What an interactive shell gives the command it runs in the foreground: Ctrl-C and Ctrl-\\
    as Python has them by default, even where this test runs ignoring them (a CI job started in
    the background or under nohup, which every process it starts inherits)."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    signal.signal(signal.SIGQUIT, signal.SIG_DFL)


def test_ctrl_c_at_a_terminal_reaches_the_child(tmp_path: Path) -> None:
    # The server is started ignoring Ctrl-C, as one spawned by a background job or a hook would
    # be: its children must not inherit that (the Ctrl-C the client forwards was lost).
    ignored = {s: signal.signal(s, signal.SIG_IGN) for s in (signal.SIGINT, signal.SIGQUIT)}
    try:
        resident = Resident(tmp_path / "sockets")
    finally:
        for signum, handler in ignored.items():
            signal.signal(signum, handler)
    try:
        _ctrl_c_at_a_terminal(tmp_path, resident)
    finally:
        resident.stop()


def _ctrl_c_at_a_terminal(tmp_path: Path, resident: Resident) -> None:
    root = _project(tmp_path / "project")
    created = _engram("checkpoint", "create", "--json", env=resident.env, cwd=root)
    checkpoint = json.loads(created.stdout)["id"]
    (root / "app.py").write_text("print('changed')\n")
    results = {}
    for label, env in (
        ("cold", {**os.environ, "ENGRAM_NO_RESIDENT": "1"}),
        ("resident", resident.env),
    ):
        leader, follower = pty.openpty()
        client = subprocess.Popen(
            [*ENGRAM, "rollback", checkpoint],
            stdin=follower,
            stdout=follower,
            stderr=follower,
            env=env,
            cwd=root,
            preexec_fn=_as_a_terminal_starts_it,
        )
        os.close(follower)
        seen = b""
        deadline = time.monotonic() + 30
        while b"[y/N]" not in seen and time.monotonic() < deadline:
            if select.select([leader], [], [], 0.5)[0]:
                seen += os.read(leader, 4096)
        assert b"[y/N]" in seen, seen  # it asked: the child saw a terminal
        # A SIGINT that lands after the prompt is written but before Python's input() blocks
        # on the terminal is only noticed at the next keystroke (CPython's own race, cold or
        # not): like a person, press Ctrl-C again while the command is still there.
        code = None
        for _ in range(30):
            client.send_signal(signal.SIGINT)
            try:
                code = client.wait(timeout=1)
                break
            except subprocess.TimeoutExpired:
                continue
        while select.select([leader], [], [], 0.2)[0]:
            try:
                seen += os.read(leader, 4096)
            except OSError:
                break
        os.close(leader)
        results[label] = (code, b"interrupted" in seen)
        assert (root / "app.py").read_text() == "print('changed')\n"  # nothing rolled back
    assert results["resident"] == results["cold"] == (130, True)


def _gone(pid: int, within: float = 10.0) -> bool:
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        try:
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            return True
        if state == "Z":
            return True
        time.sleep(0.02)
    return False


def _until_it_waits(pid: int) -> None:
    """Until the spare child reads its channel (it copies its memory first, and a request that
    comes before it is done goes to a child forked for it)."""
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        wchan = Path(f"/proc/{pid}/wchan").read_text()
        if wchan == "0":  # a kernel that does not tell
            time.sleep(1.0)
            return
        if wchan.startswith("unix_stream_read"):
            return
        time.sleep(0.01)


def test_the_server_exits_when_idle(tmp_path: Path) -> None:
    server = Resident(tmp_path / "idle", ENGRAM_RESIDENT_IDLE="0.3")
    # The child it forks ahead of the next request waits with it, and goes with it.
    spares = _children(server.pid) if Path("/proc").is_dir() else []
    deadline = time.monotonic() + 15
    while _status(server.env)["running"] and time.monotonic() < deadline:
        time.sleep(0.05)
    status = _status(server.env)
    assert not status["running"]
    assert not Path(str(status["socket"])).exists()
    assert all(_gone(pid) for pid in spares)


@pytest.mark.skipif(not Path("/proc/self/fd").exists(), reason="reads /proc")
def test_a_child_waits_for_the_next_request_and_leaves_with_the_server(
    tmp_path: Path,
) -> None:
    server = Resident(tmp_path / "sockets")
    try:
        deadline = time.monotonic() + 10
        while not _children(server.pid) and time.monotonic() < deadline:
            time.sleep(0.01)
        (spare,) = _children(server.pid)
        root = _project(tmp_path / "project")
        _until_it_waits(spare)
        session = SESSIONS["claude-code"](root, "s-spare")
        data = json.dumps(session.payload("SessionStart")).encode()
        done = _engram("hook", "claude-code", "SessionStart", env=server.env, cwd=root, stdin=data)
        assert (done.returncode, done.stderr) == (0, b"")
        assert _gone(spare)  # it took the request (a waiting child waits until it gets one)
        assert server.requests() == 1
        deadline = time.monotonic() + 10
        while not _children(server.pid) and time.monotonic() < deadline:
            time.sleep(0.01)
        waiting = _children(server.pid)
        assert waiting and spare not in waiting
    finally:
        server.stop()
    assert all(_gone(pid) for pid in waiting)


def test_changed_code_is_never_run_by_the_old_server(tmp_path: Path) -> None:
    # A folder on the import path stands for the installed packages: installing or removing
    # one changes it.
    packages = tmp_path / "site"
    packages.mkdir()
    server = Resident(tmp_path / "stamp", PYTHONPATH=str(packages))
    _no_restart(server)
    try:
        root = _project(tmp_path / "project")
        before = server.requests()
        (packages / "new_package.py").write_text("")
        done = _engram("checkpoint", "create", "after", "--json", env=server.env, cwd=root)
        assert done.returncode == 0, done.stderr
        listed = json.loads(
            _engram("checkpoint", "list", "--json", env=server.env, cwd=root).stdout
        )
        assert [c["name"] for c in listed["checkpoints"]] == ["after"]  # run once, cold
        deadline = time.monotonic() + 15
        while _status(server.env)["running"] and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not _status(server.env)["running"]  # the old server left
        assert before == 0  # and it served nothing: the request was refused before any fork
    finally:
        server.stop()


def test_the_client_loads_no_socket_enum_or_signal_module(
    resident: Resident, tmp_path: Path
) -> None:
    root = _project(tmp_path / "project")
    probe = (
        "import sys\n"
        "before = set(sys.modules)\n"
        "from memory_core.cli import entry\n"
        "code = entry.main(['checkpoint', 'list', '--json'])\n"
        "loaded = {'socket', 'enum', 'signal', 'selectors', 'argparse', 'sqlite3'} & (set(sys.modules) - before)\n"
        "print(sorted(loaded), file=sys.stderr)\n"
        "sys.exit(code)\n"
    )
    before = resident.requests()
    done = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, env=resident.env, cwd=root, text=True
    )
    assert done.returncode == 0, done.stderr
    assert resident.requests() == before + 1
    assert done.stderr.strip().splitlines()[-1] == "[]"


def test_only_a_private_folder_of_this_user_is_trusted(tmp_path: Path) -> None:
    from memory_core import resident

    private = tmp_path / "private"
    private.mkdir(mode=0o700)
    shared = tmp_path / "shared"
    shared.mkdir(mode=0o755)
    shared.chmod(0o755)
    link = tmp_path / "link"
    link.symlink_to(private)
    assert resident.private_dir_ok(str(private))
    assert not resident.private_dir_ok(str(shared))  # others could connect or listen there
    assert not resident.private_dir_ok(str(link))  # a symlink can be swapped under us
    assert not resident.private_dir_ok(str(tmp_path / "missing"))


def test_which_commands_go_to_the_server() -> None:
    from memory_core.resident import RESIDENT_COMMANDS, command_of

    def sent(*argv: str) -> bool:
        return command_of(argv) in RESIDENT_COMMANDS

    assert sent("hook", "claude-code", "PostToolUse")
    assert sent("--workspace", "/tmp/x", "checkpoint", "create")
    assert sent("--json", "rollback", "C-1", "--yes")
    assert sent("ingest", "claude-code", "session.jsonl")
    assert not sent("lsp")  # a long-running server, not a short command
    assert not sent("daemon", "status")
    assert not sent("--help", "checkpoint")
    assert not sent()


def test_a_request_outlives_its_server_and_runs_once(tmp_path: Path) -> None:
    server = Resident(tmp_path / "dies")
    _no_restart(server)
    root = _project(tmp_path / "project")
    session = SESSIONS["claude-code"](root, "s-server-dies")
    session.payload("SessionStart")
    payload = json.dumps(session.payload("UserPromptSubmit")).encode()
    client = subprocess.Popen(
        [*ENGRAM, "hook", "claude-code", "UserPromptSubmit"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=server.env,
        cwd=root,
    )
    try:
        deadline = time.monotonic() + 15
        while server.requests() == 0 and time.monotonic() < deadline:
            time.sleep(0.02)
        assert server.requests() == 1  # forked: the child waits for the payload
        os.kill(server.pid, signal.SIGKILL)
        deadline = time.monotonic() + 15
        while _status(server.env)["running"] and time.monotonic() < deadline:
            time.sleep(0.02)
        # The child still runs, but holds nothing of the server's: a new one could start.
        assert not _status(server.env)["running"]
        _, err = client.communicate(payload, timeout=60)
        assert client.returncode == 0 and err == b""
        with sqlite3.connect(root / ".engram" / "engram.db") as conn:
            prompts = conn.execute("SELECT count(*) FROM agent_prompts").fetchone()[0]
        assert prompts == 1  # run by the orphaned child, and only by it
    finally:
        server.stop()
