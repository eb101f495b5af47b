"""The unified timeline: every source normalised, filters, and limits that always hold."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from memory_core import config, evolution, limits, snapshots, timeline
from memory_core.errors import UsageError
from memory_core.evolution import Change
from memory_core.store import Store

NOW = 1_800_000_000.0
FIELDS = {
    "id",
    "timestamp",
    "created_at",
    "source",
    "event_type",
    "session_id",
    "summary",
    "details",
    # For people: the actor in words, one readable sentence, how long ago.
    "who",
    "text",
    "ago",
}


def test_entries_from_every_present_source_share_one_shape(store: Store, workspace: Path) -> None:
    (workspace / "a.py").write_text("x\n")
    evolution.record_change(
        store, "a.py", actor="agent", session_id="s1", before="", after="x\n", now=NOW - 30
    )
    snapshots.capture(store, note="checkpoint of mind", now=NOW - 20)
    timeline.add(store, "deployed v2", now=NOW - 10)
    # Tables of other areas (sessions, gotchas, checkpoints) may not exist yet: no error.
    entries = timeline.entries(store, now=NOW)
    assert [e["source"] for e in entries] == ["event", "snapshot", "evolution"]
    assert all(set(e) == FIELDS for e in entries)
    manual, snap, change = entries
    assert (manual["event_type"], manual["summary"]) == ("manual.note", "deployed v2")
    assert snap["event_type"] == "snapshot.captured" and "checkpoint of mind" in snap["summary"]
    assert (change["event_type"], change["session_id"]) == ("file.created", "s1")
    assert change["details"]["actor"] == "agent" and change["details"]["path"] == "a.py"
    assert change["timestamp"] == "2027-01-15T08:00:00Z" or change["timestamp"].endswith("Z")


def test_sessions_gotchas_and_checkpoints_join_when_their_tables_exist(store: Store) -> None:
    sessions = pytest.importorskip("memory_core.sessions")
    gotchas = pytest.importorskip("memory_core.gotchas")
    sessions.start(store, session_id="sess-9", agent="claude-code", name="refactor", now=NOW - 300)
    gotcha = gotchas.add(store, "pip install needs --user here")
    found = timeline.entries(store, now=max(NOW, gotcha.created_at + 1))
    by_source = {e["source"]: e for e in found}
    assert by_source["session"]["session_id"] == "sess-9"
    assert by_source["session"]["event_type"] == "session.started"
    assert "refactor" in by_source["session"]["summary"]
    assert by_source["gotcha"]["id"] == f"gotcha:{gotcha.id}"
    assert "pip install" in by_source["gotcha"]["summary"]
    assert all(set(e) == FIELDS for e in found)


def test_a_checkpoint_or_a_session_start_is_one_entry_not_two(
    store: Store, workspace: Path
) -> None:
    from memory_core import checkpoints, sessions

    (workspace / "a.py").write_text("x = 1\n")
    sessions.start(store, session_id="sess-1", agent="claude-code")
    checkpoints.create(store, "before")
    found = timeline.entries(store)
    assert [e["event_type"] for e in found if e["event_type"].startswith("session.")] == [
        "session.started"
    ]
    assert len([e for e in found if "checkpoint" in e["event_type"]]) == 1


def test_filters_by_time_source_and_file(store: Store, workspace: Path) -> None:
    for n, name in enumerate(["a.py", "b.py", "a.py"]):
        (workspace / name).write_text(f"v{n}\n")
        evolution.record_change(store, name, actor="external", now=NOW - 100 + n)
    snapshots.capture(store, now=NOW - 50)
    assert len(timeline.entries(store, file="a.py", now=NOW)) == 2
    assert {e["source"] for e in timeline.entries(store, sources=["snapshot"], now=NOW)} == {
        "snapshot"
    }
    assert len(timeline.entries(store, since=NOW - 99, now=NOW)) == 3
    assert len(timeline.entries(store, since=NOW - 99, until=NOW - 60, now=NOW)) == 2
    with pytest.raises(UsageError, match="unknown timeline source"):
        timeline.entries(store, sources=["nope"], now=NOW)
    assert timeline.parse_since("2h", now=NOW) == NOW - 7200
    assert timeline.parse_since("2027-01-01") < NOW
    with pytest.raises(UsageError, match="cannot read"):
        timeline.parse_since("yesterday-ish")


def test_limits_are_enforced_on_queries_and_on_stored_rows(store: Store, workspace: Path) -> None:
    settings = config.load(
        workspace, overrides={"timeline": {"max_entries": 100, "max_age_days": 90}}
    )
    changes = [
        Change(path=f"f{n % 7}.txt", actor="external", after=f"{n}\n", ts=NOW - n)
        for n in range(300)
    ]
    evolution.record_batch(store, changes, now=NOW, check_git=False)
    ancient = [
        Change(path="old.txt", actor="external", after=f"old {n}\n", ts=NOW - 100 * 86400 - n)
        for n in range(5)
    ]
    evolution.record_batch(store, ancient, now=NOW, check_git=False)
    # Whatever the caller asks, at most max_entries and nothing older than max_age_days.
    entries = timeline.entries(store, settings, limit=10_000, since=0, now=NOW)
    assert len(entries) == 100
    assert all(
        "old.txt" not in e["summary"]
        for e in timeline.entries(store, settings, file="old.txt", now=NOW)
    )
    assert (
        timeline.entries(store, settings, limit=5, now=NOW)[0]["timestamp"]
        >= entries[-1]["timestamp"]
    )
    # And the rows themselves are bounded by the same settings.
    limits.enforce(store, settings, now=NOW)
    assert store.query_one("SELECT COUNT(*) FROM file_changes")[0] == 100  # type: ignore[index]
    assert store.query_one("SELECT COUNT(*) FROM file_changes WHERE path = 'old.txt'")[0] == 0  # type: ignore[index]
    with pytest.raises(UsageError, match="at least 1"):
        timeline.entries(store, settings, limit=0, now=NOW)


def test_a_git_checkout_appears_as_one_git_event(store: Store, workspace: Path) -> None:
    env = {
        "GIT_AUTHOR_NAME": "t",
        "GIT_AUTHOR_EMAIL": "t@e",
        "GIT_COMMITTER_NAME": "t",
        "GIT_COMMITTER_EMAIL": "t@e",
        "PATH": "/usr/bin:/bin",
        "HOME": str(workspace),
        "ENGRAM_NO_RESIDENT": "1",  # no resident server left behind (docs/resident.md)
        "ENGRAM_NO_HOOK_FORK": "1",  # a hook records before it exits (docs/resident.md)
    }

    def git(*args: str) -> None:
        subprocess.run(
            ["git", "-C", str(workspace), *args], check=True, capture_output=True, env=env
        )

    git("init", "-q", "-b", "main")
    for n in range(25):
        (workspace / f"m{n}.py").write_text(f"main {n}\n")
    git("add", "-A")
    git("commit", "-q", "-m", "main")
    git("checkout", "-q", "-b", "feature")
    for n in range(25):
        (workspace / f"m{n}.py").write_text(f"feature {n}\n")
    git("commit", "-q", "-am", "feature")
    git("checkout", "-q", "main")
    evolution.observe_git(store, now=NOW - 60)
    git("checkout", "-q", "feature")
    evolution.record_batch(
        store, [Change(path=f"m{n}.py", actor="external") for n in range(25)], now=NOW - 5
    )
    entries = timeline.entries(store, now=NOW)
    assert [(e["source"], e["event_type"]) for e in entries] == [("evolution", "git.checkout")]
    assert entries[0]["summary"] == "git checkout main -> feature"
    assert entries[0]["details"]["data"]["files_changed"] == 25


def test_entries_read_as_sentences_with_actors_in_words_and_no_internal_ids(
    store: Store, workspace: Path
) -> None:
    (workspace / "a.py").write_text("x\ny\n")
    evolution.record_change(store, "a.py", actor="editor", before="", now=NOW - 120)
    (workspace / "a.py").write_text("x\nz\n")
    evolution.record_change(store, "a.py", actor="external", before="x\ny\n", now=NOW - 60)
    found = timeline.entries(store, now=NOW)
    texts = [e["text"] for e in found]
    assert texts == [
        "a.py changed by another program (line 2)",
        "a.py created by you (in the editor) (lines 1–2)",
    ]
    assert [e["ago"] for e in found] == ["1 min ago", "2 min ago"]
    markdown = timeline.markdown(found)
    assert "evolution:" not in markdown and "a.py changed by another program" in markdown


def test_a_rollbacks_own_writes_are_credited_to_it(store: Store, workspace: Path) -> None:
    from memory_core import checkpoints

    (workspace / "a.py").write_text("good\n")
    made = checkpoints.create(store, "before the agent")
    (workspace / "a.py").write_text("bad\n")
    evolution.record_change(store, "a.py", actor="agent", before="good\n")
    checkpoints.rollback(store, made["id"])
    # The watcher reports the rollback's write a moment later, as another program's.
    evolution.record_change(store, "a.py", actor="external", before="bad\n")
    texts = [e["text"] for e in timeline.entries(store)]
    assert "a.py changed by the rollback to “before the agent” (line 1)" in texts
    assert any(t.startswith("Rolled back to checkpoint “before the agent”") for t in texts)
    assert "a.py changed by the agent (line 1)" in texts


def test_edits_after_a_rollback_are_credited_to_whoever_made_them(
    store: Store, workspace: Path
) -> None:
    from memory_core import checkpoints

    (workspace / "a.py").write_text("good\n")
    made = checkpoints.create(store, "before the agent")
    (workspace / "a.py").write_text("bad\n")
    checkpoints.rollback(store, made["id"])
    # The watcher's report of the rollback's write, then, seconds later, the person typing in
    # the editor and another program writing the same file: theirs, not the rollback's.
    evolution.record_change(store, "a.py", actor="external", before="bad\n")
    (workspace / "a.py").write_text("good\ntyped\n")
    evolution.record_change(store, "a.py", actor="editor", before="good\n")
    (workspace / "a.py").write_text("good\ntyped\nformatted\n")
    evolution.record_change(store, "a.py", actor="external", before="good\ntyped\n")
    texts = [e["text"] for e in timeline.entries(store) if e["source"] == "evolution"]
    assert texts == [
        "a.py changed by another program (line 3)",
        "a.py changed by you (in the editor) (line 2)",
        "a.py changed by the rollback to “before the agent” (line 1)",
    ]


def test_a_change_names_the_checkpoints_around_it(store: Store, workspace: Path) -> None:
    from memory_core import checkpoints

    (workspace / "a.py").write_text("one\n")
    first = checkpoints.create(store, "first")
    (workspace / "a.py").write_text("two\n")
    evolution.record_change(store, "a.py", actor="editor", before="one\n")
    second = checkpoints.create(store, "second")
    (change,) = [e for e in timeline.entries(store) if e["source"] == "evolution"]
    assert change["details"]["around"] == {"before": first["id"], "after": second["id"]}
