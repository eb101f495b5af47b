"""engram's resident fork server: imports engram once, forks a fresh child per command.

Started detached by a cold `engram` (memory_core/resident.py) as
`python -c SERVER_BOOT RUNTIME_DIR DIGEST`; docs/resident.md tells the whole story. The server
is single-threaded (forking a threaded process copies locks held by threads that do not exist
in the child) and never runs a command itself: each connection is forked off at once, and the
child reads the request, answers "accepted, pid N", waits for the client's "go", takes the
client's descriptors, folder, umask, environment and argv, runs exactly the code a cold
`engram` runs, and sends its exit code. So two agents at once are two children, and each
command starts from the same state, the one a cold process reaches after its imports.

The server exits after IDLE seconds without a request (ENGRAM_RESIDENT_IDLE, default 600),
when engram's code or the installed packages change (checked before every fork: a request is
never run by old code; it is refused, and the client runs it itself), when its socket is
removed or replaced, or on SIGTERM (`engram daemon stop`).
"""

from __future__ import annotations

import contextlib
import os
import sys

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any


def _close_inherited_descriptors() -> None:
    # Whatever the spawning hook had open (an agent's pipes marked inheritable) must not be
    # held for ten minutes by a server: the agent would wait for an end of file that never comes.
    os.closerange(3, 1 << 16)


def main() -> None:
    _close_inherited_descriptors()
    os.chdir("/")
    folder, digest = sys.argv[1], sys.argv[2]
    Server(folder, digest).run()


IDLE_SECONDS_DEFAULT = 600.0
# Packages the commands import inside functions (so a module walk does not reach them).
WARM_MODULES = (
    "argparse",
    "contextlib",
    "dataclasses",
    "datetime",
    "difflib",
    "fcntl",
    "hashlib",
    "json",
    "orjson",
    "pathspec",
    "regex",
    "shlex",
    "socket",
    "sqlite3",
    "stat",
    "subprocess",
    "tempfile",
    "threading",
    "tomllib",
    "traceback",
    "uuid",
    "yaml",
    "zstandard",
)
# engram's modules the commands never load (another front end and its heavy dependencies).
COLD_ONLY = ("memory_core.mcp_server", "memory_core.resident_server", "memory_core.__main__")


def idle_seconds() -> float:
    try:
        return float(os.environ.get("ENGRAM_RESIDENT_IDLE", "") or IDLE_SECONDS_DEFAULT)
    except ValueError:
        return IDLE_SECONDS_DEFAULT


