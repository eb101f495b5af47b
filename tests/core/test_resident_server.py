"""The resident fork server (memory_core/resident_server.py) run in the test process (issue 31).

tests/cli/test_resident.py starts servers as processes, which mutation testing cannot follow.
Here the server's own loop runs in this process, with real sockets, a real lock and real forks:
when it starts and when it refuses to, what its lock file tells `engram daemon status`, when it
leaves (idle, its socket replaced, a thread running, engram's code changed) and a request
served by a forked child end to end. The request's parsing and the child's standard streams
are checked on their own, and so is the child's whole work on one request (`serve_request`,
run in this process with its process state put back). What only a process of its own can do
(close every inherited descriptor, wait for every thread and run every atexit handler as it
ends) is covered by tests/cli/test_resident.py's processes.
"""

from __future__ import annotations

import atexit
import contextlib
import fcntl
import gc
import io
import json
import os
import re
import signal
import socket
import stat
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from memory_core import resident, resident_server
from memory_core.store import Store
from tests.conftest import put_initialised_store


@pytest.mark.parametrize(
    ("value", "seconds"), [(None, 600.0), ("", 600.0), ("0.3", 0.3), ("soon", 600.0)]
)
def test_the_idle_timeout_comes_from_the_environment(
    monkeypatch: pytest.MonkeyPatch, value: str | None, seconds: float
) -> None:
    if value is None:
        monkeypatch.delenv("ENGRAM_RESIDENT_IDLE", raising=False)
    else:
        monkeypatch.setenv("ENGRAM_RESIDENT_IDLE", value)
    assert resident_server.idle_seconds() == seconds


