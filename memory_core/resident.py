"""The client side of engram's resident fork server (docs/resident.md).

A hook, `engram checkpoint ...`, `engram rollback ...` or `engram ingest ...` first asks a
per-user server that has imported engram once: it forks a child per request, and the child
takes this process's argv, environment, working folder, umask and its stdin/stdout/stderr
themselves (passed as file descriptors), runs exactly what this process would have run, and
sends back the exit code.
Python's start plus engram's imports (sqlite3, zstandard, OpenSSL for hashlib, argparse...)
cost more than a hook's whole budget; a fork of a process that has them costs a millisecond.

Everything here runs before engram's own code loads, so it imports only what a bare `python`
has already loaded (os, sys) and `_socket` (not `socket`, which brings enum and selectors).

Safety: this process falls back to running the command itself on any failure before the
server's child has been told to go (no server, a stale socket, a refusal, another version of
engram, a timeout), and never after it: a command never runs twice. The handshake is
request → child's "accepted, pid N" → this process's "go" → the child's exit code.
"""

from __future__ import annotations

import os
import sys

TYPE_CHECKING = False  # typing would cost this path more than the rest of it
if TYPE_CHECKING:
    from collections.abc import Sequence

PROTOCOL = "engram-resident/1"
# The commands worth sending: what runs often and where someone waits (`ingest`: a person or
# a script ingesting transcripts one file at a time pays Python's start and engram's imports for
# each, many times the reading of a file).
RESIDENT_COMMANDS = frozenset({"hook", "checkpoint", "rollback", "ingest"})
OFF_SWITCH = "ENGRAM_NO_RESIDENT"  # set to anything but "" or "0": never use the server
DIR_VARIABLE = "ENGRAM_RESIDENT_DIR"  # where the sockets live (tests point it at a temp folder)
# How long the client waits for the child's "accepted" before running the command itself.
ACCEPT_TIMEOUT_SECONDS = 5.0
# The descriptors passed: stdin, stdout, stderr, and the working folder (opened, so that a
# folder renamed or reached through a symlink is the very same one).
PASSED_STREAMS = (0, 1, 2)
# Do not start another server within this many seconds of the last attempt (a server that
# cannot start must not cost every hook a spawn).
SPAWN_BACKOFF_SECONDS = 30.0
# The server's start: sys.path[0] would be the working folder under `-c`, where another
# checkout's memory_core could shadow this one; it is dropped before engram is imported.
SERVER_BOOT = "import sys; del sys.path[0]; from memory_core.resident_server import main; main()"


def off() -> bool:
    return os.environ.get(OFF_SWITCH, "") not in ("", "0")


def command_of(argv: Sequence[str]) -> str | None:
    """The subcommand of an engram command line, past `--workspace PATH` and `--json`."""
    words = iter(argv)
    for word in words:
        if word == "--workspace":
            next(words, None)
        elif word.startswith("-"):
            if word in ("-h", "--help", "--version"):
                return None
        else:
            return word
    return None


def runtime_dir() -> str:
    """The per-user folder of the sockets, from this process's environment (so a test's HOME,
    XDG_RUNTIME_DIR or ENGRAM_RESIDENT_DIR is honoured)."""
    explicit = os.environ.get(DIR_VARIABLE)
    if explicit:
        return explicit
    xdg = os.environ.get("XDG_RUNTIME_DIR")
    if xdg and os.path.isabs(xdg):
        return os.path.join(xdg, "engram")
    temp = os.environ.get("TMPDIR") or "/tmp"
    return os.path.join(temp, f"engram-{os.getuid()}")


def private_dir_ok(folder: str) -> bool:
    """The folder is ours alone: a real directory (not a symlink), owned by this user, mode
    0700. Anything else could let another user read the descriptors and environment sent."""
    try:
        st = os.lstat(folder)
    except OSError:
        return False
    return (
        (st.st_mode & 0o170000) == 0o040000 and st.st_uid == os.getuid() and not st.st_mode & 0o077
    )


def installation_key(import_path: Sequence[str] | None = None) -> str:
    """What a server must share with this process to run its commands as it would: the
    interpreter, its flags and import path, and this engram (its folder and version).
    `import_path` is sys.path less its first entry (the script's folder, or the working folder
    under `python -m`), which differs between a client and the server it starts."""
    import memory_core

    if import_path is None:
        import_path = sys.path[1:]

    return "\n".join(
        (
            PROTOCOL,
            sys.executable,
            sys.version,
            os.path.dirname(os.path.abspath(memory_core.__file__)),
            memory_core.__version__,
            repr(tuple(sys.flags)),
            sys.getfilesystemencoding(),
            os.pathsep.join(import_path),
        )
    )


def key_digest(key: str) -> str:
    """A short name for the key (64-bit FNV-1a: hashlib would load OpenSSL)."""
    value = 0xCBF29CE484222325
    for byte in key.encode("utf-8", "surrogateescape"):
        value = ((value ^ byte) * 0x100000001B3) & 0xFFFFFFFFFFFFFFFF
    return f"{value:016x}"


def paths(folder: str, digest: str) -> tuple[str, str, str]:
    """(socket, lock file, spawn marker) of one installation in the runtime folder."""
    base = os.path.join(folder, digest)
    return base + ".sock", base + ".lock", base + ".spawned"


