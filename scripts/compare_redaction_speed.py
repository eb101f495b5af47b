"""Redaction's speed now against another commit's, side by side in one process.

    .venv/bin/python scripts/compare_redaction_speed.py [COMMIT] [ROUNDS]

COMMIT (default `HEAD~1`) is any git revision: its `memory_core/redact.py` is loaded beside the
working tree's, and both redact the same texts alternately (the bench's 1.2 MB of code and
prose, the same with every secret of the known-format corpus, 3,000 short lines one call
each). On a shared machine absolute rates move with the load; the ratio of each round, taken
in the same second, is what this prints (median and range of now/before CPU time: below 1 is
faster).
"""

from __future__ import annotations

import importlib.util
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.bench.bench_redact import _code_and_prose  # noqa: E402
from tests.core.secret_corpus import secrets  # noqa: E402


def _module(path: Path, name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _cpu(work: Callable[[], object]) -> float:
    start = time.process_time()
    work()
    return time.process_time() - start


def main() -> None:
    commit = sys.argv[1] if len(sys.argv) > 1 else "HEAD~1"
    rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 11
    source = subprocess.run(
        ["git", "-C", str(ROOT), "show", f"{commit}:memory_core/redact.py"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    with tempfile.TemporaryDirectory() as tmp:
        old_path = Path(tmp) / "redact_before.py"
        old_path.write_text(source)
        before = _module(old_path, "redact_before")
        now = _module(ROOT / "memory_core" / "redact.py", "redact_now")
        large = _code_and_prose()
        with_secrets = large + "\n".join(s.text for s in secrets())
        shorts = [line for line in large.splitlines() if line.strip()][:3000]
        workloads: dict[str, Callable[[ModuleType], Callable[[], object]]] = {
            "1.2 MB of code and prose": lambda m: lambda: m._redact(large),
            "the same with every corpus secret": lambda m: lambda: m._redact(with_secrets),
            "3,000 short texts, one call each": lambda m: lambda: [m._redact(s) for s in shorts],
        }
        for module in (before, now):
            module._redact(large)
        ratios: dict[str, list[float]] = {name: [] for name in workloads}
        for _ in range(rounds):
            for name, work in workloads.items():
                t_now = min(_cpu(work(now)) for _ in range(2))
                t_before = min(_cpu(work(before)) for _ in range(2))
                ratios[name].append(t_now / t_before)
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    print(f"now / {commit}, CPU time, {rounds} rounds, load average {load:.1f}:")
    for name, values in ratios.items():
        print(
            f"  {name:36} median x{statistics.median(values):.3f} "
            f"(rounds from x{min(values):.3f} to x{max(values):.3f})"
        )


if __name__ == "__main__":
    main()
