"""The store: `<root>/.engram/`, with SQLite in WAL mode as the system of record.

Why SQLite: one file, real transactions, several processes (server, hooks, CLI, MCP) writing
at once through WAL, and a page cache that survives a killed process. `synchronous=NORMAL`
in WAL mode keeps every committed transaction across a process crash (SIGKILL); only a power
loss can drop the last commits, which is the trade every editor-side tool makes for sub-ms
writes.

The schema is versioned by `PRAGMA user_version` and moved forward by the numbered SQL files
in `memory_core/migrations/`. A store written by a newer engram is refused, never rewritten.
"""

from __future__ import annotations

import contextlib
import math
import os
import re
import sqlite3
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

from memory_core.errors import StoreError
from memory_core.workspace import STORE_DIRNAME, find_root, is_git_repository

TYPE_CHECKING = False  # `typing` costs a cold hook, which opens a store, a third of Python's start
if TYPE_CHECKING:
    from typing import Literal, overload

DB_NAME = "engram.db"
MIGRATIONS_DIR = Path(__file__).with_name("migrations")
_MIGRATION_NAME = re.compile(r"^(\d{4})_[a-z0-9_]+\.sql$")

GITIGNORE = """\
# Written by engram. Everything in .engram/ is local to this machine except team/,
# which holds the team's shared gotchas and is meant to be committed and reviewed.
*
!.gitignore
!team/
!team/**
"""

# How long a write waits for another process's write lock before it reports the store busy (a
# hook waits less: agents.hook_wait_seconds).
BUSY_TIMEOUT_SECONDS = 30.0
DIR_MODE = 0o700
FILE_MODE = 0o600


def migrations() -> list[tuple[int, Path]]:
    """The known migrations as (version, file), in order."""
    found = []
    for name in os.listdir(MIGRATIONS_DIR):
        match = _MIGRATION_NAME.match(name)
        if match:
            found.append((int(match.group(1)), MIGRATIONS_DIR / name))
    found.sort()
    return found


def latest_schema_version() -> int:
    known = migrations()
    return known[-1][0] if known else 0


def ensure_private_dir(path: Path) -> None:
    """Create `path` (and missing parents) with mode 0700.

    An existing folder is made private only inside a store (`.engram/` or below): a file the
    user asked to write elsewhere (`engram export --out /tmp/x.json`) must not change the mode
    of the user's own folder.
    """
    existed = path.is_dir()
    path.mkdir(mode=DIR_MODE, parents=True, exist_ok=True)
    if os.path.islink(path):
        # chmod follows a link: the mode of whatever it points at would change.
        if STORE_DIRNAME in path.parts:
            raise _linked_store_error(path)
        return
    if not existed or STORE_DIRNAME in path.parts:
        os.chmod(path, DIR_MODE)


# The store's own names: none may be a symbolic link (every write would land where it points).
_STORE_NAMES = ("", DB_NAME, f"{DB_NAME}-wal", f"{DB_NAME}-shm", ".gitignore", "exports")


def refuse_linked_store(root: Path) -> None:
    """Raise StoreError when `.engram/` or one of its files is a symbolic link (dangling or
    not): engram writes its store, and changes modes, only inside the project."""
    store_dir = root / STORE_DIRNAME
    for name in _STORE_NAMES:
        path = store_dir / name if name else store_dir
        if os.path.islink(path):
            raise _linked_store_error(path)
        if not name and not store_dir.is_dir():
            return


def _linked_store_error(path: Path) -> StoreError:
    try:
        target = os.readlink(path)
    except OSError:
        target = "?"
    return StoreError(
        f"refusing to use the store: {path} is a symbolic link (to {target})",
        hint="engram keeps its store inside the project: replace the link with a real "
        "folder or file (move what it points to there), or remove it",
    )


def write_private_file(path: Path, data: bytes | str) -> None:
    """Write a file atomically (temp file + rename) with mode 0600.

    A reader never sees half a file, and a crash leaves either the old or the new content.
    """
    payload = data.encode("utf-8") if isinstance(data, str) else data
    ensure_private_dir(path.parent)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{threading.get_ident()}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, FILE_MODE)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(payload)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise


