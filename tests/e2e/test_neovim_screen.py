"""Neovim as a person sees it: the real terminal UI in tmux, not the headless API.

A user config (init.lua) that only does `require("engram").setup{}` opens the sample file;
the screen must show the gotcha's diagnostic as virtual text on its line, and the hover float
(`vim.lsp.buf.hover()`) must show the workaround. The screen is saved as text in
test-output/e2e/. The negative control runs the same against a server without diagnostics and
asserts that the virtual text never appears.
"""

from __future__ import annotations

import contextlib
import json
import shutil
import subprocess
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.e2e.conftest import (
    APP_PY,
    GOTCHA_LINE,
    GOTCHA_TITLE,
    NVIM_DEBIAN,
    NVIM_PIP,
    OUTPUT,
    REPO,
    SampleWorkspace,
    broken_server_command,
    clean_env,
    real_server_command,
    require,
)

pytestmark = pytest.mark.e2e

INIT_LUA = """
vim.opt.runtimepath:prepend({repo})
vim.cmd("filetype plugin indent on")
vim.cmd("syntax on")
vim.diagnostic.config({{ virtual_text = true }})
require("engram").setup({{ cmd = vim.fn.json_decode({cmd}) }})
"""


@contextlib.contextmanager
def tmux_nvim(
    nvim: Path, workspace: SampleWorkspace, server: list[str], tmp: Path
) -> Iterator[Callable[..., str]]:
    """Neovim in a detached tmux session of its own; yields `screen(*keys)`."""
    tmux = shutil.which("tmux")
    if tmux is None:
        require(Path("/usr/bin/tmux"), "tmux")
    init = tmp / "init.lua"
    init.write_text(
        INIT_LUA.format(
            repo=json.dumps(str(REPO / "editors" / "nvim")), cmd=json.dumps(json.dumps(server))
        )
    )
    socket = f"engram-e2e-{uuid.uuid4().hex[:8]}"
    env = clean_env(tmp)
    env["TERM"] = "xterm-256color"
    base = [str(tmux), "-L", socket]
    subprocess.run(
        [
            *base,
            "new-session",
            "-d",
            "-x",
            "110",
            "-y",
            "30",
            "-s",
            "e2e",
            f"{nvim} -u {init} -i NONE -n {workspace.app.name}",
        ],
        cwd=workspace.root,
        env=env,
        check=True,
    )

    def screen(*keys: str) -> str:
        if keys:
            subprocess.run([*base, "send-keys", "-t", "e2e", *keys], check=True)
        return subprocess.run(
            [*base, "capture-pane", "-p", "-t", "e2e"], capture_output=True, text=True, check=True
        ).stdout

    try:
        yield screen
    finally:
        subprocess.run([*base, "kill-server"], check=False, capture_output=True)


def wait_for_screen(screen: Callable[..., str], text: str, seconds: float) -> tuple[bool, str]:
    deadline = time.monotonic() + seconds
    shown = screen()
    while text not in shown and time.monotonic() < deadline:
        time.sleep(0.2)
        shown = screen()
    return text in shown, shown


@pytest.mark.parametrize(
    ("nvim", "version"), [(NVIM_DEBIAN, "0.7"), (NVIM_PIP, "0.11")], ids=["nvim-0.7", "nvim-0.11"]
)
def test_screen_shows_the_gotcha_and_its_hover(
    nvim: Path, version: str, sample_workspace: SampleWorkspace, tmp_path: Path
) -> None:
    require(nvim, f"Neovim {version}")
    with tmux_nvim(nvim, sample_workspace, real_server_command(), tmp_path) as screen:
        shown_virtual, with_diagnostic = wait_for_screen(screen, GOTCHA_TITLE[:30], 30)
        column = APP_PY.splitlines()[GOTCHA_LINE - 1].index("read_csv") + 2
        screen(f":call cursor({GOTCHA_LINE}, {column})", "Enter")
        screen(":lua vim.lsp.buf.hover()", "Enter")
        shown_hover, with_hover = wait_for_screen(screen, "pass dtype=str", 15)
    OUTPUT.mkdir(parents=True, exist_ok=True)
    (OUTPUT / f"neovim-{version}-screen.txt").write_text(
        f"--- diagnostic ---\n{with_diagnostic}\n--- hover ---\n{with_hover}", encoding="utf-8"
    )
    assert shown_virtual, f"no gotcha on screen:\n{with_diagnostic}"
    row = next(line for line in with_diagnostic.splitlines() if GOTCHA_TITLE[:30] in line)
    assert "read_csv(path)" in row, f"the gotcha is not on the read_csv line:\n{with_diagnostic}"
    assert shown_hover, f"no hover with the workaround:\n{with_hover}"
    # The hover adds to the diagnostic (whose title is the virtual text on that line).
    assert "engram gotcha" in with_hover


def test_negative_control_no_diagnostics_no_virtual_text(
    sample_workspace: SampleWorkspace, tmp_path: Path
) -> None:
    require(NVIM_PIP, "Neovim 0.11")
    with tmux_nvim(
        NVIM_PIP, sample_workspace, broken_server_command("no-diagnostics"), tmp_path
    ) as screen:
        # The file is on screen (the editor works) but the gotcha never shows.
        opened, _ = wait_for_screen(screen, "def load_customers", 15)
        shown, text = wait_for_screen(screen, GOTCHA_TITLE[:30], 6)
    assert opened
    assert not shown, f"the gotcha showed without a diagnostics provider:\n{text}"
