"""Checkpoints (docs/design.md section 7): 10 changed files in a 50,000-file workspace (a git repository,
as most are), against a shadow-git commit of the same tree (`git add -A` + `git commit` with a
separate GIT_DIR and GIT_WORK_TREE, as Cline and Roo Code checkpoint) and `git status`; rollback
of 100 changed files against `git reset --hard` of a shadow commit (on a copy of the workspace, so
that neither side's writes change the other's folders); the store's size against the shadow git
directory after the incremental rounds. Both repositories are packed before anything is timed.

Each round changes 10 fresh files before each engram path, so every path finds 10 changes:
- the language server whose client does not watch files: the server's own watcher (the core's
  `journal.Watcher`, watchfiles/inotify, running in this process as it does in the server)
  vouches for the interval;
- the command line (or a hook) with watchman running: watchman's `since` query;
- the command line without watchman: git's status against the previous checkpoint's;
- the command line outside git and without watchman: a stat scan (informative; no budget).
"""

from __future__ import annotations

import contextlib
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from memory_core import checkpoints, config, journal
from memory_core.store import Store
from tests.bench.harness import Figure, summarize

PACKAGES = 10
MODULES_PER_PACKAGE = 50
FILES_PER_MODULE = 100  # 10 x 50 x 100 = 50,000 files
CHANGED = 10
ROUNDS = 5
ROLLBACK_FILES = 100
ROLLBACK_ATTEMPTS = 5  # both sides; the median of 3 moved 15 % between runs on this machine
COLD_ROUNDS = 7  # cold processes of each kind, each beside its floor or peer


def _cold_env() -> dict[str, str]:
    """The environment of a user's engram: bytecode compiled once and written (this machine
    sets PYTHONDONTWRITEBYTECODE, under which every cold process would compile from source)."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    package = Path(__file__).resolve().parents[2]
    for folder in (
        package / "memory_core",
        *(Path(p) for p in sys.path if p.endswith("site-packages")),
    ):
        subprocess.run(
            [sys.executable, "-m", "compileall", "-q", str(folder)],
            env=env,
            capture_output=True,
            check=False,
        )
    # The cold rows are cold processes: no resident server answers them (docs/resident.md).
    return {**env, "ENGRAM_NO_RESIDENT": "1"}


def _paths() -> list[str]:
    return [
        f"pkg{p:02d}/mod{m:03d}/file{f:03d}.py"
        for p in range(PACKAGES)
        for m in range(MODULES_PER_PACKAGE)
        for f in range(FILES_PER_MODULE)
    ]


def _generate(root: Path, paths: list[str]) -> None:
    body = "def handler(event):\n    return {'status': 200, 'body': event}\n" * 3
    made: set[str] = set()
    for index, rel in enumerate(paths):
        parent = rel.rpartition("/")[0]
        if parent not in made:
            os.makedirs(root / parent, exist_ok=True)
            made.add(parent)
        with open(root / rel, "w") as handle:
            handle.write(f"# {rel}\nID = {index}\n{body}")
    (root / ".gitignore").write_text("__pycache__/\n*.pyc\nbuild/\n.engram/\n")
    # Files written seconds ago look "racy" to a stat cache (git's and ours); age them.
    past = time.time() - 3600
    for rel in paths:
        os.utime(root / rel, (past, past))


def _git(env: dict[str, str], *args: str) -> None:
    done = subprocess.run(["git", *args], env=env, capture_output=True, text=True)
    if done.returncode != 0:
        raise RuntimeError(f"git {' '.join(args)} failed: {done.stderr.strip()}")


def _git_loose_bytes(env: dict[str, str]) -> int:
    """Bytes of git's loose objects (what a commit adds before any repack)."""
    done = subprocess.run(
        ["git", "count-objects", "-v"], env=env, capture_output=True, text=True, check=True
    )
    fields = dict(line.split(": ", 1) for line in done.stdout.splitlines() if ": " in line)
    return int(fields.get("size", "0")) * 1024


