"""One change journal for every front end: which workspace files may have changed since a moment.

A checkpoint only needs to look at the files that changed since the previous one. Several
sources can say which, and each is trusted only when it can prove it saw the whole interval
(a wrong "nothing changed" would lose data in a rollback):

- the server's own watcher (`Watcher`, watchfiles/inotify), while a language server runs, whether
  or not the editor also watches: its `ChangeJournal` covers the time since its watches were in
  place, as long as it is still running (a stopped or failed watcher vouches for nothing);
- watchman, when it is installed (`watchman_since`): a `since` query with the clock stored with
  the previous checkpoint, usable from the CLI, hooks and the server, across restarts; a fresh
  watchman instance (restarted, watch recreated) is not trusted;
- git, inside a repository (`git_since`): files git reports as modified or untracked now, or
  reported so at the previous checkpoint, or changed between the two HEADs; every other file has
  the content of HEAD both times, so it did not change. git's own index and stat cache do the work
  `git status` does;
- the editor's `didChangeWatchedFiles` events, as hints only: added to a trusted source's paths,
  never the only source (an editor may not watch folders created after it started).

When none of them vouches for the interval, the checkpoint scans the workspace (stat cache).

The ignore rules every part shares are here too: `.gitignore` files (nested ones too),
`.git/info/exclude`, `watch.exclude`, and for checkpoints the secret files left out by default.
"""

from __future__ import annotations

import contextlib
import functools
import json
import os
import re
import threading
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from memory_core import clock
from memory_core import git as git_module

if TYPE_CHECKING:
    import subprocess

# Files that usually hold credentials: never captured in a checkpoint unless the setting
# `checkpoints.include_secret_files` says so (checkpoints keep file bytes as they are).
SECRET_FILE_PATTERNS = (
    ".env",
    ".env.*",
    "*.env",
    ".envrc",
    "*.pem",
    "*.key",
    "*.p12",
    "*.pfx",
    "*.jks",
    "*.keystore",
    "*.kdbx",
    "*.asc",
    "*.gpg",
    "id_rsa*",
    "id_dsa*",
    "id_ecdsa*",
    "id_ed25519*",
    ".netrc",
    ".pgpass",
    ".npmrc",
    ".pypirc",
    "credentials.json",
    ".git-credentials",
    "*.tfstate",
    "*.tfstate.*",
    "*.tfvars",
    "secrets.yml",
    "secrets.yaml",
)
# ... but templates meant to be committed are ordinary files.
SECRET_FILE_EXCEPTIONS = ("!.env.example", "!.env.sample", "!.env.template", "!*.pub")

# Editors' recovery, lock, swap and backup files and the system's temporary files. They hold a
# person's unsaved text or another program's lock, so engram never records them, never puts
# them in a checkpoint, and a rollback never restores or removes them, whatever .gitignore says
# (docs/checkpoints-and-sessions.md; `watch.editor_files` adds more).
EDITOR_FILE_PATTERNS = (
    r"\#*#",  # Emacs auto-save: the unsaved text (a leading # would be a comment)
    ".#*",  # Emacs lock (a symbolic link to user@host.pid)
    "*~",  # backups: Emacs, Vim, Kate, gedit, nano
    ".*.sw[a-p]",  # Vim and Neovim swap files (.swp, .swo, ...)
    ".*.un~",  # Vim persistent undo
    "4913",  # Vim's probe that the folder is writable
    "*___jb_tmp___",  # JetBrains safe write
    "*___jb_old___",
    ".*.kate-swp",  # Kate swap
    "*.vsctmp",  # VS Code atomic writes
    "*.crswap",  # Chromium-based editors' file system writes
    ".goutputstream-*",  # GTK (gedit) atomic writes
    ".~lock.*#",  # LibreOffice lock
    ".nfs*",  # NFS: a deleted file still open somewhere
    ".fuse_hidden*",  # FUSE: the same
)

WATCHMAN_TIMEOUT_SECONDS = 10.0
# After watchman let a query time out, checkpoints do without it for this long.
WATCHMAN_RETRY_SECONDS = 3600.0
# A batch this large may have overflowed the kernel's event queue (16,384 by default).
LOSSY_BATCH = 4096
# The server's watcher restarts after a name watchfiles cannot decode at most this often.
RESTARTS_PER_MINUTE = 30
# Slack between a journal's last event and a checkpoint's start: an event stamped just before a
# checkpoint may describe a write the checkpoint's capture did not see yet.
SLACK_SECONDS = 1.0


# -- ignore rules ------------------------------------------------------------------------------


