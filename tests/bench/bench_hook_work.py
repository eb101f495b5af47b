"""Each hook event's own work, in process, at an empty store and at a large one.

`bench_hooks` measures what an agent waits for (a cold process against `python -c pass`); this
measures what of it is engram's work on the store: each event of Claude Code, Gemini CLI and
Codex CLI through `hooks.handle` in this process, its imports done by a warm-up session, so
only the event's own reads and writes count. CPU time (`time.process_time`) is the clock: on a
machine whose cores are shared it moves far less with the load than wall time. A store's size
shows here as a difference between its rows: a flat event costs the same at every size.

`python -m tests.bench hook_work`. ENGRAM_BENCH_HOOK_RUNS sessions measured per agent and store
(default 5; the least and the median of the runs are printed). The large store is built as
`bench_hooks` builds it (ENGRAM_BENCH_HOOK_SESSIONS earlier sessions, default 2,000) or copied
from ENGRAM_BENCH_HOOK_LARGE (a folder holding the `project` a run kept with
ENGRAM_BENCH_HOOK_KEEP); ENGRAM_BENCH_HOOK_STORES=empty,large names the stores measured.
"""

from __future__ import annotations

import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from tests.bench import bench_hooks
from tests.bench.harness import Figure

RUNS = int(os.environ.get("ENGRAM_BENCH_HOOK_RUNS", "5"))


def _project(folder: Path) -> Path:
    root = folder / "project"
    root.mkdir(parents=True)
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    (root / "app.py").write_text("print('hello')\n")
    # This checkout's engram (not whichever the `engram` script beside the interpreter runs).
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    subprocess.run(
        [sys.executable, "-m", "memory_core", "init"],
        cwd=root,
        env=env,
        capture_output=True,
        check=True,
    )
    return root


def measure(root: Path, label: str, runs: int) -> dict[tuple[str, str], list[float]]:
    """CPU ms of each (agent, event) over `runs` sessions per agent, after a warm-up session."""
    from memory_core.agents import hooks

    cpu: dict[tuple[str, str], list[float]] = {}
    for run in range(-1, runs):
        for agent, events in bench_hooks.EVENTS.items():
            session = bench_hooks.SESSIONS[agent](root, f"work-{label}-{agent}-{run + 1:03d}")
            for event in events:
                data = json.dumps(session.payload(event))
                start = time.process_time()
                hooks.handle(agent, event, data, workspace=str(root))
                spent = (time.process_time() - start) * 1000
                if run >= 0:
                    cpu.setdefault((agent, event), []).append(spent)
    return cpu


def run() -> list[Figure]:
    stores = os.environ.get("ENGRAM_BENCH_HOOK_STORES", "empty,large").split(",")
    figures: list[Figure] = []
    with tempfile.TemporaryDirectory(prefix="engram-bench-hook-work-") as tmp:
        roots: dict[str, tuple[Path, str]] = {}
        if "empty" in stores:
            roots["empty store"] = (_project(Path(tmp) / "empty"), "nothing recorded")
        if "large" in stores:
            large = Path(tmp) / "large" / "project"
            if bench_hooks.LARGE_FROM:
                shutil.copytree(Path(bench_hooks.LARGE_FROM) / "project", large, symlinks=True)
                described = bench_hooks._described(large, f"copied from {bench_hooks.LARGE_FROM}")
            else:
                large = _project(Path(tmp) / "large")
                described = bench_hooks.fill(large, bench_hooks.LARGE_SESSIONS)
            roots["large store"] = (large, described)
        for label, (root, described) in roots.items():
            cpu = measure(root, label.split()[0], RUNS)
            load = os.getloadavg()[0]
            for index, ((agent, event), runs) in enumerate(cpu.items()):
                figures.append(
                    Figure(
                        f"hook {agent} {event}, {label}, in process (CPU)",
                        "-",
                        statistics.median(runs),
                        None,
                        ratio=f"least {min(runs):.1f} ms",
                        note=f"{described}; load average {load:.1f}" if index == 0 else "",
                    )
                )
    return figures


if __name__ == "__main__":
    for figure in run():
        print(" | ".join(figure.row()), figure.note)