class Server:
    def __init__(self, folder: str, digest: str) -> None:
        from memory_core import resident

        self.folder = folder
        self.digest = digest
        self.socket_path, self.lock_path, self.marker_path = resident.paths(folder, digest)
        self.log_path = os.path.join(folder, digest + ".log")
        self.key = resident.installation_key(sys.path)
        self.idle = idle_seconds()

    def log(self, message: str) -> None:
        import time

        try:
            if os.path.getsize(self.log_path) > 1 << 20:
                os.truncate(self.log_path, 0)
        except OSError:
            pass
        try:
            with open(self.log_path, "a", encoding="utf-8") as log:
                log.write(f"{time.strftime('%Y-%m-%dT%H:%M:%S')} [{os.getpid()}] {message}\n")
        except OSError:
            pass

    def run(self) -> None:
        from memory_core import resident

        if not resident.private_dir_ok(self.folder):
            return
        if resident.key_digest(self.key) != self.digest:
            self.log("not started: this interpreter is not the installation that asked for it")
            return
        import fcntl

        lock = os.open(self.lock_path, os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            return  # another server of this installation is running or starting
        # Who holds the lock, at once (`engram daemon stop` of a server still warming up).
        _rewrite(lock, f"{os.getpid()}\n".encode())
        try:
            self._serve(lock)
        except Exception as exc:
            import traceback

            self.log(f"stopped by an error: {exc!r}\n{traceback.format_exc()}")
        finally:
            self._unlink_own_socket()
            os.close(lock)

    def _serve(self, lock: int) -> None:
        import signal
        import socket
        import time

        began = time.time()
        warm_up()
        self.code_paths = code_paths()
        self.stamp = code_stamp(self.code_paths)
        # The lock file says who holds it (`engram daemon status` reads it): pid, start, idle
        # timeout, then the requests served, rewritten in place at each one.
        head = f"{os.getpid()}\n{began:.3f}\n{self.idle:g}\n".encode()
        self.lock, self.served_offset = lock, len(head)
        _rewrite(lock, head + _served_line(0) + self.key.encode("utf-8", "surrogateescape"))
        with contextlib.suppress(OSError):
            os.unlink(self.socket_path)  # we hold the lock: whatever is there is stale
        listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        mask = os.umask(0o177)  # the socket is created 0600
        try:
            listener.bind(self.socket_path)
        finally:
            os.umask(mask)
        listener.listen(128)
        self.listener = listener
        self.socket_inode = os.stat(self.socket_path).st_ino
        # A stop signal is heard through a pipe the loop waits on, never as an exception: one
        # raised by the handler is lost where Python code runs inside a fork (the after-fork
        # hooks, e.g. logging's, print it and go on), and one handled just before the wait
        # would not end the wait; either way `engram daemon stop` waited for nothing.
        self.wakeup = os.pipe2(os.O_NONBLOCK | os.O_CLOEXEC)
        previous_wakeup = signal.set_wakeup_fd(self.wakeup[1], warn_on_full_buffer=False)
        signal.signal(signal.SIGTERM, _stop)
        signal.signal(signal.SIGHUP, _stop)
        self.log(f"listening on {self.socket_path} (warm in {time.time() - began:.2f} s)")
        try:
            self._loop(listener)
        finally:
            signal.set_wakeup_fd(previous_wakeup)
            for fd in self.wakeup:
                os.close(fd)
        listener.close()

    def _loop(self, listener: Any) -> int:
        import select
        import threading
        import time

        last_request = time.monotonic()
        served = 0
        # The spare: a child forked ahead of the next request, waiting for its connection, so
        # that a request does not wait for a fork (docs/resident.md). Forked once no request's
        # child runs any more (not beside one, which it would slow down on a busy machine), or
        # once they have run for SPARE_AFTER_SECONDS (a rollback waiting for its question).
        self.spare: _Spare | None = None
        busy: dict[int, float] = {}
        try:
            while True:
                ended = _reap_children()
                for child in ended:
                    busy.pop(child, None)
                if self.spare is not None and self.spare.pid in ended:
                    self.spare.channel.close()
                    self.spare = None
                if busy and time.monotonic() - max(busy.values()) > SPARE_AFTER_SECONDS:
                    busy.clear()  # no longer waited for (they are still reaped when they end)
                stop = self._stop_signal()
                if stop is not None:
                    self.log(f"stopped ({stop})")
                    return served
                # Never forked beside another thread (it may hold a lock the child would find
                # taken); the next request finds the thread too, and the server leaves.
                if self.spare is None and not busy and threading.active_count() == 1:
                    self.spare = self._fork_spare()
                remaining = self.idle - (time.monotonic() - last_request)
                if remaining <= 0:
                    self.log(f"idle for {self.idle:g} s after {served} requests: exiting")
                    return served
                # While a request's child runs, look again soon: the spare follows its end.
                wait = min(remaining, 30.0) if not busy else min(remaining, SPARE_POLL_SECONDS)
                ready, _, _ = select.select([listener, self.wakeup[0]], [], [], wait)
                if not self._socket_is_ours():
                    self.log("the socket was removed or replaced: exiting")
                    return served
                if listener not in ready:
                    continue
                try:
                    conn, _ = listener.accept()
                except OSError:
                    continue
                last_request = time.monotonic()
                if threading.active_count() > 1:
                    # Some import started a thread: forking now could copy a lock it holds.
                    conn.close()
                    self.log("a thread is running in the server: exiting (it must not fork)")
                    return served
                if code_stamp(self.code_paths) != self.stamp:
                    # Closed before any answer: the client runs the command itself, with the
                    # new code.
                    conn.close()
                    self.log("engram's code or packages changed: exiting")
                    return served
                pid = self._hand_to_spare(conn) or self._fork_for(conn)
                conn.close()
                if pid is None:
                    continue
                busy[pid] = time.monotonic()
                served += 1
                os.pwrite(self.lock, _served_line(served), self.served_offset)
        finally:
            if self.spare is not None:
                self._end_spare(self.spare)

    def _hand_to_spare(self, conn: Any) -> int | None:
        """Give the connection to the spare child; its pid, or None when there is none."""
        import socket

        spare = self.spare
        if spare is None or not spare.ready():
            return None  # still copying its memory: this request does not wait for that
        self.spare = None
        try:
            spare.channel.sendmsg(
                [b"c"], [(socket.SOL_SOCKET, socket.SCM_RIGHTS, _fd_bytes(conn.fileno()))]
            )
        except OSError:
            return None  # it died meanwhile: a child of its own for this request
        finally:
            spare.channel.close()
        return spare.pid

    def _fork_for(self, conn: Any) -> int | None:
        """A child forked now for the connection; its pid (None when the fork failed)."""
        try:
            pid = os.fork()
        except OSError as exc:
            self.log(f"fork failed: {exc!r}")
            return None
        if pid == 0:
            try:
                self._leave_the_server()
                run_child(conn, self.key)
            finally:
                os._exit(70)  # a child never unwinds into the server's loop
        return pid

    def _fork_spare(self) -> _Spare | None:
        """A child that waits for the next request's connection (`_hand_to_spare`)."""
        import socket

        try:
            channel, spare_end = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        except OSError:
            return None
        try:
            pid = os.fork()
        except OSError as exc:
            channel.close()
            spare_end.close()
            self.log(f"fork failed: {exc!r}")
            return None
        if pid == 0:
            try:
                channel.close()
                self._leave_the_server()
                _copy_written_memory_now()
                spare_end.sendall(READY)
                conn = _await_connection(spare_end)
                if conn is not None:
                    run_child(conn, self.key)
            finally:
                os._exit(0)
        spare_end.close()
        return _Spare(pid, channel)

    def _end_spare(self, spare: _Spare) -> None:
        """The server leaves: its spare, which has no request, is killed and waited for, so
        that once the server is gone so is every copy of its lock (`engram daemon stop` waits
        for the lock, a new server takes it) even when the spare is still copying its memory
        on a busy machine."""
        import signal

        spare.channel.close()
        self.spare = None
        with contextlib.suppress(OSError):
            os.kill(spare.pid, signal.SIGKILL)
        with contextlib.suppress(ChildProcessError):
            os.waitpid(spare.pid, 0)

    def _stop_signal(self) -> str | None:
        """The stop signal received since the last look (SIGTERM or SIGHUP), if any."""
        import signal

        try:
            received = os.read(self.wakeup[0], 512)
        except BlockingIOError:
            return None
        for number in received:
            if number in (signal.SIGTERM, signal.SIGHUP):
                return signal.Signals(number).name
        return None

    def _leave_the_server(self) -> None:
        """In a child: let go of what is the server's alone. The lock: a child still running
        (a rollback waiting for its answer) must not keep the next server from starting."""
        import signal

        os.close(self.lock)
        self.listener.close()
        if self.spare is not None:
            self.spare.channel.close()
        # The server's handlers stop the server: a child stopped dies as a cold process would.
        for signum in (signal.SIGTERM, signal.SIGHUP):
            signal.signal(signum, signal.SIG_DFL)
        signal.set_wakeup_fd(-1)
        for fd in self.wakeup:
            os.close(fd)

    def _socket_is_ours(self) -> bool:
        try:
            return os.stat(self.socket_path).st_ino == self.socket_inode
        except OSError:
            return False

    def _unlink_own_socket(self) -> None:
        if getattr(self, "listener", None) is not None and self._socket_is_ours():
            with contextlib.suppress(OSError):
                os.unlink(self.socket_path)


# How often the server looks whether the requests' children are done, while one runs, and
# how long it waits for them before it forks the next spare anyway.
SPARE_POLL_SECONDS = 0.02
SPARE_AFTER_SECONDS = 2.0


# What the spare says on its channel once it waits for a connection.
READY = b"r"


class _Spare:
    """A forked child waiting for a connection, and the server's end of its channel."""

    def __init__(self, pid: int, channel: Any) -> None:
        self.pid = pid
        self.channel = channel
        self.waiting = False

    def ready(self) -> bool:
        """Whether it waits for a connection now (it said so), without waiting for it."""
        import socket

        if not self.waiting:
            try:
                self.waiting = self.channel.recv(1, socket.MSG_DONTWAIT) == READY
            except OSError:  # nothing said yet (BlockingIOError), or it is gone
                return False
        return self.waiting


# madvise(MADV_POPULATE_WRITE) (Linux 5.14): fault a range in writable now, which for pages
# shared with the server since the fork means copying them now.
MADV_POPULATE_WRITE = 23


def _copy_written_memory_now() -> None:
    """In the spare, before it waits: take its own copy of the memory a command writes to
    (Python's heap and arenas), so that the request does not pay a copy-on-write fault for
    each page it touches (a thousand or more for a hook: 3 to 5 ms of CPU). Linux only; where
    the kernel cannot, the pages are copied as they are written, as in any forked child."""
    populate = _POPULATE[0] if _POPULATE else None
    if populate is None:
        return
    try:
        with open("/proc/self/maps", encoding="ascii") as maps:
            ranges = [line.split() for line in maps]
    except OSError:
        return
    for fields in ranges:
        private_writable = fields[1][1] == "w" and fields[1][3] == "p"
        anonymous = len(fields) < 6 or fields[5] == "[heap]"
        if private_writable and anonymous:
            low, high = (int(bound, 16) for bound in fields[0].split("-"))
            if populate(low, high - low, MADV_POPULATE_WRITE) != 0:
                return  # an older kernel: none of it can be done


# The C library's madvise, found once by the server (`warm_up`) where the platform has it.
_POPULATE: list[Any] = []


def _find_madvise() -> None:
    if not sys.platform.startswith("linux"):
        return
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        madvise = libc.madvise
        madvise.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
        madvise.restype = ctypes.c_int
    except (OSError, AttributeError, ImportError):
        return
    _POPULATE.append(madvise)


def _fd_bytes(fd: int) -> bytes:
    return fd.to_bytes(4, sys.byteorder, signed=True)


def _await_connection(channel: Any) -> Any:
    """In the spare: the connection the server hands over, or None when the server closed the
    channel (it exits, or it gave up on this spare)."""
    import socket

    try:
        _, ancillary, _, _ = channel.recvmsg(1, socket.CMSG_SPACE(4))
    except OSError:
        return None
    channel.close()
    for level, kind, payload in ancillary:
        if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS and len(payload) >= 4:
            return socket.socket(fileno=int.from_bytes(payload[:4], sys.byteorder, signed=True))
    return None


def _served_line(count: int) -> bytes:
    return b"%12d\n" % count


def _stop(signum: int, frame: object) -> None:
    """SIGTERM or SIGHUP: the server's loop hears it through its wakeup descriptor and stops."""


def _rewrite(fd: int, data: bytes) -> None:
    """The file's whole content replaced, never empty in between (a reader may look at once)."""
    os.pwrite(fd, data, 0)
    os.ftruncate(fd, len(data))


def _reap_children() -> set[int]:
    """Collect the children that ended; their pids."""
    ended: set[int] = set()
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return ended
        if pid == 0:
            return ended
        ended.add(pid)


def warm_up() -> None:
    """Import what the commands import, and compile the patterns they compile on first use:
    every child starts from here."""
    import importlib
    import pkgutil

    import memory_core

    for name in WARM_MODULES:
        with contextlib.suppress(ImportError):
            importlib.import_module(name)
    with contextlib.suppress(Exception):
        from memory_core import journal

        journal.compile_default_rules()  # the ignore rules every checkpoint with defaults uses
    modules = []
    for info in pkgutil.walk_packages(memory_core.__path__, "memory_core."):
        if info.name in COLD_ONLY:
            continue
        try:
            modules.append(importlib.import_module(info.name))
        except Exception:
            continue
    compile_module_patterns(modules)
    with contextlib.suppress(Exception):
        from memory_core import quota

        quota.learn_latest_columns()  # every hook measures its session's use: which columns
    with contextlib.suppress(Exception):
        from memory_core import redact

        redact.warm_up()  # every hook redacts: its patterns and guard tables, made once here
    with contextlib.suppress(Exception):
        from memory_core.cli import main as command_line
        from memory_core.resident import RESIDENT_COMMANDS

        # `hook` runs before the command line's parser; the others parse with one built here.
        command_line.prebuild_parsers(sorted(RESIDENT_COMMANDS - {"hook"}))
    _find_madvise()
    import gc

    # Objects of the imports never die: moved out of the collector's view, so a child does not
    # copy their pages by touching their reference counts in its first collections.
    gc.collect()
    gc.freeze()


def compile_module_patterns(modules: list[Any]) -> None:
    """Compile now the patterns the modules compile on first use (`lazy_pattern`): those of
    their module-level names, and those in their module-level tables."""
    from memory_core.lazy_pattern import _PatternCompiledOnFirstUse

    for module in modules:
        for value in list(vars(module).values()):
            for pattern in _lazy_patterns_in(value, _PatternCompiledOnFirstUse):
                try:
                    pattern.search  # noqa: B018 - compiles and keeps the pattern
                except Exception:
                    continue


def _lazy_patterns_in(value: object, kind: type, depth: int = 2) -> list[Any]:
    """The patterns compiled on first use in a module-level value: the value itself, or those
    in its lists, tuples and dictionaries (a table of patterns and their placeholders, as
    `gotchas.normalize` keeps), `depth` levels down."""
    if isinstance(value, kind):
        return [value]
    if depth <= 0:
        return []
    if isinstance(value, dict):
        value = list(value.values())
    if not isinstance(value, list | tuple):
        return []
    return [found for item in value for found in _lazy_patterns_in(item, kind, depth - 1)]


def code_stamp(paths: list[str] | None = None) -> tuple[tuple[str, int, int], ...]:
    """engram's source files and folders and the import path's folders, with their times and
    sizes: an upgrade, an uninstall or an edit of an editable install changes it (a file
    added or removed changes its folder's time). `paths`: those found by `code_paths` once,
    so that the check before each request is a stat of each and no walk."""
    entries = []
    for path in code_paths() if paths is None else paths:
        try:
            st = os.stat(path)
        except OSError:
            entries.append((path, -1, -1))  # gone: differs from what was seen
            continue
        entries.append((path, st.st_mtime_ns, st.st_size))
    return tuple(entries)


def code_paths() -> list[str]:
    """What `code_stamp` looks at: engram's folders and its `.py` and `.sql` files, then the
    folders of the import path."""
    import memory_core

    paths = []
    for top in memory_core.__path__:
        for folder, dirs, files in os.walk(top):
            dirs[:] = [d for d in dirs if d != "__pycache__"]
            paths.append(folder)
            paths.extend(
                os.path.join(folder, name) for name in files if name.endswith((".py", ".sql"))
            )
    paths.extend(sys.path)  # one missing now that appears later is a change too
    return paths


# -- the child -------------------------------------------------------------------------------


class _Request:
    def __init__(self, fields: list[bytes]) -> None:
        self.protocol = fields[0].decode()
        self.key = fields[1].decode("utf-8", "surrogateescape")
        self.umask = int(fields[2])
        self.streams = [
            (
                fields[3 + 4 * i].decode(),
                fields[4 + 4 * i].decode(),
                fields[5 + 4 * i] == b"1",
                fields[6 + 4 * i] == b"1",
            )
            for i in range(3)
        ]
        count = int(fields[15])
        self.argv = [os.fsdecode(word) for word in fields[16 : 16 + count]]
        self.environ = [entry.partition(b"=") for entry in fields[16 + count :]]


def _receive(conn: object) -> tuple[_Request, list[int]]:
    import socket

    assert isinstance(conn, socket.socket)
    fds: list[int] = []
    data, ancillary, _, _ = conn.recvmsg(1 << 16, socket.CMSG_SPACE(8 * 4))
    for level, kind, payload in ancillary:
        if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
            usable = len(payload) - len(payload) % 4
            fds += [int.from_bytes(payload[i : i + 4], sys.byteorder) for i in range(0, usable, 4)]
    header, _, body = data.partition(b"\n")
    length = int(header)
    chunks = [body]
    received = len(body)
    while received < length:
        chunk = conn.recv(min(1 << 16, length - received))
        if not chunk:
            raise EOFError("the request ended early")
        chunks.append(chunk)
        received += len(chunk)
    return _Request(b"".join(chunks).split(b"\0")), fds


def run_child(conn: object, key: str) -> None:
    """A fresh copy of the server for one request: never returns (os._exit)."""
    os._exit(serve_request(conn, key))


def serve_request(conn: object, key: str) -> int:
    """The forked child's work: agree to run the request, become the client, run its command,
    answer with the exit code, then close the stores. The code this process must end with
    (0 when it did not run the request: the client then runs it itself)."""
    import signal
    import socket

    assert isinstance(conn, socket.socket)
    # The server's handlers stop the server: a child killed (its client gone) dies as a cold
    # process would.
    for signum in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(signum, signal.SIG_DFL)
    # Ctrl-C and Ctrl-\ as a cold command at a terminal has them, whatever the server was
    # started from: a server spawned by a background job or under nohup ignores both, and its
    # children inherited that, so a Ctrl-C forwarded by the client to a prompt was lost.
    signal.signal(signal.SIGINT, signal.default_int_handler)
    signal.signal(signal.SIGQUIT, signal.SIG_DFL)
    try:
        accepted = handshake(conn, key)
    except Exception:
        accepted = None
    if accepted is None:
        return 0
    request, fds = accepted
    profile = None
    try:
        _become_the_client(request, fds)
        _watch_client(conn)
        from memory_core import store

        # The store's close (the write-ahead log folded, with its fsyncs) comes after the
        # client has its answer: see _answered below.
        store.defer_closing()
        profile = _profiler()
        code = _run_command(request.argv[1:])
        if profile is not None:
            profile.save("command")
    except BaseException as exc:
        with contextlib.suppress(OSError):
            os.write(
                2, f"engram: the resident server could not run the command: {exc!r}\n".encode()
            )
        from memory_core.resident import command_of

        code = 0 if command_of(request.argv[1:]) == "hook" else 1  # a hook never fails the agent
    for finished in _FINISHED:
        finished.append(True)  # the client leaving after its answer is no reason to stop
    _let_go_of_the_client()
    with contextlib.suppress(OSError):
        conn.sendall(b"X%d\n" % code)
    if profile is not None:
        profile.start()
    _answered()
    if profile is not None:
        profile.save("after")
    return code


# A benchmark's view into a child (never set by engram itself): `ENGRAM_RESIDENT_PROFILE=FOLDER`
# in the client's environment makes the child write, per part (`command`, then `after`: the work
# after its answer), FOLDER/<pid>.<part>.json with its wall and CPU milliseconds (its own, every
# thread's, and its finished children's: git), and with ENGRAM_RESIDENT_PROFILE_MODE=wall or
# cpu, FOLDER/<pid>.<part>.prof, a cProfile of that part on that clock.
PROFILE_VARIABLE = "ENGRAM_RESIDENT_PROFILE"


class _Profile:
    def __init__(self, folder: str) -> None:
        import time

        self.folder = folder
        mode = os.environ.get(PROFILE_VARIABLE + "_MODE", "")
        self.profile: Any = None
        if mode in ("wall", "cpu"):
            import cProfile

            self.profile = cProfile.Profile(
                time.process_time if mode == "cpu" else time.perf_counter
            )
        self.start()

    def start(self) -> None:
        import time

        self.began = (time.perf_counter(), time.process_time(), _children_cpu())
        if self.profile is not None:
            self.profile.enable()

    def save(self, part: str) -> None:
        import json
        import time

        if self.profile is not None:
            self.profile.disable()
        wall, cpu, children = self.began
        times = {
            "wall_ms": (time.perf_counter() - wall) * 1000,
            "cpu_ms": (time.process_time() - cpu) * 1000,
            "children_cpu_ms": (_children_cpu() - children) * 1000,
        }
        where = os.path.join(self.folder, f"{os.getpid()}.{part}")
        with contextlib.suppress(OSError):
            with open(where + ".json", "w") as out:
                json.dump(times, out)
            if self.profile is not None:
                self.profile.dump_stats(where + ".prof")
                self.profile.clear()


def _children_cpu() -> float:
    import resource

    used = resource.getrusage(resource.RUSAGE_CHILDREN)
    return used.ru_utime + used.ru_stime


def _profiler() -> _Profile | None:
    folder = os.environ.get(PROFILE_VARIABLE)
    return _Profile(folder) if folder else None


def _let_go_of_the_client() -> None:
    """Stop holding the client's stdin, stdout and stderr: what reads the hook's output (an
    agent) waits for their end, which must come when the client exits, not when this child
    has finished closing its stores."""
    with contextlib.suppress(OSError):
        null = os.open(os.devnull, os.O_RDWR)
        for fd in (0, 1, 2):
            os.dup2(null, fd)
        os.close(null)


def _answered() -> None:
    """What the command left to do once its client has the exit code: close the stores it
    opened (the last connection folds the write-ahead log into the database, with fsyncs, as
    a cold process does at its exit). A failure here is the server's log's business only:
    the command's outcome is told already."""
    try:
        from memory_core import store

        store.close_deferred()
    except BaseException:
        pass


def handshake(conn: object, key: str) -> tuple[_Request, list[int]] | None:
    """Read the request and agree to run it: "accepted, pid N", then wait for the client's
    "go". The request and its descriptors once the client said go; None when this child must
    not run it (another user, another installation, a client that gave up waiting), and the
    client then runs the command itself."""
    import socket

    assert isinstance(conn, socket.socket)
    conn.settimeout(10.0)
    if hasattr(socket, "SO_PEERCRED"):  # Linux; elsewhere the 0700 folder alone guards it
        creds = conn.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, 12)
        if int.from_bytes(creds[4:8], sys.byteorder) != os.getuid():
            return None
    request, fds = _receive(conn)
    if request.protocol != key.split("\n", 1)[0] or request.key != key or len(fds) != 4:
        conn.sendall(b"R another installation\n")
        _close_all(fds)
        return None
    conn.sendall(b"A%d\n" % os.getpid())
    if conn.recv(1) != b"G":
        _close_all(fds)
        return None  # the client gave up waiting and runs the command itself
    conn.settimeout(None)
    return request, fds


