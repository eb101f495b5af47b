"""Checkpoints and rollbacks on hostile filesystems: a folder that became a file (and back, and
links), files that cannot be read, names that are not UTF-8, edits that put the mtime back,
files rewritten while read, hard-linked twins. Each is checked on every change source a
checkpoint may trust (a scan, the server's watcher, watchman when installed, git), through the
public API, with real files."""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from memory_core import checkpoints, config, journal
from memory_core.store import Store
from tests.conftest import git
from tests.conftest import write_file as _write

SOURCES = ["scan", "watcher", "watchman", "git"]


class Source:
    """One way a checkpoint learns what changed, set up so that it is the one that vouches."""

    def __init__(self, store: Store, name: str) -> None:
        self.store, self.name = store, name
        self.watch: journal.Watcher | None = None
        if name == "watchman" and shutil.which("watchman") is None:
            pytest.skip("watchman is not installed")
        config.set_value(store.root, "checkpoints.watchman", name == "watchman")
        if name == "git":
            git(store.root, "init", "-q")
            git(store.root, "add", "-A")
            git(store.root, "commit", "-qm", "start")
        if name == "watcher":
            self.watch = journal.Watcher(store.root).start()
            assert self.watch.ready.wait(10) and self.watch.journal is not None

    @property
    def journal(self) -> journal.ChangeJournal | None:
        return self.watch.journal if self.watch is not None else None

    def checkpoint(self) -> dict[str, Any]:
        # (A watcher that stopped vouches for nothing: the checkpoint then looks by other means.)
        if self.journal is not None:
            self.journal.sync()
        return checkpoints.create(self.store, journal=self.journal)

    def rollback(self, ref: str) -> dict[str, Any]:
        plan = checkpoints.plan_rollback(self.store, ref, journal=self.journal)
        undo = checkpoints.prepare_undo(self.store, plan)
        return checkpoints.apply_plan(self.store, plan, undo_checkpoint=undo["id"])

    def close(self) -> None:
        if self.watch is not None:
            self.watch.stop()


@pytest.fixture(params=SOURCES)
def source(request: pytest.FixtureRequest, store: Store) -> Iterator[Source]:
    _write(store.root, "keep.txt", "kept\n")
    made = Source(store, request.param)
    yield made
    made.close()


def _files(store: Store, checkpoint_id: str) -> dict[str, tuple[str, bytes]]:
    return {
        item["path"]: (item["kind"], checkpoints.read_blob(store, item["hash"]))
        for item in checkpoints.manifest(store, checkpoint_id)
    }


def _state(root: Path) -> dict[str, tuple[str, bytes]]:
    """What is on disk: path -> (kind, content or link target), `.engram`/`.git` left out."""
    found: dict[str, tuple[str, bytes]] = {}
    for folder, dirs, names in os.walk(root):
        dirs[:] = [d for d in dirs if d not in (".engram", ".git")]
        for name in names + [d for d in dirs if os.path.islink(os.path.join(folder, d))]:
            path = os.path.join(folder, name)
            rel = os.path.relpath(path, root)
            if os.path.islink(path):
                found[rel] = ("link", os.fsencode(os.readlink(path)))
            else:
                with open(path, "rb") as handle:
                    found[rel] = ("file", handle.read())
    return found


def _swap_then_roll_back_and_undo(source: Source, before: Any, after: Any) -> None:
    """`before` builds the state checkpointed, `after` changes it; the checkpoint after the
    change holds it, a rollback restores `before`, and undoing that brings `after` back."""
    root = source.store.root
    before(root)
    first = source.checkpoint()
    expected_first = _state(root)
    after(root)
    expected_after = _state(root)
    second = source.checkpoint()
    assert {
        path: (kind, data) for path, (kind, data) in _files(source.store, second["id"]).items()
    } == expected_after, f"the checkpoint after the change ({second['source']}) missed it"
    result = source.rollback(first["id"])
    assert result["done"], result["failed"]
    assert _state(root) == expected_first
    undone = source.rollback(result["undo_checkpoint"])
    assert undone["done"], undone["failed"]
    assert _state(root) == expected_after


def _folder_d(root: Path) -> None:
    _write(root, "d/inner.txt", "inside the folder\n")
    _write(root, "d/deeper/more.txt", "deeper\n")


def _file_d(root: Path) -> None:
    if (root / "d").is_dir():
        shutil.rmtree(root / "d")
    elif (root / "d").exists() or (root / "d").is_symlink():
        (root / "d").unlink()
    _write(root, "d", "a file now\n")


def test_a_file_that_replaced_a_folder_survives_rollback_and_undo(source: Source) -> None:
    _swap_then_roll_back_and_undo(source, _folder_d, _file_d)


def test_a_folder_that_replaced_a_file_survives_rollback_and_undo(source: Source) -> None:
    _swap_then_roll_back_and_undo(source, _file_d, _folder_d_after)


def _folder_d_after(root: Path) -> None:
    (root / "d").unlink()
    _folder_d(root)


def test_names_in_any_bytes_are_captured_and_restored(source: Source) -> None:
    root = os.fsencode(source.store.root)
    latin1, broken = root + b"/caf\xe9.txt", root + b"/dir\xff\xfe/x\x80.bin"

    def before(_: Path) -> None:
        with open(latin1, "wb") as handle:
            handle.write(b"named in latin-1\n")
        os.makedirs(os.path.dirname(broken))
        with open(broken, "wb") as handle:
            handle.write(b"\x00\x01 in a folder named by no encoding\n")

    def after(_: Path) -> None:
        os.unlink(latin1)
        with open(broken, "wb") as handle:
            handle.write(b"changed\n")
        with open(root + b"/new\xc3(.txt", "wb") as handle:
            handle.write(b"created after\n")

    _swap_then_roll_back_and_undo(source, before, after)
