"""Drift on its edges (issue 31): `locate` in both directions and at the file's ends, overlap
severity on each side of its thresholds, a stale citation's range and verdict."""

from __future__ import annotations

from pathlib import Path

import pytest

from memory_core import drift, evolution
from memory_core.drift import Citation, anchor, check_citation, locate, overlap_severity
from memory_core.store import Store

BLOCK = ["def charge(card):", "    token = vault.get(card)", "    return gateway.pay(token)"]


def _filler(count: int, tag: str = "x") -> list[str]:
    return [f"{tag}_{n} = {n}" for n in range(count)]


def _text(lines: list[str]) -> str:
    return "\n".join(lines) + "\n"


@pytest.mark.parametrize(("shift", "where"), [(-5, 15), (5, 25), (0, 20)])
def test_locate_finds_code_moved_up_down_or_left_in_place(shift: int, where: int) -> None:
    lines = _filler(40)
    lines[20 + shift - 1 : 20 + shift - 1] = BLOCK
    assert locate(anchor(BLOCK), _text(lines), 20, 22) == where


def test_locate_prefers_the_nearest_copy() -> None:
    lines = _filler(60)
    lines[9:9] = BLOCK  # at line 10: 20 lines above the citation
    lines[33:33] = BLOCK  # at line 34: 4 lines below it
    assert locate(anchor(BLOCK), _text(lines), 30, 32) == 34


def test_locate_from_the_top_finds_code_moved_far_down() -> None:
    lines = _filler(80)
    lines[59:59] = BLOCK
    assert locate(anchor(BLOCK), _text(lines), 2, 4) == 60


def test_locate_from_the_bottom_finds_code_moved_to_the_top() -> None:
    lines = _filler(80)
    lines[0:0] = BLOCK
    assert locate(anchor(BLOCK), _text(lines), 80, 82) == 1


def test_locate_ignores_indentation_and_says_none_when_the_code_is_gone() -> None:
    lines = _filler(30)
    lines[10:10] = ["    " + line for line in BLOCK]
    assert locate(anchor(BLOCK), _text(lines), 1, 3) == 11
    assert locate(anchor(BLOCK), _text(_filler(30)), 10, 12) is None
    assert locate(anchor(BLOCK), "one line\n", 1, 3) is None


@pytest.mark.parametrize(
    ("lines", "severity"), [(2, "medium"), (3, "high"), (9, "high"), (10, "critical")]
)
def test_overlap_severity_rises_at_3_and_10_lines(lines: int, severity: str) -> None:
    assert overlap_severity(lines, 0.0, 600.0) == severity


@pytest.mark.parametrize(
    ("gap", "severity"),
    [(100.0, "critical"), (101.0, "high"), (300.0, "high"), (301.0, "medium"), (600.0, "medium")],
)
def test_overlap_severity_falls_past_a_sixth_and_a_half_of_the_window(
    gap: float, severity: str
) -> None:
    assert overlap_severity(10, gap, 600.0) == severity


def test_the_smallest_overlap_far_apart_is_low() -> None:
    assert overlap_severity(1, 599.0, 600.0) == "low"
    assert overlap_severity(1, 5.0, 0.0) == "medium"  # no window: always close


def _cite(workspace: Path, lines: list[str], start: int, end: int) -> Citation:
    (workspace / "pay.py").write_text(_text(lines))
    return Citation("M-1", "pay.py", start, end, anchor(BLOCK), "charge cards")


def test_a_citation_whose_code_moved_points_at_the_new_range(workspace: Path) -> None:
    lines = _filler(20)
    lines[11:11] = BLOCK  # now at 12-14, cited at 3-5
    item = check_citation(workspace, _cite(workspace, lines, 3, 5))
    assert item is not None
    assert (item.severity, item.lines) == ("low", (12, 14))
    assert "moved to lines 12-14" in item.summary and item.details["moved_to"] == 12


def test_an_intact_citation_is_not_drift(workspace: Path) -> None:
    lines = _filler(4) + BLOCK + _filler(4, "y")
    assert check_citation(workspace, _cite(workspace, lines, 5, 7)) is None


def test_a_changed_last_line_is_a_change_not_a_shorter_file(workspace: Path) -> None:
    shorter = [*_filler(4), "def charge(card, amount):", "    pass", "    return None"]
    changed = check_citation(workspace, _cite(workspace, shorter, 5, 7))
    assert changed is not None and changed.severity == "medium"
    assert "that code changed since" in changed.summary
    (workspace / "pay.py").write_text(_text([*_filler(4), "something else"]))
    last = check_citation(workspace, Citation("M-2", "pay.py", 5, 5, anchor(["old"]), ""))
    assert last is not None and last.severity == "medium"
    past = check_citation(workspace, Citation("M-3", "pay.py", 6, 6, anchor(["old"]), ""))
    assert past is not None and past.severity == "high" and "now has 5 lines" in past.summary


def test_a_citation_of_a_deleted_file_is_critical(workspace: Path) -> None:
    item = check_citation(workspace, Citation("M-9", "gone.py", 1, 2, anchor(BLOCK), "x"))
    assert item is not None and item.severity == "critical" and "file is gone" in item.summary


# -- overlaps between actors and between agent sessions ----------------------------------------


def _edit(
    store: Store, actor: str, session: str | None, at: float, lines: list[tuple[int, int]]
) -> None:
    before = _text(_filler(30, f"v{at}"))
    after = _text(_filler(30, f"w{at}"))
    evolution.record_change(
        store,
        "app.py",
        actor=actor,
        session_id=session,
        before=before,
        after=after,
        lines=lines,
        now=at,
    )


def test_two_agent_sessions_on_the_same_lines_overlap(store: Store) -> None:
    _edit(store, "agent", "S1", 1000.0, [(5, 9)])
    _edit(store, "agent", "S2", 1010.0, [(7, 12)])
    items = drift.overlaps(store, "app.py", window_minutes=10, now=1020.0)
    assert [(i.lines, i.severity) for i in items] == [((7, 9), "high")]
    assert "session S1" in items[0].summary and "session S2" in items[0].summary


def test_one_session_editing_its_own_lines_twice_is_no_overlap(store: Store) -> None:
    _edit(store, "agent", "S1", 1000.0, [(5, 9)])
    _edit(store, "agent", "S1", 1010.0, [(5, 9)])
    assert drift.overlaps(store, "app.py", window_minutes=10, now=1020.0) == []


def test_ranges_that_only_touch_do_not_overlap(store: Store) -> None:
    _edit(store, "editor", None, 1000.0, [(1, 4)])
    _edit(store, "agent", "S1", 1010.0, [(5, 9)])
    assert drift.overlaps(store, "app.py", window_minutes=10, now=1020.0) == []


def test_a_change_older_than_the_window_does_not_count(store: Store) -> None:
    _edit(store, "editor", None, 1000.0, [(1, 9)])
    _edit(store, "agent", "S1", 1700.0, [(1, 9)])
    assert drift.overlaps(store, "app.py", window_minutes=10, now=1700.0) == []
    assert len(drift.overlaps(store, "app.py", window_minutes=12, now=1700.0)) == 1