class _Matcher:
    """One compiled ignore file. Without negations its patterns become one regex, so a path costs
    one search instead of one per pattern (this check runs for every file of a scan)."""

    def __init__(self, spec: Any) -> None:
        self.spec = spec
        patterns = [p for p in spec.patterns if p.include is not None]
        self.combined: re.Pattern[str] | None = None
        if all(p.include for p in patterns) and all(
            getattr(p, "regex", None) is not None for p in patterns
        ):
            parts = [p.regex.pattern.replace("(?P<ps_d>", "(?:") for p in patterns]
            self.combined = re.compile("|".join(f"(?:{part})" for part in parts)) if parts else None
            self.empty = not parts
        else:
            self.empty = False

    @classmethod
    def from_source(cls, source: str) -> _Matcher:
        """The matcher of a negation-free ignore file from its combined regex (`source`),
        without pathspec (importing it and translating the patterns was most of a cold
        checkpoint's work)."""
        matcher = cls.__new__(cls)
        matcher.spec = None
        matcher.combined = re.compile(source) if source else None
        matcher.empty = not source
        return matcher

    @property
    def source(self) -> str | None:
        """What `from_source` rebuilds this matcher from; None when it needs pathspec (negations)."""
        if self.combined is not None:
            return self.combined.pattern
        return "" if self.empty else None

    def check(self, path: str) -> bool | None:
        """True: ignored; False: re-included by a negation; None: no opinion."""
        if self.combined is not None:
            return True if self.combined.search(path) else None
        if self.empty:
            return None
        include = self.spec.check_file(path).include
        return None if include is None else bool(include)


class RuleSources:
    """Where compiled ignore files are kept between processes (`checkpoints.disk.StoredRules`
    keeps them in the store): `get` the regex source of a key, `put` a new one."""

    def get(self, key: str) -> str | None:
        return None

    def put(self, key: str, source: str) -> None:
        pass


# The form of the regex sources a RuleSources keeps: a change here (or a new pathspec, which
# translates the patterns) makes new keys, so nothing compiled the old way is used.
RULES_FORMAT = "1"


@functools.lru_cache(maxsize=1)
def _pathspec_version() -> str:
    """The installed pathspec's version file, read without importing pathspec."""
    from importlib.machinery import PathFinder

    spec = PathFinder.find_spec("pathspec")
    for folder in (spec.submodule_search_locations or []) if spec is not None else []:
        with contextlib.suppress(OSError), open(os.path.join(folder, "_version.py"), "rb") as f:
            return f.read().decode("utf-8", "replace")
    return "unknown"


def rules_key(lines: tuple[str, ...]) -> str:
    """What names one ignore file's compiled form: its lines, and how they are compiled."""
    import hashlib

    text = "\n".join((RULES_FORMAT, _pathspec_version(), *lines))
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:32]


# Matchers compiled in this process, by their lines (every checkpoint and every watcher batch
# builds its rules again; compiling the regexes was most of a small one).
_MATCHERS: dict[tuple[str, ...], _Matcher] = {}
_MATCHERS_KEPT = 256


def _rule_lines(lines: Iterable[str]) -> tuple[str, ...]:
    """The lines of an ignore file that are rules: blank lines and comments (a `#` first)
    decide nothing, as git and pathspec read them, so files that differ only in those share
    one matcher (a repository's `.git/info/exclude` is git's template of comments: left in,
    every workspace's rules were compiled apart from the defaults a resident process holds)."""
    return tuple(line for line in lines if line.strip() and not line.startswith("#"))


def _compiled(lines: tuple[str, ...], sources: RuleSources | None = None) -> _Matcher:
    """One ignore file's matcher: compiled in this process already, or rebuilt from the regex
    `sources` kept (a cold CLI or hook process), or compiled with pathspec and kept there."""
    lines = _rule_lines(lines)
    matcher = _MATCHERS.get(lines)
    if matcher is not None:
        return matcher
    key = rules_key(lines) if sources is not None else None
    source = sources.get(key) if sources is not None and key is not None else None
    if source is not None:
        matcher = _Matcher.from_source(source)
    else:
        import pathspec

        matcher = _Matcher(pathspec.GitIgnoreSpec.from_lines(lines))
        if sources is not None and key is not None and matcher.source is not None:
            sources.put(key, matcher.source)
    if len(_MATCHERS) >= _MATCHERS_KEPT:
        _MATCHERS.pop(next(iter(_MATCHERS)), None)
    _MATCHERS[lines] = matcher
    return matcher


