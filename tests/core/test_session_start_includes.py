"""What SessionStart tells the agent, section by section (issue 31): what each includes and what
it leaves out, each rule on both sides of its edge, as the agent reads the text."""

from __future__ import annotations

import pytest

from memory_core import memory, sessions
from memory_core.agents import context
from memory_core.store import Store

NOW = 1_900_000_000.0
MINUTE = 60.0


def _agent_session(
    store: Store,
    sid: str,
    *,
    last_seen: float,
    last_event: str | None = "tool_call",
    ended_at: float | None = None,
    end_reason: str | None = None,
) -> None:
    with store.transaction() as db:
        db.execute(
            "INSERT INTO agent_sessions (session_id, agent, started_at, last_seen, ended_at,"
            " end_reason, last_event) VALUES (?, 'claude-code', ?, ?, ?, ?, ?)",
            (sid, last_seen - 60, last_seen, ended_at, end_reason, last_event),
        )


def _prompt(store: Store, sid: str, ts: float, words: str) -> None:
    with store.transaction() as db:
        db.execute(
            "INSERT INTO agent_prompts (uuid, session_id, ts, text) VALUES (?, ?, ?, ?)",
            (f"p-{sid}-{ts}", sid, ts, words),
        )


def _open_turn(store: Store, sid: str, ts: float, words: str) -> None:
    with store.transaction() as db:
        db.execute(
            "INSERT INTO agent_turns (uuid, session_id, started_at, user_message, recorded)"
            " VALUES (?, ?, ?, ?, 0)",
            (f"turn-{sid}-{ts}", sid, ts, words),
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


def _session_with_turns(store: Store, sid: str, turns: list[tuple[str, str]], at: float) -> None:
    sessions.start(store, session_id=sid, agent="claude-code", now=at)
    for n, (asked, answered) in enumerate(turns):
        sessions.record_turn(
            store,
            sid,
            user_message=asked,
            assistant_response=answered,
            started_at=at + n,
            ended_at=at + n + 0.5,
        )


# -- where the previous session stopped ----------------------------------------------------------


@pytest.mark.parametrize(
    ("last_event", "words"),
    [
        ("tool_call", "a tool call whose result was never recorded"),
        ("tool_result", "a tool result the agent had not answered yet"),
        ("prompt", "a request that had no reply yet"),
        ("interrupt", "an interruption by the user"),
    ],
)
def test_each_way_a_session_can_stop_mid_work_is_said_in_plain_words(
    store: Store, last_event: str, words: str
) -> None:
    _agent_session(store, "S-old", last_seen=NOW - 45 * MINUTE, last_event=last_event)
    (said, advice) = context.crash_note(store, "S-new", NOW).items
    assert said == f"Session S-old recorded no end; the last thing it did (45 min ago) was {words}."
    assert advice.startswith("Check those files before continuing;")


def test_a_session_whose_last_event_was_its_reply_is_not_told_as_stopped(store: Store) -> None:
    _agent_session(store, "S-old", last_seen=NOW - 45 * MINUTE, last_event="reply")
    assert context.crash_note(store, "S-new", NOW).items == []


def test_a_hook_only_session_with_an_open_turn_stopped_on_a_request(store: Store) -> None:
    _agent_session(store, "S-hook", last_seen=NOW - 2 * 3600, last_event=None)
    assert context.crash_note(store, "S-new", NOW).items == []  # no open turn: nothing known
    _open_turn(store, "S-hook", NOW - 2 * 3600, "migrate the users table")
    _prompt(store, "S-hook", NOW - 2 * 3600, "migrate the users table")
    said = context.crash_note(store, "S-new", NOW).items[0]
    assert "was a request that had no reply yet" in said
    assert said.endswith(', while working on: "migrate the users table".')
    assert context.now_section(store, "S-new").items == [
        "Task in progress (not finished): \u201cmigrate the users table\u201d"
    ]


def test_a_session_settled_as_stopped_is_told_even_within_the_half_hour(store: Store) -> None:
    # Ended by engram as "stopped" (its transcript ended mid-work) ten minutes ago: no other
    # window is still running it, so the note is due at once.
    _agent_session(
        store,
        "S-stop",
        last_seen=NOW - 10 * MINUTE,
        ended_at=NOW - 10 * MINUTE,
        end_reason="stopped",
    )
    assert context.crash_note(store, "S-new", NOW).items[0].startswith("Session S-stop recorded")
    # Ended without a reason said (an older store): stopped as well, once the half hour passed.
    _agent_session(
        store, "S-none", last_seen=NOW - 5 * MINUTE, ended_at=NOW - 5 * MINUTE, end_reason=None
    )
    assert context.crash_note(store, "S-new", NOW).items[0].startswith("Session S-none recorded")


def test_a_request_of_another_session_or_an_empty_one_is_not_quoted(store: Store) -> None:
    _agent_session(store, "S-old", last_seen=NOW - 45 * MINUTE)
    _prompt(store, "S-other", NOW - 50 * MINUTE, "not this one")
    _prompt(store, "S-old", NOW - 46 * MINUTE, "")
    said = context.crash_note(store, "S-new", NOW).items[0]
    assert "while working on" not in said and said.endswith("never recorded.")


def test_only_the_files_it_changed_are_named_newest_first_up_to_eight(store: Store) -> None:
    _agent_session(store, "S-old", last_seen=NOW - 45 * MINUTE)
    for n in range(10):
        _tool(store, "S-old", NOW - 3600 + n, "Edit", ok=True, path=f"m{n}.py")
    _tool(store, "S-old", NOW - 3500, "Read", ok=True, path="read_only.py")
    _tool(store, "S-old", NOW - 3499, "Bash", ok=True, command="ls")
    files = context.crash_note(store, "S-new", NOW).items[1]
    assert files == "Files it was changing: " + ", ".join(f"m{n}.py" for n in range(9, 1, -1)) + "."


# -- the last session --------------------------------------------------------------------------


def test_the_last_session_with_turns_is_told_and_a_session_just_starting_skipped(
    store: Store,
) -> None:
    _session_with_turns(store, "S-done", [("add the export", "Export added.")], NOW - 3600)
    sessions.start(store, session_id="S-empty", agent="claude-code", now=NOW - 60)
    items = context.last_summary(store, "S-new").items
    assert items[0].startswith("S-done (claude-code, 1 turns, last active ")
    assert "Last requests: \u201cadd the export\u201d" in items


def test_the_same_session_after_a_compaction_is_told_what_it_did_so_far(store: Store) -> None:
    _session_with_turns(store, "S-me", [("rename the module", "Renamed.")], NOW - 600)
    section = context.last_summary(store, "S-me")
    assert section.title == "This session so far"
    assert context.last_summary(store, "S-other").title == "Last session"


def test_a_closed_named_session_is_told_by_its_name_summary_decisions_and_open_items(
    store: Store,
) -> None:
    _session_with_turns(
        store,
        "S-named",
        [("plan the cache", "Planned."), ("write it", "First paragraph.\n\n  \n\nCache in place.")],
        NOW - 3600,
    )
    with store.transaction() as db:
        db.execute("UPDATE sessions SET name = 'cache work' WHERE id = 'S-named'")
    sessions.set_summary(
        store,
        "S-named",
        overview="Added a read-through cache",
        decisions=["Keep the cache in process"],
        open_items=["Measure the hit rate"],
    )
    sessions.close(store, "S-named", now=NOW - 3000)
    items = context.last_summary(store, "S-new").items
    assert items[0].startswith("cache work (claude-code, 2 turns, ended ")
    assert "Summary: Added a read-through cache" in items
    assert "Last requests: \u201cplan the cache\u201d; \u201cwrite it\u201d" in items
    assert "Where it ended: Cache in place." in items
    assert "Open: Measure the hit rate" in items
    assert any(item.startswith("Decided: Keep the cache in process") for item in items)


@pytest.mark.parametrize(
    ("count", "said", "named"),
    [(1, "changed 1 file (", 1), (5, "changed 5 files (", 5), (7, "changed 7 files (", 5)],
)
def test_what_was_done_names_the_files_changed_and_counts_the_rest(
    store: Store, count: int, said: str, named: int
) -> None:
    _session_with_turns(store, "S-f", [("edit", "Edited.")], NOW - 600)
    for n in range(count):
        (store.root / f"f{n}.py").write_text("x = 1\n")
        sessions.record_file_modified(store, "S-f", f"f{n}.py", NOW - 500 + n)
    sessions.record_command(store, "S-f", "pytest", exit_code=1, ts=NOW - 400)
    sessions.record_command(store, "S-f", "pytest -x", exit_code=0, ts=NOW - 300)
    done = next(i for i in context.last_summary(store, "S-new").items if i.startswith("Done: "))
    changed, commands = done.removeprefix("Done: ").split("; ")
    assert changed.startswith(said)
    listed = changed.removeprefix(said).removesuffix(")").split(" and ")
    assert len(listed[0].split(", ")) == named
    assert listed[1:] == ([f"{count - named} more"] if count > named else [])
    assert commands == "ran 2 commands (1 failed)"


def test_a_command_blocked_by_a_hook_is_open_without_its_error_text(store: Store) -> None:
    _session_with_turns(store, "S-b", [("deploy", "Blocked.")], NOW - 600)
    _agent_session(store, "S-b", last_seen=NOW - 500, last_event="reply")
    sessions.record_command(store, "S-b", "make deploy", exit_code=1, ts=NOW - 550, failed=True)
    _tool(
        store,
        "S-b",
        NOW - 550,
        "Bash",
        ok=False,
        command="make deploy",
        error="PreToolUse:Bash hook error: blocked by policy: deploys need review",
    )
    items = context.last_summary(store, "S-new").items
    opened = [i for i in items if i.startswith("Open: `make deploy`")]
    assert opened == ["Open: `make deploy` failed the last time it ran (blocked by a hook)"]


# -- the task in progress ----------------------------------------------------------------------


@pytest.mark.parametrize("last_event", ["prompt", "tool_call", "tool_result", "interrupt"])
def test_the_last_request_of_a_session_stopped_mid_work_is_the_task_in_progress(
    store: Store, last_event: str
) -> None:
    _agent_session(store, "S-w", last_seen=NOW - 60, last_event=last_event)
    _prompt(store, "S-w", NOW - 200, "first request")
    _prompt(store, "S-w", NOW - 100, "fix   the\nflaky test")
    assert context.now_section(store, "S-new").items[-1] == (
        "Task in progress (not finished): \u201cfix the flaky test\u201d"
    )


def test_a_session_that_answered_has_no_task_in_progress(store: Store) -> None:
    _agent_session(store, "S-w", last_seen=NOW - 60, last_event="reply")
    _prompt(store, "S-w", NOW - 100, "fix the flaky test")
    _open_turn(store, "S-w", NOW - 100, "fix the flaky test")
    assert context.now_section(store, "S-new").items == []
    # The session asking is not its own previous session.
    _agent_session(store, "S-me", last_seen=NOW, last_event="prompt")
    _prompt(store, "S-me", NOW, "my own request")
    assert context.now_section(store, "S-me").items == []


# -- long-term memories --------------------------------------------------------------------------


def test_memories_below_the_priority_floor_are_left_out_unless_pinned(store: Store) -> None:
    memory.add(store, "Floor is inclusive", type="learning", base_priority=0.3, now=NOW)
    memory.add(store, "Just below the floor", type="learning", base_priority=0.29, now=NOW)
    memory.add(store, "Low but pinned", type="learning", base_priority=0.1, pinned=True, now=NOW)
    told = [i.split(": ", 1)[1] for i in context.remembered(store, NOW).items]
    assert told == ["Low but pinned", "Floor is inclusive"]


def test_only_kinds_worth_remembering_are_told_at_most_eight(store: Store) -> None:
    for kind in ("decision", "preference", "learning", "finding", "project"):
        memory.add(store, f"a {kind} kept", type=kind, now=NOW)
    memory.add(store, "an action left out", type="action", now=NOW)
    items = context.remembered(store, NOW).items
    assert sorted(i.split(":")[0] for i in items) == sorted(
        ["decision", "preference", "learning", "finding", "project"]
    )
    for n in range(10):
        memory.add(store, f"extra decision {n}", type="decision", now=NOW)
    assert len(context.remembered(store, NOW).items) == 8


def test_a_memory_that_repeats_its_kind_is_not_told_twice_over(store: Store) -> None:
    memory.add(store, "Decision: use uv for installs", type="decision", now=NOW)
    assert context.remembered(store, NOW).items == ["decision: use uv for installs"]


# -- corrections and rules -------------------------------------------------------------------


def test_a_rule_told_as_part_of_a_decision_is_not_repeated_as_a_rule(store: Store) -> None:
    _agent_session(store, "S-r", last_seen=NOW)
    _prompt(store, "S-r", NOW - 20, "Always use uv for installs.")
    _prompt(store, "S-r", NOW - 10, "Never push to main on Fridays.")
    memory.add(
        store,
        "Always use uv for installs, since pip is slow here",
        type="decision",
        tags=["user-decision"],
        now=NOW,
    )
    _corrections, rules = context.corrections_and_rules(store, ["S-r"])
    assert rules.items == ["Never push to main on Fridays."]


def test_rules_kept_as_memories_outlive_their_prompts(store: Store) -> None:
    _agent_session(store, "S-r", last_seen=NOW)
    memory.add(store, "Always run ruff before committing.", type="preference", tags=["user-rule"])
    _corrections, rules = context.corrections_and_rules(store, ["S-r"])
    assert rules.items == ["Always run ruff before committing."]
    assert context.corrections_and_rules(store, [])[1].items == []


def test_a_correction_of_another_session_is_not_read(store: Store) -> None:
    _agent_session(store, "S-a", last_seen=NOW)
    _prompt(store, "S-a", NOW - 100, "Set up the project")
    _prompt(store, "S-b", NOW - 50, "No, use tabs in the Makefile.")
    corrections, _rules = context.corrections_and_rules(store, ["S-a"])
    assert corrections.items == []


# -- dead ends ---------------------------------------------------------------------------------


def test_a_dead_end_says_what_worked_instead_when_nothing_fixed_it(store: Store) -> None:
    _agent_session(store, "S-d", last_seen=NOW)
    for n in range(3):
        _tool(
            store,
            "S-d",
            NOW - 100 + n,
            "Bash",
            ok=False,
            command="npm test",
            error="Error: Cannot find module 'jest'",
        )
    _tool(store, "S-d", NOW - 50, "Bash", ok=True, command="npm run vitest")
    (item,) = context.dead_ends(store, ["S-d"]).items
    assert item.startswith("`npm test` failed 3 times (Error: Cannot find module 'jest')")
    assert item.endswith("; what worked instead: `npm run vitest`")
    assert context.dead_ends(store, []).items == []


def test_failures_of_sessions_not_asked_about_are_not_dead_ends(store: Store) -> None:
    _agent_session(store, "S-a", last_seen=NOW)
    for n in range(2):
        _tool(store, "S-b", NOW - 10 + n, "Bash", ok=False, command="make", error="boom")
    assert context.dead_ends(store, ["S-a"]).items == []


# -- gotchas and files ---------------------------------------------------------------------------


def test_gotchas_are_looked_up_only_when_there_are_files_or_a_task(store: Store) -> None:
    from memory_core import gotchas

    gotchas.add(store, "Pool exhaustion under load", related_files=["db.py"])
    assert context.gotchas_for(store, [], "").items == []
    items = context.gotchas_for(store, ["db.py"], "").items
    assert any("Pool exhaustion under load" in item for item in items)
    assert not any(item.startswith(("#", "- ", "* ")) for item in items)


def test_recent_files_without_sessions_is_empty_and_put_back_files_are_left_out(
    store: Store,
) -> None:
    assert context.recent_files(store, []) == []
    _agent_session(store, "S-f", last_seen=NOW)
    _tool(store, "S-f", NOW - 20, "Edit", ok=True, path="kept.py")
    assert context.recent_files(store, ["S-f"], limit=1) == ["kept.py"]


# -- fitting and cutting -----------------------------------------------------------------------


def test_a_line_is_cut_only_past_its_limit() -> None:
    assert context._one_line("a" * 10, 10) == "a" * 10
    assert context._one_line("a" * 11, 10) == "a" * 9 + "…"
    assert context._one_line("  two\n\nlines  ", 20) == "two lines"


def test_an_item_that_exactly_fills_the_budget_is_told_and_one_more_character_is_not() -> None:
    title, item = "T", "x" * 50
    # The header and its newline, the title line ("\n## T" and its cost), the item ("- ..." + 1).
    exact = len(context.HEADER) + 1 + len(title) + 5 + len(item) + 3
    assert item in context.fit([context.Section(title, [item])], exact)
    assert context.fit([context.Section(title, [item])], exact - 1) == ""
    text = context.fit([context.Section(title, [item])], exact)
    assert text == f"{context.HEADER}\n\n## {title}\n- {item}"


def test_the_first_pass_gives_each_section_three_items_before_any_gets_a_fourth() -> None:
    first = context.Section("First", [f"first {n}" for n in range(6)])
    second = context.Section("Second", [f"second {n}" for n in range(6)])
    # Room for about seven items: three each, then one more for the first section.
    room = len(context.HEADER) + 1 + 2 * (6 + 5) + 7 * (7 + 3) + 5
    text = context.fit([first, second], room)
    assert [f"first {n}" in text for n in range(6)] == [True] * 4 + [False] * 2
    assert [f"second {n}" in text for n in range(6)] == [True] * 3 + [False] * 3


def test_the_whole_text_keeps_to_a_small_token_budget(store: Store) -> None:
    for n in range(30):
        memory.add(store, f"decision number {n} " + "y" * 60, type="decision", now=NOW)
    text = context.session_start_text(store, token_budget=100, now=NOW)
    assert 0 < len(text) <= 400 and text.startswith(context.HEADER)


def test_a_correction_naming_a_file_that_is_gone_is_marked_for_checking(store: Store) -> None:
    (store.root / "src").mkdir()
    (store.root / "src" / "kept.py").write_text("x = 1\n")
    _agent_session(store, "S-c", last_seen=NOW)
    _prompt(store, "S-c", NOW - 20, "No, the bug is in src/removed.py, not in the router.")
    _prompt(store, "S-c", NOW - 10, "No, edit src/kept.py instead of the tests.")
    corrections, _rules = context.corrections_and_rules(store, ["S-c"])
    assert sorted(corrections.items) == [
        "No, edit src/kept.py instead of the tests.",
        "No, the bug is in src/removed.py, not in the router."
        " [needs checking: src/removed.py does not exist now]",
    ]


def test_an_open_item_is_cut_at_300_characters(store: Store) -> None:
    _session_with_turns(store, "S-o", [("plan", "Planned.")], NOW - 600)
    sessions.set_summary(store, "S-o", open_items=["a" * 300, "b" * 301])
    opened = [i for i in context.last_summary(store, "S-new").items if i.startswith("Open: ")]
    assert opened == ["Open: " + "a" * 300, "Open: " + "b" * 299 + "…"]


def test_the_branch_is_told_under_now(store: Store) -> None:
    from tests.conftest import git

    git(store.root, "init", "-q", "-b", "trunk")
    text = context.session_start_text(store, now=NOW)
    assert text == f"{context.HEADER}\n\n## Now\n- Git branch: trunk"
