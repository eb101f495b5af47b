"""Taking a checkpoint: what is recorded with it (name and description without secrets, the
session, the event), which source vouched for the interval since the previous one (git's
status in a repository, a journal), and when none may (the ignore settings changed).

Watchman is turned off, so the source is the one each test sets up.
"""

from __future__ import annotations

import shutil
import time

import pytest

from memory_core import checkpoints, config, events
from memory_core.errors import UsageError
from memory_core.store import Store
from tests.conftest import git
from tests.conftest import write_file as _write

SECRET = "ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"


def _paths(store: Store, checkpoint: dict[str, object]) -> set[str]:
    return {item["path"] for item in checkpoints.manifest(store, str(checkpoint["id"]))}


@pytest.fixture
def project(store: Store) -> Store:
    config.set_value(store.root, "checkpoints.watchman", False)
    _write(store.root, "README.md", "# demo\n")
    _write(store.root, "src/app.py", "def main():\n    return 1\n")
    return store


def test_a_checkpoint_records_its_session_and_an_event_without_secrets(project: Store) -> None:
    made = checkpoints.create(
        project,
        f" deploy {SECRET} ",
        description=f"token {SECRET} in use",
        session_id="S-42",
        now=1_700_000_000.0,
    )
    assert SECRET not in str(made["name"]) and str(made["name"]).startswith("deploy ")
    assert SECRET not in str(made["description"])
    assert str(made["description"]).startswith("token ")
    assert made["session_id"] == "S-42" and made["reason"] == "manual"
    assert made["created_at"] == "2023-11-14T22:13:20Z"
    (created,) = events.recent(project, kind="checkpoint.created")
    assert created.session_id == "S-42" and created.ts == 1_700_000_000.0
    assert created.data == {"id": made["id"], "reason": "manual", "files": 2, "changed": 2}
    stored = project.query_one("SELECT name, description FROM checkpoints")
    assert stored is not None and SECRET not in f"{stored[0]} {stored[1]}"


def test_an_unknown_reason_is_refused(project: Store) -> None:
    with pytest.raises(UsageError) as refused:
        checkpoints.create(project, reason="whim")
    assert "manual, burst, turns, pre-rollback, auto" in refused.value.one_line()
    assert checkpoints.list_checkpoints(project) == []


def test_git_status_vouches_for_the_interval_in_a_repository(project: Store) -> None:
    git(project.root, "init", "-q")
    git(project.root, "add", "-A")
    git(project.root, "commit", "-qm", "start")
    first = checkpoints.create(project)
    assert first["mode"] == "scan"
    # Edited now (git trusts a same-size file whose time is older than its index).
    _write(project.root, "src/app.py", "def main():\n    return 2\n", age=0)
    _write(project.root, "notes.txt", "untracked\n")
    second = checkpoints.create(project)
    assert (second["mode"], second["source"]) == ("incremental", "git")
    assert second["changed"] == 2
    assert _paths(project, second) == {"README.md", "src/app.py", "notes.txt"}
    assert checkpoints.file_content(project, second["id"], "src/app.py") == (
        b"def main():\n    return 2\n"
    )
    # A file committed meanwhile, then changed back, is still seen.
    git(project.root, "add", "-A")
    git(project.root, "commit", "-qm", "second")
    (project.root / "notes.txt").unlink()
    third = checkpoints.create(project)
    assert third["source"] == "git" and _paths(project, third) == {"README.md", "src/app.py"}


def test_a_journal_vouches_only_after_a_checkpoint_it_covered(project: Store) -> None:
    journal = checkpoints.ChangeJournal(started_at=time.time() - 3600)
    checkpoints.create(project, journal=journal)
    _write(project.root, "README.md", "# changed\n")
    journal.mark(["README.md"])
    second = checkpoints.create(project, journal=journal)
    assert (second["mode"], second["source"], second["changed"]) == ("incremental", "watcher", 1)
    journal.stop()
    _write(project.root, "src/app.py", "unreported\n")
    third = checkpoints.create(project, journal=journal)
    assert (third["mode"], third["source"], third["changed"]) == ("scan", "scan", 1)


