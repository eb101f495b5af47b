"""What ranking the gotchas for a task reads of each one, kept in the store (migration 0017).

`context.rank_for_task` runs on every prompt, every session start and every file about to
change. It scores a gotcha by the task's words found in its text, its category named in the
task, the task quoting its error, and a task file matching its globs or anchors. Computing that
from every open gotcha's text (its words, its error's normal form) costs the same at every hook
and grows with the gotchas; here it is computed once per change of a gotcha and kept:

- `gotcha_words`: the gotcha's words, so the task's words find the gotchas sharing them, and
  how many each shares, by key;
- `gotcha_triggers`: its error pattern's normal form, lower-cased, matched against the task's
  in SQL (a substring either way);
- `gotcha_globs`: its related-file globs; one without wildcards names a file at the root or in
  any folder (`fnmatch(path, glob)` or `fnmatch(path, "**/" + glob)`), so a task file finds it
  by key; the others are matched one by one.

SQL cannot compute words or normal forms, so the store's triggers only mark a gotcha whose
text changed as stale (`gotcha_rank_stale`); `refresh` indexes the stale ones again. Every
gotcha write calls it (`records.bump_revision`), and so does a ranking that finds stale
gotchas (the first one after the migration); a ranking that cannot write scores the stale
gotchas from their text (`entry`), so it never trusts rows that are out of date.

`VERSION` names what the rows hold: change it whenever `normalize.words` or
`normalize.normalize` would give another result for the same text, and every gotcha is
indexed again at the next refresh.
"""

from __future__ import annotations

import json
import os
import sqlite3
from collections.abc import Iterable, Sequence
from fnmatch import fnmatch

from memory_core.gotchas.normalize import normalize, words
from memory_core.store import Store

TYPE_CHECKING = False  # `typing` costs a cold hook a third of Python's start
if TYPE_CHECKING:
    from typing import Any

VERSION = "1"
VERSION_KEY = "gotchas.rank_index"
_WILDCARDS = frozenset("*?[")
# What `fnmatch` compares: on Windows both sides are lower-cased and "/" becomes "\\".
_SEPARATOR = os.path.normcase("/")


class Entry:
    """What ranking needs of one gotcha's text."""

    __slots__ = ("globs", "trigger", "words")

    def __init__(self, words: frozenset[str], trigger: str, globs: tuple[str, ...]) -> None:
        self.words = words
        self.trigger = trigger
        self.globs = globs


def entry(
    title: str,
    description: str,
    workaround: str,
    error_pattern: str | None,
    related_files: str,
) -> Entry:
    """A gotcha's words, its error's normal form (lower-cased; "" without one) and its globs
    (`related_files` as stored: a JSON list)."""
    text_words = words(" ".join([title, description, workaround, error_pattern or ""]))
    trigger = normalize(error_pattern).lower() if error_pattern else ""
    globs = tuple(glob for glob in json.loads(related_files) if isinstance(glob, str))
    return Entry(frozenset(text_words), trigger, globs)


def is_wild(glob: str) -> bool:
    return not _WILDCARDS.isdisjoint(glob)


def glob_matches(glob: str, path: str) -> bool:
    """Whether a related-file glob names `path` (at the root, or in any folder)."""
    return fnmatch(path, glob) or fnmatch(path, f"**/{glob}")


def literal_keys(path: str) -> list[str]:
    """The literal globs that name `path`: the path itself and each of its tails after a
    separator (`glob_matches` of a glob without wildcards, by key)."""
    path = os.path.normcase(path)
    keys = [path]
    start = path.find(_SEPARATOR)
    while start >= 0:
        keys.append(path[start + len(_SEPARATOR) :])
        start = path.find(_SEPARATOR, start + 1)
    return keys


# -- keeping it ------------------------------------------------------------------------------


def _write(db: sqlite3.Connection, gotcha_id: str, found: Entry) -> None:
    db.execute("DELETE FROM gotcha_words WHERE gotcha_id = ?", (gotcha_id,))
    db.execute("DELETE FROM gotcha_triggers WHERE gotcha_id = ?", (gotcha_id,))
    db.execute("DELETE FROM gotcha_globs WHERE gotcha_id = ?", (gotcha_id,))
    db.executemany(
        "INSERT INTO gotcha_words (word, gotcha_id) VALUES (?, ?)",
        [(word, gotcha_id) for word in sorted(found.words)],
    )
    if found.trigger:
        db.execute(
            "INSERT INTO gotcha_triggers (gotcha_id, trigger) VALUES (?, ?)",
            (gotcha_id, found.trigger),
        )
    db.executemany(
        "INSERT OR IGNORE INTO gotcha_globs (glob, gotcha_id, wild) VALUES (?, ?, ?)",
        [
            (glob, gotcha_id, 1) if is_wild(glob) else (os.path.normcase(glob), gotcha_id, 0)
            for glob in found.globs
        ],
    )


