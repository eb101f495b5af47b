"""Ranking the gotchas for a task (`gotchas.context.rank_for_task`) as the gotchas grow.

Every prompt (UserPromptSubmit, BeforeAgent), every file about to change (PreToolUse) and every
session start ranks the open gotchas; this measures one ranking in process, its CPU time (the
least of 5), at stores of ENGRAM_BENCH_RANK_GOTCHAS gotchas (default 100,1000,10000): varied
titles over ten topics (so a prompt's word is in a tenth to a quarter of them), half with an
error pattern, each with a literal glob, one in fifty with a wildcard glob. Three tasks: a
prompt, a file about to change, and a session start's task (its recent files). The ranking's
cost should not follow the number of gotchas; what still does is the comparison of a prompt
with every gotcha's error (in SQL, about a microsecond a gotcha).

`python -m tests.bench gotcha_rank`.
"""

from __future__ import annotations

import os
import random
import tempfile
import time
from pathlib import Path

from tests.bench.harness import Figure

SIZES = [int(n) for n in os.environ.get("ENGRAM_BENCH_RANK_GOTCHAS", "100,1000,10000").split(",")]
TOPICS = ["cookie", "pool", "migration", "timeout", "import", "cache", "login", "upload", "tenant"]
TASKS = (
    ("a prompt", "The login test fails with a 500: fix app.py and run the tests.", ()),
    ("a file about to change", "", ("src/module_7.py",)),
    (
        "a session start",
        "continue the work on app.py src/module_7.py",
        ("app.py", "src/module_7.py"),
    ),
)


def _fill(root: Path, count: int) -> None:
    from memory_core.gotchas import records
    from memory_core.store import Store

    pick = random.Random(32)
    with Store.init(root) as store, records.exports_deferred(store):
        for index in range(count):
            topic = pick.choice(TOPICS)
            records.add(
                store,
                f"The {topic} breaks when {pick.choice(TOPICS)} runs (variant {index})",
                description=f"Seen with the {pick.choice(TOPICS)} under load {index}.",
                workaround=f"Restart the {topic} worker {index}.",
                related_files=[f"src/module_{index % 500}.py"]
                + (["*.cfg"] if index % 50 == 0 else []),
                error_pattern=(
                    f"TimeoutError: {topic} {index} took too long" if index % 2 == 0 else None
                ),
            )


def run() -> list[Figure]:
    from memory_core.gotchas.context import rank_for_task
    from memory_core.store import Store

    figures: list[Figure] = []
    for count in SIZES:
        with tempfile.TemporaryDirectory(prefix="engram-bench-rank-") as tmp:
            built = time.perf_counter()
            _fill(Path(tmp), count)
            built = time.perf_counter() - built
            with Store.open(Path(tmp)) as store:
                rank_for_task(store, "warm up")
                for label, task, files in TASKS:
                    runs = []
                    for _ in range(5):
                        start = time.process_time()
                        rank_for_task(store, task, files, 5)
                        runs.append((time.process_time() - start) * 1000)
                    figures.append(
                        Figure(
                            f"gotcha ranking for {label}, {count:,} gotchas (CPU, least of 5)",
                            "flat in the number of gotchas",
                            min(runs),
                            None,
                            note=f"store built in {built:.0f} s; load average "
                            f"{os.getloadavg()[0]:.1f}",
                        )
                    )
    return figures


if __name__ == "__main__":
    for figure in run():
        print(" | ".join(figure.row()), figure.note)
