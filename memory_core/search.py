"""Search over memories, gotchas, session summaries and digests.

SQLite FTS5 finds and scores the text (BM25); the score is multiplied by the entry's current
priority (`memory_core.decay`), so of two entries equally relevant the fresher, more used one
comes first. Returned entries count as accessed, which raises their priority next time.

Speed: FTS5 scores every match, but only the best `CANDIDATES_PER_RESULT x limit` by BM25 are
read back and re-ranked by priority, so the cost stays flat when a word matches thousands of
entries. An entry whose text is much less relevant cannot climb past that cut by priority
alone; that is the intended trade (relevance first, priority to order the relevant).
"""

from __future__ import annotations

import re
import sqlite3
from collections.abc import Iterable, Sequence
from typing import Any

from memory_core import clock, decay, search_index
from memory_core.memory import filter_sql, record_accesses, to_dict
from memory_core.store import Store

ALL_KINDS = ("memory", *search_index.KINDS)
CANDIDATES_PER_RESULT = 8
MIN_CANDIDATES = 64
CANDIDATE_CAP = 2000
_PRIORITY_SQL = decay.sql_priority("m", "clock.now")

_WORD = re.compile(r"\w+", re.UNICODE)
# Words too common to carry meaning in a query; dropped unless the query has nothing else.
_STOPWORDS = frozenset(
    [
        "a",
        "an",
        "and",
        "are",
        "as",
        "at",
        "be",
        "by",
        "for",
        "from",
        "how",
        "i",
        "in",
        "is",
        "it",
        "of",
        "on",
        "or",
        "that",
        "the",
        "this",
        "to",
        "was",
        "we",
        "what",
        "when",
        "where",
        "which",
        "who",
        "why",
        "with",
    ]
)


def fts_terms(text: str, *, prefix: bool = False) -> list[str]:
    """The words of free text as FTS5 terms (quoted, so operators and punctuation are literal).

    With `prefix` the last word also matches longer words (typing "auth" finds "authn").
    """
    words = [w.lower() for w in _WORD.findall(text)]
    meaningful = [w for w in words if w not in _STOPWORDS] or words
    terms = [f'"{w}"' for w in dict.fromkeys(meaningful)][:16]
    if prefix and terms:
        terms[-1] += "*"
    return terms


def _memory_matches(
    store: Store, terms: list[str], where: str, params: list[object], limit: int, now: float
) -> list[sqlite3.Row]:
    """The best `limit` memories for `terms`, ranked inside SQLite by relevance x priority.

    Entries holding every word come first (FTS5 AND, cheap: it seeks through the rarest
    word's matches). Only when they are too few does the search widen to entries holding any
    of the words, leaving out words so common (more than CANDIDATE_CAP matches) that they
    carry almost no BM25 weight but would make the scan long.
    """
    rows = _ranked(store, " AND ".join(terms), where, params, limit, now)
    if len(terms) == 1 or len(rows) >= limit:
        return rows
    rare = [t for t in terms if _match_count(store, t) <= CANDIDATE_CAP]
    wider = _ranked(store, " OR ".join(rare or terms), where, params, limit, now)
    seen = {row["id"] for row in rows}
    merged = rows + [row for row in wider if row["id"] not in seen]
    merged.sort(key=lambda row: -row["score"])
    return merged[:limit]


def _ranked(
    store: Store, match: str, where: str, params: list[object], limit: int, now: float
) -> list[sqlite3.Row]:
    # Three steps inside one statement: FTS5 scores the matches (the newest CANDIDATE_CAP of
    # them first: it walks rowids newest first and stops); the filters and a BM25 cut keep
    # the best few candidates; only those get the priority formula and the final order.
    # When the cap left fewer than `limit` entries through the filters, every match is scored.
    priority = _PRIORITY_SQL
    candidates = max(MIN_CANDIDATES, limit * CANDIDATES_PER_RESULT)
    filtered = where != "1"
    for capped in (True, False):
        inner = (
            "SELECT rowid, bm25(memories_fts, 1.0, 0.5) AS b FROM memories_fts"
            " WHERE memories_fts MATCH ?"
        )
        if capped:
            inner += f" ORDER BY rowid DESC LIMIT {CANDIDATE_CAP}"
        if filtered:
            best = (
                f"SELECT f.rowid, f.b FROM ({inner}) f JOIN memories m ON m.seq = f.rowid"
                f" WHERE {where} ORDER BY f.b LIMIT ?"
            )
        else:
            best = f"SELECT f.rowid, f.b FROM ({inner}) f ORDER BY f.b LIMIT ?"
        rows = _match(
            store,
            f"SELECT m.*, -t.b AS relevance, -t.b * {priority} AS score FROM ({best}) t"
            " JOIN memories m ON m.seq = t.rowid JOIN (SELECT ? AS now) clock"
            " ORDER BY score DESC, m.seq DESC LIMIT ?",
            (match, *(params if filtered else ()), candidates, now, limit),
        )
        if len(rows) >= limit or not capped or _match_count(store, match) <= CANDIDATE_CAP:
            return rows
    return rows


def _match_count(store: Store, match: str) -> int:
    """How many entries match, counted up to CANDIDATE_CAP + 1 (a bounded scan)."""
    row = store.query_one(
        "SELECT count(*) FROM (SELECT 1 FROM memories_fts WHERE memories_fts MATCH ? LIMIT ?)",
        (match, CANDIDATE_CAP + 1),
    )
    return int(row[0]) if row else 0


