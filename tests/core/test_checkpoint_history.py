"""Finding and reading checkpoints: by name (the newest of that name), by id prefix, an error
that says what to do, a limited list newest first, labels, file contents, diffs between two
checkpoints and patches a user can apply."""

from __future__ import annotations

import os

import pytest

from memory_core import checkpoints, config
from memory_core.errors import NotFoundError, UsageError
from memory_core.store import Store
from tests.conftest import write_file as _write


@pytest.fixture
def project(store: Store) -> Store:
    config.set_value(store.root, "checkpoints.watchman", False)
    _write(store.root, "README.md", "# demo\n")
    _write(store.root, "src/app.py", "def main():\n    return 1\n")
    _write(store.root, "run.sh", "echo run\n", mode=0o644)
    return store


def test_a_name_finds_the_newest_checkpoint_of_that_name(project: Store) -> None:
    older = checkpoints.create(project, "stable", now=1_700_000_000.0)
    _write(project.root, "README.md", "# second\n")
    newer = checkpoints.create(project, "stable", now=1_700_000_100.0)
    assert checkpoints.get(project, "stable")["id"] == newer["id"]
    assert checkpoints.get(project, older["id"])["id"] == older["id"]


def test_an_unknown_checkpoint_says_where_to_look(project: Store) -> None:
    with pytest.raises(NotFoundError) as missing:
        checkpoints.get(project, "no-such-thing")
    assert missing.value.one_line() == (
        "no checkpoint 'no-such-thing' (see `engram checkpoint list`)"
    )
    # Two characters are too few to be read as an id prefix.
    made = checkpoints.create(project)
    with pytest.raises(NotFoundError):
        checkpoints.get(project, made["id"][:2])


def test_an_ambiguous_id_prefix_asks_for_more(project: Store) -> None:
    first = checkpoints.create(project)
    second = checkpoints.create(project)
    # Both ids start with "C-": give the three characters every id shares.
    assert first["id"][:2] == second["id"][:2] == "C-"
    with project.transaction() as db:
        db.execute("UPDATE checkpoints SET id = 'C-abc00001' WHERE id = ?", (first["id"],))
        db.execute("UPDATE checkpoints SET id = 'C-abc00002' WHERE id = ?", (second["id"],))
    with pytest.raises(UsageError) as ambiguous:
        checkpoints.get(project, "C-abc")
    assert ambiguous.value.one_line() == (
        "'C-abc' names more than one checkpoint (give more of the id)"
    )
    assert checkpoints.get(project, "C-abc00002")["id"] == "C-abc00002"
    # Three characters are enough when they name one checkpoint.
    with project.transaction() as db:
        db.execute("UPDATE checkpoints SET id = 'C-f0000001' WHERE id = 'C-abc00001'")
    assert checkpoints.get(project, "C-f")["id"] == "C-f0000001"
    # Wildcards of SQL's LIKE are plain characters in a prefix.
    with pytest.raises(NotFoundError):
        checkpoints.get(project, "C-a%")
    with pytest.raises(NotFoundError):
        checkpoints.get(project, "C-___")


def test_the_list_is_newest_first_and_honours_its_limit(project: Store) -> None:
    made = [checkpoints.create(project, now=1_700_000_000.0 + i)["id"] for i in range(3)]
    assert [c["id"] for c in checkpoints.list_checkpoints(project)] == made[::-1]
    assert [c["id"] for c in checkpoints.list_checkpoints(project, limit=2)] == made[:0:-1]


def test_an_unnamed_checkpoint_is_labelled_by_its_reason_and_time(project: Store) -> None:
    made = checkpoints.create(project, "  ", description="before the refactor", now=1_700_000_000.0)
    assert made["name"] is None
    assert made["label"] == "manual checkpoint 2023-11-14T22:13:20Z"
    assert made["created_at"] == "2023-11-14T22:13:20Z"
    assert made["description"] == "before the refactor"
    assert (made["files"], made["bytes"]) == (3, len("# demo\n") + 25 + len("echo run\n"))
    named = checkpoints.create(project, "  release  ")
    assert named["name"] == named["label"] == "release"


