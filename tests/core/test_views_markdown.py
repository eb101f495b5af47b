"""Every command result as the Markdown each editor shows (issue 31): exact words, plurals,
empty states, cuts, and times with how long ago."""

from __future__ import annotations

import pytest

from memory_core import clock, views

NOW = 1_790_000_000.0  # 2026-09-21T14:13:20Z
AN_HOUR_AGO = "2026-09-21T13:13:20Z"


@pytest.fixture(autouse=True)
def _fixed_now(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(clock, "now", lambda: NOW)


def test_times_are_shown_to_the_minute_with_how_long_ago() -> None:
    assert views._ago(AN_HOUR_AGO) == "2026-09-21 13:13 (1 h ago)"
    assert views._ago("not a time") == "not a time"
    assert views._ago("") == views._ago(None) == views._ago(12) == ""


def test_long_text_is_one_line_cut_with_an_ellipsis_at_its_limit() -> None:
    assert views._one_line("a\n  b\tc") == "a b c"
    assert views._one_line("x" * 200) == "x" * 200
    assert views._one_line("x" * 201) == "x" * 199 + "…"
    assert views._one_line("abcdef", 5) == "abcd…"
    assert views._one_line(None) == ""


def test_checkpoints_say_why_and_how_many_files() -> None:
    text = views.checkpoints(
        [
            {
                "id": "c1",
                "label": "before refactor",
                "created_at": AN_HOUR_AGO,
                "files": 1,
                "reason": "manual",
                "description": "safe point",
            },
            {"id": "c2", "created_at": AN_HOUR_AGO, "files": 12, "reason": "pre-rollback"},
            {"id": "c3", "created_at": AN_HOUR_AGO, "files": None, "reason": "burst"},
            {"id": "c4", "created_at": AN_HOUR_AGO, "files": 0, "reason": "turns"},
            {"id": "c5", "created_at": AN_HOUR_AGO, "files": 2, "reason": "import"},
        ]
    )
    when = "2026-09-21 13:13 (1 h ago)"
    assert text == "\n".join(
        [
            "# Checkpoints",
            "",
            f"- **before refactor** `c1`: {when}, 1 file, made by hand — safe point",
            f"- **c2** `c2`: {when}, 12 files, made before a rollback, to undo it",
            f"- **c3** `c3`: {when}, ? files, automatic: many files changed at once",
            f"- **c4** `c4`: {when}, 0 files, automatic: every few agent turns",
            f"- **c5** `c5`: {when}, 2 files, import",
            "",
        ]
    )
    assert views.checkpoints([]) == "# Checkpoints\n\nNo checkpoints yet.\n"


def test_sessions_show_agent_status_turns_and_overview() -> None:
    text = views.sessions(
        [
            {
                "id": "s1",
                "label": "cache",
                "agent": "claude-code",
                "status": "active",
                "started_at": AN_HOUR_AGO,
                "turns": 3,
                "summary": {"overview": "moved\nthe cache"},
            },
            {
                "id": "s2",
                "status": "closed",
                "started_at": AN_HOUR_AGO,
                "rolling_summary": "rolling",
            },
            {"id": "s3", "status": "closed", "started_at": AN_HOUR_AGO, "turns": 1},
        ]
    )
    assert text.splitlines()[2:] == [
        "- **cache** (claude-code, active): started 2026-09-21 13:13 (1 h ago), 3 turn(s)",
        "  moved the cache",
        "- **s2** (agent, closed): started 2026-09-21 13:13 (1 h ago), 0 turn(s)",
        "  rolling",
        "- **s3** (agent, closed): started 2026-09-21 13:13 (1 h ago), 1 turn(s)",
    ]
    assert views.sessions([]) == "# Sessions\n\nNo sessions recorded yet.\n"


def test_history_shows_each_turns_words_and_tools() -> None:
    text = views.history(
        "s1",
        [
            {
                "seq": 1,
                "started_at": AN_HOUR_AGO,
                "user_message": "add a cache",
                "assistant_response": "Added.",
                "tool_calls": [{"tool": "Edit"}, {"name": "Bash"}, {}, "x"],
            },
            {"seq": 2, "started_at": None, "user_message": "y" * 700},
        ],
    )
    assert text == "\n".join(
        [
            "# History of session s1",
            "",
            "## Turn 1, 2026-09-21 13:13 (1 h ago)",
            "",
            "**You:** add a cache",
            "",
            "**Agent:** Added.",
            "",
            "Tools: Edit, Bash, tool",
            "",
            "## Turn 2, ",
            "",
            f"**You:** {'y' * 599}…",
            "",
            "",
        ]
    )
    assert views.history("s9", []) == "# History of session s9\n\nNo turns recorded yet.\n"


def test_a_resumed_session_says_where_it_stood_what_changed_and_its_turns() -> None:
    loaded = {
        "session": {
            "id": "s1",
            "label": "cache work",
            "agent": "claude-code",
            "status": "active",
            "turns": 1,
            "started_at": AN_HOUR_AGO,
            "summary": {"overview": "half done", "decisions": ["LRU"], "open_items": ["tests"]},
        },
        "turns": [{"seq": 1, "started_at": AN_HOUR_AGO, "user_message": "go"}],
        "workspace_changes": {
            "branch": {"then": "main", "now": "dev"},
            "added": [f"f{n}.py" for n in range(9)],
            "modified": ["m.py"],
            "deleted": [],
        },
    }
    text = views.resumed(loaded, ["m.py"])
    shown = ", ".join(f"`f{n}.py`" for n in range(8))
    assert text == "\n".join(
        [
            "# Session cache work",
            "",
            "claude-code session, active, 1 turn, started 2026-09-21 13:13 (1 h ago).",
            "",
            "## Where it stood",
            "",
            "half done",
            "",
            "## Decisions",
            "",
            "- LRU",
            "",
            "## Open items",
            "",
            "- tests",
            "",
            "## Since the session",
            "",
            "- branch switched from `main` to `dev`",
            f"- added: {shown} and 1 more",
            "- modified: `m.py`",
            "",
            "## Reopened",
            "",
            "- `m.py`",
            "",
            "## Turns",
            "",
            "## Turn 1, 2026-09-21 13:13 (1 h ago)",
            "",
            "**You:** go",
            "",
            "",
        ]
    )


def test_a_resumed_session_with_nothing_changed_and_no_summary() -> None:
    text = views.resumed(
        {"id": "s2", "session": {"turns": 2}, "workspace_changes": {"added": []}}, []
    )
    assert text.splitlines()[:8] == [
        "# Session s2",
        "",
        "agent session, saved, 2 turns, started .",
        "",
        "## Since the session",
        "",
        "- nothing changed in the workspace",
        "",
    ]
    assert "## Reopened" not in text and "## Where it stood" not in text
    assert "## Since the session" not in views.resumed({"session": {"id": "s3"}}, [])


def test_metrics_are_a_table_with_the_success_rate_in_percent() -> None:
    text = views.metrics(
        {
            "id": "s1",
            "duration_seconds": 630,
            "turns": 4,
            "input_tokens": 100,
            "output_tokens": 20,
            "avg_tokens_per_turn": 30.0,
            "files_modified": 2,
            "files_touched": 3,
            "commands": 5,
            "commands_failed": 1,
            "tool_calls_succeeded": 7,
            "tool_calls_failed": 1,
            "success_rate": 0.875,
        }
    )
    assert text == "\n".join(
        [
            "# Metrics of session s1",
            "",
            "| metric | value |",
            "|---|---|",
            "| Duration | 10.5 min |",
            "| Turns | 4 |",
            "| Tokens (in / out) | 100 / 20 |",
            "| Average tokens per turn | 30.0 |",
            "| Files modified (touched) | 2 (3) |",
            "| Commands (failed) | 5 (1) |",
            "| Tool calls ok / failed | 7 / 1 |",
            "| Success rate | 88% |",
            "",
        ]
    )
    bare = views.metrics({"id": "s2", "files_modified": 1, "success_rate": None})
    assert "| Success rate | — |" in bare and "| Files modified (touched) | 1 (1) |" in bare
    assert "| Duration | 0.0 min |" in bare and "| Tokens (in / out) | 0 / 0 |" in bare
    assert "| Commands (failed) | 0 (0) |" in bare and "| Tool calls ok / failed | 0 / 0 |" in bare


def test_gotchas_are_grouped_by_file_most_severe_first_anywhere_last() -> None:
    text = views.gotchas(
        [
            {
                "id": "g1",
                "title": "low one",
                "severity": "low",
                "status": "active",
                "related_files": ["b.py"],
            },
            {
                "id": "g2",
                "title": "critical one",
                "severity": "critical",
                "status": "active",
                "anchors": [{"path": "b.py"}, {"path": "a.py"}, {"nopath": 1}, "x"],
                "source": {"occurrences": 3},
                "workaround": "pin it",
            },
            {"id": "g3", "title": "floating", "severity": "weird", "status": "snoozed"},
            {
                "id": "g4",
                "title": "high one",
                "severity": "high",
                "status": "active",
                "related_files": ["b.py"],
            },
            {
                "id": "g5",
                "title": "medium one",
                "severity": "medium",
                "status": "active",
                "related_files": ["b.py"],
            },
        ]
    )
    assert text == "\n".join(
        [
            "# Gotchas",
            "",
            "## a.py",
            "",
            "- **critical one** `g2` (critical, active, seen 3 times)",
            "  - Workaround: pin it",
            "",
            "## b.py",
            "",
            "- **critical one** `g2` (critical, active, seen 3 times)",
            "  - Workaround: pin it",
            "- **high one** `g4` (high, active)",
            "- **medium one** `g5` (medium, active)",
            "- **low one** `g1` (low, active)",
            "",
            "## Anywhere in the project",
            "",
            "- **floating** `g3` (weird, snoozed)",
            "",
            "",
        ]
    )
    assert views.gotchas([]) == "# Gotchas\n\nNo gotchas yet.\n"


def test_search_hits_show_a_memory_by_its_text_and_others_by_their_title() -> None:
    text = views.memories(
        "cache",
        [
            {"content": "Use LRU for the cache", "type": "decision", "created_at": AN_HOUR_AGO},
            {"content": "untyped"},
            {
                "kind": "gotcha",
                "id": "g1",
                "label": "Cache stampede",
                "created_at": AN_HOUR_AGO,
                "content": "Cache stampede\n\nlock the key\n  add jitter \nthird line",
            },
            {"kind": "session", "id": "s1", "label": "Only a title", "content": "Only a title"},
        ],
    )
    assert text == "\n".join(
        [
            "# Memory: cache",
            "",
            "- **Use LRU for the cache** (decision, 2026-09-21 13:13 (1 h ago))",
            "- **untyped** (memory, )",
            "- **Cache stampede** (gotcha `g1`, 2026-09-21 13:13 (1 h ago))",
            "  lock the key · add jitter",
            "- **Only a title** (session `s1`, )",
            "",
        ]
    )
    assert views.memories("x", []) == "# Memory: x\n\nNothing remembered about “x”.\n"


def test_status_lists_what_the_store_holds_its_limits_and_problems() -> None:
    text = views.status(
        {
            "root": "/p",
            "store": "/p/.engram",
            "size_bytes": 2048 * 1024 + 300,
            "schema_version": 9,
            "counts": {
                "gotchas": 2,
                "sessions": 1,
                "memories": 0,
                "events": 5,
                "file_changes": 1234,
            },
            "limits": {
                "session_quota_bytes": 5_000_000,
                "checkpoint_store_cap_bytes": 2_000_000_000,
                "checkpoints_bytes": 1_500_000,
                "retention": [
                    {"table": "events", "max_rows": 5000, "max_age_days": 90.0, "rows": 1234},
                    {"table": "deleted_rows", "max_rows": None, "max_age_days": 7.5, "rows": 0},
                    {"table": "x", "rows": 3},
                    "not a rule",
                ],
            },
            "settings_problems": ["timeline.max_entries: expected a number", {"message": "m2"}],
        }
    )
    assert text == "\n".join(
        [
            "# engram status",
            "",
            "- Workspace: `/p`",
            "- Store: `/p/.engram` (2048 KiB, schema 9)",
            "",
            "| holds | count |",
            "|---|---|",
            "| Gotchas | 2 |",
            "| Sessions | 1 |",
            "| Memories | 0 |",
            "| Recorded file changes | 1234 |",
            "",
            "## Limits",
            "",
            "- Session quota: 5,000,000 bytes per session",
            "- Checkpoint content: 1,500,000 of 2,000,000,000 bytes",
            "- events: 1,234 kept (at most 5,000 rows, 90 days)",
            "- deleted_rows: 0 kept (7.5 days)",
            "- x: 3 kept (no limit)",
            "",
            "## Settings problems",
            "",
            "- timeline.max_entries: expected a number",
            "- m2",
            "",
        ]
    )
    bare = views.status({"root": "/p", "store": "/s", "limits": {"retention": []}})
    assert bare.endswith("|---|---|\n\n## Limits\n\n")
    assert "## Limits" not in views.status({"root": "/p"})


def test_exactly_eight_changed_paths_are_all_shown_with_no_more() -> None:
    eight = [f"f{n}.py" for n in range(8)]
    text = views.resumed({"session": {"id": "s"}, "workspace_changes": {"deleted": eight}}, [])
    assert "- deleted: " + ", ".join(f"`{p}`" for p in eight) + "\n" in text
    assert "more" not in text


def test_a_duration_is_shown_to_a_tenth_of_a_minute() -> None:
    assert "| Duration | 10.7 min |" in views.metrics({"id": "s", "duration_seconds": 640})
