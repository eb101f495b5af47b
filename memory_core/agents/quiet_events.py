"""The hook events that never tell the agent anything, answered before engram's modules load.

A compaction's and a session's end (Claude Code's PreCompact, PostCompact and SessionEnd,
Gemini CLI's PreCompress and SessionEnd, Codex's PreCompact and PostCompact) end in exit 0
with nothing on stdout whatever happens (docs/resident.md, "Events recorded after the
answer"). A cold hook for one of them (memory_core/cli/fast_hook.py: a forked worker, which
answers first) needs, before its answer, only what makes the two promises of answering first
true: the event kept in the store's spool, claimed by the worker (nothing acknowledged is
lost), and the store's after-answer lock held (whatever comes next reads it recorded). That
is what this module does, with what a bare `python` has loaded (os, posixpath) and two C
modules (`_json`, `fcntl`): the `json` package alone (it loads `re`, `enum` and more) costs
three quarters of Python's own start. Everything else (the payload's full parse, the store,
the handler) follows the answer, in `hooks.record_kept`, exactly as a resident child does it.

Whatever this module is not sure of (another event, an agent name typed otherwise, a payload
that is not a small JSON object in UTF-8, no session id, a folder that is no store or cannot
be written, a root that `workspace.find_root` might see otherwise) is left to the hook's
usual path: None, and nothing done.
"""

from __future__ import annotations

import os
import time

TYPE_CHECKING = False  # typing costs this path a third of Python's start
if TYPE_CHECKING:
    from typing import Any

# The events, as each agent sends them, whose hook never says anything (their canonical names
# are outside quota_hook's CONTEXT_EVENTS and MESSAGE_EVENTS: tests/cli/test_hook_fork.py).
NEVER_TELLING = {
    "claude-code": frozenset({"PreCompact", "PostCompact", "SessionEnd"}),
    "gemini": frozenset({"PreCompress", "SessionEnd"}),
    "codex": frozenset({"PreCompact", "PostCompact"}),
}
# A payload no larger than this has no string that `payload.cut_long_strings` would cut
# (its CUT_ABOVE_BYTES), so the spooled bytes are the ones the usual path keeps.
MOST_BYTES = 128 * 1024
# Hook payloads are read whole (a cut JSON document cannot be parsed at all) and their long
# strings cut before parsing (payload.cut_long_strings); this only bounds the memory a runaway
# agent can make a hook use.
MAX_STDIN_BYTES = 256 * 1024 * 1024
# memory_core.store's names (not imported: it loads sqlite3): the store's folder and file, the
# lock every opening of the store waits for while work after an answer is under way.
STORE_DIRNAME = ".engram"
DB_NAME = "engram.db"
AFTER_ANSWER_LOCK = "after-answer.lock"


class Kept:
    """One event kept for after the answer: where, what, when, its claimed spool file and the
    descriptor holding the store's after-answer lock."""

    __slots__ = ("agent", "claim", "data", "event", "lock_fd", "root", "when")

    def __init__(
        self, root: str, agent: str, event: str, data: bytes, when: float, claim: str, lock_fd: int
    ) -> None:
        self.root = root
        self.agent = agent
        self.event = event
        self.data = data
        self.when = when
        self.claim = claim
        self.lock_fd = lock_fd


def read_stdin() -> bytes:
    """The hook's payload (nothing from a terminal), as `hooks.main` reads it."""
    import sys

    try:
        stream = sys.stdin.buffer
        return b"" if stream.isatty() else stream.read(MAX_STDIN_BYTES)
    except Exception:
        return b""


def keep(agent: str, event: str, workspace: str | None, data: bytes) -> Kept | None:
    """Keep a never-telling event for after the answer, or None (nothing done) when this
    module is not sure it may: see the module's docstring."""
    if event not in NEVER_TELLING.get(agent, ()) or len(data) > MOST_BYTES:
        return None
    fields = _small_object(data)
    if fields is None:
        return None
    session_id = fields.get("session_id")
    if not isinstance(session_id, str) or not session_id:
        return None
    root = _root(_workspace_for(fields.get("cwd"), workspace))
    if root is None:
        return None
    folder = os.path.join(root, STORE_DIRNAME)
    if not (os.access(folder, os.W_OK) and os.access(os.path.join(folder, DB_NAME), os.W_OK)):
        return None
    when = time.time()
    claim = _claim(folder, agent, event, data, when)
    if claim is None:
        return None
    lock_fd = _hold_lock(folder)
    if lock_fd is None:
        _unlink(claim)
        return None
    return Kept(root, agent, event, data, when, claim, lock_fd)


