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

from memory_core.store import Store
from tests.e2e.conftest import (
    APP_PY,
    E2E_DIR,
    GOTCHA_LINE,
    GOTCHA_TITLE,
    GOTCHA_WORKAROUND,
    REPO,
    SampleWorkspace,
    broken_server_command,
    clean_env,
    real_server_command,
    require,
    write_output,
)

pytestmark = pytest.mark.e2e

SCENARIO = E2E_DIR / "emacs" / "scenario.el"
COMMANDS = E2E_DIR / "emacs" / "commands.el"
ENGRAM_EL = REPO / "editors" / "emacs"
EMACS = Path(shutil.which("emacs") or "/usr/bin/emacs")


def run_scenario(
    workspace: SampleWorkspace,
    server: list[str],
    tmp: Path,
    timeout_ms: int = 20000,
    scenario: Path = SCENARIO,
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
        E2E_ENGRAM_EL=str(ENGRAM_EL),
    )
    completed = subprocess.run(
        [str(EMACS), "--batch", "-Q", "-l", str(scenario)],
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


def test_engram_el_commands_checkpoint_rollback_summary(
    sample_workspace: SampleWorkspace, tmp_path: Path
) -> None:
    """engram.el's M-x commands, as a person runs them from a checkout (docs/emacs.md)."""
    code, result = run_scenario(
        sample_workspace, real_server_command(), tmp_path, scenario=COMMANDS
    )
    write_output("emacs-commands.json", result)
    assert code == 0 and result.get("ok") is True, result
    assert "app.py" in result["rollback_question"]
    assert result["rollback_message"].startswith("engram: rolled back to emacs-before-edit")
    assert sample_workspace.app.read_text(encoding="utf-8") == APP_PY
    assert result["summary"].startswith("# ")
    assert result["error_message"].startswith("engram: ")
    assert "no-such-checkpoint" in result["error_message"]
    # One automatic checkpoint: the burst of saves'. engram's store and the other editor's
    # files written before it made none.
    with Store.open(sample_workspace.root) as store:
        bursts = [
            float(row["created_at"])
            for row in store.query("SELECT created_at FROM checkpoints WHERE reason = 'burst'")
        ]
    assert len(bursts) == 1, bursts
    assert bursts[0] >= result["work_starts"]


def test_engram_el_negative_control_fails_without_the_rollback_command(
    sample_workspace: SampleWorkspace, tmp_path: Path
) -> None:
    code, result = run_scenario(
        sample_workspace,
        broken_server_command("no-command", "engram.checkpoint.rollback"),
        tmp_path,
        timeout_ms=5000,
        scenario=COMMANDS,
    )
    write_output("emacs-commands-negative.json", result)
    assert code != 0, "the commands scenario passed against a server without rollback"
    assert result.get("failed") == "rollback", result


def test_engram_el_byte_compiles_without_warnings(tmp_path: Path) -> None:
    """What package.el does on install: a warning there is a bug a user sees in *Warnings*."""
    require(EMACS, "Emacs (apt-get install emacs-nox elpa-eglot)")
    copy = tmp_path / "engram.el"
    copy.write_bytes((ENGRAM_EL / "engram.el").read_bytes())
    completed = subprocess.run(
        [
            str(EMACS),
            "--batch",
            "-Q",
            "--eval",
            '(progn (require (quote package)) (add-to-list (quote package-directory-list) "/usr/share/emacs/site-lisp/elpa") (package-initialize) (setq byte-compile-error-on-warn t))',
            "-f",
            "batch-byte-compile",
            str(copy),
        ],
        capture_output=True,
        text=True,
        timeout=120,
        stdin=subprocess.DEVNULL,
    )
    assert completed.returncode == 0, completed.stderr
    assert (tmp_path / "engram.elc").exists()
