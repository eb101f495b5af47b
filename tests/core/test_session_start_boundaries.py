"""What SessionStart injects, on the edges of each rule (issue 31): what it includes, what it
leaves out, and what a digest keeps, each threshold tested on both sides."""

from __future__ import annotations

from pathlib import Path

import pytest

from memory_core import memory
from memory_core.agents import context, digest
from memory_core.agents.transcripts import ingest_file
from memory_core.store import Store
from tests.agents_fixtures import Transcript, text, tool_use

NOW = 1_900_000_000.0
MINUTE = 60.0


def _session(
    store: Store,
    sid: str,
    *,
    last_seen: float,
    started: float | None = None,
    last_event: str | None = "tool_call",
    ended_at: float | None = None,
) -> None:
    with store.transaction() as db:
        db.execute(
            "INSERT INTO agent_sessions (session_id, agent, started_at, last_seen, ended_at,"
            " last_event) VALUES (?, 'claude-code', ?, ?, ?, ?)",
            (
                sid,
                started if started is not None else last_seen - 60,
                last_seen,
                ended_at,
                last_event,
            ),
        )


def _prompt(store: Store, sid: str, ts: float, words: str) -> None:
    with store.transaction() as db:
        db.execute(
            "INSERT INTO agent_prompts (uuid, session_id, ts, text) VALUES (?, ?, ?, ?)",
            (f"p-{sid}-{ts}", sid, ts, words),
        )


def _tool(
    store: Store,
    sid: str,
    ts: float,
    tool: str,
    *,
    ok: bool,
    path: str | None = None,
    command: str | None = None,
    error: str | None = None,
) -> None:
    with store.transaction() as db:
        db.execute(
            "INSERT INTO agent_tool_uses (tool_use_id, session_id, ts, tool, ok, path, command,"
            " error) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            (f"t-{sid}-{ts}", sid, ts, tool, int(ok), path, command, error),
        )


# -- where the previous session stopped: 30 minutes of silence ---------------------------------


@pytest.mark.parametrize(("silent_minutes", "told"), [(29, False), (31, True)])
def test_a_session_without_an_end_is_told_as_stopped_only_after_30_minutes(
    store: Store, silent_minutes: int, told: bool
) -> None:
    _session(store, "S-old", last_seen=NOW - silent_minutes * MINUTE)
    _prompt(store, "S-old", NOW - silent_minutes * MINUTE - 5, "Refactor the billing module")
    note = context.crash_note(store, "S-new", NOW)
    assert bool(note.items) is told
    if told:
        assert note.items[0].startswith("Session S-old recorded no end")
        assert "a tool call whose result was never recorded" in note.items[0]
        assert '"Refactor the billing module"' in note.items[0]


def test_the_current_session_is_never_told_as_the_previous_one(store: Store) -> None:
    _session(store, "S-me", last_seen=NOW - 120 * MINUTE)
    assert context.crash_note(store, "S-me", NOW).items == []


def test_a_session_that_ended_is_not_told_as_stopped(store: Store) -> None:
    _session(store, "S-end", last_seen=NOW - 120 * MINUTE, ended_at=NOW - 119 * MINUTE)
    with store.transaction() as db:
        db.execute("UPDATE agent_sessions SET end_reason = 'exit' WHERE session_id = 'S-end'")
    assert context.crash_note(store, "S-new", NOW).items == []


# -- long-term memories: open and hot in, resolved and user rules out ---------------------------


def test_a_resolved_memory_is_not_injected_an_open_one_is(store: Store) -> None:
    kept = memory.add(store, "Use Postgres 16 for the tests", type="decision", now=NOW - 3600)
    gone = memory.add(store, "The cache key misses the tenant id", type="finding", now=NOW - 3600)
    memory.update(store, gone["id"], status="resolved", now=NOW - 60)
    items = context.remembered(store, NOW).items
    assert any("Use Postgres 16 for the tests" in item for item in items), kept
    assert not any("cache key misses the tenant" in item for item in items)