def test_file_content_reads_one_file_of_a_checkpoint(project: Store) -> None:
    made = checkpoints.create(project)
    _write(project.root, "src/app.py", "changed\n")
    assert checkpoints.file_content(project, made["id"], "src/app.py") == (
        b"def main():\n    return 1\n"
    )
    assert checkpoints.file_content(project, made["id"], "src") is None  # a folder
    assert checkpoints.file_content(project, made["id"], "src/missing.py") is None
    assert checkpoints.file_content(project, made["id"], "nowhere/app.py") is None


def test_the_manifest_lists_every_file_with_its_kind_mode_and_size(project: Store) -> None:
    (project.root / "link").symlink_to("src/app.py")
    made = checkpoints.create(project)
    listed = {
        i["path"]: (i["kind"], i["mode"], i["size"])
        for i in checkpoints.manifest(project, made["id"])
    }
    assert listed == {
        "README.md": ("file", 0o644, 7),
        "link": ("link", 0o777, len("src/app.py")),
        "run.sh": ("file", 0o644, 9),
        "src/app.py": ("file", 0o644, 25),
    }
    assert [i["path"] for i in checkpoints.manifest(project, made["id"])] == sorted(listed)


def test_a_diff_between_two_checkpoints_names_each_kind_of_change(project: Store) -> None:
    before = checkpoints.create(project)
    _write(project.root, "src/app.py", "def main():\n    return 2\n")
    os.chmod(project.root / "run.sh", 0o755)
    (project.root / "README.md").unlink()
    _write(project.root, "NEW.md", "new\n")
    after = checkpoints.create(project)
    changes = checkpoints.diff(project, before["id"], after["id"])
    assert changes == {
        "id": before["id"],
        "against": after["id"],
        "added": ["NEW.md"],
        "modified": ["src/app.py"],
        "deleted": ["README.md"],
        "mode_changed": ["run.sh"],
    }
    # Against the workspace, the same (nothing changed since `after`).
    now = checkpoints.diff(project, before["id"])
    assert now["against"] == "workspace"
    assert (now["added"], now["modified"], now["deleted"], now["mode_changed"]) == (
        ["NEW.md"],
        ["src/app.py"],
        ["README.md"],
        ["run.sh"],
    )


def test_a_patch_shows_added_and_deleted_files_against_dev_null(project: Store) -> None:
    made = checkpoints.create(project)
    (project.root / "README.md").unlink()
    _write(project.root, "notes.txt", "first line\nno newline at the end")
    patch = checkpoints.patch(project, made["id"])
    assert "--- /dev/null\n+++ b/notes.txt\n" in patch
    assert "+no newline at the end\n\\ No newline at end of file\n" in patch
    assert "--- a/README.md\n+++ /dev/null\n" in patch
    assert "-# demo\n" in patch
    assert "src/app.py" not in patch


def test_a_patch_has_the_context_asked_for(project: Store) -> None:
    _write(project.root, "long.txt", "".join(f"line {i}\n" for i in range(20)))
    made = checkpoints.create(project)
    _write(project.root, "long.txt", "".join(f"line {i}\n" for i in range(20)).replace("10", "X"))
    narrow = checkpoints.patch(project, made["id"], context=1)
    assert " line 9\n-line 10\n+line X\n line 11\n" in narrow
    assert " line 8\n" not in narrow
    assert " line 7\n" in checkpoints.patch(project, made["id"])


def test_a_touched_file_with_the_same_content_is_not_a_change(project: Store) -> None:
    (project.root / "link").symlink_to("src/app.py")
    made = checkpoints.create(project)
    os.utime(project.root / "README.md")  # saved again without a change
    os.utime(project.root / "link", follow_symlinks=False)
    changes = checkpoints.diff(project, made["id"])
    assert (changes["added"], changes["modified"], changes["deleted"]) == ([], [], [])
    assert checkpoints.patch(project, made["id"]) == ""


def test_a_file_now_ignored_shows_as_deleted_in_the_patch(project: Store) -> None:
    made = checkpoints.create(project)
    _write(project.root, ".gitignore", "README.md\n")
    changes = checkpoints.diff(project, made["id"])
    assert changes["deleted"] == ["README.md"] and changes["added"] == [".gitignore"]
    patch = checkpoints.patch(project, made["id"])
    assert "--- a/README.md\n+++ /dev/null\n@@ -1 +0,0 @@\n-# demo\n" in patch