class IgnoreRules:
    """`.gitignore` files (the root's and nested ones) plus extra patterns, with git's semantics.

    The deepest `.gitignore` that has an opinion about a path decides, as in git; the extra
    patterns (`.git/info/exclude`, `watch.exclude`, secret files) are checked first.
    """

    def __init__(
        self,
        root: Path,
        extra: Iterable[str] = (),
        *,
        secrets: Iterable[str] = (),
        sources: RuleSources | None = None,
    ) -> None:
        self.root = root
        self._root_text = os.fspath(root)
        self._sources = sources
        self._specs: dict[str, _Matcher | None] = {}
        extra = [p for p in extra if p.strip()]
        self._extra = _compiled(tuple(extra), sources) if extra else None
        # Secret-file patterns and their exceptions ("!.env.example") as two negation-free
        # matchers, so each stays one compiled regex (a negation would make every path of a
        # scan go through pathspec pattern by pattern).
        secrets = [p for p in secrets if p.strip()]
        self._secrets = self._exceptions = None
        if secrets:
            plain = tuple(p for p in secrets if not p.startswith("!"))
            self._secrets = _compiled(plain, sources)
            exceptions = tuple(p[1:] for p in secrets if p.startswith("!"))
            self._exceptions = _compiled(exceptions, sources)

    def spec_for(self, rel_dir: str) -> _Matcher | None:
        """The compiled `.gitignore` of a directory (None when it has none)."""
        if rel_dir not in self._specs:
            # Plain strings, not Path objects: a checkpoint asks this of every folder on the way
            # to each changed file, and most have no .gitignore.
            path = os.path.join(self._root_text, rel_dir, ".gitignore")
            try:
                with open(path, encoding="utf-8", errors="replace") as handle:
                    lines = handle.read().splitlines()
                self._specs[rel_dir] = _compiled(tuple(lines), self._sources)
            except (FileNotFoundError, NotADirectoryError, IsADirectoryError, PermissionError):
                self._specs[rel_dir] = None
        return self._specs[rel_dir]

    def ignored(self, rel: str, is_dir: bool, chain: list[tuple[str, Any]]) -> bool:
        """Whether `rel` is ignored, given the (dir, matcher) chain of its ancestors, deepest last."""
        probe = rel + "/" if is_dir else rel
        if self._extra is not None and self._extra.check(probe):
            return True
        if (
            self._secrets is not None
            and self._secrets.check(probe)
            and not (self._exceptions is not None and self._exceptions.check(probe))
        ):
            return True
        for base, matcher in reversed(chain):
            verdict = matcher.check(probe[len(base) + 1 :] if base else probe)
            if verdict is not None:
                return bool(verdict)
        return False

    def chain_for(self, rel_dir: str) -> list[tuple[str, Any]]:
        """The matchers that apply inside `rel_dir`, shallowest first."""
        chain = []
        parts = rel_dir.split("/") if rel_dir else []
        for depth in range(len(parts) + 1):
            base = "/".join(parts[:depth])
            matcher = self.spec_for(base)
            if matcher is not None:
                chain.append((base, matcher))
        return chain

    def path_ignored(self, rel: str, is_dir: bool = False) -> bool:
        """Whether `rel` or any folder above it is ignored (a lone path, not part of a walk)."""
        parts = rel.split("/")
        for depth in range(1, len(parts)):
            folder = "/".join(parts[:depth])
            if self.ignored(folder, True, self.chain_for("/".join(parts[: depth - 1]))):
                return True
        return self.ignored(rel, is_dir, self.chain_for(rel.rpartition("/")[0]))


def _info_exclude(root: Path) -> list[str]:
    gd = git_module.git_dir(root)
    if gd is None:
        return []
    try:
        return (gd / "info" / "exclude").read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        return []


def watch_rules(
    root: Path, exclude: Iterable[str], editor_files: Iterable[str] = ()
) -> IgnoreRules:
    """What engram never records: editors' temporary files, `.gitignore` files,
    `.git/info/exclude`, `watch.exclude`."""
    return IgnoreRules(root, [*EDITOR_FILE_PATTERNS, *editor_files, *_info_exclude(root), *exclude])


def checkpoint_rules(
    root: Path,
    exclude: Iterable[str],
    *,
    include_secret_files: bool = False,
    editor_files: Iterable[str] = (),
    sources: RuleSources | None = None,
) -> IgnoreRules:
    """What checkpoints leave out: the watch rules plus, by default, files holding secrets.
    `sources`: compiled rules kept between processes (a cold process then compiles nothing)."""
    secrets = [] if include_secret_files else [*SECRET_FILE_PATTERNS, *SECRET_FILE_EXCEPTIONS]
    return IgnoreRules(
        root,
        [*EDITOR_FILE_PATTERNS, *editor_files, *_info_exclude(root), *exclude],
        secrets=secrets,
        sources=sources,
    )


