"""The VSIX brings its server: a fresh code-server with nothing but the .vsix and the system's
Python 3.11 (no `engram` on PATH, no virtual environment, no engram.server.command) shows the
gotcha squiggle and its hover. The negative control removes the bundled libraries from the
installed extension and asserts that the squiggle never comes.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.code_server import QUIET_SETTINGS, code_server
from tests.e2e.conftest import (
    CHROMIUM,
    CLIENT_DIR,
    CODE_SERVER,
    E2E_DIR,
    GOTCHA_WORKAROUND,
    OUTPUT,
    VSIX,
    SampleWorkspace,
    require,
    run,
    write_output,
)

pytestmark = pytest.mark.e2e

SCENARIO = E2E_DIR / "vscode" / "bundled.mjs"
SYSTEM_PYTHON = Path("/usr/bin/python3")
# Only the system's own folders: the repository's .venv (and its engram) must be out of sight.
SYSTEM_PATH = "/usr/local/sbin:/usr/sbin:/usr/bin:/sbin:/bin"


def fresh_env(tmp: Path) -> dict[str, str]:
    home = tmp / "home"
    home.mkdir(exist_ok=True)
    env = {"PATH": SYSTEM_PATH, "HOME": str(home), "LANG": "C.UTF-8"}
    for name in ("XDG_CONFIG_HOME", "XDG_DATA_HOME", "XDG_STATE_HOME", "XDG_CACHE_HOME"):
        folder = tmp / name.lower()
        folder.mkdir(exist_ok=True)
        env[name] = str(folder)
    return env


def check_bundle(extension: Path, *, strip: bool) -> None:
    assert (extension / "bundled" / "libs" / "common" / "lsp_server").is_dir()
    if strip:
        shutil.rmtree(extension / "bundled")


def run_bundled(
    workspace: SampleWorkspace, tmp: Path, name: str, *, strip_bundle: bool, timeout_ms: int
) -> dict[str, Any]:
    for path, what in (
        (CODE_SERVER, "code-server"),
        (CHROMIUM, "Chromium"),
        (VSIX, "the engram .vsix"),
        (SYSTEM_PYTHON, "the system's python3"),
    ):
        require(path, what)
    shots = OUTPUT / name
    shots.mkdir(parents=True, exist_ok=True)
    for old in shots.glob("*.png"):
        old.unlink()
    result_file = tmp / "result.json"
    with code_server(
        workspace.root,
        tmp,
        settings=QUIET_SETTINGS,
        env=fresh_env(tmp),
        prepare=lambda extension: check_bundle(extension, strip=strip_bundle),
    ) as url:
        env = {
            **fresh_env(tmp),
            "E2E_URL": url,
            "E2E_CLIENT_DIR": str(CLIENT_DIR),
            "E2E_CHROMIUM": str(CHROMIUM),
            "E2E_WORKSPACE": str(workspace.root),
            "E2E_FILE_NAME": workspace.app.name,
            "E2E_FILE_TEXT": "def load_customers",
            "E2E_TOKEN": "read_csv",
            "E2E_WORKAROUND": GOTCHA_WORKAROUND,
            "E2E_RESULT": str(result_file),
            "E2E_SHOTS": str(shots),
            "E2E_TIMEOUT_MS": str(timeout_ms),
        }
        completed = run(["node", str(SCENARIO)], env=env, timeout=240, cwd=tmp)
    result: dict[str, Any] = json.loads(result_file.read_text()) if result_file.exists() else {}
    result["exit_code"] = completed.returncode
    result["stderr"] = completed.stderr[-3000:]
    channels = sorted((tmp / "user-data" / "logs").glob("*/exthost*/output_logging_*/*engram*.log"))
    result["engram_output"] = channels[-1].read_text(errors="replace")[-6000:] if channels else ""
    write_output(f"{name}.json", result)
    return result


def test_the_vsix_alone_with_a_system_python_shows_the_gotcha(
    sample_workspace: SampleWorkspace, tmp_path: Path
) -> None:
    result = run_bundled(
        sample_workspace, tmp_path, "vscode-bundled", strip_bundle=False, timeout_ms=60000
    )
    assert result.get("ok"), f"failed at {result.get('failed')}: {result}"
    assert "squiggly-" in str(result["steps"][2]["detail"])
    assert GOTCHA_WORKAROUND in result["hover"]
    # The server that answered is the one inside the extension, run by the system's Python.
    assert "the bundled server" in result["engram_output"], result["engram_output"]
    assert (OUTPUT / "vscode-bundled" / "bundled-hover.png").stat().st_size > 10_000


def test_negative_control_without_the_bundle_no_squiggle(
    sample_workspace: SampleWorkspace, tmp_path: Path
) -> None:
    result = run_bundled(
        sample_workspace, tmp_path, "vscode-bundled-negative", strip_bundle=True, timeout_ms=15000
    )
    assert not result.get("ok"), "a squiggle without the bundled server: the test cannot tell"
    assert result.get("failed") == "squiggle", result
