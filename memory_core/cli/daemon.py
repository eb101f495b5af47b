"""`engram daemon status|start|stop`: the resident fork server of this installation
(memory_core/resident.py, docs/resident.md)."""

from __future__ import annotations

import argparse
import contextlib
import os
import time
from typing import Any

from memory_core import resident
from memory_core.cli.context import Context

# How long `start` waits for a new server to listen, and `stop` for one to let go of its lock.
WAIT_SECONDS = 15.0


def register(sub: Any, common: argparse.ArgumentParser) -> None:
    daemon = sub.add_parser(
        "daemon",
        parents=[common],
        help="the resident server that runs hooks and checkpoints without Python's start",
    )
    d_sub = daemon.add_subparsers(dest="daemon_command", metavar="ACTION")
    d_sub.required = True
    status = d_sub.add_parser("status", parents=[common], help="whether it runs, where, since when")
    status.set_defaults(handler=run_status)
    start = d_sub.add_parser("start", parents=[common], help="start it now (it also starts itself)")
    start.set_defaults(handler=run_start)
    stop = d_sub.add_parser("stop", parents=[common], help="stop it (the next command starts one)")
    stop.set_defaults(handler=run_stop)


def _server() -> dict[str, Any]:
    """What is known of this installation's server: its files, and the pid and start time it
    wrote in its lock file while it holds the lock."""
    import fcntl

    folder = resident.runtime_dir()
    digest = resident.key_digest(resident.installation_key())
    socket_path, lock_path, _ = resident.paths(folder, digest)
    info: dict[str, Any] = {
        "running": False,
        "enabled": not resident.off(),
        "folder": folder,
        "socket": socket_path,
        "log": os.path.join(folder, digest + ".log"),
        "pid": None,
        "started_at": None,
        "idle_exit_seconds": None,
        "requests": 0,
    }
    try:
        fd = os.open(lock_path, os.O_RDONLY)
    except OSError:
        return info
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except OSError:
            info["running"] = True  # the server holds the lock for as long as it lives
        else:
            return info
        lines = os.read(fd, 4096).decode("utf-8", "replace").split("\n")
        if lines[0].isdigit():
            info["pid"] = int(lines[0])
        if len(lines) >= 3 and lines[0].isdigit():
            info["started_at"] = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(float(lines[1])))
            info["idle_exit_seconds"] = float(lines[2])
        if len(lines) >= 4 and lines[3].strip().isdigit():
            info["requests"] = int(lines[3])
        info["listening"] = os.path.exists(socket_path)
        return info
    finally:
        os.close(fd)


def _describe(info: dict[str, Any]) -> str:
    if not info["enabled"]:
        head = f"off ({resident.OFF_SWITCH} is set): every command runs in its own process"
    elif info["running"]:
        head = (
            f"running: pid {info['pid']}, since {info['started_at']}, "
            f"{info['requests']} requests, exits after {info['idle_exit_seconds']:g} s without one"
        )
    else:
        head = "not running (the next hook or checkpoint starts it)"
    return f"{head}\n  socket {info['socket']}\n  log    {info['log']}"


def run_status(ctx: Context) -> int:
    info = _server()
    ctx.emit(info, lambda: _describe(info))
    return 0


def run_start(ctx: Context) -> int:
    import subprocess
    import sys

    info = _server()
    if not info["running"]:
        folder = info["folder"]
        os.makedirs(folder, mode=0o700, exist_ok=True)
        if not resident.private_dir_ok(folder):
            from memory_core.errors import UsageError

            raise UsageError(
                f"{folder} is not a private folder of this user (mode 0700, not a symlink)",
                hint=f"remove it, or point {resident.DIR_VARIABLE} at another folder",
            )
        digest = resident.key_digest(resident.installation_key())
        subprocess.Popen(
            [sys.executable, "-c", resident.SERVER_BOOT, folder, digest],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )
        deadline = time.monotonic() + WAIT_SECONDS
        while time.monotonic() < deadline and not (info := _server()).get("listening"):
            time.sleep(0.02)
    ctx.emit(info, lambda: _describe(info))
    return 0 if info["running"] else 1


def run_stop(ctx: Context) -> int:
    import signal

    info = _server()
    stopped = False
    if info["running"] and info["pid"]:
        with contextlib.suppress(ProcessLookupError):
            os.kill(info["pid"], signal.SIGTERM)
        deadline = time.monotonic() + WAIT_SECONDS
        while time.monotonic() < deadline and _server()["running"]:
            time.sleep(0.02)
        stopped = not _server()["running"]
    result = {**info, "stopped": stopped, "running": _server()["running"]}
    ctx.emit(
        result,
        lambda: (
            f"stopped (pid {info['pid']})"
            if stopped
            else "no server was running"
            if not info["running"]
            else f"could not stop pid {info['pid']}"
        ),
    )
    return 0 if not result["running"] else 1