def search(
    store: Store,
    query: str,
    *,
    limit: int = 10,
    kinds: Sequence[str] | None = None,
    types: Sequence[str] | None = None,
    type: str | None = None,
    tags: Iterable[str] = (),
    tag: str | None = None,
    agent: str | None = None,
    session_id: str | None = None,
    since: float | None = None,
    until: float | None = None,
    include_archived: bool = False,
    record_access: bool = True,
    prefix: bool = False,
    now: float | None = None,
) -> list[dict[str, Any]]:
    """The entries best matching `query`, best first, each with `score` and `relevance`.

    Filters: `types` (memory types; implies memories only), `tags`, `agent`, `session_id`,
    `since`/`until` (Unix seconds, on creation time), `kinds` (memory, gotcha, session, digest).
    """
    from memory_core.errors import UsageError

    now = clock.now() if now is None else now
    limit = max(1, min(int(limit), 500))
    terms = fts_terms(query, prefix=prefix)
    if not terms:
        return []
    match = " OR ".join(terms)
    type_list = [*(types or ()), *([type] if type else [])]
    tag_list = [*tags, *([tag] if tag else [])]
    wanted = tuple(kinds) if kinds else ALL_KINDS
    unknown = [k for k in wanted if k not in ALL_KINDS]
    if unknown:
        raise UsageError(f"unknown kind {unknown[0]!r}", hint=f"one of {', '.join(ALL_KINDS)}")
    if type_list:
        wanted = ("memory",)
    candidates = max(MIN_CANDIDATES, limit * CANDIDATES_PER_RESULT)

    results: list[dict[str, Any]] = []
    if "memory" in wanted:
        where, params = filter_sql(
            "m",
            types=type_list or None,
            tags=tag_list,
            agent=agent,
            session_id=session_id,
            since=since,
            until=until,
            include_archived=include_archived,
        )
        for row in _memory_matches(store, terms, where, params, limit, now):
            entry = to_dict(row, now)
            entry["relevance"] = round(float(row["relevance"]), 6)
            entry["score"] = float(row["score"])
            results.append(entry)

    others = [k for k in wanted if k != "memory"]
    if others:
        search_index.sync(store, now=now)
        clauses = [f"d.kind IN ({','.join('?' * len(others))})"]
        params2: list[object] = [*others]
        for one in tag_list:
            clauses.append("(' ' || d.tags || ' ') LIKE ?")
            params2.append(f"% {one} %")
        for column, value in (("agent", agent), ("session_id", session_id)):
            if value:
                clauses.append(f"d.{column} = ?")
                params2.append(value)
        if since is not None:
            clauses.append("d.created_at >= ?")
            params2.append(since)
        if until is not None:
            clauses.append("d.created_at < ?")
            params2.append(until)
        rows = _match(
            store,
            "SELECT d.*, bm25(search_docs_fts, 1.0, 0.7, 0.5) AS bm25 FROM search_docs_fts "
            "JOIN search_docs d ON d.seq = search_docs_fts.rowid "
            f"WHERE search_docs_fts MATCH ? AND {' AND '.join(clauses)} ORDER BY bm25 LIMIT ?",
            (match, *params2, candidates),
        )
        for row in rows:
            entry = _doc_dict(row, now)
            _score(entry, row["bm25"], entry.pop("_priority"))
            results.append(entry)

    # Stable: among equal scores the order SQLite gave (newest first) stands.
    results.sort(key=lambda e: (-e["score"], -e["relevance"]))
    results = results[:limit]
    if record_access and results:
        _record(store, results, now)
    return results


def _match(store: Store, sql: str, params: tuple[object, ...]) -> list[sqlite3.Row]:
    from memory_core.errors import UsageError

    try:
        return store.query(sql, params)
    except sqlite3.OperationalError as exc:
        # Only a query FTS5 cannot parse gets here (words are quoted, so this is rare).
        raise UsageError(f"cannot search for that text: {exc}") from None


def _score(entry: dict[str, Any], bm25: float, priority: float) -> None:
    # FTS5's bm25() is "lower is better" and negative; flip it so bigger means more relevant.
    relevance = max(0.0, -float(bm25))
    entry["relevance"] = round(relevance, 6)
    entry["score"] = relevance * priority


def _doc_dict(row: sqlite3.Row, now: float) -> dict[str, Any]:
    kind = row["kind"]
    value = decay.priority(
        kind=kind,
        base=1.0,
        created_at=row["created_at"],
        last_accessed=row["last_accessed"],
        access_count=row["access_count"],
        now=now,
        resolved=bool(row["resolved"]),
    )
    title = row["title"] or row["body"][:80]
    return {
        "id": row["ref_id"],
        "kind": kind,
        "label": title,
        "content": row["body"],
        "tags": row["tags"].split() if row["tags"] else [],
        "created_at": clock.iso(row["created_at"]),
        "last_accessed": clock.iso(row["last_accessed"]),
        "access_count": row["access_count"],
        "priority": round(value, 4),
        "_priority": value,
        "tier": decay.tier(value),
        "agent": row["agent"],
        "session_id": row["session_id"],
    }


def _record(store: Store, results: list[dict[str, Any]], now: float) -> None:
    memory_ids = [r["id"] for r in results if r["kind"] == "memory"]
    docs = [(r["kind"], r["id"]) for r in results if r["kind"] != "memory"]
    with store.transaction() as db:
        record_accesses(db, memory_ids, now)
        db.executemany(
            "UPDATE search_docs SET access_count = access_count + 1, last_accessed = ? "
            "WHERE kind = ? AND ref_id = ?",
            [(now, kind, ref) for kind, ref in docs],
        )