def compile_default_rules() -> None:
    """Compile the rules of a workspace with default settings (editors' files, secret files
    and their exceptions) and read pathspec's version: a process that forks a child per
    command (the resident server) does it once for every child, which then compiles only
    its workspace's own `.gitignore` files (the defaults were 6 ms of CPU in each child)."""
    _pathspec_version()
    # (What checkpoint_rules builds with default settings in a workspace whose
    # `.git/info/exclude` holds no rule; the editors' patterns alone are EditorFiles'.)
    IgnoreRules(
        Path(os.sep),
        EDITOR_FILE_PATTERNS,
        secrets=[*SECRET_FILE_PATTERNS, *SECRET_FILE_EXCEPTIONS],
    )


class EditorFiles:
    """Whether a path is an editor's or the system's temporary file (by its name)."""

    def __init__(self, extra: Iterable[str] = (), sources: RuleSources | None = None) -> None:
        self._matcher = _compiled((*EDITOR_FILE_PATTERNS, *extra), sources)

    def __contains__(self, rel: str) -> bool:
        return bool(self._matcher.check(rel))


class Ignore:
    """gitignore-style exclusion of single paths for one folder (the watchers' view)."""

    def __init__(self, root: Path, extra: list[str], editor_files: Iterable[str] = ()) -> None:
        self.rules = watch_rules(root, extra, editor_files)

    def ignored(self, rel: str) -> bool:
        folder = rel.rpartition("/")[0]
        return self.rules.ignored(rel, False, self.rules.chain_for(folder))


# -- the in-process journal ------------------------------------------------------------------------


class ChangeJournal:
    """Paths reported changed since `started_at` by a watcher that saw every change.

    A checkpoint may trust it only for the time it covers: `since(ts)` is None when `ts` is
    before the journal started (changes then were not seen) or when the watcher feeding it has
    stopped (changes since then are not seen), else the paths changed since `ts`.
    `epoch` names this journal's life; it is recorded with each checkpoint it vouched for.
    """

    def __init__(self, started_at: float | None = None) -> None:
        self.started_at = clock.now() if started_at is None else started_at
        self.epoch = os.urandom(6).hex()
        self.stopped_at: float | None = None
        self._changed: dict[str, float] = {}
        self._lock = threading.Lock()
        # Set by a watcher: waits until every change made before the call is in the journal.
        self.syncer: Callable[[float], bool] | None = None

    def sync(self, timeout: float = 2.0) -> bool:
        """Wait until changes made before now are recorded (False: could not make sure)."""
        return self.syncer(timeout) if self.syncer is not None else self.alive

    @property
    def alive(self) -> bool:
        return self.stopped_at is None

    def mark(self, paths: Iterable[str], ts: float | None = None) -> None:
        when = clock.now() if ts is None else ts
        with self._lock:
            for path in paths:
                self._changed[path] = max(when, self._changed.get(path, 0.0))

    def stop(self) -> None:
        """The watcher stopped (or lost events): this journal vouches for nothing any more."""
        if self.stopped_at is None:
            self.stopped_at = clock.now()

    def covers(self, ts: float) -> bool:
        return self.alive and ts >= self.started_at

    def since(self, ts: float) -> set[str] | None:
        if not self.covers(ts):
            return None
        with self._lock:
            return {path for path, when in self._changed.items() if when >= ts - SLACK_SECONDS}

    def forget_before(self, ts: float) -> None:
        with self._lock:
            self._changed = {p: t for p, t in self._changed.items() if t >= ts - SLACK_SECONDS}


# -- the server's own watcher ------------------------------------------------------------------


