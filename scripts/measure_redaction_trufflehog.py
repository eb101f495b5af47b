"""Measure redaction on trufflehog's detector tests, a corpus engram was never tuned on.

    .venv/bin/python scripts/measure_redaction_trufflehog.py ~/src/trufflehog [--show]

trufflehog (AGPL-3.0) is not copied into this repository: this script reads a checkout's
`pkg/detectors/*/*_test.go`, takes each test case whose input is a raw string and whose
expected findings appear in it verbatim, and counts the cases whose findings all disappear
from the redacted input (the whole, or either half of a long one, would be a leak); of the
findings of one case, the longest is taken for the secret (the others are ids and account
names reported with it). Cases
expecting no finding are not counted: they are mostly malformed secrets, not ordinary text.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from memory_core.redact import redact
from tests.core.public_secret_corpus import leaked

CASE = re.compile(
    r"input:\s*`(?P<input>[^`]*)`,\s*want:\s*\[\]string\{(?P<want>[^}]*)\}", re.DOTALL
)
STRING = re.compile(r'"((?:[^"\\]|\\.)*)"|`([^`]*)`')


def cases(root: Path) -> list[tuple[str, str, list[str]]]:
    out = []
    for path in sorted((root / "pkg" / "detectors").glob("*/*_test.go")):
        if path.name.endswith("_integration_test.go"):
            continue
        source = path.read_text(encoding="utf-8", errors="replace")
        for match in CASE.finditer(source):
            text = match.group("input")
            wants = [a or b for a, b in STRING.findall(match.group("want"))]
            wants = [w.encode().decode("unicode_escape") if "\\" in w else w for w in wants]
            wants = [w for w in wants if len(w) >= 6 and w in text]
            if wants:
                # A detector also reports the id or account name that goes with a key
                # (`AccountName=storagetest123`): the secret is the longest finding.
                out.append((path.parent.name, text, [max(wants, key=len)]))
    return out


def main() -> None:
    root = Path(sys.argv[1])
    show = "--show" in sys.argv
    found = cases(root)
    missed = [
        (kind, text, wants)
        for kind, text, wants in found
        if any(leaked(w, redact(text)) for w in wants)
    ]
    kinds = {kind for kind, _t, _w in found}
    missed_kinds = {kind for kind, _t, _w in missed}
    print(
        f"trufflehog detector tests: {len(found) - len(missed)}/{len(found)} cases caught "
        f"({100 * (len(found) - len(missed)) / len(found):.1f} %), {len(kinds)} detectors, "
        f"{len(kinds) - len(missed_kinds)} with every case caught"
    )
    if show:
        for kind, text, _wants in missed:
            print(f"  MISSED {kind}: {' '.join(text.split())[:200]!r}")


if __name__ == "__main__":
    main()
