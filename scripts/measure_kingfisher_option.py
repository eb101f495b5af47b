"""Measure kingfisher-secret-scanner as an option beside engram's redaction (not a dependency).

    python -m venv /tmp/kf && /tmp/kf/bin/pip install kingfisher-secret-scanner==1.5.0
    /tmp/kf/bin/python scripts/measure_kingfisher_option.py

Prints the time to compile its bundled rules, what it catches of the public corpus (held-out
third and the rest) and how many ordinary strings it flags. A secret counts as caught when a
visible finding holds it (or is held by it, 8 characters at least). The corpus's kingfisher
lines are its own rule examples, so the figures without them are the fair ones.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.core.public_secret_corpus import load


def main() -> None:
    start = time.perf_counter()
    from kingfisher_sdk import Scanner

    imported = time.perf_counter()
    scanner = Scanner()
    compiled = time.perf_counter()
    print(f"import {imported - start:.2f} s, compile rules {compiled - imported:.2f} s")
    cases = load()

    def findings(text: str) -> list[str]:
        return [f.secret for f in scanner.scan(text) if f.visible]

    for split in ("holdout", "tune"):
        for fair in (True, False):
            part = [
                c for c in cases if c.split == split and not (fair and "kingfisher" in c.source)
            ]
            secrets = [c for c in part if c.type == "secret"]
            ordinary = [c for c in part if c.type == "ordinary"]
            caught = [
                c
                for c in secrets
                if any(c.secret in f or (f in c.secret and len(f) >= 8) for f in findings(c.text))
            ]
            flagged = [c for c in ordinary if findings(c.text)]
            label = "without its own examples" if fair else "all"
            print(
                f"{split:8} {label:25} caught {len(caught)}/{len(secrets)}, "
                f"ordinary flagged {len(flagged)}/{len(ordinary)}"
            )


if __name__ == "__main__":
    main()