def test_hints_add_paths_but_never_vouch_alone(project: Store) -> None:
    checkpoints.create(project)
    _write(project.root, "src/app.py", "edited in the editor\n")
    _write(project.root, "README.md", "edited elsewhere\n")
    # Only the editor's file is hinted, and nothing vouches: a full scan sees both.
    second = checkpoints.create(project, hints=["src/app.py"])
    assert second["mode"] == "scan" and second["changed"] == 2
    journal = checkpoints.ChangeJournal(started_at=time.time() - 3600)
    checkpoints.create(project, journal=journal)
    _write(project.root, "README.md", "edited again\n")
    _write(project.root, "src/app.py", "edited again\n")
    journal.mark(["README.md"])
    third = checkpoints.create(project, journal=journal, hints=["/src/app.py"])
    assert third["source"] == "watcher" and third["changed"] == 2


def test_changed_exclude_settings_make_the_next_checkpoint_look_everywhere(
    project: Store,
) -> None:
    _write(project.root, "logs/run.txt", "log\n")
    excluding = config.load(project.root, overrides={"watch.exclude": ["logs/"]})
    first = checkpoints.create(project, settings=excluding)
    assert "logs/run.txt" not in _paths(project, first)
    journal = checkpoints.ChangeJournal(started_at=time.time() - 3600)
    # The journal saw nothing change, but the settings no longer exclude logs/.
    second = checkpoints.create(project, journal=journal)
    assert second["mode"] == "scan"
    assert "logs/run.txt" in _paths(project, second)


def test_a_changed_git_exclude_file_makes_the_next_checkpoint_look_everywhere(
    project: Store,
) -> None:
    git(project.root, "init", "-q")
    exclude = project.root / ".git" / "info" / "exclude"
    exclude.parent.mkdir(parents=True, exist_ok=True)
    exclude.write_text("build/\n")
    _write(project.root, "build/out.txt", "generated\n")
    journal = checkpoints.ChangeJournal(started_at=time.time() - 3600)
    first = checkpoints.create(project, journal=journal)
    assert "build/out.txt" not in _paths(project, first)
    exclude.write_text("# nothing excluded any more\n")
    second = checkpoints.create(project, journal=journal)
    assert second["mode"] == "scan"
    assert "build/out.txt" in _paths(project, second)


def test_a_given_change_list_needs_a_previous_checkpoint(project: Store) -> None:
    # The first checkpoint has nothing to build on: it scans whatever the list says.
    first = checkpoints.create(project, changed=["README.md"])
    assert first["mode"] == "scan" and _paths(project, first) == {"README.md", "src/app.py"}


def test_git_still_vouches_after_a_checkpoint_a_journal_vouched_for(project: Store) -> None:
    git(project.root, "init", "-q")
    git(project.root, "add", "-A")
    git(project.root, "commit", "-qm", "start")
    checkpoints.create(project)
    journal = checkpoints.ChangeJournal(started_at=time.time() - 3600)
    _write(project.root, "README.md", "# seen by the watcher\n", age=0)
    journal.mark(["README.md"])
    assert checkpoints.create(project, journal=journal)["source"] == "watcher"
    # The watcher is gone; git's status, carried forward through that checkpoint, vouches.
    _write(project.root, "src/app.py", "def main():\n    return 3\n", age=0)
    third = checkpoints.create(project)
    assert (third["source"], third["changed"]) == ("git", 1)
    assert checkpoints.file_content(project, third["id"], "src/app.py") == (
        b"def main():\n    return 3\n"
    )


@pytest.mark.skipif(shutil.which("watchman") is None, reason="watchman is not installed")
def test_watchman_vouches_for_the_interval_when_it_is_installed(project: Store) -> None:
    config.set_value(project.root, "checkpoints.watchman", True)
    checkpoints.create(project)
    _write(project.root, "src/app.py", "def main():\n    return 4\n", age=0)
    second = checkpoints.create(project)
    assert (second["mode"], second["source"], second["changed"]) == ("incremental", "watchman", 1)
    assert checkpoints.file_content(project, second["id"], "src/app.py") == (
        b"def main():\n    return 4\n"
    )


def test_secret_files_are_captured_only_when_the_setting_asks(project: Store) -> None:
    _write(project.root, ".env", "API_KEY=1\n")
    default = checkpoints.create(project)
    assert ".env" not in _paths(project, default)
    asked = config.load(project.root, overrides={"checkpoints.include_secret_files": True})
    including = checkpoints.create(project, settings=asked)
    assert ".env" in _paths(project, including)
