"""Editors' recovery, lock, swap and backup files are a person's unsaved work or another
program's lock: checkpoints never hold them and a rollback never removes or overwrites them,
whatever `.gitignore` says (journal.EDITOR_FILE_PATTERNS, `watch.editor_files`).
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from memory_core import checkpoints, config, journal
from memory_core.store import Store
from tests.conftest import write_file as _write

# What each editor leaves beside app/billing.py while a person types without saving.
EDITOR_FILES = {
    "app/#billing.py#": "def total():  # Emacs auto-save: the unsaved text\n",
    "app/.billing.py.swp": "b0VIM 9.0 swap",
    "app/.billing.py.swo": "b0VIM 9.0 second swap",
    "app/billing.py~": "def total():  # the backup\n",
    "app/4913": "",
    "app/billing.py___jb_tmp___": "JetBrains safe write",
    "app/.billing.py.kate-swp": "Kate swap",
    "app/billing.py.vsctmp": "VS Code atomic write",
    "app/.~lock.report.odt#": "LibreOffice lock",
}
EMACS_LOCK = "app/.#billing.py"


def _editor_files(root: Path) -> dict[str, str]:
    found = {rel: (root / rel).read_text() for rel in EDITOR_FILES if (root / rel).exists()}
    lock = root / EMACS_LOCK
    if lock.is_symlink():
        found[EMACS_LOCK] = os.readlink(lock)
    return found


@pytest.fixture
def project(store: Store) -> Store:
    _write(store.root, "app/billing.py", "def total():\n    return 1\n")
    # A person who un-ignores swap files in git (or a .gitignore that says nothing of them).
    _write(store.root, ".gitignore", "!*.swp\n!*~\n")
    return store


def _type_without_saving(root: Path, marker: str) -> dict[str, str]:
    for rel, text in EDITOR_FILES.items():
        _write(root, rel, text + marker)
    lock = root / EMACS_LOCK
    if lock.is_symlink():
        lock.unlink()
    lock.symlink_to(f"root@host.{marker or 1}:1700000000")  # dangling, as Emacs makes it
    return _editor_files(root)


def test_a_checkpoint_holds_no_editor_file_and_a_rollback_keeps_them(project: Store) -> None:
    root = project.root
    _type_without_saving(root, "")
    checkpoint = checkpoints.create(project)
    for rel in [*EDITOR_FILES, EMACS_LOCK]:
        assert checkpoints.file_content(project, checkpoint["id"], rel) is None, rel
    assert checkpoints.file_content(project, checkpoint["id"], "app/billing.py") is not None

    # The person goes on typing (the editor rewrites its files); the agent breaks billing.py.
    live = _type_without_saving(root, " and more")
    _write(root, "app/billing.py", "def total():\n    return 2\n")
    _write(root, "app/stray.py", "print('made by the agent')\n")

    result = checkpoints.rollback(project, checkpoint["id"])

    assert result["done"] is True
    assert result["restored"] == ["app/billing.py"]
    assert result["removed"] == ["app/stray.py"]
    assert _editor_files(root) == live  # not removed, not rolled back to the older text


def test_editor_files_in_a_checkpoint_made_before_engram_knew_them_are_left_alone(
    project: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A checkpoint from an older engram may hold a swap file: the rollback neither writes the
    old one over the live one nor removes a new one."""
    root = project.root
    _type_without_saving(root, " old")
    with monkeypatch.context() as patched:
        patched.setattr(journal, "EDITOR_FILE_PATTERNS", ())
        old = checkpoints.create(project)
    assert checkpoints.file_content(project, old["id"], "app/.billing.py.swp") is not None

    live = _type_without_saving(root, " live")
    (root / "app" / "billing.py~").unlink()  # gone since: not brought back either
    del live["app/billing.py~"]

    plan = checkpoints.plan_rollback(project, old["id"])
    touched = {w.path for w in plan.writes} | set(plan.removes)
    assert not touched & {*EDITOR_FILES, EMACS_LOCK}
    checkpoints.rollback(project, old["id"])
    assert _editor_files(root) == live


def test_more_editor_files_can_be_named_in_the_settings(project: Store) -> None:
    root = project.root
    _write(root, "app/billing.py.mytmp", "my editor's temporary file")
    settings = config.load(root, overrides={"watch.editor_files": ["*.mytmp"]})
    checkpoint = checkpoints.create(project, settings=settings)
    assert checkpoints.file_content(project, checkpoint["id"], "app/billing.py.mytmp") is None
    _write(root, "app/billing.py.mytmp", "rewritten")
    result = checkpoints.rollback(project, checkpoint["id"], settings=settings)
    assert "app/billing.py.mytmp" not in result["removed"]
    assert (root / "app" / "billing.py.mytmp").read_text() == "rewritten"

    # Without the setting it is an ordinary file again: the changed rules make the next
    # checkpoint look at every folder, so it is captured although nothing changed on disk.
    plain = checkpoints.create(project)
    assert plain["source"] == "scan"
    assert checkpoints.file_content(project, plain["id"], "app/billing.py.mytmp") == b"rewritten"


def test_ordinary_names_close_to_editor_files_are_still_captured(project: Store) -> None:
    root = project.root
    ordinary = ("app/config.swp.py", "app/notes#1.md", "app/#1.md", "app/lock.py", "app/4913.py")
    for rel in ordinary:
        _write(root, rel, "an ordinary file\n")
    checkpoint = checkpoints.create(project)
    for rel in ordinary:
        assert checkpoints.file_content(project, checkpoint["id"], rel) == b"an ordinary file\n"