def _touch(root: Path, rels: list[str], round_no: int) -> None:
    for rel in rels:
        with open(root / rel, "a") as handle:
            handle.write(f"# change {round_no}\n")


def _dir_bytes(path: Path) -> int:
    total = 0
    for dirpath, _, filenames in os.walk(path):
        for name in filenames:
            with contextlib.suppress(OSError):
                total += os.lstat(os.path.join(dirpath, name)).st_size
    return total


def _cpu_seconds() -> float:
    """CPU time of this process and of the children it waited for (git)."""
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return time.process_time() + children.ru_utime + children.ru_stime


# CPU milliseconds of the last `_timed` call: on a shared, loaded machine wall-clock times
# inflate with the load; CPU time is the work each side did.
LAST_CPU_MS = [0.0]


def _rounded(samples: list[float]) -> str:
    return ", ".join(f"{sample:.0f}" for sample in samples)


def _timed(fn: Any) -> tuple[float, Any]:
    cpu = _cpu_seconds()
    start = time.perf_counter()
    value = fn()
    LAST_CPU_MS[0] = (_cpu_seconds() - cpu) * 1000
    return (time.perf_counter() - start) * 1000, value


def run() -> list[Figure]:
    if shutil.which("git") is None:
        return [
            Figure(
                "checkpoint of 10 changed files", "< 1/20 of shadow git", note="git not installed"
            )
        ]
    tmp = Path(tempfile.mkdtemp(prefix="engram-bench-ckpt-"))
    try:
        return _run(tmp)
    finally:
        if shutil.which("watchman"):
            subprocess.run(
                ["watchman", "watch-del", str(tmp / "ws")], capture_output=True, check=False
            )
        shutil.rmtree(tmp, ignore_errors=True)