def test_a_user_rule_is_not_told_again_as_a_memory(store: Store) -> None:
    memory.add(store, "Always run ruff before committing", type="preference", tags=["user-rule"])
    memory.add(store, "Prefer small pull requests", type="preference", now=NOW - 60)
    items = context.remembered(store, NOW).items
    assert any("Prefer small pull requests" in item for item in items)
    assert not any("ruff before committing" in item for item in items)


def test_pinned_memories_come_first_then_by_priority(store: Store) -> None:
    memory.add(store, "Ship on Tuesdays", type="decision", now=NOW - 60)
    memory.add(store, "Never log tokens", type="preference", pinned=True, now=NOW - 400 * 86400)
    items = context.remembered(store, NOW).items
    assert [("Never log tokens" in i, "Ship on Tuesdays" in i) for i in items] == [
        (True, False),
        (False, True),
    ]


# -- fitting the budget: every section gets its first items before any gets more -------------


def test_a_long_section_does_not_starve_the_ones_after_it() -> None:
    long = context.Section("Long", [f"long item {n:02d} " + "x" * 80 for n in range(20)])
    short = context.Section("Short", ["short one", "short two"])
    out = context.fit([long, short], 700)
    assert "short one" in out and "short two" in out
    assert len(out) <= 700
    told = [n for n in range(20) if f"long item {n:02d}" in out]
    assert told == list(range(len(told))) and len(told) > context.FIRST_PASS_ITEMS


def test_a_line_in_two_sections_is_told_once() -> None:
    out = context.fit(
        [
            context.Section("A", ["Run the tests with --no-cov"]),
            context.Section("B", ["run the  tests with --no-cov"]),
        ],
        1000,
    )
    assert out.lower().count("run the tests with --no-cov") + out.count("run the  tests") == 1
    assert "## B" not in out


def test_the_budget_never_passes_the_agents_cap() -> None:
    assert context.budget_chars(100) == 400
    assert context.budget_chars(100_000) == context.AGENT_OUTPUT_CAP_CHARS - 200
    assert context.budget_chars(-5) == 0


# -- files touched recently: what the agent really changed --------------------------------------


def test_a_failed_edit_does_not_count_as_a_file_touched(store: Store) -> None:
    _session(store, "S-e", last_seen=NOW)
    _tool(store, "S-e", NOW - 30, "Edit", ok=False, path="src/never_changed.py")
    _tool(store, "S-e", NOW - 20, "Edit", ok=True, path="src/changed.py")
    _tool(store, "S-e", NOW - 10, "Read", ok=True, path="src/only_read.py")
    assert context.recent_files(store, ["S-e"]) == ["src/changed.py"]


def test_files_touched_are_newest_first_and_bounded(store: Store) -> None:
    _session(store, "S-f", last_seen=NOW)
    for n in range(14):
        _tool(store, "S-f", NOW - 100 + n, "Write", ok=True, path=f"f{n:02d}.py")
    files = context.recent_files(store, ["S-f"])
    assert files == [f"f{n:02d}.py" for n in range(13, 1, -1)]


# -- the last session's open items: the latest failures, not the first ones ---------------------


def test_open_items_name_the_latest_failing_commands(store: Store, tmp_path: Path) -> None:
    t = Transcript("S-fail", store.root)
    t.prompt("get the build green")
    for n in range(5):
        t.response([tool_use(f"toolu_{n}", "Bash", command=f"make target{n}")])
        t.tool_result(
            f"toolu_{n}", f"Exit code 2\nmake: *** No rule to make target{n}", is_error=True
        )
    t.response([text("Still failing.")], stop_reason="end_turn")
    ingest_file(store, t.save(tmp_path / "fail.jsonl"))
    items = context.last_summary(store, "S-next").items
    open_items = [i for i in items if i.startswith("Open: ")]
    assert [i.split("`")[1] for i in open_items] == ["make target2", "make target3", "make target4"]


# -- digests: the latest 20 corrections, thresholds of the patterns, the timer ----------------


