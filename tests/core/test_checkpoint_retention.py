"""Old checkpoints go by age and count (never the one just made), garbage collection keeps
exactly what a remaining checkpoint uses, the space figures add up, and the stat cache a full
scan trusts never hides a change (a file rewritten within the same clock tick, a file replaced
by another of the same size and time, a changed mode).

Watchman is turned off: the checkpoints here are full scans through the stat cache.
"""

from __future__ import annotations

import os

import pytest

from memory_core import checkpoints, config
from memory_core.store import Store
from tests.conftest import count_file_reads
from tests.conftest import write_file as _write

DAY = 86400.0
NOW = 1_800_000_000.0


def _lenient(store: Store) -> config.Settings:
    """While the checkpoints of a test are made: nothing is old enough to go yet."""
    return config.load(store.root, overrides={"checkpoints.max_age_days": 10_000})


@pytest.fixture
def project(store: Store) -> Store:
    config.set_value(store.root, "checkpoints.watchman", False)
    _write(store.root, "README.md", "# demo\n")
    _write(store.root, "src/app.py", "def main():\n    return 1\n")
    return store


def _ids(store: Store) -> list[str]:
    return [c["id"] for c in checkpoints.list_checkpoints(store)]


def test_checkpoints_older_than_the_age_limit_go_and_younger_ones_stay(project: Store) -> None:
    ages = [40, 20, 5, 1]  # days before NOW
    made = []
    for index, age in enumerate(ages):
        _write(project.root, "src/app.py", f"version {index}\n")
        made.append(
            checkpoints.create(project, settings=_lenient(project), now=NOW - age * DAY)["id"]
        )
    settings = config.load(
        project.root, overrides={"checkpoints.max_age_days": 10, "checkpoints.max_count": 100}
    )
    removed = checkpoints.enforce_retention(project, settings, now=NOW)
    assert sorted(removed) == sorted(made[:2])
    assert _ids(project) == [made[3], made[2]]
    # The remaining ones still restore their own content.
    checkpoints.rollback(project, made[2], undo=False)
    assert (project.root / "src" / "app.py").read_text() == "version 2\n"


def test_the_checkpoint_to_keep_stays_whatever_its_age_or_rank(project: Store) -> None:
    old = checkpoints.create(project, settings=_lenient(project), now=NOW - 100 * DAY)["id"]
    newer = [
        checkpoints.create(project, settings=_lenient(project), now=NOW - i)["id"]
        for i in (3, 2, 1)
    ]
    settings = config.load(
        project.root, overrides={"checkpoints.max_age_days": 30, "checkpoints.max_count": 2}
    )
    removed = checkpoints.enforce_retention(project, settings, now=NOW, keep=old)
    assert removed == [newer[0]]
    assert set(_ids(project)) == {old, newer[1], newer[2]}


def test_a_new_checkpoint_applies_the_count_limit_to_the_oldest(project: Store) -> None:
    settings = config.load(project.root, overrides={"checkpoints.max_count": 3})
    made = []
    for index in range(5):
        _write(project.root, "src/app.py", f"version {index}\n")
        result = checkpoints.create(project, settings=settings, now=NOW + index)
        made.append(result["id"])
    assert result["removed_by_retention"] == [made[1]]
    assert _ids(project) == made[:1:-1]


def test_garbage_collection_keeps_what_a_remaining_checkpoint_uses(project: Store) -> None:
    shared = os.urandom(40_000)
    _write(project.root, "shared.bin", shared)
    _write(project.root, "only-first.bin", os.urandom(40_000))
    first = checkpoints.create(project)
    (project.root / "only-first.bin").unlink()
    second = checkpoints.create(project)
    before = checkpoints.space(project)
    freed = checkpoints.delete(project, first["id"])["freed_bytes"]
    after = checkpoints.space(project)
    assert after["checkpoints"] == 1
    assert after["blobs"] == before["blobs"] - 1  # only only-first.bin's content went
    assert 40_000 <= freed <= before["stored_bytes"] - after["stored_bytes"]
    assert after["stored_bytes"] == checkpoints.stored_bytes(project)
    assert after["content_bytes"] == 40_000 + len("# demo\n") + len("def main():\n    return 1\n")
    (project.root / "shared.bin").unlink()
    result = checkpoints.rollback(project, second["id"], undo=False)
    assert result["done"] and (project.root / "shared.bin").read_bytes() == shared


def test_collected_content_is_read_again_when_the_file_is_captured_next(project: Store) -> None:
    first = checkpoints.create(project)
    checkpoints.delete(project, first["id"])  # collects every blob
    assert checkpoints.space(project) == {
        "checkpoints": 0,
        "blobs": 0,
        "stored_bytes": 0,
        "content_bytes": 0,
    }
    second = checkpoints.create(project)
    assert second["changed"] == 2 and second["added_bytes"] > 0
    assert checkpoints.file_content(project, second["id"], "README.md") == b"# demo\n"


def test_unchanged_files_are_not_read_again_and_changed_ones_are(
    project: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    checkpoints.create(project)
    reads = count_file_reads(monkeypatch)
    same = checkpoints.create(project)
    assert (same["mode"], same["changed"], reads) == ("scan", 0, [])
    os.chmod(project.root / "README.md", 0o600)
    chmodded = checkpoints.create(project)
    assert reads == ["README.md"] and chmodded["changed"] == 0
    modes = {i["path"]: i["mode"] for i in checkpoints.manifest(project, chmodded["id"])}
    assert modes["README.md"] == 0o600


def test_a_file_rewritten_within_one_clock_tick_is_captured_by_a_full_scan(
    project: Store,
) -> None:
    path = project.root / "src" / "racy.txt"
    path.write_text("AAAA")
    tick = path.stat().st_mtime_ns  # written just now: inside the racy window
    checkpoints.create(project)
    with open(path, "r+b") as handle:
        handle.write(b"BBBB")
    os.utime(path, ns=(tick, tick))
    second = checkpoints.create(project)
    assert second["mode"] == "scan" and second["changed"] == 1
    assert checkpoints.file_content(project, second["id"], "src/racy.txt") == b"BBBB"


def test_a_file_replaced_by_another_of_the_same_size_and_time_is_read_again(
    project: Store,
) -> None:
    checkpoints.create(project)
    app = project.root / "src" / "app.py"
    stamp = app.stat().st_mtime_ns
    replacement = project.root / "src" / "app.py.new"
    replacement.write_text("def main():\n    return 7\n")
    os.utime(replacement, ns=(stamp, stamp))
    os.replace(replacement, app)  # a new inode, same size and modification time
    second = checkpoints.create(project)
    assert second["changed"] == 1
    assert checkpoints.file_content(project, second["id"], "src/app.py") == (
        b"def main():\n    return 7\n"
    )


def test_the_age_limit_is_counted_in_days_to_the_second(project: Store) -> None:
    limit = 10 * DAY
    just_over = checkpoints.create(project, settings=_lenient(project), now=NOW - limit - 5)["id"]
    _write(project.root, "README.md", "# second\n")
    just_under = checkpoints.create(project, settings=_lenient(project), now=NOW - limit + 5)["id"]
    settings = config.load(project.root, overrides={"checkpoints.max_age_days": 10})
    assert checkpoints.enforce_retention(project, settings, now=NOW) == [just_over]
    assert _ids(project) == [just_under]