class Watcher:
    """watchfiles (inotify through Rust's notify) on one folder, feeding a `ChangeJournal`.

    `on_events` (optional) receives each batch as (absolute path, kind) pairs on the watcher's
    thread. The journal starts when the watches are in place and stops with the watcher.
    (Plain classes in this module: a cold checkpoint would import dataclasses for them.)
    """

    def __init__(
        self,
        root: Path,
        rules: IgnoreRules | None = None,
        on_events: Callable[[list[tuple[str, int]]], None] | None = None,
        on_error: Callable[[str], None] | None = None,
        journal: ChangeJournal | None = None,
    ) -> None:
        self.root = root
        self.rules = rules
        self.on_events = on_events
        self.on_error = on_error
        self.journal = journal
        self.stop_event = threading.Event()
        self.ready = threading.Event()
        self.thread: threading.Thread | None = None
        self.started_in: float | None = None
        self.error: str | None = None
        self.cookies: dict[str, threading.Event] = {}
        self.restarts: list[float] = []

    def start(self) -> Watcher:
        self.thread = threading.Thread(
            target=self._run, name=f"engram-watch-{self.root.name}", daemon=True
        )
        self.thread.start()
        return self

    @property
    def alive(self) -> bool:
        return self.thread is not None and self.thread.is_alive() and self.error is None

    def stop(self) -> None:
        self.stop_event.set()
        if self.journal is not None:
            self.journal.stop()

    def sync(self, timeout: float = 2.0) -> bool:
        """Make sure every change made before this call has reached the journal.

        The kernel delivers a watcher's events in order: a cookie file written now (in
        `.engram/`, never recorded) comes back after every earlier change, as watchman does it.
        """
        if not self.alive or self.journal is None:
            return False
        name = f".watch-cookie-{os.urandom(6).hex()}"
        arrived = self.cookies[name] = threading.Event()
        path = self.root / ".engram" / name
        try:
            path.write_bytes(b"")
            return arrived.wait(timeout) and self.alive
        except OSError:
            return False
        finally:
            self.cookies.pop(name, None)
            with contextlib.suppress(OSError):
                path.unlink()

    def _run(self) -> None:
        own_prefix = str(self.root / ".engram") + os.sep
        root_prefix = str(self.root) + os.sep
        try:
            # RustNotify is watchfiles' documented Rust backend; using it directly tells us
            # when the watches are in place (the `watch()` generator does not).
            from watchfiles._rust_notify import RustNotify

            began = time.perf_counter()
            notify = RustNotify([str(self.root)], False, False, 300, True, True)
            self.started_in = time.perf_counter() - began
            self.journal = ChangeJournal()
            self.journal.syncer = self.sync
            self.ready.set()
            while not self.stop_event.is_set():
                try:
                    self._watch(notify, own_prefix, root_prefix)
                    return
                except Exception as exc:
                    # watchfiles cannot hand over a path that is not UTF-8 and fails the whole
                    # watch on it: a fresh watch and journal (which vouches only from now on,
                    # so nothing is trusted across the gap) keep the server's watcher alive.
                    # Anything else, or a name that keeps failing, ends the watcher.
                    if "decode path" not in str(exc) or not self._may_restart():
                        raise
                    self.journal.stop()
                    notify = RustNotify([str(self.root)], False, False, 300, True, True)
                    self.journal = ChangeJournal()
                    self.journal.syncer = self.sync
        except Exception as exc:
            self.error = f"{type(exc).__name__}: {exc}"
            if self.on_error is not None:
                self.on_error(self.error)
        finally:
            if self.journal is not None:
                self.journal.stop()
            self.ready.set()

    def _may_restart(self) -> bool:
        """At most RESTARTS_PER_MINUTE restarts in any minute."""
        now = time.monotonic()
        self.restarts = [at for at in self.restarts if now - at < 60.0] + [now]
        return len(self.restarts) <= RESTARTS_PER_MINUTE

    def _watch(self, notify: Any, own_prefix: str, root_prefix: str) -> None:
        """Feed the journal from one watch until it stops (or fails)."""
        assert self.journal is not None
        with notify:
            while not self.stop_event.is_set():
                raw = notify.watch(200, 50, 1000, self.stop_event)
                if raw == "stop":
                    return
                if not isinstance(raw, set) or not raw:
                    continue
                # engram's own writes (the store, its WAL) never leave this thread.
                items = [(path, kind) for kind, path in raw if not path.startswith(own_prefix)]
                if len(raw) >= LOSSY_BATCH:
                    # The kernel drops events when its queue overflows (a huge checkout)
                    # and watchfiles does not say so: after such a flood, vouch for
                    # nothing before now (the next checkpoint looks by other means).
                    self.journal.stop()
                    self.journal = ChangeJournal()
                    self.journal.syncer = self.sync
                if items:
                    self.journal.mark(
                        path[len(root_prefix) :].replace(os.sep, "/")
                        for path, _ in items
                        if path.startswith(root_prefix)
                    )
                # Cookies are answered after the batch they came with is in the journal.
                for _, path in raw:
                    waiting = self.cookies.get(path[len(own_prefix) :])
                    if waiting is not None and path.startswith(own_prefix):
                        waiting.set()
                if items and self.on_events is not None:
                    self.on_events(items)


# -- watchman ----------------------------------------------------------------------------------


