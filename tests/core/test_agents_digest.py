"""Digests: the four sections from a real session, YAML schema 1.0, readers refuse unknown versions."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
import yaml  # type: ignore[import-untyped]

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


SEED_EXAMPLE = Path(__file__).parent.parent / "fixtures" / "seeds"
SEED_EXAMPLE_FILE = SEED_EXAMPLE / "session-abc123-2026-02-09T18-30-45-123Z.yaml"
# The seed's file name: `{session-id}-{timestamp}.yaml`, the timestamp with milliseconds.
SEED_FILE_NAME = re.compile(r"^(?P<session>.+)-(\d{4}-\d{2}-\d{2}T\d{2}-\d{2}-\d{2}-\d{3}Z)\.yaml$")


def seed_reader(text: str) -> dict[str, Any]:
    """A reader written from seed 000 alone: frontmatter between `---` lines, four `##` sections
    of `- ` bullets, the Context Snapshot's `**Name:** value` lines; version 1.0 when absent."""
    _, front, body = text.split("---\n", 2)
    meta = yaml.safe_load(front)
    version = meta.get("schema_version") or "1.0"
    if version != "1.0":
        raise ValueError(f"Unsupported schema version: {version}")
    sections: dict[str, list[str]] = {}
    order: list[str] = []
    current = ""
    for line in body.splitlines():
        if line.startswith("## "):
            current = line[3:].strip()
            order.append(current)
            sections[current] = []
        elif line.strip():
            sections[current].append(line)
    snapshot = {}
    for line in sections.get("Context Snapshot", []):
        match = re.match(r"^\*\*(.+?):\*\* (.*)$", line)
        assert match, f"not a bold line: {line!r}"
        snapshot[match.group(1)] = match.group(2)
    return {"meta": meta, "order": order, "sections": sections, "snapshot": snapshot}


def test_digest_is_written_in_the_seed_layout(store: Store, written: digest.Digest) -> None:
    assert written.path.parent == store.dir / "exports" / "digests"
    name = SEED_FILE_NAME.match(written.path.name)
    assert name and name.group("session") == SESSION
    assert written.path.name == f"{SESSION}-2026-03-02T11-13-20-000Z.yaml"
    text = written.path.read_text()
    seen = seed_reader(text)
    meta = seen["meta"]
    assert list(meta)[:6] == [
        "schema_version",
        "session_id",
        "timestamp",
        "duration_minutes",
        "agent_context",
        "compact_trigger",
    ]
    assert meta["schema_version"] == "1.0" and meta["session_id"] == SESSION
    assert meta["timestamp"] == "2026-03-02T11:13:20.000Z"
    assert isinstance(meta["duration_minutes"], int) and meta["duration_minutes"] >= 1
    assert meta["agent_context"] == "@claude-code (claude-sonnet-4-6) working"
    assert meta["compact_trigger"] == "auto"
    assert seen["order"][:4] == [
        "User Corrections",
        "Patterns Observed",
        "Axioms Learned",
        "Context Snapshot",
    ]
    # The correction and the rule the prompt states, in the digest's words: not the prompt.
    assert seen["sections"]["User Corrections"] == [
        '- "Do not touch auth.py: the bug is in the session cookie"'
    ]
    assert seen["sections"]["Axioms Learned"] == ['- Axiom: "Always: run the tests with --no-cov"']
    assert CORRECTION not in text and "Always run the tests with --no-cov." not in text
    patterns = seen["sections"]["Patterns Observed"]
    assert patterns[0].startswith(f'- Pattern: "`{FAILING_COMMAND}` failed 3 times: ')
    assert list(seen["snapshot"]) == [
        "Active Agent",
        "Active Story",
        "Files Modified",
        "Commands Executed",
    ]
    assert seen["snapshot"]["Active Agent"] == "@claude-code"
    assert seen["snapshot"]["Active Story"] == "none"  # no story known, as AIOS writes it
    assert sorted(seen["snapshot"]["Files Modified"].split(", ")) == [
        "src/auth.py",
        "src/cookie.py",
        "src/session.py",
    ]
    assert seen["snapshot"]["Commands Executed"].startswith(f"{FAILING_COMMAND}, {WORKING_COMMAND}")

    # engram's richer facts follow in the frontmatter, under one more key.
    extra = meta["engram"]
    assert extra["model"] == "claude-sonnet-4-6"  # the main chain's, not the subagent's
    assert extra["branch"] == "main" and extra["turns"] == 3
    assert extra["tool_calls"]["Bash"] == 5 and extra["failed_tool_calls"] == 3
    assert (extra["tokens"]["input"], extra["tokens"]["output"]) == (212, 467)
    assert (extra["subagent_tokens"]["input"], extra["subagent_tokens"]["output"]) == (201, 27)
    failures = [p for p in extra["patterns"] if p["kind"] == "repeated_failure"]
    assert len(failures) == 1 and failures[0]["count"] == 3
    row = store.query_one("SELECT * FROM digests")
    assert (row["session_id"], row["trigger"], row["schema_version"]) == (SESSION, "auto", "1.0")
    assert row["content"] == text


