"""The timeline in words (issue 31): `--since` on each unit, every kind of entry as the
sentence people read, line ranges, the Markdown grouped by day."""

from __future__ import annotations

from typing import Any

import pytest

from memory_core import clock, timeline
from memory_core.errors import UsageError
from memory_core.store import Store

NOW = 1_800_000_000.0  # 2027-01-15T08:00:00Z


@pytest.mark.parametrize(
    ("text", "seconds"),
    [
        ("45s", 45),
        ("30m", 1800),
        ("2h", 7200),
        ("3d", 3 * 86400),
        ("1w", 604800),
        (" 1.5h ", 5400),
        ("0m", 0),
        ("2 d", 2 * 86400),
    ],
)
def test_since_reads_each_unit(text: str, seconds: float) -> None:
    assert timeline.parse_since(text, now=NOW) == NOW - seconds


def test_since_reads_an_iso_date_and_says_how_to_write_one_otherwise() -> None:
    assert timeline.parse_since("2027-01-15", now=NOW) == NOW - 8 * 3600
    assert timeline.parse_since("2027-01-15T08:00:00Z") == NOW
    with pytest.raises(UsageError, match="cannot read '2 days' as a time") as caught:
        timeline.parse_since("2 days", now=NOW)
    assert caught.value.hint == "use 30m, 2h, 3d, 1w or an ISO date like 2026-01-31"
    for bad in ("h", "-2h", "2y", "2hh"):
        with pytest.raises(UsageError):
            timeline.parse_since(bad, now=NOW)


@pytest.mark.parametrize(
    ("lines", "words"),
    [
        (None, ""),
        ([], ""),
        ([[4, 4]], " (line 4)"),
        ([[4, 9]], " (lines 4–9)"),
        ([[1, 1], [3, 3]], " (lines 1, 3)"),
        ([[1, 1], [3, 3], [5, 6], [8, 8]], " (lines 1, 3, 5–6, 8)"),
        ([[1, 1], [3, 3], [5, 6], [8, 8], [10, 10]], " (lines 1, 3, 5–6, 8…)"),
        ([[1, 2, 3], "x"], ""),
    ],
)
def test_changed_lines_in_words(lines: Any, words: str) -> None:
    assert timeline._lines_words(lines) == words


@pytest.mark.parametrize(
    ("kind", "summary", "details", "words"),
    [
        ("gotcha.error", "gotcha.error", {"path": "a.py"}, "Error recorded in a.py"),
        ("gotcha.error", "", {}, "Error recorded"),
        ("gotcha.resolved", "gotcha.resolved x", {}, "Gotcha resolved"),
        ("memory.added", "memory.added", {}, "Memory added"),
        ("note", "deployed to staging", {}, "Deployed to staging"),
        (
            "build.failed_twice",
            "build.failed_twice",
            {"path": "ci.yml"},
            "Build failed twice (ci.yml)",
        ),
        ("custom", "", {}, "Custom"),
    ],
)
def test_an_event_in_words(kind: str, summary: str, details: dict[str, Any], words: str) -> None:
    assert timeline._event_words(kind, summary, details) == words


def _entry(source: str, kind: str, details: dict[str, Any], **extra: Any) -> dict[str, Any]:
    return {
        "timestamp": clock.iso(NOW - 120),
        "source": source,
        "event_type": kind,
        "summary": extra.pop("summary", kind),
        "details": details,
        "session_id": extra.pop("session_id", None),
        **extra,
    }


def _texts(store: Store, entries: list[dict[str, Any]]) -> list[tuple[str, str]]:
    found = timeline.humanize(store, entries, now=NOW)
    return [(e["who"], e["text"]) for e in found]


def test_file_changes_name_the_file_the_change_and_who(store: Store) -> None:
    assert _texts(
        store,
        [
            _entry(
                "evolution", "file.modified", {"path": "a.py", "actor": "editor", "lines": [[3, 5]]}
            ),
            _entry(
                "evolution", "file.created", {"path": "b.py", "actor": "agent"}, session_id="s1"
            ),
            _entry("evolution", "file.deleted", {"path": "c.py", "actor": "agent"}),
            _entry(
                "evolution",
                "file.renamed",
                {"path": "d.py", "actor": "external", "old_path": "old.py"},
            ),
            _entry("evolution", "file.touched", {"actor": "ci-bot"}),
            _entry("evolution", "file.modified", {"path": "e.py"}),
            _entry("evolution", "git.checkout", {}, summary="switched to dev"),
        ],
    ) == [
        ("you (in the editor)", "a.py changed by you (in the editor) (lines 3–5)"),
        ("the agent (session s1)", "b.py created by the agent (session s1)"),
        ("the agent", "c.py deleted by the agent"),
        ("another program", "d.py (from old.py) renamed by another program"),
        ("ci-bot", "a file touched by ci-bot"),
        ("someone", "e.py changed by someone"),
        ("git", "git: switched to dev"),
    ]


