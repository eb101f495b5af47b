"""Transcript ingest against its floor (issue 32): Python + orjson reading the same lines.

The floor reads every file, splits it into lines and decodes each with orjson: what any reader
of these files pays before it does anything with them. It is measured alternately with each
ingest in the same run (floor, ingest, floor, ingest ...), in this process, so machine load hits
both alike; CPU time is reported beside wall time (on a shared machine it moves less).

- Real transcripts: every `*.jsonl` under `ENGRAM_REAL_CLAUDE_TRANSCRIPTS` (public Claude Code
  sessions people keep in their `~/.claude` backups; none carries a license, so none is in this
  repository: docs/benchmarks.md says how the development corpus was assembled). Ingested into
  a fresh store in one call (`engram ingest claude-code FILE...`, as a person runs it) and file
  by file (one `engram ingest claude-code FILE` per file, into one store), both in this process
  (Python's start is not the ingest's cost).
- The same files as a person or a script ingests them one at a time: one `engram ingest`
  process per file (the first ENGRAM_BENCH_INGEST_COMMAND_FILES, default 60), cold and through
  the resident server, installed as users run it (tests/bench/bench_hooks.py).
- An old transcript replayed in a 50,000-file git workspace against the same in a small one: a
  turn of a months-old session takes no checkpoint of today's files, so the workspace's size
  does not matter (it took a full checkpoint before).
"""

from __future__ import annotations

import contextlib
import io
import os
import shutil
import statistics
import subprocess
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from tests.bench.harness import Figure

REAL = os.environ.get("ENGRAM_REAL_CLAUDE_TRANSCRIPTS")
ROUNDS = int(os.environ.get("ENGRAM_BENCH_INGEST_ROUNDS", "3"))
# The budget of docs/design.md section 7: the ingest within 3x the parse floor.
FLOOR_RATIO = 3.0
# The files ingested by one `engram ingest` process each (cold, and through the resident server).
COMMAND_FILES = int(os.environ.get("ENGRAM_BENCH_INGEST_COMMAND_FILES", "60"))
# The old transcript replayed in the large workspace (issue 32 measured one of 3.5 MB).
REPLAY_MB = 3.5


def _parse_floor(files: list[Path]) -> int:
    """Read and decode every line as JSON with orjson; returns the lines decoded."""
    import orjson

    decoded = 0
    for path in files:
        for line in path.read_bytes().split(b"\n"):
            if line.strip():
                with contextlib.suppress(orjson.JSONDecodeError):
                    orjson.loads(line)
                    decoded += 1
    return decoded


def _timed(fn: Callable[[], Any]) -> tuple[float, float]:
    """(wall seconds, CPU seconds) of fn()."""
    cpu, wall = time.process_time(), time.perf_counter()
    fn()
    return time.perf_counter() - wall, time.process_time() - cpu


def _workspace(parent: Path, name: str) -> Path:
    root = parent / name
    root.mkdir(parents=True)
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    return root


def _as_a_new_process() -> None:
    """Forget what earlier ingests left in this process, as a new `engram` process starts: the
    per-process state (tests/engram_in_process.py) and the remembered answers of pure functions
    (each text's redaction, each error's analysis). Left in, a second ingest of the same files
    found every text redacted already (the 4 M characters remembered hold the whole corpus's
    stored texts) and measured an ingest no user runs."""
    from memory_core import redact
    from memory_core.agents import failures
    from memory_core.gotchas import tool_errors, track
    from tests.engram_in_process import forget_process_state

    forget_process_state()
    redact._remembered.clear()
    redact._remembered_chars = 0
    track._analysis.cache_clear()
    tool_errors.key_error.cache_clear()
    failures.tests_run_by.cache_clear()


def _engram(root: Path, *args: str) -> None:
    """One `engram ...` command in this process, in `root`, its output dropped, as a new process
    would run it (imports and compiled patterns aside)."""
    from memory_core.cli.main import main

    _as_a_new_process()
    here = Path.cwd()
    os.chdir(root)
    try:
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
            code = main(list(args))
    finally:
        os.chdir(here)
    if code != 0:
        raise RuntimeError(f"engram {' '.join(args[:3])} ... exited {code}")