def test_an_exit_value_becomes_the_exit_code_a_process_would_have(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert [resident_server._exit_code(v) for v in (None, 0, 3, 256, -1, True)] == [
        0,
        0,
        3,
        0,
        255,
        1,
    ]
    # sys.exit("message"): the message on stderr, status 1.
    assert resident_server._exit_code("cannot do that") == 1
    assert capsys.readouterr().err == "cannot do that\n"


# -- the request ----------------------------------------------------------------------------------


def _send(conn: socket.socket, data: bytes, fds: list[int]) -> None:
    ancillary = b"".join(fd.to_bytes(4, sys.byteorder, signed=True) for fd in fds)
    sent = conn.sendmsg([data], [(socket.SOL_SOCKET, socket.SCM_RIGHTS, ancillary)])
    conn.sendall(data[sent:])


def test_a_request_and_its_descriptors_are_received_whole(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("ENGRAM_BIG", "y" * 200_000)  # far more than one read takes
    data = resident._request("the key", ["engram", "checkpoint", "list"])
    marker = tmp_path / "marker"
    marker.write_text("")
    left, right = socket.socketpair()
    received: list[tuple[resident_server._Request, list[int]]] = []
    with left, right, open(marker) as handle:
        reader = threading.Thread(target=lambda: received.append(resident_server._receive(right)))
        reader.start()
        _send(left, data, [0, 1, 2, handle.fileno()])
        reader.join(timeout=30)
    request, fds = received[0]
    try:
        assert request.argv == ["engram", "checkpoint", "list"] and request.key == "the key"
        assert dict((name, value) for name, _, value in request.environ)[b"ENGRAM_BIG"] == (
            b"y" * 200_000
        )
        assert len(fds) == 4
        assert os.fstat(fds[3]).st_ino == marker.stat().st_ino
    finally:
        for fd in fds:
            os.close(fd)


def test_a_request_that_ends_early_is_refused() -> None:
    data = resident._request("the key", ["engram", "hook", "x"])
    left, right = socket.socketpair()
    with left, right:
        _send(left, data[: len(data) // 2], [])
        left.shutdown(socket.SHUT_WR)
        with pytest.raises(EOFError, match="the request ended early"):
            resident_server._receive(right)


# -- the child's standard streams ---------------------------------------------------------------


def test_the_child_writes_in_the_client_s_encoding(
    capfdbinary: pytest.CaptureFixture[bytes],
) -> None:
    stream = resident_server._standard_stream(1, ("latin-1", "replace", True, False))
    assert (stream.encoding, stream.errors, stream.line_buffering) == ("latin-1", "replace", True)
    assert stream.mode == "w" and stream.name == "<stdout>"
    stream.write("café ☃\n")  # a line: written at once (line buffering)
    assert capfdbinary.readouterr().out == b"caf\xe9 ?\n"
    stream.detach()


def test_python_u_leaves_the_output_unbuffered_and_stdin_buffered() -> None:
    out = resident_server._standard_stream(2, ("utf-8", "backslashreplace", False, True))
    assert isinstance(out.buffer, io.FileIO) and out.write_through
    assert out.name == "<stderr>"
    out.detach()
    buffered = resident_server._standard_stream(2, ("utf-8", "strict", False, False))
    assert isinstance(buffered.buffer, io.BufferedWriter)
    buffered.detach()
    stdin = resident_server._standard_stream(0, ("utf-8", "strict", False, True))
    assert isinstance(stdin.buffer, io.BufferedReader)
    assert stdin.mode == "r" and stdin.name == "<stdin>"
    stdin.detach()
    assert resident_server._standard_stream(0, ("", "", False, False)) is None  # had none


# -- the code stamp -------------------------------------------------------------------------------


def test_the_code_stamp_changes_when_a_package_is_installed(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    site = tmp_path / "site"
    site.mkdir()
    monkeypatch.syspath_prepend(str(site))
    before = resident_server.code_stamp()
    assert resident_server.code_stamp() == before
    sources = {entry[0]: entry for entry in before}
    this = os.path.abspath(resident_server.__file__)
    assert sources[this][2] == os.path.getsize(this)
    assert not any("__pycache__" in path for path in sources)
    assert any(path.endswith(os.path.join("migrations", "0001_foundation.sql")) for path in sources)
    (site / "new_package.py").write_text("")
    os.utime(site, ns=(site.stat().st_atime_ns, site.stat().st_mtime_ns + 1_000_000))
    assert resident_server.code_stamp() != before


def test_finished_children_are_reaped() -> None:
    pids = []
    for _ in range(2):
        pid = os.fork()
        if pid == 0:  # pragma: no cover - the child
            os._exit(0)
        pids.append(pid)
    deadline = time.monotonic() + 10
    while not all(_zombie(pid) for pid in pids):
        assert time.monotonic() < deadline
        time.sleep(0.01)
    resident_server._reap_children()
    for pid in pids:
        with pytest.raises(ChildProcessError):
            os.waitpid(pid, os.WNOHANG)


def _zombie(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().split(") ", 1)[1].startswith("Z")
    except OSError:
        return True


# -- the server's life ----------------------------------------------------------------------------


# This process's forks, seen from the parent's side, where Python code runs inside the fork
# (after-fork hooks, logging's among them): counted, and a test can have a stop signal arrive
# just then, as `engram daemon stop` can while the server forks its spare.
_FORKS_SEEN: list[int] = []
_SIGNAL_IN_NEXT_SERVER_FORK: list[int] = []


def _after_a_fork_in_the_parent() -> None:
    _FORKS_SEEN.append(os.getpid())
    # Only in a server's loop (its handler set): this process's own would end the test run.
    if _SIGNAL_IN_NEXT_SERVER_FORK and signal.getsignal(signal.SIGTERM) is resident_server._stop:
        os.kill(os.getpid(), _SIGNAL_IN_NEXT_SERVER_FORK.pop())


os.register_at_fork(after_in_parent=_after_a_fork_in_the_parent)


def _own_children() -> list[int]:
    """The processes this one started that still exist (zombies included)."""
    children = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            with contextlib.suppress(OSError):
                fields = Path(f"/proc/{entry}/stat").read_text().rsplit(") ", 1)[1].split()
                if int(fields[1]) == os.getpid():
                    children.append(int(entry))
    return children


@pytest.fixture
def folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    sockets = tmp_path / "sockets"
    sockets.mkdir(mode=0o700)
    monkeypatch.setenv(resident.DIR_VARIABLE, str(sockets))
    monkeypatch.delenv(resident.OFF_SWITCH, raising=False)
    return sockets


def _digest() -> str:
    """The digest a server started from this process serves: its whole import path (the
    server's first entry is dropped by SERVER_BOOT before it reads it)."""
    return resident.key_digest(resident.installation_key(sys.path))


@contextlib.contextmanager
def _as_a_server() -> Iterator[None]:
    """What running a server in this process changes, put back: the signal handlers it sets
    and the heap it freezes."""
    handlers = {
        s: signal.getsignal(s)
        for s in (signal.SIGTERM, signal.SIGHUP, signal.SIGINT, signal.SIGQUIT)
    }
    try:
        yield
    finally:
        for signum, handler in handlers.items():
            signal.signal(signum, handler)
        gc.unfreeze()


def _wait_until_listening(socket_path: str) -> None:
    """Until the server says it listens (its socket exists a moment before it does: a client
    connecting in between is refused)."""
    log = Path(socket_path.removesuffix(".sock") + ".log")
    deadline = time.monotonic() + 30
    while "listening on" not in (log.read_text() if log.exists() else ""):
        if time.monotonic() > deadline:
            return
        time.sleep(0.01)


def _log(folder: Path, digest: str) -> str:
    path = folder / f"{digest}.log"
    return path.read_text() if path.exists() else ""


def test_a_server_does_not_start_in_a_folder_others_can_use(folder: Path) -> None:
    folder.chmod(0o755)
    digest = _digest()
    resident_server.Server(str(folder), digest).run()
    assert os.listdir(folder) == []


def test_a_server_of_another_installation_does_not_start(folder: Path) -> None:
    digest = resident.key_digest("another interpreter")
    resident_server.Server(str(folder), digest).run()
    assert "not started: this interpreter is not the installation that asked for it" in _log(
        folder, digest
    )
    assert sorted(os.listdir(folder)) == [f"{digest}.log"]  # no lock, no socket


def test_a_second_server_leaves_at_once(folder: Path) -> None:
    digest = _digest()
    socket_path, lock_path, _ = resident.paths(str(folder), digest)
    holder = os.open(lock_path, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(holder, fcntl.LOCK_EX | fcntl.LOCK_NB)
        os.write(holder, b"1234\n")
        resident_server.Server(str(folder), digest).run()
        assert not os.path.exists(socket_path)
        assert Path(lock_path).read_bytes() == b"1234\n"  # the running one's record untouched
    finally:
        os.close(holder)


def test_an_idle_server_says_who_it_is_then_leaves(
    folder: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ENGRAM_RESIDENT_IDLE", "0.4")
    # A folder on the import path whose name is not UTF-8 (Latin-1 bytes): the key holds it as
    # it is, and the server still starts.
    monkeypatch.syspath_prepend(os.fsdecode(str(folder).encode() + b"/caf\xe9"))
    digest = _digest()
    socket_path, lock_path, _ = resident.paths(str(folder), digest)
    server = resident_server.Server(str(folder), digest)
    seen: dict[str, object] = {}

    def look() -> None:
        _wait_until_listening(socket_path)
        seen["mode"] = stat.S_IMODE(os.stat(socket_path).st_mode)
        seen["lock"] = Path(lock_path).read_bytes()

    watcher = threading.Thread(target=look)
    watcher.start()
    started = time.time()
    with _as_a_server():
        server.run()
    watcher.join()
    assert seen["mode"] == 0o600
    record = bytes(seen["lock"]).decode("utf-8", "surrogateescape")  # type: ignore[arg-type]
    pid, began, idle, served, *key = record.split("\n")
    assert (int(pid), idle, served) == (os.getpid(), "0.4", "           0")
    assert started - 1 < float(began) <= time.time()
    assert "\n".join(key) == resident.installation_key(sys.path)
    assert not os.path.exists(socket_path)  # its own socket removed
    log = _log(folder, digest)
    assert f"listening on {socket_path} (warm in " in log
    for line in log.splitlines():  # each line: when, which process, what
        assert re.match(rf"\d{{4}}-\d\d-\d\dT\d\d:\d\d:\d\d \[{os.getpid()}\] \S", line), line
    assert "idle for 0.4 s after 0 requests: exiting" in log
    lock = os.open(lock_path, os.O_RDWR)
    try:
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)  # released: a new server can start
    finally:
        os.close(lock)


def test_a_server_whose_socket_is_replaced_leaves_and_keeps_the_new_one(
    folder: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ENGRAM_RESIDENT_IDLE", "1")
    digest = _digest()
    socket_path = resident.paths(str(folder), digest)[0]

    def replace() -> None:
        _wait_until_listening(socket_path)
        os.unlink(socket_path)
        newer = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        newer.bind(socket_path)  # another server's
        newer.close()

    replacer = threading.Thread(target=replace)
    replacer.start()
    with _as_a_server():
        resident_server.Server(str(folder), digest).run()
    replacer.join()
    assert "the socket was removed or replaced: exiting" in _log(folder, digest)
    assert os.path.exists(socket_path)  # the other server's socket is left alone


def test_a_server_with_a_thread_running_refuses_to_fork(
    folder: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ENGRAM_RESIDENT_IDLE", "20")
    digest = _digest()
    socket_path = resident.paths(str(folder), digest)[0]
    answers: list[bytes] = []

    def client() -> None:  # a thread: the server cannot fork safely while it runs
        _wait_until_listening(socket_path)
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as conn:
            conn.connect(socket_path)
            answers.append(conn.recv(100))

    thread = threading.Thread(target=client)
    thread.start()
    forks = len(_FORKS_SEEN)
    started = time.monotonic()
    with _as_a_server():
        resident_server.Server(str(folder), digest).run()
    thread.join()
    assert len(_FORKS_SEEN) == forks  # not even a spare ahead of the request
    assert time.monotonic() - started < 15  # left at once, not after its idle time
    assert answers == [b""]  # closed without an answer: the client runs the command itself
    assert "a thread is running in the server: exiting (it must not fork)" in _log(folder, digest)


def _forked_client(
    argv: list[str], result: Path, socket_path: str, *, touch: Path | None = None
) -> int:
    """A client process forked from this one (a process, not a thread: the server checks for
    threads). Writes `{"code": ..., "out": ...}` to `result`."""
    pid = os.fork()
    if pid:
        return pid
    try:  # pragma: no cover - the client's process
        _wait_until_listening(socket_path)
        if touch is not None:
            touch.write_text("")  # a package installed while the server runs
        out = result.with_suffix(".out")
        fd = os.open(out, os.O_WRONLY | os.O_CREAT, 0o600)
        os.dup2(fd, 1)
        os.close(fd)
        # A client's first import path entry is its script's folder, which its key leaves out.
        sys.path.insert(0, os.path.dirname(os.path.abspath(sys.argv[0])))
        code = resident.try_resident(argv)
        result.write_text(json.dumps({"code": code, "out": out.read_text()}))
    finally:
        os._exit(0)


def _result(result: Path, pid: int) -> dict[str, object]:
    deadline = time.monotonic() + 60
    while not result.exists():
        assert time.monotonic() < deadline, "the client did not finish"
        time.sleep(0.02)
    with contextlib.suppress(ChildProcessError):  # the server may have reaped it
        os.waitpid(pid, 0)
    return json.loads(result.read_text())  # type: ignore[no-any-return]


def _no_other_threads() -> None:
    if threading.active_count() > 1:
        pytest.skip(f"threads left running by other tests: {threading.enumerate()}")


def test_a_request_is_served_by_a_forked_child_and_counted(
    folder: Path, monkeypatch: pytest.MonkeyPatch, workspace: Path, tmp_path: Path
) -> None:
    _no_other_threads()
    Store.init(workspace).close()
    monkeypatch.chdir(workspace)
    monkeypatch.setenv("ENGRAM_RESIDENT_IDLE", "1")
    digest = _digest()
    socket_path, lock_path, _ = resident.paths(str(folder), digest)
    result = tmp_path / "result.json"
    client = _forked_client(["checkpoint", "list", "--json"], result, socket_path)
    with _as_a_server():
        resident_server.Server(str(folder), digest).run()
    answer = _result(result, client)
    assert answer["code"] == 0
    assert json.loads(str(answer["out"]))["checkpoints"] == []
    served = Path(lock_path).read_bytes().split(b"\n")[3]
    assert served == b"           1"
    assert "idle for 1 s after 1 requests: exiting" in _log(folder, digest)


def test_a_request_after_engram_changed_is_refused_and_the_server_leaves(
    folder: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    _no_other_threads()
    site = tmp_path / "site"
    site.mkdir()
    monkeypatch.syspath_prepend(str(site))
    monkeypatch.setenv("ENGRAM_RESIDENT_IDLE", "20")
    digest = _digest()
    socket_path, lock_path, _ = resident.paths(str(folder), digest)
    result = tmp_path / "result.json"
    client = _forked_client(
        ["checkpoint", "list"], result, socket_path, touch=site / "new_package.py"
    )
    started = time.monotonic()
    with _as_a_server():
        resident_server.Server(str(folder), digest).run()
    assert time.monotonic() - started < 15
    assert _result(result, client)["code"] is None  # refused: the client runs it itself
    assert "engram's code or packages changed: exiting" in _log(folder, digest)
    assert Path(lock_path).read_bytes().split(b"\n")[3] == b"           0"


# -- the child: agreeing to run a request, then becoming the client ------------------------------


KEY = f"{resident.PROTOCOL}\nthis installation"


def _handshake_with(data: bytes, fds: list[int], answer: bytes) -> tuple[object, bytes]:
    """The child's side of a handshake over a socket pair: what `handshake` returned and what
    it said to the client, who answers `answer` (or goes away without a word)."""
    left, right = socket.socketpair()
    with left, right:
        _send(left, data, fds)
        result: list[object] = []
        child = threading.Thread(
            target=lambda: result.append(resident_server.handshake(right, KEY))
        )
        child.start()
        said = left.recv(100)
        if answer:
            left.sendall(answer)
        else:
            left.shutdown(socket.SHUT_WR)
        child.join(timeout=30)
        if result[0] is not None:
            assert right.gettimeout() is None  # the command may take as long as it takes
    return result[0], said


def test_a_request_of_this_installation_is_accepted_once_the_client_says_go(
    tmp_path: Path,
) -> None:
    data = resident._request(KEY, ["engram", "checkpoint", "list"])
    accepted, said = _handshake_with(data, [0, 1, 2, 0], b"G")
    assert said == b"A%d\n" % os.getpid()
    assert accepted is not None
    request, fds = accepted  # type: ignore[misc]
    assert request.argv == ["engram", "checkpoint", "list"] and len(fds) == 4
    for fd in fds:
        os.close(fd)


@pytest.mark.parametrize(
    ("key", "protocol_ok", "count"),
    [(f"{resident.PROTOCOL}\nanother installation", True, 4), (KEY, False, 4), (KEY, True, 3)],
)
def test_a_request_of_another_installation_is_refused(
    key: str, protocol_ok: bool, count: int
) -> None:
    data = resident._request(key, ["engram", "hook", "x"])
    if not protocol_ok:
        data = data.replace(resident.PROTOCOL.encode(), b"engram-resident/0", 1)
    before = len(os.listdir("/proc/self/fd"))
    accepted, said = _handshake_with(data, [0, 1, 2, 0][:count], b"G")
    assert accepted is None and said == b"R another installation\n"
    assert len(os.listdir("/proc/self/fd")) == before  # the descriptors sent were closed


def test_a_client_that_gives_up_before_go_is_not_run_for() -> None:
    data = resident._request(KEY, ["engram", "checkpoint", "create"])
    accepted, said = _handshake_with(data, [0, 1, 2, 0], b"")
    assert said.startswith(b"A") and accepted is None


@contextlib.contextmanager
def _process_state_kept() -> Iterator[None]:
    """What becoming the client changes in this process, put back afterwards: descriptors 0-2,
    the working folder, umask, environment, time zone, argv and the standard streams."""
    import locale

    ctype = locale.setlocale(locale.LC_CTYPE)
    saved_fds = [os.dup(fd) for fd in (0, 1, 2)]
    cwd = os.open(".", os.O_RDONLY)
    mask = os.umask(0)
    os.umask(mask)
    environ = dict(os.environb)
    argv = sys.argv
    streams = (sys.stdin, sys.stdout, sys.stderr, sys.__stdin__, sys.__stdout__, sys.__stderr__)
    try:
        yield
    finally:
        for stream in (sys.stdout, sys.stderr):
            with contextlib.suppress(Exception):
                stream.flush()
        for target, fd in zip((0, 1, 2), saved_fds, strict=True):
            os.dup2(fd, target)
            os.close(fd)
        os.fchdir(cwd)
        os.close(cwd)
        os.umask(mask)
        os.environb.clear()
        os.environb.update(environ)
        time.tzset()
        locale.setlocale(locale.LC_CTYPE, ctype)
        sys.argv = argv
        (sys.stdin, sys.stdout, sys.stderr) = streams[:3]
        (sys.__stdin__, sys.__stdout__, sys.__stderr__) = streams[3:]  # type: ignore[misc]


def test_the_child_becomes_the_client(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    import locale

    if locale.setlocale(locale.LC_CTYPE) == "C":
        pytest.skip("this process runs in the C locale: the client's would not differ")
    client_folder = tmp_path / "client"
    client_folder.mkdir()
    stdin_r, stdin_w = os.pipe()
    stdout_r, stdout_w = os.pipe()
    stderr_r, stderr_w = os.pipe()
    os.write(stdin_w, "the payload é".encode())
    os.close(stdin_w)
    folder = os.open(client_folder, os.O_RDONLY)
    monkeypatch.setenv("ENGRAM_CLIENT_ONLY", "yes")
    monkeypatch.setenv("TZ", "EST+5")
    monkeypatch.setenv("LC_ALL", "C")  # this process runs under C.UTF-8 or another locale
    monkeypatch.setattr(
        sys, "stdout", io.TextIOWrapper(io.BytesIO(), encoding="latin-1", line_buffering=True)
    )
    previous = os.umask(0o077)
    try:
        request = resident_server._Request(
            resident._request("k", ["engram", "hook", "x"]).partition(b"\n")[2].split(b"\0")
        )
    finally:
        os.umask(previous)
    monkeypatch.undo()  # the server's own environment and streams again
    fds = [stdin_r, stdout_w, stderr_w, folder]
    seen: dict[str, object] = {}
    with _process_state_kept():
        resident_server._become_the_client(request, fds)
        seen["cwd"] = os.getcwd()
        seen["umask"] = os.umask(0o077)
        seen["environ"] = os.environ.get("ENGRAM_CLIENT_ONLY")
        seen["hour"] = time.localtime(0).tm_hour  # 1970-01-01 00:00 UTC is 19:00 at EST+5
        seen["argv"] = list(sys.argv)
        seen["locale"] = locale.setlocale(locale.LC_CTYPE)
        seen["stdin"] = sys.stdin.read()
        seen["pristine"] = sys.__stdout__ is sys.stdout and sys.__stdin__ is sys.stdin
        print("café")
        print("to stderr", file=sys.stderr)
        seen["closed"] = [_is_open(fd) for fd in fds]
    for fd in (stdout_w, stderr_w):
        with contextlib.suppress(OSError):
            os.close(fd)
    with open(stdout_r, "rb") as out, open(stderr_r, "rb") as err:
        assert out.read() == "café\n".encode("latin-1")
        assert err.read() == b"to stderr\n"
    assert seen == {
        "cwd": str(client_folder),
        "umask": 0o077,
        "environ": "yes",
        "hour": 19,
        "argv": ["engram", "hook", "x"],
        "locale": "C",
        "stdin": "the payload é",
        "pristine": True,
        "closed": [False, False, False, False],
    }
    assert "ENGRAM_CLIENT_ONLY" not in os.environ  # this process's own environment is back


def _is_open(fd: int) -> bool:
    try:
        os.fstat(fd)
    except OSError:
        return False
    return True


def test_a_client_that_goes_away_ends_its_child() -> None:
    got: list[int] = []
    previous = signal.signal(signal.SIGTERM, lambda signum, frame: got.append(signum))
    left, right = socket.socketpair()
    try:
        with left, right:
            resident_server._watch_client(right)
            left.close()  # the agent killed its hook
            deadline = time.monotonic() + 10
            while not got and time.monotonic() < deadline:
                time.sleep(0.01)
    finally:
        signal.signal(signal.SIGTERM, previous)
    assert got == [signal.SIGTERM]


def test_the_command_s_exit_code_is_what_a_cold_process_ends_with(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert resident_server._command_code(["--version"]) == 0
    assert capsys.readouterr().out.strip()
    assert resident_server._command_code(["no-such-command"]) == 2  # argparse's usage error
    assert "invalid choice" in capsys.readouterr().err


def test_a_log_past_a_mebibyte_starts_again(folder: Path) -> None:
    digest = resident.key_digest("another interpreter")
    log = folder / f"{digest}.log"
    log.write_bytes(b"x" * ((1 << 20) + 1))
    resident_server.Server(str(folder), digest).run()  # refuses, and says so in its log
    lines = log.read_text().splitlines()
    assert len(lines) == 1 and lines[0].endswith(
        "not started: this interpreter is not the installation that asked for it"
    )
    assert re.match(r"\d{4}-\d\d-\d\dT", lines[0])  # nothing of the old log is left before it
    log.write_bytes(b"y" * (1 << 20))  # at the limit: kept
    resident_server.Server(str(folder), digest).run()
    assert log.read_bytes().startswith(b"y" * (1 << 20) + b"20")


def test_the_watch_on_the_client_never_holds_the_child_at_its_exit() -> None:
    # The child waits for its non-daemon threads before it answers (as a process's exit does);
    # the watch blocks until the client goes, and the client waits for that answer.
    left, right = socket.socketpair()
    with left, right:
        before = set(threading.enumerate())
        resident_server._watch_client(right)
        (watch,) = set(threading.enumerate()) - before
        assert watch.name == "engram-resident-client" and watch.daemon
        resident_server._FINISHED[-1].append(True)  # the command finished: closing is no kill
        left.close()
        watch.join(timeout=10)
        assert not watch.is_alive()


@pytest.mark.skipif(os.getuid() != 0, reason="only root can connect as another user")
@pytest.mark.parametrize("uid", [77, 4321])  # all of the id's bytes are compared, not some
def test_a_connection_from_another_user_is_not_answered(uid: int) -> None:
    address = f"\0engram-test-{os.getpid()}"  # abstract: no folder permission in the way
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(address)
    listener.listen(1)
    data = resident._request(KEY, ["engram", "checkpoint", "list"])
    pid = os.fork()
    if pid == 0:  # pragma: no cover - another user's process
        try:
            os.setuid(uid)
            with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as conn:
                conn.connect(address)
                conn.settimeout(10)
                try:
                    _send(conn, data, [0, 1, 2, 0])
                    answer = conn.recv(100)
                except OSError:  # closed with the request unread
                    answer = b""
            os._exit(0 if answer == b"" else 1)
        finally:
            os._exit(2)
    with listener:
        conn, _ = listener.accept()
        with conn:
            assert resident_server.handshake(conn, KEY) is None
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0  # closed without a word


def test_a_server_that_cannot_listen_says_why_and_releases_its_lock(tmp_path: Path) -> None:
    # A socket's path is limited to about 108 bytes: a deep temporary folder cannot hold one.
    deep = tmp_path / ("d" * 100) / ("e" * 100)
    deep.mkdir(parents=True, mode=0o700)
    deep.chmod(0o700)
    digest = _digest()
    lock_path = resident.paths(str(deep), digest)[1]
    with _as_a_server():
        resident_server.Server(str(deep), digest).run()  # no exception escapes
    assert "stopped by an error" in _log(deep, digest)
    lock = os.open(lock_path, os.O_RDWR)
    try:
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
    finally:
        os.close(lock)


# -- the child's whole request, in this process ---------------------------------------------------
#
# What a forked child does with one connection (`serve_request`), run here so that its steps can
# be scored: the process state it takes over is put back by `_process_state_kept`; the two steps
# of a process's exit that cannot run in a test process (waiting for every thread as the
# interpreter ends, running every atexit handler of pytest's own) are recorded instead.


@pytest.fixture
def exit_steps(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    steps: list[str] = []
    monkeypatch.setattr(threading, "_shutdown", lambda: steps.append("threads waited for"))
    monkeypatch.setattr(atexit, "_run_exitfuncs", lambda: steps.append("atexit handlers run"))
    return steps


@contextlib.contextmanager
def _server_signal_handlers() -> Iterator[None]:
    """The handlers a forked child inherits from its server (which stop the server), put back
    to this process's own afterwards."""
    handlers = {
        s: signal.getsignal(s)
        for s in (signal.SIGTERM, signal.SIGHUP, signal.SIGINT, signal.SIGQUIT)
    }
    try:
        for signum in (signal.SIGTERM, signal.SIGHUP):
            signal.signal(signum, resident_server._stop)
        # A server started from a background job or under nohup ignores these two.
        for signum in (signal.SIGINT, signal.SIGQUIT):
            signal.signal(signum, signal.SIG_IGN)
        yield
    finally:
        for signum, handler in handlers.items():
            signal.signal(signum, handler)


class _Client:
    """The client's side of one request, on a thread (the client is another process): it sends
    the request and its descriptors, says go once accepted, reads the exit code, then waits
    for `leave` before closing its connection."""

    def __init__(self, argv: list[str], fds: list[int], *, gone_after_go: bool = False) -> None:
        self.conn, self.child_end = socket.socketpair()
        self.said: list[bytes] = []
        self.leave = threading.Event()
        if gone_after_go:  # killed once it has said go: it never reads the exit code
            self.leave.set()
        _send(self.conn, resident._request(KEY, argv), fds)
        self.thread = threading.Thread(target=self._talk, daemon=True)
        self.thread.start()

    def _talk(self) -> None:
        buffer = bytearray()
        accepted = resident._read_line(self.conn, buffer)
        self.said.append(accepted or b"")
        if accepted and accepted.startswith(b"A"):
            if self.leave.is_set():
                # Reads nothing more from here: the child's answer fails as to a dead client.
                self.conn.shutdown(socket.SHUT_RD)
                self.conn.sendall(b"G")
                self.conn.close()
                return
            self.conn.sendall(b"G")
            self.said.append(resident._read_line(self.conn, buffer) or b"")
        self.leave.wait(30)
        self.conn.close()

    def finish(self) -> list[bytes]:
        """Let the client go, and the child's watch on it end (no thread is left behind: the
        fork tests above need a process without them)."""
        watches = [t for t in threading.enumerate() if t.name == "engram-resident-client"]
        self.leave.set()
        self.thread.join(timeout=30)
        for watch in watches:
            watch.join(timeout=30)
        self.child_end.close()
        return self.said


def _drained(fd: int) -> tuple[bytes, bool]:
    """What a pipe holds, and whether every writer has let go of it (its end of file)."""
    os.set_blocking(fd, False)
    data = b""
    while True:
        try:
            chunk = os.read(fd, 1 << 16)
        except BlockingIOError:
            return data, False
        if not chunk:
            return data, True
        data += chunk


def test_a_request_runs_as_the_client_then_lets_go_of_it_before_closing_the_stores(
    workspace: Path, initialised_store: Path, exit_steps: list[str]
) -> None:
    put_initialised_store(initialised_store, workspace)
    (workspace / ".git").mkdir()
    stdin_r, stdin_w = os.pipe()
    stdout_r, stdout_w = os.pipe()
    stderr_r, stderr_w = os.pipe()
    folder = os.open(workspace, os.O_RDONLY)
    client = _Client(
        ["engram", "checkpoint", "list", "--json"], [stdin_r, stdout_w, stderr_w, folder]
    )
    for fd in (stdin_r, stdout_w, stderr_w, folder):
        os.close(fd)  # the child holds the only copies now, as after a real client's send
    seen: dict[str, object] = {}
    with _process_state_kept(), _server_signal_handlers():
        code = resident_server.serve_request(client.child_end, KEY)
        seen["handlers"] = [
            signal.getsignal(s)
            for s in (signal.SIGTERM, signal.SIGHUP, signal.SIGINT, signal.SIGQUIT)
        ]
        # Still the child: its standard streams are no longer the client's.
        seen["stdout"], seen["stdout ended"] = _drained(stdout_r)
        seen["stderr"], seen["stderr ended"] = _drained(stderr_r)
        try:
            os.write(stdin_w, b"more input")
            seen["stdin read by the child"] = True
        except BrokenPipeError:
            seen["stdin read by the child"] = False
        kills: list[int] = []
        signal.signal(signal.SIGTERM, lambda signum, frame: kills.append(signum))
        said = client.finish()  # the client leaves once it has its answer
    for fd in (stdin_w, stdout_r, stderr_r):
        os.close(fd)
    assert code == 0 and said == [b"A%d" % os.getpid(), b"X0"]
    assert json.loads(bytes(seen.pop("stdout")))["checkpoints"] == []  # type: ignore[arg-type]
    assert seen == {
        # Killed as a cold process would be, and Ctrl-C and Ctrl-\ as at a terminal though the
        # server ignored both.
        "handlers": [
            signal.SIG_DFL,
            signal.SIG_DFL,
            signal.default_int_handler,
            signal.SIG_DFL,
        ],
        "stdout ended": True,
        "stderr": b"",
        "stderr ended": True,
        "stdin read by the child": False,
    }
    assert kills == []  # the client leaving after its answer does not kill the child
    assert exit_steps == ["threads waited for", "atexit handlers run"]
    # The store the command opened was closed after the answer: its log folded into the file.
    assert not (workspace / ".engram" / "engram.db-wal").exists()


@pytest.mark.parametrize(
    ("argv", "code"),
    [(["engram", "hook", "claude-code", "PreToolUse"], 0), (["engram", "checkpoint", "list"], 1)],
)
def test_a_child_that_cannot_become_the_client_says_why_and_a_hook_still_succeeds(
    tmp_path: Path, exit_steps: list[str], argv: list[str], code: int
) -> None:
    not_a_folder = tmp_path / "a file"
    not_a_folder.write_text("")
    stdin_r, stdin_w = os.pipe()
    stdout_r, stdout_w = os.pipe()
    stderr_r, stderr_w = os.pipe()
    passed = os.open(not_a_folder, os.O_RDONLY)  # the working folder a client sends: no folder
    client = _Client(argv, [stdin_r, stdout_w, stderr_w, passed])
    for fd in (stdin_r, stdout_w, stderr_w, passed):
        os.close(fd)
    before = set(os.listdir("/proc/self/fd"))
    with _process_state_kept(), _server_signal_handlers():
        answered = resident_server.serve_request(client.child_end, KEY)
        said = client.finish()
    for fd in set(os.listdir("/proc/self/fd")) - before:  # the file the child could not enter
        with contextlib.suppress(OSError):
            if os.path.samestat(os.fstat(int(fd)), not_a_folder.stat()):
                os.close(int(fd))
    with open(stderr_r, "rb") as err, open(stdout_r, "rb") as out:
        assert err.read() == (
            b"engram: the resident server could not run the command: "
            b"NotADirectoryError(20, 'Not a directory')\n"
        )
        assert out.read() == b""
    os.close(stdin_w)
    assert answered == code and said == [b"A%d" % os.getpid(), b"X%d" % code]
    assert exit_steps == []  # no command ran


def test_a_child_whose_client_is_gone_still_ends_with_its_exit_code(
    tmp_path: Path, exit_steps: list[str]
) -> None:
    # The client was killed after it said go, its stderr gone with it: the child can tell it
    # neither why it failed nor its exit code, and still ends as it would have.
    not_a_folder = tmp_path / "a file"
    not_a_folder.write_text("")
    stderr_r, stderr_w = os.pipe()
    os.close(stderr_r)
    passed = os.open(not_a_folder, os.O_RDONLY)
    client = _Client(["engram", "checkpoint", "list"], [0, 1, stderr_w, passed], gone_after_go=True)
    for fd in (stderr_w, passed):
        os.close(fd)
    before = set(os.listdir("/proc/self/fd"))
    with _process_state_kept(), _server_signal_handlers():
        answered = resident_server.serve_request(client.child_end, KEY)
        said = client.finish()
    for fd in set(os.listdir("/proc/self/fd")) - before:
        with contextlib.suppress(OSError):
            if os.path.samestat(os.fstat(int(fd)), not_a_folder.stat()):
                os.close(int(fd))
    assert answered == 1 and said == [b"A%d" % os.getpid()]


def test_a_request_the_child_must_not_run_ends_it_with_nothing_run(exit_steps: list[str]) -> None:
    client = _Client(["engram", "checkpoint", "list"], [0, 1, 2])  # three descriptors, not four
    with _server_signal_handlers():
        code = resident_server.serve_request(client.child_end, KEY)
    assert code == 0 and client.finish() == [b"R another installation"]
    assert exit_steps == []


def test_the_command_s_output_is_flushed_and_exit_handlers_run_before_the_answer(
    capsys: pytest.CaptureFixture[str], exit_steps: list[str]
) -> None:
    assert resident_server._run_command(["--version"]) == 0
    assert capsys.readouterr().out.strip()  # written out before the exit code is sent
    assert exit_steps == ["threads waited for", "atexit handlers run"]


def test_the_server_process_starts_from_the_root_with_the_folder_and_digest_it_was_given(
    folder: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Closing every inherited descriptor is the one step that cannot run in a test process (it
    # would close pytest's own); tests/cli/test_resident.py starts real servers with it.
    closed: list[bool] = []
    monkeypatch.setattr(
        resident_server, "_close_inherited_descriptors", lambda: closed.append(True)
    )
    digest = resident.key_digest("another interpreter")  # refuses at once, in its log
    monkeypatch.setattr(sys, "argv", ["-c", str(folder), digest])
    monkeypatch.chdir(folder.parent)
    resident_server.main()
    assert closed == [True]
    assert os.getcwd() == "/"  # holds no user's folder for ten minutes
    assert "not started: this interpreter is not the installation" in _log(folder, digest)


def test_a_server_told_to_stop_stops_at_once_and_says_so(
    folder: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ENGRAM_RESIDENT_IDLE", "20")
    digest = _digest()
    socket_path, lock_path, _ = resident.paths(str(folder), digest)

    def stop() -> None:  # `engram daemon stop`
        _wait_until_listening(socket_path)
        os.kill(os.getpid(), signal.SIGTERM)

    stopper = threading.Thread(target=stop)
    stopper.start()
    started = time.monotonic()
    with _as_a_server():
        resident_server.Server(str(folder), digest).run()
    stopper.join()
    assert time.monotonic() - started < 15
    assert "stopped (SIGTERM)" in _log(folder, digest)
    assert not os.path.exists(socket_path)
    lock = os.open(lock_path, os.O_RDWR)
    try:
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)  # released: `engram` starts another
    finally:
        os.close(lock)


def test_a_stop_that_comes_as_the_spare_is_forked_ends_the_server_and_its_spare_at_once(
    folder: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _no_other_threads()  # (the spare is forked only when no other thread runs)
    monkeypatch.setenv("ENGRAM_RESIDENT_IDLE", "20")
    # A spare still copying its memory when the server stops (a busy machine).
    monkeypatch.setattr(resident_server, "_copy_written_memory_now", lambda: time.sleep(60))
    digest = _digest()
    socket_path, lock_path, _ = resident.paths(str(folder), digest)
    _SIGNAL_IN_NEXT_SERVER_FORK.append(signal.SIGTERM)  # `engram daemon stop`
    started = time.monotonic()
    try:
        with _as_a_server():
            resident_server.Server(str(folder), digest).run()
        left_behind = _own_children()
    finally:
        _SIGNAL_IN_NEXT_SERVER_FORK.clear()
        for pid in _own_children():
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
    assert time.monotonic() - started < 15  # not after its idle time
    assert "stopped (SIGTERM)" in _log(folder, digest)
    assert left_behind == []  # its spare is gone with it
    assert not os.path.exists(socket_path)
    lock = os.open(lock_path, os.O_RDWR)
    try:
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)  # released: `engram` starts another
    finally:
        os.close(lock)


def test_after_the_warm_up_a_child_has_no_pattern_of_engram_left_to_compile(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """Every child is forked from the warmed server: a pattern compiled on first use that the
    warm-up missed would be compiled again in every hook and checkpoint."""
    from memory_core.lazy_pattern import _PatternCompiledOnFirstUse

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))

    def lazy_patterns() -> list[tuple[str, str, _PatternCompiledOnFirstUse]]:
        return [
            (module_name, name, value)
            for module_name, module in list(sys.modules.items())
            if module_name.startswith("memory_core.")
            and module_name not in resident_server.COLD_ONLY
            for name, value in list(vars(module).items())
            if isinstance(value, _PatternCompiledOnFirstUse)
        ]

    # As a fresh process has them: none compiled yet (whatever earlier tests used).
    for _module, _name, pattern in lazy_patterns():
        source = pattern.__dict__["_source"]
        pattern.__dict__.clear()
        pattern.__dict__["_source"] = source
    try:
        resident_server.warm_up()
    finally:
        gc.unfreeze()
    patterns = lazy_patterns()
    assert len(patterns) > 20  # (the hooks', the journal's, the CLI's...)
    left = [
        f"{module}.{name}" for module, name, pattern in patterns if "search" not in vars(pattern)
    ]
    assert left == []


# -- the spare child's hand-off, its code stamp and its warm-up, in this process ----------------


def _alarm_if_blocked() -> contextlib.AbstractContextManager[None]:
    """A call that must not wait is interrupted after two seconds, and fails the test."""

    @contextlib.contextmanager
    def alarm() -> Iterator[None]:
        def blocked(signum: int, frame: object) -> None:
            raise AssertionError("blocked")

        previous = signal.signal(signal.SIGALRM, blocked)
        signal.setitimer(signal.ITIMER_REAL, 2.0)
        try:
            yield
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0)
            signal.signal(signal.SIGALRM, previous)

    return alarm()


def test_a_spare_that_has_not_said_ready_is_not_waited_for() -> None:
    channel, spare_end = socket.socketpair()
    with channel, spare_end:
        spare = resident_server._Spare(12345, channel)
        with _alarm_if_blocked():
            assert not spare.ready()  # still copying its memory: the request does not wait
        spare_end.sendall(resident_server.READY)
        assert spare.ready() and spare.ready()  # said once, kept


def test_a_connection_is_handed_to_a_ready_spare(folder: Path) -> None:
    server = resident_server.Server(str(folder), _digest())
    server.spare = None
    client, conn = socket.socketpair()
    with client, conn:
        assert server._hand_to_spare(conn) is None  # no spare: a child of its own
        channel, spare_end = socket.socketpair()
        with spare_end:
            server.spare = resident_server._Spare(12345, channel)
            spare_end.sendall(resident_server.READY)
            assert server._hand_to_spare(conn) == 12345
            assert server.spare is None and channel.fileno() == -1  # handed over once
            handed = resident_server._await_connection(spare_end)
        assert handed is not None
        with handed:  # the spare now talks to the client itself
            handed.sendall(b"A1\n")
            assert client.recv(10) == b"A1\n"


def test_a_spare_whose_server_left_gets_no_connection() -> None:
    channel, spare_end = socket.socketpair()
    channel.close()
    with spare_end:
        assert resident_server._await_connection(spare_end) is None


def test_the_code_stamp_before_each_request_is_of_the_paths_found_once(tmp_path: Path) -> None:
    source = tmp_path / "module.py"
    source.write_text("x = 1\n")
    st = source.stat()
    assert resident_server.code_stamp([str(source)]) == ((str(source), st.st_mtime_ns, 6),)
    assert resident_server.code_stamp([str(tmp_path / "gone.py")]) == (
        (str(tmp_path / "gone.py"), -1, -1),
    )


def test_the_warm_up_compiles_the_patterns_kept_in_a_module_s_dictionaries(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import types

    from memory_core.lazy_pattern import compile_later

    table: dict[str, Any] = {"number": compile_later(r"\d+"), "nested": [compile_later(r"[a-z]+")]}
    resident_server.compile_module_patterns([types.SimpleNamespace(TABLE=table)])

    def no_compile(*args: object) -> None:
        raise AssertionError("compiled in the child")

    monkeypatch.setattr(re, "compile", no_compile)
    assert table["number"].sub("N", "a1b22") == "aNbN"
    assert table["nested"][0].sub("w", "ab1") == "w1"


@pytest.mark.skipif(os.getuid() != 0, reason="only root can take another group")
def test_a_client_of_this_user_in_another_group_is_answered() -> None:
    # Only the user's id is compared: a group id next to it in the credentials is not.
    os.setegid(4321)
    try:
        left, right = socket.socketpair()  # the credentials are those of its creation
    finally:
        os.setegid(0)
    with left, right:
        _send(left, resident._request(KEY, ["engram", "checkpoint", "list"]), [0, 1, 2, 0])
        left.sendall(b"G")
        accepted = resident_server.handshake(right, KEY)
        assert accepted is not None
        for fd in accepted[1]:
            os.close(fd)
