"""Print redaction's figures on the public corpora: secrets caught, ordinary strings changed.

    .venv/bin/python scripts/measure_redaction.py [--show] [--show-holdout]
    .venv/bin/python scripts/measure_redaction.py --corpus-c [--show]
    .venv/bin/python scripts/measure_redaction.py --corpus-d [--show]
    .venv/bin/python scripts/measure_redaction.py --corpus-e [--show] [--show-holdout]
    .venv/bin/python scripts/measure_redaction.py --corpus-f [--show] [--show-holdout]
    .venv/bin/python scripts/measure_redaction.py --corpus-g [--show-holdout]
    .venv/bin/python scripts/measure_redaction.py --precision-set [--show] [--holdout]

Per corpus and split (the held-out thirds count). `--show` lists what the tuned parts miss and
change; the held-out parts' cases are listed only with `--show-holdout`, so that they can be
measured without being looked at.

`--corpus-c` measures corpus C alone (new public examples) and prints its figures by family (the
case's kind) and by source. Corpus C was held out until its second measurement (docs/secrets.md);
it is now worked from, and `--corpus-c --show` lists what it misses and changes. `--corpus-d`
does the same for corpus D (built while the detector changed, by someone who never read it),
held out until its second measurement and worked from since (`--show` lists its cases).
`--corpus-e` measures corpus E (built apart from the detector from other public sources). It was
held out whole for two measurements; since then a third of each family's kinds is held out
(`corpus_e_split`): that third's figures are printed as totals only, its families and cases only
with `--show-holdout`; `--show` lists the tuned two thirds' misses and changes.
`--corpus-f` measures corpus F (built apart from the detector from sources none of A to E used)
the same way: held out whole for two measurements (on the detector before and after the
2026-11-28 night's rules), then split as E was.
`--corpus-g` measures corpus G (built apart from the detector from sources none of A to F used),
held out whole and meant to be measured once: totals and figures by family and by source; its
cases are listed only with `--show-holdout`.
`--precision-set` redacts the precision set (real public text holding no secret, built by
`scripts/build_precision_set.py` under `.cache/precision-set/`) in pieces of 200 lines, as an
agent reads a file, and counts the lines and strings changed; `--show` lists the tuned part's
changes; `--holdout` adds the held-out third's totals (measured once, at the end of a round);
`--source NAME` measures one source's files alone.
"""

from __future__ import annotations

import difflib
import json
import sys
from collections import Counter
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from memory_core.redact import redact
from tests.core.public_secret_corpus import (
    PATH,
    PATH_B,
    PATH_C,
    PATH_D,
    PATH_E,
    PATH_F,
    PATH_G,
    Case,
    load,
    measure,
)


def _percent(part: int, whole: int) -> str:
    return f"{100 * part / max(1, whole):.1f} %"


def measure_one_corpus(name: str, path: Path, *, show: bool) -> None:
    measure_cases(name, load(path), show=show)


def measure_cases(
    name: str,
    cases: list[Case],
    *,
    show: bool,
    by_family: bool = True,
    family: Callable[[Case], str] = lambda c: c.kind,
) -> None:
    f = measure(cases, redact)
    secrets = [c for c in cases if c.type == "secret"]
    negatives = [c for c in cases if c.type == "negative"]
    kinds = len({c.kind for c in secrets})
    print(
        f"{name} secrets caught {f.caught}/{f.secrets} ({_percent(f.caught, f.secrets)}, "
        f"{kinds} kinds); ordinary changed {f.changed}/{f.ordinary} "
        f"({_percent(f.changed, f.ordinary)})"
    )
    changed = sum(1 for c in negatives if redact(c.text) != c.text)
    print(f"  placeholders and scanners' negative examples changed {changed}/{len(negatives)}")

    def by(label: str, key: Callable[[Case], str], items: list[Case], bad: list[Case]) -> None:
        total = Counter(key(c) for c in items)
        worse = Counter(key(c) for c in bad)
        print(f"  {label}:")
        for name in sorted(total, key=lambda n: (-worse[n], n)):
            if worse[name]:
                print(f"    {name:40} {worse[name]:3} of {total[name]}")
        print(f"    ({sum(1 for n in total if not worse[n])} other families: none)")

    if not by_family:
        return
    by("secrets missed by family", family, secrets, f.missed)
    by("secrets missed by source", lambda c: c.source.split("@")[0], secrets, f.missed)
    ordinary = [c for c in cases if c.type == "ordinary"]
    by("ordinary strings changed by family", family, ordinary, f.mangled)
    if show:
        for c in f.missed:
            print(f"  MISSED {c.kind}: {c.text[:200]!r} -> {redact(c.text)[:200]!r}")
        for c in f.mangled:
            print(f"  CHANGED {c.kind}: {c.text[:200]!r} -> {redact(c.text)[:200]!r}")


