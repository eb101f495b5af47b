"""Write `memory_core/guard_frequency.py`: how often characters and pairs of characters occur in
the text engram redacts, for the one-pass guard search to pick each guard's rarest window.

    .venv/bin/python scripts/build_guard_frequency.py

Three samples of about a megabyte each, weighted equally, lowercased as the search sees them:

- code: CPython's standard library (`.py` files, with their docstrings and comments; tests left
  out), in sorted order;
- prose: this repository's `docs/*.md` (English about code);
- agent output: the recorded agent sessions and real tool outputs in `tests/fixtures/`.

None is the benchmark's text (`memory_core/*.py`), so the search is not tuned to its own
measurement. The table decides only which places the search reads, never what it finds: a
table from other text makes it slower or faster, not different.
"""

from __future__ import annotations

import sysconfig
from collections import Counter
from collections.abc import Iterable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "memory_core" / "guard_frequency.py"
SAMPLE_SIZE = 1_000_000
CHARS_KEPT = 64
PAIRS_KEPT = 512
PER = 100_000


def _sample(paths: Iterable[Path]) -> bytes:
    data = bytearray()
    for path in paths:
        data += path.read_bytes().lower() + b"\n"
        if len(data) >= SAMPLE_SIZE:
            break
    return bytes(data[:SAMPLE_SIZE])


def _samples() -> dict[str, bytes]:
    stdlib = Path(sysconfig.get_paths()["stdlib"])
    code = sorted(
        path
        for path in stdlib.rglob("*.py")
        if not {"test", "tests", "site-packages", "idlelib"} & set(path.parts)
    )
    fixtures = ROOT / "tests" / "fixtures"
    agent = sorted(p for p in (fixtures / "recorded").rglob("*") if p.is_file())
    agent += sorted(p for p in (fixtures / "tool_output").rglob("*") if p.is_file())
    return {
        "code": _sample(code),
        "prose": _sample(sorted((ROOT / "docs").glob("*.md"))),
        "agent output": _sample(agent),
    }


def _per_100k(samples: dict[str, bytes], size: int) -> list[tuple[bytes, float]]:
    """Each n-gram of `size` characters, commonest first, per 100,000 places of each sample."""
    total: dict[bytes, float] = {}
    for data in samples.values():
        counts = Counter(data[i : i + size] for i in range(len(data) - size + 1))
        places = max(1, len(data) - size + 1)
        for gram, count in counts.items():
            total[gram] = total.get(gram, 0.0) + count * PER / places / len(samples)
    return sorted(total.items(), key=lambda item: -item[1])


def _literal(grams: list[tuple[bytes, float]]) -> tuple[str, str]:
    spelled = "(" + ", ".join(repr(g.decode("latin-1")) for g, _ in grams) + ")"
    counts = "(" + ", ".join(str(max(1, round(c))) for _, c in grams) + ")"
    return spelled, counts


def main() -> None:
    samples = _samples()
    chars = [(g, c) for g, c in _per_100k(samples, 1) if g.isascii()]
    pairs = [(g, c) for g, c in _per_100k(samples, 2) if g.isascii()]
    chars, pairs = chars[:CHARS_KEPT], pairs[:PAIRS_KEPT]
    char_text, char_counts = _literal(chars)
    pair_text, pair_counts = _literal(pairs)
    sizes = ", ".join(f"{name} {len(data):,} bytes" for name, data in samples.items())
    OUT.write_text(
        '"""How often characters and pairs of characters occur in code, prose and agent output,\n'
        "per 100,000 characters, lowercased: the commonest "
        f"{CHARS_KEPT} and {PAIRS_KEPT}.\n\n"
        "Written by `scripts/build_guard_frequency.py` (which says where the samples come from;\n"
        f"{sizes}). Only the speed of the guard search depends on it, never its answer.\n"
        '"""\n\n'
        "# fmt: off\n"
        f"CHARS = {char_text}\n"
        f"CHAR_COUNTS = {char_counts}\n"
        f"PAIRS = {pair_text}\n"
        f"PAIR_COUNTS = {pair_counts}\n"
        "# fmt: on\n"
    )
    print(f"wrote {OUT.relative_to(ROOT)}: {len(chars)} characters, {len(pairs)} pairs ({sizes})")


if __name__ == "__main__":
    main()