class WatchmanAnswer:
    def __init__(self, clock: str, paths: set[str] | None) -> None:
        self.clock = clock
        self.paths = paths  # None: watchman cannot vouch for the interval (fresh instance)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, WatchmanAnswer) and (self.clock, self.paths) == (
            other.clock,
            other.paths,
        )

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"WatchmanAnswer(clock={self.clock!r}, paths={self.paths!r})"


# The socket of the running watchman, once known (a checkpoint also stores it, so the next
# process talks to watchman without starting its command-line client).
_SOCKET: list[str | None] = [None]


def watchman_socket() -> str | None:
    return _SOCKET[0] or os.environ.get("WATCHMAN_SOCK") or None


def use_watchman_socket(path: str | None) -> None:
    if path and not _SOCKET[0]:
        _SOCKET[0] = path


def _watchman_socket_call(path: str, command: list[Any]) -> dict[str, Any] | None:
    """One request over watchman's socket, in its binary protocol (BSER): its JSON protocol
    cannot carry a file name that is not UTF-8 and answers a query listing one with nothing."""
    import socket

    from memory_core import bser

    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as conn:
            conn.settimeout(WATCHMAN_TIMEOUT_SECONDS)
            conn.connect(path)
            conn.sendall(bser.dumps(command))
            buffer = b""
            total = None
            while total is None or len(buffer) < total:
                chunk = conn.recv(1 << 16)
                if not chunk:
                    break
                buffer += chunk
                total = bser.pdu_length(buffer)
        answer = bser.loads(buffer)
    except TimeoutError:
        # (watchman's JSON protocol went silent on a name that is not UTF-8; should anything
        # else keep it from answering, asking again only waits as long again. The capture
        # stops asking for a while, `watchman_unanswered`.)
        _UNANSWERED[0] = True
        return None
    except (OSError, ValueError):
        _SOCKET[0] = None
        return None
    return answer if isinstance(answer, dict) else None


_UNANSWERED = [False]


def watchman_unanswered() -> bool:
    """Whether watchman let a request time out since the last call (which clears it)."""
    timed_out, _UNANSWERED[0] = _UNANSWERED[0], False
    return timed_out


def _watchman(command: list[Any]) -> dict[str, Any] | None:
    sock = watchman_socket()
    answer = _watchman_socket_call(sock, command) if sock else None
    if answer is None and _UNANSWERED[0]:
        return None
    if answer is None:
        import shutil
        import subprocess

        binary = shutil.which("watchman")
        if binary is None:
            return None
        try:
            done = subprocess.run(
                [binary, "-j", "--no-pretty"],
                input=json.dumps(command),
                capture_output=True,
                text=True,
                timeout=WATCHMAN_TIMEOUT_SECONDS,
                check=False,
            )
            answer = json.loads(done.stdout) if done.stdout.strip() else None
        except (OSError, subprocess.TimeoutExpired, ValueError):
            return None
        if isinstance(answer, dict) and not _SOCKET[0]:
            named = _watchman_cli_sockname(binary)
            if named:
                _SOCKET[0] = named
    if not isinstance(answer, dict) or "error" in answer:
        return None
    return answer


def _watchman_cli_sockname(binary: str) -> str | None:
    import subprocess

    try:
        done = subprocess.run(
            [binary, "--no-pretty", "get-sockname"],
            capture_output=True,
            text=True,
            timeout=WATCHMAN_TIMEOUT_SECONDS,
            check=False,
        )
        name = json.loads(done.stdout).get("sockname")
    except (OSError, subprocess.TimeoutExpired, ValueError, AttributeError):
        return None
    return name if isinstance(name, str) and name else None


def watchman_since(root: Path, since: str | None) -> WatchmanAnswer | None:
    """Files watchman saw change under `root` since clock `since` (None: only the clock now).

    Starts watching `root` when watchman does not yet (that first answer vouches for nothing).
    None when watchman is not installed or fails.
    """
    # Files and links only: watchman reports the files inside a new folder itself, and a
    # folder whose listing changed would otherwise be read whole.
    query: dict[str, Any] = {
        "fields": ["name"],
        "empty_on_fresh_instance": True,
        "expression": ["not", ["type", "d"]],
    }
    if since is not None:
        # The usual case, one call: the workspace is itself a watched root.
        answer = _watchman(["query", str(root), {**query, "since": since}])
        if answer is not None:
            return _since_answer(answer)
        if _UNANSWERED[0]:
            return None
    watched = _watchman(["watch-project", str(root)])
    if watched is None or not isinstance(watched.get("watch"), str):
        return None
    relative = watched.get("relative_path")
    if isinstance(relative, str) and relative:
        query["relative_root"] = relative
    if since is None:
        answer = _watchman(["clock", watched["watch"], {"sync_timeout": 5000}])
        clock_now = answer.get("clock") if answer else None
        return WatchmanAnswer(clock_now, None) if isinstance(clock_now, str) else None
    query["since"] = since
    answer = _watchman(["query", watched["watch"], query])
    return _since_answer(answer) if answer is not None else None


