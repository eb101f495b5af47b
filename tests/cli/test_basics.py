"""`engram init` and `engram status` as a user runs them: exit codes, one-line errors, --json."""

from __future__ import annotations

import stat
import subprocess
from pathlib import Path

from tests.conftest import run_cli


def test_init_in_a_repository_subfolder_creates_the_store_at_the_top_level(workspace: Path) -> None:
    subprocess.run(["git", "init", "-q", str(workspace)], check=True)
    nested = workspace / "src" / "deep"
    nested.mkdir(parents=True)
    result = run_cli("init", "--json", cwd=nested)
    assert result.code == 0, result.stderr
    assert result.json()["store"] == str(workspace / ".engram")
    assert stat.S_IMODE((workspace / ".engram").stat().st_mode) == 0o700
    assert stat.S_IMODE((workspace / ".engram" / "engram.db").stat().st_mode) == 0o600
    assert not (nested / ".engram").exists()
    # WAL mode is a property of the database file, so a second process sees it too.
    import sqlite3

    with sqlite3.connect(workspace / ".engram" / "engram.db") as db:
        assert db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"


def test_init_in_the_home_folder_refuses_with_exit_2_and_creates_nothing(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    result = run_cli("init", cwd=home, env={"HOME": str(home)})
    assert result.code == 2
    assert result.stderr.count("\n") == 1 and "home folder" in result.stderr
    assert "Traceback" not in result.stderr
    assert list(home.iterdir()) == []


def test_status_reports_root_schema_counts_size_and_limits(workspace: Path) -> None:
    assert run_cli("init", cwd=workspace).code == 0
    facts = run_cli("status", "--json", cwd=workspace).json()
    assert facts["root"] == str(workspace)
    assert facts["schema_version"] == facts["schema_latest"] >= 1
    assert facts["counts"]["events"] == 0
    assert facts["size_bytes"] > 0
    assert {"table": "events", "max_rows": 5000, "max_age_days": 90.0, "rows": 0} in facts[
        "limits"
    ]["retention"]
    human = run_cli("status", cwd=workspace)
    assert "schema:  version" in human.stdout and str(workspace) in human.stdout


def test_json_may_come_before_the_subcommand(workspace: Path) -> None:
    assert run_cli("--json", "init", cwd=workspace).json()["created"] is True
    assert run_cli("--workspace", str(workspace), "--json", "status").json()["root"] == str(
        workspace
    )


def test_status_without_a_store_is_one_clear_line(workspace: Path) -> None:
    result = run_cli("status", cwd=workspace)
    assert result.code == 1
    assert (
        result.stderr
        == f"engram: error: no engram store here (run engram init): looked in {workspace} and above\n"
    )


def test_usage_errors_exit_2_in_one_line(workspace: Path) -> None:
    for args in (
        ["no-such-command"],
        ["status", "--bogus"],
        ["--workspace", str(workspace / "missing"), "status"],
    ):
        result = run_cli(*args, cwd=workspace)
        assert result.code == 2, args
        assert result.stderr.count("\n") == 1 and "Traceback" not in result.stderr, result.stderr


def test_config_set_keeps_the_file_readable_and_validates(workspace: Path) -> None:
    assert run_cli("config", "set", "gotchas.threshold", "4", cwd=workspace).code == 0
    bad = run_cli("config", "set", "gotchas.threshold", '"four"', cwd=workspace)
    assert bad.code == 2 and "expected a number" in bad.stderr
    listed = {
        row["key"]: row["value"]
        for row in run_cli("config", "list", "--json", cwd=workspace).json()
    }
    assert listed["gotchas.threshold"] == 4