def test_engram_reads_back_what_it_wrote(written: digest.Digest) -> None:
    read = digest.read_digest(written.path)
    assert read.frontmatter["session_id"] == SESSION
    assert read.sections["user_corrections"] == [
        "Do not touch auth.py: the bug is in the session cookie"
    ]
    assert read.sections["axioms_learned"] == ["Always: run the tests with --no-cov"]
    snap = read.sections["context_snapshot"]
    assert snap["active_agent"] == "@claude-code" and snap["active_story"] is None
    assert sorted(snap["files_modified"]) == ["src/auth.py", "src/cookie.py", "src/session.py"]
    assert snap["commands_executed"][:2] == [FAILING_COMMAND, WORKING_COMMAND]
    assert read.sections == written.sections


def test_the_seeds_own_example_loads() -> None:
    read = digest.read_digest(SEED_EXAMPLE_FILE)
    front = read.frontmatter
    assert front["session_id"] == "session-abc123"
    assert front["timestamp"] == "2026-02-09T18:30:45.123Z"
    assert front["duration_minutes"] == 45
    assert front["agent_context"] == "@dev implementing Story MIS-3"
    assert front["compact_trigger"] == "context_limit_90%"
    assert read.sections["user_corrections"] == [
        "Actually, the path should be `.aios/sessions/` not `.aios-sessions/`",
        "Tests should expect `null`, not objects",
    ]
    assert read.sections["patterns_observed"] == [
        "Test expectations must match implementation changes",
        "Always verify consumer count before removing modules",
    ]
    assert (
        read.sections["axioms_learned"][0] == "Hooks unified require runners/ directory to function"
    )
    assert read.sections["context_snapshot"] == {
        "active_agent": "@dev",
        "active_story": "MIS-3",
        "files_modified": ["hook-interface.js", "precompact-runner.js"],
        "commands_executed": ["npm test", "git add"],
    }
    # Round trip: rendered again by engram, the seed's example reads back the same.
    again = digest.parse_digest(digest.render(front, read.sections))
    assert again.sections == read.sections and again.frontmatter == front
    assert seed_reader(SEED_EXAMPLE_FILE.read_text())["snapshot"]["Active Story"] == "MIS-3"


def test_digest_never_holds_a_secret(written: digest.Digest) -> None:
    data = written.path.read_bytes()
    for secret in SECRETS:
        assert secret.encode() not in data
    assert oct(written.path.stat().st_mode & 0o777) == "0o600"


def test_versions_missing_known_and_unknown(tmp_path: Path) -> None:
    seed_text = SEED_EXAMPLE_FILE.read_text()
    unversioned = tmp_path / "unversioned.yaml"
    unversioned.write_text(seed_text.replace('schema_version: "1.0"', "# no version"))
    read = digest.read_digest(unversioned)
    assert read.frontmatter["schema_version"] == "1.0"
    assert read.sections["context_snapshot"]["active_story"] == "MIS-3"

    future = tmp_path / "future.yaml"
    future.write_text(seed_text.replace('schema_version: "1.0"', 'schema_version: "2.0"'))
    with pytest.raises(EngramError, match=r"Unsupported schema version: 2\.0 .*reads 1\.0"):
        digest.read_digest(future)
    with pytest.raises(ValueError, match=r"Unsupported schema version: 2\.0"):
        seed_reader(future.read_text())  # the negative control: the seed's reader refuses it too

    no_front = tmp_path / "none.yaml"
    no_front.write_text("## User Corrections\n")
    with pytest.raises(UsageError, match="no frontmatter"):
        digest.read_digest(no_front)
    broken = tmp_path / "broken.yaml"
    broken.write_text("---\n: [unclosed\n---\n")
    with pytest.raises(UsageError, match="not valid YAML"):
        digest.read_digest(broken)