def _current(db: sqlite3.Connection) -> bool:
    row = db.execute("SELECT value FROM store_meta WHERE key = ?", (VERSION_KEY,)).fetchone()
    return row is not None and row[0] == VERSION


def refresh(db: sqlite3.Connection) -> int:
    """Index the stale gotchas again, inside the caller's write transaction; every gotcha when
    the rows were written by another version. Returns how many were indexed."""
    if not _current(db):
        db.execute("DELETE FROM gotcha_words")
        db.execute("DELETE FROM gotcha_triggers")
        db.execute("DELETE FROM gotcha_globs")
        db.execute("INSERT OR IGNORE INTO gotcha_rank_stale (gotcha_id) SELECT id FROM gotchas")
        db.execute(
            "INSERT INTO store_meta (key, value) VALUES (?, ?) "
            "ON CONFLICT(key) DO UPDATE SET value = excluded.value",
            (VERSION_KEY, VERSION),
        )
    rows = db.execute(
        "SELECT g.id, g.title, g.description, g.workaround, g.error_pattern, g.related_files "
        "FROM gotcha_rank_stale s JOIN gotchas g ON g.id = s.gotcha_id"
    ).fetchall()
    for row in rows:
        _write(db, row[0], entry(row[1], row[2], row[3], row[4], row[5]))
    db.execute("DELETE FROM gotcha_rank_stale")
    return len(rows)


def untrusted(store: Store) -> set[str] | None:
    """The gotchas whose rows ranking must not trust: none once `refresh` ran (this indexes
    the stale ones when it can write); the stale ones when it cannot; None (all of them) when
    the rows are another version's and cannot be rebuilt now."""
    row = store.query_one(
        "SELECT (SELECT value FROM store_meta WHERE key = ?) AS version, "
        "EXISTS (SELECT 1 FROM gotcha_rank_stale) AS stale",
        (VERSION_KEY,),
    )
    if row is not None and row["version"] == VERSION and not row["stale"]:
        return set()
    try:
        with store.transaction() as db:
            refresh(db)
        return set()
    except Exception as exc:  # a read-only store, another writer holding it, a full disk
        from memory_core import log

        log.write(store.root, "warning", "cannot index the gotchas for ranking", exc=exc)
    if row is None or row["version"] != VERSION:
        return None
    return {str(r[0]) for r in store.query("SELECT gotcha_id FROM gotcha_rank_stale")}


# -- reading it ------------------------------------------------------------------------------


class Evidence:
    """What one stored gotcha shares with a task: how many words, whether the task quotes its
    error, whether a task file matches it (its category is read with its row)."""

    __slots__ = ("filed", "quoted", "shared")

    def __init__(self) -> None:
        self.shared = 0
        self.quoted = False
        self.filed = False


def _json(values: Iterable[str]) -> str:
    return json.dumps(sorted(values))


def evidence(
    store: Store,
    task_words: Iterable[str],
    task_trigger: str,
    files: Sequence[str],
    anchored: Iterable[str],
    untrusted_ids: set[str] | None,
) -> dict[str, Evidence]:
    """Each stored gotcha sharing a word, a quoted error or a file with the task, with what it
    shares; the untrusted ones (`untrusted`) computed from their text. Gotchas that share only
    their category with the task are found by `by_category`."""
    found: dict[str, Evidence] = {}
    task_words = set(task_words)
    anchored = set(anchored)

    def of(gotcha_id: str) -> Evidence:
        item = found.get(gotcha_id)
        if item is None:
            item = found[gotcha_id] = Evidence()
        return item

    for gotcha_id in anchored:
        of(gotcha_id).filed = True
    if untrusted_ids is None:
        rows = store.query(
            "SELECT id, title, description, workaround, error_pattern, related_files FROM gotchas"
        )
    else:
        if task_words:
            for row in store.query(
                "SELECT gotcha_id, count(*) FROM gotcha_words "
                "WHERE word IN (SELECT value FROM json_each(?)) GROUP BY gotcha_id",
                (_json(task_words),),
            ):
                of(str(row[0])).shared = int(row[1])
        if task_trigger:
            for row in store.query(
                "SELECT gotcha_id FROM gotcha_triggers "
                "WHERE instr(?1, trigger) > 0 OR instr(trigger, ?1) > 0",
                (task_trigger,),
            ):
                of(str(row[0])).quoted = True
        for gotcha_id in filed(store, files):
            of(gotcha_id).filed = True
        if not untrusted_ids:
            return found
        marks = ",".join("?" * len(untrusted_ids))
        rows = store.query(
            "SELECT id, title, description, workaround, error_pattern, related_files "
            f"FROM gotchas WHERE id IN ({marks})",
            tuple(sorted(untrusted_ids)),
        )
    for row in rows:
        gotcha_id = str(row["id"])
        text = entry(
            row["title"],
            row["description"],
            row["workaround"],
            row["error_pattern"],
            row["related_files"],
        )
        item = of(gotcha_id)
        item.shared = len(task_words & text.words)
        item.quoted = bool(
            task_trigger
            and text.trigger
            and (text.trigger in task_trigger or task_trigger in text.trigger)
        )
        item.filed = gotcha_id in anchored or any(
            glob_matches(glob, path) for glob in text.globs for path in files
        )
    return found