def no_store_error(root: Path) -> StoreError:
    return StoreError(f"no engram store here (run engram init): looked in {root} and above")


class Store:
    """One workspace's store. Thread-safe: one connection guarded by a lock.

    Use `Store.open(root)` for an existing store and `Store.init(root)` to create one.
    Writes go through `with store.transaction() as db:`; reads through `store.query(...)`.
    """

    def __init__(self, root: Path, connection: sqlite3.Connection) -> None:
        self.root = root
        self.dir = root / STORE_DIRNAME
        self.db_path = self.dir / DB_NAME
        self._db = connection
        self._lock = threading.RLock()
        self._depth = 0
        # The (device, inode) of the file this connection has open: when the path stops naming
        # that file (deleted, or replaced by a restore), writes would go to a file nobody sees.
        self._identity = _file_identity(self.db_path)
        # Called with one line for the user when the store had to be reopened or recreated
        # (the server shows it with window/showMessage, the CLI prints it on stderr).
        self.notice_listeners: list[Callable[[str], None]] = []
        self.notices: list[str] = []
        self._log_folder: _LogFolder | None = None

    # -- opening -------------------------------------------------------------------------

    @classmethod
    def init(cls, root: Path, *, busy_timeout: float = BUSY_TIMEOUT_SECONDS) -> Store:
        """Create the store for `root` (idempotent) and open it."""
        store_dir = root / STORE_DIRNAME
        db_path = store_dir / DB_NAME
        refuse_linked_store(root)
        # `.engram/` with its database gone (deleted by hand, by a clean-up tool): say so, rather
        # than quietly starting an empty store the user takes for the old one.
        lost = store_dir.is_dir() and not db_path.exists() and (store_dir / "exports").is_dir()
        ensure_private_dir(store_dir)
        ensure_private_dir(store_dir / "exports")
        gitignore = store_dir / ".gitignore"
        if not gitignore.exists():
            write_private_file(gitignore, GITIGNORE)
        if not db_path.exists():
            # Create the file ourselves so it gets 0600; SQLite gives -wal and -shm the
            # same mode as the database file.
            _create_private_file(db_path)
        store = cls._connect(root, db_path, busy_timeout)
        if lost:
            store.notices.append(
                f"{db_path} was missing: started a new, empty store "
                "(restore the old engram.db from a backup to get its records back)"
            )
        return store

    @classmethod
    def open(cls, root: Path, *, busy_timeout: float = BUSY_TIMEOUT_SECONDS) -> Store:
        """Open the existing store of `root`; StoreError if there is none."""
        db_path = root / STORE_DIRNAME / DB_NAME
        refuse_linked_store(root)
        if not db_path.exists():
            raise no_store_error(root)
        return cls._connect(root, db_path, busy_timeout)

    @classmethod
    def open_or_init_in_git(cls, root: Path) -> Store:
        """The store a front end writing to `root` uses (docs/design.md section 2).

        An existing store is opened; a new one is created only when `root` is a git
        repository's top level (a project, not `/etc` or a downloads folder); elsewhere
        StoreError says to run `engram init`.
        """
        db_path = root / STORE_DIRNAME / DB_NAME
        if db_path.exists():
            return cls.open(root)
        if not is_git_repository(root):
            raise no_store_error(root)
        return cls.init(root)

    @classmethod
    def open_or_init(cls, root: Path, *, busy_timeout: float = BUSY_TIMEOUT_SECONDS) -> Store:
        db_path = root / STORE_DIRNAME / DB_NAME
        if db_path.exists():
            return cls.open(root, busy_timeout=busy_timeout)
        return cls.init(root, busy_timeout=busy_timeout)

    @classmethod
    def for_path(cls, path: str | os.PathLike[str] | None = None, *, create: bool = False) -> Store:
        root = find_root(path)
        return cls.open_or_init(root) if create else cls.open(root)

    @classmethod
    def _connect(
        cls, root: Path, db_path: Path, busy_timeout: float = BUSY_TIMEOUT_SECONDS
    ) -> Store:
        refuse_linked_store(root)
        wait_for_work_after_answer(db_path.parent)
        try:
            connection = sqlite3.connect(
                db_path, timeout=busy_timeout, isolation_level=None, check_same_thread=False
            )
            connection.row_factory = sqlite3.Row
            connection.execute(f"PRAGMA busy_timeout = {int(busy_timeout * 1000)}")
            mode = connection.execute("PRAGMA journal_mode = WAL").fetchone()[0]
            if mode.lower() != "wal":
                raise StoreError(f"cannot put {db_path} in WAL mode (got {mode})")
            connection.execute("PRAGMA synchronous = NORMAL")
            connection.execute("PRAGMA foreign_keys = ON")
            _ensure_math_functions(connection)
        except sqlite3.DatabaseError as exc:
            raise store_fault(exc, db_path, opening=True) from None
        store = cls(root, connection)
        try:
            store._migrate()
        except sqlite3.DatabaseError as exc:
            connection.close()
            raise store_fault(exc, db_path, opening=True) from None
        return store

    # -- the file under the connection -----------------------------------------------------

    def _notify(self, text: str) -> None:
        self.notices.append(text)
        for listener in list(self.notice_listeners):
            with contextlib.suppress(Exception):
                listener(text)

    def check_file(self) -> None:
        """Reopen when `engram.db` was deleted or replaced since this store opened it.

        Deleted: the connection still holds the old file open, so its whole content (every
        acknowledged write) is copied into a new `engram.db` at the same path, which is then
        opened. Replaced (a restore from a backup, another store moved in): the new file is
        opened, and the old content is kept beside it as `engram.db.recovered-<time>` so no
        acknowledged write is lost. Either way the user is told once.
        """
        with self._lock:
            # A link swapped in under a running engram: no write may follow it.
            refuse_linked_store(self.root)
            current = _file_identity(self.db_path)
            if current == self._identity:
                return
            if self._db.in_transaction:
                return  # never swap the connection under an open transaction
            stamp = time.strftime("%Y%m%dT%H%M%S")
            # Order matters. Closing the old connection makes SQLite checkpoint and unlink
            # `engram.db-wal` and `-shm` *by name*, so it must happen before anything of the
            # new file's lives under those names unflushed.
            if current is None:
                ensure_private_dir(self.dir)
                gitignore = self.dir / ".gitignore"
                if not gitignore.exists():
                    write_private_file(gitignore, GITIGNORE)
                copy = self.dir / f".{DB_NAME}.{os.getpid()}.recovering"
                _copy_database(self._db, copy)
                _close_quietly(self._db)
                for suffix in ("-wal", "-shm"):  # the deleted file's, if left behind
                    with contextlib.suppress(FileNotFoundError):
                        os.unlink(f"{self.db_path}{suffix}")
                os.replace(copy, self.db_path)
                message = (
                    f"{self.db_path} was deleted while engram had it open; "
                    "recreated it with every record written so far"
                )
            else:
                # The `-wal` beside the new file is most likely still the old file's (a restore
                # moves the database, not its WAL): fold its frames into the old file and empty
                # it, or SQLite would replay them onto the new one.
                with contextlib.suppress(sqlite3.Error):
                    self._db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
                kept = self.dir / f"{DB_NAME}.recovered-{stamp}"
                _copy_database(self._db, kept)
                _close_quietly(self._db)
                message = (
                    f"{self.db_path} was replaced while engram had it open; now using the new "
                    f"file, and the records written to the old one are kept in {kept.name}"
                )
            reopened = type(self)._connect(self.root, self.db_path)
            self._db = reopened._db
            if self._log_folder is not None:
                self._db.execute(f"PRAGMA wal_autocheckpoint = {self._log_folder.most_pages}")
            self._identity = _file_identity(self.db_path)
        self._notify(message)

    def wait_when_busy(self, seconds: float) -> None:
        """How long a write waits for another process's lock from now on."""
        with self._lock:
            self._db.execute(f"PRAGMA busy_timeout = {int(seconds * 1000)}")

    def close(self) -> None:
        if self._log_folder is not None:
            self._log_folder.stop()
        with self._lock:
            pending = _deferred_closes
            if pending is None:
                self._db.close()
                return
            try:
                busy = self._db.in_transaction
            except sqlite3.ProgrammingError:
                return  # closed already (closing twice is no error, as for a connection)
            if busy:
                self._db.close()  # rolled back now, as a close does
                return
            # Closed for this store's users (a use after this raises, as after a close); the
            # connection itself is closed by `close_deferred`.
            pending.append(self._db)
            self._db = _closed_connection()

    # -- the write-ahead log ---------------------------------------------------------------

    def fold_log_when_idle(self, quiet: float = 0.5, most_pages: int = 4000) -> None:
        """Fold the write-ahead log into the database on a thread of its own once no commit
        came for `quiet` seconds, instead of inside whichever commit crosses SQLite's
        1000-page mark. For a long-lived process (the language server): a checkpoint of a
        50,000-file workspace writes ~80 pages, and every 13th one waited 30-50 ms for the
        fold and its two fsyncs while the user waited for it. SQLite's own fold stays, at
        `most_pages`, for a process that is never quiet that long.
        """
        with self._lock:
            if self._log_folder is None:
                self._db.execute(f"PRAGMA wal_autocheckpoint = {int(most_pages)}")
                self._log_folder = _LogFolder(self, quiet, int(most_pages))

    def _fold_log(self) -> None:
        with self._lock:
            if self._db.in_transaction:
                return  # a caller's transaction: its commit wakes the folder again
            with contextlib.suppress(sqlite3.Error):  # closed, or another process holds it
                self._db.execute("PRAGMA wal_checkpoint(PASSIVE)")

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- schema --------------------------------------------------------------------------

    @property
    def schema_version(self) -> int:
        with self._lock:
            return int(self._db.execute("PRAGMA user_version").fetchone()[0])

    def _migrate(self) -> None:
        current = self.schema_version
        known = migrations()
        latest = known[-1][0] if known else 0
        if current > latest:
            raise StoreError(
                f"the store {self.db_path} has schema version {current}, newer than this "
                f"engram knows ({latest})",
                hint="upgrade engram; the store was left untouched",
            )
        if current == latest:
            return
        for version, path in known:
            if version <= current:
                continue
            script = path.read_text(encoding="utf-8")
            with self._lock:
                try:
                    self._db.execute("BEGIN IMMEDIATE")
                    # Another process may have migrated while we waited for the lock.
                    if int(self._db.execute("PRAGMA user_version").fetchone()[0]) >= version:
                        self._db.execute("COMMIT")
                        continue
                    for statement in _split_sql(script):
                        self._db.execute(statement)
                    self._db.execute(f"PRAGMA user_version = {version}")
                    self._db.execute("COMMIT")
                except BaseException:
                    if self._db.in_transaction:
                        self._db.execute("ROLLBACK")
                    raise

    # -- access --------------------------------------------------------------------------

    @contextlib.contextmanager
    def transaction(self) -> Iterator[sqlite3.Connection]:
        """A write transaction: committed when the block ends, rolled back on any error.

        BEGIN IMMEDIATE takes the write lock up front, so two processes never both read and
        then fail to upgrade (SQLITE_BUSY mid-transaction); the busy timeout queues them.

        Nested in another transaction of the same thread it is a SAVEPOINT: an error rolls back
        the inner block only, and nothing is durable before the outermost block commits. That
        lets a caller batch many library calls (an ingest chunk) into one commit.
        """
        with self._lock:
            if self._db.in_transaction:
                # The lock is held for a whole transaction, so an open one here is this thread's.
                self._depth += 1
                name = f"engram_nested_{self._depth}"
                self._db.execute(f"SAVEPOINT {name}")
                try:
                    yield self._db
                except BaseException:
                    self._db.execute(f"ROLLBACK TO {name}")
                    self._db.execute(f"RELEASE {name}")
                    raise
                else:
                    self._db.execute(f"RELEASE {name}")
                finally:
                    self._depth -= 1
                return
            self.check_file()
            try:
                self._db.execute("BEGIN IMMEDIATE")
            except sqlite3.DatabaseError as exc:
                raise store_fault(exc, self.db_path) from exc
            try:
                yield self._db
            except sqlite3.DatabaseError as exc:
                with contextlib.suppress(sqlite3.Error):
                    if self._db.in_transaction:
                        self._db.execute("ROLLBACK")
                fault = store_fault(exc, self.db_path, only_known=True)
                if fault is None:
                    raise
                raise fault from exc
            except BaseException:
                with contextlib.suppress(sqlite3.Error):
                    if self._db.in_transaction:
                        self._db.execute("ROLLBACK")
                raise
            else:
                try:
                    self._db.execute("COMMIT")
                except sqlite3.DatabaseError as exc:
                    with contextlib.suppress(sqlite3.Error):
                        if self._db.in_transaction:
                            self._db.execute("ROLLBACK")
                    raise store_fault(exc, self.db_path) from exc
                if self._log_folder is not None:
                    self._log_folder.committed()

    def query(
        self, sql: str, params: tuple[object, ...] | dict[str, object] = ()
    ) -> list[sqlite3.Row]:
        with self._lock:
            return self._db.execute(sql, params).fetchall()

    def query_one(
        self, sql: str, params: tuple[object, ...] | dict[str, object] = ()
    ) -> sqlite3.Row | None:
        with self._lock:
            row: sqlite3.Row | None = self._db.execute(sql, params).fetchone()
            return row

    # -- facts for `engram status` ---------------------------------------------------------

    def tables(self) -> list[str]:
        rows = self.query(
            "SELECT name FROM sqlite_master WHERE type = 'table' "
            "AND name NOT LIKE 'sqlite_%' AND name NOT LIKE '%_fts%' ORDER BY name"
        )
        return [row["name"] for row in rows]

    def counts(self) -> dict[str, int]:
        return {
            table: int(self.query_one(f'SELECT COUNT(*) FROM "{table}"')[0])  # type: ignore[index]
            for table in self.tables()
        }

    def size_bytes(self) -> int:
        total = 0
        for dirpath, _dirnames, filenames in os.walk(self.dir):
            for name in filenames:
                with contextlib.suppress(OSError):
                    total += os.lstat(os.path.join(dirpath, name)).st_size
        return total