def test_engrams_earlier_yaml_digests_still_load(tmp_path: Path) -> None:
    old = tmp_path / "old.yaml"
    old.write_text(
        '---\nschema_version: "1.0"\nsession_id: s1\nduration_minutes: 2.5\n'
        "agent_context: {agent: claude-code}\ncompact_trigger: manual\n---\n"
        "user_corrections:\n- {text: 'no, use pnpm', timestamp: '2026-03-01T10:00:00Z'}\n"
        "patterns_observed: []\naxioms_learned:\n- {text: Always use pnpm.}\n"
        "context_snapshot: {agent: claude-code, files_modified: [a.py], commands: [{command: pnpm i, ok: true}]}\n"
    )
    read = digest.read_digest(old)
    assert read.sections["user_corrections"] == ["no, use pnpm"]
    assert read.sections["axioms_learned"] == ["Always use pnpm."]
    assert read.sections["context_snapshot"]["commands_executed"] == ["pnpm i"]


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

    with_detail = store.query_one(
        "SELECT COUNT(*) FROM agent_tool_uses WHERE path IS NOT NULL OR command IS NOT NULL "
        "OR error IS NOT NULL"
    )[0]
    assert with_detail > 0
    removed = limits.enforce(store, config.load(store.root), now=time.time() + 91 * 86400)
    # The digests and turns go; the ledgers lose their text and keep their keys (what keeps a
    # transcript read again from counting twice).
    assert (
        removed["agent_tool_uses"] == with_detail
        and removed["agent_prompts"] == 3
        and removed["digests"] == 1
    )
    assert store.query_one("SELECT COUNT(*) FROM agent_turns")[0] == 0
    assert (
        store.query_one(
            "SELECT COUNT(*) FROM agent_tool_uses WHERE path IS NOT NULL OR command IS NOT NULL "
            "OR error IS NOT NULL"
        )[0]
        == 0
    )
    assert store.query_one("SELECT COUNT(*) FROM agent_prompts WHERE text != ''")[0] == 0
    assert store.query_one("SELECT COUNT(*) FROM agent_tool_uses")[0] == 12


def test_a_quiet_session_keeps_the_four_sections_empty(store: Store) -> None:
    from memory_core import sessions

    sessions.start(store, session_id="quiet", agent="claude-code", now=1_772_450_000.0)
    with store.transaction() as db:
        db.execute(
            "INSERT INTO agent_sessions (session_id, agent, started_at, last_seen) VALUES (?, ?, ?, ?)",
            ("quiet", "claude-code", 1_772_450_000.0, 1_772_450_090.0),
        )
    sessions.observe_times(store, "quiet", first_ts=1_772_450_000.0, last_ts=1_772_450_090.0)
    written = digest.write_digest(store, "quiet", trigger="manual", now=1_772_450_100.0)
    seen = seed_reader(written.path.read_text())
    assert seen["order"] == [
        "User Corrections",
        "Patterns Observed",
        "Axioms Learned",
        "Context Snapshot",
    ]
    # Empty as the AIOS writer says it: placeholder bullets and `none`.
    assert seen["sections"]["User Corrections"] == ["- (none captured)"]
    assert seen["sections"]["Patterns Observed"] == ["- (none identified)"]
    assert seen["sections"]["Axioms Learned"] == ["- (none extracted)"]
    assert seen["snapshot"] == {
        "Active Agent": "@claude-code",
        "Active Story": "none",
        "Files Modified": "none",
        "Commands Executed": "none",
    }
    assert seen["meta"]["duration_minutes"] == 2  # 90 s rounds to 2 minutes
    read = digest.read_digest(written.path)
    assert read.sections["user_corrections"] == []
    assert read.sections["context_snapshot"]["files_modified"] == []


