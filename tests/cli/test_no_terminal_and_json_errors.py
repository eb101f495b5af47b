"""The command line without a terminal, and errors under --json."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any


def _run_with_stdin_closed(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    # fd 0 closed, as a daemon or a CI step may run it: Python then has no sys.stdin at all.
    return subprocess.run(
        [sys.executable, "-m", "memory_core", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        preexec_fn=lambda: os.close(0),
        timeout=120,
    )


def test_rollback_with_stdin_closed_says_to_pass_yes(cli: Any, workspace: Path) -> None:
    (workspace / "a.txt").write_text("one\n")
    checkpoint = cli("checkpoint", "create", "--json", cwd=workspace).json()
    (workspace / "a.txt").write_text("two\n")
    result = _run_with_stdin_closed("rollback", checkpoint["id"], cwd=workspace)
    assert result.returncode == 2, result.stderr
    assert "engram rollback not confirmed: it needs --yes when not on a terminal" in result.stderr
    assert "Traceback" not in result.stderr and "internal error" not in result.stderr
    assert (workspace / "a.txt").read_text() == "two\n"
    # Negative control: with --yes the same command does roll back.
    done = _run_with_stdin_closed("rollback", checkpoint["id"], "--yes", cwd=workspace)
    assert done.returncode == 0, done.stderr
    assert (workspace / "a.txt").read_text() == "one\n"


def test_every_confirmation_refuses_cleanly_on_a_pipe(cli: Any, workspace: Path) -> None:
    assert cli("init", cwd=workspace).code == 0
    assert cli("session", "start", "s1", cwd=workspace).code == 0
    checkpoint = cli("checkpoint", "create", "--json", cwd=workspace).json()
    for args in (
        ("session", "delete", "s1"),
        ("checkpoint", "delete", checkpoint["id"]),
        ("purge", "--all"),
    ):
        result = cli(*args, cwd=workspace, stdin="")
        assert result.code == 2, (args, result.stderr)
        assert "needs --yes when not on a terminal" in result.stderr, args


def test_errors_under_json_are_one_json_object_on_stdout(cli: Any, workspace: Path) -> None:
    cases = [
        (("gotcha", "list", "--json"), 1, "MEM_E003", "no engram store here"),  # no store
        (("--json", "init", "--bogus"), 2, "MEM_E004", "unrecognized arguments"),  # argparse
    ]
    for args, exit_code, code, needle in cases:
        result = cli(*args, cwd=workspace)
        assert result.code == exit_code, (args, result.stdout, result.stderr)
        error = json.loads(result.stdout)
        assert set(error) == {"error", "hint", "code", "exit_code"}
        assert error["code"] == code and error["exit_code"] == exit_code
        assert needle in error["error"]
        assert result.stderr == ""
    assert cli("init", cwd=workspace).code == 0
    rolled = cli("rollback", "C-missing", "--json", cwd=workspace)
    assert rolled.code == 1 and "C-missing" in json.loads(rolled.stdout)["error"]
    # Without --json the same error is one line on stderr (the negative control).
    plain = cli("rollback", "C-missing", cwd=workspace)
    assert plain.stdout == "" and plain.stderr.startswith("engram: error: ")
