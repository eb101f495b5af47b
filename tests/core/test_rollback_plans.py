"""What a rollback plans and does, exactly: which files it restores (and whether they existed),
which it removes, how many it leaves alone, what an editor applies itself, what failed and why;
a damaged checkpoint is refused with a message saying nothing was written, and nothing is.

Watchman is turned off, so every capture is a full scan or trusts only the journal a test gives.
"""

from __future__ import annotations

import os
import shutil
import threading
import time
from pathlib import Path

import pytest

from memory_core import checkpoints, config
from memory_core.checkpoints.storage import Writer, load_tree
from memory_core.checkpoints.trees import compress, sha
from memory_core.store import Store
from tests.conftest import write_file as _write


def _files(root: Path) -> dict[str, bytes]:
    found = {}
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = [d for d in dirnames if d != ".engram"]
        for name in filenames:
            path = Path(dirpath) / name
            found[path.relative_to(root).as_posix()] = path.read_bytes()
    return found


@pytest.fixture
def project(store: Store) -> Store:
    config.set_value(store.root, "checkpoints.watchman", False)
    _write(store.root, "README.md", "# demo\n")
    _write(store.root, "src/app.py", "def main():\n    return 1\n")
    _write(store.root, "src/lib/util.py", "X = 1\n")
    _write(store.root, "run.sh", "echo run\n", mode=0o755)
    return store


def test_a_plan_says_which_restored_files_still_exist(project: Store) -> None:
    checkpoint = checkpoints.create(project)
    _write(project.root, "src/app.py", "edited\n")
    (project.root / "src" / "lib" / "util.py").unlink()
    plan = checkpoints.plan_rollback(project, checkpoint["id"])
    assert {w.path: w.existed for w in plan.writes} == {
        "src/app.py": True,
        "src/lib/util.py": False,
    }
    assert plan.unchanged == 2 and plan.removes == []
    restored = {w.path: w.content for w in plan.writes}
    assert restored["src/lib/util.py"] == b"X = 1\n"


def test_a_file_replaced_by_a_folder_counts_as_existing_and_is_restored(project: Store) -> None:
    checkpoint = checkpoints.create(project)
    (project.root / "README.md").unlink()
    _write(project.root, "README.md/new.md", "a folder now\n")
    plan = checkpoints.plan_rollback(project, checkpoint["id"])
    assert [(w.path, w.existed) for w in plan.writes] == [("README.md", True)]
    assert plan.removes == ["README.md/new.md"]
    result = checkpoints.apply_plan(project, plan)
    assert result["done"] and (project.root / "README.md").read_text() == "# demo\n"


def test_only_the_mode_of_a_file_is_restored_when_only_its_mode_changed(project: Store) -> None:
    checkpoint = checkpoints.create(project)
    os.chmod(project.root / "run.sh", 0o644)
    result = checkpoints.rollback(project, checkpoint["id"])
    assert result["restored"] == ["run.sh"] and result["unchanged"] == 3
    assert (project.root / "run.sh").stat().st_mode & 0o777 == 0o755


def test_a_link_and_a_file_swapped_are_both_restored(project: Store) -> None:
    (project.root / "current").symlink_to("src/app.py")
    checkpoint = checkpoints.create(project)
    (project.root / "current").unlink()
    _write(project.root, "current", "a file now\n")
    (project.root / "README.md").unlink()
    (project.root / "README.md").symlink_to("/etc/passwd")
    result = checkpoints.rollback(project, checkpoint["id"])
    assert sorted(result["restored"]) == ["README.md", "current"]
    assert os.readlink(project.root / "current") == "src/app.py"
    assert not (project.root / "README.md").is_symlink()
    assert (project.root / "README.md").read_text() == "# demo\n"


def test_a_restored_file_replaces_a_link_without_writing_through_it(
    project: Store, tmp_path: Path
) -> None:
    checkpoint = checkpoints.create(project)
    outside = tmp_path / "outside.txt"
    outside.write_text("not the workspace's\n")
    (project.root / "src" / "app.py").unlink()
    (project.root / "src" / "app.py").symlink_to(outside)
    checkpoints.rollback(project, checkpoint["id"])
    assert outside.read_text() == "not the workspace's\n"
    assert not (project.root / "src" / "app.py").is_symlink()


