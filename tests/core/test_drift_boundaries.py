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


# -- the workspace since a moment: what each kind of move says --------------------------------


def _repo(workspace: Path) -> str:
    from tests.conftest import git

    git(workspace, "init", "-q", "-b", "main")
    (workspace / "a.py").write_text("one\n")
    git(workspace, "add", "-A")
    git(workspace, "commit", "-q", "-m", "one")
    return git(workspace, "rev-parse", "HEAD").strip()


def test_new_commits_on_the_same_branch_are_counted(store: Store, workspace: Path) -> None:
    from tests.conftest import git

    head = _repo(workspace)
    for n in (2, 3):
        (workspace / "a.py").write_text(f"{n}\n")
        git(workspace, "commit", "-q", "-am", f"c{n}")
    now_head = git(workspace, "rev-parse", "HEAD").strip()
    (item,) = drift.workspace_since(store, since=0.0, label="snapshot S1", branch="main", head=head)
    assert (item.kind, item.severity, item.summary) == (
        "workspace",
        "medium",
        "2 commit(s) since snapshot S1",
    )
    assert item.details == {
        "key": "snapshot S1:commits",
        "then": head,
        "now": now_head,
        "commits": 2,
    }


def test_a_branch_switch_says_from_where_to_where(store: Store, workspace: Path) -> None:
    from tests.conftest import git

    head = _repo(workspace)
    git(workspace, "checkout", "-q", "-b", "feature")
    (item,) = drift.workspace_since(store, since=0.0, label="the session", branch="main", head=head)
    assert (item.kind, item.severity) == ("workspace", "high")
    assert item.summary == "branch switched from main to feature since the session"
    assert item.details == {"key": "the session:branch", "then": "main", "now": "feature"}
    git(workspace, "checkout", "-q", "--detach")
    (detached,) = drift.workspace_since(store, since=0.0, label="X", branch="main", head=head)
    assert "to a detached HEAD" in detached.summary


def test_files_dirty_now_but_clean_then_are_listed(store: Store, workspace: Path) -> None:
    head = _repo(workspace)
    (workspace / "a.py").write_text("edited\n")
    (workspace / "b.py").write_text("new\n")
    items = drift.workspace_since(
        store, since=0.0, label="L", branch="main", head=head, dirty=["b.py"]
    )
    (item,) = items
    assert (item.severity, item.summary) == (
        "low",
        "1 file(s) with uncommitted changes that were clean at L",
    )
    assert item.details == {"key": "L:dirty", "files": ["a.py"]}


def test_open_documents_that_are_gone_are_named(store: Store, workspace: Path) -> None:
    (workspace / "here.py").write_text("x\n")
    (item,) = drift.workspace_since(
        store,
        since=0.0,
        label="L",
        branch=None,
        head=None,
        documents=["here.py", "gone1.py", "gone2.py"],
    )
    assert (item.severity, item.summary) == (
        "medium",
        "2 document(s) open at L are gone: gone1.py, gone2.py",
    )
    assert item.details == {"key": "L:gone", "files": ["gone1.py", "gone2.py"]}


def test_files_changed_since_are_listed_with_who_changed_them(store: Store) -> None:
    _edit(store, "editor", None, 100.0, [(1, 2)])
    _edit(store, "agent", "S1", 200.0, [(3, 4)])
    evolution.record_change(store, "old.py", actor="editor", before="", after="x\n", now=10.0)
    (item,) = drift.workspace_since(store, since=50.0, label="L", branch=None, head=None)
    assert (item.severity, item.summary) == ("low", "1 file(s) changed since L")
    (entry,) = item.details["files"]
    assert (entry["path"], entry["changes"]) == ("app.py", 2)
    assert sorted(entry["actors"].split(",")) == ["agent", "editor"]
    assert item.details["key"] == "L:changed"


def test_dirty_files_that_cover_the_changes_are_not_told_twice(
    store: Store, workspace: Path
) -> None:
    head = _repo(workspace)
    (workspace / "a.py").write_text("edited\n")
    evolution.record_change(store, "a.py", actor="agent", session_id="S", now=100.0)
    items = drift.workspace_since(store, since=50.0, label="L", branch="main", head=head)
    assert [i.details["key"] for i in items] == ["L:dirty"]
    (workspace / "c.py").write_text("c\n")
    evolution.record_change(
        store, "zz.py", actor="agent", session_id="S", before="", after="1\n", now=101.0
    )
    keys = [
        i.details["key"]
        for i in drift.workspace_since(store, since=50.0, label="L", branch="main", head=head)
    ]
    assert keys == ["L:dirty"]  # two dirty files, two changed files
    evolution.record_change(
        store, "zz2.py", actor="agent", session_id="S", before="", after="1\n", now=102.0
    )
    keys = [
        i.details["key"]
        for i in drift.workspace_since(store, since=50.0, label="L", branch="main", head=head)
    ]
    assert keys == ["L:dirty", "L:changed"]