def test_a_digest_keeps_the_latest_corrections_when_there_are_more_than_20(store: Store) -> None:
    _session(store, "S-c", last_seen=NOW, started=NOW - 3600)
    for n in range(1, 23):
        _prompt(store, "S-c", NOW - 3000 + n, f"No, use tabs in module{n:02d}.py, not spaces")
    corrections = digest.extract(store, "S-c")["user_corrections"]
    assert len(corrections) == digest.MAX_ITEMS
    assert "module03" in corrections[0]["text"] and "module22" in corrections[-1]["text"]
    assert not any("module01" in c["text"] or "module02" in c["text"] for c in corrections)


@pytest.mark.parametrize(("failures", "pattern"), [(1, False), (2, True)])
def test_a_command_is_a_repeated_failure_from_its_second_failure(
    store: Store, failures: int, pattern: bool
) -> None:
    _session(store, "S-r", last_seen=NOW)
    for n in range(failures):
        _tool(store, "S-r", NOW - 50 + n, "Bash", ok=False, command="npm test", error="Error: boom")
    found = [
        p
        for p in digest.extract(store, "S-r")["patterns_observed"]
        if p["kind"] == "repeated_failure"
    ]
    assert [p["description"] for p in found] == (
        ["`npm test` failed 2 times: Error: boom"] if pattern else []
    )


@pytest.mark.parametrize(("edits", "hot"), [(2, False), (3, True)])
def test_a_file_is_hot_from_its_third_edit(store: Store, edits: int, hot: bool) -> None:
    _session(store, "S-h", last_seen=NOW)
    for n in range(edits):
        _tool(store, "S-h", NOW - 50 + n, "Edit", ok=True, path="src/app.py")
    found = [
        p for p in digest.extract(store, "S-h")["patterns_observed"] if p["kind"] == "hot_file"
    ]
    assert [p["description"] for p in found] == (["src/app.py edited 3 times"] if hot else [])


@pytest.mark.parametrize(("elapsed", "due"), [(599.0, False), (600.0, True)])
def test_the_timer_digest_is_due_at_its_interval_not_before(
    store: Store, elapsed: float, due: bool
) -> None:
    _session(store, "S-t", last_seen=NOW, started=NOW)
    assert digest.due(store, "S-t", 10, now=NOW + elapsed) is due
    assert digest.due(store, "S-t", 0, now=NOW + 10_000) is False


# -- the whole text, as the agent reads it -------------------------------------------------------


def test_the_last_session_is_told_by_its_requests_ending_work_and_open_failures(
    store: Store, tmp_path: Path
) -> None:
    t = Transcript("S-fail", store.root)
    t.prompt("get the build green")
    for n in range(2):
        t.response([tool_use(f"toolu_{n}", "Bash", command=f"make target{n}")])
        t.tool_result(
            f"toolu_{n}", f"Exit code 2\nmake: *** No rule to make target{n}", is_error=True
        )
    t.response(
        [text("First paragraph.\n\nStill failing: the Makefile has no such target.")],
        stop_reason="end_turn",
    )
    ingest_file(store, t.save(tmp_path / "fail.jsonl"))
    out = context.session_start_text(store, current_session="S-next", now=NOW)
    lines = out.splitlines()
    assert lines[:3] == [context.HEADER, "", "## Last session"]
    assert lines[3].startswith("- S-fail (claude-code, 1 turns, last active ")
    assert lines[4:] == [
        "- Last requests: \u201cget the build green\u201d",
        "- Where it ended: Still failing: the Makefile has no such target.",
        "- Done: ran 2 commands (2 failed)",
        "- Open: `make target0` failed the last time it ran"
        " (exit code 2: make: *** No rule to make target0)",
        "- Open: `make target1` failed the last time it ran"
        " (exit code 2: make: *** No rule to make target1)",
    ]


def test_the_previous_session_stopped_mid_work_with_its_files(store: Store) -> None:
    _session(store, "S-cut", last_seen=NOW - 2 * 3600)
    long_request = "Refactor the billing module " + "and its tests " * 20
    _prompt(store, "S-cut", NOW - 2 * 3600 - 60, long_request)
    _tool(store, "S-cut", NOW - 7300, "Edit", ok=True, path="billing.py")
    _tool(store, "S-cut", NOW - 7250, "Write", ok=True, path="test_billing.py")
    items = context.crash_note(store, "S-next", NOW).items
    said = items[0]
    assert said.startswith("Session S-cut recorded no end; the last thing it did (")
    quoted = said.split('while working on: "')[1].removesuffix('".')
    assert len(quoted) == 160 and quoted.endswith("…")
    assert items[1] == "Files it was changing: test_billing.py, billing.py."
    assert items[2].startswith("Check those files before continuing")
    # The session asking is never told about itself.
    out = context.session_start_text(store, current_session="S-cut", now=NOW)
    assert "Where the previous session stopped" not in out


