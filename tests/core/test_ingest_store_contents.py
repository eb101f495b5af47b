"""What an ingest stores does not depend on how fast it gets there: the store's contents, row for
row, with the shortcuts of the ingest's hot path turned off and on (issue 32 part 4).

The shortcuts (redacting a text once per process, gotcha tracking analysing an error text once
and taking a failed call's message from the error the ledger stored, redacted)
must not change a single stored value: the same real-shaped transcripts, holding secrets and
failing commands, are ingested into two stores, one with the shortcuts disabled, and the full
dumps are compared (every table and every file written; random ids masked, the clock fixed).
"""

from __future__ import annotations

import contextlib
import io
import re
import sqlite3
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from memory_core import clock, redact
from memory_core.agents import record
from memory_core.cli.main import main
from memory_core.gotchas import normalize, tool_errors, track
from tests.agents_fixtures import Transcript, real_shaped_session, text, tool_use

SESSIONS = ("7d0c2a9e-1111-4222-8333-444455556666", "7d0c2a9e-1111-4222-8333-777788889999")
SECRETS_SESSION = "5ec2e7a1-1111-4222-8333-444455556666"
# Made up, in the shapes redaction knows (a GitHub token, a password in a URL).
TOKEN = "ghp_" + "R8x2Lq9ZtV4mN7pK3sW6yB1cD5fH0jE2gA9u"
DSN = "postgres://app:Zq7!vR2#pL9x@db.internal:5432/app"
_RANDOM_ID = re.compile(r"\b([GM])-[0-9a-f]{8}\b")


def _ingest(workspace: Path, transcripts: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    workspace.mkdir(parents=True)
    monkeypatch.chdir(workspace)
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        assert main(["ingest", "claude-code", str(transcripts)]) == 0


def _mask(text: str, workspace: Path) -> str:
    return _RANDOM_ID.sub(r"\1-*", text).replace(str(workspace), "<workspace>")


def _dump(workspace: Path) -> dict[str, list[str]]:
    """Every table's rows, sorted, random ids masked; and the files the store wrote."""
    db = sqlite3.connect(workspace / ".engram" / "engram.db")
    try:
        tables = [r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]
        dump = {
            table: sorted(
                _mask(repr(row), workspace) for row in db.execute(f"SELECT * FROM {table}")
            )
            for table in tables
        }
    finally:
        db.close()
    dump["files"] = sorted(
        f"{p.relative_to(workspace)} {_mask(p.read_text(errors='replace'), workspace)}"
        for p in (workspace / ".engram").rglob("*")
        if p.is_file() and not p.name.startswith("engram.db") and p.suffix != ".log"
    )
    return dump


@pytest.fixture
def transcripts(tmp_path: Path) -> Path:
    """Two real-shaped sessions (failures, a compaction, subagents, an interrupt), the second a
    day later repeating the first one's errors: gotcha tracking learns from them."""

    folder = tmp_path / "claude" / "projects" / "p"
    cwd = tmp_path / "project"
    start = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)
    for n, session in enumerate(SESSIONS):
        real_shaped_session(cwd, cwd, folder, session, start=start + timedelta(hours=n))
    _secrets_session(cwd, start + timedelta(hours=3)).save(folder / f"{SECRETS_SESSION}.jsonl")
    return folder


def _secrets_session(cwd: Path, start: datetime) -> Transcript:
    """Secrets in what gets stored: a failing command holding a token (three times: a gotcha
    is learned), a long one (past the size of texts remembered by the fast path before), an
    error quoting a password, and an answer longer than a stored answer, with the token in it."""
    t = Transcript(SECRETS_SESSION, cwd)
    t.start = start
    failing = f"curl -H 'Authorization: token {TOKEN}' https://api.github.com/user"
    long_command = f"psql {DSN} -c 'select 1' && " + " && ".join(
        f"echo step-{n:04d}-of-the-migration" for n in range(60)
    )
    for n in range(3):
        t.prompt(f"Check the API with my token {TOKEN}, attempt {n}")
        t.response([tool_use(f"toolu_s{n}a", "Bash", command=failing)])
        t.tool_result(
            f"toolu_s{n}a", f"Exit code 22\ncurl: (22) 401 for token {TOKEN}", is_error=True
        )
        t.response([tool_use(f"toolu_s{n}b", "Bash", command=long_command)])
        t.tool_result(
            f"toolu_s{n}b",
            f"Exit code 2\npsql: error: connection to {DSN} failed: password authentication",
            is_error=True,
        )
        t.response([text(f"The token {TOKEN} was refused. " + "Details follow. " * 400)])
    return t