def _request(key: str, argv: Sequence[str]) -> bytes:
    mask = os.umask(0)
    os.umask(mask)
    streams = []
    for stream in (sys.stdin, sys.stdout, sys.stderr):
        if stream is None:
            streams += [b"", b"", b"0", b"0"]
        else:
            streams += [
                str(stream.encoding).encode(),
                str(stream.errors).encode(),
                b"1" if getattr(stream, "line_buffering", False) else b"0",
                b"1" if getattr(stream, "write_through", False) else b"0",  # python -u
            ]
    fields = [
        PROTOCOL.encode(),
        key.encode("utf-8", "surrogateescape"),
        b"%d" % mask,
        *streams,
        b"%d" % len(argv),
        *(os.fsencode(word) for word in argv),
        *(name + b"=" + value for name, value in os.environb.items()),
    ]
    body = b"\0".join(fields)
    return b"%d\n" % len(body) + body


class _Forwarder:
    """Signals this process gets while the child runs are sent on to the child (Ctrl-C in a
    terminal reaches this process's group, not the server's child)."""

    def __init__(self, pid: int) -> None:
        self.pid = pid
        self.last: int | None = None

    def __call__(self, signum: int, frame: object) -> None:
        self.last = signum
        try:  # noqa: SIM105 - contextlib is not loaded on this path
            os.kill(self.pid, signum)
        except OSError:
            pass


def _read_line(sock: object, buffer: bytearray) -> bytes | None:
    """One newline-terminated message from the socket (None at end of stream)."""
    while b"\n" not in buffer:
        chunk = sock.recv(256)  # type: ignore[attr-defined]
        if not chunk:
            return None
        buffer += chunk
    line, _, rest = bytes(buffer).partition(b"\n")
    buffer[:] = rest
    return line


def try_resident(argv: Sequence[str]) -> int | None:
    """Run `argv` in the resident server; its exit code, or None when it did not run there
    (the caller then runs it in this process)."""
    if off() or command_of(argv) not in RESIDENT_COMMANDS:
        return None
    try:
        folder = runtime_dir()
        if not private_dir_ok(folder):
            return None
        key = installation_key()
        socket_path, _, _ = paths(folder, key_digest(key))
        import _socket

        sock = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
    except Exception:  # a system without Unix sockets or uids: the command runs here
        return None
    cwd_fd = -1
    try:
        sock.settimeout(ACCEPT_TIMEOUT_SECONDS)
        sock.connect(socket_path)
        cwd_fd = os.open(".", os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
        fds = [*PASSED_STREAMS, cwd_fd]
        ancillary = b"".join(fd.to_bytes(4, sys.byteorder, signed=True) for fd in fds)
        data = _request(key, [sys.argv[0], *argv])
        sent = sock.sendmsg([data], [(_socket.SOL_SOCKET, _socket.SCM_RIGHTS, ancillary)])
        if sent < len(data):
            sock.sendall(data[sent:])
        buffer = bytearray()
        accepted = _read_line(sock, buffer)
        if accepted is None or not accepted.startswith(b"A"):
            sock.close()
            return None  # refused (another installation, code changed) or gone: not run
        pid = int(accepted[1:])
    except (OSError, ValueError):
        sock.close()
        return None
    finally:
        if cwd_fd >= 0:
            os.close(cwd_fd)
    return _run_accepted(sock, buffer, pid, hook=command_of(argv) == "hook")


def _run_accepted(sock: object, buffer: bytearray, pid: int, *, hook: bool) -> int:
    """Tell the accepted child to go, forward signals to it, and wait for its exit code. From
    "go" on the command is the child's: whatever happens, it is never run here too."""
    import _signal  # type: ignore[import-not-found]  # signal.py imports enum

    forward = _Forwarder(pid)
    previous = {}
    for signum in (_signal.SIGINT, _signal.SIGTERM, _signal.SIGHUP, _signal.SIGQUIT):
        try:  # noqa: SIM105 - contextlib is not loaded on this path
            previous[signum] = _signal.signal(signum, forward)
        except (OSError, ValueError):
            pass
    try:
        sock.settimeout(None)  # type: ignore[attr-defined]
        sock.sendall(b"G")  # type: ignore[attr-defined]
        finished = _read_line(sock, buffer)
    except OSError:
        finished = None
    finally:
        sock.close()  # type: ignore[attr-defined]
    if finished is not None and finished.startswith(b"X"):
        try:
            return int(finished[1:])
        except ValueError:
            pass
    # The child ended without an exit code: killed (by a signal forwarded from here, or from
    # outside), or the server's machine ran out of something. Say so, as a killed process would.
    if forward.last is not None:
        _signal.signal(forward.last, _signal.SIG_DFL)
        os.kill(os.getpid(), forward.last)
    sys.stderr.write("engram: the resident server's process ended before the command finished\n")
    return 0 if hook else 1  # a hook never fails the agent


def start_in_background() -> None:
    """Start a server for this installation, detached, unless one was tried a moment ago (it
    exits at once when another holds the lock). Never raises: this runs after a cold command."""
    if off():
        return
    folder = runtime_dir()
    try:
        if not os.path.isdir(folder):
            os.makedirs(folder, mode=0o700, exist_ok=True)
        if not private_dir_ok(folder):
            return
        digest = key_digest(installation_key())
        _, _, marker = paths(folder, digest)
        try:
            import time

            if time.time() - os.stat(marker).st_mtime < SPAWN_BACKOFF_SECONDS:
                return
        except OSError:
            pass
        with open(marker, "wb"):
            pass
        null = os.open(os.devnull, os.O_RDWR)
        try:
            os.posix_spawn(
                sys.executable,
                [sys.executable, "-c", SERVER_BOOT, folder, digest],
                dict(os.environ),
                file_actions=[(os.POSIX_SPAWN_DUP2, null, fd) for fd in (0, 1, 2)],
                setsid=True,
            )
        finally:
            os.close(null)
    except Exception:
        return