def test_files_an_editor_applies_are_skipped_and_the_rest_still_done(project: Store) -> None:
    checkpoint = checkpoints.create(project)
    for name in ("a.txt", "b.txt", "c.txt"):
        _write(project.root, name, "created after\n")
    _write(project.root, "README.md", "unsaved in the editor\n")
    _write(project.root, "src/app.py", "edited\n")
    plan = checkpoints.plan_rollback(project, checkpoint["id"])
    result = checkpoints.apply_plan(project, plan, skip=["a.txt", "README.md", "elsewhere.txt"])
    assert result["via_editor"] == ["README.md", "a.txt"]
    assert result["removed"] == ["b.txt", "c.txt"]
    assert result["restored"] == ["src/app.py"]
    assert (project.root / "a.txt").exists() and not (project.root / "c.txt").exists()
    assert (project.root / "README.md").read_text() == "unsaved in the editor\n"
    assert (project.root / "src" / "app.py").read_text() == "def main():\n    return 1\n"


def test_a_folder_turned_into_a_link_after_planning_fails_only_its_files(
    project: Store, tmp_path: Path
) -> None:
    checkpoint = checkpoints.create(project)
    _write(project.root, "src/lib/later.py", "created after\n")
    _write(project.root, "src/app.py", "edited\n")
    plan = checkpoints.plan_rollback(project, checkpoint["id"])
    # Between the plan and its writes, src/lib becomes a link to a folder outside.
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "later.py").write_text("outside, never touched\n")
    shutil.rmtree(project.root / "src" / "lib")
    (project.root / "src" / "lib").symlink_to(outside)
    result = checkpoints.apply_plan(project, plan)
    assert result["done"] is False
    assert [f["path"] for f in result["failed"]] == ["src/lib/later.py"]
    assert "src/lib is a symbolic link" in result["failed"][0]["error"]
    assert result["restored"] == ["src/app.py"] and result["removed"] == []
    assert (outside / "later.py").read_text() == "outside, never touched\n"


def test_removing_a_file_removes_the_folders_it_leaves_empty_and_no_others(
    project: Store,
) -> None:
    checkpoint = checkpoints.create(project)
    _write(project.root, "new/deep/er/one.txt", "created after\n")
    _write(project.root, "src/lib/two.txt", "created after\n")
    result = checkpoints.rollback(project, checkpoint["id"])
    assert result["removed"] == ["new/deep/er/one.txt", "src/lib/two.txt"]
    assert not (project.root / "new").exists()
    assert (project.root / "src" / "lib" / "util.py").exists()
    assert project.root.is_dir()


def test_the_counts_of_a_rollback_are_exact(project: Store) -> None:
    _write(project.root, "docs/a.md", "a\n")
    _write(project.root, "docs/b.md", "b\n")
    checkpoint = checkpoints.create(project)
    assert checkpoint["files"] == 6
    _write(project.root, "docs/a.md", "changed\n")
    plan = checkpoints.plan_rollback(project, checkpoint["id"])
    assert plan.as_dict()["unchanged"] == 5
    result = checkpoints.apply_plan(project, plan, undo_checkpoint="C-undo")
    assert (result["unchanged"], result["undo_checkpoint"]) == (5, "C-undo")
    assert result["checkpoint"] == checkpoint["id"]


def _damage_src_listing(store: Store, checkpoint_id: str, data: bytes | None) -> None:
    row = store.query_one("SELECT root_tree FROM checkpoints WHERE id = ?", (checkpoint_id,))
    assert row is not None
    src = load_tree(store, row[0]).entries["src"].hash
    with store.transaction() as db:
        if data is None:
            db.execute("DELETE FROM checkpoint_trees WHERE hash = ?", (src,))
        else:
            db.execute("UPDATE checkpoint_trees SET data = ? WHERE hash = ?", (data, src))