def test_a_digest_as_the_aios_writer_writes_it_loads() -> None:
    """The AIOS implementation of this schema (its PreCompact extractor) dumps the frontmatter
    with js-yaml (single quotes), writes patterns with the `Pattern:` inside unquoted text,
    placeholders for empty sections and `unknown` / `none` in the snapshot lines."""
    read = digest.read_digest(SEED_EXAMPLE / "aios-writer-digest.yaml")
    front = read.frontmatter
    assert front["schema_version"] == "1.0" and front["duration_minutes"] == 12
    assert front["timestamp"] == "2026-02-10T09:15:02.481Z"  # an unquoted YAML timestamp
    assert front["agent_context"] == "dev" and front["compact_trigger"] == "context_limit"
    assert read.sections["user_corrections"] == [
        'Actually, the config lives in "core-config.yaml" not config.yaml'
    ]
    assert read.sections["patterns_observed"] == [
        'User frequently asks "how-to" questions (3 times)'
    ]
    assert read.sections["axioms_learned"] == []
    assert read.sections["context_snapshot"] == {
        "active_agent": None,
        "active_story": None,
        "files_modified": [],
        "commands_executed": [],
    }


@pytest.mark.parametrize(
    ("prompt", "gist"),
    [
        (CORRECTION, "Do not touch auth.py: the bug is in the session cookie"),
        ("actually, use the v2 API", "Use the v2 API"),
        (
            "No. Wrong file. Please edit src/app.py instead of src/main.py, thanks!",
            "Edit src/app.py instead of src/main.py",
        ),
        (
            "No, that's wrong: the retry belongs in src/net/client.py, not in the uploader.",
            "The retry belongs in src/net/client.py, not in the uploader",
        ),
        # A word that carries the meaning is no cue: the statement keeps it.
        ("No tests were run, you forgot them", "No tests were run, you forgot them"),
        ("Stop using print statements", "Stop using print statements"),
        ("Revert the last commit", "Revert the last commit"),
        (
            "wait, you forgot to email bob@example.com the link https://x.example/y at /home/bob/n",
            "You forgot to email <email> the link <url> at ~/n",
        ),
    ],
)
def test_a_correction_is_restated_not_quoted(prompt: str, gist: str) -> None:
    assert digest.is_correction(prompt)
    assert digest.correction_gist(prompt) == gist


def test_a_question_is_neither_a_correction_nor_a_rule(store: Store) -> None:
    from memory_core import sessions

    sessions.start(store, session_id="S-q", agent="claude-code")
    with store.transaction() as db:
        for i, text in enumerate(
            (
                "how do we make sure that the token is always refreshed?",
                "No, why did you delete the migration?",
                "No, why did you delete it? Restore src/db/migrations/0003.sql from git.",
            )
        ):
            db.execute(
                "INSERT INTO agent_prompts (uuid, session_id, ts, text) VALUES (?, ?, ?, ?)",
                (f"p{i}", "S-q", 1_772_450_000.0 + i, text),
            )
    # The file the correction names is there (else it would be told as needing checking).
    migration = store.root / "src" / "db" / "migrations" / "0003.sql"
    migration.parent.mkdir(parents=True)
    migration.write_text("CREATE TABLE t (id INTEGER);\n")
    found = digest.extract(store, "S-q")
    assert [c["text"] for c in found["user_corrections"]] == [
        "Restore src/db/migrations/0003.sql from git"
    ]
    assert found["axioms_learned"] == []


def test_a_rule_is_restated_by_its_modality() -> None:
    rules = digest.axioms_in(
        "Never push to main. You must sign commits! Always run pytest tests/test_a.py -x. "
        "Tests must pass before merge. Make sure to rebase. Don't ever force-push. "
        "Complete the commit, always verify and run hooks. We should never commit .env files."
    )
    assert [digest.axiom_gist(rule) for rule in rules] == [
        "Never: push to main",
        "Must: sign commits",
        "Always: run pytest tests/test_a.py -x",
        "Must: Tests pass before merge",
        "Always: rebase",
        "Never: force-push",
        "Always: verify and run hooks",
        "Never: commit .env files",
    ]


# What a digest's richer facts hold (commands, corrections, paths, counts, missing values), each
# on an edge of YAML's plain style: a text YAML would read as something else unless quoted, a
# quote inside a quoted text, a line near the width where YAML folds.
FACT_VALUES: list[Any] = [
    None,
    True,
    False,
    0,
    3,
    -2,
    61.5,
    1e20,
    "",
    "pytest -q",
    "?",
    "? why is it failing",
    "?x",
    ":",
    ":x",
    "key: value",
    "ends with a colon:",
    "grep -n x # the count",
    "#1 first",
    "don't: stop the server",
    "it's done",
    "'quoted'",
    '"double"',
    " leading space",
    "trailing space ",
    "yes",
    "No",
    "null",
    "~",
    "123",
    "-x",
    "- item",
    "[list]",
    "{map}",
    "&anchor",
    "*alias",
    "!tag",
    "|pipe",
    ">fold",
    "%percent",
    "@dev",
    "`tick`",
    "café au lait",
    "tab\there",
    "a" * 94,
    "word " * 30,
    [],
    {},
    ["src/auth.py", "src/cookie.py"],
    {"input": 212, "output": 467},
    [{"command": "? x", "ok": None}, {"command": "it's: here", "ok": False}],
    {"nested": {"deep": [1, "two: 2", {"k": "v"}]}},
]