def _git_row(store: Store, at: float, operation: str, summary: str) -> None:
    import json

    data = {"operation": operation, "summary": summary, "to_commit": "c0ffee" + operation}
    with store.transaction() as db:
        db.execute(
            "INSERT INTO file_changes (ts, actor, change, data) VALUES (?, 'git', 'git', ?)",
            (at, json.dumps(data)),
        )


def test_git_moves_and_other_hands_during_the_active_session(store: Store) -> None:
    from memory_core import sessions

    sessions.start(store, session_id="S-live", agent="claude-code", now=1000.0)
    _git_row(store, 900.0, "checkout", "git checkout a -> b")  # before the session
    _git_row(store, 1100.0, "checkout", "git checkout main -> fix")
    _git_row(store, 1200.0, "head-moved", "git HEAD moved on fix: 1 -> 2")
    evolution.record_change(
        store, "mine.py", actor="agent", session_id="S-live", before="", after="1\n", now=1300.0
    )
    evolution.record_change(store, "yours.py", actor="editor", before="", after="1\n", now=1300.0)
    items = drift.since_session(store)
    assert [(i.severity, i.summary) for i in items] == [
        ("high", "git checkout main -> fix during session S-live"),
        ("medium", "git HEAD moved on fix: 1 -> 2 during session S-live"),
        ("low", "1 file(s) changed by others since session S-live began"),
    ]
    assert items[2].details == {"key": "session:S-live:others", "files": ["yours.py"]}
    assert items[0].details["session_id"] == "S-live"


# -- how drift reads ---------------------------------------------------------------------------


def test_markdown_groups_by_severity_most_severe_first() -> None:
    items = [
        drift.DriftItem("overlap", "low", "small", "a.py", (3, 3)).as_dict(),
        drift.DriftItem("overlap", "high", "big", "b.py", (3, 5)).as_dict(),
        drift.DriftItem(
            "workspace",
            "medium",
            "3 file(s) changed since L",
            details={
                "files": [
                    {"path": "x.py", "changes": 2, "actors": "agent,editor"},
                    {"path": "y.py", "changes": 1, "actors": "external"},
                    "plain.py",
                ]
            },
        ).as_dict(),
    ]
    text = drift.markdown(items, title="Drift now")
    assert text.splitlines() == [
        "# Drift now",
        "",
        "## High (1)",
        "",
        "- **b.py** lines 3-5: big",
        "",
        "## Medium (1)",
        "",
        "- 3 file(s) changed since L",
        "  - x.py: 2 change(s) by the agent, you (in the editor)",
        "  - y.py: 1 change(s) by another program",
        "  - plain.py",
        "",
        "## Low (1)",
        "",
        "- **a.py** line 3: small",
    ]


def test_markdown_cuts_long_file_lists_and_says_when_nothing_drifted() -> None:
    files = [f"f{n}.py" for n in range(23)]
    item = drift.DriftItem("workspace", "low", "many", details={"files": files}).as_dict()
    lines = drift.markdown([item]).splitlines()
    assert lines.count("  - f0.py") == 1 and "  - f19.py" in lines and "  - f20.py" not in lines
    assert "  - and 3 more" in lines
    assert drift.markdown([]) == "# Drift\n\nNo drift: nothing changed under you.\n"


def test_an_items_dict_has_its_stable_id_and_lines_as_a_list() -> None:
    item = drift.DriftItem("overlap", "low", "s", "a.py", (2, 4), {"key": "k"})
    same = drift.DriftItem("overlap", "high", "other words", "a.py", (2, 4), {"key": "k"})
    shown = item.as_dict()
    assert shown["lines"] == [2, 4] and shown["id"] == same.id and shown["id"].startswith("D-")
    assert len(shown["id"]) == 10
    assert drift.DriftItem("workspace", "low", "s").as_dict()["lines"] is None
    assert drift.DriftItem("overlap", "low", "s", "a.py", (2, 5), {"key": "k"}).id != item.id


