"""The gotchas relevant to a task, ranked and formatted as Markdown for an agent's prompt.

Ranking adds up evidence: words of the task found in a gotcha's title, description, workaround
or trigger; its category named in the task; a task file matching its related-file globs or
anchors. Severity and confirmation break ties, so a critical confirmed gotcha outranks a low
candidate with the same evidence. Gotchas with no evidence at all are left out.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from memory_core.gotchas import rank_index, records
from memory_core.gotchas.normalize import (
    SEVERITIES,
    SEVERITY_RANK,
    infer_category,
    normalize,
    words,
)
from memory_core.gotchas.records import Gotcha
from memory_core.store import Store
from memory_core.text import STOPWORDS
from memory_core.verify import Check, gotcha_checks, mark

# A task says what to do ("fix the login", "add a column"); those verbs do not say what about.
_TASK_STOPWORDS = STOPWORDS | {"add", "fix", "make", "use"}


def _team_evidence(
    gotcha: Gotcha, task_words: set[str], task_trigger: str, files: Sequence[str]
) -> rank_index.Evidence:
    """What a team file's gotcha (not in the store, so not indexed) shares with the task."""
    text = rank_index.entry(
        gotcha.title, gotcha.description, gotcha.workaround, gotcha.error_pattern, "[]"
    )
    found = rank_index.Evidence()
    found.shared = len(task_words & text.words)
    found.quoted = bool(
        task_trigger
        and text.trigger
        and (text.trigger in task_trigger or task_trigger in text.trigger)
    )
    found.filed = any(
        any(rank_index.glob_matches(glob, path) for glob in gotcha.related_files)
        or any(anchor.path == path for anchor in gotcha.anchors)
        for path in files
    )
    return found


def rank_for_task(
    store: Store, task: str, files: Sequence[str] = (), limit: int = 5
) -> list[tuple[float, Gotcha]]:
    """The `limit` gotchas with the most evidence for `task` (and the files it is about), with
    their scores, best first. The stored gotchas are found through their index
    (`rank_index`): only those sharing a word, the quoted error, a file or the category with
    the task are read, whatever the number of gotchas."""
    task_words = words(task) - _TASK_STOPWORDS
    task_category = infer_category(task)
    task_trigger = normalize(task).lower() if task.strip() else ""
    normalized_files = [f.replace("\\", "/").lstrip("./") for f in files]
    anchored: set[str] = set()
    if normalized_files:
        marks = ",".join("?" * len(normalized_files))
        anchored = {
            str(row[0])
            for row in store.query(
                f"SELECT DISTINCT gotcha_id FROM gotcha_anchors WHERE path IN ({marks})",
                tuple(normalized_files),
            )
        }

    def score_of(category: str, found: rank_index.Evidence, severity: str, status: str) -> float:
        score = 2.0 * found.shared
        if category in task_words or (task_category != "general" and category == task_category):
            score += 3.0
        # The task quotes the gotcha's error ("fix: TypeError: can't compare ..."): the strongest sign.
        if found.quoted:
            score += 8.0
        if normalized_files and found.filed:
            score += 5.0
        if score <= 0:
            return 0.0  # no evidence at all: left out, whatever its severity
        score += (3 - min(SEVERITY_RANK.get(severity, len(SEVERITIES)), 3)) * 0.5
        return score + (0.5 if status == "confirmed" else 0.0)

    # (score, severity rank, id) of every gotcha with evidence; its Gotcha if from the team file.
    scored: list[tuple[float, int, str, Gotcha | None]] = []
    categories = task_words | ({task_category} if task_category != "general" else set())
    untrusted = rank_index.untrusted(store)
    if untrusted == set():
        # The index is current: SQLite scores the gotchas sharing something with the task and
        # returns the best `limit` (a prompt's common word may be in thousands of gotchas).
        filed = anchored | rank_index.filed(store, normalized_files)
        best = rank_index.best_stored(
            store, task_words, categories, task_trigger, filed, max(0, limit)
        )
        scored.extend((score, rank, gotcha_id, None) for score, rank, gotcha_id in best)
    else:
        # Gotchas changed since they were indexed, and the store cannot be written now: those
        # are scored from their text (all of them when the index is another version's).
        evidence = rank_index.evidence(
            store, task_words, task_trigger, normalized_files, anchored, untrusted
        )
        candidates = set(evidence) | set(rank_index.by_category(store, categories))
        nothing = rank_index.Evidence()
        for row in rank_index.rows_of(store, candidates):
            gotcha_id, severity = str(row["id"]), str(row["severity"])
            found = evidence.get(gotcha_id, nothing)
            score = score_of(str(row["category"]), found, severity, str(row["status"]))
            if score > 0:
                rank = SEVERITY_RANK.get(severity, len(SEVERITIES))
                scored.append((score, rank, gotcha_id, None))
    for gotcha in records.team_only(store):
        found = _team_evidence(gotcha, task_words, task_trigger, normalized_files)
        score = score_of(gotcha.category, found, gotcha.severity, gotcha.status)
        if score > 0:
            scored.append((score, gotcha.severity_rank, gotcha.id, gotcha))
    scored.sort(key=lambda item: (-item[0], item[1], item[2]))
    chosen = scored[: max(0, limit)]
    stored = records.by_ids(
        store, [gotcha_id for _s, _r, gotcha_id, team in chosen if team is None]
    )
    return [
        (score, team if team is not None else stored[gotcha_id])
        for score, _rank, gotcha_id, team in chosen
    ]


def format_markdown(gotchas: Sequence[Gotcha], checks: Mapping[str, Check] | None = None) -> str:
    """The gotchas as Markdown; one whose anchored code changed or is gone is marked
    `[needs checking: ...]` (`checks`, from `verify.gotcha_checks`)."""
    if not gotchas:
        return ""
    lines = ["## Known gotchas", ""]
    for gotcha in gotchas:
        status = " (unconfirmed)" if gotcha.status == "candidate" else ""
        title = f"- **[{gotcha.severity}] {gotcha.title}**{status} `{gotcha.id}`"
        lines.append(mark(title, (checks or {}).get(gotcha.id)))
        if gotcha.description:
            lines.append(f"  {gotcha.description}")
        if gotcha.workaround:
            lines.append(f"  Workaround: {gotcha.workaround}")
        files = gotcha.related_files or sorted({a.path for a in gotcha.anchors})
        if files:
            lines.append(f"  Files: {', '.join(files)}")
    return "\n".join(lines) + "\n"


def context_for_task(store: Store, task: str, files: Sequence[str] = (), limit: int = 5) -> str:
    """Markdown listing the top `limit` gotchas for `task` (empty when none is relevant),
    each checked against the code as it is now (`verify`)."""
    chosen = [gotcha for _score, gotcha in rank_for_task(store, task, files, limit)]
    anchored = [gotcha.id for gotcha in chosen if gotcha.anchors]
    return format_markdown(chosen, gotcha_checks(store, anchored))
