"""Checkpoints keep what a user relies on, through the public API only (create, rollback, list,
delete, manifest, enforce_retention): files left out for their size survive a rollback, the
oldest checkpoints go first, garbage collection never leaves a later checkpoint pointing at
content it collected, a file changed twice within a clock tick is captured, and a changed
`.gitignore` is looked at everywhere.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from memory_core import checkpoints, config
from memory_core.store import Store
from tests.conftest import write_file as _write


@pytest.fixture
def project(store: Store) -> Store:
    _write(store.root, "README.md", "# demo\n")
    _write(store.root, "src/app.py", "def main():\n    return 1\n")
    _write(store.root, "data/big.bin", bytes(range(256)) * 40)  # 10,240 bytes
    return store


def test_a_file_left_out_for_its_size_survives_a_rollback_under_other_settings(
    project: Store,
) -> None:
    capped = config.load(project.root, overrides={"checkpoints.max_file_bytes": 1000})
    checkpoint = checkpoints.create(project, settings=capped)
    assert checkpoint["skipped"] == ["data/big.bin"]
    _write(project.root, "src/app.py", "def main():\n    return 2\n")
    # The rollback runs with the default cap (10 MB): the big file is no longer "over the cap"
    # now, but the checkpoint never held it, so it is not a file "created after" it either.
    result = checkpoints.rollback(project, checkpoint["id"])
    assert result["done"] is True
    assert "data/big.bin" not in result["removed"]
    assert (project.root / "data" / "big.bin").read_bytes() == bytes(range(256)) * 40
    assert result["restored"] == ["src/app.py"]
    assert (project.root / "src" / "app.py").read_text() == "def main():\n    return 1\n"


def test_a_file_created_after_the_checkpoint_is_removed_but_one_now_over_the_cap_is_kept(
    project: Store,
) -> None:
    checkpoint = checkpoints.create(project)
    _write(project.root, "notes.txt", "written after the checkpoint")
    _write(project.root, "dump.bin", os.urandom(5000))
    capped = config.load(project.root, overrides={"checkpoints.max_file_bytes": 4000})
    result = checkpoints.rollback(project, checkpoint["id"], settings=capped)
    assert result["removed"] == ["notes.txt"]
    assert not (project.root / "notes.txt").exists()
    assert (project.root / "dump.bin").exists()


def test_the_store_cap_removes_the_oldest_checkpoints_first(project: Store) -> None:
    made = []
    for index in range(3):
        # Each checkpoint alone holds 20 kB that do not compress.
        path = _write(project.root, f"random{index}.bin", os.urandom(20_000))
        made.append(checkpoints.create(project, f"round-{index}")["id"])
        path.unlink()
    total = checkpoints.stored_bytes(project)
    # Room for everything but one checkpoint's own 20 kB: exactly one must go, the oldest.
    settings = config.load(project.root, overrides={"checkpoints.store_cap_bytes": total - 5_000})
    removed = checkpoints.enforce_retention(project, settings, keep=made[2])
    assert removed == [made[0]]
    assert [c["id"] for c in checkpoints.list_checkpoints(project)] == [made[2], made[1]]
    assert checkpoints.stored_bytes(project) <= total - 5_000
    # The survivors still roll back byte for byte.
    result = checkpoints.rollback(project, made[1], undo=False)
    assert result["done"] and (project.root / "random1.bin").stat().st_size == 20_000


def test_the_store_cap_never_removes_the_checkpoint_just_made(project: Store) -> None:
    _write(project.root, "random.bin", os.urandom(20_000))
    only = checkpoints.create(project)["id"]
    settings = config.load(project.root, overrides={"checkpoints.store_cap_bytes": 1000})
    assert checkpoints.enforce_retention(project, settings, keep=only) == []
    assert [c["id"] for c in checkpoints.list_checkpoints(project)] == [only]


def test_the_count_limit_keeps_the_newest_checkpoints(project: Store) -> None:
    settings = config.load(project.root, overrides={"checkpoints.max_count": 2})
    made = []
    for index in range(4):
        _write(project.root, "src/app.py", f"version {index}\n")
        made.append(checkpoints.create(project, settings=settings)["id"])
    assert [c["id"] for c in checkpoints.list_checkpoints(project)] == [made[3], made[2]]


def test_a_checkpoint_made_after_garbage_collection_still_restores_unchanged_files(
    project: Store,
) -> None:
    first = checkpoints.create(project)
    # Deleting the only checkpoint collects its content, including README.md's blob, which
    # the stat cache remembered.
    checkpoints.delete(project, first["id"])
    # README.md is unchanged on disk: if the stat cache still trusted it, the new checkpoint
    # would point at content that no longer exists.
    second = checkpoints.create(project)
    _write(project.root, "README.md", "# overwritten\n")
    result = checkpoints.rollback(project, second["id"])
    assert result["done"] is True, result["failed"]
    assert (project.root / "README.md").read_text() == "# demo\n"


def test_a_file_changed_twice_within_one_clock_tick_is_captured_both_times(
    project: Store,
) -> None:
    path = project.root / "src" / "racy.txt"
    path.write_text("AAAA")
    tick = path.stat().st_mtime_ns  # written just now: inside the racy window
    checkpoints.create(project)
    # Same size, same inode, same modification time: only the content tells them apart.
    with open(path, "r+b") as handle:
        handle.write(b"BBBB")
    os.utime(path, ns=(tick, tick))
    assert path.stat().st_mtime_ns == tick
    second = checkpoints.create(project)
    path.write_text("CCCC")
    checkpoints.rollback(project, second["id"])
    assert path.read_text() == "BBBB"


def test_a_changed_gitignore_makes_the_next_checkpoint_look_everywhere(project: Store) -> None:
    _write(project.root, ".gitignore", "build/\n")
    _write(project.root, "build/out.txt", "generated\n")
    first = checkpoints.create(project)
    assert "build/out.txt" not in {i["path"] for i in checkpoints.manifest(project, first["id"])}
    _write(project.root, ".gitignore", "*.log\n")
    # A watcher reports only the .gitignore itself as changed.
    second = checkpoints.create(project, changed=[".gitignore"])
    assert second["mode"] == "scan"
    paths = {i["path"] for i in checkpoints.manifest(project, second["id"])}
    assert "build/out.txt" in paths
    # And a rollback to it brings the newly tracked file back.
    (project.root / "build" / "out.txt").unlink()
    checkpoints.rollback(project, second["id"])
    assert (project.root / "build" / "out.txt").read_text() == "generated\n"


def test_an_incremental_checkpoint_sees_exactly_the_listed_changes(project: Store) -> None:
    base = checkpoints.create(project)
    _write(project.root, "src/app.py", "def main():\n    return 3\n")
    _write(project.root, "src/new.py", "NEW = 1\n")
    (project.root / "README.md").unlink()
    second = checkpoints.create(project, changed=["src/app.py", "src/new.py", "README.md"])
    assert second["mode"] == "incremental"
    assert second["changed"] == 3
    paths = {i["path"] for i in checkpoints.manifest(project, second["id"])}
    assert paths == {"src/app.py", "src/new.py", "data/big.bin"}
    # Rolling back to the base restores the deleted file and removes the new one.
    result = checkpoints.rollback(project, base["id"])
    assert sorted(result["restored"]) == ["README.md", "src/app.py"]
    assert result["removed"] == ["src/new.py"]


def test_a_symlink_whose_target_is_not_utf8_is_restored_byte_for_byte(project: Store) -> None:
    link = os.path.join(os.fsencode(project.root), b"latest")
    os.symlink(b"builds/caf\xe9-v1", link)
    checkpoint = checkpoints.create(project)
    os.unlink(link)
    os.symlink(b"builds/other", link)
    result = checkpoints.rollback(project, checkpoint["id"])
    assert result["done"] is True
    assert os.readlink(link) == b"builds/caf\xe9-v1"


def test_deleting_a_checkpoint_says_what_it_freed(project: Store) -> None:
    _write(project.root, "unique.bin", os.urandom(30_000))
    first = checkpoints.create(project)
    (project.root / "unique.bin").unlink()
    second = checkpoints.create(project)
    before = checkpoints.stored_bytes(project)
    result = checkpoints.delete(project, first["id"])
    assert result["id"] == first["id"] and result["deleted"] is True
    assert result["freed_bytes"] >= 30_000
    assert checkpoints.stored_bytes(project) == before - result["freed_bytes"]
    assert [c["id"] for c in checkpoints.list_checkpoints(project)] == [second["id"]]


def test_an_over_cap_file_reported_by_a_watcher_is_left_out_and_survives_a_rollback(
    project: Store,
) -> None:
    capped = config.load(project.root, overrides={"checkpoints.max_file_bytes": 4000})
    checkpoints.create(project, settings=capped)
    _write(project.root, "dump.bin", os.urandom(5000))
    second = checkpoints.create(project, settings=capped, changed=["dump.bin"])
    assert second["mode"] == "incremental"
    assert second["skipped"] == ["data/big.bin", "dump.bin"]
    assert "dump.bin" not in {i["path"] for i in checkpoints.manifest(project, second["id"])}
    result = checkpoints.rollback(project, second["id"])
    assert "dump.bin" not in result["removed"] and (project.root / "dump.bin").exists()


def test_a_gitignore_that_is_not_utf8_still_ignores_what_it_names(project: Store) -> None:
    (project.root / ".gitignore").write_bytes(b"# caf\xe9\nbuild/\n")
    _write(project.root, "build/out.o", "object")
    checkpoint = checkpoints.create(project)
    paths = {i["path"] for i in checkpoints.manifest(project, checkpoint["id"])}
    assert "build/out.o" not in paths and ".gitignore" in paths


def test_a_new_ignored_folder_reported_by_a_watcher_is_not_captured(project: Store) -> None:
    _write(project.root, ".gitignore", "out/\n")
    checkpoints.create(project)
    _write(project.root, "out/x.txt", "generated")
    second = checkpoints.create(project, changed=["out", "out/x.txt"])
    assert "out/x.txt" not in {i["path"] for i in checkpoints.manifest(project, second["id"])}


def test_the_patch_names_binary_files_instead_of_printing_them(project: Store) -> None:
    checkpoint = checkpoints.create(project)
    _write(project.root, "data/big.bin", bytes(range(255, -1, -1)) * 40)
    patch = checkpoints.patch(project, checkpoint["id"])
    assert "Binary file data/big.bin differs\n" in patch


def test_a_rollback_through_a_symlinked_folder_is_refused_and_writes_nothing(
    project: Store, tmp_path: Path
) -> None:
    import shutil

    from memory_core.errors import EngramError

    checkpoint = checkpoints.create(project)
    outside = tmp_path / "outside"
    outside.mkdir()
    shutil.rmtree(project.root / "src")
    os.symlink(outside, project.root / "src")
    with pytest.raises(EngramError) as refused:
        checkpoints.rollback(project, checkpoint["id"])
    assert "src is a symbolic link to" in refused.value.one_line()
    assert "outside the workspace" in refused.value.one_line()
    assert "nothing was written" in refused.value.one_line()
    assert list(outside.iterdir()) == []


def test_a_rollback_plan_and_result_say_what_changes(project: Store) -> None:
    checkpoint = checkpoints.create(project)
    _write(project.root, "src/app.py", "def main():\n    return 9\n")
    _write(project.root, "extra.txt", "new")
    plan = checkpoints.plan_rollback(project, checkpoint["id"])
    assert plan.as_dict() == {
        "checkpoint": checkpoint["id"],
        "restore": ["src/app.py"],
        "remove": ["extra.txt"],
        "unchanged": 2,
    }
    result = checkpoints.rollback(project, checkpoint["id"])
    assert result["checkpoint"] == checkpoint["id"]
    assert (result["restored"], result["removed"], result["unchanged"]) == (
        ["src/app.py"],
        ["extra.txt"],
        2,
    )
    assert result["undo_checkpoint"] is not None


def test_checkpoints_and_rollbacks_reach_the_event_log(project: Store) -> None:
    from memory_core import events

    checkpoint = checkpoints.create(project)
    checkpoints.rollback(project, checkpoint["id"], undo=False)
    kinds = [e.kind for e in events.recent(project)]
    assert "checkpoint.created" in kinds and "checkpoint.rollback" in kinds


def test_an_automatic_checkpoint_every_n_turns_says_which_turn(project: Store) -> None:
    settings = config.load(project.root, overrides={"checkpoints.every_n_turns": 2})
    assert checkpoints.every_n_turns(project, 1, settings=settings) is None
    made = checkpoints.every_n_turns(project, 2, settings=settings, session_id="S-1")
    assert made is not None
    assert (made["reason"], made["description"]) == ("turns", "automatic: turn 2")
    assert checkpoints.every_n_turns(project, 3, settings=settings) is None
    off = config.load(project.root, overrides={"checkpoints.every_n_turns": 0})
    assert checkpoints.every_n_turns(project, 4, settings=off) is None


def test_a_rollback_rewrites_files_in_place_but_never_through_another_name(
    project: Store, tmp_path_factory: pytest.TempPathFactory
) -> None:
    checkpoint = checkpoints.create(project)
    src = project.root / "src"
    app = src / "app.py"
    # Changed after the checkpoint: app.py's content and mode; README.md gains a second name
    # outside the workspace (a hard link), which a rollback must not write through.
    _write(project.root, "src/app.py", "def main():\n    return 2\n")
    os.chmod(app, 0o600)
    outside = tmp_path_factory.mktemp("elsewhere") / "notes.md"
    _write(project.root, "README.md", "# changed\n")
    os.link(project.root / "README.md", outside)
    inode, folder_mtime = app.stat().st_ino, src.stat().st_mtime_ns
    result = checkpoints.rollback(project, checkpoint["id"], undo=False)
    assert result["done"] is True
    assert app.read_text() == "def main():\n    return 1\n"
    assert app.stat().st_mode & 0o777 == checkpoint_mode(project, checkpoint["id"], "src/app.py")
    # In place: same file, and the folder unchanged (git's untracked cache stays valid).
    assert (app.stat().st_ino, src.stat().st_mtime_ns) == (inode, folder_mtime)
    assert (project.root / "README.md").read_text() == "# demo\n"
    assert outside.read_text() == "# changed\n"


def test_a_rollback_replaces_a_fifo_or_a_read_only_file_where_the_checkpoint_had_a_file(
    project: Store,
) -> None:
    checkpoint = checkpoints.create(project)
    app = project.root / "src" / "app.py"
    readme = project.root / "README.md"
    app.unlink()
    os.mkfifo(app)  # opening it for writing would wait for a reader
    _write(project.root, "README.md", "# read-only now\n")
    os.chmod(readme, 0o444)
    result = checkpoints.rollback(project, checkpoint["id"], undo=False)
    assert result["done"] is True, result["failed"]
    assert app.is_file() and app.read_text() == "def main():\n    return 1\n"
    assert readme.read_text() == "# demo\n"


def checkpoint_mode(store: Store, checkpoint_id: str, rel: str) -> int:
    return next(i["mode"] for i in checkpoints.manifest(store, checkpoint_id) if i["path"] == rel)