def filed(store: Store, files: Sequence[str]) -> set[str]:
    """The stored gotchas whose related-file globs name one of `files` (by key for a glob
    without wildcards, one by one for the others)."""
    if not files:
        return set()
    keys = {key for path in files for key in literal_keys(path)}
    found = {
        str(row[0])
        for row in store.query(
            "SELECT gotcha_id FROM gotcha_globs "
            "WHERE wild = 0 AND glob IN (SELECT value FROM json_each(?))",
            (_json(keys),),
        )
    }
    for row in store.query("SELECT gotcha_id, glob FROM gotcha_globs WHERE wild = 1"):
        if any(glob_matches(str(row[1]), path) for path in files):
            found.add(str(row[0]))
    return found


# The score of `context.rank_for_task` in SQL, over the gotchas that share something with the
# task: a word (2 each), the category (3), the quoted error (8), a file (5); then 0.5 a step of
# severity above low and 0.5 when confirmed. Each sum is of halves, exact in floating point, so
# the order is the one Python computes.
_SEVERITY_RANK_SQL = (
    "CASE g.severity WHEN 'critical' THEN 0 WHEN 'high' THEN 1 WHEN 'medium' THEN 2 "
    "WHEN 'low' THEN 3 ELSE 4 END"
)
_SCORED = f"""
WITH shared(id, n) AS (
    SELECT gotcha_id, count(*) FROM gotcha_words
    WHERE word IN (SELECT value FROM json_each(:words)) GROUP BY gotcha_id),
quoted(id) AS (
    SELECT gotcha_id FROM gotcha_triggers
    WHERE :trigger != '' AND (instr(:trigger, trigger) > 0 OR instr(trigger, :trigger) > 0)),
filed(id) AS (SELECT value FROM json_each(:filed)),
categorized(id) AS (
    SELECT id FROM gotchas WHERE category IN (SELECT value FROM json_each(:categories))),
candidates(id) AS (
    SELECT id FROM shared UNION SELECT id FROM quoted UNION SELECT id FROM filed
    UNION SELECT id FROM categorized),
evidence(id, severity, status, rank, score) AS (
    SELECT g.id, g.severity, g.status, {_SEVERITY_RANK_SQL},
        2.0 * coalesce(s.n, 0)
        + (CASE WHEN g.category IN (SELECT value FROM json_each(:categories)) THEN 3.0 ELSE 0.0 END)
        + (CASE WHEN g.id IN (SELECT id FROM quoted) THEN 8.0 ELSE 0.0 END)
        + (CASE WHEN g.id IN (SELECT id FROM filed) THEN 5.0 ELSE 0.0 END)
    FROM candidates c JOIN gotchas g ON g.id = c.id LEFT JOIN shared s ON s.id = c.id
    WHERE g.status != 'resolved')
SELECT id, rank,
    score + (3 - min(rank, 3)) * 0.5 + (CASE status WHEN 'confirmed' THEN 0.5 ELSE 0.0 END)
    AS score
FROM evidence WHERE score > 0 ORDER BY score DESC, rank, id LIMIT :limit
"""


def best_stored(
    store: Store,
    task_words: Iterable[str],
    categories: Iterable[str],
    task_trigger: str,
    filed_ids: Iterable[str],
    limit: int,
) -> list[tuple[float, int, str]]:
    """(score, severity rank, id) of the `limit` stored gotchas with the most evidence for a
    task, best first, scored inside SQLite from the index (it must be current: `untrusted`).
    `categories`: the task's words and the category inferred from it (unless "general");
    `limit` 0 or more (SQLite reads a negative one as no limit)."""
    rows = store.query(
        _SCORED,
        {
            "words": _json(task_words),
            "categories": _json(categories),
            "trigger": task_trigger,
            "filed": _json(filed_ids),
            "limit": limit,
        },
    )
    return [(float(row["score"]), int(row["rank"]), str(row["id"])) for row in rows]


def by_category(store: Store, categories: Iterable[str]) -> list[str]:
    """The stored gotchas of any of `categories`."""
    wanted = set(categories)
    if not wanted:
        return []
    return [
        str(row[0])
        for row in store.query(
            "SELECT id FROM gotchas WHERE category IN (SELECT value FROM json_each(?))",
            (_json(wanted),),
        )
    ]


def rows_of(store: Store, ids: Iterable[str]) -> list[Any]:
    """(id, category, severity, status) of the open gotchas among `ids`."""
    wanted = set(ids)
    if not wanted:
        return []
    return store.query(
        "SELECT id, category, severity, status FROM gotchas "
        "WHERE id IN (SELECT value FROM json_each(?)) AND status != 'resolved'",
        (_json(wanted),),
    )
