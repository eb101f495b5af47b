"""`engram checkpoint create` with watchman, from the command line, against `python -c pass`.

The one row of `bench_checkpoints` a person waits for at a prompt, on its own: the full
benchmark also builds a shadow git repository, measures rollbacks and the server's path, and
takes many minutes on this machine. Here: the same 50,000-file git workspace, watchman
watching it, 10 files changed before each checkpoint, and each `engram checkpoint create`
(the installed layout's script, bench_hooks.installed_engram) run through the resident server
and cold in turn, each right after the installed layout's `python -c pass` (the floor; target
2.5x, issue 32). Bytecode compiled first, PYTHONDONTWRITEBYTECODE unset, as users run.

`python -m tests.bench checkpoint_cli`; ENGRAM_BENCH_CKPT_ROUNDS rounds (default 9).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

from tests.bench.bench_checkpoints import LAST_CPU_MS, _cold_env, _generate, _git, _paths, _timed
from tests.bench.bench_checkpoints import _touch as touch
from tests.bench.bench_hooks import ResidentServer, installed_engram
from tests.bench.harness import Figure, summarize

ROUNDS = int(os.environ.get("ENGRAM_BENCH_CKPT_ROUNDS", "9"))
TARGET_RATIO = 2.5


def run() -> list[Figure]:
    if shutil.which("watchman") is None or shutil.which("git") is None:
        return [Figure("checkpoint create with watchman, CLI", "-", note="watchman or git missing")]
    tmp = Path(tempfile.mkdtemp(prefix="engram-bench-ckpt-cli-"))
    try:
        return _run(tmp)
    finally:
        subprocess.run(["watchman", "watch-del", str(tmp / "ws")], capture_output=True)
        shutil.rmtree(tmp, ignore_errors=True)


def _run(tmp: Path) -> list[Figure]:
    root = tmp / "ws"
    root.mkdir()
    paths = _paths()
    _generate(root, paths)
    env = _cold_env()
    git_env = {
        **env,
        "GIT_AUTHOR_NAME": "bench",
        "GIT_AUTHOR_EMAIL": "bench@example.invalid",
        "GIT_COMMITTER_NAME": "bench",
        "GIT_COMMITTER_EMAIL": "bench@example.invalid",
    }
    _git(git_env, "-C", str(root), "init", "-q")
    _git(git_env, "-C", str(root), "add", "-A")
    _git(git_env, "-C", str(root), "commit", "-q", "-m", "base")
    python, engram = installed_engram(tmp / "venv")
    subprocess.run([str(engram), "init"], cwd=root, env=env, capture_output=True, check=True)
    subprocess.run(["watchman", "watch-project", str(root)], capture_output=True, check=True)
    server = ResidentServer(engram, tmp / "resident")
    walls: dict[str, list[float]] = {"pass": [], "resident": [], "cold": []}
    cpus: dict[str, list[float]] = {key: [] for key in walls}
    sources: set[str] = set()
    try:
        # The first checkpoint records every file; the rounds after it are the daily case.
        subprocess.run(
            [str(engram), "checkpoint", "create", "base"],
            cwd=root,
            env=env,
            capture_output=True,
            check=True,
        )
        for round_no in range(-1, ROUNDS):  # round -1 warms the server and the page cache
            order = ("resident", "cold") if round_no % 2 else ("cold", "resident")
            for how in order:
                touch(root, paths[round_no * 10 % 5000 :][:10], round_no * 2 + (how == "cold"))
                time.sleep(0.05)  # watchman sees the changes as a person's editor makes them
                floor_ms, _ = _timed(lambda: subprocess.run([str(python), "-c", "pass"], env=env))
                floor_cpu = LAST_CPU_MS[0]
                use = server.env if how == "resident" else env
                ms, done = _timed(
                    lambda use=use: subprocess.run(
                        [str(engram), "checkpoint", "create", "--json"],
                        cwd=root,
                        env=use,
                        capture_output=True,
                        text=True,
                        check=True,
                    )
                )
                if round_no < 0:
                    continue
                walls["pass"].append(floor_ms)
                cpus["pass"].append(floor_cpu)
                walls[how].append(ms)
                cpus[how].append(LAST_CPU_MS[0])
                sources.add(json.loads(done.stdout)["source"])
    finally:
        server.stop()
    floor, _ = summarize(walls["pass"])
    floor_cpu, _ = summarize(cpus["pass"])
    load = os.getloadavg()[0]
    figures = [
        Figure(
            "python -c pass, installed layout (floor of the CLI checkpoint)",
            "-",
            floor,
            summarize(walls["pass"])[1],
            note=f"CPU {floor_cpu:.1f} ms; load average {load:.1f} on {os.cpu_count()} CPUs",
        )
    ]
    for how in ("resident", "cold"):
        median, p95 = summarize(walls[how])
        cpu, _ = summarize(cpus[how])
        figures.append(
            Figure(
                f"checkpoint create, 10 changed of 50,000, watchman, CLI, {how}",
                f"< {TARGET_RATIO}x python -c pass",
                median,
                p95,
                ratio=f"{median / floor:.2f}x; {'client ' if how == 'resident' else ''}CPU "
                f"{cpu / floor_cpu:.2f}x",
                within_budget=median / floor < TARGET_RATIO,
                note=f"sources {sorted(sources)}; load average {load:.1f}",
            )
        )
    return figures


if __name__ == "__main__":
    for figure in run():
        print(" | ".join(figure.row()), figure.note)
