"""The change journal: a checkpoint trusts a source of changed paths only when it covered the
whole interval since the previous checkpoint (the server's watcher alive since then, watchman's
clock unchanged, git's view of both moments); otherwise it scans. Real watchfiles, real
watchman (when installed), real git."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest

from memory_core import checkpoints, config, journal
from memory_core.store import Store
from tests.conftest import count_file_reads, git
from tests.conftest import write_file as _write


def _files(store: Store, checkpoint_id: str) -> dict[str, str]:
    return {
        item["path"]: checkpoints.read_blob(store, item["hash"]).decode()
        for item in checkpoints.manifest(store, checkpoint_id)
    }


@pytest.fixture
def project(store: Store) -> Store:
    _write(store.root, "src/app.py", "one\n")
    _write(store.root, "src/util.py", "util\n")
    _write(store.root, "README.md", "# demo\n")
    return store


def _no_watchman(store: Store) -> None:
    config.set_value(store.root, "checkpoints.watchman", False)


def _wait_marked(watch: journal.Watcher, rel: str, timeout: float = 10.0) -> None:
    assert watch.journal is not None
    deadline = time.time() + timeout
    while time.time() < deadline:
        if rel in (watch.journal.since(watch.journal.started_at) or set()):
            return
        time.sleep(0.05)
    raise AssertionError(f"the watcher never reported {rel}")


def _started(root: Path) -> journal.Watcher:
    watch = journal.Watcher(root).start()
    assert watch.ready.wait(10) and watch.journal is not None, watch.error
    return watch


def test_the_servers_watcher_vouches_while_it_runs_and_not_after_a_restart(
    project: Store,
) -> None:
    _no_watchman(project)
    root = project.root
    watch = _started(root)
    try:
        first = checkpoints.create(project, journal=watch.journal)
        assert first["source"] == "scan"  # nothing vouched for the time before the watcher
        time.sleep(1.1)
        _write(root, "src/app.py", "two\n", age=0)
        _write(root, "newdir/deep/file.py", "made in a new folder\n", age=0)
        # inotify may see only the new folder (its files were written before the watch on it
        # was in place): the checkpoint reads the folder itself.
        _wait_marked(watch, "newdir")
        second = checkpoints.create(project, journal=watch.journal)
        assert second["source"] == "watcher" and second["mode"] == "incremental"
        files = _files(project, second["id"])
        assert files["src/app.py"] == "two\n"
        assert files["newdir/deep/file.py"] == "made in a new folder\n"
    finally:
        watch.stop()
    watch.thread.join(5)  # type: ignore[union-attr]
    # While no watcher runs, a file changes; a new watcher starts afterwards.
    _write(root, "src/util.py", "changed while nobody watched\n")
    assert (
        watch.journal.since(watch.journal.started_at) is None
    )  # a stopped watcher vouches for nothing
    restarted = _started(root)
    try:
        third = checkpoints.create(project, journal=restarted.journal)
        assert third["source"] == "scan"
        assert _files(project, third["id"])["src/util.py"] == "changed while nobody watched\n"
    finally:
        restarted.stop()


def test_a_journal_from_another_life_of_the_watcher_is_not_trusted(project: Store) -> None:
    _no_watchman(project)
    old = journal.ChangeJournal(started_at=time.time() - 3600)
    checkpoints.create(project, journal=old)
    old.stop()  # the watcher died: later changes were not seen
    _write(project.root, "src/app.py", "unseen\n")
    made = checkpoints.create(project, journal=old)
    assert made["source"] == "scan" and made["changed"] == 1
    # Negative control: the same journal while alive is trusted and, having no entry for the
    # file, would have missed the change.
    alive = journal.ChangeJournal(started_at=time.time() - 3600)
    _write(project.root, "src/app.py", "unseen again\n")
    trusting = checkpoints.create(project, journal=alive)
    assert trusting["source"] == "watcher" and trusting["changed"] == 0


def test_client_hints_are_never_trusted_alone(project: Store) -> None:
    _no_watchman(project)
    checkpoints.create(project)
    _write(project.root, "src/app.py", "edited\n")
    _write(project.root, "later/new.py", "the client never reported this\n")
    made = checkpoints.create(project, hints=["src/app.py"])
    assert made["source"] == "scan"
    assert "later/new.py" in _files(project, made["id"])


def test_changed_ignore_settings_make_the_next_checkpoint_scan(project: Store) -> None:
    _no_watchman(project)
    live = journal.ChangeJournal(started_at=time.time() - 3600)
    checkpoints.create(project, journal=live)
    config.set_value(project.root, "watch.exclude", ["README.md"])
    made = checkpoints.create(project, journal=live)
    assert made["source"] == "scan"
    assert "README.md" not in _files(project, made["id"])


needs_watchman = pytest.mark.skipif(shutil.which("watchman") is None, reason="watchman missing")


@needs_watchman
def test_watchman_vouches_from_the_cli_and_a_reset_clock_is_not_trusted(project: Store) -> None:
    root = project.root
    first = checkpoints.create(project)
    assert first["source"] == "scan"
    _write(root, "src/app.py", "seen by watchman\n")
    second = checkpoints.create(project)
    assert second["source"] == "watchman" and second["changed"] == 1
    assert _files(project, second["id"])["src/app.py"] == "seen by watchman\n"
    # watchman forgets the folder (as after its restart): its clock no longer vouches.
    subprocess.run(["watchman", "watch-del", str(root)], capture_output=True, check=False)
    _write(root, "src/util.py", "changed while watchman was not watching\n")
    third = checkpoints.create(project)
    assert third["source"] == "scan"
    assert (
        _files(project, third["id"])["src/util.py"] == "changed while watchman was not watching\n"
    )
    subprocess.run(["watchman", "watch-del", str(root)], capture_output=True, check=False)


@pytest.fixture
def repo(project: Store) -> Store:
    _no_watchman(project)
    root = project.root
    git(root, "init", "-q")
    (root / ".gitignore").write_text(".engram/\n*.log\n")
    git(root, "add", "-A")
    git(root, "commit", "-qm", "first")
    return project


def test_git_vouches_for_tracked_untracked_and_committed_changes(repo: Store) -> None:
    root = repo.root
    first = checkpoints.create(repo)
    assert first["source"] == "scan"
    _write(root, "src/app.py", "modified, not committed\n")
    _write(root, "fresh/folder/new.py", "untracked in a new folder\n")
    _write(root, "debug.log", "ignored by git and by engram\n")
    second = checkpoints.create(repo)
    assert second["source"] == "git" and second["changed"] == 2
    files = _files(repo, second["id"])
    assert files["src/app.py"] == "modified, not committed\n"
    assert files["fresh/folder/new.py"] == "untracked in a new folder\n"
    assert "debug.log" not in files
    # Committed since: the file is clean now, but differs from the previous checkpoint.
    git(root, "add", "-A")
    git(root, "commit", "-qm", "second")
    _write(root, "src/util.py", "changed and committed\n")
    git(root, "commit", "-qam", "third")
    third = checkpoints.create(repo)
    assert third["source"] == "git"
    assert _files(repo, third["id"])["src/util.py"] == "changed and committed\n"
    # What git vouched for equals a full scan.
    config.set_value(root, "watch.exclude", ["*.tmp"])  # new rules: forces a scan
    full = checkpoints.create(repo)
    assert full["source"] == "scan"
    assert checkpoints.manifest(repo, full["id"]) == checkpoints.manifest(repo, third["id"])


def test_git_answers_from_engrams_own_index_and_never_writes_the_users(repo: Store) -> None:
    root = repo.root
    users_index = root / ".git" / "index"
    checkpoints.create(repo)
    before = (users_index.read_bytes(), users_index.stat().st_mtime_ns)
    # Touched with the same content (git would refresh its stat data) and truly changed.
    _write(root, "src/util.py", "util\n", age=30)
    _write(root, "src/app.py", "changed\n")
    second = checkpoints.create(repo)
    assert second["source"] == "git" and second["changed"] == 1
    assert (users_index.read_bytes(), users_index.stat().st_mtime_ns) == before
    own = root / ".git" / "engram" / "index"
    assert own.is_file()
    # A commit moves HEAD: engram's copy is made again from the user's index, and what it says
    # afterwards is still exact.
    git(root, "commit", "-qam", "second")
    _write(root, "README.md", "after the commit\n")
    third = checkpoints.create(repo)
    assert third["source"] == "git" and third["changed"] == 1
    assert (root / ".git" / "engram" / "index.head").read_text() == git(
        root, "rev-parse", "HEAD"
    ).strip()
    assert _files(repo, third["id"])["README.md"] == "after the commit\n"


def test_a_broken_copy_of_gits_index_falls_back_to_the_users_and_is_made_again(
    repo: Store,
) -> None:
    root = repo.root
    checkpoints.create(repo)
    _write(root, "src/app.py", "first change\n")
    checkpoints.create(repo)
    own = root / ".git" / "engram" / "index"
    own.write_bytes(b"not an index at all")
    _write(root, "src/app.py", "second change\n")
    _write(root, "new/folder/file.py", "untracked\n")
    after = checkpoints.create(repo)
    assert after["source"] == "git" and after["changed"] == 2
    files = _files(repo, after["id"])
    assert files["src/app.py"] == "second change\n"
    assert files["new/folder/file.py"] == "untracked\n"
    assert not own.exists()  # removed; the next checkpoint copies the user's index again
    checkpoints.create(repo)
    assert own.read_bytes().startswith(b"DIRC")


def test_a_git_state_carried_through_a_watcher_checkpoint_still_vouches(repo: Store) -> None:
    root = repo.root
    checkpoints.create(repo)
    live = journal.ChangeJournal(started_at=time.time() - 3600)
    _write(root, "src/app.py", "seen by the watcher\n")
    live.mark(["src/app.py"])
    time.sleep(1.1)
    via_watcher = checkpoints.create(repo, journal=live)
    assert via_watcher["source"] == "watcher"
    git(root, "commit", "-qam", "commit the watched change")
    _write(root, "README.md", "changed after the server stopped\n")
    live.stop()
    from_cli = checkpoints.create(repo)
    assert from_cli["source"] == "git"
    files = _files(repo, from_cli["id"])
    assert files["README.md"] == "changed after the server stopped\n"
    assert files["src/app.py"] == "seen by the watcher\n"


def test_a_carried_git_state_that_grew_past_its_limit_is_taken_afresh_from_git(
    repo: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    from memory_core.checkpoints import capture

    monkeypatch.setattr(capture, "GIT_CARRY_LIMIT", 1)
    root = repo.root
    checkpoints.create(repo)
    live = journal.ChangeJournal(started_at=time.time() - 3600)
    _write(root, "src/app.py", "changed, seen by the watcher\n")
    live.mark(["src/app.py", "README.md"])  # the watcher also names a file left as it was
    time.sleep(1.1)
    via_watcher = checkpoints.create(repo, journal=live)
    assert via_watcher["source"] == "watcher"
    [(token,)] = repo.query("SELECT journal FROM checkpoints WHERE id = ?", (via_watcher["id"],))
    assert json.loads(token)["git"]["dirty"] == ["src/app.py"]  # git's own view, not 2 paths
    live.stop()
    _write(root, "README.md", "changed after the server stopped\n")
    from_cli = checkpoints.create(repo)
    assert from_cli["source"] == "git"
    files = _files(repo, from_cli["id"])
    assert files["README.md"] == "changed after the server stopped\n"
    assert files["src/app.py"] == "changed, seen by the watcher\n"


def test_many_files_modified_since_head_do_not_make_every_checkpoint_ask_git(
    repo: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Git is asked again when a carried state gained more than the limit beyond what git
    listed, not whenever the user has that many files modified: then every checkpoint, however
    few files changed, waited for a `git status`."""
    from memory_core.checkpoints import capture

    monkeypatch.setattr(capture, "GIT_CARRY_LIMIT", 1)
    root = repo.root
    for rel in ("src/app.py", "README.md"):
        _write(root, rel, "modified, not committed\n")
    assert checkpoints.create(repo)["source"] == "scan"  # git listed both: more than the limit
    statuses: list[Path] = []
    real_state = journal.git_state

    def counted(root_: Path, **kwargs: Any) -> journal.GitState | None:
        statuses.append(root_)
        return real_state(root_, **kwargs)

    monkeypatch.setattr(journal, "git_state", counted)
    live = journal.ChangeJournal(started_at=time.time() - 3600)
    for round_no in range(3):
        _write(root, "src/app.py", f"round {round_no}\n")
        live.mark(["src/app.py"])
        time.sleep(1.1)
        made = checkpoints.create(repo, journal=live)
        assert (made["source"], made["changed"]) == ("watcher", 1)
    assert statuses == []
    _write(root, "new.py", "a third path the watcher names\n")
    _write(root, "other.py", "and a fourth\n")
    live.mark(["new.py", "other.py"])
    time.sleep(1.1)
    assert checkpoints.create(repo, journal=live)["source"] == "watcher"
    assert statuses == [root]  # two carried in, past the limit of one: git looks again
    live.stop()