def test_checkpoints_rollbacks_sessions_gotchas_and_snapshots_in_words(store: Store) -> None:
    assert _texts(
        store,
        [
            _entry(
                "checkpoint",
                "checkpoint.created",
                {"reason": "manual", "name": "safe", "file_count": 3},
            ),
            _entry(
                "checkpoint", "checkpoint.created", {"reason": "burst"}, summary="checkpoint c1"
            ),
            _entry(
                "checkpoint",
                "checkpoint.created",
                {"reason": "pre-rollback"},
                summary="checkpoint c2",
            ),
            _entry(
                "checkpoint",
                "checkpoint.created",
                {"reason": "turns", "file_count": 1},
                summary="checkpoint c3",
            ),
            _entry(
                "checkpoint", "checkpoint.created", {"reason": "import"}, summary="checkpoint c4"
            ),
            _entry("checkpoint", "checkpoint.created", {}, summary="checkpoint c5"),
            _entry(
                "event",
                "checkpoint.rollback",
                {
                    "data": {
                        "checkpoint": "c9",
                        "restored": ["a", "b"],
                        "via_editor": ["a"],
                        "buffers": ["c"],
                        "removed": ["d"],
                    }
                },
            ),
            _entry("event", "checkpoint.rollback", {"data": {"restored": ["a"]}}),
            _entry("session", "session.started", {"agent": "claude-code", "name": "cache"}),
            _entry("session", "session.ended", {}, session_id="s7"),
            _entry("gotcha", "gotcha.created", {"title": "flaky linker"}),
            _entry("gotcha", "gotcha.created", {}, summary="untitled gotcha"),
            _entry("snapshot", "snapshot.captured", {"branch": "main", "note": "before"}),
            _entry("snapshot", "snapshot.captured", {}),
            _entry("event", "deploy", {"actor": "ci"}, summary="deployed"),
            _entry("event", "deploy", {}, summary="deploy"),
        ],
    ) == [
        ("engram", "Checkpoint “safe” made, 3 file(s)"),
        ("engram", "Checkpoint c1 made automatically (many files changed at once)"),
        ("engram", "Checkpoint c2 made before a rollback (to undo it)"),
        ("engram", "Checkpoint c3 made automatically (every few agent turns), 1 file(s)"),
        ("engram", "Checkpoint c4 made (import)"),
        ("engram", "Checkpoint c5 made"),
        ("engram", "Rolled back to checkpoint “c9”: 3 files restored, 1 removed"),
        ("engram", "Rolled back to checkpoint “?”: 1 file restored, 0 removed"),
        ("claude-code", "Agent session “cache” (claude-code) started"),
        ("the agent", "Agent session “s7” ended"),
        ("engram", "Gotcha learned: flaky linker"),
        ("engram", "Gotcha learned: untitled gotcha"),
        ("you", "Context snapshot captured on main: before"),
        ("you", "Context snapshot captured"),
        ("ci", "Deployed"),
        ("engram", "Deploy"),
    ]


def test_each_entry_says_how_long_ago(store: Store) -> None:
    (entry,) = timeline.humanize(store, [_entry("gotcha", "g", {"title": "t"})], now=NOW)
    assert entry["ago"] == "2 min ago"
    assert timeline.humanize(store, [], now=NOW) == []


def test_the_markdown_groups_by_day_newest_first() -> None:
    found = [
        {"timestamp": "2027-01-15T08:00:00Z", "summary": "s1", "text": "Second", "ago": "now"},
        {"timestamp": "2027-01-15T07:30:00Z", "summary": "plain"},
        {"timestamp": "2027-01-14T23:59:00Z", "summary": "s3", "text": "First", "ago": "1 d"},
    ]
    assert timeline.markdown(found, title="Timeline of a.py") == "\n".join(
        [
            "# Timeline of a.py",
            "",
            "## 2027-01-15",
            "",
            "- **08:00** (now): Second",
            "- **07:30** (): plain",
            "",
            "## 2027-01-14",
            "",
            "- **23:59** (1 d): First",
            "",
        ]
    )
    assert timeline.markdown([]) == "# Timeline\n\nNothing recorded yet.\n"


def test_one_entry_in_one_line() -> None:
    entry = {"timestamp": "2027-01-15T08:00:00Z", "summary": "s", "text": "Done", "ago": "1 h ago"}
    assert timeline.describe(entry) == "2027-01-15 08:00:00 (1 h ago)  Done"
    assert timeline.describe({"timestamp": "2027-01-15T08:00:00Z", "summary": "s"}) == (
        "2027-01-15 08:00:00  s"
    )
