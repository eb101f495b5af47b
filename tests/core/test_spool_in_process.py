"""The hook spool, in-process: what is kept when the store cannot take an event, where, in what
order it comes back, its limits on both sides, and the claims of a hook killed while folding.
(tests/cli/test_hook_spool.py drives the same through `engram hook` processes.)"""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest

from memory_core.agents import spool
from memory_core.workspace import STORE_DIRNAME


@pytest.fixture
def root(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    project = tmp_path / "project"
    (project / STORE_DIRNAME).mkdir(parents=True)
    return project


def _folded(root: Path) -> list[tuple[str, str, bytes, float]]:
    seen: list[tuple[str, str, bytes, float]] = []
    spool.fold(root, lambda agent, event, data, ts: seen.append((agent, event, data, ts)))
    return seen


def test_a_kept_event_comes_back_whole_with_its_agent_event_and_time(root: Path) -> None:
    payload = b'{"session_id": "s1", "prompt": "fix the build"}'
    path = spool.keep(root, "claude-code", "UserPromptSubmit", payload, 1700000000.5, "busy")
    assert path is not None and path.parent == root / STORE_DIRNAME / "spool"
    assert path.name.endswith(".event") and not path.name.startswith(".")
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700
    header, body = path.read_bytes().split(b"\n", 1)
    assert json.loads(header) == {
        "agent": "claude-code",
        "event": "UserPromptSubmit",
        "ts": 1700000000.5,
        "why": "busy",
    }
    assert body == payload
    assert spool.pending(root) == [path]
    assert _folded(root) == [("claude-code", "UserPromptSubmit", payload, 1700000000.5)]
    assert spool.pending(root) == [] and list(path.parent.iterdir()) == []


def test_events_come_back_oldest_first_and_each_once(root: Path) -> None:
    for n in range(5):
        spool.keep(root, "gemini", f"E{n}", b"{}", float(n), "busy")
    assert [event for _, event, _, _ in _folded(root)] == ["E0", "E1", "E2", "E3", "E4"]
    assert _folded(root) == []


def test_a_failing_event_is_logged_removed_and_does_not_stop_the_others(root: Path) -> None:
    spool.keep(root, "claude-code", "Bad", b"{}", 1.0, "busy")
    spool.keep(root, "claude-code", "Good", b"{}", 2.0, "busy")
    ran: list[str] = []

    def run(agent: str, event: str, data: bytes, ts: float) -> None:
        if event == "Bad":
            raise RuntimeError("cannot parse it")
        ran.append(event)

    assert spool.fold(root, run) == 1
    assert ran == ["Good"] and spool.pending(root) == []
    logged = (root / STORE_DIRNAME / "engram.log").read_text()
    assert "spooled hook event" in logged and "failed: cannot parse it" in logged
    assert "Traceback" in logged and "RuntimeError: cannot parse it" in logged  # for a report


def test_a_store_folder_that_cannot_be_written_spools_into_the_users_cache(
    root: Path, tmp_path: Path
) -> None:
    # A file where the spool folder should be: creating it fails, as on a read-only store.
    (root / STORE_DIRNAME / "spool").write_text("in the way")
    path = spool.keep(root, "codex", "Stop", b"{}", 3.0, "read-only")
    assert path is not None
    assert path.parent == spool.cache_spool(root)
    assert path.parent.parent == tmp_path / "cache" / "engram" / "spool"
    # Two workspaces never share a cache spool; the same workspace always gets the same one.
    assert spool.cache_spool(root) == spool.cache_spool(Path(str(root)))
    assert spool.cache_spool(root) != spool.cache_spool(tmp_path / "other")
    assert len(spool.cache_spool(root).name) == 16
    assert spool.pending(root) == [path]
    assert _folded(root) == [("codex", "Stop", b"{}", 3.0)]


def test_without_xdg_cache_home_the_cache_is_under_home(
    root: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.delenv("XDG_CACHE_HOME")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert spool.cache_spool(root).parent == tmp_path / "home" / ".cache" / "engram" / "spool"
    monkeypatch.setenv("XDG_CACHE_HOME", "")
    assert spool.cache_spool(root).parent == tmp_path / "home" / ".cache" / "engram" / "spool"


def test_nowhere_to_write_says_so_and_keeps_nothing(
    root: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (root / STORE_DIRNAME / "spool").write_text("in the way")
    (tmp_path / "cache").write_text("not a folder either")
    assert spool.keep(root, "codex", "Stop", b"{}", 3.0, "read-only") is None
    said = capsys.readouterr().err
    assert "could not record or keep a Stop event" in said and str(root) in said


def test_the_spool_takes_up_to_max_entries_then_refuses_and_says_so(
    root: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(spool, "MAX_ENTRIES", 3)
    kept = [spool.keep(root, "claude-code", "Stop", b"{}", float(n), "busy") for n in range(3)]
    assert all(kept) and capsys.readouterr().err == ""
    assert spool.keep(root, "claude-code", "Stop", b"{}", 9.0, "busy") is None
    said = capsys.readouterr().err
    assert "spool of" in said and "is full: a Stop event was dropped" in said
    logged = (root / STORE_DIRNAME / "engram.log").read_text()
    assert " ERROR [" in logged and "the spool is full; event dropped" in logged
    assert len(spool.pending(root)) == 3
    # The cache is not used as an overflow: a full spool refuses.
    assert not spool.cache_spool(root).exists()


def test_the_spool_takes_events_up_to_max_bytes_exactly(
    root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    first = spool.keep(root, "a", "E", b"x" * 10, 1.0, "busy")
    assert first is not None
    # What is there (its header included) plus the new body may reach the limit, not pass it.
    monkeypatch.setattr(spool, "MAX_BYTES", first.stat().st_size + 20)
    assert spool.keep(root, "a", "E", b"y" * 21, 1.0, "busy") is None
    assert spool.keep(root, "a", "E", b"y" * 20, 1.0, "busy") is not None
    assert len(spool.pending(root)) == 2


def test_long_strings_are_cut_before_they_are_spooled(root: Path) -> None:
    from memory_core.agents.payload import CUT_ABOVE_BYTES

    payload = json.dumps({"prompt": "p" * (CUT_ABOVE_BYTES + 5000)}).encode()
    path = spool.keep(root, "claude-code", "UserPromptSubmit", payload, 1.0, "busy")
    assert path is not None
    body = path.read_bytes().split(b"\n", 1)[1]
    assert len(body) < len(payload)
    assert json.loads(body)["prompt"].startswith("ppp")


def _claim(root: Path, age: float, claimer: int | None = None) -> Path:
    """A spooled event claimed by `claimer` (default: a process that still runs, as far as
    the spool can tell: this one; a killed hook's pid may be reused, or live in another pid
    namespace sharing the store)."""
    path = spool.keep(root, "claude-code", "Stop", b"{}", 1.0, "busy")
    assert path is not None
    claimed = path.with_name(f"{path.name}.{claimer or os.getpid()}.claimed")
    os.rename(path, claimed)
    then = time.time() - age
    os.utime(claimed, (then, then))
    return claimed


def test_an_event_claimed_by_a_killed_hook_comes_back_after_five_minutes(
    root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    claimed = _claim(root, 0)
    assert spool.pending(root) == []  # another hook is folding it
    assert claimed.exists()
    # The claim's age is its change time (set by the rename); five minutes and more is stale.
    monkeypatch.setattr(spool.time, "time", lambda: claimed.stat().st_ctime + 301.0)
    back = spool.pending(root)
    assert [p.name for p in back] == [claimed.name.split(".event.", 1)[0] + ".event"]
    assert back[0].exists() and not claimed.exists()


def test_an_event_whose_claimer_is_gone_comes_back_at_once(root: Path) -> None:
    # A resident child keeps the event it records after its answer as claimed by itself
    # (spool.keep_while_recording); killed before it was done, the event is the next hook's.
    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait()
    claimed = _claim(root, 0, claimer=gone.pid)
    back = spool.pending(root)
    assert [p.name for p in back] == [claimed.name.split(".event.", 1)[0] + ".event"]
    assert back[0].exists() and not claimed.exists()


def test_a_claim_just_under_five_minutes_old_is_left_to_its_hook(
    root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    claimed = _claim(root, 0)
    monkeypatch.setattr(spool.time, "time", lambda: claimed.stat().st_ctime + 299.0)
    assert spool.pending(root) == [] and claimed.exists()


def test_folding_stops_after_its_time_and_leaves_the_rest_for_the_next_hook(
    root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for n in range(3):
        spool.keep(root, "claude-code", f"E{n}", b"{}", float(n), "busy")
    clock = iter([0.0, 0.5, 1.0, 1.01, 99.0])
    monkeypatch.setattr(spool.time, "monotonic", lambda: next(clock))
    ran: list[str] = []
    assert spool.fold(root, lambda a, event, d, t: ran.append(event)) == 2
    # Started at 0: 0.5 and exactly 1.0 are within FOLD_SECONDS, 1.01 is past it.
    assert ran == ["E0", "E1"]
    assert [p.name.endswith(".event") for p in spool.pending(root)] == [True]


def test_a_damaged_entry_is_skipped_and_the_rest_folded(root: Path) -> None:
    folder = root / STORE_DIRNAME / "spool"
    spool.keep(root, "claude-code", "Good", b"{}", 2.0, "busy")
    (folder / "00000000000000000001-1-aaaaaa.event").write_bytes(b"not json\n{}")
    (folder / "notes.txt").write_text("not an event")
    assert [e for _, e, _, _ in _folded(root)] == ["Good"]
    assert (folder / "notes.txt").exists()


def test_a_successful_fold_lets_the_next_spooling_be_reported_again(
    root: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    spool.report_once(root, "engram: the store is read-only; events kept")
    spool.report_once(root, "engram: the store is read-only; events kept")
    assert capsys.readouterr().err == "engram: the store is read-only; events kept\n"
    log_text = (root / STORE_DIRNAME / "engram.log").read_text()
    assert log_text.count("the store is read-only") == 1 and "WARNING" in log_text
    assert " WARNING [" in log_text
    assert _folded(root) == []  # nothing folded: still reported
    spool.report_once(root, "again")
    assert capsys.readouterr().err == ""
    spool.keep(root, "claude-code", "Stop", b"{}", 1.0, "busy")
    assert len(_folded(root)) == 1
    spool.report_once(root, "engram: read-only again")
    assert capsys.readouterr().err == "engram: read-only again\n"


def test_the_report_is_said_once_when_events_already_wait_in_the_cache(
    root: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (root / STORE_DIRNAME / "spool").write_text("in the way")
    assert spool.keep(root, "codex", "Stop", b"{}", 1.0, "read-only") is not None
    spool.report_once(root, "engram: read-only store")
    spool.report_once(root, "engram: read-only store")
    assert capsys.readouterr().err == "engram: read-only store\n"
    # The cache folder is the user's alone, like the events in it.
    assert stat.S_IMODE(spool.cache_spool(root).stat().st_mode) == 0o700


def test_the_first_report_creates_a_private_cache_folder(
    root: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    spool.report_once(root, "engram: busy")
    assert stat.S_IMODE(spool.cache_spool(root).stat().st_mode) == 0o700
    assert (spool.cache_spool(root) / "reported").read_text() == "engram: busy\n"


def test_a_failed_spooled_event_is_logged_as_an_error(root: Path) -> None:
    spool.keep(root, "claude-code", "Bad", b"{}", 1.0, "busy")

    def run(agent: str, event: str, data: bytes, ts: float) -> None:
        raise ValueError("bad payload")

    assert spool.fold(root, run) == 0
    line = (root / STORE_DIRNAME / "engram.log").read_text().splitlines()[0]
    assert " ERROR " in line and "failed: bad payload" in line


def test_a_claim_gone_before_it_is_looked_at_is_not_brought_back(root: Path) -> None:
    folder = root / STORE_DIRNAME / "spool"
    folder.mkdir(mode=0o700)
    # A claim whose file is gone by the time its age is read (its hook finished with it).
    (folder / "00000000000000000001-1-aaaaaa.event.77.claimed").symlink_to(folder / "gone")
    assert spool.pending(root) == []
    assert not (folder / "00000000000000000001-1-aaaaaa.event").exists()


def test_a_stale_claim_that_cannot_be_put_back_does_not_stop_the_others(
    root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    claimed = _claim(root, 0)
    # Its event's name taken by a folder: putting the claim back fails.
    (claimed.parent / (claimed.name.split(".event.", 1)[0] + ".event") / "x").mkdir(parents=True)
    later = spool.keep(root, "claude-code", "Later", b"{}", 2.0, "busy")
    monkeypatch.setattr(spool.time, "time", lambda: claimed.stat().st_ctime + 301.0)
    assert later in spool.pending(root)
    assert claimed.exists()


# -- events a resident child records after its answer (spool.keep_while_recording) ------------


def test_an_event_recorded_after_the_answer_is_kept_claimed_by_its_recorder(root: Path) -> None:
    from memory_core.agents.payload import CUT_ABOVE_BYTES

    payload = json.dumps({"session_id": "s1", "prompt": "p" * (CUT_ABOVE_BYTES + 5000)}).encode()
    path = spool.keep_while_recording(root, "claude-code", "UserPromptSubmit", payload, 17.5)
    assert path is not None and path.parent == root / STORE_DIRNAME / "spool"
    assert path.name.endswith(f".event.{os.getpid()}.claimed")
    assert not path.name.startswith(".")
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700
    header, body = path.read_bytes().split(b"\n", 1)
    assert json.loads(header) == {
        "agent": "claude-code",
        "event": "UserPromptSubmit",
        "ts": 17.5,
        "why": "answered",
    }
    assert len(body) < len(payload)  # long strings cut, as for any kept event
    assert json.loads(body)["session_id"] == "s1"
    # Its recorder still runs: no fold takes it (it would be recorded twice).
    assert spool.pending(root) == [] and _folded(root) == []
    assert path.exists()
    # A second one beside it (the spool folder there already).
    second = spool.keep_while_recording(root, "gemini", "AfterAgent", b"{}", 18.0)
    assert second is not None and second.parent == path.parent and second != path


def test_an_event_whose_recorder_died_before_it_was_done_is_the_next_folds(
    root: Path,
) -> None:
    # The recorder answered, kept the event, and was killed before it recorded it.
    code = (
        "import sys; from pathlib import Path; from memory_core.agents import spool; "
        "spool.keep_while_recording(Path(sys.argv[1]), 'claude-code', 'Stop', b'{\"a\": 1}', 9.0)"
    )
    subprocess.run([sys.executable, "-c", code, str(root)], check=True, timeout=30)
    assert [p.name.endswith(".event") for p in spool.pending(root)] == [True]
    assert _folded(root) == [("claude-code", "Stop", b'{"a": 1}', 9.0)]
    assert spool.pending(root) == []


def test_an_event_is_not_kept_for_after_the_answer_without_a_store_folder(
    tmp_path: Path,
) -> None:
    # (Nothing to read it from: the recorder records it before it answers instead.)
    assert spool.keep_while_recording(tmp_path, "claude-code", "Stop", b"{}", 1.0) is None
    assert not (tmp_path / STORE_DIRNAME).exists()


def test_an_event_is_not_kept_for_after_the_answer_where_the_spool_cannot_be_written(
    root: Path,
) -> None:
    (root / STORE_DIRNAME / "spool").write_text("in the way")
    assert spool.keep_while_recording(root, "claude-code", "Stop", b"{}", 1.0) is None
    assert not spool.cache_spool(root).exists()  # never the user's cache: no one would fold it


def test_a_report_to_a_closed_stderr_does_not_break_the_hook(
    root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # (An agent may close the hook's stderr: the report is then in the log alone.)
    closed = open(os.devnull, "w")  # noqa: SIM115 - closed on purpose
    closed.close()
    monkeypatch.setattr(sys, "stderr", closed)
    spool.report_once(root, "engram: busy, events kept")
    assert "engram: busy, events kept" in (root / STORE_DIRNAME / "engram.log").read_text()
    assert (spool.cache_spool(root) / "reported").exists()


def test_events_from_the_store_and_the_cache_come_back_oldest_first_together(
    root: Path,
) -> None:
    # The older event in the store's folder, the newer one in the cache (the store's folder
    # became read-only in between): the order is the events', not the folders'.
    older = spool.keep(root, "claude-code", "Older", b"{}", 1.0, "busy")
    newer = spool.keep(root, "claude-code", "Newer", b"{}", 2.0, "busy")
    assert older is not None and newer is not None
    spool.cache_spool(root).mkdir(mode=0o700, parents=True)
    os.rename(newer, spool.cache_spool(root) / newer.name)
    assert [event for _, event, _, _ in _folded(root)] == ["Older", "Newer"]
