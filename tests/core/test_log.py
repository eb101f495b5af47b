"""The store's log, where hooks report what went wrong: its lines, its cap, never an error."""

from __future__ import annotations

import os
import re
import traceback
from pathlib import Path

from memory_core import log
from memory_core.workspace import STORE_DIRNAME


def _store(workspace: Path) -> Path:
    (workspace / STORE_DIRNAME).mkdir()
    return workspace


def test_an_entry_has_the_time_the_level_in_capitals_the_process_and_the_message(
    workspace: Path,
) -> None:
    root = _store(workspace)
    log.write(root, "warning", "hook step failed")
    text = log.log_path(root).read_text(encoding="utf-8")
    assert log.log_path(root) == root / ".engram" / "engram.log"
    assert re.fullmatch(
        rf"\d{{4}}-\d\d-\d\dT\d\d:\d\d:\d\dZ WARNING \[{os.getpid()}\] hook step failed\n", text
    )


def test_entries_are_appended_and_only_the_user_can_read_them(workspace: Path) -> None:
    root = _store(workspace)
    log.write(root, "info", "one")
    log.write(root, "error", "two")
    lines = log.log_path(root).read_text(encoding="utf-8").splitlines()
    assert [line.split("] ", 1)[1] for line in lines] == ["one", "two"]
    assert os.stat(log.log_path(root)).st_mode & 0o777 == 0o600


def test_an_exception_is_logged_with_its_traceback(workspace: Path) -> None:
    root = _store(workspace)
    try:
        raise ValueError("bad payload")
    except ValueError as exc:
        log.write(root, "error", "ingest failed", exc=exc)
        expected = "".join(traceback.format_exception(exc))
    text = log.log_path(root).read_text(encoding="utf-8")
    assert text.endswith("ingest failed\n" + expected)
    assert "ERROR" in text and "ingest failed\nTraceback (most recent call last):" in text
    assert text.rstrip().endswith("ValueError: bad payload")


def test_no_store_means_no_log_and_no_folder_made(workspace: Path) -> None:
    log.write(workspace, "error", "x")
    log.write(None, "error", "x")
    assert not (workspace / STORE_DIRNAME).exists()


def test_the_log_is_rotated_once_past_its_cap_not_at_it(workspace: Path) -> None:
    root = _store(workspace)
    path = log.log_path(root)
    path.write_bytes(b"x" * log.MAX_LOG_BYTES)
    log.write(root, "info", "at the cap")
    assert not path.with_suffix(".log.1").exists()
    assert path.stat().st_size > log.MAX_LOG_BYTES
    log.write(root, "info", "past the cap")
    rotated = root / ".engram" / "engram.log.1"
    assert rotated.read_bytes().endswith(b"at the cap\n")
    assert path.read_text(encoding="utf-8").endswith("past the cap\n")
    assert path.stat().st_size < 200


def test_a_message_that_is_not_valid_text_is_still_logged(workspace: Path) -> None:
    root = _store(workspace)
    log.write(root, "warning", "file a\udcffb unreadable")
    assert "file a\\udcffb unreadable" in log.log_path(root).read_text(encoding="utf-8")


def test_a_log_that_cannot_be_written_never_raises(workspace: Path) -> None:
    root = _store(workspace)
    log.log_path(root).mkdir()  # a folder where the log should be
    log.write(root, "error", "x")