# The last connection to a store to close folds the write-ahead log into the database, with
# its fsyncs: 2 to 60 ms on a busy machine, paid by whoever waits for the command. A process
# that can answer first and close after (the resident server's child, memory_core/
# resident_server.py, which replies to its client and then exits) calls `defer_closing`:
# every `Store.close` from then on leaves the connection open for `close_deferred`.
_deferred_closes: list[sqlite3.Connection] | None = None


def defer_closing() -> None:
    """From now on, `Store.close` hands its connection to `close_deferred` (this process)."""
    global _deferred_closes
    if _deferred_closes is None:
        _deferred_closes = []


# Work a command may leave until its answer is out when that can come first (the same resident
# child): each with the folder of the store it works on. Never used where closes are not
# deferred: there `after_answer` runs the work at once.
_after_answer: list[tuple[Path, Callable[[Store], None]]] = []


def after_answer(store: Store, work: Callable[[Store], None]) -> None:
    """Run `work(store)` now, or, in a process that answers first (`defer_closing`), after the
    answer, on the same store opened again: for what the answer does not depend on (the notes
    of the sessions a session start settled). `work` must be a view of what is committed: it
    may read the store and write files beside it; a failure is logged, never raised."""
    if _deferred_closes is None or not hold_until_worked(store.root, wait=False):
        # (Another process's work after its answer holds the store, and this may run inside
        # a transaction, whose write lock that work may be waiting for: done now, as cold.)
        _do_logged(store, work)
        return
    _after_answer.append((store.root, work))