def _checkpoints(root: Path) -> int:
    from memory_core.store import Store

    with Store.open(root) as store:
        row = store.query_one("SELECT COUNT(*) FROM checkpoints")
        return int(row[0]) if row else 0


def _turns(root: Path, transcript: Path) -> int:
    """The turns an ingest of `transcript` records (counted in a throwaway store beside)."""
    from memory_core.agents.transcripts import ingest_file
    from memory_core.store import Store

    scratch = root.parent / "count-turns"
    scratch.mkdir(exist_ok=True)
    with Store.init(scratch) as store:
        return ingest_file(store, transcript).turns


def _statements(root: Path, files: list[Path]) -> tuple[int, int]:
    """(SQL statements, commits) of one ingest of `files` in one call into `root` (untimed:
    SQLite's trace callback sees every statement, each row of an `executemany` too)."""
    import sqlite3

    counts = {"statements": 0, "commits": 0}

    def trace(sql: str) -> None:
        counts["statements"] += 1
        if sql.lstrip()[:6].upper() == "COMMIT":
            counts["commits"] += 1

    connect = sqlite3.connect

    def traced(*args: Any, **kwargs: Any) -> Any:
        connection = connect(*args, **kwargs)
        connection.set_trace_callback(trace)
        return connection

    sqlite3.connect = traced
    try:
        _engram(root, "ingest", "claude-code", *map(str, files))
    finally:
        sqlite3.connect = connect
    return counts["statements"], counts["commits"]


def real_transcripts() -> list[Figure]:
    name = "transcript ingest of real transcripts"
    if not REAL or not Path(REAL).is_dir():
        return [
            Figure(
                name,
                f"<= {FLOOR_RATIO:.0f}x the orjson parse floor",
                note="not measured: "
                "set ENGRAM_REAL_CLAUDE_TRANSCRIPTS to a folder of real transcripts",
            )
        ]
    files = sorted(Path(REAL).rglob("*.jsonl"))
    mb = sum(f.stat().st_size for f in files) / 1e6
    with tempfile.TemporaryDirectory() as tmp:
        parent = Path(tmp)
        # Imports and first compilations out of the way (a cold process is not what is measured).
        _engram(_workspace(parent, "warm"), "ingest", "claude-code", str(files[0]))
        samples: dict[str, list[tuple[float, float]]] = {k: [] for k in ("floor", "one", "each")}
        floors: dict[str, list[tuple[float, float]]] = {"one": [], "each": []}
        for n in range(ROUNDS):
            for kind in ("one", "each"):
                root = _workspace(parent, f"{kind}-{n}")
                floor = _timed(lambda: _parse_floor(files))
                floors[kind].append(floor)
                samples["floor"].append(floor)
                if kind == "one":
                    took = _timed(
                        lambda root=root: _engram(root, "ingest", "claude-code", *map(str, files))
                    )
                else:
                    took = _timed(
                        lambda root=root: [
                            _engram(root, "ingest", "claude-code", str(f)) for f in files
                        ]
                    )
                samples[kind].append(took)
                shutil.rmtree(root, ignore_errors=True)
        statements, commits = _statements(_workspace(parent, "counted"), files)
    load = os.getloadavg()[0]
    floor_wall = statistics.median(s[0] for s in samples["floor"])
    figures = [
        Figure(
            f"orjson parse floor: {len(files)} real transcripts ({mb:.1f} MB) (peer)",
            "-",
            mb / floor_wall,
            None,
            unit="MB/s",
            note=f"median of {len(samples['floor'])} reads, alternating with the ingests; "
            f"{mb / statistics.median(s[1] for s in samples['floor']):.0f} MB per CPU second",
        )
    ]
    for kind, label in (("one", "in one call"), ("each", "file by file")):
        # Each ingest against the floor read just before it.
        ratios = [i[0] / f[0] for i, f in zip(samples[kind], floors[kind], strict=True)]
        cpu_ratios = [i[1] / f[1] for i, f in zip(samples[kind], floors[kind], strict=True)]
        wall = statistics.median(s[0] for s in samples[kind])
        ratio = statistics.median(ratios)
        figures.append(
            Figure(
                f"{name} ({len(files)} files, {mb:.1f} MB), {label}",
                f"<= {FLOOR_RATIO:.0f}x the orjson parse floor",
                mb / wall,
                None,
                unit="MB/s",
                ratio=f"{ratio:.1f}x the floor (CPU {statistics.median(cpu_ratios):.1f}x)",
                within_budget=ratio <= FLOOR_RATIO,
                note=f"s each: {', '.join(f'{s[0]:.2f}' for s in samples[kind])}; "
                f"floor before each: {', '.join(f'{f[0]:.3f}' for f in floors[kind])}; "
                + (f"{statements:,} SQL statements, {commits:,} commits; " if kind == "one" else "")
                + f"load average {load:.1f}",
            )
        )
    return figures


