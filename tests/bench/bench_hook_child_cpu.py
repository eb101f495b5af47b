"""The CPU a resident server's child spends on a hook until its answer, event by event.

`bench_hooks` measures what the agent waits for (wall time against `python -c pass`), which
on a shared machine moves with the load far more than the work does. This measures the work:
a process warmed as the resident server warms itself (`resident_server.warm_up`) forks a
child per event, as the server does, and the child copies its written memory as the server's
waiting child does, runs the hook in process (`hooks.handle`, its stores' closes deferred as
in a real child) and reports its CPU time (user + system) until the answer, and the patterns
it had to compile. One session of each agent (`bench_hooks.A_SESSION`) after another, each
on the same copy of the store, so the first session starts settle the earlier sessions due.

Run it on two checkouts in turn (the branch point and a branch) to compare the work itself:
`python -m tests.bench hook_child_cpu`. The store: ENGRAM_BENCH_HOOK_LARGE=PATH (a folder
whose `project` a `bench_hooks` run kept, ENGRAM_BENCH_HOOK_KEEP) or ENGRAM_BENCH_HOOK_SESSIONS
earlier sessions built here (default 300); ENGRAM_BENCH_CHILD_ROUNDS sessions per agent
(default 5).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from tests.bench import bench_hooks
from tests.bench.harness import Figure, summarize

ROUNDS = int(os.environ.get("ENGRAM_BENCH_CHILD_ROUNDS", "5"))
SESSIONS = int(os.environ.get("ENGRAM_BENCH_HOOK_SESSIONS", "300"))
WATCHED = ("SessionStart", "UserPromptSubmit", "BeforeAgent")


def _measure(root: Path, rounds: int) -> dict[str, list[list[float]]]:
    """In this (warmed) process: {"agent event": [[cpu ms, patterns compiled], ...]}."""
    import re

    from memory_core import resident_server
    from memory_core import store as store_module
    from memory_core.agents import hooks

    results: dict[str, list[list[float]]] = {}
    for round_number in range(rounds):
        for agent, events in bench_hooks.A_SESSION.items():
            session = bench_hooks.SESSIONS[agent](root, f"child-cpu-{agent}-{round_number}")
            for event in events:
                data = json.dumps(session.payload(event))
                read, write = os.pipe()
                pid = os.fork()
                if pid == 0:  # the child, as the server's: measured until its answer
                    os.close(read)
                    resident_server._copy_written_memory_now()
                    store_module.defer_closing()
                    compiled = [0]
                    real = re._compile  # type: ignore[attr-defined]

                    def counting(
                        pattern: object,
                        flags: int,
                        real: object = real,
                        compiled: list[int] = compiled,
                    ) -> object:
                        if not isinstance(pattern, re.Pattern) and (
                            (type(pattern), pattern, flags) not in re._cache  # type: ignore[attr-defined]
                        ):
                            compiled[0] += 1
                        return real(pattern, flags)  # type: ignore[operator]

                    re._compile = counting  # type: ignore[attr-defined]
                    began = time.process_time()
                    hooks.handle(agent, event, data, workspace=str(root))
                    cpu = (time.process_time() - began) * 1000
                    os.write(write, json.dumps([cpu, compiled[0]]).encode())
                    os.close(write)
                    store_module.close_deferred()
                    os._exit(0)
                os.close(write)
                answer = b""
                while chunk := os.read(read, 65536):
                    answer += chunk
                os.close(read)
                os.waitpid(pid, 0)
                results.setdefault(f"{agent} {event}", []).append(json.loads(answer))
    return results


def run() -> list[Figure]:
    with tempfile.TemporaryDirectory(prefix="engram-bench-child-cpu-") as tmp:
        folder = Path(tmp) / "store"
        if bench_hooks.LARGE_FROM:
            shutil.copytree(bench_hooks.LARGE_FROM, folder, symlinks=True)
            described = bench_hooks._described(
                folder / "project", f"copied from {bench_hooks.LARGE_FROM}"
            )
        else:
            _python, engram = bench_hooks.installed_engram(Path(tmp) / "venv")
            described = bench_hooks.fill(bench_hooks._project(folder, engram), SESSIONS)
        env = {**os.environ, "PYTHONPATH": str(bench_hooks.REPO)}
        env.pop("ENGRAM_NO_RESIDENT", None)
        done = subprocess.run(
            [sys.executable, "-m", "tests.bench.bench_hook_child_cpu", str(folder / "project")],
            capture_output=True,
            env=env,
            cwd=bench_hooks.REPO,
            check=True,
        )
    results: dict[str, list[list[float]]] = json.loads(done.stdout)
    load = os.getloadavg()[0]
    figures = []
    for name, samples in results.items():
        if name.split()[-1] not in WATCHED:
            continue
        cpu, p95 = summarize([sample[0] for sample in samples])
        compiled = max(int(sample[1]) for sample in samples)
        figures.append(
            Figure(
                f"resident child's CPU until its answer: {name}",
                "-",
                cpu,
                p95,
                ratio=f"{compiled} patterns compiled",
                note=f"{described}; {len(samples)} runs; load average {load:.1f}",
            )
        )
    return figures


if __name__ == "__main__":
    from memory_core import resident_server

    resident_server.warm_up()
    print(json.dumps(_measure(Path(sys.argv[1]), ROUNDS)))