@pytest.mark.parametrize(
    ("damage", "message"),
    [
        (None, "the listing of src/ is missing"),
        (b"not zstd", "the listing of src/ cannot be read"),
        ("other", "the listing of src/ does not match its hash"),
        ('[["x","q",420,"00",1,1]]', "is corrupt at src/"),
        ('[["x","f","420","00",1,1]]', "is corrupt at src/"),
        ('[["x","f",420,7,1,1]]', "is corrupt at src/"),
        ('[["x","f",420]]', "is corrupt at src/"),
        ('{"x": 1}', "is corrupt at src/"),
        ('[["..","f",420,"00",1,1]]', "unsafe path src/'..'"),
        ('[[".engram","f",420,"00",1,1]]', "unsafe path src/'.engram'"),
        ('[["a\\u0000b","f",420,"00",1,1]]', "unsafe path"),
        ('[["","f",420,"00",1,1]]', "unsafe path"),
        ('[[".","f",420,"00",1,1]]', "unsafe path"),
        ('[[7,"f",420,"00",1,1]]', "unsafe path"),
        ('[["ok","f",420,"00",1,1],["a/b","f",420,"00",1,1]]', "unsafe path src/'a/b'"),
        ('[["ok","f",420,"00",1,1],["x","f",true,"00",1,1]]', "is corrupt at src/"),
        ('["abcdef"]', "is corrupt at src/"),
    ],
)
def test_a_damaged_listing_is_refused_with_nothing_written(
    project: Store, damage: bytes | str | None, message: str
) -> None:
    checkpoint = checkpoints.create(project)
    _write(project.root, "src/app.py", "edited after\n")
    _write(project.root, "later.txt", "created after\n")
    if damage == "other":
        data: bytes | None = compress(b'[["x","f",420,"00",1,1]]')
    elif isinstance(damage, str):
        # A listing stored under the hash of its own (bad) content, as a forged store has.
        raw = damage.encode()
        row = project.query_one(
            "SELECT root_tree FROM checkpoints WHERE id = ?", (checkpoint["id"],)
        )
        assert row is not None
        root = load_tree(project, row[0])
        root.entries["src"] = root.entries["src"]._replace(hash=sha(raw))
        writer = Writer(project)
        writer.trees[sha(raw)] = compress(raw)
        new_root = writer.tree(root)
        with project.transaction() as db:
            writer.flush(db)
            db.execute(
                "UPDATE checkpoints SET root_tree = ? WHERE id = ?", (new_root, checkpoint["id"])
            )
        data = None
    else:
        data = damage
    if not isinstance(damage, str) or damage == "other":
        _damage_src_listing(project, checkpoint["id"], data)
    snapshot = _files(project.root)
    count = len(checkpoints.list_checkpoints(project))
    with pytest.raises(checkpoints.CorruptCheckpointError) as refused:
        checkpoints.rollback(project, checkpoint["id"])
    assert message in refused.value.message
    assert refused.value.hint == "it was refused; nothing was written"
    assert _files(project.root) == snapshot
    assert len(checkpoints.list_checkpoints(project)) == count  # no undo checkpoint either


def test_a_missing_blob_is_refused_naming_the_file(project: Store) -> None:
    checkpoint = checkpoints.create(project)
    util = next(
        i for i in checkpoints.manifest(project, checkpoint["id"]) if i["path"] == "src/lib/util.py"
    )
    with project.transaction() as db:
        db.execute("DELETE FROM checkpoint_objects WHERE hash = ?", (bytes.fromhex(util["hash"]),))
    _write(project.root, "src/lib/util.py", "edited\n")
    snapshot = _files(project.root)
    with pytest.raises(checkpoints.CorruptCheckpointError) as refused:
        checkpoints.rollback(project, checkpoint["id"])
    assert refused.value.one_line() == (
        "the checkpoint's content of src/lib/util.py is missing from the store "
        "(it was refused; nothing was written)"
    )
    assert _files(project.root) == snapshot
    with pytest.raises(checkpoints.CorruptCheckpointError, match="is missing from the store"):
        checkpoints.read_blob(project, "not-hex")


def test_a_checkpoint_taken_and_rolled_back_on_another_thread_is_exact(project: Store) -> None:
    # The language server takes checkpoints on worker threads: each has its own compressor.
    outcome: dict[str, object] = {}

    def work() -> None:
        try:
            made = checkpoints.create(project)
            _write(project.root, "src/app.py", "edited\n")
            outcome["result"] = checkpoints.rollback(project, made["id"])
        except BaseException as exc:  # reported to the test below
            outcome["error"] = exc

    worker = threading.Thread(target=work)
    worker.start()
    worker.join()
    assert "error" not in outcome, outcome.get("error")
    assert (project.root / "src" / "app.py").read_text() == "def main():\n    return 1\n"


