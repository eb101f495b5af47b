"""`engram gotcha ...` and `engram error track`, run as a user runs them (a fresh process each)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

APP = "import json\n\n\ndef load(path):\n    return json.loads(open(path).read())['items']\n"


def test_three_tracked_errors_make_a_candidate_gotcha(cli: Any, workspace: Path) -> None:
    (workspace / "app.py").write_text(APP)
    outputs = []
    for attempt, tmp in ((1, "/tmp/a1"), (2, "/tmp/b22"), (3, "/var/tmp/c333")):
        message = (
            "Traceback (most recent call last):\n"
            f'  File "{workspace}/app.py", line 5, in load\n'
            f"KeyError: 'items' (try {attempt}, cache {tmp}/x.json)"
        )
        result = cli("error", "track", message, cwd=workspace)
        assert result.code == 0, result.stderr
        outputs.append(result.stdout)
    assert "seen 1 of 3" in outputs[0] and "seen 2 of 3" in outputs[1]
    assert "learned candidate gotcha G-" in outputs[2]
    listed = cli("gotcha", "list", "--json", cwd=workspace).json()
    [gotcha] = listed["gotchas"]
    assert gotcha["status"] == "candidate" and gotcha["source"]["occurrences"] == 3
    assert gotcha["anchors"] == [
        {"path": "app.py", "line": 5, "end_line": 5, "text": APP.splitlines()[4]}
    ]
    human = cli("gotcha", "list", cwd=workspace).stdout
    assert gotcha["id"] in human and "(candidate)" in human and "KeyError: 'items'" in human


def test_add_show_confirm_resolve_and_list_all(cli: Any, workspace: Path) -> None:
    added = cli(
        "gotcha",
        "add",
        "Never read() a whole file",
        "--severity",
        "high",
        "--pattern",
        r"\.read\(\)",
        "--file",
        "*.py",
        "--workaround",
        "stream it",
        "--json",
        cwd=workspace,
    )
    assert added.code == 0, added.stderr
    gotcha_id = added.json()["id"]
    shown = cli("gotcha", "show", gotcha_id[:6], cwd=workspace)  # a unique prefix will do
    assert (
        shown.code == 0
        and "workaround: stream it" in shown.stdout
        and "files: *.py" in shown.stdout
    )
    assert cli("gotcha", "resolve", gotcha_id, cwd=workspace).code == 0
    assert cli("gotcha", "list", "--json", cwd=workspace).json() == {"gotchas": []}
    everything = cli("gotcha", "list", "--all", "--json", cwd=workspace).json()["gotchas"]
    assert [(g["id"], g["status"]) for g in everything] == [(gotcha_id, "resolved")]


def test_context_prints_markdown_for_a_prompt(cli: Any, workspace: Path) -> None:
    cli(
        "gotcha",
        "add",
        "Postgres must run for integration tests",
        "--severity",
        "critical",
        "--workaround",
        "docker compose up -d db",
        "--file",
        "tests/integration/*",
        cwd=workspace,
    )
    cli("gotcha", "add", "Safari flexbox gap", "--severity", "low", cwd=workspace)
    result = cli(
        "gotcha",
        "context",
        "make the integration tests pass",
        "--file",
        "tests/integration/test_db.py",
        cwd=workspace,
    )
    assert result.code == 0
    assert result.stdout.startswith("## Known gotchas")
    assert "[critical] Postgres must run for integration tests" in result.stdout
    assert "Workaround: docker compose up -d db" in result.stdout
    assert "Safari" not in result.stdout


def test_promote_and_import(cli: Any, workspace: Path, tmp_path: Path) -> None:
    gotcha_id = cli("gotcha", "add", "Use UTC", "--json", cwd=workspace).json()["id"]
    promoted = cli("gotcha", "promote", gotcha_id, cwd=workspace)
    assert promoted.code == 0 and "team/gotchas.toml" in promoted.stdout
    assert gotcha_id in (workspace / ".engram" / "team" / "gotchas.toml").read_text()
    other = tmp_path / "other"
    other.mkdir()
    exported = workspace / ".engram" / "exports" / "gotchas.json"
    imported = cli("gotcha", "import", str(exported), "--json", cwd=other)
    assert imported.code == 0, imported.stderr
    assert imported.json()["imported"] == [gotcha_id]


def test_user_mistakes_are_one_line_and_exit_2(cli: Any, workspace: Path, tmp_path: Path) -> None:
    bad_regex = cli("gotcha", "add", "bad", "--pattern", "foo(bar", cwd=workspace)
    assert bad_regex.code == 2
    assert bad_regex.stderr.count("\n") == 1 and "position 7" in bad_regex.stderr
    assert "Traceback" not in bad_regex.stderr
    slow = cli("gotcha", "add", "slow", "--pattern", "(a|aa)+$", cwd=workspace)
    assert slow.code == 2 and "pathological" in slow.stderr
    missing = cli("gotcha", "resolve", "G-00000000", cwd=workspace)
    assert missing.code == 1 and "no gotcha" in missing.stderr
    bad_file = tmp_path / "x.json"
    bad_file.write_text("[1, 2")
    bad_import = cli("gotcha", "import", str(bad_file), cwd=workspace)
    assert bad_import.code == 2 and "not JSON" in bad_import.stderr
    bad_file.write_text("[" * 100_000 + "]" * 100_000)  # deeper than the JSON decoder goes
    for command in (("gotcha", "import"), ("session", "import"), ("import",)):
        deep = cli(*command, str(bad_file), cwd=workspace)
        assert deep.code == 2 and "not" in deep.stderr and "JSON" in deep.stderr.upper()
        assert "internal error" not in deep.stderr and "Traceback" not in deep.stderr
    empty = cli("error", "track", "  ", cwd=workspace)
    assert empty.code == 2 and "empty" in empty.stderr
    outside = cli("error", "track", "boom", "--file", "/etc/hosts", cwd=workspace)
    assert outside.code == 2 and "outside the workspace" in outside.stderr
    assert cli("gotcha", "list", "--json", cwd=workspace).json() == {
        "gotchas": []
    }  # nothing half-written


def test_track_json_output(cli: Any, workspace: Path) -> None:
    result = cli("error", "track", "TypeError: x is not a function", "--json", cwd=workspace)
    assert json.loads(result.stdout) == {
        "gotcha_id": None,
        "created": False,
        "reopened": False,
        "occurrences": 1,
        "normalized": "TypeError: x is not a function",
    }


def test_track_at_a_given_time_counts_in_the_window_of_that_time(cli: Any, workspace: Path) -> None:
    for at in ("2026-03-01T08:00:00Z", "2026-03-01T20:00:00Z", "2026-03-02T08:30:00Z"):
        result = cli(
            "error", "track", "TypeError: x is not a function", "--at", at, "--json", cwd=workspace
        )
        assert result.json()["gotcha_id"] is None
    bad = cli("error", "track", "boom", "--at", "yesterday", cwd=workspace)
    assert bad.code == 2 and "ISO-8601" in bad.stderr


def test_confirm_takes_the_workaround_a_person_knows(cli: Any, workspace: Path) -> None:
    traceback = 'File "/tmp/run/app.py", line 3, in f\nTypeError: x is not a function'
    for _ in range(3):
        assert cli("error", "track", traceback, cwd=workspace).code == 0
    (candidate,) = cli("gotcha", "list", "--json", cwd=workspace).json()["gotchas"]
    assert candidate["status"] == "candidate"
    confirmed = cli(
        "gotcha",
        "confirm",
        candidate["id"],
        "--workaround",
        "call f.bind first",
        "--severity",
        "high",
        "--json",
        cwd=workspace,
    ).json()
    assert (confirmed["status"], confirmed["severity"], confirmed["workaround"]) == (
        "confirmed",
        "high",
        "call f.bind first",
    )
    bad = cli("gotcha", "confirm", candidate["id"], "--severity", "urgent", cwd=workspace)
    assert bad.code == 2 and "Traceback" not in bad.stderr
