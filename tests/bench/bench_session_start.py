"""A session start while earlier sessions wait to be settled, as a cold process and through the
resident server, against `python -c pass`.

A session start settles (at most 20 of) the earlier sessions that never reported their end and
have been silent for half an hour (Codex CLI sends no SessionEnd; any agent killed mid-session
sends none), and rewrites each settled session's vault note. `bench_hooks` measures this only
while its store still has such a backlog (its first runs); here every run starts from a fresh
copy of the same store, aged so that its sessions without an end are due: every measured
session start settles 20 sessions, as the first one after a day of Codex work does.

Each run: a fresh copy (not timed), the installed layout's `python -c pass` (the floor), then
`engram hook codex SessionStart`, cold and through the resident server in alternate order; a
pause after each hook lets a resident child finish what it does after its answer (the notes),
as the agent's own work would between two hooks.

`python -m tests.bench session_start`. The store: ENGRAM_BENCH_HOOK_LARGE=PATH (a folder whose
`project` a `bench_hooks` run kept, ENGRAM_BENCH_HOOK_KEEP) or ENGRAM_BENCH_HOOK_SESSIONS earlier
sessions built here (default 150: 50 Codex sessions to settle); ENGRAM_BENCH_SESSION_START_RUNS
runs (default 10).
"""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import tempfile
import time
from contextlib import closing
from pathlib import Path

from tests.bench import bench_hooks
from tests.bench.harness import Figure, summarize

RUNS = int(os.environ.get("ENGRAM_BENCH_SESSION_START_RUNS", "10"))
SESSIONS = int(os.environ.get("ENGRAM_BENCH_HOOK_SESSIONS", "150"))
AGED_BY_SECONDS = 2 * 3600.0
PAUSE_SECONDS = 0.5


def _aged_store(folder: Path, engram: Path) -> tuple[Path, str]:
    """A folder holding `project` (the store) and the agents' transcripts beside it, its
    sessions without an end silent for two hours; what it holds, in words."""
    if bench_hooks.LARGE_FROM:
        shutil.copytree(bench_hooks.LARGE_FROM, folder, symlinks=True)
        described = bench_hooks._described(
            folder / "project", f"copied from {bench_hooks.LARGE_FROM}"
        )
    else:
        described = bench_hooks.fill(bench_hooks._project(folder, engram), SESSIONS)
    # One session start on the template: whatever a first run after the copy would do once
    # (the gotchas' ranking index of an older store built) is not measured in every run.
    first = bench_hooks.SESSIONS["codex"](folder / "project", "template-start")
    bench_hooks._wall(
        [str(engram), "hook", "codex", "SessionStart"],
        json.dumps(first.payload("SessionStart")).encode(),
        bench_hooks._env(),
        folder / "project",
        [],
    )
    with closing(sqlite3.connect(folder / "project" / ".engram" / "engram.db")) as db:
        db.execute(
            "UPDATE agent_sessions SET last_seen = last_seen - ? WHERE ended_at IS NULL",
            (AGED_BY_SECONDS,),
        )
        db.commit()
        due = db.execute("SELECT count(*) FROM agent_sessions WHERE ended_at IS NULL").fetchone()[0]
    return folder, f"{described}; {due} sessions without an end, aged by 2 h"


def run() -> list[Figure]:
    env = bench_hooks._env()
    with tempfile.TemporaryDirectory(prefix="engram-bench-session-start-") as tmp:
        python, engram = bench_hooks.installed_engram(Path(tmp) / "venv")
        template, described = _aged_store(Path(tmp) / "template", engram)
        server = bench_hooks.ResidentServer(engram, Path(tmp) / "resident")
        floor, cold, resident = (
            bench_hooks.Samples(),
            bench_hooks.Samples(),
            bench_hooks.Samples(),
        )
        try:
            for run in range(-1, RUNS):  # run -1 warms the page cache and the server
                order = ("cold", "resident") if run % 2 else ("resident", "cold")
                for how in order:
                    copy = Path(tmp) / f"run-{run}-{how}"
                    shutil.copytree(template, copy, symlinks=True)
                    root = copy / "project"
                    session = bench_hooks.SESSIONS["codex"](root, f"start-{run + 1:03d}-{how}")
                    data = json.dumps(session.payload("SessionStart")).encode()
                    warm = bench_hooks.Samples()
                    into = floor if run >= 0 else warm
                    into.wall.append(
                        bench_hooks._wall([str(python), "-c", "pass"], None, env, root, into.cpu)
                    )
                    samples = (cold if how == "cold" else resident) if run >= 0 else warm
                    hook_env = env if how == "cold" else server.env
                    samples.wall.append(
                        bench_hooks._wall(
                            [str(engram), "hook", "codex", "SessionStart"],
                            data,
                            hook_env,
                            root,
                            samples.cpu,
                        )
                    )
                    time.sleep(PAUSE_SECONDS)
                    shutil.rmtree(copy, ignore_errors=True)
        finally:
            server.stop()
    load = os.getloadavg()[0]
    floor_median, floor_p95 = summarize(floor.wall)
    figures = [
        Figure(
            "python -c pass, installed layout (floor, session start run)",
            "-",
            floor_median,
            floor_p95,
            note=f"{described}; load average {load:.1f} on {os.cpu_count()} CPUs",
        )
    ]
    for label, samples in (("resident server", resident), ("cold process", cold)):
        median, p95 = summarize(samples.wall)
        cpu, _ = summarize(samples.cpu)
        ratio = median / floor_median
        figures.append(
            Figure(
                f"hook codex SessionStart settling 20 sessions, {label}",
                f"< {bench_hooks.TARGET_RATIO}x python -c pass",
                median,
                p95,
                ratio=f"{ratio:.2f}x; {'client ' if label.startswith('resident') else ''}"
                f"CPU {cpu:.1f} ms",
                within_budget=ratio <= bench_hooks.TARGET_RATIO,
            )
        )
    return figures
