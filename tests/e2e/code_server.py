"""A real code-server with the engram .vsix installed, for the VS Code end-to-end tests."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import time
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from tests.e2e.conftest import CODE_SERVER, VSIX, run

# Quiet, deterministic VS Code: no welcome page, trust prompt, tips or update checks.
QUIET_SETTINGS: dict[str, Any] = {
    "workbench.startupEditor": "none",
    "workbench.tips.enabled": False,
    "workbench.enableExperiments": False,
    "workbench.welcomePage.walkthroughs.openOnInstall": False,
    "security.workspace.trust.enabled": False,
    "telemetry.telemetryLevel": "off",
    "extensions.autoCheckUpdates": False,
    "extensions.autoUpdate": False,
    "update.mode": "none",
    "window.restoreWindows": "none",
    "editor.hover.delay": 200,
    "files.autoSave": "off",
    "git.enabled": False,
}


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextlib.contextmanager
def code_server(
    workspace: Path,
    tmp: Path,
    *,
    settings: dict[str, Any],
    env: dict[str, str],
    prepare: Callable[[Path], None] | None = None,
    machine_settings: dict[str, Any] | None = None,
) -> Iterator[str]:
    """Serve `workspace` with fresh user data holding `settings` (the User settings) and
    `machine_settings` (the Remote settings of the machine code-server runs on); yields the URL.

    `prepare(extension_folder)` runs after the .vsix is installed, before code-server starts.
    """
    user_data = tmp / "user-data"
    extensions = tmp / "extensions"
    (user_data / "User").mkdir(parents=True)
    (user_data / "User" / "settings.json").write_text(json.dumps(settings, indent=2))
    if machine_settings is not None:
        (user_data / "Machine").mkdir(parents=True)
        (user_data / "Machine" / "settings.json").write_text(json.dumps(machine_settings, indent=2))
    installed = run(
        [
            *(str(CODE_SERVER), "--extensions-dir", str(extensions)),
            *("--user-data-dir", str(user_data), "--install-extension", str(VSIX)),
        ],
        env=env,
        timeout=120,
    )
    assert installed.returncode == 0, installed.stderr + installed.stdout
    (extension,) = [p for p in extensions.iterdir() if p.name.startswith("engram.engram-")]
    if prepare is not None:
        prepare(extension)
    port = _free_port()
    log_path = tmp / "code-server.log"
    log = log_path.open("w")
    process = subprocess.Popen(
        [
            *(str(CODE_SERVER), "--bind-addr", f"127.0.0.1:{port}", "--auth", "none"),
            *("--disable-telemetry", "--disable-update-check", "--disable-workspace-trust"),
            # engram's entries in VS Code's Timeline panel use the Timeline API proposal.
            *("--enable-proposed-api", "engram.engram"),
            *("--user-data-dir", str(user_data), "--extensions-dir", str(extensions)),
            str(workspace),
        ],
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            with contextlib.suppress(OSError), urllib.request.urlopen(f"{url}/healthz") as answer:
                if answer.status == 200:
                    break
            assert process.poll() is None, log_path.read_text()[-3000:]
            assert time.monotonic() < deadline, "code-server did not answer /healthz within 60 s"
            time.sleep(0.2)
        yield url
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
        log.close()