# Hook events whose whole recording waits for the answer (`later`), in the order they came.
_later: list[tuple[Path, Callable[[], None]]] = []


def answers_first() -> bool:
    """True in a process that answers before it closes its stores (`defer_closing`)."""
    return _deferred_closes is not None


def later(root: Path, work: Callable[[], None]) -> None:
    """Run `work()` after the answer, in a process that answers first (`answers_first`), else
    at once. Until it is done, every other opening of the store of `root` waits for it
    (`hold_until_worked`), so whatever comes next reads what it wrote. `work` opens what it
    needs itself and reports its own failures; one it raises is logged."""
    if _deferred_closes is None or not hold_until_worked(root):
        work()  # (no lock to make the next reader wait: recorded before the answer)
        return
    _later.append((root, work))


def later_with_store(root: Path, work: Callable[[Store], object], not_done: str) -> None:
    """`later`, for work on a connection of its own, opened when the work runs: a store that
    cannot be opened then is logged as `not_done` with the reason, and the work is not done."""

    def on_its_own_store() -> None:
        try:
            opened = Store.open(root)
        except Exception as exc:
            from memory_core import log

            log.write(root, "warning", f"{not_done}: {exc}")
            return
        try:
            work(opened)
        finally:
            opened.close()

    later(root, on_its_own_store)