def test_files_touched_recently_are_their_own_section(store: Store) -> None:
    _session(store, "S-f", last_seen=NOW)
    _tool(store, "S-f", NOW - 20, "Edit", ok=True, path="src/a.py")
    _tool(store, "S-f", NOW - 10, "Edit", ok=True, path="src/b.py")
    out = context.session_start_text(store, current_session="S-g", now=NOW)
    assert "## Files touched recently\n- src/b.py, src/a.py" in out


def test_rules_and_corrections_are_told_once_whatever_their_case(store: Store) -> None:
    _session(store, "S-r", last_seen=NOW)
    _prompt(store, "S-r", NOW - 30, "No, use tabs in the Makefile.")
    _prompt(store, "S-r", NOW - 20, "NO, USE TABS IN THE MAKEFILE.")
    _prompt(store, "S-r", NOW - 10, "Always run the linter before committing.")
    corrections, rules = context.corrections_and_rules(store, ["S-r"])
    assert len(corrections.items) == 1
    assert rules.items == ["Always run the linter before committing."]
    out = context.session_start_text(store, current_session="S-x", now=NOW)
    assert "## Rules the user stated\n- Always run the linter before committing." in out
    assert "## User corrections (do not repeat these mistakes)\n- " in out


def test_a_repeated_failure_without_an_error_text_says_none_of_it(store: Store) -> None:
    _session(store, "S-d", last_seen=NOW)
    for n in range(2):
        _tool(store, "S-d", NOW - 50 + n, "Bash", ok=False, command="npm run build")
    (item,) = context.dead_ends(store, ["S-d"]).items
    assert item == "`npm run build` failed 2 times; no fix was recorded after it"


def test_memories_are_ranked_by_priority_and_a_pinned_one_is_kept_however_low(
    store: Store,
) -> None:
    memory.add(store, "Tests run in CI only", type="learning", now=NOW - 5 * 86400)
    memory.add(store, "Use Postgres 16", type="decision", now=NOW - 60)
    memory.add(store, "Minor but pinned", type="project", base_priority=0.1, pinned=True, now=NOW)
    memory.add(store, "Old and forgotten", type="learning", now=NOW - 400 * 86400)
    items = context.remembered(store, NOW).items
    assert [i.split(": ", 1)[1] for i in items] == [
        "Minor but pinned",
        "Use Postgres 16",
        "Tests run in CI only",
    ]


def test_the_branch_or_a_detached_head_is_named(store: Store) -> None:
    from tests.conftest import git

    git(store.root, "init", "-q", "-b", "trunk")
    (store.root / "a").write_text("a\n")
    git(store.root, "add", "a")
    git(store.root, "commit", "-qm", "one")
    assert context.now_section(store, None).items == ["Git branch: trunk"]
    git(store.root, "checkout", "-q", "--detach")
    assert context.now_section(store, None).items == ["Git branch: detached HEAD"]


def test_a_request_is_recognised_by_its_content_words() -> None:
    assert digest.request_gist("Please fix the login test in src/auth.py again") == (
        "fix login test src/auth.py"
    )
    assert digest._expand("Don't push. It's late") == "Do not push. It is late"
    assert digest.axioms_in("Xcode must always be closed before building.") == [
        "Xcode must always be closed before building."
    ]


