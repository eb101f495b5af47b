"""Redaction with the full detector set (budget > 20 MB/s): every stored text passes through it.

Three workloads: a large text of code and prose with no secret (the common case: transcript
ingest of an ordinary session), the same text with every secret of the test corpus spread
through it (every detector finds something and replaces it), and many short texts (prompts,
commands, error lines: what a hook redacts, where the cost per call matters).
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
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


def _rates(name: str, sample: str, repeat: int = 5) -> list[Figure]:
    """Wall clock and CPU time: on a shared machine the CPU figure is the stable one."""
    from memory_core.redact import redact

    redact(sample)
    wall, cpu = [], []
    for _ in range(repeat):
        start, start_cpu = time.perf_counter(), time.process_time()
        redact(sample)
        wall.append(time.perf_counter() - start)
        cpu.append(time.process_time() - start_cpu)
    return _figures(name, len(sample), min(wall), min(cpu), f"best of {repeat}; {_load()}")


def _figures(name: str, size: int, wall: float, cpu: float, note: str) -> list[Figure]:
    figures = []
    for suffix, seconds in (("", wall), (", CPU time", cpu)):
        rate = size / seconds / 1e6
        figures.append(
            Figure(
                name + suffix,
                "> 20 MB/s",
                median=rate,
                unit="MB/s",
                within_budget=rate > 20,
                note=note if not suffix else "",
            )
        )
    return figures


def run() -> list[Figure]:
    from memory_core.redact import redact
    from tests.core.secret_corpus import secrets

    figures = []
    sample = _code_and_prose()
    figures += _rates(f"redact {len(sample) / 1e6:.1f} MB of code and prose, no secret", sample)

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
    with_figures = _rates(
        f"redact the same with {len(corpus)} secrets of {len({c.kind for c in corpus})} kinds",
        with_secrets,
    )
    with_figures[0].note += f"; secrets left after redaction: {len(leaked)}"
    figures += with_figures

    # Pieces of 16 kB, one call each: an ingest's messages and tool outputs (below 64 kB the
    # rules of commands and of secrets in two pieces run too).
    pieces = [sample[i : i + 16_000] for i in range(0, len(sample), 16_000)]
    for piece in pieces:
        # Warm (the rules of texts up to 64 kB compile their patterns on first use) on texts
        # that differ from the timed ones: a text is remembered once redacted.
        redact(piece + "\n")
    start, start_cpu = time.perf_counter(), time.process_time()
    for piece in pieces:
        redact(piece)
    wall, cpu = time.perf_counter() - start, time.process_time() - start_cpu
    figures += _figures(
        f"redact {len(pieces)} pieces of it of 16 kB, one call each",
        sum(len(piece) for piece in pieces),
        wall,
        cpu,
        f"one run; {_load()}",
    )

    # Short texts, one call each: what a hook pays per prompt or command.
    lines = [line for line in sample.splitlines() if line.strip()][:20_000]
    texts = [" ".join(lines[i : i + 3]) for i in range(0, len(lines), 3)]
    size = sum(len(t) for t in texts)
    for text in texts[:100]:
        redact(text)
    start, start_cpu = time.perf_counter(), time.process_time()
    for text in texts:
        redact(text)
    wall, cpu = time.perf_counter() - start, time.process_time() - start_cpu
    figures += _figures(
        f"redact {len(texts):,} short texts one call each (avg {size // len(texts)} chars)",
        size,
        wall,
        cpu,
        f"{cpu / len(texts) * 1e6:.1f} us of CPU per call; {_load()}",
    )
    figures += _cold_start()
    return figures


def _cold_start() -> list[Figure]:
    """A hook imports redaction in a fresh process: import plus the first prompt's redaction,
    with no compiled patterns cached (no resident server has run) and with the file the
    server's warm-up writes."""
    import tempfile

    code = (
        "import time; t = time.perf_counter(); import memory_core.redact as r; "
        "r.redact('deploy with export API_TOKEN=abc123def456 and curl -u me:pw https://x'); "
        "print((time.perf_counter() - t) * 1000)"
    )
    # As installed: from compiled bytecode (a first run writes it, even where the environment
    # says not to, or every run would measure compiling the module's source).
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    figures = []
    with tempfile.TemporaryDirectory() as empty, tempfile.TemporaryDirectory() as cached:
        warm = "import memory_core.redact as r; r.warm_up()"
        subprocess.run(
            [sys.executable, "-c", warm], env=dict(env, XDG_CACHE_HOME=cached), check=True
        )
        for label, folder in (("", empty), (", patterns cached by the server", cached)):
            runs_env = dict(env, XDG_CACHE_HOME=folder)
            subprocess.run([sys.executable, "-c", code], capture_output=True, env=runs_env)
            runs = [
                float(
                    subprocess.run(
                        [sys.executable, "-c", code], capture_output=True, text=True, env=runs_env
                    ).stdout
                )
                for _ in range(7)
            ]
            median = statistics.median(runs)
            figures.append(
                Figure(
                    f"cold process: import redaction + redact the first prompt{label}",
                    "< 25 ms (a quarter of a hook's 100 ms)",
                    median=median,
                    p95=max(runs),
                    within_budget=median < 25,
                    note=f"7 fresh processes, from bytecode; includes importing re; {_load()}",
                )
            )
    return figures