def _since_answer(answer: dict[str, Any]) -> WatchmanAnswer | None:
    if not isinstance(answer.get("clock"), str):
        return None
    if answer.get("is_fresh_instance"):
        return WatchmanAnswer(answer["clock"], None)
    files = answer.get("files")
    if not isinstance(files, list):
        return None
    return WatchmanAnswer(answer["clock"], {str(name) for name in files if isinstance(name, str)})


# -- git ---------------------------------------------------------------------------------------


class GitState:
    """HEAD and the paths git does not vouch for (modified, staged, untracked) at a moment."""

    def __init__(self, head: str | None, dirty: set[str], listed: int | None = None) -> None:
        self.head = head
        self.dirty = dirty
        # How many paths git itself listed when it last looked; the others were carried in
        # since (`carry_git_state`). None: all of them.
        self.listed = listed

    def __eq__(self, other: object) -> bool:
        return isinstance(other, GitState) and (self.head, self.dirty, self.listed) == (
            other.head,
            other.dirty,
            other.listed,
        )

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"GitState(head={self.head!r}, dirty={self.dirty!r}, listed={self.listed!r})"

    @property
    def carried(self) -> int:
        """Paths added by other sources since git last looked."""
        return 0 if self.listed is None else len(self.dirty) - self.listed

    def as_json(self) -> dict[str, Any]:
        listed = len(self.dirty) if self.listed is None else self.listed
        return {"head": self.head, "dirty": sorted(self.dirty), "listed": listed}

    @classmethod
    def from_json(cls, data: Any) -> GitState | None:
        if not isinstance(data, dict) or not isinstance(data.get("dirty"), list):
            return None
        head = data.get("head")
        dirty = {str(p) for p in data["dirty"]}
        listed = data.get("listed")
        if type(listed) is not int or not 0 <= listed <= len(dirty):
            listed = 0  # (older states, or a count that cannot be: all counted as carried)
        return cls(head if isinstance(head, str) else None, dirty, listed)


def _git(
    root: Path, *args: str, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[bytes] | None:
    full_env = {
        **os.environ,
        "LC_ALL": "C",
        "GIT_TERMINAL_PROMPT": "0",
        "GIT_OPTIONAL_LOCKS": "0",
        **(env or {}),
    }
    import subprocess  # (only when git runs: a checkpoint watchman vouches for needs none)

    try:
        return subprocess.run(
            ["git", "-C", str(root), *args],
            capture_output=True,
            env=full_env,
            timeout=60,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired):
        return None


# engram's own copy of git's index, in the repository folder (`.git/engram/index`, or the
# worktree's folder): git's data in git's format, for git, and gone with the repository.
PRIVATE_INDEX = Path("engram") / "index"


def _private_index(root: Path, head: str | None) -> Path | None:
    """engram's own copy of git's index, made from the user's when missing or when HEAD moved
    since (the user's index then matches the new HEAD, with fresh stat data); None when there is
    no index to copy yet or it cannot be written.

    `git status` run on it may write it: git refreshes the stat data of files whose content did
    not change and keeps an untracked cache, so the next status neither re-reads those files nor
    reads every folder, and the user's own index is never written by engram.
    """
    repository = git_module.git_dir(root)
    source = repository / "index" if repository is not None else None
    if repository is None or source is None or not source.is_file():
        return None  # a repository without an index yet: the plain status answers
    index = repository / PRIVATE_INDEX
    marker = index.with_name(index.name + ".head")
    try:
        aligned = marker.read_text(encoding="utf-8")
    except OSError:
        aligned = None
    if aligned == (head or "") and index.is_file():
        return index
    partial = index.with_name(f".{index.name}.{os.getpid()}.{os.urandom(3).hex()}")
    import shutil

    try:
        index.parent.mkdir(exist_ok=True)
        shutil.copyfile(source, partial)
        os.chmod(partial, 0o600)
        os.replace(partial, index)
        marker.write_text(head or "", encoding="utf-8")
        os.chmod(marker, 0o600)
    except OSError:
        with contextlib.suppress(OSError):
            os.unlink(partial)
        return None
    return index


class GitInBackground:
    """`git status` started before the capture needs it, on a thread (git runs in its own
    process), so that a rollback can read the listings it will compare meanwhile."""

    def __init__(self, root: Path) -> None:
        self.started = time.time()  # (wall clock: compared with files' change times)
        self._answer: GitState | None = None
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._run, args=(root,), daemon=True)
        self._thread.start()

    def _run(self, root: Path) -> None:
        try:
            self._answer = git_state(root, own_index=True)
        except BaseException as exc:  # handed to the caller, as if it had run git itself
            self._error = exc

    def result(self) -> GitState | None:
        self._thread.join()
        if self._error is not None:
            raise self._error
        return self._answer


