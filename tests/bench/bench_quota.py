"""The session quota on the hook path, and `engram doctor`.

A tool-call hook must stay fast (docs/design.md section 7: p50 < 100 ms for a cold process), so the
quota check it adds is measured on its own: one PostToolUse hook, in process, against a
session holding 5 MB (1,000 turns of about 4.5 KB), with the quota step and without it (the
peer). Measuring the session's use is the costly part (it reads every row of the session);
the hooks remember a measurement for 30 s while the session is under 70 %, so most hooks pay
one `store_meta` lookup. The cost of one measurement and of `engram doctor` on that store are
reported as well.
"""

from __future__ import annotations

import json
import tempfile
import time
from pathlib import Path

from memory_core import clock, config, doctor, quota, sessions
from memory_core.agents import hooks, quota_hook
from memory_core.store import Store
from tests.bench.harness import Figure, summarize, time_ms

SESSION = "5f2c1d4e-aaaa-bbbb-cccc-123456789abc"
TURNS = 1000


def _store(root: Path) -> None:
    store = Store.init(root)
    sessions.start(store, session_id=SESSION, agent="claude-code")
    for index in range(TURNS):
        sessions.record_turn(
            store,
            SESSION,
            user_message=f"question {index} " + "x" * 2000,
            assistant_response=f"answer {index} " + "y" * 2500,
            started_at=1.7e9 + index,
            ended_at=1.7e9 + index + 1,
        )
    store.close()


def _hook_runs(root: Path, count: int) -> tuple[list[float], list[float]]:
    """(with the quota step, without it): interleaved, so both see the same cache and store."""
    start = clock.now()
    real = (quota_hook.before, quota_hook.after)
    with_quota: list[float] = []
    without: list[float] = []
    for index in range(count * 2 + 6):
        checked = index % 2 == 0
        if checked:
            quota_hook.before, quota_hook.after = real
        else:
            quota_hook.before = lambda run: True  # type: ignore[assignment]
            quota_hook.after = lambda run: None  # type: ignore[assignment]
        payload = json.dumps(
            {
                "session_id": SESSION,
                "transcript_path": "/nonexistent/x.jsonl",
                "cwd": str(root),
                "hook_event_name": "PostToolUse",
                "tool_name": "Bash",
                "tool_input": {"command": "ls"},
                "tool_use_id": f"toolu-{index}",
                "tool_response": {"stdout": "a", "stderr": ""},
            }
        )
        began = time.perf_counter()
        hooks.handle("claude-code", "PostToolUse", payload, workspace=str(root), now=start + index)
        elapsed = (time.perf_counter() - began) * 1000
        if index >= 6:  # warm-up
            (with_quota if checked else without).append(elapsed)
    quota_hook.before, quota_hook.after = real
    return with_quota, without


def _near_quota_runs(root: Path, count: int) -> list[float]:
    """PostToolUse hooks on the 5 MB session set at 92 % of its quota, 40 s apart: no
    remembered measurement applies, so every hook is measured and its writes guarded (the
    exact hard limit), and every one finds the session over 80 % (a gentle compaction that
    has nothing it may remove)."""
    store = Store.open(root)
    try:
        used = quota.session_usage(store, SESSION)
    finally:
        store.close()
    (root / ".engram" / "config.toml").write_text(
        f"[sessions]\nquota_bytes = {int(used / 0.92)}\n", encoding="utf-8"
    )
    start = clock.now()
    times: list[float] = []
    try:
        for index in range(count + 2):
            payload = json.dumps(
                {
                    "session_id": SESSION,
                    "transcript_path": "/nonexistent/x.jsonl",
                    "cwd": str(root),
                    "hook_event_name": "PostToolUse",
                    "tool_name": "Bash",
                    "tool_input": {"command": "ls"},
                    "tool_use_id": f"toolu-near-{index}",
                    "tool_response": {"stdout": "a", "stderr": ""},
                }
            )
            began = time.perf_counter()
            hooks.handle(
                "claude-code", "PostToolUse", payload, workspace=str(root), now=start + 40 * index
            )
            if index >= 2:
                times.append((time.perf_counter() - began) * 1000)
    finally:
        (root / ".engram" / "config.toml").unlink()
    return times


def _cached_step(root: Path) -> Figure:
    """The quota step alone, on a hook whose session was measured less than 30 s ago."""
    from memory_core.agents.hooks import HookRun
    from memory_core.agents.payload import parse

    store = Store.open(root)
    try:
        raw = {"session_id": SESSION, "cwd": str(root), "hook_event_name": "PostToolUse"}
        payload = parse("claude-code", "PostToolUse", json.dumps({**raw, "tool_name": "Bash"}))
        now = clock.now()
        first = HookRun(payload, store, now)
        quota_hook.before(first)
        quota_hook.after(first)

        def step() -> None:
            run = HookRun(payload, store, now + 1)
            quota_hook.before(run)
            quota_hook.after(run)

        median, p95 = summarize(time_ms(step, repeat=300))
    finally:
        store.close()
    return Figure(
        "the quota step of one hook, measurement remembered",
        "< 1 ms",
        median,
        p95,
        within_budget=p95 < 1.0,
    )


def run() -> list[Figure]:
    figures = []
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp).resolve()
        _store(root)
        with_quota, without = _hook_runs(root, 60)
        median, p95 = summarize(with_quota)
        peer, _ = summarize(without)
        figures.append(
            Figure(
                "hook PostToolUse in process, 5 MB session, with the quota check",
                "as fast as without it (within 20 %: run-to-run noise)",
                median,
                p95,
                ratio=f"{median / peer:.2f}x without ({peer:.1f} ms)",
                within_budget=median <= peer * 1.2,
            )
        )
        figures.append(_cached_step(root))
        store = Store.open(root)
        try:
            settings = config.load(root)
            median, p95 = summarize(
                time_ms(lambda: quota.usage(store, SESSION, settings), repeat=30)
            )
            figures.append(
                Figure(
                    "one measurement of a 5 MB session's use",
                    "(paid at most every 30 s below 70 %)",
                    median,
                    p95,
                )
            )
            measurement = median
        finally:
            store.close()
        near_median, near_p95 = summarize(_near_quota_runs(root, 20))
        figures.append(
            Figure(
                "hook PostToolUse in process, 5 MB session at 92 % of its quota (guarded)",
                "(the price of an exact limit near it: measurements of the session)",
                near_median,
                near_p95,
                ratio=f"{near_median / measurement:.1f}x one measurement",
            )
        )
        store = Store.open(root)
        try:
            median, p95 = summarize(time_ms(lambda: doctor.run(store), repeat=5, warmup=1))
            figures.append(Figure("engram doctor, 5 MB store (check only)", "-", median, p95))
        finally:
            store.close()
    return figures
