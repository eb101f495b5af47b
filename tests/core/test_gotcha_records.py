"""Gotchas in the store, as a person or a tool changes them: what `engram gotcha ...`, the
language server and the hooks see after each change (ids, order, validation, the team file's
gotchas, snoozes and decay, annotations kept in step with their file)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from memory_core import gotchas, log
from memory_core.errors import NotFoundError, UsageError
from memory_core.gotchas import records
from memory_core.gotchas.records import Anchor, Gotcha
from memory_core.store import Store

NOW = 1_800_000_000.0
DAY = 86400.0


def _team_file(store: Store, body: str) -> None:
    path = store.dir / "team" / "gotchas.toml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(body, encoding="utf-8")


def _exports(store: Store) -> dict[str, object]:
    return json.loads((store.dir / "exports" / "gotchas.json").read_text(encoding="utf-8"))


def test_to_dict_is_the_shape_the_cli_and_the_editor_show(store: Store) -> None:
    added = gotchas.add(
        store,
        "Use  UTC\teverywhere",
        description=" naive datetimes ",
        workaround=" datetime.now(UTC) ",
        severity="HIGH",
        related_files=["src/*.py", " ", ""],
        pattern="utcnow(",
        pattern_kind="literal",
        error_pattern="  TypeError: can't compare offset-naive and offset-aware datetimes ",
        anchors=[Anchor("src/a.py", 4, 6, "h", "x = utcnow()")],
        extra={"ticket": "OPS-1"},
        now=NOW,
    )
    shown = added.to_dict()
    assert shown["title"] == "Use UTC everywhere"  # spacing folded, words kept
    assert shown["label"] == "[high] Use UTC everywhere"
    assert shown["description"] == "naive datetimes"
    assert shown["workaround"] == "datetime.now(UTC)"
    assert shown["severity"] == "high"
    assert shown["category"] == "runtime"  # inferred from the words
    assert shown["related_files"] == ["src/*.py"]
    assert shown["code_pattern"] == "utcnow(" and shown["pattern_kind"] == "literal"
    assert shown["trigger"] == {
        "error_pattern": "TypeError: can't compare offset-naive and offset-aware datetimes"
    }
    assert shown["status"] == "confirmed"
    assert shown["source"]["type"] == "manual" and shown["source"]["occurrences"] == 0
    assert shown["source"]["first_seen"] is None
    # Anchors are 0-based inside, 1-based for people.
    assert shown["anchors"] == [
        {"path": "src/a.py", "line": 5, "end_line": 7, "text": "x = utcnow()"}
    ]
    assert shown["created_at"] == shown["updated_at"] == "2027-01-15T08:00:00Z"
    assert shown["snoozed_until"] is None and shown["promoted"] is False
    assert shown["extra"] == {"ticket": "OPS-1"}
    # The same from the store.
    again = gotchas.get(store, added.id).to_dict()
    assert {k: again[k] for k in ("title", "trigger", "anchors", "related_files", "extra")} == {
        k: shown[k] for k in ("title", "trigger", "anchors", "related_files", "extra")
    }
    assert added.error_hash is not None and len(added.error_hash) == 16
    assert "extra" not in gotchas.add(store, "Plain", now=NOW).to_dict()


def test_a_team_gotcha_has_no_times_of_its_own() -> None:
    team = Gotcha(id="G-abcd1234", title="t", source_type="team", last_seen=NOW)
    shown = team.to_dict()
    assert shown["created_at"] is None and shown["updated_at"] is None
    assert shown["source"]["last_seen"] == "2027-01-15T08:00:00Z"


def test_ids_new_stable_and_line_hashes() -> None:
    made = records.new_id()
    assert made.startswith("G-") and len(made) == 10 and made != records.new_id()
    one = records.stable_id("annotation", "a.py", "slow")
    assert one == records.stable_id("annotation", "a.py", "slow") and len(one) == 10
    # The parts are kept apart: ("ab", "c") is not ("a", "bc").
    assert records.stable_id("ab", "c") != records.stable_id("a", "bc")
    assert records.line_hash("    x = 1  ") == records.line_hash("x = 1")
    assert records.line_hash("x = 1") != records.line_hash("x = 2")
    assert len(records.line_hash("x")) == 16


def test_what_add_refuses_says_what_to_do(store: Store) -> None:
    with pytest.raises(UsageError, match="needs a title") as empty:
        gotchas.add(store, "  \n ")
    assert empty.value.hint == 'engram gotcha add "What goes wrong"'
    with pytest.raises(UsageError, match="unknown severity 'urgent'") as severity:
        gotchas.add(store, "x", severity="urgent")
    assert severity.value.hint == "use one of: critical, high, medium, low"
    with pytest.raises(UsageError, match="unknown category"):
        gotchas.add(store, "x", category="misc")
    with pytest.raises(UsageError, match="unknown pattern kind"):
        gotchas.add(store, "x", pattern="a", pattern_kind="glob")
    with pytest.raises(UsageError, match="unknown source type"):
        gotchas.add(store, "x", source_type="robot")
    with pytest.raises(UsageError, match="unknown status"):
        gotchas.add(store, "x", status="open")
    with pytest.raises(UsageError, match="the code pattern is empty"):
        gotchas.add(store, "x", pattern="")
    with pytest.raises(UsageError):
        gotchas.add(store, "x", pattern="(unclosed")
    # A literal is not a regex: its brackets are fine.
    assert gotchas.add(store, "x", pattern="(unclosed", pattern_kind="literal").code_pattern
    first = gotchas.add(store, "one", gotcha_id="G-0000aaaa")
    with pytest.raises(UsageError, match="already exists"):
        gotchas.add(store, "two", gotcha_id=first.id)
    assert [g.title for g in gotchas.list_gotchas(store)].count("one") == 1


def test_choices_are_read_case_and_space_insensitively(store: Store) -> None:
    added = gotchas.add(
        store, "x", severity=" Low ", category=" Build", status="Candidate", source_type="TEAM"
    )
    assert (added.severity, added.category, added.status, added.source_type) == (
        "low",
        "build",
        "candidate",
        "team",
    )


def test_secrets_in_a_gotcha_are_redacted_before_they_are_stored(store: Store) -> None:
    key = "AKIA" + "QWERTYUIOPASDFGH"
    added = gotchas.add(
        store,
        f"deploy fails with {key}",
        description=f"key {key}",
        workaround=f"rotate {key}",
        pattern=key,
        pattern_kind="literal",
        error_pattern=f"denied for {key}",
        extra={"note": key},
    )
    stored = gotchas.get(store, added.id)
    for text in (
        stored.title,
        stored.description,
        stored.workaround,
        stored.code_pattern,
        stored.error_pattern,
        json.dumps(stored.extra),
    ):
        assert text is not None and key not in text
    # A regex is the person's own pattern, kept as written.
    regex = gotchas.add(store, "r", pattern="AKIA[0-9A-Z]{16}")
    assert regex.code_pattern == "AKIA[0-9A-Z]{16}"
    changed = gotchas.update(store, regex.id, workaround=f"use {key}")
    assert key not in changed.workaround


def test_get_by_any_case_prefix_and_what_it_says_otherwise(store: Store) -> None:
    one = gotchas.add(store, "one", gotcha_id="G-1a2b3c4d")
    gotchas.add(store, "two", gotcha_id="G-1a2b9999")
    assert gotchas.get(store, "g-1A2B3C4D").id == one.id
    assert gotchas.get(store, " 1a2b3c4d ").id == one.id  # without the G-
    assert gotchas.get(store, "G-1a2b3").id == one.id  # a unique prefix
    with pytest.raises(UsageError, match="matches several gotchas") as several:
        gotchas.get(store, "G-1a2b")
    assert several.value.hint == "give more of the id"  # what the CLI prints under it
    with pytest.raises(UsageError, match="a gotcha id is required"):
        gotchas.get(store, "  ")
    with pytest.raises(NotFoundError, match="no gotcha 'G-ffff'") as missing:
        gotchas.get(store, "G-ffff")
    assert missing.value.hint == "see `engram gotcha list --all`"
    # LIKE's wildcards in an id are plain characters.
    with pytest.raises(NotFoundError):
        gotchas.get(store, "G-1a2b%")
    with pytest.raises(NotFoundError):
        gotchas.get(store, "G-1a2b_c")


def test_the_list_puts_open_severe_recent_first(store: Store) -> None:
    low = gotchas.add(store, "low", severity="low", now=NOW)
    old_high = gotchas.add(store, "old high", severity="high", now=NOW - 100)
    new_high = gotchas.add(store, "new high", severity="high", now=NOW)
    critical = gotchas.add(store, "critical", severity="critical", now=NOW - 500)
    done = gotchas.add(store, "done", severity="critical", now=NOW)
    gotchas.resolve(store, done.id, now=NOW)
    assert [g.id for g in gotchas.list_gotchas(store)] == [
        critical.id,
        new_high.id,
        old_high.id,
        low.id,
    ]
    everything = gotchas.list_gotchas(store, include_resolved=True)
    assert [g.id for g in everything] == [critical.id, new_high.id, old_high.id, low.id, done.id]
    # A gotcha seen again is more recent than one only written.
    gotchas.add(store, "seen", severity="high", now=NOW - 900)
    with store.transaction() as db:
        db.execute("UPDATE gotchas SET last_seen = ? WHERE title = 'seen'", (NOW + 5,))
    assert [g.title for g in gotchas.list_gotchas(store)][1] == "seen"
    # An unknown severity (a newer engram's) sorts after every known one.
    assert Gotcha(id="G-1", title="t", severity="unknown").severity_rank == 4


def test_team_gotchas_join_the_list_unless_the_store_overrides_or_resolved_them(
    store: Store,
) -> None:
    _team_file(
        store,
        '[[gotchas]]\nid = "G-aaaa1111"\ntitle = "team one"\n\n'
        '[[gotchas]]\nid = "G-bbbb2222"\ntitle = "team two"\nseverity = "critical"\n',
    )
    listed = gotchas.list_gotchas(store)
    assert [(g.id, g.source_type) for g in listed] == [
        ("G-bbbb2222", "team"),
        ("G-aaaa1111", "team"),
    ]
    assert gotchas.list_gotchas(store, include_team=False) == []
    assert gotchas.get(store, "G-bbbb").title == "team two"  # a prefix finds it too
    # Changing a team gotcha keeps a local copy that overrides the file's entry here.
    changed = gotchas.update(store, "G-aaaa1111", workaround="pin the version", now=NOW)
    assert changed.workaround == "pin the version" and changed.source_type == "team"
    assert store.query_one("SELECT 1 FROM gotchas WHERE id = 'G-aaaa1111'") is not None
    assert [g.workaround for g in gotchas.list_gotchas(store) if g.id == "G-aaaa1111"] == [
        "pin the version"
    ]
    # Resolved here, it stays hidden here even though the file still lists it.
    gotchas.resolve(store, "G-bbbb2222", now=NOW)
    assert [g.id for g in gotchas.list_gotchas(store)] == ["G-aaaa1111"]
    assert {g.id for g in gotchas.list_gotchas(store, include_resolved=True)} == {
        "G-aaaa1111",
        "G-bbbb2222",
    }


def test_the_task_context_reads_chosen_gotchas_and_the_team_files_own(store: Store) -> None:
    # What SessionStart's ranking reads (memory_core/gotchas/context.py): the chosen gotchas
    # by id with their anchors, and the team file's gotchas the store does not hold.
    anchored = gotchas.add(
        store, "anchored", anchors=[Anchor("src/a.py", 2, 3, "h", "x = 1")], now=NOW
    )
    plain = gotchas.add(store, "plain", now=NOW)
    chosen = records.by_ids(store, [anchored.id, "G-00000000"])
    assert list(chosen) == [anchored.id]  # an unknown id is left out, not an error
    assert [a.path for a in chosen[anchored.id].anchors] == ["src/a.py"]
    assert records.by_ids(store, []) == {}
    assert set(records.by_ids(store, [plain.id, anchored.id])) == {plain.id, anchored.id}
    assert records.team_only(store) == []  # no team file
    _team_file(
        store,
        '[[gotchas]]\nid = "G-aaaa1111"\ntitle = "team one"\n\n'
        '[[gotchas]]\nid = "G-bbbb2222"\ntitle = "team two"\n',
    )
    assert [g.id for g in records.team_only(store)] == ["G-aaaa1111", "G-bbbb2222"]
    gotchas.update(store, "G-aaaa1111", workaround="pin it", now=NOW)  # a local copy now
    assert [g.id for g in records.team_only(store)] == ["G-bbbb2222"]


def test_every_change_bumps_the_revision_and_rewrites_the_exports(store: Store) -> None:
    assert gotchas.revision(store) == 0
    added = gotchas.add(store, "first", now=NOW)
    assert gotchas.revision(store) == 1
    assert [g["title"] for g in _exports(store)["gotchas"]] == ["first"]  # type: ignore[index]
    gotchas.update(store, added.id, title="renamed", now=NOW + 1)
    assert gotchas.revision(store) == 2
    assert [g["title"] for g in _exports(store)["gotchas"]] == ["renamed"]  # type: ignore[index]
    gotchas.confirm(store, added.id, now=NOW + 2)
    gotchas.snooze(store, added.id, 1, now=NOW + 3)
    gotchas.resolve(store, added.id, now=NOW + 4)
    gotchas.delete(store, added.id)
    assert gotchas.revision(store) == 6
    assert _exports(store)["gotchas"] == []
    with pytest.raises(NotFoundError):
        gotchas.get(store, added.id)


def test_resolve_confirm_and_snooze(store: Store) -> None:
    candidate = gotchas.add(store, "maybe", status="candidate", now=NOW)
    assert gotchas.confirm(store, candidate.id, now=NOW + 1).status == "confirmed"
    snoozed = gotchas.snooze(store, candidate.id, 2.5, now=NOW)
    assert snoozed.snoozed_until == NOW + 2.5 * DAY
    assert snoozed.updated_at == NOW
    resolved = gotchas.resolve(store, candidate.id, now=NOW + 10)
    assert resolved.status == "resolved" and resolved.snoozed_until is None
    assert resolved.updated_at == NOW + 10
    for days in (0, -1, float("nan")):
        with pytest.raises(UsageError, match="positive number of days"):
            gotchas.snooze(store, candidate.id, days, now=NOW)


def test_update_checks_what_it_changes(store: Store) -> None:
    added = gotchas.add(store, "x", now=NOW)
    with pytest.raises(UsageError, match="cannot change id, status of a gotcha"):
        gotchas.update(store, added.id, status="resolved", id="G-1")
    with pytest.raises(UsageError, match="unknown severity"):
        gotchas.update(store, added.id, severity="huge")
    with pytest.raises(UsageError, match="unknown category"):
        gotchas.update(store, added.id, category="misc")
    with pytest.raises(UsageError):
        gotchas.update(store, added.id, code_pattern="(bad")
    # The new kind decides: a literal may hold a bracket.
    changed = gotchas.update(store, added.id, code_pattern="(ok", pattern_kind="literal")
    assert (changed.code_pattern, changed.pattern_kind) == ("(ok", "literal")
    # The kind already stored decides when only the pattern changes.
    assert gotchas.update(store, added.id, code_pattern="(still").code_pattern == "(still"
    changed = gotchas.update(
        store,
        added.id,
        severity="Critical",
        category="security",
        related_files=("a/*.py", "b.py"),
        promoted=1,
        description="now described",
        now=NOW + 7,
    )
    assert changed.severity == "critical" and changed.category == "security"
    assert changed.related_files == ["a/*.py", "b.py"]
    assert changed.promoted is True and changed.description == "now described"
    assert changed.updated_at == NOW + 7 and changed.created_at == NOW
    assert gotchas.update(store, added.id, promoted=0).promoted is False
    assert gotchas.revision(store) == 5  # the add and four updates; refusals wrote nothing


def test_delete_of_a_missing_gotcha_is_not_found(store: Store) -> None:
    with pytest.raises(NotFoundError):
        gotchas.delete(store, "G-12345678")
    assert gotchas.revision(store) == 0


@pytest.mark.parametrize(
    ("changes", "at", "shown"),
    [
        ({}, NOW, True),
        ({"status": "resolved"}, NOW, False),
        ({"snoozed_until": NOW + 1}, NOW, False),
        ({"snoozed_until": NOW}, NOW, True),  # a snooze ends at its time
        ({"snoozed_until": NOW - 1}, NOW, True),
        # Learned and unused for the whole decay window: faded; a second less: shown.
        ({"source_type": "auto_detected", "last_seen": NOW - 30 * DAY}, NOW, True),
        ({"source_type": "auto_detected", "last_seen": NOW - 30 * DAY - 1}, NOW, False),
        # A confirmation (an update) counts as use.
        (
            {"source_type": "auto_detected", "last_seen": NOW - 90 * DAY, "updated_at": NOW},
            NOW,
            True,
        ),
        # What people wrote never fades.
        ({"source_type": "manual", "last_seen": NOW - 900 * DAY}, NOW, True),
        ({"source_type": "annotation", "updated_at": NOW - 900 * DAY}, NOW, True),
    ],
)
def test_what_the_editor_shows(changes: dict[str, object], at: float, shown: bool) -> None:
    gotcha = Gotcha(id="G-1", title="t", updated_at=NOW - 90 * DAY)
    for key, value in changes.items():
        setattr(gotcha, key, value)
    assert gotchas.visible_in_editor(gotcha, now=at, decay_days=30) is shown


def test_decay_off_keeps_learned_gotchas() -> None:
    old = Gotcha(id="G-1", title="t", source_type="auto_detected", last_seen=0.0)
    assert gotchas.visible_in_editor(old, now=NOW, decay_days=0) is True
    assert gotchas.visible_in_editor(old, now=NOW, decay_days=1) is False


def test_a_batch_rewrites_the_exports_once_at_its_end(store: Store) -> None:
    written: list[int] = []
    records.change_listeners.append(lambda s: written.append(gotchas.revision(s)))
    try:
        with records.exports_deferred(store):
            with records.exports_deferred(store):  # nested: the outer block writes
                gotchas.add(store, "a", now=NOW)
            gotchas.add(store, "b", now=NOW)
            assert written == []
        assert written == [2]
        with records.exports_deferred(store):
            pass  # nothing changed: nothing rewritten
        assert written == [2]
        gotchas.add(store, "c", now=NOW)
        assert written == [2, 3]
    finally:
        records.change_listeners.pop()


def test_an_export_that_fails_keeps_the_change_and_is_logged(store: Store) -> None:
    def broken(_: Store) -> None:
        raise OSError("disk full")

    records.change_listeners.insert(0, broken)
    try:
        added = gotchas.add(store, "kept", now=NOW)
    finally:
        records.change_listeners.remove(broken)
    assert gotchas.get(store, added.id).title == "kept"
    # The listener after the failing one still ran.
    assert [g["title"] for g in _exports(store)["gotchas"]] == ["kept"]  # type: ignore[index]
    logged = log.log_path(store.root).read_text(encoding="utf-8")
    assert "cannot rewrite the gotcha exports" in logged and "disk full" in logged


def _annotation(path: str, line: int, text: str, source: str | None = None) -> Gotcha:
    source = source or f"# gotcha: {text}"
    return Gotcha(
        id=records.stable_id("annotation", path, text),
        title=text,
        description=text,
        source_type="annotation",
        anchors=[Anchor(path, line, line, records.line_hash(source), source)],
    )


def _annotations_of(store: Store, path: str) -> dict[str, list[tuple[int, str | None]]]:
    rows = store.query(
        "SELECT g.id, a.line, a.text FROM gotchas g JOIN gotcha_anchors a ON a.gotcha_id = g.id "
        "WHERE g.source_type = 'annotation' AND a.path = ? ORDER BY a.line",
        (path,),
    )
    found: dict[str, list[tuple[int, str | None]]] = {}
    for row in rows:
        found.setdefault(row["id"], []).append((row["line"], row["text"]))
    return found


def test_annotations_follow_their_file(store: Store) -> None:
    slow = _annotation("a.py", 3, "slow path")
    flaky = _annotation("a.py", 9, "flaky on CI")
    assert records.sync_annotations(store, "a.py", [slow, flaky], now=NOW) is True
    assert _annotations_of(store, "a.py") == {
        slow.id: [(3, "# gotcha: slow path")],
        flaky.id: [(9, "# gotcha: flaky on CI")],
    }
    revision = gotchas.revision(store)
    # The file read again unchanged: nothing written.
    again = [_annotation("a.py", 3, "slow path"), _annotation("a.py", 9, "flaky on CI")]
    assert records.sync_annotations(store, "a.py", again, now=NOW) is False
    assert gotchas.revision(store) == revision
    # A line added above: the comment moved down; one comment removed.
    moved = _annotation("a.py", 4, "slow path")
    assert records.sync_annotations(store, "a.py", [moved], now=NOW) is True
    assert _annotations_of(store, "a.py") == {slow.id: [(4, "# gotcha: slow path")]}
    assert gotchas.revision(store) == revision + 1
    # Another file's annotations are its own.
    other = _annotation("b.py", 0, "slow path")
    records.sync_annotations(store, "b.py", [other], now=NOW)
    assert records.sync_annotations(store, "a.py", [], now=NOW) is True
    assert _annotations_of(store, "a.py") == {}
    assert list(_annotations_of(store, "b.py")) == [other.id]


def test_an_annotation_line_with_a_secret_is_stored_redacted(store: Store) -> None:
    key = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"
    line = f"TOKEN = '{key}'  # gotcha: rotate this"
    found = _annotation("c.py", 2, f"rotate this {key}", line)
    records.sync_annotations(store, "c.py", [found], now=NOW)
    stored = gotchas.get(store, found.id)
    assert key not in stored.title and key not in stored.description
    [(row, text)] = _annotations_of(store, "c.py")[found.id]
    assert row == 2 and text is not None and key not in text and "gotcha: rotate this" in text
    # Moved, the new anchor is redacted as well.
    moved = _annotation("c.py", 5, f"rotate this {key}", line)
    records.sync_annotations(store, "c.py", [moved], now=NOW)
    [(row, text)] = _annotations_of(store, "c.py")[found.id]
    assert row == 5 and text is not None and key not in text


def test_an_annotation_whose_id_is_taken_leaves_that_gotcha_alone(store: Store) -> None:
    """A gotcha already stored under the annotation's id (written by hand with it) is kept
    as it is, and the sync does not fail on it."""
    taken = records.stable_id("annotation", "d.py", "x")
    gotchas.add(store, "manual", gotcha_id=taken)
    assert records.sync_annotations(store, "d.py", [_annotation("d.py", 0, "x")]) is True
    assert gotchas.get(store, taken).title == "manual"


def test_anchors_are_read_back_in_file_order(store: Store, workspace: Path) -> None:
    added = gotchas.add(
        store,
        "x",
        anchors=[Anchor("b.py", 1, 1), Anchor("a.py", 7, 8), Anchor("a.py", 2, 2)],
        now=NOW,
    )
    assert [(a.path, a.line) for a in gotchas.get(store, added.id).anchors] == [
        ("a.py", 2),
        ("a.py", 7),
        ("b.py", 1),
    ]
    [listed] = gotchas.list_gotchas(store)
    assert [(a.path, a.line, a.end_line) for a in listed.anchors] == [
        ("a.py", 2, 2),
        ("a.py", 7, 8),
        ("b.py", 1, 1),
    ]


def test_a_category_word_at_the_end_of_the_title_still_sets_the_category(store: Store) -> None:
    added = gotchas.add(store, "Hangs under pytest", description="when run twice")
    assert added.category == "test"