def _commands(engram: Path, root: Path, files: list[Path], env: dict[str, str]) -> None:
    """One `engram ingest claude-code FILE` process per file, in `root`, as a person runs it."""
    for path in files:
        done = subprocess.run(
            [str(engram), "ingest", "claude-code", str(path)],
            cwd=root,
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
        )
        if done.returncode != 0:
            raise RuntimeError(
                f"engram ingest {path.name} exited {done.returncode}: {done.stderr!r}"
            )


def file_by_file_as_commands() -> list[Figure]:
    """The first COMMAND_FILES real transcripts, one `engram ingest` process per file, the way a
    person or a script runs it: cold processes, and through the resident server (each command
    handed to a fork of a process that has imported engram; the store's close after the answer),
    against the floor of the same files and `python -c pass`, alternately in each round."""
    from tests.bench.bench_hooks import ResidentServer, _env, installed_engram

    name = "transcript ingest, one `engram ingest` process per file"
    if not REAL or not Path(REAL).is_dir():
        return [Figure(name, "-", note="not measured: set ENGRAM_REAL_CLAUDE_TRANSCRIPTS")]
    files = sorted(Path(REAL).rglob("*.jsonl"))[:COMMAND_FILES]
    mb = sum(f.stat().st_size for f in files) / 1e6
    with tempfile.TemporaryDirectory() as tmp:
        parent = Path(tmp)
        python, engram = installed_engram(parent / "venv")
        cold_env = _env()
        server = ResidentServer(engram, parent / "sockets")
        try:
            _commands(engram, _workspace(parent, "warm"), files[:2], server.env)
            served_before = server.requests()
            took: dict[str, list[float]] = {"floor": [], "pass": [], "cold": [], "resident": []}
            for n in range(ROUNDS):
                took["floor"].append(_timed(lambda: _parse_floor(files))[0])
                took["pass"].append(
                    _timed(lambda: subprocess.run([str(python), "-c", "pass"], env=cold_env))[0]
                )
                for kind, env in (("cold", cold_env), ("resident", server.env)):
                    root = _workspace(parent, f"{kind}-{n}")
                    took[kind].append(
                        _timed(lambda root=root, env=env: _commands(engram, root, files, env))[0]
                    )
                    shutil.rmtree(root, ignore_errors=True)
            served = server.requests() - served_before
        finally:
            server.stop()
    floor = statistics.median(took["floor"])
    python_start = statistics.median(took["pass"]) * 1000
    figures = []
    for kind, label in (("cold", "cold processes"), ("resident", "through the resident server")):
        wall = statistics.median(took[kind])
        figures.append(
            Figure(
                f"{name} ({len(files)} files, {mb:.1f} MB), {label}",
                f"<= {FLOOR_RATIO:.0f}x the orjson parse floor",
                wall / len(files) * 1000,
                None,
                unit="ms per file",
                ratio=f"{wall / floor:.1f}x the floor ({floor / len(files) * 1000:.2f} ms per "
                f"file); {wall / len(files) * 1000 / python_start:.1f}x `python -c pass`",
                within_budget=wall <= FLOOR_RATIO * floor,
                note=f"s each: {', '.join(f'{s:.2f}' for s in took[kind])}; `python -c pass` "
                f"{python_start:.0f} ms; "
                + (f"{served} commands served by the server; " if kind == "resident" else "")
                + f"load average {os.getloadavg()[0]:.1f}",
            )
        )
    return figures


