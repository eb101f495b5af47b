"""Auto-capture of gotchas from repeated errors, and the bugs earlier systems had there."""

from __future__ import annotations

from pathlib import Path

import pytest

from memory_core import config, gotchas
from memory_core.errors import NotFoundError, UsageError
from memory_core.gotchas import normalize
from memory_core.store import Store

HOUR = 3600.0
T0 = 1_800_000_000.0


def track(store: Store, message: str, at: float, **kwargs: object) -> gotchas.TrackResult:
    return gotchas.track_error(store, message, now=at, **kwargs)  # type: ignore[arg-type]


def test_three_occurrences_in_the_window_make_one_candidate(store: Store) -> None:
    messages = [
        "Error: connect ECONNREFUSED 127.0.0.1:5432 after 120ms (/tmp/tmpab12/run.log)",
        "Error: connect ECONNREFUSED 10.0.0.7:5433 after 3ms (/var/folders/x/T/run.log)",
        "Error: connect ECONNREFUSED 127.0.0.1:6000 after 99ms (/home/dev/proj/run.log)",
    ]
    results = [track(store, m, T0 + i * HOUR) for i, m in enumerate(messages)]
    assert [r.created for r in results] == [False, False, True]
    assert [r.occurrences for r in results] == [1, 2, 3]
    assert results[0].normalized == results[2].normalized
    [learned] = gotchas.list_gotchas(store)
    assert (
        learned.id == results[2].gotcha_id and learned.id.startswith("G-") and len(learned.id) == 10
    )
    assert learned.status == "candidate" and learned.source_type == "auto_detected"
    assert learned.occurrences == 3
    assert learned.first_seen == T0 and learned.last_seen == T0 + 2 * HOUR
    assert [s["message"] for s in learned.samples] == messages
    assert learned.category == "integration"


def test_two_occurrences_make_nothing(store: Store) -> None:
    for i in range(2):
        assert track(store, f"ValueError: bad value {i}", T0 + i).gotcha_id is None
    assert gotchas.list_gotchas(store) == []


def test_the_window_really_expires_old_occurrences(store: Store) -> None:
    """Three occurrences spread over more than 24 hours are not three in 24 hours."""
    message = "TypeError: x is not a function"
    assert track(store, message, T0).occurrences == 1
    assert track(store, message, T0 + 13 * HOUR).occurrences == 2
    third = track(store, message, T0 + 25 * HOUR)
    assert third.gotcha_id is None and third.occurrences == 2  # the first one left the window
    assert gotchas.list_gotchas(store) == []
    fourth = track(store, message, T0 + 26 * HOUR)
    assert fourth.created and fourth.occurrences == 3


def test_threshold_and_window_are_settings(store: Store, workspace: Path) -> None:
    config.set_value(workspace, "gotchas.threshold", 2)
    config.set_value(workspace, "gotchas.window_hours", 1)
    settings = config.load(workspace)
    assert gotchas.track_error(store, "boom 1", settings=settings, now=T0).gotcha_id is None
    assert (
        gotchas.track_error(store, "boom 2", settings=settings, now=T0 + 2 * HOUR).gotcha_id is None
    )
    assert gotchas.track_error(store, "boom 3", settings=settings, now=T0 + 2.5 * HOUR).created


def test_the_title_keeps_the_errors_type_and_message() -> None:
    assert normalize.title_for("TypeError: x is not a function") == "TypeError: x is not a function"
    traceback = (
        "Traceback (most recent call last):\n"
        '  File "/srv/app/main.py", line 3, in <module>\n'
        "    run()\n"
        "AttributeError: 'NoneType' object has no attribute 'Split'\n"
    )
    assert (
        normalize.title_for(traceback)
        == "AttributeError: 'NoneType' object has no attribute 'Split'"
    )
    long = "RuntimeError: " + "word " * 60
    title = normalize.title_for(long)
    # Cut in the middle: the kind and first words, "…", the end (where what it names is).
    assert title.startswith("RuntimeError: word") and " … " in title and len(title) <= 120
    assert set(title.split()) == {"RuntimeError:", "word", "…"}  # cut on word boundaries


@pytest.mark.parametrize(
    ("output", "title"),
    [
        (
            "Exit code 1\n===== test session starts =====\ncollected 1 item\n\ntests/test_b.py F   [100%]\n"
            "\n===== FAILURES =====\n    def test_b():\n>       assert is_due(d)\n\ntests/test_b.py:7:\n"
            "app/b.py:8: in is_due\n    return a < datetime.utcnow()\n"
            "E   TypeError: can't compare offset-naive and offset-aware datetimes\n"
            "FAILED tests/test_b.py::test_b - TypeError: can't compare offset-naive and offset-aware datetimes",
            "TypeError: can't compare offset-naive and offset-aware datetimes",
        ),
        (
            "    def test():\n>       assert f() == 2\nE       assert 1 == 2\nE        +  where 1 = f()",
            "assert 1 == 2",
        ),
        (
            "Uncaught ReferenceError: foo is not defined\n    at main (/srv/app.js:3:1)",
            "ReferenceError: foo is not defined",
        ),
        ("npm ERR! code ELIFECYCLE\nnpm ERR! errno 1", "npm ERR! code ELIFECYCLE"),
    ],
)
def test_the_meaningful_line_of_tool_output(output: str, title: str) -> None:
    assert normalize.title_for(output) == title