# Work left for after the answer holds this lock, exclusively, on the store's folder from
# before the answer until the work is done; every connection to the store waits for it first
# (`wait_for_work_after_answer`): a process that answers first must not let the next command
# (the agent's next hook, the user's `engram` command) read the store before its work is in.
AFTER_ANSWER_LOCK = "after-answer.lock"
# How long an opening of the store waits for such work before it goes on regardless (work that
# hangs must not stop engram; its writes then land when they land, as any other process's).
AFTER_ANSWER_WAIT_SECONDS = 30.0
# The stores whose lock this process holds: {store folder's real path: the descriptor}.
_worked_on: dict[str, int] = {}


def hold_until_worked(root: Path, *, wait: bool = True) -> bool:
    """Hold the after-answer lock of the store of `root` until `close_deferred` has done this
    process's work after the answer; with `wait`, waiting for whoever holds it now (call it
    outside any transaction: that holder may be waiting for the store's write lock). False
    when it is not held (another process holds it and `wait` is false, or it cannot be made:
    no folder yet, the work creating the store, or none writable, so nothing to read)."""
    folder = root / STORE_DIRNAME
    key = os.path.realpath(folder)
    if key in _worked_on:
        return True
    try:
        import fcntl
    except ImportError:
        return False
    try:
        fd = os.open(folder / AFTER_ANSWER_LOCK, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
    except OSError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | (0 if wait else fcntl.LOCK_NB))
    except OSError:
        os.close(fd)
        return False
    _worked_on[key] = fd
    return True


