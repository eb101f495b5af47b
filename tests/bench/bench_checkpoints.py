"""Checkpoints (DESIGN section 7): 10 changed files in a 50,000-file workspace, against a
shadow-git commit of the same tree (`git add -A` + `git commit` with a separate GIT_DIR and
GIT_WORK_TREE, as Cline and Roo Code checkpoint); bytes stored against the compressed size of
the changed content; rollback of 100 files.

Two engram figures: with a change journal (what the language server keeps while it watches
the workspace: only the changed paths are looked at) and without one (a full stat scan through
the stat cache, reading only the files whose stat changed), so both paths are visible.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

from memory_core import checkpoints, config
from memory_core.store import Store
from tests.bench.harness import Figure, summarize

PACKAGES = 10
MODULES_PER_PACKAGE = 50
FILES_PER_MODULE = 100  # 10 x 50 x 100 = 50,000 files
CHANGED = 10
ROUNDS = 5
ROLLBACK_FILES = 100


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
        shutil.rmtree(tmp, ignore_errors=True)


def _run(tmp: Path) -> list[Figure]:
    root = tmp / "ws"
    root.mkdir()
    paths = _paths()
    start = time.perf_counter()
    _generate(root, paths)
    generated_s = time.perf_counter() - start

    store = Store.init(root)
    settings = config.load(root)
    start = time.perf_counter()
    checkpoints.create(store, "baseline", settings=settings)
    first_ms = (time.perf_counter() - start) * 1000

    env = {
        **os.environ,
        "GIT_DIR": str(tmp / "shadow.git"),
        "GIT_WORK_TREE": str(root),
        "GIT_AUTHOR_NAME": "bench",
        "GIT_AUTHOR_EMAIL": "bench@example.invalid",
        "GIT_COMMITTER_NAME": "bench",
        "GIT_COMMITTER_EMAIL": "bench@example.invalid",
    }
    _git(env, "init", "-q")
    (tmp / "shadow.git" / "info").mkdir(exist_ok=True)
    (tmp / "shadow.git" / "info" / "exclude").write_text(".engram/\n")
    start = time.perf_counter()
    _git(env, "add", "-A")
    _git(env, "commit", "-q", "-m", "baseline")
    git_first_ms = (time.perf_counter() - start) * 1000

    journal = checkpoints.ChangeJournal(started_at=time.time() - 3600)
    engram_journal: list[float] = []
    engram_scan: list[float] = []
    git_times: list[float] = []
    stored: list[int] = []
    git_stored: list[int] = []
    compressed: list[int] = []
    import zstandard

    compressor = zstandard.ZstdCompressor(level=3)
    for round_no in range(ROUNDS):
        # Journal-driven capture.
        changed = paths[round_no * 997 :: len(paths) // CHANGED][:CHANGED]
        # Checkpoints come seconds apart in real use; the journal keeps a second of slack
        # before each checkpoint (a write stamped just before it may not have been seen), so
        # back-to-back rounds would each re-examine the previous round's files too.
        time.sleep(1.1)
        _touch(root, changed, round_no)
        journal.mark(changed)
        start = time.perf_counter()
        made = checkpoints.create(store, settings=settings, journal=journal)
        engram_journal.append((time.perf_counter() - start) * 1000)
        assert made["mode"] == "incremental" and made["changed"] == CHANGED, made
        stored.append(int(made["added_bytes"]))
        compressed.append(
            sum(len(compressor.compress((root / rel).read_bytes())) for rel in changed)
        )
        loose_before = _git_loose_bytes(env)
        start = time.perf_counter()
        _git(env, "add", "-A")
        _git(env, "commit", "-q", "-m", f"round {round_no}")
        git_times.append((time.perf_counter() - start) * 1000)
        git_stored.append(_git_loose_bytes(env) - loose_before)

        # Full-scan capture (no watcher): a fresh set of 10 changed files.
        changed = paths[round_no * 991 + 500 :: len(paths) // CHANGED][:CHANGED]
        _touch(root, changed, round_no)
        start = time.perf_counter()
        made = checkpoints.create(store, settings=settings)
        engram_scan.append((time.perf_counter() - start) * 1000)
        _git(env, "add", "-A")
        _git(env, "commit", "-q", "-m", f"round {round_no} scan")

    # Rollback of 100 files: change them, then roll back to the checkpoint before.
    target = checkpoints.create(store, "before-100", settings=settings)
    hundred = paths[7 :: len(paths) // ROLLBACK_FILES][:ROLLBACK_FILES]
    _touch(root, hundred, 99)
    start = time.perf_counter()
    result = checkpoints.rollback(store, target["id"], settings=settings)
    rollback_ms = (time.perf_counter() - start) * 1000
    assert len(result["restored"]) == ROLLBACK_FILES, result
    plan_start = time.perf_counter()
    checkpoints.plan_rollback(store, target["id"], settings=settings)
    plan_ms = (time.perf_counter() - plan_start) * 1000
    store.close()

    journal_median, journal_p95 = summarize(engram_journal)
    scan_median, scan_p95 = summarize(engram_scan)
    git_median, git_p95 = summarize(git_times)
    stored_median = sorted(stored)[len(stored) // 2]
    compressed_median = sorted(compressed)[len(compressed) // 2]
    git_stored_median = sorted(git_stored)[len(git_stored) // 2]
    return [
        Figure(
            "checkpoint, 10 changed of 50,000 files (journal)",
            "< 1/20 of shadow git",
            journal_median,
            journal_p95,
            ratio=f"1/{git_median / journal_median:.0f} of git ({git_median:.0f} ms)",
            within_budget=journal_median < git_median / 20,
            note=f"workspace generated in {generated_s:.1f} s; first full checkpoint {first_ms:.0f} ms, "
            f"first shadow-git commit {git_first_ms:.0f} ms",
        ),
        Figure(
            "checkpoint, 10 changed of 50,000 files (stat scan)",
            "< 1/20 of shadow git",
            scan_median,
            scan_p95,
            ratio=f"1/{git_median / scan_median:.1f} of git",
            within_budget=scan_median < git_median / 20,
            note="no watcher: every file is lstat'ed (stat cache), only changed files are read",
        ),
        Figure("shadow-git commit (peer)", "-", git_median, git_p95),
        Figure(
            "bytes stored per 10-file checkpoint",
            "~ compressed changed content",
            float(stored_median),
            None,
            unit="B",
            ratio=f"{stored_median / compressed_median:.2f}x zstd of the changed files ({compressed_median} B)",
            within_budget=None,
            note="stored = new blobs + the folder listings above them (git rewrites its trees the same "
            f"way: its commit added {git_stored_median} B of loose objects, counted in whole KiB)",
        ),
        Figure(
            "rollback of 100 files in 50,000",
            "-",
            rollback_ms,
            None,
            note=f"includes the pre-rollback checkpoint and the scan of the workspace; planning alone {plan_ms:.0f} ms",
        ),
    ]
