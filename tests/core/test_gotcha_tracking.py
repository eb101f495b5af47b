"""Error tracking keeps what a user reads in a gotcha right: no secret in its samples, the
newest samples kept, the line numbers people see, and old occurrences really forgotten."""

from __future__ import annotations

import json
import sqlite3
import subprocess
from pathlib import Path

import pytest

from memory_core import config, gotchas
from memory_core.gotchas.records import MAX_SAMPLES
from memory_core.store import Store

HOUR = 3600.0
T0 = 1_800_000_000.0
TOKEN = "ghp_" + "a1B2c3D4e5" * 3 + "xyz123"


def track(store: Store, message: str, at: float, **kwargs: object) -> gotchas.TrackResult:
    return gotchas.track_error(store, message, now=at, **kwargs)  # type: ignore[arg-type]


def _everything_stored(root: Path) -> bytes:
    blob = b""
    for path in sorted((root / ".engram").rglob("*")):
        if path.is_file():
            blob += path.read_bytes()
    return blob


def test_the_command_in_a_sample_is_redacted(store: Store) -> None:
    command = f"git push https://x:{TOKEN}@github.com/acme/app.git --token {TOKEN}"
    for i in range(4):
        result = track(store, "fatal: Authentication failed", T0 + i, command=command, tool="Bash")
    gotcha = gotchas.get(store, result.gotcha_id or "")
    assert [s.get("command") for s in gotcha.samples] and all(
        s["command"].startswith("git push https://x:[REDACTED") for s in gotcha.samples
    )
    stored = json.dumps([gotcha.samples, gotcha.provenance, gotcha.description])
    assert TOKEN not in stored
    rows = store.query("SELECT command FROM error_occurrences")
    assert rows and all(TOKEN not in row["command"] for row in rows)


def test_a_command_given_on_the_command_line_never_reaches_the_store(cli, workspace: Path) -> None:
    subprocess.run(["git", "init", "-q", str(workspace)], check=True)
    assert cli("init", cwd=workspace).code == 0
    for _ in range(3):
        done = cli(
            "error",
            "track",
            "fatal: Authentication failed for 'https://github.com/acme/app.git/'",
            "--command",
            f"git push --token {TOKEN}",
            cwd=workspace,
        )
        assert done.code == 0, done.stderr
    listed = cli("gotcha", "list", "--json", cwd=workspace).json()
    assert len(listed) == 1
    # Negative control: the command itself was stored (redacted), so the check below looks
    # where it would be.
    with sqlite3.connect(workspace / ".engram" / "engram.db") as conn:
        commands = [r[0] for r in conn.execute("SELECT command FROM error_occurrences")]
    assert commands == ["git push --token [REDACTED:github-token]"] * 3
    assert TOKEN.encode() not in _everything_stored(workspace)


def test_occurrences_that_left_the_window_are_deleted(store: Store) -> None:
    for i in range(2):
        track(store, "KeyError: 'user'", T0 + i)
    track(store, "IndexError: list index out of range", T0 + 2)
    assert store.query_one("SELECT COUNT(*) FROM error_occurrences")[0] == 3  # type: ignore[index]
    # A day and a bit later: only the new occurrence is left; the store does not grow forever.
    track(store, "KeyError: 'user'", T0 + 25 * HOUR)
    rows = store.query("SELECT ts FROM error_occurrences")
    assert [r["ts"] for r in rows] == [T0 + 25 * HOUR]


def test_an_occurrence_exactly_one_window_old_still_counts(store: Store) -> None:
    message = "ZeroDivisionError: division by zero"
    track(store, message, T0)
    track(store, message, T0 + 12 * HOUR)
    result = track(store, message, T0 + 24 * HOUR)
    assert result.created and result.occurrences == 3


def test_a_gotcha_keeps_the_newest_samples(store: Store) -> None:
    for i in range(3):
        track(store, f"RuntimeError: worker {i} died", T0 + i)
    for i in range(3, 9):
        result = track(store, f"RuntimeError: worker {i} died", T0 + i)
    gotcha = gotchas.get(store, result.gotcha_id or "")
    assert gotcha.occurrences == 9
    assert [s["message"] for s in gotcha.samples] == [
        f"RuntimeError: worker {i} died" for i in range(9 - MAX_SAMPLES, 9)
    ]


def test_a_learned_gotcha_starts_with_the_newest_samples_of_its_window(
    store: Store, workspace: Path
) -> None:
    settings = config.load(workspace, overrides={"gotchas.threshold": 7})
    for i in range(7):
        result = track(store, f"MemoryError: worker {i}", T0 + i, settings=settings)
    gotcha = gotchas.get(store, result.gotcha_id or "")
    assert result.created and gotcha.occurrences == 7
    assert [s["message"] for s in gotcha.samples] == [
        f"MemoryError: worker {i}" for i in range(2, 7)
    ]
    assert gotcha.first_seen == T0 and gotcha.last_seen == T0 + 6