def adopt_after_answer_lock(root: Path, fd: int) -> None:
    """Take `fd`, which holds the after-answer lock of the store of `root` (taken before this
    module was loaded: memory_core/agents/quiet_events.py), as `hold_until_worked` would."""
    _worked_on[os.path.realpath(root / STORE_DIRNAME)] = fd


def wait_for_work_after_answer(folder: Path, seconds: float = AFTER_ANSWER_WAIT_SECONDS) -> None:
    """Wait until no other process still does work it left for after its answer on the store
    in `folder` (`.engram`), for at most `seconds`. Costs one failed open when none ever did."""
    if _worked_on and os.path.realpath(folder) in _worked_on:
        return  # this process's own work: it never waits for itself
    try:
        fd = os.open(folder / AFTER_ANSWER_LOCK, os.O_RDONLY | os.O_CLOEXEC)
    except OSError:
        return
    try:
        import fcntl
    except ImportError:  # Windows, where no resident server answers first
        os.close(fd)
        return
    try:
        deadline = time.monotonic() + seconds
        pause = 0.0005
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
                return
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    return
                time.sleep(pause)
                pause = min(pause * 2, 0.01)
            except OSError:
                return
    finally:
        os.close(fd)  # a shared lock is released with its descriptor


def _release_worked_on() -> None:
    while _worked_on:
        _, fd = _worked_on.popitem()
        with contextlib.suppress(OSError):
            os.close(fd)


def _do_logged(store: Store, work: Callable[[Store], None]) -> None:
    try:
        work(store)
    except Exception as exc:
        from memory_core import log

        log.write(store.root, "warning", f"work after the answer failed: {exc}", exc=exc)


