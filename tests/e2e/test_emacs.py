"""End-to-end in Emacs 28 (Debian's emacs-nox) with eglot (Debian's elpa-eglot), in batch mode.

The scenario (tests/e2e/emacs/scenario.el) sets `eglot-server-programs` the way docs/emacs.md
says and starts eglot on app.py against the real `engram lsp`: the gotcha diagnostic in flymake
on the expected line, the hover with its workaround, the quick fixes on it, and one command: a
checkpoint, an edit saved, the rollback; the disk holds the checkpoint again and the buffer,
reverted from disk, shows it without being modified. The negative control runs it against a
server without diagnostics and must fail at that step.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.conftest import (
    E2E_DIR,
    GOTCHA_LINE,
    GOTCHA_TITLE,
    GOTCHA_WORKAROUND,
    SampleWorkspace,
    broken_server_command,
    clean_env,
    real_server_command,
    require,
    write_output,
)

pytestmark = pytest.mark.e2e

SCENARIO = E2E_DIR / "emacs" / "scenario.el"
EMACS = Path(shutil.which("emacs") or "/usr/bin/emacs")


def run_scenario(
    workspace: SampleWorkspace, server: list[str], tmp: Path, timeout_ms: int = 20000
) -> tuple[int, dict[str, Any]]:
    require(EMACS, "Emacs (apt-get install emacs-nox elpa-eglot)")
    result_file = tmp / "emacs.json"
    env = clean_env(tmp)
    env.update(
        E2E_FILE=str(workspace.app),
        E2E_LINE=str(GOTCHA_LINE),
        E2E_WORKAROUND=GOTCHA_WORKAROUND,
        E2E_CMD=json.dumps(server),
        E2E_RESULT=str(result_file),
        E2E_TIMEOUT_MS=str(timeout_ms),
    )
    completed = subprocess.run(
        [str(EMACS), "--batch", "-Q", "-l", str(SCENARIO)],
        cwd=workspace.root,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        stdin=subprocess.DEVNULL,
    )
    result: dict[str, Any] = json.loads(result_file.read_text()) if result_file.exists() else {}
    result["exit_code"] = completed.returncode
    result["stderr"] = completed.stderr[-4000:]
    return completed.returncode, result


def test_diagnostic_hover_code_actions_and_rollback(
    sample_workspace: SampleWorkspace, tmp_path: Path
) -> None:
    code, result = run_scenario(sample_workspace, real_server_command(), tmp_path)
    write_output("emacs.json", result)
    assert code == 0 and result.get("ok") is True, result
    # eglot prefixes the source and the code: "engram [G-…]: <the gotcha's title>".
    assert result["diagnostic"] == f"engram [{sample_workspace.gotcha_id}]: {GOTCHA_TITLE}"
    assert GOTCHA_WORKAROUND in result["hover"]
    assert any(t.startswith("Resolve gotcha") for t in result["code_actions"])
    assert sample_workspace.app.read_text(encoding="utf-8") == result["restored"]
    assert "def load_customers" in result["restored"]


def test_negative_control_fails_without_diagnostics(
    sample_workspace: SampleWorkspace, tmp_path: Path
) -> None:
    code, result = run_scenario(
        sample_workspace, broken_server_command("no-diagnostics"), tmp_path, timeout_ms=5000
    )
    write_output("emacs-negative.json", result)
    assert code != 0, "the scenario passed against a server without diagnostics"
    assert result.get("failed") == "diagnostic", result
