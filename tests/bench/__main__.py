"""Run every benchmark and print one table: `python -m tests.bench [NAME...]`.

NAME filters benchmark modules by substring (e.g. `python -m tests.bench store hover`).
"""

from __future__ import annotations

import importlib
import pkgutil
import sys
import time
from pathlib import Path

from tests.bench.harness import Figure


def main(argv: list[str]) -> int:
    here = Path(__file__).parent
    names = sorted(m.name for m in pkgutil.iter_modules([str(here)]) if m.name.startswith("bench_"))
    if argv:
        names = [n for n in names if any(arg in n for arg in argv)]
    figures: list[Figure] = []
    for name in names:
        start = time.perf_counter()
        print(f"running {name} ...", file=sys.stderr, flush=True)
        module = importlib.import_module(f"tests.bench.{name}")
        figures.extend(module.run())
        print(f"  done in {time.perf_counter() - start:.1f} s", file=sys.stderr, flush=True)
    header = ["figure", "budget", "median", "p95", "ratio vs peer", "within budget"]
    rows = [header, *[f.row() for f in figures]]
    widths = [max(len(row[i]) for row in rows) for i in range(len(header))]
    line = "| " + " | ".join("-" * w for w in widths) + " |"
    print("| " + " | ".join(h.ljust(w) for h, w in zip(header, widths, strict=True)) + " |")
    print(line)
    for row in rows[1:]:
        print("| " + " | ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)) + " |")
    notes = [f for f in figures if f.note]
    for figure in notes:
        print(f"- {figure.name}: {figure.note}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