def _run(tmp: Path) -> list[Figure]:
    root = tmp / "ws"
    root.mkdir()
    paths = _paths()
    start = time.perf_counter()
    _generate(root, paths)
    generated_s = time.perf_counter() - start
    identity = {
        "GIT_AUTHOR_NAME": "bench",
        "GIT_AUTHOR_EMAIL": "bench@example.invalid",
        "GIT_COMMITTER_NAME": "bench",
        "GIT_COMMITTER_EMAIL": "bench@example.invalid",
    }
    # The workspace is a git repository of its own (the user's), committed once.
    own = {**os.environ, **identity}
    _git(own, "-C", str(root), "init", "-q")
    _git(own, "-C", str(root), "add", "-A")
    # Packed now, as an aged repository is: left to itself, this commit's automatic `git gc`
    # (detached, 5 s of packing 50,000 objects) ran beside the first measured rounds.
    _git(own, "-C", str(root), "-c", "gc.auto=0", "commit", "-q", "-m", "the project")
    _git(own, "-C", str(root), "gc", "-q")

    store = Store.init(root)
    with_watchman = config.load(root)
    has_watchman = shutil.which("watchman") is not None
    without_watchman = config.Settings(
        values={**with_watchman.values, "checkpoints.watchman": False}
    )
    start = time.perf_counter()
    checkpoints.create(store, "baseline", settings=with_watchman)
    first_ms = (time.perf_counter() - start) * 1000

    shadow = {
        **os.environ,
        **identity,
        "GIT_DIR": str(tmp / "shadow.git"),
        "GIT_WORK_TREE": str(root),
    }
    _git(shadow, "init", "-q")
    (tmp / "shadow.git" / "info").mkdir(exist_ok=True)
    (tmp / "shadow.git" / "info" / "exclude").write_text(".engram/\n")
    start = time.perf_counter()
    _git(shadow, "add", "-A")
    _git(shadow, "-c", "gc.auto=0", "commit", "-q", "-m", "baseline")
    git_first_ms = (time.perf_counter() - start) * 1000
    _git(shadow, "gc", "-q")  # (the same for the shadow repository)

    watcher = journal.Watcher(root).start()
    watcher.ready.wait(60)
    watcher_start_ms = (watcher.started_in or 0) * 1000
    # The first checkpoint after the watcher started: nothing vouched for the time before.
    checkpoints.create(store, settings=with_watchman, journal=watcher.journal)

    cpu: dict[str, list[float]] = {
        k: [] for k in ("server", "watchman", "git", "scan", "shadow", "status", "reset")
    }
    cpu["rollback-watchman"], cpu["rollback-git"] = [], []
    times: dict[str, list[float]] = {
        "server": [],
        "watchman": [],
        "git": [],
        "scan": [],
        "shadow": [],
        "status": [],
    }
    sources: dict[str, set[str]] = {k: set() for k in times}
    counts: dict[str, set[int]] = {k: set() for k in times}
    stored: list[int] = []
    compressed: list[int] = []
    import zstandard

    compressor = zstandard.ZstdCompressor(level=3)
    offset = 0

    def shadow_commit(timed: bool) -> None:
        ms, _ = _timed(lambda: (_git(shadow, "add", "-A"), _git(shadow, "commit", "-q", "-m", "r")))
        if timed:
            times["shadow"].append(ms)
            cpu["shadow"].append(LAST_CPU_MS[0])

    def ten() -> list[str]:
        nonlocal offset
        offset += 97
        return paths[offset :: len(paths) // CHANGED][:CHANGED]

    # The server keeps the listings its last checkpoint wrote (checkpoints.TreeCache), and after
    # its first checkpoint reads the others in on a thread of its own (done here before timing).
    server_trees = checkpoints.TreeCache()
    warm_start = time.perf_counter()
    warmed = server_trees.warm(store)
    warm_ms = (time.perf_counter() - warm_start) * 1000

    def engram(kind: str, round_no: int, settings: config.Settings, **kwargs: Any) -> None:
        changed = ten()
        time.sleep(1.1)  # checkpoints come seconds apart; the journal keeps 1 s of slack
        _touch(root, changed, round_no)
        if kind == "server":
            time.sleep(0.5)  # the watcher batches events for up to 300 ms
        ms, made = _timed(lambda: checkpoints.create(store, settings=settings, **kwargs))
        times[kind].append(ms)
        cpu[kind].append(LAST_CPU_MS[0])
        if kind != "scan":
            # The shadow repository commits the same states, so both stores hold the same
            # snapshots; one commit per round is timed (the peer), below.
            shadow_commit(kind == "git")
        sources[kind].add(made["source"])
        counts[kind].add(made["changed"])
        if kind == "server":
            stored.append(int(made["added_bytes"]))
            compressed.append(
                sum(len(compressor.compress((root / rel).read_bytes())) for rel in changed)
            )

    for round_no in range(ROUNDS):
        engram(
            "server", round_no, without_watchman, journal=watcher.journal, tree_cache=server_trees
        )
        if has_watchman:
            engram("watchman", round_no, with_watchman)
        engram("git", round_no, without_watchman)
        ms, _ = _timed(
            lambda: _git(own, "-C", str(root), "status", "--porcelain", "--untracked-files=all")
        )
        times["status"].append(ms)
        cpu["status"].append(LAST_CPU_MS[0])
    watcher.stop()
    # The store against the shadow .git, both holding the baseline and the same 5 rounds.
    store.query("PRAGMA wal_checkpoint(TRUNCATE)")
    rounds_store_bytes = _dir_bytes(root / ".engram")
    # engram's copy of git's index (journal.git_state), in the user's .git/engram/: counted
    # beside the store, as the shadow's index is counted in its directory.
    own_index_bytes = _dir_bytes(root / ".git" / "engram")
    rounds_shadow_bytes = _dir_bytes(tmp / "shadow.git")
    rounds_checkpoints = len(checkpoints.list_checkpoints(store))

    # The CLI paths again from cold `engram checkpoint create` processes, as a person or a hook
    # runs them, each alternating with its floor or peer: `python -c pass` with watchman,
    # `git status -uall` without it. Bytecode compiled first and PYTHONDONTWRITEBYTECODE unset,
    # as on an installed engram (pip writes .pyc files).
    cold_env = _cold_env()
    # engram as `pipx install` lays it out (tests/bench/bench_hooks.py): its `python -c pass`
    # is the floor; the development venv's (an editable install's finder runs at every start)
    # is measured beside it. Each round runs the command cold and through the resident fork
    # server (docs/resident.md), alternately.
    from tests.bench.bench_hooks import ResidentServer, installed_engram

    python, engram_script = installed_engram(tmp / "venv")
    server = ResidentServer(engram_script, tmp / "resident")
    cold: dict[str, list[float]] = {
        k: [] for k in ("watchman", "watchman-resident", "pass", "devpass", "git", "git-resident")
    }
    cold["status"] = []
    cold_cpu: dict[str, list[float]] = {k: [] for k in cold}
    cold_sources: dict[str, set[str]] = {"watchman": set(), "git": set()}

    def cold_create(kind: str, round_no: int) -> None:
        for how in ("", "-resident") if round_no % 2 else ("-resident", ""):
            changed = ten()
            time.sleep(1.1)
            _touch(root, changed, round_no * 2 + (how == ""))
            if kind == "watchman":
                ms, _ = _timed(lambda: subprocess.run([str(python), "-c", "pass"], env=cold_env))
                cold["pass"].append(ms)
                cold_cpu["pass"].append(LAST_CPU_MS[0])
                ms, _ = _timed(lambda: subprocess.run([sys.executable, "-c", "pass"], env=cold_env))
                cold["devpass"].append(ms)
                cold_cpu["devpass"].append(LAST_CPU_MS[0])
            else:
                ms, _ = _timed(lambda: _git(own, "-C", str(root), "status", "--porcelain", "-uall"))
                cold["status"].append(ms)
                cold_cpu["status"].append(LAST_CPU_MS[0])
            env = server.env if how else cold_env
            ms, done = _timed(
                lambda env=env: subprocess.run(
                    [str(engram_script), "checkpoint", "create", "--json"],
                    cwd=root,
                    env=env,
                    capture_output=True,
                    text=True,
                    check=True,
                )
            )
            cold[kind + how].append(ms)
            cold_cpu[kind + how].append(LAST_CPU_MS[0])
            cold_sources[kind].add(json.loads(done.stdout)["source"])

    try:
        for round_no in range(COLD_ROUNDS):
            if has_watchman:
                cold_create("watchman", round_no + 20)
        config.set_value(root, "checkpoints.watchman", False)
        try:
            for round_no in range(COLD_ROUNDS):
                cold_create("git", round_no + 40)
        finally:
            config.remove_value(root, "checkpoints.watchman")
    except BaseException:
        server.stop()
        raise
    python_start = statistics.median(cold["pass"]) if cold["pass"] else float("nan")
    dev_start = statistics.median(cold["devpass"]) if cold["devpass"] else float("nan")

    # As outside git, without watchman: the stat scan (git pointed at a repository that is
    # not there, so it cannot answer).
    os.environ["GIT_DIR"] = str(tmp / "no-such-repository")
    try:
        for round_no in range(3):
            engram("scan", round_no + 10, without_watchman)
    finally:
        del os.environ["GIT_DIR"]
    # (Re-establish a git-vouched base for the rollback below.)
    checkpoints.create(store, settings=without_watchman)

    # Rollback of 100 files: both sides start from the same checkpoint/commit and the same edits.
    target = checkpoints.create(store, "before-100", settings=with_watchman)
    _git(shadow, "add", "-A")
    _git(shadow, "commit", "-q", "-m", "before-100")
    # The peer resets a copy of the workspace (same files, same stat data, its own index), not
    # the workspace itself: git's checkout replaces a file by unlink and create, which changes
    # its folder, so on a shared tree each reset made our next `git status` re-read the 100
    # folders and rewrite engram's copy of the index (~45 ms per rollback that no user pays:
    # nobody resets a shadow repository in their workspace between two rollbacks).
    peer_root = tmp / "peer-ws"
    shutil.copytree(root, peer_root, ignore=shutil.ignore_patterns(".engram", ".git"))
    peer = {**shadow, "GIT_WORK_TREE": str(peer_root), "GIT_INDEX_FILE": str(tmp / "peer.index")}
    _git(peer, "read-tree", "HEAD")
    _git(peer, "update-index", "-q", "--refresh")
    hundred = paths[7 :: len(paths) // ROLLBACK_FILES][:ROLLBACK_FILES]
    reset_times: list[float] = []
    rollback_times: dict[str, list[float]] = {"watchman": [], "git": []}
    phases: dict[str, list[tuple[float, float, float]]] = {"watchman": [], "git": []}
    for attempt in range(ROLLBACK_ATTEMPTS):
        _touch(peer_root, hundred, 100 + attempt)
        ms, _ = _timed(lambda: _git(peer, "reset", "-q", "--hard"))
        reset_times.append(ms)
        cpu["reset"].append(LAST_CPU_MS[0])
        for kind, settings in (("watchman", with_watchman), ("git", without_watchman)):
            if kind == "watchman" and not has_watchman:
                continue
            time.sleep(1.1)
            _touch(root, hundred, 200 + attempt)
            phase_cpu = 0.0
            plan_ms, plan = _timed(
                lambda settings=settings: checkpoints.plan_rollback(
                    store, target["id"], settings=settings
                )
            )
            phase_cpu += LAST_CPU_MS[0]
            undo_ms, undo = _timed(
                lambda settings=settings, plan=plan: checkpoints.prepare_undo(
                    store, plan, settings=settings
                )
            )
            phase_cpu += LAST_CPU_MS[0]
            apply_ms, result = _timed(
                lambda plan=plan, undo=undo: checkpoints.apply_plan(
                    store, plan, undo_checkpoint=undo["id"]
                )
            )
            assert len(result["restored"]) == ROLLBACK_FILES and not result["removed"], result
            rollback_times[kind].append(plan_ms + undo_ms + apply_ms)
            cpu[f"rollback-{kind}"].append(phase_cpu + LAST_CPU_MS[0])
            phases[kind].append((plan_ms, undo_ms, apply_ms))

    # The same from a cold `engram rollback` process without watchman (git vouching), as a
    # person runs it, alternating with the peer's reset.
    cold_rollback: list[float] = []
    resident_rollback: list[float] = []
    cold_reset: list[float] = []
    config.set_value(root, "checkpoints.watchman", False)
    try:
        for attempt in range(ROLLBACK_ATTEMPTS * 2):
            resident = attempt % 2 == (attempt // 2) % 2  # each pair in turn: ABBA
            _touch(peer_root, hundred, 300 + attempt)
            ms, _ = _timed(lambda: _git(peer, "reset", "-q", "--hard"))
            cold_reset.append(ms)
            time.sleep(1.1)
            _touch(root, hundred, 400 + attempt)
            env = server.env if resident else cold_env
            ms, done = _timed(
                lambda env=env: subprocess.run(
                    [str(engram_script), "rollback", target["id"], "--yes", "--json"],
                    cwd=root,
                    env=env,
                    capture_output=True,
                    text=True,
                    check=True,
                )
            )
            assert len(json.loads(done.stdout)["restored"]) == ROLLBACK_FILES, done.stdout[:300]
            (resident_rollback if resident else cold_rollback).append(ms)
    finally:
        config.remove_value(root, "checkpoints.watchman")
        served = server.requests()
        server.stop()

    # Garbage collection, which retention runs inside a checkpoint once an eighth of
    # `checkpoints.max_count` was removed: marking every listing of every checkpoint kept and
    # deleting what none uses (here: what the rollbacks above replaced).
    kept = len(checkpoints.list_checkpoints(store))
    gc_ms, gc_freed = _timed(lambda: checkpoints.gc(store))
    store.close()

    def med(kind: str) -> float:
        return sorted(times[kind])[len(times[kind]) // 2]

    git_median = med("shadow")
    status_median = med("status")
    figures = []

    def vs_git(kind: str, name: str, note: str) -> None:
        if not times[kind]:
            figures.append(Figure(name, "< 1/20 of shadow git", note="watchman not installed"))
            return
        median, p95 = summarize(times[kind])
        figures.append(
            Figure(
                name,
                "< 1/20 of shadow git",
                median,
                p95,
                ratio=f"1/{git_median / median:.0f} of git ({git_median:.0f} ms)",
                within_budget=median < git_median / 20,
                note=f"{note}; vouched by {sorted(sources[kind])}, changed counted "
                f"{sorted(counts[kind])}; ms each round: {_rounded(times[kind])}",
            )
        )

    vs_git(
        "server",
        "checkpoint, 10 changed of 50,000, server whose client does not watch",
        f"server's own watcher; it started in {watcher_start_ms:.0f} ms; {warmed} listings read "
        f"ahead in {warm_ms:.0f} ms after its first checkpoint; workspace generated in "
        f"{generated_s:.1f} s; first full checkpoint {first_ms:.0f} ms, first shadow commit "
        f"{git_first_ms:.0f} ms",
    )
    vs_git(
        "watchman", "checkpoint, 10 changed of 50,000, CLI with watchman", "watchman since-query"
    )
    if cold["watchman"]:
        median, p95 = summarize(cold["watchman"])
        cpu_ratio = statistics.median(cold_cpu["watchman"]) / statistics.median(cold_cpu["pass"])
        figures.append(
            Figure(
                "checkpoint, 10 changed of 50,000, a cold `engram checkpoint create` (watchman)",
                "<= 2.5x python -c pass",
                median,
                p95,
                ratio=f"{median / python_start:.2f}x python -c pass ({python_start:.0f} ms); "
                f"{median / dev_start:.2f}x the dev venv's ({dev_start:.0f} ms); "
                f"CPU {cpu_ratio:.2f}x; {median / git_median:.2f}x shadow git",
                within_budget=median <= 2.5 * python_start,
                note="the CLI-with-watchman checkpoint above plus the process's start and "
                f"imports, alternating with python -c pass; vouched by "
                f"{sorted(cold_sources['watchman'])}; ms each round: "
                f"{_rounded(cold['watchman'])}, python -c pass {_rounded(cold['pass'])}; CPU ms "
                f"{_rounded(cold_cpu['watchman'])} and {_rounded(cold_cpu['pass'])}; load average "
                f"{os.getloadavg()[0]:.1f}",
            )
        )
    if cold["watchman-resident"]:
        median, p95 = summarize(cold["watchman-resident"])
        figures.append(
            Figure(
                "checkpoint, 10 changed of 50,000, `engram checkpoint create` through the "
                "resident server (watchman)",
                "<= 2.5x python -c pass",
                median,
                p95,
                ratio=f"{median / python_start:.2f}x python -c pass ({python_start:.0f} ms); "
                f"{median / dev_start:.2f}x the dev venv's ({dev_start:.0f} ms); client CPU "
                f"{statistics.median(cold_cpu['watchman-resident']) / statistics.median(cold_cpu['pass']):.2f}x",
                within_budget=median <= 2.5 * python_start,
                note="the installed layout's engram script, alternating with the cold process "
                f"and python -c pass; ms each round: {_rounded(cold['watchman-resident'])}; the "
                f"dev venv's python -c pass {_rounded(cold['devpass'])}; client CPU ms "
                f"{_rounded(cold_cpu['watchman-resident'])} (the forked child's CPU is the "
                f"server's); load average {os.getloadavg()[0]:.1f}",
            )
        )
    median, p95 = summarize(cold["git-resident"])
    status_cold = statistics.median(cold["status"])
    figures.append(
        Figure(
            "checkpoint, 10 changed of 50,000, `engram checkpoint create` through the resident "
            "server (no watchman, git repository)",
            "<= git status -uall",
            median,
            p95,
            ratio=f"{median / status_cold:.2f}x git status ({status_cold:.0f} ms)",
            within_budget=median <= status_cold,
            note=f"alternating with the cold process and `git status --porcelain -uall`; ms each "
            f"round: {_rounded(cold['git-resident'])}; load average {os.getloadavg()[0]:.1f}",
        )
    )
    median, p95 = summarize(cold["git"])
    figures.append(
        Figure(
            "checkpoint, 10 changed of 50,000, a cold `engram checkpoint create` (no watchman, git repository)",
            "<= git status -uall",
            median,
            p95,
            ratio=f"{median / status_cold:.2f}x git status ({status_cold:.0f} ms); CPU "
            f"{statistics.median(cold_cpu['git']) / statistics.median(cold_cpu['status']):.2f}x",
            within_budget=median <= status_cold,
            note=f"alternating with `git status --porcelain -uall`; vouched by "
            f"{sorted(cold_sources['git'])}; ms each round: {_rounded(cold['git'])}, git status "
            f"{_rounded(cold['status'])}; CPU ms {_rounded(cold_cpu['git'])} and "
            f"{_rounded(cold_cpu['status'])}; load average {os.getloadavg()[0]:.1f}",
        )
    )
    median, p95 = summarize(times["git"])
    figures.append(
        Figure(
            "checkpoint, 10 changed of 50,000, CLI without watchman (git repository)",
            "<= git status",
            median,
            p95,
            ratio=f"{median / status_median:.2f}x git status ({status_median:.0f} ms)",
            within_budget=median <= status_median,
            note=f"vouched by {sorted(sources['git'])}, changed counted {sorted(counts['git'])}"
            f"; ms each round: {_rounded(times['git'])}, git status {_rounded(times['status'])}",
        )
    )
    median, p95 = summarize(times["scan"])
    figures.append(
        Figure(
            "checkpoint, 10 changed of 50,000, CLI outside git without watchman (stat scan)",
            "-",
            median,
            p95,
            ratio=f"{median / status_median:.1f}x git status",
            note=f"vouched by {sorted(sources['scan'])}",
        )
    )
    figures.append(
        Figure(
            "shadow-git commit (peer)",
            "-",
            *summarize(times["shadow"]),
            note=f"ms each round: {_rounded(times['shadow'])}",
        )
    )
    figures.append(
        Figure("git status --untracked-files=all (peer)", "-", *summarize(times["status"]))
    )
    stored_median = sorted(stored)[len(stored) // 2]
    compressed_median = sorted(compressed)[len(compressed) // 2]
    figures.append(
        Figure(
            "bytes stored per 10-file checkpoint",
            "~ compressed changed content",
            float(stored_median),
            None,
            unit="B",
            ratio=f"{stored_median / compressed_median:.2f}x zstd of the changed files ({compressed_median} B)",
            note="new blobs + the folder listings above them (git rewrites its trees the same way)",
        )
    )
    reset_median, reset_p95 = summarize(reset_times)
    for kind, samples in rollback_times.items():
        if not samples:
            continue
        median, p95 = summarize(samples)
        figures.append(
            Figure(
                f"rollback of 100 files in 50,000 ({'watchman' if kind == 'watchman' else 'git status'} vouching)",
                "<= git reset --hard",
                median,
                p95,
                ratio=f"{median / reset_median:.2f}x git reset --hard ({reset_median:.0f} ms)",
                within_budget=median <= reset_median,
                note="plan + pre-rollback checkpoint + writes, ms each: "
                + "; ".join(f"{p:.0f} + {u:.0f} + {a:.0f}" for p, u, a in phases[kind]),
            )
        )
    reset_cold = statistics.median(cold_reset)
    median, p95 = summarize(resident_rollback)
    figures.append(
        Figure(
            "rollback of 100 files in 50,000, `engram rollback --yes` through the resident "
            "server (no watchman)",
            "<= git reset --hard",
            median,
            p95,
            ratio=f"{median / reset_cold:.2f}x git reset --hard ({reset_cold:.0f} ms)",
            within_budget=median <= reset_cold,
            note="alternating with the cold process (ABBA) and the peer's reset; ms each: "
            f"{_rounded(resident_rollback)}; the server served {served} requests in this run; "
            f"load average {os.getloadavg()[0]:.1f}",
        )
    )
    median, p95 = summarize(cold_rollback)
    figures.append(
        Figure(
            "rollback of 100 files in 50,000, a cold `engram rollback --yes` (no watchman)",
            "<= git reset --hard",
            median,
            p95,
            ratio=f"{median / reset_cold:.2f}x git reset --hard ({reset_cold:.0f} ms)",
            within_budget=median <= reset_cold,
            note="the process's start, imports, plan, pre-rollback checkpoint and writes, "
            f"alternating with the peer's reset; ms each: {_rounded(cold_rollback)}, reset "
            f"{_rounded(cold_reset)}; load average {os.getloadavg()[0]:.1f}",
        )
    )
    figures.append(
        Figure(
            "git reset --hard of a shadow commit (peer)",
            "-",
            reset_median,
            reset_p95,
            note=f"on a copy of the workspace with its own index; ms each: {_rounded(reset_times)}",
        )
    )
    figures.append(
        Figure(
            f"checkpoint store after {ROUNDS} incremental rounds ({rounds_checkpoints} checkpoints)",
            "<= 1.3x shadow .git",
            rounds_store_bytes / 1e6,
            None,
            unit="MB",
            ratio=f"{rounds_store_bytes / rounds_shadow_bytes:.2f}x the shadow .git "
            f"({rounds_shadow_bytes / 1e6:.1f} MB)",
            within_budget=rounds_store_bytes <= 1.3 * rounds_shadow_bytes,
            note="whole .engram folder (database after a WAL checkpoint) against the shadow "
            "git directory's bytes (objects, index), holding the same states",
        )
    )
    both = rounds_store_bytes + own_index_bytes
    figures.append(
        Figure(
            "the store and engram's copy of git's index (.git/engram/)",
            "-",
            both / 1e6,
            None,
            unit="MB",
            ratio=f"{both / rounds_shadow_bytes:.2f}x the shadow .git "
            f"(index copy {own_index_bytes / 1e6:.1f} MB)",
            note="the copy of git's index lets git status use an untracked cache without "
            "writing the user's index; it is the size of git's own index",
        )
    )

    figures.append(
        Figure(
            f"garbage collection of the checkpoint store ({kept} checkpoints of 50,000 files)",
            "-",
            gc_ms,
            None,
            note=f"{gc_freed:,} bytes freed; runs inside a checkpoint once an eighth of "
            "checkpoints.max_count were removed",
        )
    )

    def cpu_med(kind: str) -> float:
        return statistics.median(cpu[kind]) if cpu[kind] else float("nan")

    load = os.getloadavg()[0]
    for kind, name, peer, budget in (
        ("server", "server whose client does not watch", "shadow", 1 / 20),
        ("watchman", "CLI with watchman", "shadow", 1 / 20),
        ("git", "CLI without watchman (git repository)", "status", 1.0),
        ("rollback-watchman", "rollback of 100 (watchman)", "reset", 1.0),
        ("rollback-git", "rollback of 100 (git status)", "reset", 1.0),
    ):
        if not cpu[kind]:
            continue
        mine, theirs = cpu_med(kind), cpu_med(peer)
        figures.append(
            Figure(
                f"CPU time: {name}",
                f"<= {'1/20 of ' if budget < 1 else ''}{'git status' if peer == 'status' else 'shadow commit' if peer == 'shadow' else 'git reset --hard'}",
                mine,
                None,
                ratio=f"{mine / theirs:.2f}x the peer's CPU time ({theirs:.0f} ms)",
                within_budget=mine <= theirs * budget,
                note=f"this process + the git it waited for (watchman's daemon not counted); load average {load:.1f}",
            )
        )
    return figures