def _old_transcript(path: Path, cwd: Path) -> Path:
    """A transcript of REPLAY_MB dated 2026-03-02 with about 60 turns (real files of that size
    in the development corpus hold fewer than `checkpoints.every_n_turns`, 20, and never made
    a checkpoint): bench_agents' generator, Claude Code's documented line shapes."""
    from tests.bench.bench_agents import _transcript

    _transcript(path, int(REPLAY_MB * 1024 * 1024), cwd)
    return path


def replay_in_a_large_workspace() -> list[Figure]:
    from memory_core.store import Store
    from tests.bench import bench_checkpoints

    with tempfile.TemporaryDirectory() as tmp:
        parent = Path(tmp)
        large = _workspace(parent, "large")
        bench_checkpoints._generate(large, bench_checkpoints._paths())
        subprocess.run(["git", "-C", str(large), "add", "-A"], check=True)
        subprocess.run(
            [
                "git",
                "-C",
                str(large),
                "-c",
                "user.name=b",
                "-c",
                "user.email=b@example.invalid",
                "-c",
                "gc.auto=0",
                "commit",
                "-q",
                "-m",
                "p",
            ],
            check=True,
        )
        # The project's store, with no checkpoint yet: the first ingest of a project's history
        # (a due checkpoint was then a first, full one: seconds in 50,000 files).
        Store.init(large).close()
        small = _workspace(parent, "small")
        (small / "app.py").write_text("print('hello')\n")
        transcript = _old_transcript(parent / "old.jsonl", large)
        _engram(_workspace(parent, "warm"), "ingest", "claude-code", str(transcript))
        took: dict[str, list[float]] = {"small": [], "large": []}
        made: dict[str, list[int]] = {"small": [], "large": []}
        for n in range(ROUNDS):
            for kind, root in (("small", small), ("large", large)):
                copy = parent / f"{kind}-{n}.jsonl"  # a new file each time: read from the start
                shutil.copy(transcript, copy)
                before = _checkpoints(root) if (root / ".engram").is_dir() else 0
                wall, _ = _timed(
                    lambda root=root, copy=copy: _engram(root, "ingest", "claude-code", str(copy))
                )
                took[kind].append(wall)
                made[kind].append(_checkpoints(root) - before)
                # Each round ingests the same session again into a store that counted it: only
                # the first round has turns to replay; the later ones read the file and find
                # every line counted. Fresh session ids would need a rewritten file, so the
                # store is reset instead.
                shutil.rmtree(root / ".engram", ignore_errors=True)
                if kind == "large":
                    Store.init(large).close()
        size = transcript.stat().st_size / 1e6
        turns = _turns(large, transcript)
    small_s = statistics.median(took["small"])
    large_s = statistics.median(took["large"])
    return [
        Figure(
            f"ingest of one old {size:.1f} MB transcript, 50,000-file workspace",
            "as in a small workspace; no checkpoint",
            large_s * 1000,
            None,
            ratio=f"{large_s / small_s:.2f}x the small workspace ({small_s * 1000:.0f} ms)",
            within_budget=large_s <= 1.5 * small_s and not any(made["large"]),
            note=f"{turns} turns replayed (a checkpoint due every 20); checkpoints made per "
            f"ingest: {made['large']} (small: {made['small']}); ms each: "
            f"{', '.join(f'{s * 1000:.0f}' for s in took['large'])} (small: "
            f"{', '.join(f'{s * 1000:.0f}' for s in took['small'])}); load average "
            f"{os.getloadavg()[0]:.1f}",
        )
    ]


def run() -> list[Figure]:
    return real_transcripts() + file_by_file_as_commands() + replay_in_a_large_workspace()


if __name__ == "__main__":  # (the replay alone: `python -m tests.bench.bench_ingest`)
    for figure in replay_in_a_large_workspace():
        print(figure.row(), figure.note)