def test_the_sample_line_is_the_line_the_tool_printed(store: Store, workspace: Path) -> None:
    (workspace / "src").mkdir()
    (workspace / "src" / "app.py").write_text("import os\n\nvalue = os.environ['HOME']\nprint(1)\n")
    for i in range(4):
        result = track(
            store, "KeyError: 'HOME'", T0 + i, file="src/app.py", line=3, session_id="S-1"
        )
    gotcha = gotchas.get(store, result.gotcha_id or "")
    assert {(s["file"], s["line"]) for s in gotcha.samples} == {("src/app.py", 3)}
    [anchor] = gotcha.anchors
    assert anchor.text == "value = os.environ['HOME']"
    assert gotcha.provenance == {"session_id": "S-1", "file": "src/app.py", "line": 3}
    rows = store.query("SELECT DISTINCT file, line FROM error_occurrences")
    assert [tuple(r) for r in rows] == [("src/app.py", 3)]


def test_a_line_past_the_end_of_the_file_anchors_nowhere_but_is_still_counted(
    store: Store, workspace: Path
) -> None:
    (workspace / "short.py").write_text("x = 1\n")
    for i in range(3):
        result = track(store, "NameError: name 'y' is not defined", T0 + i, file="short.py", line=9)
    gotcha = gotchas.get(store, result.gotcha_id or "")
    assert result.created and gotcha.occurrences == 3
    assert all(a.text is None for a in gotcha.anchors)


def test_the_learned_description_says_how_often_and_what_ran(store: Store) -> None:
    for i in range(3):
        result = track(store, "error: linker command failed", T0 + i * HOUR, command="make all")
    gotcha = gotchas.get(store, result.gotcha_id or "")
    assert gotcha.description.startswith(
        "The same error came back 3 times within 24 h, running `make all`."
    )
    assert (gotcha.category, gotcha.severity) == ("build", "medium")
    assert gotcha.error_pattern == result.normalized
    assert result.to_dict() == {
        "gotcha_id": gotcha.id,
        "created": True,
        "reopened": False,
        "occurrences": 3,
        "normalized": result.normalized,
    }


def test_a_known_gotcha_collects_anchors_up_to_a_limit(store: Store, workspace: Path) -> None:
    lines = "".join(f"line_{n} = {n}\n" for n in range(1, 16))
    (workspace / "many.py").write_text(lines)
    for n in range(1, 16):
        result = track(store, "AssertionError: flaky", T0 + n, file="many.py", line=n)
    gotcha = gotchas.get(store, result.gotcha_id or "")
    assert len(gotcha.anchors) == 10
    assert gotcha.occurrences == 15


@pytest.mark.parametrize("size", [25_000])
def test_a_huge_error_is_cut_before_it_is_stored(store: Store, size: int) -> None:
    message = "ValueError: " + "x" * size
    track(store, message, T0)
    stored = store.query_one("SELECT message FROM error_occurrences")
    assert stored is not None and len(stored["message"]) == 4000


def test_the_cited_line_is_kept_exactly_redacted_and_hashed(store: Store, workspace: Path) -> None:
    from memory_core.gotchas.records import line_hash

    (workspace / "conf.py").write_text(f"API = '{TOKEN}'\nlimit = MAX\n")
    for i in range(3):
        first = track(store, "ValueError: bad key", T0 + i, file="conf.py", line=1)
    for i in range(3):
        second = track(store, "OverflowError: too big", T0 + i, file="conf.py", line=2)
    [secret_line] = gotchas.get(store, first.gotcha_id or "").anchors
    assert secret_line.text == "API = '[REDACTED:github-token]'"
    assert secret_line.content_hash == line_hash(f"API = '{TOKEN}'")
    [plain_line] = gotchas.get(store, second.gotcha_id or "").anchors
    assert plain_line.text == "limit = MAX"
    assert plain_line.content_hash == line_hash("limit = MAX")
    assert TOKEN.encode() not in _everything_stored(workspace)


def test_a_cited_file_that_is_not_utf8_is_read_with_replacements(
    store: Store, workspace: Path
) -> None:
    (workspace / "legacy.py").write_bytes(b"name = 'caf\xe9'\n")
    for i in range(3):
        result = track(store, "UnicodeError: legacy", T0 + i, file="legacy.py", line=1)
    [anchor] = gotchas.get(store, result.gotcha_id or "").anchors
    assert anchor.text == "name = 'caf\ufffd'"


