"""The gotchas relevant to a task, ranked and formatted as Markdown for an agent's prompt.

Ranking adds up evidence: words of the task found in a gotcha's title, description, workaround
or trigger; its category named in the task; a task file matching its related-file globs or
anchors. Severity and confirmation break ties, so a critical confirmed gotcha outranks a low
candidate with the same evidence. Gotchas with no evidence at all are left out.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from fnmatch import fnmatch

from memory_core.gotchas.normalize import infer_category, normalize, words
from memory_core.gotchas.records import Gotcha, list_gotchas
from memory_core.store import Store
from memory_core.text import STOPWORDS
from memory_core.verify import Check, gotcha_checks, mark

# A task says what to do ("fix the login", "add a column"); those verbs do not say what about.
_TASK_STOPWORDS = STOPWORDS | {"add", "fix", "make", "use"}


def _file_matches(gotcha: Gotcha, path: str) -> bool:
    return any(
        fnmatch(path, glob) or fnmatch(path, f"**/{glob}") for glob in gotcha.related_files
    ) or any(anchor.path == path for anchor in gotcha.anchors)


def rank_for_task(
    store: Store, task: str, files: Sequence[str] = (), limit: int = 5
) -> list[tuple[float, Gotcha]]:
    task_words = words(task) - _TASK_STOPWORDS
    task_category = infer_category(task)
    task_normalized = normalize(task).lower() if task.strip() else ""
    normalized_files = [f.replace("\\", "/").lstrip("./") for f in files]
    scored: list[tuple[float, Gotcha]] = []
    for gotcha in list_gotchas(store):
        score = 0.0
        # Each kind of evidence is looked for only when the task can give it: a file about to
        # change (PreToolUse) brings no words, a prompt no files. That work is done for every
        # open gotcha on every hook, so it is what grows with the store.
        if task_words:
            text_words = words(
                " ".join(
                    [
                        gotcha.title,
                        gotcha.description,
                        gotcha.workaround,
                        gotcha.error_pattern or "",
                    ]
                )
            )
            score += 2.0 * len(task_words & text_words)
        if gotcha.category in task_words or (
            task_category != "general" and gotcha.category == task_category
        ):
            score += 3.0
        # The task quotes the gotcha's error ("fix: TypeError: can't compare ..."): the strongest sign.
        if task_normalized and gotcha.error_pattern:
            trigger = normalize(gotcha.error_pattern).lower()
            if trigger and (trigger in task_normalized or task_normalized in trigger):
                score += 8.0
        if normalized_files and any(_file_matches(gotcha, path) for path in normalized_files):
            score += 5.0
        if score <= 0:
            continue
        score += (3 - min(gotcha.severity_rank, 3)) * 0.5
        score += 0.5 if gotcha.status == "confirmed" else 0.0
        scored.append((score, gotcha))
    scored.sort(key=lambda item: (-item[0], item[1].severity_rank, item[1].id))
    return scored[: max(0, limit)]


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