def git_state(root: Path, *, own_index: bool = False) -> GitState | None:
    """What git says now, when `root` is the top of a repository; None otherwise.

    Global excludes are switched off, so every file git ignores is ignored by engram's rules
    too (`.gitignore` files and `.git/info/exclude`): git never hides a file engram keeps.
    With `own_index`, git works on engram's own copy of its index with an untracked cache (see
    `_private_index`); without it, or when that copy fails, on the user's index without writing
    it.
    """
    import shutil

    if not (root / ".git").exists() or shutil.which("git") is None:
        return None
    dirty: set[str] | None = None
    index = _private_index(root, git_head(root)) if own_index else None
    if index is not None:
        dirty = _status(
            root,
            ("-c", "core.untrackedCache=true", "-c", "core.splitIndex=false"),
            {"GIT_INDEX_FILE": str(index), "GIT_OPTIONAL_LOCKS": "1"},
        )
        if dirty is None:
            for stale in (index, index.with_name(index.name + ".head")):
                with contextlib.suppress(OSError):
                    os.unlink(stale)  # made again from the user's index next time
    if dirty is None:
        dirty = _status(root, (), None)
    if dirty is None:
        return None
    # HEAD is read after the status: a commit in between moves files git listed as changed, so
    # every file left out still has the content of the HEAD recorded.
    return GitState(git_head(root), dirty)


def _status(root: Path, options: tuple[str, ...], env: dict[str, str] | None) -> set[str] | None:
    """The paths `git status` lists (modified, staged, untracked), or None when it fails."""
    # Untracked folders come as one path ("new/"): the checkpoint scans such a folder itself,
    # and git needs no walk into it (nor, with the untracked cache, into unchanged folders).
    done = _git(
        root,
        "-c",
        "core.excludesFile=/dev/null",
        "-c",
        "status.relativePaths=false",
        *options,
        "status",
        "--porcelain=v1",
        "-z",
        "--untracked-files=normal",
        "--ignore-submodules=none",
        "--no-renames",
        env=env,
    )
    if done is None or done.returncode != 0:
        return None
    dirty: set[str] = set()
    fields = done.stdout.split(b"\0")
    index = 0
    while index < len(fields):
        entry = fields[index]
        index += 1
        if len(entry) < 4:
            continue
        code = entry[:2]
        dirty.add(os.fsdecode(entry[3:]).rstrip("/"))
        if b"R" in code or b"C" in code:
            if index < len(fields):
                dirty.add(os.fsdecode(fields[index]).rstrip("/"))
            index += 1
    return dirty


def git_head(root: Path) -> str | None:
    head = git_module.read_head(root) if (root / ".git").exists() else None
    return head.commit if head else None


def git_between(root: Path, older: str | None, newer: str | None) -> set[str] | None:
    """Paths that differ between two commits (None: git cannot tell, e.g. one was collected)."""
    if older == newer:
        return set()
    if older is None or newer is None:
        return None
    done = _git(root, "diff", "--name-only", "-z", "--no-renames", older, newer, "--")
    if done is None or done.returncode != 0:
        return None
    return {os.fsdecode(p) for p in done.stdout.split(b"\0") if p}


def git_since(root: Path, before: GitState, now: GitState) -> set[str] | None:
    """Every path whose content may differ between the moments of `before` and `now`."""
    moved = git_between(root, before.head, now.head)
    if moved is None:
        return None
    return before.dirty | now.dirty | moved


def carry_git_state(root: Path, before: GitState, changed: set[str]) -> GitState | None:
    """A checkpoint that trusted another source still leaves a git state for the next one:
    every path not in it has HEAD's content (it was clean before and nothing touched it)."""
    head = git_head(root)
    moved = git_between(root, before.head, head)
    if moved is None:
        return None
    listed = len(before.dirty) if before.listed is None else before.listed
    return GitState(head, before.dirty | changed | moved, listed)