def test_a_stored_git_state_that_cannot_be_counts_all_its_paths_as_carried() -> None:
    """A checkpoint's stored state with no count of git's own paths (an older engram's) or an
    impossible one counts every path as carried, so git is asked afresh past the limit and the
    state never grows without bound."""
    for listed in (None, -1, 3, "2", True):
        state = journal.GitState.from_json({"head": None, "dirty": ["a", "b"], "listed": listed})
        assert state is not None and state.carried == 2, listed
    state = journal.GitState.from_json({"head": None, "dirty": ["a", "b"], "listed": 1})
    assert state is not None and state.carried == 1


def test_a_file_rewritten_with_the_same_content_in_the_racy_window_is_not_changed(
    project: Store,
) -> None:
    _no_watchman(project)
    root = project.root
    for rel in ("a.py", "b.py", "c.py"):
        _write(root, rel, f"{rel}\n", age=0)  # written just now: racy
    checkpoints.create(project)
    _write(root, "a.py", "really changed\n", age=0)
    second = checkpoints.create(project)
    assert second["changed"] == 1  # b.py and c.py are read again but have the same content
    third = checkpoints.create(project)
    assert third["changed"] == 0


def test_a_racy_file_named_again_is_read_and_kept_only_when_its_content_is_the_same(
    project: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = project.root
    checkpoints.create(project)
    live = journal.ChangeJournal(started_at=time.time() - 3600)
    for rel in ("src/app.py", "src/util.py"):
        _write(root, rel, f"{rel} racy\n", age=0)  # hashed within the racy window
    live.mark(["src/app.py", "src/util.py"])
    first = checkpoints.create(project, journal=live)
    assert first["changed"] == 2
    # app.py is rewritten within the same clock tick: same size, inode and time, new content.
    app = root / "src" / "app.py"
    tick = app.stat().st_mtime_ns
    app.write_text("src/app.py RACY\n")
    os.utime(app, ns=(tick, tick))
    reads = count_file_reads(monkeypatch)
    live.mark(["src/app.py", "src/util.py"])  # a journal names both again (its slack)
    second = checkpoints.create(project, journal=live, now=time.time() + 5)
    assert second["changed"] == 1
    assert _files(project, second["id"])["src/app.py"] == "src/app.py RACY\n"
    assert _files(project, second["id"])["src/util.py"] == "src/util.py racy\n"
    assert set(reads) == {"src/app.py", "src/util.py"}
    # util.py, read again out of the racy window with the same content, is trusted by its stat
    # from now on; app.py too, read out of the window.
    reads.clear()
    live.mark(["src/app.py", "src/util.py"])
    third = checkpoints.create(project, journal=live, now=time.time() + 10)
    assert (third["changed"], reads) == (0, [])


def test_secret_files_are_left_out_unless_the_setting_includes_them(project: Store) -> None:
    _no_watchman(project)
    root = project.root
    for rel in (".env", ".env.production", "certs/server.pem", "deploy/id_rsa", "tls.key"):
        _write(root, rel, "SECRET=1\n")
    _write(root, ".env.example", "SECRET=\n")
    _write(root, "deploy/id_rsa.pub", "ssh-ed25519 AAAA\n")
    made = checkpoints.create(project)
    files = set(_files(project, made["id"]))
    assert not files & {".env", ".env.production", "certs/server.pem", "deploy/id_rsa", "tls.key"}
    assert {".env.example", "deploy/id_rsa.pub", "src/app.py"} <= files
    # A rollback never removes them: they are not "created after" the checkpoint.
    result = checkpoints.rollback(project, made["id"])
    assert (root / ".env").exists() and ".env" not in result["removed"]
    config.set_value(root, "checkpoints.include_secret_files", True)
    included = checkpoints.create(project)
    assert {".env", "certs/server.pem", "deploy/id_rsa"} <= set(_files(project, included["id"]))


def test_a_rollback_sees_a_write_made_just_before_it_through_the_watcher(project: Store) -> None:
    _no_watchman(project)
    root = project.root
    watch = _started(root)
    try:
        checkpoints.create(project, journal=watch.journal)
        time.sleep(1.1)
        _write(root, "README.md", "the base\n", age=0)
        _wait_marked(watch, "README.md")
        target = checkpoints.create(project, journal=watch.journal)
        assert target["source"] == "watcher"
        time.sleep(1.1)
        # Written and rolled back at once: the watcher has not delivered the event yet, so the
        # plan first waits for its cookie to come back.
        _write(root, "src/util.py", "written a moment ago\n", age=0)
        plan = checkpoints.plan_rollback(project, target["id"], journal=watch.journal)
        assert [w.path for w in plan.writes] == ["src/util.py"]
        assert plan.capture is not None and plan.capture.source == "watcher"
    finally:
        watch.stop()


def test_a_rollback_in_git_without_watchman_keeps_what_git_names_for_its_undo(
    repo: Store,
) -> None:
    root = repo.root
    target = checkpoints.create(repo)
    _write(root, "src/app.py", "edited since\n")
    _write(root, "notes/new.md", "a new folder since\n")  # untracked: git names the folder
    plan = checkpoints.plan_rollback(repo, target["id"])
    assert plan.capture is not None and plan.capture.source == "git"
    undo = checkpoints.prepare_undo(repo, plan)
    done = checkpoints.apply_plan(repo, plan, undo_checkpoint=undo["id"])
    assert (done["restored"], done["removed"]) == (["src/app.py"], ["notes/new.md"])
    assert (root / "src/app.py").read_text() == "one\n" and not (root / "notes").exists()
    checkpoints.rollback(repo, undo["id"])
    assert (root / "src/app.py").read_text() == "edited since\n"
    assert (root / "notes/new.md").read_text() == "a new folder since\n"


def test_after_a_flood_that_may_have_lost_events_the_watcher_vouches_for_nothing_before(
    project: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    _no_watchman(project)
    monkeypatch.setattr(journal, "LOSSY_BATCH", 50)  # the real threshold is 4,096 events
    root = project.root
    watch = _started(root)
    try:
        first_journal = watch.journal
        assert first_journal is not None
        checkpoints.create(project, journal=first_journal)
        for index in range(200):
            _write(root, f"flood/f{index}.txt", "x\n", age=0)
        deadline = time.time() + 10
        while watch.journal is first_journal and time.time() < deadline:
            time.sleep(0.05)
        assert watch.journal is not first_journal and not first_journal.alive
        made = checkpoints.create(project, journal=watch.journal)
        assert made["source"] == "scan"
        assert len([p for p in _files(project, made["id"]) if p.startswith("flood/")]) == 200
    finally:
        watch.stop()
