"""The benchmark harness: every `tests/bench/bench_*.py` exposes `run() -> list[Figure]`.

A Figure is one measured line of the table `python -m tests.bench` prints: what was measured,
the budget from docs/design.md section 7, median and p95 (or a single value), and a ratio against a
peer measured in the same run where one runs here. Benchmarks print figures; they do not
assert: budgets are judged by people reading the table (and `docs/benchmarks.md`).
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass


@dataclass
class Figure:
    name: str
    budget: str
    median: float | None = None
    p95: float | None = None
    unit: str = "ms"
    ratio: str = ""
    within_budget: bool | None = None
    note: str = ""

    def row(self) -> list[str]:
        def fmt(value: float | None) -> str:
            if value is None:
                return "-"
            return f"{value:,.3f}" if value < 10 else f"{value:,.1f}"

        verdict = {True: "yes", False: "NO", None: "?"}[self.within_budget]
        return [
            self.name,
            self.budget,
            f"{fmt(self.median)} {self.unit}",
            f"{fmt(self.p95)} {self.unit}",
            self.ratio,
            verdict,
        ]


def percentile(samples: list[float], q: float) -> float:
    ordered = sorted(samples)
    index = min(len(ordered) - 1, max(0, round(q / 100 * (len(ordered) - 1))))
    return ordered[index]


def summarize(samples: list[float]) -> tuple[float, float]:
    """(median, p95) of samples."""
    return statistics.median(samples), percentile(samples, 95)


def time_ms(fn: Callable[[], object], repeat: int, warmup: int = 3) -> list[float]:
    """Wall-clock milliseconds of `fn()` over `repeat` runs, after `warmup` unmeasured runs."""
    for _ in range(warmup):
        fn()
    samples = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        samples.append((time.perf_counter() - start) * 1000)
    return samples
