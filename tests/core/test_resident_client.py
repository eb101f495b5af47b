"""The resident server's client (memory_core/resident.py) in the test process (issue 31).

tests/cli/test_resident.py runs clients and servers as processes, which mutation testing cannot
follow. Here the client runs in this process against a real server forked from it (what
`python -c SERVER_BOOT` would run), and against a peer on a real Unix socket that answers as a
server that refuses, goes away, or dies mid-command would: cases a real server only shows by
being killed at the right moment. What the client promises: it falls back to running the
command itself on any failure before it said "go", never after (a command never runs twice);
it passes its argv, environment, folder, umask and streams whole, however large; and it
forwards Ctrl-C to the child.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import stat
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from memory_core import resident, resident_server
from memory_core.store import Store

# -- what the client decides on its own --------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "off"), [("", False), ("0", False), ("1", True), ("yes", True), (None, False)]
)
def test_the_off_switch(monkeypatch: pytest.MonkeyPatch, value: str | None, off: bool) -> None:
    if value is None:
        monkeypatch.delenv(resident.OFF_SWITCH, raising=False)
    else:
        monkeypatch.setenv(resident.OFF_SWITCH, value)
    assert resident.off() is off


def test_the_command_is_the_first_word_past_the_options() -> None:
    assert resident.command_of(["--workspace", "/w", "--json", "hook", "x"]) == "hook"
    assert resident.command_of(["checkpoint", "--help"]) == "checkpoint"
    assert resident.command_of(["--workspace"]) is None  # its value missing
    assert resident.command_of(["--json", "--version"]) is None
    assert resident.command_of(["-h", "hook"]) is None
    assert resident.command_of(["--help", "checkpoint"]) is None  # help, not a checkpoint
    assert resident.command_of(["--version", "hook"]) is None


def test_the_socket_folder_follows_the_environment(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    for name in (resident.DIR_VARIABLE, "XDG_RUNTIME_DIR", "TMPDIR"):
        monkeypatch.delenv(name, raising=False)
    assert resident.runtime_dir() == f"/tmp/engram-{os.getuid()}"
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    assert resident.runtime_dir() == str(tmp_path / f"engram-{os.getuid()}")
    monkeypatch.setenv("XDG_RUNTIME_DIR", "relative/run")  # not a path to trust
    assert resident.runtime_dir() == str(tmp_path / f"engram-{os.getuid()}")
    monkeypatch.setenv("XDG_RUNTIME_DIR", "/run/user/1000")
    assert resident.runtime_dir() == "/run/user/1000/engram"
    monkeypatch.setenv(resident.DIR_VARIABLE, str(tmp_path / "mine"))
    assert resident.runtime_dir() == str(tmp_path / "mine")


@pytest.mark.parametrize("mode", [0o710, 0o701, 0o750, 0o777])
def test_a_folder_others_can_enter_is_not_trusted(tmp_path: Path, mode: int) -> None:
    folder = tmp_path / "sockets"
    folder.mkdir()
    folder.chmod(mode)
    assert not resident.private_dir_ok(str(folder))
    folder.chmod(0o700)
    assert resident.private_dir_ok(str(folder))


def test_a_file_or_another_user_s_folder_is_not_trusted(tmp_path: Path) -> None:
    plain = tmp_path / "file"
    plain.write_text("")
    plain.chmod(0o700)
    assert not resident.private_dir_ok(str(plain))
    if os.getuid() == 0:  # only root can give a folder away
        theirs = tmp_path / "theirs"
        theirs.mkdir(mode=0o700)
        os.chown(theirs, 4321, -1)
        assert not resident.private_dir_ok(str(theirs))


def test_the_installation_key_names_what_a_server_must_share() -> None:
    import memory_core

    key = resident.installation_key(["/site-a", "/site-b"])
    assert key.split("\n") == [
        resident.PROTOCOL,
        sys.executable,
        *sys.version.split("\n"),
        os.path.dirname(os.path.abspath(memory_core.__file__)),
        memory_core.__version__,
        repr(tuple(sys.flags)),
        sys.getfilesystemencoding(),
        os.pathsep.join(["/site-a", "/site-b"]),
    ]
    # By default the import path less its first entry (the script's folder).
    assert resident.installation_key() == resident.installation_key(sys.path[1:])
    assert resident.installation_key(["/site-a"]) != key


@pytest.mark.parametrize(
    ("text", "digest"),
    # FNV-1a 64-bit test vectors (Landon Curt Noll's FNV reference, fnv/test_fnv.c).
    [("", "cbf29ce484222325"), ("a", "af63dc4c8601ec8c"), ("foobar", "85944171f73967e8")],
)
def test_the_key_digest_is_fnv_1a(text: str, digest: str) -> None:
    assert resident.key_digest(text) == digest


def test_the_paths_of_an_installation() -> None:
    assert resident.paths("/run/x", "abc") == (
        "/run/x/abc.sock",
        "/run/x/abc.lock",
        "/run/x/abc.spawned",
    )


# -- the request, as the server reads it ---------------------------------------------------------


def _parsed(data: bytes) -> resident_server._Request:
    header, _, body = data.partition(b"\n")
    assert int(header) == len(body)
    return resident_server._Request(body.split(b"\0"))


def test_the_request_carries_the_command_environment_umask_and_streams(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import io

    odd = os.fsdecode(b"caf\xe9.txt")  # a file name that is not UTF-8
    monkeypatch.setenv("ENGRAM_TEST_VALUE", "a=b=c")
    monkeypatch.setattr(sys, "stdin", None)  # started without a stdin
    monkeypatch.setattr(
        sys,
        "stdout",
        io.TextIOWrapper(io.BytesIO(), encoding="latin-1", errors="replace", line_buffering=True),
    )
    monkeypatch.setattr(
        sys,
        "stderr",
        io.TextIOWrapper(
            io.BytesIO(), encoding="utf-8", errors="backslashreplace", write_through=True
        ),
    )
    previous = os.umask(0o027)
    try:
        request = _parsed(resident._request("the key", ["engram", "hook", odd]))
    finally:
        os.umask(previous)
    assert request.protocol == resident.PROTOCOL and request.key == "the key"
    assert request.umask == 0o027
    assert request.argv == ["engram", "hook", odd]
    assert request.streams == [
        ("", "", False, False),
        ("latin-1", "replace", True, False),
        ("utf-8", "backslashreplace", False, True),
    ]
    environ = {bytes(name): bytes(value) for name, _, value in request.environ}
    assert environ == dict(os.environb)
    assert environ[b"ENGRAM_TEST_VALUE"] == b"a=b=c"


def test_a_stream_without_buffering_settings_is_sent_as_unbuffered_by_line(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    class Plain:  # a stream a host program put in place: an encoding, nothing more
        encoding = "utf-8"
        errors = "strict"

    monkeypatch.setattr(sys, "stdout", Plain())
    request = _parsed(resident._request("the key", ["engram", "hook", "x"]))
    assert request.streams[1] == ("utf-8", "strict", False, False)


def test_a_line_is_read_whole_however_the_socket_cuts_it() -> None:
    left, right = socket.socketpair()
    with left, right:
        buffer = bytearray()
        for piece in (b"A1", b"23", b"\nX", b"0\n"):
            left.sendall(piece)
        left.shutdown(socket.SHUT_WR)
        assert resident._read_line(right, buffer) == b"A123"
        assert resident._read_line(right, buffer) == b"X0"
        assert resident._read_line(right, buffer) is None


# -- against a peer that answers as a server would ---------------------------------------------


@pytest.fixture
def socket_folder(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    folder = tmp_path / "sockets"
    folder.mkdir(mode=0o700)
    monkeypatch.setenv(resident.DIR_VARIABLE, str(folder))
    monkeypatch.delenv(resident.OFF_SWITCH, raising=False)
    return folder


def _socket_path(folder: Path) -> str:
    return resident.paths(str(folder), resident.key_digest(resident.installation_key()))[0]


class Peer:
    """A listener on the installation's socket that takes one request and answers with
    `script(connection, request, descriptors)`, on a thread of its own."""

    def __init__(
        self,
        folder: Path,
        script: Callable[[socket.socket, resident_server._Request, list[int]], None],
    ) -> None:
        self.listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.listener.bind(_socket_path(folder))
        self.listener.listen(1)
        self.script = script
        self.request: resident_server._Request | None = None
        self.fd_stats: list[os.stat_result] = []
        self.got: list[bytes] = []
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self) -> None:
        conn, _ = self.listener.accept()
        with conn:
            request, fds = resident_server._receive(conn)
            self.request = request
            self.fd_stats = [os.fstat(fd) for fd in fds]
            for fd in fds:
                os.close(fd)
            self.script(conn, request, fds)

    def close(self) -> None:
        self.thread.join(timeout=10)
        self.listener.close()


@contextlib.contextmanager
def _peer(
    folder: Path, script: Callable[[socket.socket, resident_server._Request, list[int]], None]
) -> Iterator[Peer]:
    peer = Peer(folder, script)
    try:
        yield peer
    finally:
        peer.close()


def _go(conn: socket.socket) -> bytes:
    return conn.recv(1)


def test_without_a_server_or_a_private_folder_the_command_runs_here(
    socket_folder: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert resident.try_resident(["checkpoint", "list"]) is None  # no socket
    stale = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    stale.bind(_socket_path(socket_folder))
    stale.close()  # a socket file nobody listens on: a server that died
    assert resident.try_resident(["checkpoint", "list"]) is None
    socket_folder.chmod(0o755)
    assert resident.try_resident(["checkpoint", "list"]) is None


def test_commands_that_are_not_sent_never_reach_a_server(
    socket_folder: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def never(conn: socket.socket, request: resident_server._Request, fds: list[int]) -> None:
        raise AssertionError("a request reached the server")

    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(_socket_path(socket_folder))
    listener.listen(1)
    listener.setblocking(False)
    with listener:
        assert resident.try_resident(["memory", "list"]) is None
        monkeypatch.setenv(resident.OFF_SWITCH, "1")
        assert resident.try_resident(["hook", "claude-code", "Stop"]) is None
        with pytest.raises(BlockingIOError):
            listener.accept()  # nobody connected


@pytest.mark.parametrize("answer", [b"R another installation\n", b"", b"Anot-a-pid\n"])
def test_a_refusal_before_go_lets_the_command_run_here(socket_folder: Path, answer: bytes) -> None:
    def refuse(conn: socket.socket, request: resident_server._Request, fds: list[int]) -> None:
        conn.sendall(answer)
        conn.shutdown(socket.SHUT_WR)
        peer_got.append(conn.recv(1))  # what the client sent after the answer: nothing

    peer_got: list[bytes] = []
    with _peer(socket_folder, refuse):
        assert resident.try_resident(["checkpoint", "create"]) is None
    assert peer_got == [b""]  # never "go": the server's child would not run it


def test_an_import_path_folder_whose_name_is_not_utf8_is_sent_in_the_key_as_it_is(
    socket_folder: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    # A folder named in Latin-1 on the import path (PYTHONPATH, a .pth file): the key names it
    # byte for byte, and the server of this installation can still be asked.
    latin = os.fsdecode(str(tmp_path).encode() + b"/caf\xe9")
    monkeypatch.setattr(sys, "path", [sys.path[0], latin, *sys.path[1:]])  # past the script's

    def refuse(conn: socket.socket, request: resident_server._Request, fds: list[int]) -> None:
        conn.sendall(b"R another installation\n")

    with _peer(socket_folder, refuse) as peer:
        assert resident.try_resident(["checkpoint", "list"]) is None
    assert peer.request is not None
    assert peer.request.key == resident.installation_key()
    assert "caf\udce9" in peer.request.key


def test_a_server_that_does_not_answer_in_time_lets_the_command_run_here(
    socket_folder: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(resident, "ACCEPT_TIMEOUT_SECONDS", 0.2)
    released = threading.Event()

    def silent(conn: socket.socket, request: resident_server._Request, fds: list[int]) -> None:
        released.wait(10)

    with _peer(socket_folder, silent):
        started = time.monotonic()
        assert resident.try_resident(["checkpoint", "create"]) is None
        assert time.monotonic() - started < 5
        released.set()


def test_the_request_names_this_process_and_passes_its_folder_and_streams(
    socket_folder: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)
    monkeypatch.setenv("ENGRAM_BIG", "x" * 300_000)  # more than one send takes

    def answer(conn: socket.socket, request: resident_server._Request, fds: list[int]) -> None:
        conn.sendall(b"A4242\n")
        assert _go(conn) == b"G"
        conn.sendall(b"X7\n")

    with _peer(socket_folder, answer) as peer:
        assert resident.try_resident(["--json", "checkpoint", "list"]) == 7
    request = peer.request
    assert request is not None
    assert request.argv == [sys.argv[0], "--json", "checkpoint", "list"]
    assert request.key == resident.installation_key()
    environ = {name: value for name, _, value in request.environ}
    assert environ[b"ENGRAM_BIG"] == b"x" * 300_000
    stats = peer.fd_stats
    assert len(stats) == 4
    for fd, seen in zip((0, 1, 2), stats[:3], strict=True):
        mine = os.fstat(fd)
        assert (seen.st_dev, seen.st_ino) == (mine.st_dev, mine.st_ino)
    assert stat.S_ISDIR(stats[3].st_mode)
    assert (stats[3].st_dev, stats[3].st_ino) == (work.stat().st_dev, work.stat().st_ino)


@pytest.mark.parametrize(
    ("argv", "code"), [(["checkpoint", "create"], 1), (["hook", "claude-code", "Stop"], 0)]
)
def test_a_child_that_dies_after_go_is_reported_and_not_run_again(
    socket_folder: Path, capfd: pytest.CaptureFixture[str], argv: list[str], code: int
) -> None:
    def die(conn: socket.socket, request: resident_server._Request, fds: list[int]) -> None:
        conn.sendall(b"A4242\n")
        assert _go(conn) == b"G"
        conn.sendall(b"Xkilled\n")  # not an exit code: as good as none

    with _peer(socket_folder, die):
        assert resident.try_resident(argv) == code  # a hook never fails the agent
    assert capfd.readouterr().err == (
        "engram: the resident server's process ended before the command finished\n"
    )


def test_ctrl_c_while_the_child_runs_is_forwarded_to_it(socket_folder: Path) -> None:
    child = subprocess.Popen(["sleep", "30"])
    handlers = {
        s: signal.getsignal(s)
        for s in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT)
    }

    def interrupted(conn: socket.socket, request: resident_server._Request, fds: list[int]) -> None:
        conn.sendall(b"A%d\n" % child.pid)
        assert _go(conn) == b"G"
        os.kill(os.getpid(), signal.SIGINT)  # Ctrl-C at the client's terminal
        child.wait(timeout=10)
        conn.sendall(b"X130\n")

    try:
        with _peer(socket_folder, interrupted):
            assert resident.try_resident(["rollback", "C-1"]) == 130
        assert child.returncode == -signal.SIGINT
    finally:
        for signum, handler in handlers.items():
            signal.signal(signum, handler)
        with contextlib.suppress(ProcessLookupError):
            child.kill()
        child.wait()


# -- against a real server forked from this process -----------------------------------------------


@pytest.fixture
def server(socket_folder: Path) -> Iterator[int]:
    """A server of this installation, as `python -c SERVER_BOOT` starts it, forked from here."""
    digest = resident.key_digest(resident.installation_key())
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the server's process
        try:
            del sys.path[0]  # as SERVER_BOOT does
            resident_server.Server(str(socket_folder), digest).run()
        finally:
            os._exit(0)
    try:
        deadline = time.monotonic() + 30
        log = socket_folder / f"{digest}.log"  # it says so once it listens
        while "listening on" not in (log.read_text() if log.exists() else ""):
            assert time.monotonic() < deadline, "the server did not start"
            assert os.waitpid(pid, os.WNOHANG) == (0, 0), "the server exited"
            time.sleep(0.02)
        yield pid
    finally:
        os.kill(pid, signal.SIGTERM)
        os.waitpid(pid, 0)


def test_a_command_runs_in_the_server_with_this_folder_and_streams(
    server: int, workspace: Path, monkeypatch: pytest.MonkeyPatch, capfd: pytest.CaptureFixture[str]
) -> None:
    Store.init(workspace).close()
    monkeypatch.chdir(workspace)
    capfd.readouterr()
    assert resident.try_resident(["checkpoint", "create", "before", "--json"]) == 0
    created = json.loads(capfd.readouterr().out)
    assert created["name"] == "before"
    assert resident.try_resident(["checkpoint", "list", "--json"]) == 0
    listed = json.loads(capfd.readouterr().out)
    assert [c["name"] for c in listed["checkpoints"]] == ["before"]  # created once
    assert resident.try_resident(["checkpoint", "show", "no-such-checkpoint"]) not in (0, None)
    assert "no-such-checkpoint" in capfd.readouterr().err


def test_starting_a_server_in_the_background_is_tried_once_in_30_seconds(
    socket_folder: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ENGRAM_RESIDENT_IDLE", "0.5")  # whatever starts leaves at once
    folder = socket_folder / "not-yet"
    monkeypatch.setenv(resident.DIR_VARIABLE, str(folder))
    digest = resident.key_digest(resident.installation_key())
    marker = resident.paths(str(folder), digest)[2]
    log = folder / f"{digest}.log"
    descriptors = len(os.listdir("/proc/self/fd"))
    children = _children()
    resident.start_in_background()
    assert len(os.listdir("/proc/self/fd")) == descriptors  # /dev/null opened and closed
    assert stat.S_IMODE(folder.stat().st_mode) == 0o700  # made private
    first = os.stat(marker).st_mtime_ns
    # The process started runs this interpreter on the folder and key given. Whether it then
    # serves (and leaves when idle) or finds its import path is not this test process's and
    # says "not started" depends on how pytest was started; either way it writes its log.
    deadline = time.monotonic() + 30
    while not (log.read_text() if log.exists() else ""):
        assert time.monotonic() < deadline, "no server was started"
        time.sleep(0.05)
    resident.start_in_background()
    assert os.stat(marker).st_mtime_ns == first  # tried a moment ago: not again
    old = time.time() - resident.SPAWN_BACKOFF_SECONDS - 1
    os.utime(marker, (old, old))
    log.unlink()
    resident.start_in_background()
    assert os.stat(marker).st_mtime_ns != first
    while not log.exists():
        assert time.monotonic() < deadline, "no server was started again"
        time.sleep(0.05)
    # Wait for the servers started here: left running, or exited and not yet waited for (a
    # zombie, whose command line reads empty), they would outlive the test and be reaped by
    # whatever adopts them (mutmut's runner, which then crashed waiting for its own workers).
    for pid in _children() - children:
        with contextlib.suppress(ChildProcessError):
            os.waitpid(pid, 0)


def _children() -> set[int]:
    """This process's children, running or exited and not yet waited for."""
    return {
        int(pid)
        for task in Path("/proc/self/task").iterdir()
        for pid in (task / "children").read_text().split()
    }


def test_no_server_is_started_in_a_folder_others_can_use(
    socket_folder: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    socket_folder.chmod(0o755)
    resident.start_in_background()
    assert os.listdir(socket_folder) == []
    monkeypatch.setenv(resident.OFF_SWITCH, "1")
    socket_folder.chmod(0o700)
    resident.start_in_background()
    assert os.listdir(socket_folder) == []