# Plain ids: a test id with quotes, backslashes or spaces cannot be selected by its node id.
@pytest.mark.parametrize(
    "value",
    FACT_VALUES,
    ids=[f"{n}-{re.sub(r'[^A-Za-z0-9]+', '_', repr(v))[:24]}" for n, v in enumerate(FACT_VALUES)],
)
def test_a_digests_facts_read_back_as_written_whatever_their_text(value: Any) -> None:
    frontmatter = {
        "schema_version": "1.0",
        "session_id": SESSION,
        "timestamp": "2026-03-02T11:13:20.000Z",
        "duration_minutes": 3,
        "agent_context": "@claude-code working",
        "compact_trigger": "auto",
        "engram": {"value": value, "turns": 3},
    }
    empty = {
        "user_corrections": [],
        "patterns_observed": [],
        "axioms_learned": [],
        "context_snapshot": {},
    }
    text = digest.render(frontmatter, empty)
    assert digest.parse_digest(text).frontmatter == frontmatter
    # Written as PyYAML writes it, whichever way engram took: the same facts, the same file.
    dumper = getattr(yaml, "CSafeDumper", yaml.SafeDumper)
    expected = yaml.dump(
        {"engram": frontmatter["engram"]},
        Dumper=dumper,
        sort_keys=False,
        allow_unicode=True,
        width=100,
    )
    assert "\n" + expected + "---\n" in text


def test_two_digests_in_the_same_millisecond_get_two_files(store: Store) -> None:
    from memory_core import sessions

    start = 1_772_450_000.0
    sessions.start(store, session_id="twice", agent="claude-code", now=start)
    sessions.observe_times(store, "twice", first_ts=start, last_ts=start + 90)
    first = digest.write_digest(store, "twice", trigger="auto", now=start + 100)
    second = digest.write_digest(store, "twice", trigger="manual", now=start + 100)
    assert first.path != second.path and first.path.exists() and second.path.exists()
    assert second.path.name == first.path.name.removesuffix(".yaml") + "-2.yaml"
    meta = seed_reader(second.path.read_text())["meta"]
    assert meta["compact_trigger"] == "manual" and meta["engram"]["duration_seconds"] == 90.0


def test_a_digest_that_is_not_utf8_is_refused_by_name(tmp_path: Path) -> None:
    bad = tmp_path / "latin1.yaml"
    bad.write_bytes("---\nsession_id: café\n---\n".encode("latin-1"))
    with pytest.raises(UsageError, match=r"latin1\.yaml is not UTF-8 text"):
        digest.read_digest(bad)


def test_a_digest_from_a_newer_engram_says_to_upgrade(tmp_path: Path) -> None:
    future = tmp_path / "future.yaml"
    future.write_text(
        SEED_EXAMPLE_FILE.read_text().replace('schema_version: "1.0"', 'schema_version: "2.0"')
    )
    with pytest.raises(EngramError) as caught:
        digest.read_digest(future)
    assert caught.value.hint == "upgrade engram to read digests written by a newer version"


def test_text_pasted_in_an_indented_fence_is_not_the_users_own_words() -> None:
    prompt = "the build fails:\n  ```\n  Error: no such file\n  ```\nplease fix it"
    assert digest.own_words(prompt) == "the build fails:\nplease fix it"


def test_the_digest_names_the_story_the_session_works_on(store: Store) -> None:
    from memory_core import session_state, sessions

    sessions.start(store, session_id="story", agent="claude-code", now=1_772_450_000.0)
    session_state.update(store, "story", agent="@dev", story="MIS-7", now=1_772_450_010.0)
    written = digest.write_digest(store, "story", trigger="manual", now=1_772_450_100.0)
    assert written.frontmatter["agent_context"] == "@dev implementing Story MIS-7"
    assert written.sections["context_snapshot"]["active_story"] == "MIS-7"
