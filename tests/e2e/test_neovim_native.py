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
    real_server_command,
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
    nvim: Path, workspace: SampleWorkspace, tmp: Path, cwd: Path | None = None, **extra: str
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
    if extra.get("E2E_MODE") in ("missing", "broken", "venv"):
        env["PATH"] = "/usr/bin:/bin"  # no engram, and a python3 without lsp_server
    second = workspace.root / "lib" / "second.py"
    second.parent.mkdir(exist_ok=True)
    second.write_text("x = 1\n", encoding="utf-8")
    env["E2E_SECOND_FILE"] = str(second)
    completed = subprocess.run(
        [str(nvim), "--headless", "-u", "NONE", "-i", "NONE", "-n", "-c", f"luafile {NATIVE}"],
        cwd=cwd or workspace.root,
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
    assert message == "engram: `engram` not found: pipx install engram-lsp (:help engram-setup)"
    assert "Error detected" not in result["stderr"]


@pytest.mark.parametrize(("nvim", "version"), NVIMS)
def test_an_engram_that_exits_at_start_is_said_once(
    nvim: Path, version: str, sample_workspace: SampleWorkspace, tmp_path: Path
) -> None:
    broken = sample_workspace.root / ".venv" / "bin" / "engram"
    broken.parent.mkdir(parents=True)
    broken.write_text("#!/bin/sh\necho 'ImportError: no module named lsp_server' >&2\nexit 1\n")
    broken.chmod(0o755)
    code, result = run_native(nvim, sample_workspace, tmp_path, E2E_MODE="broken")
    write_output(f"neovim-{version}-broken.json", result)
    assert code == 0 and "failed" not in result, result
    ours = [m for m in result["messages"] if m.startswith("engram: ")]
    assert ours == ["engram: the server stopped at start (exit code 1): see :checkhealth engram"]


@pytest.mark.parametrize(("nvim", "version"), NVIMS)
def test_the_projects_venv_is_found_from_the_file_not_the_current_directory(
    nvim: Path, version: str, sample_workspace: SampleWorkspace, tmp_path: Path
) -> None:
    """No engram on PATH; the project's .venv/bin/engram; Neovim started in another folder."""
    venv_engram = sample_workspace.root / ".venv" / "bin" / "engram"
    venv_engram.parent.mkdir(parents=True)
    venv_engram.symlink_to(Path(real_server_command()[0]))
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    code, result = run_native(nvim, sample_workspace, tmp_path, cwd=elsewhere, E2E_MODE="venv")
    write_output(f"neovim-{version}-venv.json", result)
    assert code == 0 and "failed" not in result, result
    assert "attached to this buffer" in result["health"]


def test_negative_control_health_of_a_wrong_store_fails(
    sample_workspace: SampleWorkspace, tmp_path: Path
) -> None:
    code, result = run_native(
        NVIM_PIP, sample_workspace, tmp_path, E2E_STORE=str(tmp_path / "elsewhere" / ".engram")
    )
    assert code != 0 and result.get("failed") == "checkhealth", result
