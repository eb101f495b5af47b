"""A wheel built from the repository installs with `uv tool install` into a fresh environment and
gives a working `engram` under the distribution's own name (engram-lsp)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
UV = Path(sys.executable).parent / "uv"

pytestmark = pytest.mark.slow


def run(cmd: list[str], cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=600)


def test_uv_tool_install_of_the_built_wheel_gives_a_working_engram(tmp_path: Path) -> None:
    if not UV.exists():
        pytest.fail(f"uv not found at {UV}: run scripts/bootstrap.sh")
    env = {
        "PATH": f"{tmp_path / 'bin'}{os.pathsep}/usr/bin:/bin",
        "HOME": str(tmp_path / "home"),
        "UV_TOOL_DIR": str(tmp_path / "tools"),
        "UV_TOOL_BIN_DIR": str(tmp_path / "bin"),
        "UV_CACHE_DIR": str(tmp_path / "uv-cache"),
        "UV_PYTHON_DOWNLOADS": "never",
        "ENGRAM_NO_RESIDENT": "1",  # no resident server left behind (docs/resident.md)
        "ENGRAM_NO_HOOK_FORK": "1",  # a hook records before it exits (docs/resident.md)
        # The machine's way to the package index (a proxy, its certificates) is kept.
        **{
            key: value
            for key, value in os.environ.items()
            if "PROXY" in key.upper() or key.startswith(("SSL_CERT_", "PIP_", "UV_INDEX"))
        },
    }
    certificates = Path("/etc/ssl/certs/ca-certificates.crt")
    if certificates.exists():
        env.setdefault("SSL_CERT_FILE", str(certificates))
    # Copy the sources: a build must not depend on (or leave) anything in the checkout.
    source = tmp_path / "src"
    shutil.copytree(
        REPO,
        source,
        ignore=shutil.ignore_patterns(
            ".git", ".venv", "node_modules", "test-output", "client-vscode", "*.egg-info", "build"
        ),
    )
    built = run([str(UV), "build", "--wheel", "--out-dir", str(tmp_path / "dist")], source, env)
    assert built.returncode == 0, built.stderr
    (wheel,) = (tmp_path / "dist").glob("*.whl")
    assert wheel.name.startswith("engram_lsp-"), wheel.name
    with zipfile.ZipFile(wheel) as archive:
        names = archive.namelist()
        metadata = archive.read(next(n for n in names if n.endswith(".dist-info/METADATA")))
    assert b"Name: engram-lsp" in metadata and b"License-Expression: MIT" in metadata
    assert any(n.endswith(".dist-info/licenses/LICENSE") for n in names), names[-5:]
    assert any(n.startswith("memory_core/migrations/") and n.endswith(".sql") for n in names)

    installed = run(
        [str(UV), "tool", "install", "--python", sys.executable, str(wheel)], tmp_path, env
    )
    assert installed.returncode == 0, installed.stderr
    engram = tmp_path / "bin" / "engram"
    assert engram.exists(), installed.stderr

    project = tmp_path / "project"
    project.mkdir()
    subprocess.run(["git", "init", "-q", str(project)], check=True)
    assert run([str(engram), "--version"], project, env).stdout.startswith("engram ")
    initialised = run([str(engram), "init"], project, env)
    assert initialised.returncode == 0, initialised.stderr
    added = run(
        [str(engram), "memory", "add", "Use uv, not pip", "--type", "decision"], project, env
    )
    assert added.returncode == 0, added.stderr
    found = run([str(engram), "memory", "search", "uv", "--json"], project, env)
    assert found.returncode == 0 and "Use uv, not pip" in found.stdout, found.stderr
    # The language server and the MCP server import from the installed wheel too.
    for module in ("lsp_server.setup", "memory_core.mcp_server"):
        tool_python = next((tmp_path / "tools").glob("*/bin/python"))
        imported = run([str(tool_python), "-c", f"import {module}"], project, env)
        assert imported.returncode == 0, imported.stderr
