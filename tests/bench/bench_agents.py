"""Agent integration: transcript ingest MB/s (hook cold-process latency, every event of every
agent against `python -c pass`, is measured by bench_hooks).

Ingest reads a generated ~50 MB Claude Code transcript (the documented line shapes: split
assistant responses, Read/Grep/Edit/Write/Bash tool uses with realistic outputs, failures,
meta and progress lines) into a fresh store, and reports MB/s, beside ccusage (the usage report
Claude Code users run, installed with npm on first use) reading the same transcript.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

from tests.bench.harness import Figure

TRANSCRIPT_MB = int(os.environ.get("ENGRAM_BENCH_TRANSCRIPT_MB", "50"))
# Full ingests of the transcript, each into a fresh store: the median is reported (one run on a
# shared machine says more about the neighbours than about the ingest).
INGEST_RUNS = int(os.environ.get("ENGRAM_BENCH_INGEST_RUNS", "3"))
# Issue 16: half of ccusage's rate on the same transcript or better; the issue measured ccusage
# at 86-109 MB/s, hence 45 MB/s. Both are reported: the rate, and the ratio to ccusage in the
# same run (machine speed here varies by half from one day to the next; the ratio does not).
INGEST_TARGET_MB_S = 45.0
INGEST_TARGET_RATIO = 0.5
# The peer: ccusage, the usage report Claude Code users run, reading the same transcript.
# 18.0.11 is its last release in plain JavaScript; from 19 on it runs a native binary, which
# for linux-x64 is not published (20.0.26) or reads no usage from this transcript (20.0.11).
CCUSAGE_VERSION = "18.0.11"
CCUSAGE_DIR = Path.home() / ".cache" / "engram-bench" / f"ccusage-{CCUSAGE_VERSION}"
# Transcripts of different sessions ingested one after the other into the same store.
GROWTH_TRANSCRIPTS = 4


_CPU: dict[str, list[float]] = {}


def _transcript(path: Path, target_bytes: int, cwd: Path) -> int:
    """Write a realistic transcript of about `target_bytes`; returns its size."""
    envelope = {
        "isSidechain": False,
        "userType": "external",
        "cwd": str(cwd),
        "sessionId": "bench-ingest",
        "version": "2.1.63",
        "gitBranch": "main",
    }
    # A source file of 200 lines (about 10 KB), the size Read and Edit results typically carry.
    source = "".join(
        f"    line_{i} = compute(value_{i}, factor={i}, label='item {i}')  # keep\n"
        for i in range(200)
    )
    n = 0
    size = 0
    with path.open("w", encoding="utf-8") as out:

        def emit(obj: dict) -> None:
            nonlocal n, size
            n += 1
            obj.update(envelope)
            obj["uuid"] = f"u{n}"
            obj["timestamp"] = (
                f"2026-03-02T{9 + n // 360000 % 10:02d}:{n // 6000 % 60:02d}:{n // 100 % 60:02d}.{n % 100:02d}0Z"
            )
            line = json.dumps(obj) + "\n"
            out.write(line)
            size += len(line)

        turn = 0
        while size < target_bytes:
            turn += 1
            emit(
                {
                    "type": "user",
                    "message": {
                        "role": "user",
                        "content": f"Please refactor module {turn} and keep the tests green.",
                    },
                }
            )
            for step in range(6):
                mid = f"msg_{turn}_{step}"
                tool = ("Read", "Grep", "Edit", "Bash", "Write", "Bash")[step]
                tid = f"toolu_{turn}_{step}"
                file_path = str(cwd / f"src/mod_{turn % 200}.py")
                tool_input: dict = {
                    "Read": {"file_path": file_path},
                    "Grep": {"pattern": "compute", "path": str(cwd)},
                    "Edit": {
                        "file_path": file_path,
                        "old_string": "factor=1)",
                        "new_string": "factor=2)",
                    },
                    "Bash": {"command": f"pytest tests/test_mod_{turn % 50}.py -q"},
                    "Write": {
                        "file_path": str(cwd / f"src/new_{turn}.py"),
                        "content": source[:1500],
                    },
                }[tool]
                usage = {
                    "input_tokens": 5,
                    "cache_creation_input_tokens": 200,
                    "cache_read_input_tokens": 20000,
                }
                blocks = [
                    {"type": "thinking", "thinking": "", "signature": "Eq" + "x" * 200},
                    {
                        "type": "text",
                        "text": f"Step {step}: working on {tool.lower()} for module {turn}. " * 3,
                    },
                    {"type": "tool_use", "id": tid, "name": tool, "input": tool_input},
                ]
                for index, block in enumerate(blocks):
                    last = index == len(blocks) - 1
                    emit(
                        {
                            "type": "assistant",
                            "requestId": f"req_{mid}",
                            "message": {
                                "id": mid,
                                "type": "message",
                                "role": "assistant",
                                "model": "claude-sonnet-4-6",
                                "content": [block],
                                "stop_reason": None,  # null on every line, as in real transcripts
                                "stop_sequence": None,
                                "usage": {**usage, "output_tokens": 120 if last else 1},
                            },
                        }
                    )
                failed = tool == "Bash" and step == 3 and turn % 4 == 0
                result: object
                content: str
                if tool == "Read":
                    content = source
                    result = {
                        "type": "text",
                        "file": {
                            "filePath": file_path,
                            "content": source,
                            "numLines": 200,
                            "startLine": 1,
                            "totalLines": 200,
                        },
                    }
                elif tool == "Edit":
                    content = "The file has been updated."
                    result = {
                        "filePath": file_path,
                        "oldString": "factor=1)",
                        "newString": "factor=2)",
                        "originalFile": source,
                        "structuredPatch": [
                            {
                                "oldStart": 2,
                                "oldLines": 1,
                                "newStart": 2,
                                "newLines": 1,
                                "lines": ["-a", "+b"],
                            }
                        ],
                    }
                elif tool == "Bash" and failed:
                    content = (
                        "Exit code 1\nFAILED tests/test_mod.py::test_x - AssertionError\n"
                        + "E   assert 1 == 2\n" * 20
                    )
                    result = "Error: " + content
                elif tool == "Bash":
                    content = "." * 200 + "\n40 passed in 1.2s"
                    result = {
                        "stdout": content,
                        "stderr": "",
                        "interrupted": False,
                        "isImage": False,
                    }
                else:
                    content = "ok"
                    result = (
                        {"mode": "files_with_matches", "filenames": [file_path], "numFiles": 1}
                        if tool == "Grep"
                        else {"type": "create", "filePath": tool_input["file_path"]}
                    )
                block = {"tool_use_id": tid, "type": "tool_result", "content": content}
                if failed:
                    block["is_error"] = True
                emit(
                    {
                        "type": "user",
                        "message": {"role": "user", "content": [block]},
                        "toolUseResult": result,
                    }
                )
                emit(
                    {
                        "type": "progress",
                        "data": {"type": "bash_progress", "output": "..."},
                        "toolUseID": tid,
                    }
                )
            emit(
                {
                    "type": "assistant",
                    "requestId": f"req_end_{turn}",
                    "message": {
                        "id": f"msg_end_{turn}",
                        "type": "message",
                        "role": "assistant",
                        "model": "claude-sonnet-4-6",
                        "content": [{"type": "text", "text": "Done with this module; tests pass."}],
                        "stop_reason": None,
                        "stop_sequence": None,
                        "usage": {"input_tokens": 5, "output_tokens": 300},
                    },
                }
            )
    return size


def _ingest_once(path: Path, root: Path, *, effects: bool) -> tuple[float, float, Any]:
    """(seconds, seconds of a second run with nothing new, stats) for one fresh store."""
    from unittest import mock

    from memory_core.agents import record
    from memory_core.agents.transcripts import ingest_file
    from memory_core.store import Store

    shutil.rmtree(root / ".engram", ignore_errors=True)
    store = Store.init(root)
    try:
        # Without effects: the calls into the other areas (sessions, evolution, gotchas,
        # checkpoints) do nothing, which measures the parse and the de-duplication ledger alone
        # (what the agents area itself costs).
        patches = (
            []
            if effects
            else [
                mock.patch.object(record, name, lambda *args, **kwargs: None)
                for name in ("start_session", "apply_outcome", "record_file_changes", "apply_turns")
            ]
        )
        for patch in patches:
            patch.start()
        try:
            start = time.perf_counter()
            cpu_start = time.process_time()
            stats = ingest_file(store, path)
            seconds = time.perf_counter() - start
            _CPU["ingest" if effects else "ingest-alone"] = [time.process_time() - cpu_start]
            again = time.perf_counter()
            ingest_file(store, path)
            noop = time.perf_counter() - again
        finally:
            for patch in patches:
                patch.stop()
    finally:
        store.close()
    return seconds, noop, stats


def _ccusage() -> Path | None:
    """ccusage's command, installed with npm on first use; None without npm or the registry."""
    cli = CCUSAGE_DIR / "node_modules" / ".bin" / "ccusage"
    if not cli.exists():
        npm = shutil.which("npm")
        if npm is None:
            return None
        CCUSAGE_DIR.mkdir(parents=True, exist_ok=True)
        with contextlib.suppress(OSError, subprocess.TimeoutExpired):  # no peer, no comparison
            subprocess.run(
                [
                    npm,
                    "install",
                    "--silent",
                    "--no-audit",
                    "--no-fund",
                    "--prefix",
                    str(CCUSAGE_DIR),
                    f"ccusage@{CCUSAGE_VERSION}",
                ],
                capture_output=True,
                timeout=600,
                check=False,
            )
    return cli if cli.exists() else None