@pytest.fixture(autouse=True)
def fixed_clock(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(clock, "now", lambda: 1_800_000_000.0)


def _forget_shortcuts() -> None:
    redact._remembered.clear()
    redact._remembered_chars = 0
    track._analysis.cache_clear()
    tool_errors.key_error.cache_clear()


class _AnalysedEveryTime:
    """Gotcha tracking's reading of an error as it was written before it was remembered."""

    def __init__(self, message: str) -> None:
        self.normalized = normalize.normalize(message)
        self.digest = normalize.error_hash(self.normalized)
        self.meaningful = normalize.meaningful_line(message)[:500]
        self.locations = tuple(normalize.error_locations(message))


def _without_shortcuts(patch: pytest.MonkeyPatch) -> None:
    """Every text redacted every time, every error analysed every time, as before the
    shortcuts."""
    patch.setattr(redact, "_REMEMBERED_TEXT_CHARS", 0)
    patch.setattr(track, "_analysis", _AnalysedEveryTime)
    patch.setattr(tool_errors, "key_error", tool_errors.key_error.__wrapped__)
    patch.setattr(record, "tracked_error", _tracked_error_redacted_apart)


def _tracked_error_redacted_apart(error: str) -> str:
    """Gotcha tracking's error as it was made before it was taken from the ledger's redacted
    text: the raw error's message, redacted on its own."""
    return record.clean(record.error_message(error), record.MAX_ERROR)


def test_the_shortcuts_of_the_ingest_store_the_same(
    tmp_path: Path, transcripts: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _forget_shortcuts()
    with monkeypatch.context() as patch:
        _without_shortcuts(patch)
        _ingest(tmp_path / "without" / "project", transcripts, monkeypatch)
    assert not redact._remembered and not track._analysis.cache_info().currsize
    _ingest(tmp_path / "with" / "project", transcripts, monkeypatch)
    # The shortcuts did run: texts remembered, errors analysed once per text.
    assert redact._remembered
    assert track._analysis.cache_info().hits
    with_them, without = (
        _dump(tmp_path / "with" / "project"),
        _dump(tmp_path / "without" / "project"),
    )
    assert with_them["session_turns"] and with_them["agent_tool_uses"] and with_them["gotchas"]
    stored = " ".join(with_them["agent_tool_uses"] + with_them["session_turns"])
    assert "REDACTED" in stored and TOKEN not in stored
    # Every session's note and export, closed as the ingest ends them, compared too.
    assert len([f for f in with_them["files"] if "/sessions/" in f]) == len(SESSIONS) + 1
    assert with_them == without


def _interrupted_at(session_id: str) -> object:
    """`record.apply_turns` as Ctrl-C hits it when the turns of `session_id` reach their session."""
    apply_turns = record.apply_turns

    def interrupted(
        store: object, turns: list[record.FinishedTurn], *a: object, **k: object
    ) -> None:
        if any(turn.session_id == session_id for turn in turns):
            raise KeyboardInterrupt
        apply_turns(store, turns, *a, **k)  # type: ignore[arg-type]

    return interrupted


def _ingest_twice(
    workspace: Path, path: Path, session_id: str, patch: pytest.MonkeyPatch
) -> dict[str, list[str]]:
    """Ingest `path` interrupted at `session_id`'s turns, then again; returns the dump between."""
    workspace.mkdir(parents=True)
    patch.chdir(workspace)
    with patch.context() as inner:
        inner.setattr(record, "apply_turns", _interrupted_at(session_id))
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
            assert main(["ingest", "claude-code", str(path)]) == 130
    partial = _dump(workspace)
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        assert main(["ingest", "claude-code", str(path)]) == 0
    return partial


def test_an_ingest_interrupted_in_a_files_effects_is_recorded_once_by_the_next_run(
    tmp_path: Path, transcripts: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Ctrl-C while the file's turns reach their session undoes the file's rows and offset
    with them, and the next run records all of it. (The rows committed apart from their
    effects were counted: a re-run skipped them, and the turns never reached the session.)"""
    one_file = transcripts / f"{SECRETS_SESSION}.jsonl"
    _ingest(tmp_path / "whole" / "project", one_file, monkeypatch)
    workspace = tmp_path / "interrupted" / "project"
    partial = _ingest_twice(workspace, one_file, SECRETS_SESSION, monkeypatch)
    assert not partial["agent_tool_uses"] and not partial["session_turns"]
    assert _dump(workspace) == _dump(tmp_path / "whole" / "project")


def test_files_ingested_in_one_call_are_committed_by_batches_each_whole(
    tmp_path: Path, transcripts: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Interrupted at the second file: the first file's batch stands, the second's is undone,
    and the next run records the rest once (its first file's session settled too)."""
    from memory_core.agents import transcripts as transcripts_module

    _ingest(tmp_path / "whole" / "project", transcripts, monkeypatch)
    workspace = tmp_path / "interrupted" / "project"
    monkeypatch.setattr(transcripts_module, "BATCH_SECONDS", 0.0)  # a commit per file
    partial = _ingest_twice(workspace, transcripts, SESSIONS[0], monkeypatch)
    assert any(SECRETS_SESSION in row for row in partial["session_turns"])
    assert not any(SESSIONS[0] in row for row in partial["agent_tool_uses"])
    assert _dump(workspace) == _dump(tmp_path / "whole" / "project")
