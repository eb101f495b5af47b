"""What the seeds' formats cost on a 1,000-turn session: the vault note rewritten after a summary
update (seed 002, on the MCP and hook paths), the beans SessionExport (seed 004), a rewind to
turn 500 (checkpoint with the conversation), and a digest write and read (seed 000)."""

from __future__ import annotations

import tempfile
from pathlib import Path

from memory_core import beans, conversation, sessions
from memory_core.agents import digest
from memory_core.store import Store
from tests.bench.bench_sessions import _fill
from tests.bench.harness import Figure, summarize, time_ms

REPEAT = 20


def run() -> list[Figure]:
    figures: list[Figure] = []
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "ws"
        root.mkdir()
        store = Store.init(root)
        _fill(store, "bench")

        counter = iter(range(10**6))
        median, p95 = summarize(
            time_ms(
                lambda: sessions.set_summary(store, "bench", open_items=[f"item {next(counter)}"]),
                REPEAT,
            )
        )
        figures.append(
            Figure(
                "summary update incl. vault note rewrite, 1,000 turns",
                "-",
                median,
                p95,
                note="set_summary plus the note rewritten from the store (seed 002)",
            )
        )
        median, p95 = summarize(time_ms(lambda: sessions.write_export(store, "bench"), REPEAT))
        figures.append(Figure("vault note rewrite alone, 1,000 turns", "-", median, p95))
        median, p95 = summarize(time_ms(lambda: beans.export(store, "bench"), REPEAT))
        figures.append(Figure("beans SessionExport, 1,000 turns", "-", median, p95))

        # A digest of a session with a realistic ledger is measured in bench_agents' terms:
        # here the session has no agent ledger, so this is the format's own cost.
        with store.transaction() as db:
            db.execute(
                "INSERT INTO agent_sessions (session_id, agent, started_at, last_seen) VALUES (?, ?, ?, ?)",
                ("bench", "claude-code", 1_700_000_000.0, 1_700_030_000.0),
            )
        written: list[Path] = []
        median, p95 = summarize(
            time_ms(
                lambda: written.append(digest.write_digest(store, "bench", trigger="timer").path),
                REPEAT,
            )
        )
        figures.append(Figure("digest write (seed 000 layout)", "-", median, p95))
        median, p95 = summarize(time_ms(lambda: digest.read_digest(written[-1]), REPEAT))
        figures.append(Figure("digest read", "-", median, p95))

        # A rewind: checkpoint metadata at turn 500 of 1,000, then back to it (the whole
        # session is saved first, as a rewind always does).
        from memory_core import checkpoints

        samples = []
        for _ in range(5):
            other = Store.init(Path(tmp) / f"ws-{len(samples)}")
            _fill(other, "bench")
            with other.transaction() as db:
                db.execute("UPDATE sessions SET turn_count = 500 WHERE id = 'bench'")
            made = checkpoints.create(other, "half", session_id="bench")
            with other.transaction() as db:
                db.execute("UPDATE sessions SET turn_count = 1000 WHERE id = 'bench'")
            samples += time_ms(
                lambda made=made, other=other: conversation.rewind(other, made["id"]), 1, warmup=0
            )
            other.close()
        median, p95 = summarize(samples)
        figures.append(
            Figure(
                "rewind a 1,000-turn session to turn 500",
                "-",
                median,
                p95,
                note="includes saving the whole session first",
            )
        )
        store.close()
    return figures
