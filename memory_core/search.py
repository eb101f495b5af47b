"""Search over memories, gotchas, session summaries and digests.

SQLite FTS5 finds and scores the text (BM25); the score is multiplied by the entry's current
priority (`memory_core.decay`), so of two entries equally relevant the fresher, more used one
comes first. Returned entries count as accessed, which raises their priority next time.

Speed (p95 under 5 ms over 100,000 memories): bm25() costs about 2 microseconds per scored
entry and reads the whole match list of every word it weighs, so a search never scores a
word that matches more than CANDIDATE_CAP entries when the query has a rarer one (such a
word carries little BM25 weight anyway), scores at most SCORED_CAP matches (newest first),
and gives the priority formula only to the best `CANDIDATES_PER_RESULT x limit` by BM25. A
query of nothing but common words is answered by priority among the entries holding all of
them. An entry much less relevant than the cut cannot climb past it by priority alone: the
intended trade (relevance first, priority to order the relevant).
"""

from __future__ import annotations

import re
import sqlite3
from collections.abc import Iterable, Sequence
from typing import Any

from memory_core import clock, decay, search_index
from memory_core.memory import filter_sql, record_accesses, to_dict
from memory_core.store import Store
from memory_core.text import STOPWORDS

ALL_KINDS = ("memory", *search_index.KINDS)
CANDIDATES_PER_RESULT = 8
MIN_CANDIDATES = 64
# A word matching more entries than this is "common" (see `_memory_matches`); bm25() costs
# about 2 microseconds per scored entry, so this bounds a search to a few milliseconds.
CANDIDATE_CAP = 500
SCORED_CAP = 1500
_PRIORITY_SQL = decay.sql_priority("m", "clock.now")

_WORD = re.compile(r"\w+", re.UNICODE)


def fts_terms(text: str, *, prefix: bool = False) -> list[str]:
    """The words of free text as FTS5 terms (quoted, so operators and punctuation are literal).

    With `prefix` the last word also matches longer words (typing "auth" finds "authn").
    """
    words = [w.lower() for w in _WORD.findall(text)]
    meaningful = [w for w in words if w not in STOPWORDS] or words
    terms = [f'"{w}"' for w in dict.fromkeys(meaningful)][:16]
    if prefix and terms:
        terms[-1] += "*"
    return terms


def _memory_matches(
    store: Store, terms: list[str], where: str, params: list[object], limit: int, now: float
) -> list[sqlite3.Row]:
    """The best `limit` memories for `terms`, ranked inside SQLite by relevance x priority.

    Why words are sorted into rare and common first: FTS5's bm25() reads the whole list of
    matches of every word in the query to weigh it (its document frequency), so one very
    common word costs a scan of most of the index on every search. A word matching more than
    CANDIDATE_CAP entries carries little BM25 weight anyway (none past half the entries), so:

    * some words are rare: entries holding any rare word, scored by BM25 over the rare words
      (entries holding more of them, more often, in shorter text, first);
    * every word is common: entries holding all of them, newest CANDIDATE_CAP first, ordered
      by priority alone (relevance is reported as 1.0: the words cannot tell them apart).
    """
    rare = [t for t in terms if _match_count(store, t) <= CANDIDATE_CAP]
    if rare:
        return _ranked(store, " OR ".join(rare), where, params, limit, now)
    return _by_priority(store, " AND ".join(terms), where, params, limit, now)


