"""Without watchman, through the resident server: `engram rollback --yes` of 100 files against
`git reset --hard`, and `engram checkpoint create` (10 changed files) against `git status
--porcelain -uall`, in the 50,000-file git workspace of `bench_checkpoints` (issue 32's two
no-watchman rows, on their own: the full benchmark takes many minutes on this machine).

Each round runs, in turn: the peer's reset of 100 touched files (a copy of the workspace with
its own shadow repository, as in bench_checkpoints), then engram's rollback of 100 touched files;
`git status -uall`, then engram's checkpoint. Every figure has its peer from the same rounds.
Besides wall time: the client's CPU, and the resident child's own CPU and its git's (the child
writes them when `ENGRAM_RESIDENT_PROFILE` names a folder: memory_core/resident_server.py), which
a loaded machine changes far less than wall time.

`ENGRAM_BENCH_OTHER_CHECKOUT=PATH` runs a second checkout of engram (another branch, exported
with `git archive`) through its own resident server on the same workspace and store, the two
alternating in every round, so both see the same load. `ENGRAM_BENCH_RB_ROUNDS` rounds (7).

`python -m tests.bench rollback_cli`
"""

from __future__ import annotations

import json
import os
import shutil
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

from tests.bench.bench_checkpoints import (
    LAST_CPU_MS,
    _cold_env,
    _generate,
    _git,
    _paths,
    _timed,
)
from tests.bench.bench_checkpoints import _touch as touch
from tests.bench.bench_hooks import REPO, ResidentServer, installed_engram
from tests.bench.harness import Figure, summarize

ROUNDS = int(os.environ.get("ENGRAM_BENCH_RB_ROUNDS", "7"))
IDENTITY = {
    "GIT_AUTHOR_NAME": "bench",
    "GIT_AUTHOR_EMAIL": "bench@example.invalid",
    "GIT_COMMITTER_NAME": "bench",
    "GIT_COMMITTER_EMAIL": "bench@example.invalid",
}


def run() -> list[Figure]:
    if shutil.which("git") is None:
        return [Figure("rollback without watchman, resident", "-", note="git not installed")]
    tmp = Path(tempfile.mkdtemp(prefix="engram-bench-rb-cli-"))
    try:
        return _run(tmp)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


class _Install:
    """One checkout of engram, installed as a user's, with its own resident server."""

    def __init__(self, name: str, repo: Path, tmp: Path) -> None:
        self.name = name
        _, self.script = installed_engram(tmp / f"venv-{name}", repo)
        self.server = ResidentServer(self.script, tmp / f"resident-{name}")
        self.profile = tmp / f"profile-{name}"
        self.profile.mkdir()
        self.env = {**self.server.env, "ENGRAM_RESIDENT_PROFILE": str(self.profile)}
        self.walls: dict[str, list[float]] = {"rollback": [], "checkpoint": []}
        self.client_cpu: dict[str, list[float]] = {"rollback": [], "checkpoint": []}
        self.children: dict[str, list[dict[str, float]]] = {"rollback": [], "checkpoint": []}

    def run(self, kind: str | None, argv: list[str], root: Path) -> dict[str, object]:
        """Run a command through this install's server; `kind`: the figure it counts in."""
        before = set(self.profile.glob("*.command.json"))
        ms, done = _timed(
            lambda: subprocess.run(
                [str(self.script), *argv, "--json"],
                cwd=root,
                env=self.env,
                capture_output=True,
                text=True,
                check=True,
            )
        )
        if kind is not None:
            self.walls[kind].append(ms)
            self.client_cpu[kind].append(LAST_CPU_MS[0])
            for made in set(self.profile.glob("*.command.json")) - before:
                self.children[kind].append(json.loads(made.read_text()))
        return dict(json.loads(done.stdout))