@pytest.mark.parametrize(
    ("disk", "deleted", "severity", "words"),
    [
        (
            [(3, 5)],
            False,
            "high",
            "changed on disk while this buffer has unsaved changes to the same lines",
        ),
        ([(9, 12)], False, "medium", "changed on disk while this buffer has unsaved changes"),
        (None, False, "medium", "changed on disk while this buffer has unsaved changes"),
        (None, True, "critical", "was deleted on disk while this buffer has unsaved changes"),
    ],
)
def test_an_unsaved_buffer_whose_file_changed_on_disk(
    disk: list[tuple[int, int]] | None, deleted: bool, severity: str, words: str
) -> None:
    item = drift.unsaved_conflict("a.py", disk_lines=disk, unsaved_lines=[(5, 8)], deleted=deleted)
    assert (item.kind, item.severity, item.summary) == ("unsaved", severity, f"a.py {words}")
    assert item.lines == (1, 1)


def test_a_memory_citing_code_is_checked_with_its_first_line_as_label(store: Store) -> None:
    from memory_core import memory

    (store.root / "pay.py").write_text(_text([*_filler(2), *BLOCK]))
    long_first = "Charging a card needs the vault token " + "x" * 80
    memory.add(
        store, long_first + "\nsecond line", type="learning", file="pay.py", line=3, end_line=5
    )
    (citation,) = drift.memory_citations(store)
    assert (citation.path, citation.start, citation.end) == ("pay.py", 3, 5)
    assert citation.anchor == anchor(BLOCK)
    assert len(citation.label) == drift.LABEL_CHARS and citation.label.endswith("…")
    assert citation.label.startswith("Charging a card")
    assert drift.stale_citations(store) == []
    (store.root / "pay.py").write_text(_text([*_filler(12), *BLOCK]))
    (moved,) = drift.stale_citations(store)
    assert (moved.severity, moved.lines) == ("low", (13, 15))
    assert drift.label_for("   ") == ""


def test_detect_finds_overlaps_and_citations_most_severe_first(store: Store) -> None:
    from memory_core import clock, config, memory

    now = clock.now()
    _edit(store, "editor", None, now - 20, [(1, 12)])
    _edit(store, "agent", "S1", now - 10, [(1, 12)])
    (store.root / "pay.py").write_text(_text(BLOCK))
    memory.add(store, "charge", type="learning", file="pay.py", line=1, end_line=3)
    (store.root / "pay.py").write_text("changed\nentirely\nnow\n")
    items = drift.detect(store, config.Settings(), now=now)
    assert [(i.kind, i.severity) for i in items] == [
        ("overlap", "critical"),
        ("stale-citation", "medium"),
    ]


def test_a_git_event_without_a_summary_is_still_named(store: Store) -> None:
    import json

    from memory_core import sessions

    sessions.start(store, session_id="S-q", agent="claude-code", now=1000.0)
    with store.transaction() as db:
        db.execute(
            "INSERT INTO file_changes (ts, actor, change, data) VALUES (1100, 'git', 'git', ?)",
            (json.dumps({"operation": "head-moved"}),),
        )
    (item,) = drift.since_session(store)
    assert (item.kind, item.summary) == ("workspace", "git operation during session S-q")


def test_overlaps_come_in_line_order(store: Store) -> None:
    _edit(store, "editor", None, 1000.0, [(20, 25), (1, 4)])
    _edit(store, "agent", "S1", 1010.0, [(22, 30), (2, 3)])
    items = drift.overlaps(store, "app.py", window_minutes=10, now=1020.0)
    assert [i.lines for i in items] == [(2, 3), (22, 25)]
    assert all(i.kind == "overlap" for i in items)


def test_rewritten_history_names_both_commits(store: Store, workspace: Path) -> None:
    from tests.conftest import git

    _repo(workspace)
    (workspace / "a.py").write_text("two\n")
    git(workspace, "commit", "-q", "-am", "two")
    then = git(workspace, "rev-parse", "HEAD").strip()
    git(workspace, "reset", "-q", "--hard", "HEAD~1")
    (workspace / "a.py").write_text("three\n")
    git(workspace, "commit", "-q", "-am", "three")
    now_head = git(workspace, "rev-parse", "HEAD").strip()
    (item,) = drift.workspace_since(store, since=0.0, label="L", branch="main", head=then)
    assert (item.kind, item.severity) == ("workspace", "critical")
    assert item.details == {"key": "L:rewritten", "then": then, "now": now_head}