def _ranked(
    store: Store, match: str, where: str, params: list[object], limit: int, now: float
) -> list[sqlite3.Row]:
    # FTS5 scores the matches (the newest SCORED_CAP of them: each word is rare, so only a
    # query of several rare words gets near it), the filters and a BM25 cut keep the best few
    # candidates, and only those get the priority formula and the final order.
    candidates = max(MIN_CANDIDATES, limit * CANDIDATES_PER_RESULT)
    filtered = where != "1"
    rows: list[sqlite3.Row] = []
    # Filters apply after the cap; when they leave too few, every match is scored.
    for capped in (True, False) if filtered else (True,):
        inner = (
            "SELECT rowid, bm25(memories_fts, 1.0, 0.5) AS b FROM memories_fts"
            " WHERE memories_fts MATCH ?"
        )
        if capped:
            inner += f" ORDER BY rowid DESC LIMIT {SCORED_CAP}"
        if filtered:
            best = (
                f"SELECT f.rowid, f.b FROM ({inner}) f JOIN memories m ON m.seq = f.rowid"
                f" WHERE {where} ORDER BY f.b LIMIT ?"
            )
        else:
            best = f"SELECT f.rowid, f.b FROM ({inner}) f ORDER BY f.b LIMIT ?"
        rows = _match(
            store,
            f"SELECT m.*, -t.b AS relevance, -t.b * {_PRIORITY_SQL} AS score FROM ({best}) t"
            " JOIN memories m ON m.seq = t.rowid JOIN (SELECT ? AS now) clock"
            " ORDER BY score DESC, m.seq DESC LIMIT ?",
            (match, *(params if filtered else ()), candidates, now, limit),
        )
        if len(rows) >= limit or _match_count(store, match, SCORED_CAP) <= SCORED_CAP:
            break
    return rows


def _by_priority(
    store: Store, match: str, where: str, params: list[object], limit: int, now: float
) -> list[sqlite3.Row]:
    # No bm25() here: FTS5 walks the matches newest first and stops at the cap. When the
    # filters leave fewer than `limit` of those, every match is considered.
    for capped in (True, False):
        inner = "SELECT rowid FROM memories_fts WHERE memories_fts MATCH ?"
        if capped:
            inner += f" ORDER BY rowid DESC LIMIT {CANDIDATE_CAP}"
        rows = _match(
            store,
            f"SELECT m.*, 1.0 AS relevance, {_PRIORITY_SQL} AS score FROM ({inner}) f"
            f" JOIN memories m ON m.seq = f.rowid JOIN (SELECT ? AS now) clock"
            f" WHERE {where} ORDER BY score DESC, m.seq DESC LIMIT ?",
            (match, now, *params, limit),
        )
        if len(rows) >= limit or not capped or _match_count(store, match) <= CANDIDATE_CAP:
            return rows
    return rows


def _match_count(store: Store, match: str, cap: int = CANDIDATE_CAP) -> int:
    """How many entries match, counted up to `cap` + 1 (a bounded scan, no scoring)."""
    row = store.query_one(
        "SELECT count(*) FROM (SELECT 1 FROM memories_fts WHERE memories_fts MATCH ? LIMIT ?)",
        (match, cap + 1),
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
    min_priority: float | None = None,
    include_decayed: bool = True,
    offset: int = 0,
    record_access: bool = True,
    prefix: bool = False,
    now: float | None = None,
) -> list[dict[str, Any]]:
    """The entries best matching `query`, best first, each with `score` and `relevance`.

    Filters: `types` (memory types; implies memories only), `tags`, `agent`, `session_id`,
    `since`/`until` (Unix seconds, on creation time), `kinds` (memory, gotcha, session, digest).
    Seed 003's query options: `min_priority` (current priority at least this), `include_decayed`
    (False leaves out entries below 0.3, the cold tier), `offset` (skip that many results: the
    next page). The front ends leave decayed entries out unless asked; library callers see all.
    """
    from memory_core.errors import UsageError

    now = clock.now() if now is None else now
    if offset < 0:
        raise UsageError(f"offset must be 0 or more, got {offset}")
    threshold = min_priority
    if threshold is not None and not 0.0 <= float(threshold) <= 1.0:
        raise UsageError(f"minimum priority must be between 0 and 1, got {threshold!r}")
    if not include_decayed:
        threshold = max(decay.COLD, float(threshold or 0.0))
    page = max(1, min(int(limit), 500))
    limit = min(500, page + int(offset))
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
        if threshold:
            # The priority at `now` as a literal: this statement is built per call, so the
            # cached statements of unfiltered searches stay as they are.
            where += f" AND {decay.sql_priority('m', repr(float(now)))} >= ?"
            params.append(float(threshold))
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
            priority = entry.pop("_priority")
            if threshold and priority < threshold:
                continue
            _score(entry, row["bm25"], priority)
            results.append(entry)

    # Stable: among equal scores the order SQLite gave (newest first) stands.
    results.sort(key=lambda e: (-e["score"], -e["relevance"]))
    results = results[int(offset) : limit]
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