def _ccusage_runs(transcript: Path, tmp: Path, runs: int) -> list[float] | None:
    """Seconds of `ccusage daily` over the transcript alone (Node's start included, as a user
    pays it), or None when ccusage cannot run or read no tokens (then there is no comparison)."""
    cli = _ccusage()
    if cli is None:
        return None
    project = tmp / "claude-config" / "projects" / "-bench-project"
    project.mkdir(parents=True, exist_ok=True)
    os.link(transcript, project / transcript.name)
    env = {**os.environ, "CLAUDE_CONFIG_DIR": str(project.parent.parent)}
    seconds = []
    for _ in range(runs):
        start = time.perf_counter()
        try:
            done = subprocess.run(
                [str(cli), "daily", "--json", "--offline"],
                capture_output=True,
                env=env,
                timeout=600,
                check=False,
            )
        except (OSError, subprocess.TimeoutExpired):
            return None
        seconds.append(time.perf_counter() - start)
        try:
            tokens = json.loads(done.stdout)["totals"]["totalTokens"]
        except (ValueError, KeyError, TypeError):
            return None
        if done.returncode != 0 or not tokens:
            return None
    return seconds


def ingest_throughput() -> list[Figure]:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "project"
        (root / "src").mkdir(parents=True)
        path = Path(tmp) / "bench-ingest.jsonl"
        size = _transcript(path, TRANSCRIPT_MB * 1024 * 1024, root)
        alone, _, _ = _ingest_once(path, root, effects=False)
        runs = []
        cpu = []
        for _ in range(max(1, INGEST_RUNS)):
            seconds, noop, stats = _ingest_once(path, root, effects=True)
            runs.append(seconds)
            cpu.append(_CPU["ingest"][0])
        peer_runs = _ccusage_runs(path, Path(tmp), max(1, INGEST_RUNS))
    seconds = sorted(runs)[len(runs) // 2]
    _CPU["ingest"] = [sorted(cpu)[len(cpu) // 2]]
    noop_ms = noop * 1000
    mb = size / (1024 * 1024)
    rate = mb / seconds
    load = os.getloadavg()[0]
    if peer_runs is None:
        peer = [
            Figure(
                f"ccusage {CCUSAGE_VERSION} daily on the same transcript (peer)",
                "-",
                None,
                None,
                note="not measured: npm or the registry is not reachable, or ccusage read nothing",
            )
        ]
    else:
        peer_rate = mb / sorted(peer_runs)[len(peer_runs) // 2]
        peer = [
            Figure(
                f"ccusage {CCUSAGE_VERSION} daily on the same transcript (peer)",
                "-",
                peer_rate,
                None,
                unit="MB/s",
                note=f"median of {len(peer_runs)} runs ({', '.join(f'{mb / r:.1f}' for r in peer_runs)} MB/s)",
            ),
            Figure(
                "transcript ingest against ccusage",
                f">= {INGEST_TARGET_RATIO}x ccusage's rate",
                rate,
                None,
                unit="MB/s",
                ratio=f"{rate / peer_rate:.2f}x",
                within_budget=rate / peer_rate >= INGEST_TARGET_RATIO,
                note="ccusage only sums tokens; the ingest also builds sessions, turns, file history and gotchas",
            ),
        ]
    return [
        Figure(
            "transcript ingest, parse + de-duplication ledger only",
            "> 20 MB/s",
            mb / alone,
            None,
            unit="MB/s",
            within_budget=mb / alone > 20,
            note=(
                "the other areas' modules patched out: what reading and de-duplicating costs by "
                f"itself; {mb / _CPU['ingest-alone'][0]:.1f} MB per CPU second"
            ),
        ),
        Figure(
            f"transcript ingest ({mb:.0f} MB, {stats.lines:,} lines, {stats.tool_calls:,} tool calls)",
            f">= {INGEST_TARGET_MB_S:.0f} MB/s",
            rate,
            None,
            unit="MB/s",
            within_budget=rate >= INGEST_TARGET_MB_S,
            note=(
                f"median of {len(runs)} runs ({', '.join(f'{mb / r:.1f}' for r in runs)} MB/s), load average "
                f"{load:.1f}; {seconds:.2f} s for {stats.turns:,} turns, {stats.tool_calls / mb:.0f} tool calls and "
                f"{stats.failures / mb:.1f} failures per MB; each call reaches sessions, file evolution and gotcha "
                f"tracking; {mb / _CPU['ingest'][0]:.1f} MB per CPU second; a second run with "
                f"nothing appended took {noop_ms:.1f} ms"
            ),
        ),
        *peer,
    ]


def _another_session(source: Path, target: Path, index: int) -> None:
    """The same transcript as another session: every id (session, line, message, tool call)
    renamed, so nothing in it is a replay of what the store already holds."""
    data = source.read_bytes()
    for old, new in (
        (b'"sessionId": "bench-ingest"', b'"sessionId": "bench-ingest-%d"' % index),
        (b'"uuid": "u', b'"uuid": "s%du' % index),
        (b'"msg_', b'"s%dmsg_' % index),
        (b'"req_msg_', b'"s%dreq_msg_' % index),
        (b'"toolu_', b'"s%dtoolu_' % index),
    ):
        data = data.replace(old, new)
    target.write_bytes(data)


def ingest_growth() -> list[Figure]:
    """Issue 16: the ingest stays as fast as the store grows (four sessions' transcripts into one
    store, one after the other, as `engram agents ingest` does with a project's history)."""
    from memory_core.agents.transcripts import ingest_file
    from memory_core.store import Store

    mb_each = max(1, TRANSCRIPT_MB // 2)
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "project"
        (root / "src").mkdir(parents=True)
        source = Path(tmp) / "source.jsonl"
        size = _transcript(source, mb_each * 1024 * 1024, root)
        paths = []
        for index in range(1, GROWTH_TRANSCRIPTS + 1):
            path = Path(tmp) / f"session-{index}.jsonl"
            _another_session(source, path, index)
            paths.append(path)
        # A first ingest into a throwaway store imports what the effects need (checkpoints,
        # evolution, gotchas): that one-time cost is not the store growing.
        warm_root = Path(tmp) / "warm-up"
        warm_root.mkdir()
        with Store.init(warm_root) as warm:
            ingest_file(warm, paths[0])
        rates = []
        cpu_rates = []
        store = Store.init(root)
        try:
            for path in paths:
                start = time.perf_counter()
                cpu_start = time.process_time()
                ingest_file(store, path)
                mb_read = path.stat().st_size / (1024 * 1024)
                rates.append(mb_read / (time.perf_counter() - start))
                cpu_rates.append(mb_read / (time.process_time() - cpu_start))
        finally:
            store.close()
    mb = size / (1024 * 1024)
    # On CPU time: on a shared machine the wall clock of one run says more about the neighbours.
    ratio = cpu_rates[-1] / cpu_rates[0]
    return [
        Figure(
            f"transcript ingest into a growing store: session {GROWTH_TRANSCRIPTS} of "
            f"{GROWTH_TRANSCRIPTS} ({mb:.0f} MB each)",
            ">= 0.9x the first",
            rates[-1],
            None,
            unit="MB/s",
            ratio=f"{ratio:.2f}x the first session's (CPU time)",
            within_budget=ratio >= 0.9,
            note=(
                f"MB/s per transcript in order: {', '.join(f'{r:.1f}' for r in rates)}; MB per CPU "
                f"second: {', '.join(f'{r:.1f}' for r in cpu_rates)}; load average "
                f"{os.getloadavg()[0]:.1f}"
            ),
        )
    ]


def run() -> list[Figure]:
    # Hook latency, every event of every agent: bench_hooks.
    return ingest_throughput() + ingest_growth()
