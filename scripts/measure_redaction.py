"""Print redaction's figures on the public corpora: secrets caught, ordinary strings changed.

    .venv/bin/python scripts/measure_redaction.py [--show] [--show-holdout]

Per corpus and split (the held-out thirds count). `--show` lists what the tuned parts miss and
change; the held-out parts' cases are listed only with `--show-holdout`, so that they can be
measured without being looked at.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from memory_core.redact import redact
from tests.core.public_secret_corpus import PATH, PATH_B, load, measure


def main() -> None:
    show = "--show" in sys.argv
    show_holdout = "--show-holdout" in sys.argv
    for name, path in (("A", PATH), ("B", PATH_B)):
        cases = load(path)
        for split in ("holdout", "tune", None):
            part = [c for c in cases if split is None or c.split == split]
            f = measure(part, redact)
            kinds = len({c.kind for c in part if c.type == "secret"})
            negatives = [c for c in part if c.type == "negative"]
            line = (
                f"{name} {split or 'all':8} secrets caught {f.caught}/{f.secrets} "
                f"({100 * f.caught / f.secrets:.1f} %, {kinds} kinds); ordinary changed "
                f"{f.changed}/{f.ordinary} ({100 * f.changed / max(1, f.ordinary):.1f} %)"
            )
            if negatives:
                changed = sum(1 for c in negatives if redact(c.text) != c.text)
                line += f"; scanners' negative examples changed {changed}/{len(negatives)}"
            print(line)
            if split is None or not (show_holdout if split == "holdout" else show):
                continue
            for c in f.missed:
                print(
                    f"  MISSED {split} {c.kind} {c.rule}: {c.text[:160]!r} -> {redact(c.text)[:160]!r}"
                )
            for c in f.mangled:
                print(f"  CHANGED {split} {c.kind}: {c.text[:160]!r} -> {redact(c.text)[:160]!r}")


if __name__ == "__main__":
    main()