def test_a_running_watchers_journal_vouches_for_the_pre_rollback_checkpoint(
    project: Store,
) -> None:
    journal = checkpoints.ChangeJournal(started_at=time.time() - 3600)
    checkpoint = checkpoints.create(project, journal=journal)
    _write(project.root, "src/app.py", "edited\n")
    journal.mark(["src/app.py"])
    plan = checkpoints.plan_rollback(project, checkpoint["id"], journal=journal)
    undo = checkpoints.prepare_undo(project, plan)
    assert undo["source"] == "watcher" and undo["reason"] == "pre-rollback"
    assert undo["description"] == f"before rolling back to {checkpoint['id']}"
    checkpoints.apply_plan(project, plan, undo_checkpoint=undo["id"])
    assert checkpoints.file_content(project, undo["id"], "src/app.py") == b"edited\n"


def test_a_stopped_watchers_journal_is_not_trusted_for_the_pre_rollback_checkpoint(
    project: Store,
) -> None:
    journal = checkpoints.ChangeJournal(started_at=time.time() - 3600)
    checkpoint = checkpoints.create(project, journal=journal)
    _write(project.root, "src/app.py", "edited, never reported\n")
    journal.stop()
    plan = checkpoints.plan_rollback(project, checkpoint["id"], journal=journal)
    assert [w.path for w in plan.writes] == ["src/app.py"]
    undo = checkpoints.prepare_undo(project, plan)
    assert undo["source"] == "scan"
    assert checkpoints.file_content(project, undo["id"], "src/app.py") == (
        b"edited, never reported\n"
    )


def test_a_file_with_a_backslash_in_its_name_is_captured_and_restored(project: Store) -> None:
    # A legal name on Linux and macOS (only Windows reads it as a separator); once it refused
    # every rollback of the workspace as an "unsafe path".
    _write(project.root, "src/odd\\name.txt", "kept\n")
    checkpoint = checkpoints.create(project)
    assert "src/odd\\name.txt" in {
        i["path"] for i in checkpoints.manifest(project, checkpoint["id"])
    }
    (project.root / "src" / "odd\\name.txt").unlink()
    _write(project.root, "README.md", "edited\n")
    result = checkpoints.rollback(project, checkpoint["id"])
    assert result["done"] and sorted(result["restored"]) == ["README.md", "src/odd\\name.txt"]
    assert (project.root / "src" / "odd\\name.txt").read_text() == "kept\n"


def test_an_editor_can_look_up_each_of_its_buffers_in_the_plan(project: Store) -> None:
    checkpoint = checkpoints.create(project)
    plan = checkpoints.plan_rollback(project, checkpoint["id"])
    assert plan.target is not None
    # Several open buffers in the same folders, asked one after the other.
    for _ in range(2):
        app = plan.target.get("src/app.py")
        util = plan.target.get("src/lib/util.py")
        assert app is not None and checkpoints.read_blob(project, app.hash) == (
            b"def main():\n    return 1\n"
        )
        assert util is not None and util.size == len("X = 1\n")
    assert plan.target.get("src/lib") is None  # a folder, not a file
    assert plan.target.get("src/missing.py") is None
    assert plan.target.get("README.md/inside") is None
    assert plan.target.get("README.md/inside/deeper.py") is None


def test_reading_a_checkpoint_with_a_missing_listing_names_the_folder(project: Store) -> None:
    checkpoint = checkpoints.create(project)
    _damage_src_listing(project, checkpoint["id"], None)
    for read in (
        lambda: checkpoints.manifest(project, checkpoint["id"]),
        lambda: checkpoints.diff(project, checkpoint["id"]),
        lambda: checkpoints.file_content(project, checkpoint["id"], "src/lib/util.py"),
    ):
        with pytest.raises(checkpoints.CorruptCheckpointError) as refused:
            read()
        assert "the listing of src/ is missing" in refused.value.message