def close_deferred() -> None:
    """Do the work left for after the answer (`after_answer`), then close the connections
    `Store.close` left open since `defer_closing` (the last of a store's connections to close
    folds its log, as it would have then)."""
    global _deferred_closes
    while _later:
        root, call = _later.pop(0)
        try:
            call()
        except Exception as exc:
            from memory_core import log

            log.write(root, "error", f"work after the answer failed: {exc}", exc=exc)
    while _after_answer:
        root, work = _after_answer.pop(0)
        try:
            store = Store.open(root)
        except Exception as exc:
            from memory_core import log

            log.write(root, "warning", f"work after the answer not done: {exc}")
            continue
        try:
            _do_logged(store, work)
        finally:
            store.close()
    # The next command may read the store now; the connections' closes (the log folded, with
    # its fsyncs) are nobody's wait.
    _release_worked_on()
    pending, _deferred_closes = _deferred_closes or [], None
    for connection in pending:
        _close_quietly(connection)


def _closed_connection() -> sqlite3.Connection:
    connection = sqlite3.connect(":memory:")
    connection.close()
    return connection


class _LogFolder:
    """The thread behind `Store.fold_log_when_idle`: asleep until a commit, then it waits for
    `quiet` seconds without one and folds the log."""

    def __init__(self, store: Store, quiet: float, most_pages: int) -> None:
        self.most_pages = most_pages
        self._store = store
        self._quiet = quiet
        self._last_commit = 0.0
        self._wake = threading.Event()
        self._stopped = threading.Event()
        self._thread = threading.Thread(target=self._run, name="engram-log-folder", daemon=True)
        self._thread.start()

    def committed(self) -> None:
        self._last_commit = time.monotonic()
        self._wake.set()

    def stop(self) -> None:
        self._stopped.set()
        self._wake.set()
        if self._thread is not threading.current_thread():
            self._thread.join(timeout=5)

    def _run(self) -> None:
        while True:
            self._wake.wait()
            while not self._stopped.is_set():
                remaining = self._last_commit + self._quiet - time.monotonic()
                if remaining <= 0:
                    break
                self._stopped.wait(remaining)
            if self._stopped.is_set():
                return
            # Cleared before the fold, so a commit from now on wakes the thread again.
            self._wake.clear()
            self._store._fold_log()


def migrated_in_memory() -> Store:
    """A store in memory at the latest schema, every migration applied as on a real store: for
    what depends on the schema alone (the quota's table columns, learnt by the resident server)."""
    connection = sqlite3.connect(":memory:", isolation_level=None, check_same_thread=False)
    connection.row_factory = sqlite3.Row
    _ensure_math_functions(connection)
    store = Store(Path(os.devnull), connection)
    store._migrate()
    return store


def _ensure_math_functions(connection: sqlite3.Connection) -> None:
    """Decay is computed in SQL with exp(); SQLite builds without math functions get Python's."""
    try:
        connection.execute("SELECT exp(0)")
    except sqlite3.OperationalError:
        connection.create_function("exp", 1, math.exp, deterministic=True)


def _split_sql(script: str) -> list[str]:
    """Split a migration into statements (sqlite3.complete_statement handles triggers)."""
    statements: list[str] = []
    buffer = ""
    for line in script.splitlines(keepends=True):
        buffer += line
        if sqlite3.complete_statement(buffer):
            if buffer.strip():
                statements.append(buffer.strip())
            buffer = ""
    if buffer.strip() and not buffer.strip().startswith("--"):
        statements.append(buffer.strip())
    return statements


# -- faults ------------------------------------------------------------------------------------


class StoreFaultError(StoreError):
    """The store cannot be used, with its cause: `read-only`, `disk-full`, `corrupt`, `busy`,
    `unreadable`. Each cause has its own advice, safe for that cause (moving a store away
    is right for a corrupt file and wrong on a full disk)."""

    def __init__(self, message: str, *, hint: str, cause: str) -> None:
        super().__init__(message, hint=hint)
        self.cause = cause


_READ_ONLY_CODES = {"SQLITE_READONLY", "SQLITE_CANTOPEN", "SQLITE_PERM", "SQLITE_AUTH"}
_FULL_CODES = {"SQLITE_FULL"}
_CORRUPT_CODES = {"SQLITE_CORRUPT", "SQLITE_NOTADB"}
_BUSY_CODES = {"SQLITE_BUSY", "SQLITE_LOCKED"}


