"""The cold hook's early keep of a never-telling event (memory_core/agents/quiet_events.py), in
process: which folder it keeps the event in, what it leaves to the usual path, and the files it
leaves behind. tests/cli/test_hook_fork.py drives the same path through a real hook process."""

from __future__ import annotations

import io
import json
import os
import stat
import sys
from pathlib import Path
from typing import Any

import pytest

from memory_core.agents import quiet_events
from tests.agents_fixtures import hook_payload


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    root = tmp_path / "project"
    (root / ".engram").mkdir(parents=True)
    (root / ".engram" / "engram.db").write_bytes(b"")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    for variable in ("CLAUDE_PROJECT_DIR", "GEMINI_PROJECT_DIR", "GEMINI_CWD"):
        monkeypatch.delenv(variable, raising=False)
    return root


def _payload(cwd: Path | str, **extra: Any) -> bytes:
    return hook_payload("PostCompact", "s-q", Path(cwd), trigger="auto", **extra).encode()


def _release(kept: quiet_events.Kept | None) -> quiet_events.Kept:
    assert kept is not None
    os.close(kept.lock_fd)
    return kept


def _spooled(root: Path) -> list[str]:
    spool = root / ".engram" / "spool"
    return sorted(os.listdir(spool)) if spool.is_dir() else []


def test_a_kept_event_says_where_what_and_leaves_a_private_claimed_file(project: Path) -> None:
    data = _payload(project)
    kept = _release(quiet_events.keep("claude-code", "PostCompact", None, data))
    assert (kept.root, kept.agent, kept.event, kept.data) == (
        str(project),
        "claude-code",
        "PostCompact",
        data,
    )
    assert _spooled(project) == [os.path.basename(kept.claim)]
    assert stat.S_IMODE(os.stat(kept.claim).st_mode) == 0o600
    # A second event of the same store is kept next to the first (the spool already exists).
    second = _release(quiet_events.keep("claude-code", "PostCompact", None, data))
    assert len(_spooled(project)) == 2 and second.claim != kept.claim


def test_the_workspace_option_wins_over_the_payloads_cwd(project: Path, tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    kept = _release(quiet_events.keep("codex", "PostCompact", str(project), _payload(elsewhere)))
    assert kept.root == str(project)


def test_without_a_cwd_the_agents_project_variable_names_the_folder(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    data = _payload(project / "gone")  # a cwd that is no folder
    monkeypatch.chdir(project.parent)  # no store here
    assert quiet_events.keep("claude-code", "SessionEnd", None, data) is None
    monkeypatch.setenv("CLAUDE_PROJECT_DIR", str(project))
    kept = _release(quiet_events.keep("claude-code", "SessionEnd", None, data))
    assert kept.root == str(project)


def test_a_payload_of_exactly_the_largest_size_is_kept(project: Path) -> None:
    data = _payload(project)
    data += b" " * (quiet_events.MOST_BYTES - len(data))
    assert len(data) == quiet_events.MOST_BYTES
    _release(quiet_events.keep("claude-code", "PreCompact", None, data))
    assert quiet_events.keep("claude-code", "PreCompact", None, data + b" ") is None


def test_a_store_whose_lock_cannot_be_taken_is_left_with_nothing_spooled(project: Path) -> None:
    (project / ".engram" / quiet_events.AFTER_ANSWER_LOCK).mkdir()  # cannot be opened to write
    assert quiet_events.keep("claude-code", "PostCompact", None, _payload(project)) is None
    assert _spooled(project) == []


def test_a_missing_folder_is_left_to_the_usual_path_even_inside_a_project(project: Path) -> None:
    assert quiet_events._root(str(project / "not-yet")) is None


def test_a_store_in_the_home_folder_is_never_the_root(project: Path) -> None:
    home = Path(os.environ["HOME"])  # set by the fixture, beside the project
    (home / ".engram").mkdir(parents=True)
    (home / "notes").mkdir()
    assert quiet_events._root(str(home / "notes")) is None


def test_raw_surrogates_in_a_payload_are_read_as_json_loads_reads_them() -> None:
    data = '{"session_id": "s", "text": "half \ud83d of it"}'.encode("utf-8", "surrogatepass")
    assert repr(quiet_events._small_object(data)) == repr(json.loads(data))


class _Stream(io.BytesIO):
    def __init__(self, data: bytes, tty: bool) -> None:
        super().__init__(data)
        self.tty = tty

    def isatty(self) -> bool:
        return self.tty


@pytest.mark.parametrize(("tty", "expected"), [(False, b'{"a": 1}'), (True, b"")])
def test_the_payload_is_read_from_stdin_but_never_from_a_terminal(
    monkeypatch: pytest.MonkeyPatch, tty: bool, expected: bytes
) -> None:
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(_Stream(b'{"a": 1}', tty)))
    assert quiet_events.read_stdin() == expected


def test_a_stdin_that_cannot_be_read_gives_an_empty_payload(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(sys, "stdin", io.StringIO("text without bytes"))
    assert quiet_events.read_stdin() == b""
