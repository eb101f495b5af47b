"""A hook with a 50 MB payload, as the agent pays it: a cold `engram hook` process, wall clock.

Two shapes of 50 MB: a prompt of prose (UserPromptSubmit) and a tool response full of JSON
text (PostToolUse of a Bash `cat` of a big JSON file: an escaped quote every few bytes, the
worst case for finding where strings end). The peer is the same hook with a small payload.
Budget (docs/design.md section 7): < 1 s.
"""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from tests.bench.harness import Figure, summarize

TARGET_BYTES = 50_000_000
RUNS = 5


def _prose_prompt(size: int) -> dict[str, object]:
    line = "Please refactor the parser — keep the ünïcode names (日本) and the tests green.\n"
    text = line * (size // len(json.dumps(line).encode()))
    return {"hook_event_name": "UserPromptSubmit", "prompt": text}


def _json_tool_output(size: int) -> dict[str, object]:
    line = '{"name": "engram", "version": "1.2.3", "path": "src\\\\lib", "ok": true},\n'
    text = line * (size // len(json.dumps(line).encode()))
    return {
        "hook_event_name": "PostToolUse",
        "tool_name": "Bash",
        "tool_use_id": "toolu_bench",
        "tool_input": {"command": "cat big.json"},
        "tool_response": {"stdout": text, "stderr": "", "interrupted": False},
    }


CPU: list[float] = []


def _run(root: Path, event: str, payload: dict[str, object]) -> float:
    """Wall-clock ms of one cold hook process (its CPU time is appended to CPU)."""
    data = json.dumps({"session_id": "bench", "cwd": str(root), **payload}).encode()
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    completed = subprocess.run(
        [sys.executable, "-m", "memory_core", "hook", "claude-code", event],
        input=data,
        capture_output=True,
        cwd=root,
        # A cold process, as this figure has always been (docs/resident.md).
        env={**os.environ, "HOME": str(root), "ENGRAM_NO_RESIDENT": "1"},
        check=False,
    )
    elapsed = (time.perf_counter() - start) * 1000
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    CPU.append((after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime) * 1000)
    assert completed.returncode == 0, completed.stderr
    return elapsed


def run() -> list[Figure]:
    figures: list[Figure] = []
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "project"
        root.mkdir()
        subprocess.run(["git", "init", "-q", str(root)], check=True)
        _run(root, "SessionStart", {"hook_event_name": "SessionStart", "source": "startup"})
        small = [_run(root, "UserPromptSubmit", _prose_prompt(2_000)) for _ in range(RUNS)]
        small_median, _ = summarize(small)
        for label, event, payload in (
            ("a prose prompt (UserPromptSubmit)", "UserPromptSubmit", _prose_prompt(TARGET_BYTES)),
            (
                "JSON text in a tool response (PostToolUse)",
                "PostToolUse",
                _json_tool_output(TARGET_BYTES),
            ),
        ):
            size = len(json.dumps(payload).encode())
            CPU.clear()
            samples = [_run(root, event, payload) for _ in range(RUNS)]
            cpu_median, _ = summarize(CPU)
            median, p95 = summarize(samples)
            figures.append(
                Figure(
                    f"hook with a {size / 1e6:.0f} MB payload: {label}, cold process",
                    "< 1 s",
                    median,
                    p95,
                    ratio=f"{median / small_median:.1f}x the same hook with 2 kB",
                    within_budget=max(samples) < 1000,
                    note=f"{RUNS} runs, worst {max(samples):.0f} ms; CPU time of the process "
                    f"{cpu_median:.0f} ms (median); 2 kB payload median {small_median:.0f} ms",
                )
            )
    return figures