def test_a_rollback_at_a_given_time_stamps_its_undo_checkpoint_and_event(project: Store) -> None:
    from memory_core import events

    checkpoint = checkpoints.create(project, now=1_700_000_000.0)
    _write(project.root, "src/app.py", "edited\n")
    result = checkpoints.rollback(project, checkpoint["id"], now=1_700_000_500.0)
    undo = checkpoints.get(project, result["undo_checkpoint"])
    assert undo["created_at"] == "2023-11-14T22:21:40Z"
    assert undo["label"] == "pre-rollback checkpoint 2023-11-14T22:21:40Z"
    (event,) = events.recent(project, kind="checkpoint.rollback")
    assert event.ts == 1_700_000_500.0
    assert event.data["checkpoint"] == checkpoint["id"]
    assert event.data["restored"] == ["src/app.py"] and event.data["done"] is True
    assert "unchanged" not in event.data
    # Without undo, no pre-rollback checkpoint is made.
    _write(project.root, "src/app.py", "edited again\n")
    plain = checkpoints.rollback(project, checkpoint["id"], undo=False)
    assert plain["undo_checkpoint"] is None
    assert len(checkpoints.list_checkpoints(project)) == 2


def test_a_restored_file_whose_folder_is_now_a_file_replaces_that_file(project: Store) -> None:
    checkpoint = checkpoints.create(project)
    shutil.rmtree(project.root / "src" / "lib")
    _write(project.root, "src/lib", "a file where the folder was\n")
    plan = checkpoints.plan_rollback(project, checkpoint["id"])
    assert plan.removes == ["src/lib"]
    # An editor applies the removal of src/lib itself (it has it open) and has not yet done
    # so when the restored file is written: the file in the way goes.
    result = checkpoints.apply_plan(project, plan, skip=["src/lib"])
    assert result["done"] and result["restored"] == ["src/lib/util.py"]
    assert (project.root / "src" / "lib" / "util.py").read_text() == "X = 1\n"


@pytest.mark.parametrize("rel", ["../escape.txt", "src/../../escape.txt", ".git/config", ""])
def test_a_write_or_removal_outside_the_workspace_is_refused(
    project: Store, tmp_path: Path, rel: str
) -> None:
    with pytest.raises(checkpoints.CorruptCheckpointError) as refused:
        checkpoints.write_file(
            project.root, checkpoints.FileWrite(rel, b"owned\n", 0o644, "file", existed=False)
        )
    assert refused.value.one_line() == (
        f"the checkpoint names an unsafe path {rel!r} (it was refused; nothing was written)"
    )
    with pytest.raises(checkpoints.CorruptCheckpointError):
        checkpoints.remove_file(project.root, rel)
    assert not (project.root.parent / "escape.txt").exists()
    assert not (project.root / ".git").exists()


def test_a_damaged_blob_is_refused_naming_the_file(project: Store) -> None:
    checkpoint = checkpoints.create(project)
    util = next(
        i for i in checkpoints.manifest(project, checkpoint["id"]) if i["path"] == "src/lib/util.py"
    )
    with project.transaction() as db:
        db.execute(
            "UPDATE checkpoint_packs SET data = ? WHERE id = "
            "(SELECT pack FROM checkpoint_objects WHERE hash = ?)",
            (compress(b"tampered" * 40), bytes.fromhex(util["hash"])),
        )
    from memory_core.checkpoints.storage import forget_packs

    forget_packs()  # the pack may be kept decompressed from the capture
    _write(project.root, "src/lib/util.py", "edited\n")
    with pytest.raises(checkpoints.CorruptCheckpointError) as refused:
        checkpoints.rollback(project, checkpoint["id"])
    assert refused.value.one_line() == (
        "the checkpoint's content of src/lib/util.py is corrupt "
        "(it was refused; nothing was written)"
    )
    assert (project.root / "src" / "lib" / "util.py").read_text() == "edited\n"


def test_a_second_undo_checkpoint_of_a_plan_records_its_session(project: Store) -> None:
    checkpoint = checkpoints.create(project)
    _write(project.root, "src/app.py", "edited\n")
    plan = checkpoints.plan_rollback(project, checkpoint["id"])
    first = checkpoints.prepare_undo(project, plan, session_id="S-1")
    # The plan's capture is used once; a second undo checkpoint captures the workspace again.
    second = checkpoints.prepare_undo(project, plan, session_id="S-2")
    assert (first["session_id"], second["session_id"]) == ("S-1", "S-2")
    assert second["reason"] == "pre-rollback"
    assert checkpoints.file_content(project, second["id"], "src/app.py") == b"edited\n"
