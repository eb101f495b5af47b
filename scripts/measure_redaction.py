"""Print redaction's figures on the public corpus: secrets caught, ordinary strings changed.

    .venv/bin/python scripts/measure_redaction.py [--show]

Per split (the held-out third counts), and the misses with `--show`.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from memory_core.redact import redact
from tests.core.public_secret_corpus import load, measure


def main() -> None:
    cases = load()
    show = "--show" in sys.argv
    for split in ("holdout", "tune", None):
        part = [c for c in cases if split is None or c.split == split]
        f = measure(part, redact)
        kinds = len({c.kind for c in part if c.type == "secret"})
        print(
            f"{split or 'all':8} secrets caught {f.caught}/{f.secrets} "
            f"({100 * f.caught / f.secrets:.1f} %, {kinds} kinds); ordinary changed "
            f"{f.changed}/{f.ordinary} ({100 * f.changed / f.ordinary:.1f} %)"
        )
        if show and split is not None:
            for c in f.missed:
                print(
                    f"  MISSED {split} {c.kind} {c.rule}: {c.text[:160]!r} -> {redact(c.text)[:160]!r}"
                )
            for c in f.mangled:
                print(f"  CHANGED {split} {c.kind}: {c.text[:160]!r} -> {redact(c.text)[:160]!r}")


if __name__ == "__main__":
    main()
