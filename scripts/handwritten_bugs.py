"""Apply each hand-written bug (tests/handwritten_bugs/catalogue.py) and see if the tests catch it.

For each bug: the source file is patched in place, the area's tests run (`pytest -x`), and the
file is put back byte for byte, whatever happens. A bug is caught when a test fails.

Usage: .venv/bin/python scripts/handwritten_bugs.py [AREA ...] [--bug NAME] [--existing-only] [--list]
  --existing-only   run only the tests the area had before issue 31 (the "before" figure)
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from tests.handwritten_bugs.catalogue import AREAS, Area, Bug  # noqa: E402


def _apply(bug: Bug) -> bytes:
    path = REPO / bug.file
    original = path.read_bytes()
    text = original.decode("utf-8")
    found = text.count(bug.old)
    if found != 1:
        raise SystemExit(f"{bug.name}: the text to replace occurs {found} times in {bug.file}")
    path.write_text(text.replace(bug.old, bug.new), encoding="utf-8")
    return original


def _run(tests: list[str]) -> int:
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-x", "-q", "-p", "no:cacheprovider", *tests],
        cwd=REPO,
        capture_output=True,
        text=True,
        check=False,
    )
    return done.returncode


def run_area(area: Area, existing_only: bool, only: set[str]) -> tuple[int, int]:
    tests = [t for t in (*area.existing, *(() if existing_only else area.added))]
    tests = [t for t in tests if (REPO / t).exists()]
    if _run(tests) != 0:
        raise SystemExit(f"{area.name}: the tests fail without any bug; fix them first")
    caught = 0
    bugs = [bug for bug in area.bugs if not only or bug.name in only]
    for bug in bugs:
        started = time.monotonic()
        original = _apply(bug)
        try:
            code = _run(tests)
        finally:
            (REPO / bug.file).write_bytes(original)
        verdict = {0: "MISSED", 1: "caught"}.get(code, f"error (pytest exit {code})")
        if bug.equivalent:
            verdict = f"{verdict} (equivalent: {bug.equivalent}; not counted)"
        else:
            caught += code == 1
        print(
            f"  {verdict:7} {bug.name:40} {bug.why} ({time.monotonic() - started:.0f} s)",
            flush=True,
        )
    return caught, sum(1 for bug in bugs if not bug.equivalent)


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("areas", nargs="*")
    parser.add_argument("--existing-only", action="store_true")
    parser.add_argument("--list", action="store_true")
    parser.add_argument("--bug", action="append", default=[], help="only this bug (repeatable)")
    args = parser.parse_args(argv)
    chosen = [a for a in AREAS if not args.areas or a.name in args.areas]
    if args.list:
        for area in chosen:
            print(f"{area.name}: {' '.join(area.existing)} + {' '.join(area.added)}")
            for bug in area.bugs:
                print(f"  {bug.name:40} {bug.file}: {bug.why}")
        return 0
    totals = []
    for area in chosen:
        print(f"== {area.name}", flush=True)
        totals.append((area.name, *run_area(area, args.existing_only, set(args.bug))))
    print()
    for name, caught, total in totals:
        print(f"{name:15} {caught}/{total}")
    caught = sum(t[1] for t in totals)
    total = sum(t[2] for t in totals)
    print(f"{'all':15} {caught}/{total}")
    return 0 if caught == total else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