def test_a_repeated_request_is_referenced_by_its_prompts(store: Store) -> None:
    _session(store, "S-rep", last_seen=NOW)
    _prompt(store, "S-rep", NOW - 30, "do it now")
    _prompt(store, "S-rep", NOW - 20, "Fix the parser")
    _prompt(store, "S-rep", NOW - 10, "Do it now!")
    _prompt(store, "S-rep", NOW - 5, "fix the parser")
    found = [
        p["description"]
        for p in digest.extract(store, "S-rep")["patterns_observed"]
        if p["kind"] == "repeated_request"
    ]
    assert sorted(found) == [
        "the same request 2 times (prompts 1, 3)",
        "the same request 2 times (prompts 2, 4): fix parser",
    ]


def test_a_rule_said_twice_is_learned_once(store: Store) -> None:
    _session(store, "S-ax", last_seen=NOW)
    _prompt(store, "S-ax", NOW - 20, "Always run the linter before committing.")
    _prompt(store, "S-ax", NOW - 10, "always run the linter before committing")
    axioms = digest.extract(store, "S-ax")["axioms_learned"]
    assert [a["text"] for a in axioms] == ["Always: run the linter before committing"]


def test_a_long_correction_is_cut_with_an_ellipsis() -> None:
    assert digest._short("x" * 500) == "x" * 399 + "…"
    assert digest._short("short  text") == "short text"


def test_the_timer_is_never_due_for_an_unknown_or_ended_session(store: Store) -> None:
    assert digest.due(store, "S-unknown", 10, now=NOW) is False
    _session(store, "S-end", last_seen=NOW, started=NOW - 3600, ended_at=NOW)
    assert digest.due(store, "S-end", 10, now=NOW + 3600) is False


def test_the_story_the_session_works_on(store: Store) -> None:
    from memory_core import sessions

    sessions.start(store, session_id="S-story", agent="claude-code", now=NOW)
    assert digest.active_story(store, "S-story") is None
    with store.transaction() as db:
        db.execute("UPDATE sessions SET active_story = 'MIS-3' WHERE id = 'S-story'")
    assert digest.active_story(store, "S-story") == "MIS-3"


def test_a_written_digest_keeps_the_commands_in_its_richer_facts(store: Store) -> None:
    _session(store, "S-w", last_seen=NOW, started=NOW - 600)
    _tool(store, "S-w", NOW - 100, "Bash", ok=True, command="make test")
    written = digest.write_digest(store, "S-w", trigger="manual", now=NOW)
    assert written.frontmatter["engram"]["commands"] == [{"command": "make test", "ok": True}]
    assert written.sections["context_snapshot"]["commands_executed"] == ["make test"]


def test_star_bullets_and_engrams_older_yaml_digests_are_read() -> None:
    text = (
        '---\nschema_version: "1.0"\nsession_id: "S"\n---\n\n## User Corrections\n\n'
        '* "use tabs"\n- (none captured)\n\n## Patterns Observed\n\n* Pattern: "npm test failed"\n'
    )
    parsed = digest.parse_digest(text)
    assert parsed.sections["user_corrections"] == ["use tabs"]
    assert parsed.sections["patterns_observed"] == ["npm test failed"]
    old = (
        "---\nsession_id: S\n---\nuser_corrections:\n  - text: use tabs\n"
        "patterns_observed:\n  - description: npm test failed 3 times\n"
        "context_snapshot:\n  agent: dev\n  files_modified: [a.py]\n"
    )
    sections = digest.parse_digest(old).sections
    assert sections["patterns_observed"] == ["npm test failed 3 times"]
    assert sections["context_snapshot"]["active_agent"] == "@dev"
    assert sections["context_snapshot"]["files_modified"] == ["a.py"]


def test_a_correction_of_exactly_the_limit_is_kept_whole() -> None:
    assert digest._short("x" * digest.MAX_ITEM_CHARS) == "x" * digest.MAX_ITEM_CHARS
    assert digest._short("x" * (digest.MAX_ITEM_CHARS + 1)) == "x" * 399 + "…"


def test_the_agent_context_names_the_agent_its_model_and_story() -> None:
    assert digest.agent_context(None, None, None) == "@agent working"
    assert digest.agent_context("dev", "claude-opus-4", "MIS-3") == (
        "@dev (claude-opus-4) implementing Story MIS-3"
    )
    assert digest.agent_context("@qa", None, None) == "@qa working"
