"""The gotchas relevant to a task, ranked and formatted as Markdown for an agent's prompt.

Ranking adds up evidence: words of the task found in a gotcha's title, description, workaround
or trigger; its category named in the task; a task file matching its related-file globs or
anchors. Severity and confirmation break ties, so a critical confirmed gotcha outranks a low
candidate with the same evidence. Gotchas with no evidence at all are left out.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from fnmatch import fnmatch
from typing import Any

from memory_core.gotchas import records
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


def _file_matches(gotcha: Gotcha, path: str) -> bool:
    return any(
        fnmatch(path, glob) or fnmatch(path, f"**/{glob}") for glob in gotcha.related_files
    ) or any(anchor.path == path for anchor in gotcha.anchors)


def _glob_matches(globs: Sequence[str], path: str) -> bool:
    return any(fnmatch(path, glob) or fnmatch(path, f"**/{glob}") for glob in globs)


# What ranking reads of each open gotcha: every hook with a task or a file ranks them all, so
# the rest of a gotcha (its samples, provenance, anchors' texts) is read for the chosen ones only.
_RANKED_COLUMNS = (
    "id, title, description, workaround, error_pattern, category, severity, status, related_files"
)


def rank_for_task(
    store: Store, task: str, files: Sequence[str] = (), limit: int = 5
) -> list[tuple[float, Gotcha]]:
    task_words = words(task) - _TASK_STOPWORDS
    task_category = infer_category(task)
    task_normalized = normalize(task).lower() if task.strip() else ""
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

    def score_of(
        title: str,
        description: str,
        workaround: str,
        error_pattern: str | None,
        category: str,
        files_match: Callable[[], bool],
    ) -> float:
        score = 0.0
        # Each kind of evidence is looked for only when the task can give it: a file about to
        # change (PreToolUse) brings no words, a prompt no files. This runs for every open
        # gotcha on every hook that ranks them.
        if task_words:
            text_words = words(" ".join([title, description, workaround, error_pattern or ""]))
            score += 2.0 * len(task_words & text_words)
        if category in task_words or (task_category != "general" and category == task_category):
            score += 3.0
        # The task quotes the gotcha's error ("fix: TypeError: can't compare ..."): the strongest sign.
        if task_normalized and error_pattern:
            trigger = normalize(error_pattern).lower()
            if trigger and (trigger in task_normalized or task_normalized in trigger):
                score += 8.0
        if normalized_files and files_match():
            score += 5.0
        return score

    def finish(score: float, severity: str, status: str) -> float:
        score += (3 - min(SEVERITY_RANK.get(severity, len(SEVERITIES)), 3)) * 0.5
        return score + (0.5 if status == "confirmed" else 0.0)

    # (score, severity rank, id) of every gotcha with evidence; its Gotcha if from the team file.
    scored: list[tuple[float, int, str, Gotcha | None]] = []
    for row in store.query(f"SELECT {_RANKED_COLUMNS} FROM gotchas WHERE status != 'resolved'"):
        gotcha_id = str(row["id"])

        def row_files(row: Any = row, gotcha_id: str = gotcha_id) -> bool:
            globs = json.loads(row["related_files"])
            return gotcha_id in anchored or any(_glob_matches(globs, p) for p in normalized_files)

        score = score_of(
            row["title"],
            row["description"],
            row["workaround"],
            row["error_pattern"],
            row["category"],
            row_files,
        )
        if score > 0:
            severity = str(row["severity"])
            rank = SEVERITY_RANK.get(severity, len(SEVERITIES))
            scored.append((finish(score, severity, str(row["status"])), rank, gotcha_id, None))
    for gotcha in records.team_only(store):

        def team_files(gotcha: Gotcha = gotcha) -> bool:
            return any(_file_matches(gotcha, p) for p in normalized_files)

        score = score_of(
            gotcha.title,
            gotcha.description,
            gotcha.workaround,
            gotcha.error_pattern,
            gotcha.category,
            team_files,
        )
        if score > 0:
            scored.append(
                (
                    finish(score, gotcha.severity, gotcha.status),
                    gotcha.severity_rank,
                    gotcha.id,
                    gotcha,
                )
            )
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
