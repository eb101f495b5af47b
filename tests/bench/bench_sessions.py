"""Session save and load with 1,000 turns (docs/design.md section 7: < 20 ms / < 50 ms), and the cost of
recording one turn (what a hook pays on every prompt)."""

from __future__ import annotations

import tempfile
from pathlib import Path

from memory_core import sessions
from memory_core.store import Store
from tests.bench.harness import Figure, summarize, time_ms

TURNS = 1000
REPEAT = 20


def _fill(store: Store, sid: str) -> list[float]:
    sessions.start(store, session_id=sid, agent="claude-code", now=1_700_000_000.0)
    user = (
        "Please refactor the request handler so retries back off exponentially; keep the API. " * 4
    )
    assistant = (
        "I changed handler.py to retry with exponential backoff and added tests for it. " * 10
    )
    samples: list[float] = []
    for index in range(TURNS):
        ts = 1_700_000_000.0 + index * 30

        def record(index: int = index, ts: float = ts) -> None:
            sessions.record_turn(
                store,
                sid,
                user_message=f"{index}: {user}",
                assistant_response=assistant,
                tool_calls=[{"tool": "Edit", "ok": True}, {"tool": "Bash", "ok": index % 7 != 0}],
                input_tokens=1500,
                output_tokens=400,
                started_at=ts,
                ended_at=ts + 20,
            )

        samples += time_ms(record, 1, warmup=0)
        if index % 10 == 0:
            sessions.record_file_modified(store, sid, f"src/module_{index % 40}.py", ts=ts + 5)
            sessions.record_command(store, sid, "pytest -q", exit_code=index % 3, ts=ts + 10)
    return samples


def run() -> list[Figure]:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        (root / "ws").mkdir()
        store = Store.init(root / "ws")
        turn_samples = _fill(store, "bench-session")
        save_samples = time_ms(lambda: sessions.save(store, "bench-session", name="bench"), REPEAT)
        load_samples = time_ms(lambda: sessions.load(store, "bench"), REPEAT)
        size = store.query_one("SELECT size, LENGTH(payload) FROM saved_sessions LIMIT 1")
        assert size is not None

        # Loading a saved session whose live records are gone: restored from its document.
        restore_samples: list[float] = []
        for _ in range(REPEAT):
            with store.transaction() as db:
                db.execute("DELETE FROM sessions WHERE id = 'bench-session'")
            restore_samples += time_ms(lambda: sessions.load(store, "bench"), 1, warmup=0)
        document = sessions.export_document(store, "bench-session")
        store.close()

        # Importing a document from elsewhere: every text is redacted again on the way in.
        import_samples: list[float] = []
        for index in range(5):
            (root / f"fresh{index}").mkdir()
            other = Store.init(root / f"fresh{index}")
            import_samples += time_ms(
                lambda other=other: sessions.import_document(other, document), 1, warmup=0
            )
            other.close()

    save_median, save_p95 = summarize(save_samples)
    load_median, load_p95 = summarize(load_samples)
    restore_median, restore_p95 = summarize(restore_samples)
    import_median, import_p95 = summarize(import_samples)
    turn_median, turn_p95 = summarize(turn_samples)
    return [
        Figure(
            "session save, 1,000 turns",
            "< 20 ms",
            save_median,
            save_p95,
            within_budget=save_median < 20,
            note=f"versioned JSON document of {size[0] / 1024:.0f} KiB stored zstd-compressed in "
            f"{size[1] / 1024:.0f} KiB, plus the Markdown export",
        ),
        Figure(
            "session load, 1,000 turns",
            "< 50 ms",
            load_median,
            load_p95,
            within_budget=load_median < 50,
        ),
        Figure(
            "session load restoring lost records, 1,000 turns",
            "< 50 ms",
            restore_median,
            restore_p95,
            within_budget=restore_median < 50,
            note="the saved document written back into the live tables",
        ),
        Figure(
            "session import of a foreign document, 1,000 turns",
            "-",
            import_median,
            import_p95,
            note="includes redacting every text again",
        ),
        Figure("record one turn (hook path)", "-", turn_median, turn_p95),
    ]
