"""What a session does between turns (tool calls, files changed, commands run, searches made),
gathered and written in one transaction.

A hook records one item at a time; a transcript ingest records thousands per chunk. Written
item by item, each would cost a savepoint, a check that the session row exists and an update
of its activity; gathered, a chunk costs one statement per table and one update per session.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from memory_core import clock
from memory_core.redact import redact
from memory_core.sessions.model import _ensure, _json, _touch
from memory_core.store import Store


class _Seen:
    """One session's activity in the batch: what `_touch` would have summed item by item.
    (Plain: every tool call's hook comes here, and `dataclasses` costs more than Python's start.)"""

    __slots__ = ("added", "first_ts", "last_action", "last_ts")

    def __init__(self, first_ts: float, last_ts: float, last_action: str, added: int) -> None:
        self.first_ts = first_ts
        self.last_ts = last_ts
        self.last_action = last_action
        self.added = added


class Activity:
    """Items of activity for `write` to store; every text is redacted as it is added."""

    def __init__(self, store: Store) -> None:
        self._store = store
        self._seen: dict[str, _Seen] = {}
        self._tool_calls: list[tuple[str, str, int, str | None, float]] = []
        self._files: list[tuple[str, str, float, float, int]] = []
        self._commands: list[tuple[str, str, int | None, float, int | None]] = []
        self._searches: dict[str, list[str]] = {}

    def _note(self, session_id: str, ts: float, action: str, added: int = 0) -> None:
        seen = self._seen.get(session_id)
        if seen is None:
            self._seen[session_id] = _Seen(ts, ts, action, added)
        else:
            seen.last_ts = max(seen.last_ts, ts)
            seen.last_action = action
            seen.added += added

    def tool_call(
        self,
        session_id: str,
        *,
        tool: str,
        ok: bool,
        summary: str | None = None,
        ts: float | None = None,
    ) -> None:
        ts = clock.now() if ts is None else ts
        text = redact(summary) if summary else summary
        self._tool_calls.append((session_id, tool, int(bool(ok)), text, ts))
        self._note(session_id, ts, "tool", len(text or ""))

    def file_modified(
        self, session_id: str, path: str, ts: float | None = None, *, outside: bool = False
    ) -> None:
        """`path` workspace-relative, or absolute inside the root; `outside`: an absolute path
        outside the workspace (a plan under ~/.claude/plans/), kept as it is and listed apart."""
        from memory_core.workspace import relative_path

        ts = clock.now() if ts is None else ts
        if outside:
            rel = redact(path)
        elif os.path.isabs(path):
            rel = relative_path(self._store.root, path)
        else:
            rel = Path(path).as_posix()
        self._files.append((session_id, rel, ts, ts, int(outside)))
        self._note(session_id, ts, "file")

    def command(
        self,
        session_id: str,
        command: str,
        *,
        exit_code: int | None = None,
        ts: float | None = None,
        failed: bool | None = None,
    ) -> None:
        """`failed` (from `agents.failures`) says whether it failed when no exit code tells (a
        hook's block, an interruption, a timeout)."""
        ts = clock.now() if ts is None else ts
        text = redact(command)
        if failed is None and exit_code is not None:
            failed = exit_code != 0
        self._commands.append(
            (session_id, text, exit_code, ts, None if failed is None else int(failed))
        )
        self._note(session_id, ts, "command", len(text))

    def search(self, session_id: str, query: str, ts: float | None = None) -> None:
        ts = clock.now() if ts is None else ts
        self._searches.setdefault(session_id, []).append(redact(query))
        self._note(session_id, ts, "search")

    def write(self) -> None:
        """Store what was gathered, in one transaction, and start over."""
        if not self._seen:
            return
        with self._store.transaction() as db:
            for session_id, seen in self._seen.items():
                _ensure(db, session_id, seen.first_ts)
            db.executemany(
                "INSERT INTO session_tool_calls (session_id, tool, ok, summary, ts) VALUES (?, ?, ?, ?, ?)",
                self._tool_calls,
            )
            db.executemany(
                "INSERT INTO session_files (session_id, path, first_ts, last_ts, outside) VALUES (?, ?, ?, ?, ?) "
                "ON CONFLICT (session_id, path) DO UPDATE SET last_ts = MAX(last_ts, excluded.last_ts), "
                "changes = changes + 1",
                self._files,
            )
            db.executemany(
                "INSERT INTO session_commands (session_id, command, exit_code, ts, failed) VALUES (?, ?, ?, ?, ?)",
                self._commands,
            )
            for session_id, queries in self._searches.items():
                row = db.execute(
                    "SELECT search_footprint FROM sessions WHERE id = ?", (session_id,)
                ).fetchone()
                footprint: list[str] = json.loads(row[0])
                for query in queries:
                    # Kept unique, the latest last: the footprint holds the last 50 searches.
                    footprint = [q for q in footprint if q != query] + [query]
                db.execute(
                    "UPDATE sessions SET search_footprint = ? WHERE id = ?",
                    (_json(footprint[-50:]), session_id),
                )
            for session_id, seen in self._seen.items():
                _touch(db, session_id, seen.last_ts, seen.last_action, seen.added)
        self._seen.clear()
        self._tool_calls.clear()
        self._files.clear()
        self._commands.clear()
        self._searches.clear()
