"""Neovim's own habits, headless on 0.7.2 and 0.11.4: `vim.lsp.enable("engram")` alone works on
0.11 (editors/nvim/lsp/engram.lua), `:checkhealth engram` reports the engram command with its
version, the store and the attached client, `:help engram-rollback` opens the help, and a
missing `engram` command is said once, in words. The negative control runs the health check
against a store that does not exist, which must fail the scenario.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.conftest import (
    E2E_DIR,
    NVIM_DEBIAN,
    NVIM_PIP,
    REPO,
    SampleWorkspace,
    clean_env,
    require,
    write_output,
)

pytestmark = pytest.mark.e2e

NATIVE = E2E_DIR / "nvim" / "native.lua"
NVIMS = [
    pytest.param(NVIM_DEBIAN, "0.7", id="nvim-0.7"),
    pytest.param(NVIM_PIP, "0.11", id="nvim-0.11"),
]


def run_native(
    nvim: Path, workspace: SampleWorkspace, tmp: Path, **extra: str
) -> tuple[int, dict[str, Any]]:
    require(nvim, "Neovim")
    from memory_core import __version__

    result_file = tmp / "native.json"
    env = clean_env(tmp)
    env.update(
        {
            "E2E_REPO": str(REPO),
            "E2E_FILE": str(workspace.app),
            "E2E_RESULT": str(result_file),
            "E2E_VERSION": __version__,
            "E2E_STORE": str(workspace.root / ".engram"),
            **extra,
        }
    )
    if extra.get("E2E_MODE") == "missing":
        env["PATH"] = "/usr/bin:/bin"  # no engram, and a python3 without lsp_server
    completed = subprocess.run(
        [str(nvim), "--headless", "-u", "NONE", "-i", "NONE", "-n", "-c", f"luafile {NATIVE}"],
        cwd=workspace.root,
        env=env,
        capture_output=True,
        text=True,
        timeout=90,
        stdin=subprocess.DEVNULL,
    )
    result: dict[str, Any] = json.loads(result_file.read_text()) if result_file.exists() else {}
    result["exit_code"] = completed.returncode
    result["stderr"] = completed.stderr[-3000:]
    return completed.returncode, result


@pytest.mark.parametrize(("nvim", "version"), NVIMS)
def test_enable_checkhealth_and_help(
    nvim: Path, version: str, sample_workspace: SampleWorkspace, tmp_path: Path
) -> None:
    code, result = run_native(nvim, sample_workspace, tmp_path)
    write_output(f"neovim-{version}-native.json", result)
    assert code == 0 and "failed" not in result, result
    assert result["how"] == ("vim.lsp.enable" if version == "0.11" else "setup")
    assert "attached to this buffer" in result["health"]
    assert result["help"].endswith("doc/engram.txt")


@pytest.mark.parametrize(("nvim", "version"), NVIMS)
def test_a_missing_engram_command_is_said_once_in_words(
    nvim: Path, version: str, sample_workspace: SampleWorkspace, tmp_path: Path
) -> None:
    code, result = run_native(nvim, sample_workspace, tmp_path, E2E_MODE="missing")
    write_output(f"neovim-{version}-missing.json", result)
    assert code == 0 and "failed" not in result, result
    (message,) = result["messages"]
    assert "pipx install engram" in message


def test_negative_control_health_of_a_wrong_store_fails(
    sample_workspace: SampleWorkspace, tmp_path: Path
) -> None:
    code, result = run_native(
        NVIM_PIP, sample_workspace, tmp_path, E2E_STORE=str(tmp_path / "elsewhere" / ".engram")
    )
    assert code != 0 and result.get("failed") == "checkhealth", result
