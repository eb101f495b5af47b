"""The README's main job in real Neovim (0.7.2 and 0.11): three errors tracked with
`engram error track` make a candidate gotcha, which Neovim then shows as a diagnostic on the
line the traceback pointed at, with a hover telling its story and a Confirm action."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from tests.conftest import run_cli
from tests.e2e.conftest import (
    E2E_DIR,
    NVIM_DEBIAN,
    NVIM_PIP,
    REPO,
    clean_env,
    real_server_command,
    require,
)

pytestmark = pytest.mark.e2e

APP = 'import json\n\n\ndef load(path):\n    return json.loads(open(path).read())["items"]\n'


@pytest.mark.parametrize(
    ("nvim", "version"), [(NVIM_DEBIAN, "0.7"), (NVIM_PIP, "0.11")], ids=["nvim-0.7", "nvim-0.11"]
)
def test_three_tracked_errors_become_a_diagnostic_and_a_hover(
    nvim: Path, version: str, tmp_path: Path
) -> None:
    require(nvim, f"Neovim {version}")
    root = (tmp_path / "shop").resolve()
    root.mkdir()
    app = root / "app.py"
    app.write_text(APP)
    outcomes = []
    for attempt, cache in ((1, "/tmp/run-a1"), (2, "/tmp/run-b7"), (3, "/var/tmp/run-c9")):
        message = (
            "Traceback (most recent call last):\n"
            f'  File "{app}", line 5, in load\n'
            f"KeyError: 'items' (attempt {attempt}, cache {cache}/state.json)"
        )
        outcomes.append(run_cli("error", "track", message, "--json", cwd=root).json())
    assert [o["created"] for o in outcomes] == [False, False, True]
    gotcha_id = outcomes[2]["gotcha_id"]

    result_file = tmp_path / "result.json"
    env = clean_env(tmp_path)
    env.update(
        E2E_REPO=str(REPO),
        E2E_FILE=str(app),
        E2E_GOTCHA=gotcha_id,
        E2E_RESULT=str(result_file),
        E2E_CMD=json.dumps(real_server_command()),
        E2E_TIMEOUT_MS="20000",
    )
    completed = subprocess.run(
        [
            str(nvim),
            "--headless",
            "-u",
            "NONE",
            "-i",
            "NONE",
            "-n",
            "-c",
            f"luafile {E2E_DIR / 'nvim' / 'learned_gotcha.lua'}",
        ],
        cwd=root,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        stdin=subprocess.DEVNULL,
    )
    result = json.loads(result_file.read_text()) if result_file.exists() else {}
    assert completed.returncode == 0 and result.get("ok"), (
        f"{result.get('failed')}\n{completed.stderr[-2000:]}"
    )
    assert result["diagnostic"]["line"] == 5
    assert result["diagnostic"]["severity"] == 4  # a medium candidate shows as a Hint
    assert "KeyError: 'items'" in result["diagnostic"]["message"]
    hover = result["hover"]
    assert gotcha_id in hover and "candidate" in hover and "occurrences: 3" in hover
    assert any(title.startswith("Confirm gotcha") for title in result["code_actions"])
