"""Digests: the four sections from a real session, YAML schema 1.0, readers refuse unknown versions."""

from __future__ import annotations

from pathlib import Path

import pytest

from memory_core.agents import digest
from memory_core.agents.transcripts import ingest_file
from memory_core.errors import EngramError, UsageError
from memory_core.store import Store
from tests.agents_fixtures import (
    CORRECTION,
    FAILING_COMMAND,
    SECRETS,
    WORKING_COMMAND,
    realistic_session,
)

SESSION = "5f2c1d4e-aaaa-bbbb-cccc-123456789abc"


@pytest.fixture
def written(store: Store, tmp_path: Path) -> digest.Digest:
    transcript, _ = realistic_session(store.root, SESSION)
    ingest_file(store, transcript.save(tmp_path / f"{SESSION}.jsonl"))
    return digest.write_digest(store, SESSION, trigger="auto", now=1_772_450_000.0)


def test_digest_file_has_frontmatter_and_the_four_sections(
    store: Store, written: digest.Digest
) -> None:
    assert written.path.parent == store.dir / "exports" / "digests"
    assert written.path.name.startswith(SESSION + "-") and written.path.suffix == ".yaml"
    read = digest.read_digest(written.path)
    front = read.frontmatter
    assert front["schema_version"] == "1.0"
    assert front["session_id"] == SESSION
    assert front["compact_trigger"] == "auto"
    assert front["agent_context"]["agent"] == "claude-code"
    assert (
        front["agent_context"]["model"] == "claude-sonnet-4-6"
    )  # the main chain's, not the subagent's
    assert front["duration_minutes"] > 0
    sections = read.sections
    assert [c["text"] for c in sections["user_corrections"]] == [CORRECTION]
    axioms = [a["text"] for a in sections["axioms_learned"]]
    assert axioms == ["Always run the tests with --no-cov."]
    failures = [p for p in sections["patterns_observed"] if p["kind"] == "repeated_failure"]
    assert len(failures) == 1 and failures[0]["count"] == 3
    assert FAILING_COMMAND in failures[0]["description"]
    snapshot = sections["context_snapshot"]
    assert snapshot["agent"] == "claude-code" and snapshot["branch"] == "main"
    assert sorted(snapshot["files_modified"]) == ["src/auth.py", "src/cookie.py", "src/session.py"]
    assert [c["command"] for c in snapshot["commands"]][:5] == [FAILING_COMMAND] * 3 + [
        WORKING_COMMAND,
        snapshot["commands"][4]["command"],
    ]
    assert snapshot["tool_calls"]["Bash"] == 5 and snapshot["failed_tool_calls"] == 3
    assert snapshot["turns"] == 3
    assert (snapshot["tokens"]["input"], snapshot["tokens"]["output"]) == (212, 467)
    assert (snapshot["subagent_tokens"]["input"], snapshot["subagent_tokens"]["output"]) == (
        201,
        27,
    )
    row = store.query_one("SELECT * FROM digests")
    assert (row["session_id"], row["trigger"], row["schema_version"]) == (SESSION, "auto", "1.0")


def test_digest_never_holds_a_secret(written: digest.Digest) -> None:
    data = written.path.read_bytes()
    for secret in SECRETS:
        assert secret.encode() not in data
    assert oct(written.path.stat().st_mode & 0o777) == "0o600"


def test_reader_refuses_an_unknown_schema_version(tmp_path: Path, written: digest.Digest) -> None:
    future = tmp_path / "future.yaml"
    future.write_text(
        written.path.read_text()
        .replace('schema_version: "1.0"', 'schema_version: "2.0"')
        .replace("schema_version: '1.0'", "schema_version: '2.0'")
    )
    with pytest.raises(EngramError, match=r'schema_version "2.0".*knows 1.0'):
        digest.read_digest(future)
    missing = tmp_path / "none.yaml"
    missing.write_text("---\nsession_id: x\n")
    with pytest.raises(UsageError, match="no schema_version"):
        digest.read_digest(missing)
    broken = tmp_path / "broken.yaml"
    broken.write_text("---\n: [unclosed\n")
    with pytest.raises(UsageError, match="not valid YAML"):
        digest.read_digest(broken)


def test_corrections_and_axioms_are_recognised() -> None:
    for prompt in (
        "actually, use the v2 API",
        "No, that's the wrong file",
        "it should be utf-8 not latin-1",
        "don't run the migrations",
        "Use httpx instead of requests",
    ):
        assert digest.is_correction(prompt), prompt
    for prompt in ("please add a test", "what does this function do?", "now commit it"):
        assert not digest.is_correction(prompt), prompt
    assert digest.axioms_in("Never push to main. Tests first. You must sign commits!") == [
        "Never push to main.",
        "You must sign commits!",
    ]


def test_digest_timer_is_due_after_the_interval(store: Store, written: digest.Digest) -> None:
    last = 1_772_450_000.0
    assert not digest.due(store, SESSION, 15, now=last + 14 * 60)
    assert digest.due(store, SESSION, 15, now=last + 15 * 60)
    assert not digest.due(store, SESSION, 0, now=last + 99 * 60)


def test_agent_records_are_bounded_by_the_timeline_age(
    store: Store, written: digest.Digest
) -> None:
    import time

    from memory_core import config, limits
    from memory_core.agents import retention  # noqa: F401

    removed = limits.enforce(store, config.load(store.root), now=time.time() + 91 * 86400)
    assert (
        removed["agent_tool_uses"] == 12
        and removed["agent_prompts"] == 3
        and removed["digests"] == 1
    )
    assert store.query_one("SELECT COUNT(*) FROM agent_turns")[0] == 0