def _fault_cause(exc: sqlite3.Error) -> str | None:
    # `sqlite_errorname` is the primary or extended code ("SQLITE_READONLY_DIRECTORY"); the
    # text is the fallback for errors raised without one.
    name = str(getattr(exc, "sqlite_errorname", "") or "")
    primary = "_".join(name.split("_")[:2])
    text = str(exc).lower()
    if primary in _FULL_CODES or "disk is full" in text:
        return "disk-full"
    if primary in _CORRUPT_CODES or "malformed" in text or "not a database" in text:
        return "corrupt"
    if primary in _READ_ONLY_CODES or "readonly" in text or "read-only" in text:
        return "read-only"
    if primary in _BUSY_CODES or "database is locked" in text:
        return "busy"
    if primary == "SQLITE_IOERR" or "disk i/o error" in text:
        return "io"
    return None


if TYPE_CHECKING:  # (typing.overload at run time would load typing)

    @overload
    def store_fault(
        exc: sqlite3.Error, db_path: Path, *, opening: bool = ..., only_known: Literal[False] = ...
    ) -> StoreFaultError: ...

    @overload
    def store_fault(
        exc: sqlite3.Error, db_path: Path, *, opening: bool = ..., only_known: Literal[True]
    ) -> StoreFaultError | None: ...


def store_fault(
    exc: sqlite3.Error, db_path: Path, *, opening: bool = False, only_known: bool = False
) -> StoreFaultError | None:
    """The error a user sees for a SQLite failure on the store, named by its cause."""
    cause = _fault_cause(exc)
    if cause in ("io", None) and _disk_full(db_path):
        # SQLite reports a write the disk had no room for as an I/O error at times (a WAL or
        # shared-memory file that could not grow): a full disk is named as such.
        cause = "disk-full"
    if cause is None and only_known:
        return None
    doing = "open" if opening else "write to"
    if cause == "read-only":
        return StoreFaultError(
            f"cannot {doing} the store {db_path}: it is read-only ({exc})",
            hint="make .engram/ and its files writable by you, or the file system writable; "
            "nothing was changed",
            cause=cause,
        )
    if cause == "disk-full":
        return StoreFaultError(
            f"cannot {doing} the store {db_path}: the disk is full ({exc})",
            hint="free some disk space and retry; the store itself is fine, leave it where it is",
            cause=cause,
        )
    if cause == "corrupt":
        return StoreFaultError(
            f"the store {db_path} is damaged or not an engram store ({exc})",
            hint="restore .engram/engram.db from a backup, or move it aside and run engram init",
            cause=cause,
        )
    if cause == "busy":
        return StoreFaultError(
            f"the store {db_path} is locked by another process ({exc})",
            hint="retry when the other engram command has finished",
            cause=cause,
        )
    if cause == "io":
        return StoreFaultError(
            f"cannot {doing} the store {db_path}: the disk reported an I/O error ({exc})",
            hint="check the disk and the file system (dmesg); leave the store where it is",
            cause=cause,
        )
    return StoreFaultError(
        f"cannot {doing} the store {db_path}: {exc}",
        hint="see .engram/engram.log; leave the store where it is",
        cause="unreadable",
    )


def _disk_full(db_path: Path) -> bool:
    try:
        found = os.statvfs(db_path.parent)
    except OSError:
        return False
    return found.f_bavail * found.f_frsize < 64 * 1024


def _file_identity(path: Path) -> tuple[int, int] | None:
    try:
        info = os.stat(path)
    except OSError:
        return None
    return (info.st_dev, info.st_ino)


def _create_private_file(path: Path) -> None:
    os.close(os.open(path, os.O_WRONLY | os.O_CREAT, FILE_MODE))


def _close_quietly(connection: sqlite3.Connection) -> None:
    with contextlib.suppress(sqlite3.Error):
        connection.close()


def _copy_database(source: sqlite3.Connection, target: Path) -> None:
    """Copy every page `source` sees (its file may be deleted already) into a new file."""
    tmp = target.with_name(f".{target.name}.{os.getpid()}.tmp")
    with contextlib.suppress(FileNotFoundError):
        os.unlink(tmp)
    _create_private_file(tmp)
    destination = sqlite3.connect(tmp)
    try:
        source.backup(destination)
        destination.execute("PRAGMA journal_mode = WAL")
    finally:
        destination.close()  # the last connection: its WAL is folded in and removed
    os.replace(tmp, target)