def _small_object(data: bytes) -> dict[str, Any] | None:
    """The payload's JSON object, read as `json.loads` reads it (its C scanner, without the
    `json` package), or None for anything else."""
    if data[:3] == b"\xef\xbb\xbf" or b"\x00" in data[:4]:
        return None  # a byte order mark, UTF-16 or 32: `json.loads` guesses; the usual path
    try:
        import _json

        text = data.decode("utf-8", "surrogatepass").strip(" \t\n\r")
        scan = _json.make_scanner(_Decoding())  # type: ignore[arg-type]  # what it reads of one
        value, end = scan(text, 0)
    except Exception:  # not JSON, not UTF-8, no C scanner: the usual path says what
        return None
    if end != len(text) or not isinstance(value, dict):
        return None
    return value


class _Decoding:
    """What `_json.make_scanner` reads of a `json.JSONDecoder()`: its defaults."""

    strict = True
    object_hook = None
    object_pairs_hook = None
    parse_float = float
    parse_int = int
    parse_constant = {
        "-Infinity": float("-inf"),
        "Infinity": float("inf"),
        "NaN": float("nan"),
    }.__getitem__


def _workspace_for(cwd: object, workspace: str | None) -> str | None:
    """`hooks._workspace_for`: the --workspace option, the payload's cwd, the agents' variables."""
    if workspace:
        return workspace
    if isinstance(cwd, str) and cwd and os.path.isdir(cwd):
        return cwd
    for variable in ("CLAUDE_PROJECT_DIR", "GEMINI_PROJECT_DIR", "GEMINI_CWD"):
        value = os.environ.get(variable)
        if value and os.path.isdir(value):
            return value
    return None


def _root(path: str | None) -> str | None:
    """`workspace.find_root(path)` when it is a folder holding a store, else None: the nearest
    folder at or above `path` holding `.engram/` or `.git`, `/` and the home folder skipped."""
    try:
        start = os.path.realpath(os.path.expanduser(path or os.getcwd()), strict=True)
        if os.path.isfile(start):
            start = os.path.dirname(start)
        home = os.environ.get("HOME")
        refused = {os.path.realpath(home)} if home else set()
        candidate = start
        while True:
            if candidate != os.path.dirname(candidate) and candidate not in refused:
                if os.path.isdir(os.path.join(candidate, STORE_DIRNAME)):
                    return candidate
                if os.path.exists(os.path.join(candidate, ".git")):
                    return None  # a repository without a store: the usual path creates it
            parent = os.path.dirname(candidate)
            if parent == candidate:
                return None
            candidate = parent
    except (OSError, ValueError, RuntimeError):
        return None


def _claim(folder: str, agent: str, event: str, data: bytes, when: float) -> str | None:
    """`spool.keep_while_recording`: the event in the store's spool, claimed by this process
    (a fold records it only once this process is gone without removing it)."""
    from _json import encode_basestring_ascii as quoted

    # Byte for byte what `json.dumps` writes for the same header.
    header = (
        f'{{"agent": {quoted(agent)}, "event": {quoted(event)}, "ts": {when!r}, '
        f'"why": "answered"}}\n'
    ).encode()
    spool = os.path.join(folder, "spool")
    pid = os.getpid()
    name = f"{time.time_ns():020d}-{pid}-{os.urandom(3).hex()}.event.{pid}.claimed"
    tmp = os.path.join(spool, f".{name}.tmp")
    try:
        os.makedirs(spool, mode=0o700, exist_ok=True)
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600)
        try:
            _write_all(fd, header + data)
        finally:
            os.close(fd)
        os.replace(tmp, os.path.join(spool, name))
    except OSError:
        _unlink(tmp)
        return None
    return os.path.join(spool, name)


def _write_all(fd: int, content: bytes) -> None:
    view = memoryview(content)
    while view:
        view = view[os.write(fd, view) :]


def _hold_lock(folder: str) -> int | None:
    """`store.hold_until_worked`: the store's after-answer lock, exclusively, waiting for
    whoever holds it now (another hook's recording)."""
    try:
        import fcntl

        fd = os.open(
            os.path.join(folder, AFTER_ANSWER_LOCK), os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600
        )
    except (ImportError, OSError):
        return None
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
    except OSError:
        os.close(fd)
        return None
    return fd


def _unlink(path: str) -> None:
    try:
        os.unlink(path)
    except OSError:
        return  # (not contextlib.suppress: its module is a cost this path avoids)
