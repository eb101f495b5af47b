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
from collections.abc import Iterator
from pathlib import Path

from memory_core.errors import StoreError
from memory_core.workspace import STORE_DIRNAME, find_root, is_git_repository

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
    if not existed or STORE_DIRNAME in path.parts:
        os.chmod(path, DIR_MODE)


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

    # -- opening -------------------------------------------------------------------------

    @classmethod
    def init(cls, root: Path) -> Store:
        """Create the store for `root` (idempotent) and open it."""
        store_dir = root / STORE_DIRNAME
        ensure_private_dir(store_dir)
        ensure_private_dir(store_dir / "exports")
        gitignore = store_dir / ".gitignore"
        if not gitignore.exists():
            write_private_file(gitignore, GITIGNORE)
        db_path = store_dir / DB_NAME
        if not db_path.exists():
            # Create the file ourselves so it gets 0600; SQLite gives -wal and -shm the
            # same mode as the database file.
            os.close(os.open(db_path, os.O_WRONLY | os.O_CREAT, FILE_MODE))
        return cls._connect(root, db_path)

    @classmethod
    def open(cls, root: Path) -> Store:
        """Open the existing store of `root`; StoreError if there is none."""
        db_path = root / STORE_DIRNAME / DB_NAME
        if not db_path.exists():
            raise no_store_error(root)
        return cls._connect(root, db_path)

    @classmethod
    def open_or_init_in_git(cls, root: Path) -> Store:
        """The store a front end writing to `root` uses (DESIGN section 2).

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
    def open_or_init(cls, root: Path) -> Store:
        db_path = root / STORE_DIRNAME / DB_NAME
        return cls.open(root) if db_path.exists() else cls.init(root)

    @classmethod
    def for_path(cls, path: str | os.PathLike[str] | None = None, *, create: bool = False) -> Store:
        root = find_root(path)
        return cls.open_or_init(root) if create else cls.open(root)

    @classmethod
    def _connect(cls, root: Path, db_path: Path) -> Store:
        try:
            connection = sqlite3.connect(
                db_path, timeout=30.0, isolation_level=None, check_same_thread=False
            )
            connection.row_factory = sqlite3.Row
            connection.execute("PRAGMA busy_timeout = 30000")
            mode = connection.execute("PRAGMA journal_mode = WAL").fetchone()[0]
            if mode.lower() != "wal":
                raise StoreError(f"cannot put {db_path} in WAL mode (got {mode})")
            connection.execute("PRAGMA synchronous = NORMAL")
            connection.execute("PRAGMA foreign_keys = ON")
            _ensure_math_functions(connection)
        except sqlite3.DatabaseError as exc:
            raise StoreError(
                f"cannot open the store {db_path}: {exc}",
                hint="is it an engram store? restore it from a backup or move it away",
            ) from None
        store = cls(root, connection)
        store._migrate()
        return store

    def close(self) -> None:
        with self._lock:
            self._db.close()

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
            self._db.execute("BEGIN IMMEDIATE")
            try:
                yield self._db
            except BaseException:
                self._db.execute("ROLLBACK")
                raise
            else:
                self._db.execute("COMMIT")

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
