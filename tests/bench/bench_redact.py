"""Redaction with the full detector set (budget > 20 MB/s): every stored text passes through it.

Three workloads: a large text of code and prose with no secret (the common case: transcript
ingest of an ordinary session), the same text with every secret of the test corpus spread
through it (every detector finds something and replaces it), and many short texts (prompts,
commands, error lines: what a hook redacts, where the cost per call matters).
"""

from __future__ import annotations

import os
import time
from pathlib import Path

from tests.bench.harness import Figure


def _load() -> str:
    try:
        return f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs"
    except OSError:
        return ""


def _code_and_prose() -> str:
    here = Path(__file__).resolve().parents[2] / "memory_core"
    # Not redact.py itself: it names every token prefix, which no ordinary text does.
    code = "".join(p.read_text() for p in sorted(here.rglob("*.py")) if p.name != "redact.py")
    prose = "The login test fails because the session cookie is not marked Secure; " * 200
    return (code + prose) * max(1, 2_000_000 // len(code + prose))


def _rate(name: str, sample: str, repeat: int = 5) -> Figure:
    from memory_core.redact import redact

    redact(sample)
    wall, cpu = [], []
    for _ in range(repeat):
        start, start_cpu = time.perf_counter(), time.process_time()
        redact(sample)
        wall.append(time.perf_counter() - start)
        cpu.append(time.process_time() - start_cpu)
    rate = len(sample) / min(wall) / 1e6
    return Figure(
        name,
        "> 20 MB/s",
        median=rate,
        unit="MB/s",
        within_budget=rate > 20,
        note=f"best of {repeat} (wall clock); {len(sample) / min(cpu) / 1e6:.1f} MB/s in CPU time; {_load()}",
    )


def run() -> list[Figure]:
    from memory_core.redact import redact
    from tests.core.secret_corpus import secrets

    figures = []
    sample = _code_and_prose()
    figures.append(_rate(f"redact {len(sample) / 1e6:.1f} MB of code and prose, no secret", sample))

    corpus = secrets()
    step = len(sample) // (len(corpus) + 1)
    pieces = []
    for index, case in enumerate(corpus):
        pieces.append(sample[index * step : (index + 1) * step])
        pieces.append("\n" + case.text + "\n")
    pieces.append(sample[len(corpus) * step :])
    with_secrets = "".join(pieces)
    out = redact(with_secrets)
    leaked = [case.kind for case in corpus if case.secret in out]
    figure = _rate(
        f"redact the same with {len(corpus)} secrets of {len({c.kind for c in corpus})} kinds",
        with_secrets,
    )
    figure.note += f"; secrets left: {len(leaked)}"
    figures.append(figure)

    # Short texts, one call each: what a hook pays per prompt or command.
    lines = [line for line in sample.splitlines() if line.strip()][:20_000]
    texts = [" ".join(lines[i : i + 3]) for i in range(0, len(lines), 3)]
    size = sum(len(t) for t in texts)
    for text in texts[:100]:
        redact(text)
    start = time.perf_counter()
    for text in texts:
        redact(text)
    seconds = time.perf_counter() - start
    rate = size / seconds / 1e6
    figures.append(
        Figure(
            f"redact {len(texts):,} short texts one call each (avg {size // len(texts)} chars)",
            "> 20 MB/s",
            median=rate,
            unit="MB/s",
            within_budget=rate > 20,
            note=f"{seconds / len(texts) * 1e6:.1f} us per call; {_load()}",
        )
    )
    return figures
