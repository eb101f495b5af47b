"""Checkpoints: capture, dedup, ignore rules, incremental capture, rollback safety and exactness."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest

from memory_core import checkpoints, config
from memory_core.checkpoints import storage as checkpoint_storage
from memory_core.checkpoints import trees as checkpoint_trees
from memory_core.errors import EngramError
from memory_core.store import Store
from tests.conftest import count_file_reads


def _write(
    root: Path, rel: str, data: bytes | str, mode: int | None = None, age: float = 60.0
) -> Path:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data.encode() if isinstance(data, str) else data)
    if mode is not None:
        os.chmod(path, mode)
    # Old enough that the stat cache trusts it (a just-written file is "racy").
    past = time.time() - age
    os.utime(path, (past, past))
    return path


def _tree_bytes(root: Path) -> dict[str, tuple[bytes, int]]:
    """Every file under root (outside .engram) with its content and mode."""
    found = {}
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = [d for d in dirnames if d != ".engram"]
        for name in filenames:
            path = Path(dirpath) / name
            found[path.relative_to(root).as_posix()] = (
                path.read_bytes(),
                path.stat().st_mode & 0o7777,
            )
    return found


def _stored_hashes(store: Store) -> set[str]:
    """Content hashes of every blob the store holds (packed or alone)."""
    return {bytes(row[0]).hex() for row in store.query("SELECT hash FROM checkpoint_objects")}


@pytest.fixture
def project(store: Store) -> Store:
    root = store.root
    _write(root, "README.md", "# demo\n")
    _write(root, "src/app.py", "def main():\n    return 1\n")
    _write(root, "src/util.py", "X = 1\n")
    _write(root, "bin/run.sh", "#!/bin/sh\necho run\n", mode=0o755)
    _write(root, "data/blob.bin", bytes(range(256)) * 40)
    return store


def test_rollback_restores_every_file_byte_exact_and_removes_new_files(project: Store) -> None:
    root = project.root
    before = _tree_bytes(root)
    checkpoint = checkpoints.create(project, "start")
    assert checkpoint["files"] == 5

    _write(root, "src/app.py", "def main():\n    return 2  # broken\n")
    os.unlink(root / "src" / "util.py")
    os.chmod(root / "bin" / "run.sh", 0o644)
    _write(root, "data/blob.bin", b"\x00overwritten")
    _write(root, "notes.txt", "created after")
    _write(root, "new/deep/module.py", "created after")

    plan = checkpoints.plan_rollback(project, checkpoint["id"])
    assert set(plan.removes) == {"notes.txt", "new/deep/module.py"}
    result = checkpoints.rollback(project, "start")
    assert result["done"] and result["failed"] == []
    assert set(result["removed"]) == {"notes.txt", "new/deep/module.py"}
    assert set(result["restored"]) == {"src/app.py", "src/util.py", "bin/run.sh", "data/blob.bin"}
    assert _tree_bytes(root) == before
    assert not (root / "new").exists()  # folders emptied by the rollback go too


def test_a_rollback_is_undone_through_its_pre_rollback_checkpoint(project: Store) -> None:
    root = project.root
    checkpoint = checkpoints.create(project)
    _write(root, "src/app.py", "edited\n")
    _write(root, "added.txt", "new file\n")
    edited = _tree_bytes(root)

    result = checkpoints.rollback(project, checkpoint["id"])
    undo = checkpoints.get(project, result["undo_checkpoint"])
    assert undo["reason"] == "pre-rollback"
    assert not (root / "added.txt").exists()

    checkpoints.rollback(project, undo["id"])
    assert _tree_bytes(root) == edited


def test_identical_content_is_stored_once_and_an_unchanged_checkpoint_adds_no_blobs(
    project: Store,
) -> None:
    _write(project.root, "copy1.txt", "same content\n" * 100)
    _write(project.root, "copy2.txt", "same content\n" * 100)
    checkpoints.create(project)
    blobs = checkpoints.space(project)["blobs"]
    assert blobs == 6  # 7 files, two of them identical

    second = checkpoints.create(project)
    assert second["added_bytes"] == 0 and second["changed"] == 0
    assert checkpoints.space(project)["blobs"] == blobs


def test_blobs_are_compressed(project: Store) -> None:
    _write(project.root, "big.txt", "a line that repeats\n" * 5000)
    checkpoints.create(project)
    space = checkpoints.space(project)
    assert space["stored_bytes"] < space["content_bytes"] / 5


def test_gitignore_rules_are_honoured_and_git_and_store_never_captured(project: Store) -> None:
    root = project.root
    _write(root, ".gitignore", "*.log\nbuild/\n!keep.log\n")
    _write(root, "debug.log", "noise")
    _write(root, "keep.log", "wanted")
    _write(root, "build/out.o", "binary")
    _write(root, "pkg/.gitignore", "generated.py\n")
    _write(root, "pkg/generated.py", "x")
    _write(root, "pkg/real.py", "y")
    _write(root, ".git/config", "[core]\n")
    checkpoint = checkpoints.create(project)
    paths = {item["path"] for item in checkpoints.manifest(project, checkpoint["id"])}
    assert {"keep.log", "pkg/real.py", ".gitignore", "pkg/.gitignore"} <= paths
    assert not paths & {"debug.log", "build/out.o", "pkg/generated.py", ".git/config"}
    assert not any(p.startswith(".engram/") for p in paths)

    # Ignored files are not "created after the checkpoint": a rollback leaves them alone.
    _write(root, "later.log", "ignored noise")
    result = checkpoints.rollback(project, checkpoint["id"])
    assert "later.log" not in result["removed"] and (root / "later.log").exists()


def test_watch_exclude_setting_is_honoured(project: Store) -> None:
    _write(project.root, "secrets/token.txt", "x")
    settings = config.load(project.root, overrides={"watch.exclude": ["secrets/"]})
    checkpoint = checkpoints.create(project, settings=settings)
    assert all(
        not i["path"].startswith("secrets/")
        for i in checkpoints.manifest(project, checkpoint["id"])
    )


def test_files_over_the_size_cap_are_left_out_and_never_removed(project: Store) -> None:
    settings = config.load(project.root, overrides={"checkpoints.max_file_bytes": 1000})
    checkpoint = checkpoints.create(project, settings=settings)
    assert checkpoint["skipped"] == ["data/blob.bin"]
    # Rolled back under the default cap, where the file is no longer over it: the checkpoint
    # left it out on purpose, so it is still not a file "created after" the checkpoint.
    result = checkpoints.rollback(project, checkpoint["id"])
    assert "data/blob.bin" not in result["removed"]
    assert (project.root / "data" / "blob.bin").exists()


def test_unchanged_files_are_not_read_again_thanks_to_the_stat_cache(
    project: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    checkpoints.create(project)
    _write(project.root, "src/app.py", "changed\n")
    reads = count_file_reads(monkeypatch)
    second = checkpoints.create(project)
    assert reads == ["src/app.py"]
    assert second["changed"] == 1


def test_a_journal_makes_a_checkpoint_look_only_at_changed_paths(project: Store) -> None:
    root = project.root
    journal = checkpoints.ChangeJournal(started_at=time.time() - 3600)
    base = checkpoints.create(project)
    _write(root, "src/app.py", "journal saw this\n")
    _write(root, "src/new.py", "and this\n")
    os.unlink(root / "README.md")
    journal.mark(["src/app.py", "src/new.py", "README.md"])
    second = checkpoints.create(project, journal=journal)
    assert second["mode"] == "incremental" and second["changed"] == 3
    files = {i["path"]: i for i in checkpoints.manifest(project, second["id"])}
    assert set(files) == {"src/app.py", "src/util.py", "src/new.py", "bin/run.sh", "data/blob.bin"}
    assert files["bin/run.sh"]["mode"] == 0o755
    # The incremental result equals what a full scan finds (no watchman, not a git repository).
    config.set_value(project.root, "checkpoints.watchman", False)
    full = checkpoints.create(project)
    assert full["mode"] == "scan"
    assert checkpoints.manifest(project, full["id"]) == checkpoints.manifest(project, second["id"])
    assert checkpoints.diff(project, base["id"], second["id"])["deleted"] == ["README.md"]


def test_a_journal_that_started_after_the_latest_checkpoint_is_not_trusted(project: Store) -> None:
    checkpoints.create(project)
    _write(project.root, "src/util.py", "changed before the watcher started\n")
    journal = checkpoints.ChangeJournal(started_at=time.time() + 1)
    config.set_value(project.root, "checkpoints.watchman", False)
    second = checkpoints.create(project, journal=journal)
    assert second["mode"] == "scan" and second["changed"] == 1


def test_symbolic_links_are_captured_as_links_and_restored(project: Store) -> None:
    root = project.root
    (root / "current").symlink_to("src/app.py")
    checkpoint = checkpoints.create(project)
    os.unlink(root / "current")
    _write(root, "current", "a regular file now")
    checkpoints.rollback(project, checkpoint["id"])
    assert os.readlink(root / "current") == "src/app.py"


def test_a_symlink_leading_outside_the_root_is_refused_with_nothing_written(
    project: Store, tmp_path: Path
) -> None:
    root = project.root
    checkpoint = checkpoints.create(project)
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "app.py").write_text("outside content\n")
    # src/ is replaced by a link to a folder outside the workspace.
    for name in os.listdir(root / "src"):
        os.unlink(root / "src" / name)
    os.rmdir(root / "src")
    (root / "src").symlink_to(outside)
    _write(root, "README.md", "edited\n")
    snapshot = _tree_bytes(root)

    with pytest.raises(EngramError, match="symbolic link"):
        checkpoints.rollback(project, checkpoint["id"])
    assert (outside / "app.py").read_text() == "outside content\n"
    assert sorted(os.listdir(outside)) == ["app.py"]
    assert _tree_bytes(root) == snapshot
    assert (
        checkpoints.list_checkpoints(project)[0]["id"] == checkpoint["id"]
    )  # no undo checkpoint either


def _forge(store: Store, checkpoint_id: str, rows_by_dir: dict[str, list[list[object]]]) -> None:
    """Point a checkpoint at hand-made trees (as an attacker or a bad disk might)."""
    writer = checkpoint_storage.Writer(store)

    def build(prefix: str) -> str:
        rows = []
        for row in rows_by_dir[prefix]:
            if row[1] == "d":
                child = f"{prefix}/{row[0]}" if prefix else str(row[0])
                row = [row[0], "d", 0, build(child), 0, 1]
            rows.append(row)
        data = json.dumps(rows, separators=(",", ":")).encode()
        digest = checkpoint_trees.sha(data)
        writer.trees[digest] = checkpoint_trees.compress(data)
        return digest

    root_hash = build("")
    content = writer.blob(b"owned\n")
    for prefix in rows_by_dir:
        for row in rows_by_dir[prefix]:
            if row[3] == "BLOB":
                row[3] = content
    root_hash = build("")
    with store.transaction() as db:
        writer.flush(db)
        db.execute("UPDATE checkpoints SET root_tree = ? WHERE id = ?", (root_hash, checkpoint_id))


@pytest.mark.parametrize(
    "rows_by_dir",
    [
        {"": [["..", "d", 0, "", 0, 1]], "..": [["x", "f", 0o644, "BLOB", 6, 1]]},
        {"": [[".git", "d", 0, "", 0, 1]], ".git": [["config", "f", 0o644, "BLOB", 6, 1]]},
        {"": [["../x", "f", 0o644, "BLOB", 6, 1]]},
    ],
    ids=["dotdot-folder", "git-config", "slash-in-name"],
)
def test_a_manifest_naming_a_path_outside_or_in_git_is_refused_with_nothing_written(
    project: Store, tmp_path: Path, rows_by_dir: dict[str, list[list[object]]]
) -> None:
    root = project.root
    checkpoint = checkpoints.create(project)
    _forge(project, checkpoint["id"], rows_by_dir)
    _write(root, "src/app.py", "edited after\n")
    snapshot = _tree_bytes(root)
    with pytest.raises(checkpoints.CorruptCheckpointError, match="unsafe path"):
        checkpoints.rollback(project, checkpoint["id"])
    assert _tree_bytes(root) == snapshot
    assert not (root.parent / "x").exists() and not (root / ".git").exists()


def test_a_corrupt_manifest_or_blob_is_refused_with_nothing_written(project: Store) -> None:
    root = project.root
    checkpoint = checkpoints.create(project)
    _write(root, "src/app.py", "edited after\n")
    snapshot = _tree_bytes(root)
    row = project.query_one("SELECT root_tree FROM checkpoints WHERE id = ?", (checkpoint["id"],))
    with project.transaction() as db:
        db.execute("UPDATE checkpoint_trees SET data = ? WHERE hash = ?", (b"garbage", row[0]))  # type: ignore[index]
    with pytest.raises(checkpoints.CorruptCheckpointError, match="corrupt"):
        checkpoints.rollback(project, checkpoint["id"])
    assert _tree_bytes(root) == snapshot


def test_a_corrupt_blob_is_refused_with_nothing_written(project: Store) -> None:
    root = project.root
    checkpoint = checkpoints.create(project)
    _write(root, "src/app.py", "edited after\n")
    _write(root, "src/util.py", "edited too\n")
    snapshot = _tree_bytes(root)
    app = next(
        i for i in checkpoints.manifest(project, checkpoint["id"]) if i["path"] == "src/util.py"
    )
    with project.transaction() as db:
        # Small blobs live in packs: damage the pack that holds this one.
        db.execute(
            "UPDATE checkpoint_packs SET data = ? WHERE id = "
            "(SELECT pack FROM checkpoint_objects WHERE hash = ?)",
            (checkpoint_trees.compress(b"tampered" * 40), bytes.fromhex(app["hash"])),
        )
    with pytest.raises(checkpoints.CorruptCheckpointError):
        checkpoints.rollback(project, checkpoint["id"])
    assert _tree_bytes(root) == snapshot


def test_retention_removes_old_checkpoints_and_collects_their_blobs(project: Store) -> None:
    settings = config.load(project.root, overrides={"checkpoints.max_count": 2})
    first = checkpoints.create(project, settings=settings)
    for index in range(3):
        _write(project.root, "src/app.py", f"version {index}\n" * 50)
        checkpoints.create(project, settings=settings)
    remaining = [c["id"] for c in checkpoints.list_checkpoints(project)]
    assert len(remaining) == 2 and first["id"] not in remaining
    # Only the content the two remaining checkpoints reference is still stored.
    referenced = {i["hash"] for cid in remaining for i in checkpoints.manifest(project, cid)}
    stored = _stored_hashes(project)
    assert stored == referenced
    # The running total the store cap is checked against stays exact through GC.
    assert checkpoints.stored_bytes(project) == checkpoints.space(project)["stored_bytes"]


def test_the_store_cap_drops_the_oldest_checkpoints(project: Store) -> None:
    made = []
    for index in range(3):
        # Each checkpoint alone holds its own 20 kB that do not compress.
        path = _write(project.root, f"random{index}.bin", os.urandom(20_000))
        made.append(checkpoints.create(project)["id"])
        path.unlink()
    cap = checkpoints.space(project)["stored_bytes"] - 5_000
    settings = config.load(project.root, overrides={"checkpoints.store_cap_bytes": cap})
    removed = checkpoints.enforce_retention(project, settings, keep=made[2])
    assert removed == [made[0]]
    assert [c["id"] for c in checkpoints.list_checkpoints(project)] == [made[2], made[1]]
    assert checkpoints.space(project)["stored_bytes"] <= cap


def test_diff_lists_added_modified_deleted_and_patch_shows_text(project: Store) -> None:
    checkpoint = checkpoints.create(project)
    _write(project.root, "src/app.py", "def main():\n    return 2\n")
    _write(project.root, "extra.py", "x = 1\n")
    os.unlink(project.root / "README.md")
    changes = checkpoints.diff(project, checkpoint["id"])
    assert (changes["added"], changes["modified"], changes["deleted"]) == (
        ["extra.py"],
        ["src/app.py"],
        ["README.md"],
    )
    patch = checkpoints.patch(project, checkpoint["id"])
    assert "-    return 1\n+    return 2\n" in patch


def test_checkpoints_are_found_by_name_and_prefix_and_unknown_ones_are_clear_errors(
    project: Store,
) -> None:
    made = checkpoints.create(project, "before-refactor", description="safe point")
    assert checkpoints.get(project, "before-refactor")["id"] == made["id"]
    assert checkpoints.get(project, made["id"][:6])["id"] == made["id"]
    listed = checkpoints.list_checkpoints(project)[0]
    assert listed["label"] == "before-refactor" and listed["created_at"].endswith("Z")
    with pytest.raises(EngramError, match="no checkpoint"):
        checkpoints.get(project, "nope")


def test_undo_is_exact_when_the_target_is_not_the_latest_checkpoint(project: Store) -> None:
    root = project.root
    first = checkpoints.create(project)
    _write(root, "src/app.py", "second state\n")
    _write(root, "second.txt", "2")
    checkpoints.create(project)
    _write(root, "src/app.py", "third state\n")
    os.unlink(root / "src" / "util.py")
    os.chmod(root / "bin" / "run.sh", 0o700)
    _write(root, "third.txt", "3")
    third = _tree_bytes(root)

    result = checkpoints.rollback(project, first["id"])
    assert set(result["removed"]) == {"second.txt", "third.txt"}
    undo = checkpoints.get(project, result["undo_checkpoint"])
    assert undo["files"] == 6
    checkpoints.rollback(project, undo["id"])
    assert _tree_bytes(root) == third


def test_blobs_of_checkpoints_removed_by_general_retention_are_collected(project: Store) -> None:
    from memory_core import limits

    first = checkpoints.create(project)
    _write(project.root, "src/app.py", "second version\n" * 100)
    checkpoints.create(project)
    settings = config.load(project.root, overrides={"checkpoints.max_count": 1})
    limits.enforce(project, settings)  # deletes the oldest row, knowing nothing of blobs
    assert [c["id"] for c in checkpoints.list_checkpoints(project)] != [first["id"]]
    _write(project.root, "src/app.py", "third version\n")
    checkpoints.create(project)  # default retention removes nothing: only the flag triggers GC
    referenced = {
        i["hash"]
        for c in checkpoints.list_checkpoints(project)
        for i in checkpoints.manifest(project, c["id"])
    }
    assert _stored_hashes(project) == referenced


def test_every_n_turns_makes_a_checkpoint_only_when_due(project: Store) -> None:
    settings = config.load(project.root, overrides={"checkpoints.every_n_turns": 3})
    assert checkpoints.every_n_turns(project, 2, settings=settings) is None
    made = checkpoints.every_n_turns(project, 3, settings=settings, session_id="agent-1")
    assert made is not None and made["reason"] == "turns" and made["session_id"] == "agent-1"
    off = config.load(project.root, overrides={"checkpoints.every_n_turns": 0})
    assert checkpoints.every_n_turns(project, 6, settings=off) is None


def test_a_file_replaced_by_a_folder_is_restored_but_ignored_files_are_never_deleted(
    project: Store,
) -> None:
    root = project.root
    checkpoint = checkpoints.create(project)
    os.unlink(root / "README.md")
    _write(root, "README.md/new.txt", "created after")
    checkpoints.rollback(project, checkpoint["id"])
    assert (root / "README.md").read_text() == "# demo\n"

    _write(root, ".gitignore", "*.cache\n")
    base = checkpoints.create(project)
    os.unlink(root / "src" / "util.py")
    _write(root, "src/util.py/kept.cache", "ignored, not ours")
    result = checkpoints.rollback(project, base["id"])
    assert not result["done"] and result["failed"][0]["path"] == "src/util.py"
    assert result["failed"][0]["error"] == (
        "src/util.py is now a folder that still holds files the checkpoint does not know"
    )
    assert (root / "src" / "util.py" / "kept.cache").read_text() == "ignored, not ours"