def _close_all(fds: list[int]) -> None:
    for fd in fds:
        with contextlib.suppress(OSError):
            os.close(fd)


def _become_the_client(request: _Request, fds: list[int]) -> None:
    """Take the client's streams, folder, umask, environment, argv and stream settings: from
    here the process is what a cold `engram` would be after its imports."""
    for target, fd in zip((0, 1, 2), fds[:3], strict=True):
        os.dup2(fd, target)
        os.close(fd)
    os.fchdir(fds[3])
    os.close(fds[3])
    os.umask(request.umask)
    os.environ.clear()
    for name, _, value in request.environ:
        os.environb[name] = value
    import time

    time.tzset()  # TZ of the client, read by localtime
    try:
        import locale

        locale.setlocale(locale.LC_CTYPE, "")  # as Python's own start does, from the client's LC_*
    except Exception:
        pass
    sys.argv = request.argv
    sys.stdin, sys.stdout, sys.stderr = (
        _standard_stream(fd, setting) for fd, setting in enumerate(request.streams)
    )
    # What Python's start sets too (the pristine streams, for code that restores them).
    sys.__stdin__, sys.__stdout__, sys.__stderr__ = sys.stdin, sys.stdout, sys.stderr  # type: ignore[misc]


def _standard_stream(fd: int, setting: tuple[str, str, bool, bool]) -> Any:
    """sys.stdin/stdout/stderr over the client's descriptor, made as Python's start makes them
    (pylifecycle.c create_stdio), with the encoding, errors and line buffering the client's own
    start chose (from its locale, PYTHONIOENCODING, a terminal or not)."""
    import io

    encoding, errors, line_buffering, write_through = setting
    if not encoding:
        return None
    # `python -u` (PYTHONUNBUFFERED) leaves stdout and stderr unbuffered; stdin stays buffered,
    # whose read(n) waits for n bytes where a raw read returns what the pipe holds.
    unbuffered = write_through and fd != 0
    raw = io.FileIO(fd, "rb" if fd == 0 else "wb", closefd=False)
    raw.name = ("<stdin>", "<stdout>", "<stderr>")[fd]
    buffer: Any = raw
    if not unbuffered:
        buffer = io.BufferedReader(raw) if fd == 0 else io.BufferedWriter(raw)
    stream = io.TextIOWrapper(
        buffer,
        encoding=encoding,
        errors=errors,
        newline="\n",
        line_buffering=line_buffering,
        write_through=write_through,
    )
    stream.mode = "r" if fd == 0 else "w"  # type: ignore[misc]
    return stream