def test_a_different_error_that_merely_contains_a_learned_one_is_not_merged(
    store: Store,
) -> None:
    for i in range(3):
        learned = track(store, "Error: disk full", T0 + i)
    assert learned.created
    other = track(store, "Fatal: Error: disk full while writing the cache index", T0 + 10)
    assert other.gotcha_id is None
    assert gotchas.get(store, learned.gotcha_id or "").occurrences == 3


def test_a_person_s_blank_trigger_text_matches_nothing(store: Store) -> None:
    manual = gotchas.add(store, "Blank trigger", error_pattern="   ")
    result = track(store, "KeyError: 'anything'", T0)
    assert result.gotcha_id is None
    assert gotchas.get(store, manual.id).occurrences == 0


def test_an_empty_error_says_how_to_track_one(store: Store) -> None:
    from memory_core.errors import UsageError

    with pytest.raises(UsageError) as raised:
        gotchas.track_error(store, " \n ")
    assert raised.value.one_line() == (
        'the error message is empty (engram error track "the error text")'
    )


def test_tracking_without_a_given_time_uses_the_clock(store: Store) -> None:
    import time

    before = time.time()
    result = gotchas.track_error(store, "RuntimeError: now")
    assert result.occurrences == 1
    [row] = store.query("SELECT ts FROM error_occurrences")
    assert before - 1 <= row["ts"] <= time.time() + 1


def test_the_learned_gotcha_cites_the_last_occurrence_and_its_command(
    store: Store, workspace: Path
) -> None:
    from memory_core import clock

    (workspace / "app.py").write_text("a = 1\nb = 2\nc = 3\n")
    message = "Error: connect ECONNREFUSED 127.0.0.1:5432"
    for n in range(3):
        result = track(
            store,
            message,
            T0 + n,
            file="app.py",
            line=n + 1,
            command=f"pytest -k case{n}",
            tool="Bash",
            session_id=f"S-{n}",
        )
    gotcha = gotchas.get(store, result.gotcha_id or "")
    assert gotcha.provenance == {
        "command": "pytest -k case2",
        "tool": "Bash",
        "session_id": "S-2",
        "file": "app.py",
        "line": 3,
    }
    assert gotcha.description == (
        "The same error came back 3 times within 24 h, running `pytest -k case2`. "
        f"Normalised: {result.normalized}"
    )
    assert [
        (s["ts"], s["command"], s["tool"], s["session_id"], s["file"], s["line"])
        for s in gotcha.samples
    ] == [
        (clock.iso(T0 + n), f"pytest -k case{n}", "Bash", f"S-{n}", "app.py", n + 1)
        for n in range(3)
    ]
    assert gotcha.first_seen == T0
    # A later occurrence adds a sample with its time too.
    later = track(store, message, T0 + 50, tool="Bash")
    assert gotchas.get(store, later.gotcha_id or "").samples[-1]["ts"] == clock.iso(T0 + 50)


def test_a_description_does_not_repeat_an_error_that_needed_no_normalising(store: Store) -> None:
    for i in range(3):
        result = track(store, "Segmentation fault (core dumped)", T0 + i)
    assert gotchas.get(store, result.gotcha_id or "").description == (
        "The same error came back 3 times within 24 h."
    )


def test_a_learned_security_error_is_high_severity(store: Store) -> None:
    for i in range(3):
        result = track(store, "SecurityError: CSRF token missing", T0 + i)
    gotcha = gotchas.get(store, result.gotcha_id or "")
    assert (gotcha.category, gotcha.severity) == ("security", "high")


def test_a_sample_message_is_cut_at_500_characters(store: Store) -> None:
    message = "ValueError: " + "v" * 900
    for i in range(3):
        result = track(store, message, T0 + i)
    for i in range(2):
        result = track(store, message, T0 + 10 + i)
    samples = gotchas.get(store, result.gotcha_id or "").samples
    assert {len(s["message"]) for s in samples} == {500}


def test_a_learned_gotcha_anchors_at_most_ten_places(store: Store, workspace: Path) -> None:
    (workspace / "wide.py").write_text("".join(f"v{n} = {n}\n" for n in range(1, 14)))
    settings = config.load(workspace, overrides={"gotchas.threshold": 12})
    for n in range(1, 13):
        result = track(
            store, "AssertionError: wide", T0 + n, file="wide.py", line=n, settings=settings
        )
    gotcha = gotchas.get(store, result.gotcha_id or "")
    assert result.created and len(gotcha.anchors) == 10