def _run(tmp: Path) -> list[Figure]:
    root, peer_root = tmp / "ws", tmp / "peer-ws"
    root.mkdir()
    paths = _paths()
    _generate(root, paths)
    env = _cold_env()
    own = {**env, **IDENTITY}
    _git(own, "-C", str(root), "init", "-q")
    _git(own, "-C", str(root), "add", "-A")
    _git(own, "-C", str(root), "-c", "gc.auto=0", "commit", "-q", "-m", "the project")
    _git(own, "-C", str(root), "gc", "-q")
    shutil.copytree(root, peer_root, ignore=shutil.ignore_patterns(".engram", ".git"))
    shadow = {**own, "GIT_DIR": str(tmp / "shadow.git"), "GIT_WORK_TREE": str(peer_root)}
    _git(shadow, "init", "-q")
    _git(shadow, "add", "-A")
    _git(shadow, "-c", "gc.auto=0", "commit", "-q", "-m", "base")
    _git(shadow, "gc", "-q")

    installs = [_Install("this", REPO, tmp)]
    other = os.environ.get("ENGRAM_BENCH_OTHER_CHECKOUT")
    if other:
        installs.append(_Install("other", Path(other).resolve(), tmp))
    cold = installs[0].script
    for argv in (["init"], ["config", "set", "checkpoints.watchman", "false"]):
        subprocess.run([str(cold), *argv], cwd=root, env=env, capture_output=True, check=True)
    for name in ("base", None, "before-100"):
        made = subprocess.run(
            [str(cold), "checkpoint", "create", *([name] if name else []), "--json"],
            cwd=root,
            env=env,
            capture_output=True,
            text=True,
            check=True,
        )
    target = json.loads(made.stdout)["id"]
    hundred = paths[7 :: len(paths) // 100][:100]
    resets: list[float] = []
    reset_cpu: list[float] = []
    statuses: list[float] = []
    status_cpu: list[float] = []
    offset = 0
    try:
        for round_no in range(-1, ROUNDS):  # round -1 warms the servers and the page cache
            timed = round_no >= 0
            for install in installs if round_no % 2 else installs[::-1]:
                touch(peer_root, hundred, 1000 + round_no)
                ms, _ = _timed(lambda: _git(shadow, "reset", "-q", "--hard"))
                if timed:
                    resets.append(ms)
                    reset_cpu.append(LAST_CPU_MS[0])
                time.sleep(1.1)  # commands come seconds apart (a stat cache's racy second)
                touch(root, hundred, 2000 + round_no)
                kind = "rollback" if timed else None
                rolled = install.run(kind, ["rollback", target, "--yes"], root)
                assert len(rolled["restored"]) == 100, rolled  # type: ignore[arg-type]
                offset += 97
                touch(root, paths[offset :: len(paths) // 10][:10], 3000 + round_no)
                time.sleep(1.1)
                ms, _ = _timed(lambda: _git(own, "-C", str(root), "status", "--porcelain", "-uall"))
                if timed:
                    statuses.append(ms)
                    status_cpu.append(LAST_CPU_MS[0])
                install.run("checkpoint" if timed else None, ["checkpoint", "create"], root)
                # Untimed: the 10 files back to the target's, so that every timed rollback
                # restores the same 100.
                install.run(None, ["rollback", target, "--yes"], root)
    finally:
        for install in installs:
            install.server.stop()
    load = os.getloadavg()[0]
    reset, _ = summarize(resets)
    status, _ = summarize(statuses)
    figures = [
        Figure(
            "git reset --hard of 100 files (peer)",
            "-",
            *summarize(resets),
            note=f"CPU {statistics.median(reset_cpu):.0f} ms; load average {load:.1f}",
        ),
        Figure(
            "git status --porcelain -uall (peer)",
            "-",
            *summarize(statuses),
            note=f"CPU {statistics.median(status_cpu):.0f} ms",
        ),
    ]
    for install in installs:
        for kind, peer, peer_name, peer_cpu in (
            ("rollback", reset, "git reset --hard", reset_cpu),
            ("checkpoint", status, "git status -uall", status_cpu),
        ):
            median, p95 = summarize(install.walls[kind])
            children = install.children[kind]
            child = (
                f"; the child's CPU {statistics.median(c['cpu_ms'] for c in children):.0f} ms, "
                f"its git's {statistics.median(c['children_cpu_ms'] for c in children):.0f} ms"
                if children
                else ""
            )
            figures.append(
                Figure(
                    f"{'rollback of 100' if kind == 'rollback' else 'checkpoint, 10 changed'} "
                    f"of 50,000, no watchman, resident ({install.name}: "
                    f"{'this checkout' if install.name == 'this' else other})",
                    f"<= {peer_name}",
                    median,
                    p95,
                    ratio=f"{median / peer:.2f}x {peer_name} ({peer:.0f} ms)",
                    within_budget=median <= peer,
                    note=f"client CPU {statistics.median(install.client_cpu[kind]):.0f} ms"
                    f"{child} (the peer's CPU {statistics.median(peer_cpu):.0f} ms); ms each: "
                    + ", ".join(f"{ms:.0f}" for ms in install.walls[kind])
                    + f"; load average {load:.1f}",
                )
            )
    return figures


if __name__ == "__main__":
    for figure in run():
        print(" | ".join(figure.row()), figure.note)