def _watch_client(conn: object) -> None:
    """A client that dies (an agent killing its hook, a closed terminal) kills its child, as it
    would have killed a cold process: the connection's end of stream is watched on a thread."""
    import signal
    import threading

    def watch() -> None:
        with contextlib.suppress(OSError):
            conn.recv(1)  # type: ignore[attr-defined]
        if not finished:
            os.kill(os.getpid(), signal.SIGTERM)

    finished: list[bool] = []
    threading.Thread(target=watch, name="engram-resident-client", daemon=True).start()
    _FINISHED.append(finished)


_FINISHED: list[list[bool]] = []


def _run_command(argv: list[str]) -> int:
    """What a cold `engram` does with this argv, including its exit: the code of SystemExit,
    a traceback for an uncaught exception, atexit handlers, the streams flushed."""
    code = _command_code(argv)
    import atexit

    threading = sys.modules.get("threading")
    if threading is not None:
        threading._shutdown()  # non-daemon threads are waited for, as at exit
    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        try:
            if stream is not None:
                stream.flush()
        except Exception:
            code = 120
    for finished in _FINISHED:
        finished.append(True)
    return code


def _command_code(argv: list[str]) -> int:
    """The exit code of the command, as a cold process would end: the code of SystemExit, a
    traceback and 1 for an uncaught exception (130 for Ctrl-C)."""
    from memory_core.cli.entry import run_in_process

    try:
        return _exit_code(run_in_process(argv))
    except SystemExit as exit_:
        return _exit_code(exit_.code)
    except KeyboardInterrupt:
        import traceback

        traceback.print_exc()
        return 130
    except BaseException:
        import traceback

        traceback.print_exc()
        return 1


def _exit_code(value: object) -> int:
    if value is None:
        return 0
    if isinstance(value, int):
        return value & 0xFF
    print(value, file=sys.stderr)
    return 1


if __name__ == "__main__":
    main()