def test_the_learned_gotcha_is_titled_in_the_errors_words(store: Store) -> None:
    for i in range(3):
        result = track(store, f"TypeError: x is not a function (at line {i})", T0 + i)
    assert (
        gotchas.get(store, result.gotcha_id or "").title
        == "TypeError: x is not a function (at line 2)"
    )


@pytest.mark.parametrize(
    ("text", "category"),
    [
        ("Using the latest release of the library", "general"),  # "latest" is not "test"
        ("rapid prototyping mode", "general"),  # "rapid" is not "api"
        ("FAILED tests/test_app.py::test_load - AssertionError", "test"),
        ("the API returned 502", "integration"),
        ("eslint found 3 problems", "lint"),
        ("webpack compile failed", "build"),
        ("KeyError: 'items' in request handler", "runtime"),
        ("possible SQL injection in query", "security"),
        ("contestant list is empty", "general"),
    ],
)
def test_category_is_inferred_on_whole_words(text: str, category: str) -> None:
    assert normalize.infer_category(text) == category


def test_severity_sorting_puts_critical_first(store: Store) -> None:
    for severity in ("low", "medium", "critical", "high"):
        gotchas.add(store, f"a {severity} thing", severity=severity)
    assert [g.severity for g in gotchas.list_gotchas(store)] == [
        "critical",
        "high",
        "medium",
        "low",
    ]


def test_a_resolved_gotcha_whose_error_returns_is_reopened(store: Store) -> None:
    for i in range(3):
        result = track(store, f"OSError: disk full on /dev/sda{i}", T0 + i)
    gotcha_id = result.gotcha_id or ""
    gotchas.resolve(store, gotcha_id)
    assert gotchas.list_gotchas(store) == []
    again = track(store, "OSError: disk full on /dev/sdb9", T0 + 100)
    assert again.gotcha_id == gotcha_id and again.reopened and not again.created
    reopened = gotchas.get(store, gotcha_id)
    assert reopened.status == "candidate" and reopened.occurrences == 4
    assert [g.id for g in gotchas.list_gotchas(store)] == [gotcha_id]


def test_a_manual_gotcha_with_an_error_pattern_collects_its_occurrences(store: Store) -> None:
    manual = gotchas.add(
        store,
        "Postgres not running",
        error_pattern="ECONNREFUSED",
        workaround="docker compose up db",
    )
    result = track(store, "Error: connect ECONNREFUSED 127.0.0.1:5432", T0)
    assert result.gotcha_id == manual.id and not result.created
    assert gotchas.get(store, manual.id).occurrences == 1
    gotchas.resolve(store, manual.id)
    assert track(store, "Error: connect ECONNREFUSED ::1:5432", T0 + 1).reopened
    assert gotchas.get(store, manual.id).status == "confirmed"  # manual gotchas reopen confirmed


def test_apostrophes_and_unicode_are_handled(store: Store) -> None:
    message = "ValueError: can't parse 'naïve café ☕' — l'entrée n'est pas valide"
    normalized = normalize.normalize(message)
    assert "can't" in normalized and "n'est" in normalized and "<str>" in normalized
    assert "naïve" not in normalized
    for i in range(3):
        result = track(store, message.replace("☕", "☕" * (i + 1)), T0 + i)
    gotcha = gotchas.get(store, result.gotcha_id or "")
    assert gotcha.title == "ValueError: can't parse 'naïve café ☕☕☕' — l'entrée n'est pas valide"
    assert "café" in (store.dir / "exports" / "gotchas.md").read_text(encoding="utf-8")


def test_normalisation_replaces_numbers_paths_quotes_and_hex_ids() -> None:
    a = normalize.normalize(
        'Failed to open "/tmp/pytest-3/x.db" at 0x7f3a2c (pid 4512, id 3f2a9c1b7e)'
    )
    b = normalize.normalize('Failed to open "/var/tmp/other.db" at 0x11ab (pid 7, id 99aa00bb11)')
    assert a == b == "Failed to open <str> at <hex> (pid <n>, id <hex>)"
    assert (
        normalize.normalize("error in C:\\Users\\dev\\app\\main.py line 3")
        == "error in <path> line <n>"
    )


def test_the_error_location_becomes_an_anchor(store: Store, workspace: Path) -> None:
    (workspace / "src").mkdir()
    (workspace / "src" / "app.ts").write_text("const a = 1;\nfoo();\n")
    message = (
        f"TypeError: foo is not a function\n    at Object.<anonymous> ({workspace}/src/app.ts:2:1)"
    )
    for i in range(3):
        result = track(store, message, T0 + i)
    [anchor] = gotchas.get(store, result.gotcha_id or "").anchors
    assert (anchor.path, anchor.line, anchor.text) == ("src/app.ts", 1, "foo();")