PRECISION_SET = Path(__file__).resolve().parents[1] / ".cache" / "precision-set"
PIECE_LINES = 200
_LABEL = "[REDACTED:"


def changed_lines(before: str, after: str) -> list[tuple[str, str]]:
    """The lines of `before` redaction changed, each with what it became."""
    old, new = before.splitlines(), after.splitlines()
    if len(old) == len(new):
        return [(a, b) for a, b in zip(old, new, strict=True) if a != b]
    changed: list[tuple[str, str]] = []
    matcher = difflib.SequenceMatcher(None, old, new, autojunk=False)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag != "equal":
            changed += [(line, "\n".join(new[j1:j2])) for line in old[i1:i2]]
    return changed


def measure_precision_set(show: bool, holdout: bool, show_holdout: bool) -> None:
    manifest = PRECISION_SET / "manifest.jsonl"
    if not manifest.exists():
        sys.exit("no precision set: run scripts/build_precision_set.py first")
    rows = [json.loads(line) for line in manifest.read_text().splitlines()]
    if "--source" in sys.argv:
        # One source's files alone (`--source fresh_repositories`), both splits when asked.
        source = sys.argv[sys.argv.index("--source") + 1]
        rows = [row for row in rows if row["source"] == source]
    # The held-out third is measured once, at the end of a round (`--holdout`), with the
    # figure of the detector the round started from; its lines only with `--show-holdout`.
    splits = ("holdout", "tune") if holdout or show_holdout else ("tune",)
    for split in splits:
        listing = show_holdout if split == "holdout" else show
        lines = changed = strings = files_changed = 0
        by_source: Counter[str] = Counter()
        for row in (r for r in rows if r["split"] == split):
            text = (PRECISION_SET / "files" / row["name"].lstrip("/")).read_text()
            pieces = text.splitlines(True)
            file_changed = 0
            for at in range(0, len(pieces), PIECE_LINES):
                piece = "".join(pieces[at : at + PIECE_LINES])
                redacted = redact(piece)
                lines += len(piece.splitlines())
                if redacted == piece:
                    continue
                strings += redacted.count(_LABEL) - piece.count(_LABEL)
                for old, new in changed_lines(piece, redacted):
                    file_changed += 1
                    if listing:
                        print(f"  CHANGED {split} {row['name']}: {old[:160]!r} -> {new[:160]!r}")
            changed += file_changed
            files_changed += bool(file_changed)
            by_source[row["source"]] += file_changed
        print(
            f"precision set {split}: lines changed {changed}/{lines} ({_percent(changed, lines)}); "
            f"strings changed {strings}; files changed {files_changed}/"
            f"{sum(1 for r in rows if r['split'] == split)}"
        )
        if listing:
            for source, count in by_source.most_common():
                print(f"    {source:28} {count} lines")


def main() -> None:
    if "--precision-set" in sys.argv:
        measure_precision_set(
            "--show" in sys.argv, "--holdout" in sys.argv, "--show-holdout" in sys.argv
        )
        return
    if "--corpus-c" in sys.argv:
        measure_one_corpus("C (worked from, no longer held out)", PATH_C, show="--show" in sys.argv)
        return
    if "--corpus-d" in sys.argv:
        show = "--show" in sys.argv or "--show-holdout" in sys.argv
        measure_one_corpus("D (worked from, no longer held out)", PATH_D, show=show)
        return
    if "--corpus-g" in sys.argv:
        # All of it held out: totals and families; cases only when asked for by name.
        measure_one_corpus("G (all held out)", PATH_G, show="--show-holdout" in sys.argv)
        return
    for flag, label, path in (("--corpus-e", "E", PATH_E), ("--corpus-f", "F", PATH_F)):
        if flag not in sys.argv:
            continue
        # Its tuned two thirds may be read case by case (`--show`); its held-out third is
        # printed as totals only, by family and case only with `--show-holdout`.
        cases = load(path)
        for split in ("holdout", "tune"):
            show = "--show-holdout" in sys.argv if split == "holdout" else "--show" in sys.argv
            part = [c for c in cases if c.split == split]
            measure_cases(f"{label} {split}", part, show=show, by_family=split == "tune" or show)
        return
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