@pytest.mark.parametrize(
    ("message", "expected"),
    [
        (
            'Traceback (most recent call last):\n  File "lib/a.py", line 3, in f\n  File "lib/b.py", line 9, in g\nKeyError: 1',
            ("lib/b.py", 9),
        ),
        ("src/b.py:12:5: E501 line too long", ("src/b.py", 12)),
        ("src/b.py:12: error: Incompatible types  [assignment]", ("src/b.py", 12)),
        ("    at run (/w/src/index.js:40:13)", ("/w/src/index.js", 40)),
        ("tests/test_x.py:7: AssertionError", ("tests/test_x.py", 7)),
        (
            "    def test_a():\n>       assert f()\n\ntests/test_a.py:7:\n_ _ _\napp/a.py:8: in f\n"
            "    return x < y\nE   TypeError: can't compare",
            ("app/a.py", 8),
        ),
    ],
)
def test_error_locations_are_parsed_from_common_formats(
    message: str, expected: tuple[str, int]
) -> None:
    first = normalize.error_locations(message)[0]
    assert (first.path, first.line) == expected


def test_track_error_refuses_an_empty_message_and_a_file_outside(store: Store) -> None:
    with pytest.raises(UsageError, match="empty"):
        gotchas.track_error(store, "   ")
    with pytest.raises(UsageError, match="outside the workspace"):
        gotchas.track_error(store, "boom", file="/etc/passwd", line=1)


def test_secrets_in_errors_are_redacted_before_they_are_stored(store: Store) -> None:
    key = "sk-ant-" + "a" * 30
    for i in range(3):
        result = track(store, f"AuthError: invalid key {key} (attempt {i})", T0 + i)
    gotcha = gotchas.get(store, result.gotcha_id or "")
    assert key not in gotcha.title and "[REDACTED" in gotcha.title
    rows = store.query("SELECT message FROM error_occurrences")
    assert rows and all(key not in row["message"] for row in rows)


def test_unknown_ids_and_bad_choices_are_clear_errors(store: Store) -> None:
    with pytest.raises(NotFoundError):
        gotchas.get(store, "G-deadbeef")
    with pytest.raises(UsageError, match="unknown severity"):
        gotchas.add(store, "x", severity="urgent")
    with pytest.raises(UsageError, match="title"):
        gotchas.add(store, "   ")
    with pytest.raises(UsageError, match="positive"):
        gotchas.snooze(store, gotchas.add(store, "y").id, 0)


def test_unused_auto_gotchas_decay_from_the_editor_but_manual_ones_do_not(store: Store) -> None:
    for i in range(3):
        result = track(store, "Warning: slow query", T0 + i)
    manual = gotchas.add(store, "Written by a person", now=T0)
    auto = gotchas.get(store, result.gotcha_id or "")
    later = T0 + 31 * 86400
    assert gotchas.visible_in_editor(auto, now=T0 + 10, decay_days=30)
    assert not gotchas.visible_in_editor(auto, now=later, decay_days=30)
    assert gotchas.visible_in_editor(manual, now=later, decay_days=30)


def test_snoozed_gotchas_come_back_when_the_snooze_ends(store: Store) -> None:
    gotcha = gotchas.snooze(store, gotchas.add(store, "later").id, 2, now=T0)
    assert not gotchas.visible_in_editor(gotcha, now=T0 + 86400, decay_days=30)
    assert gotchas.visible_in_editor(gotcha, now=T0 + 3 * 86400, decay_days=30)


def test_every_change_bumps_the_revision_other_processes_watch(store: Store) -> None:
    before = gotchas.revision(store)
    gotcha = gotchas.add(store, "watch me")
    gotchas.confirm(store, gotcha.id)
    assert gotchas.revision(store) == before + 2


def test_context_for_task_ranks_relevant_gotchas(store: Store) -> None:
    gotchas.add(
        store,
        "Postgres must be running",
        category="integration",
        severity="high",
        description="Integration tests need the database",
        workaround="docker compose up db",
        related_files=["tests/integration/*.py"],
    )
    gotchas.add(store, "CSS grid breaks in Safari", category="general", severity="low")
    markdown = gotchas.context_for_task(
        store, "fix the flaky database integration test", ["tests/integration/test_db.py"]
    )
    assert markdown.startswith("## Known gotchas")
    assert "**[high] Postgres must be running**" in markdown
    assert "Workaround: docker compose up db" in markdown
    assert "Files: tests/integration/*.py" in markdown
    assert "Safari" not in markdown
    assert gotchas.context_for_task(store, "unrelated words only") == ""


def test_context_puts_the_gotcha_whose_error_the_task_quotes_first(store: Store) -> None:
    for i in range(3):
        learned = track(
            store,
            f"TypeError: can't compare offset-naive and offset-aware datetimes (run {i})",
            T0 + i,
        )
    gotchas.add(
        store, "Datetime columns are naive in SQLite", severity="critical", category="runtime"
    )
    ranked = gotchas.rank_for_task(
        store, "TypeError: can't compare offset-naive and offset-aware datetimes (run 9) in billing"
    )
    assert ranked[0][1].id == learned.gotcha_id
