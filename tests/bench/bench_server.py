"""The language server's start (issue 32): `initialize` within 4x `python -c pass`, and the first
diagnostics as soon as the store is open, on a 50,000-file workspace.

Real processes over stdio, as an editor starts them, each round alternating:

- `python -c pass`, the floor, and `python -c "import pygls.lsp.server"`: what any start that
  answers through pygls waits for at least (pygls imports lsprotocol's types at module load);
- `engram lsp` (what the editors run) and `python -m lsp_server`: the stdio front answers
  `initialize` while pygls and the features load behind it (lsp_server/front.py);
- `engram lsp` with the front's early diagnostics off: the first squiggle waits for the whole
  server (how it was before lsp_server/early.py);
- the same server without its front, as it started before issue 32: everything imported, then
  pygls reads stdin and answers `initialize` (the peer);
- a python process that opens the store and reads its gotchas with memory_core only: the floor
  of "the first diagnostics as soon as the store is open".

The client sends `initialize` at once with Neovim 0.11's recorded capabilities (diagnostics
pushed), then `initialized` and a `didOpen` of a file holding the one gotcha in the store, and
answers the server's requests (`workspace/configuration`) as an editor does. Measured from the
spawn: the `initialize` answer, and the first `publishDiagnostics` of that file with the gotcha.

Bytecode is compiled first and the measured processes run without PYTHONDONTWRITEBYTECODE (set
on the development machine): a user's install has its bytecode, and without it every start
would compile pygls and lsprotocol again.
"""

from __future__ import annotations

import json
import os
import select
import shutil
import subprocess
import sys
import sysconfig
import tempfile
import time
from pathlib import Path
from typing import Any

from lsp_server.early import ENABLE_ENV
from tests.bench.harness import Figure, summarize

RUNS = 10
# `engram lsp` with the front's early diagnostics off (lsp_server/early.py): the squiggle
# waits for the whole server, as before they were added.
EARLY_OFF = "engram lsp, early diagnostics off"
STORE_FLOOR = (
    "from pathlib import Path\n"
    "from memory_core.store import Store\n"
    "from memory_core.gotchas import records\n"
    "store = Store.open(Path({root!r}))\n"
    "records.list_gotchas(store, include_resolved=True)\n"
    "store.close()\n"
)
WORKSPACE_FILES = 50_000
REPO = Path(__file__).resolve().parents[2]
GOTCHA_PATTERN = "legacy_call("

# The server as it started before the front: pygls answers `initialize` once everything is in.
WITHOUT_FRONT = [
    sys.executable,
    "-c",
    "import gc, logging, sys\n"
    "logging.getLogger('pygls').setLevel(logging.WARNING)\n"
    "logging.basicConfig(stream=sys.stderr, level=logging.INFO)\n"
    "from lsp_server.setup import create_server\n"
    "server = create_server()\n"
    "gc.freeze()\n"
    "server.start_io()\n",
]


def _frame(message: dict[str, Any]) -> bytes:
    body = json.dumps(message).encode()
    return b"Content-Length: %d\r\n\r\n" % len(body) + body


class _Reader:
    def __init__(self, fd: int) -> None:
        self.fd = fd
        self.buffer = b""

    def next(self, deadline: float) -> dict[str, Any]:
        while True:
            end = self.buffer.find(b"\r\n\r\n")
            if end >= 0:
                headers = self.buffer[:end].decode().lower().split("\r\n")
                length = int(
                    next(h for h in headers if h.startswith("content-length")).split(":")[1]
                )
                if len(self.buffer) >= end + 4 + length:
                    body = self.buffer[end + 4 : end + 4 + length]
                    self.buffer = self.buffer[end + 4 + length :]
                    message: dict[str, Any] = json.loads(body)
                    return message
            ready, _, _ = select.select([self.fd], [], [], max(0.0, deadline - time.monotonic()))
            if not ready:
                raise TimeoutError("the server said nothing for 60 s")
            data = os.read(self.fd, 65536)
            if not data:
                raise EOFError("the server closed its output")
            self.buffer += data


def _client_capabilities() -> dict[str, Any]:
    import pytest_lsp

    recorded = Path(pytest_lsp.__file__).parent / "clients" / "neovim_v0.11.0.json"
    capabilities: dict[str, Any] = json.loads(recorded.read_text())["capabilities"]
    return capabilities


def _start_once(
    command: list[str], folder: Path, env: dict[str, str], log: Path
) -> tuple[float, float]:
    """(ms to the `initialize` answer, ms to the first diagnostics with the gotcha)."""
    document = folder / "app.py"
    with open(log, "ab") as stderr:
        start = time.perf_counter()
        process = subprocess.Popen(
            command,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=stderr,
            cwd=folder,
            env=env,
        )
    assert process.stdin is not None and process.stdout is not None
    send = process.stdin.fileno()
    uri = folder.as_uri()
    os.write(
        send,
        _frame(
            {
                "jsonrpc": "2.0",
                "id": 1,
                "method": "initialize",
                "params": {
                    "processId": os.getpid(),
                    "clientInfo": {"name": "Neovim", "version": "0.11.0"},
                    "rootUri": uri,
                    "capabilities": _client_capabilities(),
                    "workspaceFolders": [{"uri": uri, "name": folder.name}],
                },
            }
        ),
    )
    reader = _Reader(process.stdout.fileno())
    deadline = time.monotonic() + 60
    try:
        while True:
            message = reader.next(deadline)
            if message.get("id") == 1 and "method" not in message:
                break
        initialized = (time.perf_counter() - start) * 1000
        os.write(
            send,
            _frame({"jsonrpc": "2.0", "method": "initialized", "params": {}})
            + _frame(
                {
                    "jsonrpc": "2.0",
                    "method": "textDocument/didOpen",
                    "params": {
                        "textDocument": {
                            "uri": document.as_uri(),
                            "languageId": "python",
                            "version": 1,
                            "text": document.read_text(),
                        }
                    },
                }
            ),
        )
        while True:
            message = reader.next(deadline)
            if "method" in message and "id" in message:
                items = message.get("params", {}).get("items", [])
                answer = (
                    [None] * len(items) if message["method"] == "workspace/configuration" else None
                )
                os.write(send, _frame({"jsonrpc": "2.0", "id": message["id"], "result": answer}))
            elif (
                message.get("method") == "textDocument/publishDiagnostics"
                and message["params"]["uri"] == document.as_uri()
                and message["params"]["diagnostics"]
            ):
                break
        diagnosed = (time.perf_counter() - start) * 1000
        os.write(send, _frame({"jsonrpc": "2.0", "id": 2, "method": "shutdown"}))
        while reader.next(deadline).get("id") != 2:
            pass
        os.write(send, _frame({"jsonrpc": "2.0", "method": "exit"}))
        process.wait(timeout=30)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
        process.stdin.close()
        process.stdout.close()
    return initialized, diagnosed


def _python_ms(env: dict[str, str], code: str) -> float:
    start = time.perf_counter()
    subprocess.run([sys.executable, "-c", code], check=True, env=env)
    return (time.perf_counter() - start) * 1000


def _make_workspace(root: Path) -> None:
    """50,000 small Python files in a git repository with one commit, a store holding one
    pattern gotcha, and app.py calling what the gotcha warns about."""
    from memory_core import clock
    from memory_core.gotchas import records
    from memory_core.gotchas.records import Gotcha
    from memory_core.store import Store
    from tests.bench.bench_checkpoints import _generate, _paths

    paths = _paths()
    assert len(paths) == WORKSPACE_FILES
    _generate(root, paths)
    (root / "app.py").write_text(f"import os\n\nresult = {GOTCHA_PATTERN}os.getcwd())\n")
    git = {**os.environ, "GIT_AUTHOR_NAME": "bench", "GIT_AUTHOR_EMAIL": "bench@example.com"}
    git |= {"GIT_COMMITTER_NAME": "bench", "GIT_COMMITTER_EMAIL": "bench@example.com"}
    for args in (["init", "-q"], ["add", "-A"], ["commit", "-q", "-m", "workspace"]):
        subprocess.run(["git", *args], cwd=root, env=git, check=True)
    now = clock.now()
    with Store.init(root) as store, store.transaction() as db:
        records.insert(
            db,
            Gotcha(
                id="G-00000001",
                title="legacy_call leaks a handle",
                severity="high",
                code_pattern=GOTCHA_PATTERN,
                pattern_kind="literal",
                created_at=now,
                updated_at=now,
                workaround="call new_call instead",
                description="Found in review.",
            ),
        )


def _compile_bytecode(env: dict[str, str]) -> None:
    """What an install does (pip compiles what it installs): bytecode for the interpreter's
    packages and engram's own."""
    targets = [
        sysconfig.get_paths()["purelib"],
        str(REPO / "lsp_server"),
        str(REPO / "memory_core"),
    ]
    subprocess.run(
        [sys.executable, "-m", "compileall", "-q", "-j0", *targets],
        env=env,
        check=True,
        stdout=subprocess.DEVNULL,
    )


def _load_average() -> str:
    return f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs"


def run() -> list[Figure]:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    _compile_bytecode(env)
    engram = shutil.which("engram", path=str(Path(sys.executable).parent))
    commands = {
        "engram lsp": [engram or "engram", "lsp"],
        "python -m lsp_server": [sys.executable, "-m", "lsp_server"],
        EARLY_OFF: [engram or "engram", "lsp"],
        "without the front": WITHOUT_FRONT,
    }
    envs = {name: env for name in commands}
    envs[EARLY_OFF] = {**env, ENABLE_ENV: "0"}
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "ws"
        root.mkdir()
        made = time.perf_counter()
        _make_workspace(root)
        made_s = time.perf_counter() - made
        log = Path(tmp) / "server.log"
        floor: list[float] = []
        pygls_import: list[float] = []
        starts: dict[str, list[tuple[float, float]]] = {name: [] for name in commands}
        loads_before = _load_average()
        # One unmeasured round: the store's first open by a server, the page cache warm.
        store_floor: list[float] = []
        for name, command in commands.items():
            _start_once(command, root, envs[name], log)
        for _ in range(RUNS):
            floor.append(_python_ms(env, "pass"))
            pygls_import.append(_python_ms(env, "import pygls.lsp.server"))
            store_floor.append(_python_ms(env, STORE_FLOOR.format(root=str(root))))
            for name, command in commands.items():
                starts[name].append(_start_once(command, root, envs[name], log))
        loads_after = _load_average()
        problems = [
            line
            for line in log.read_text(errors="replace").splitlines()
            if "differs from pygls'" in line or "could not start" in line
        ]
    floor_median, floor_p95 = summarize(floor)
    note = f"{RUNS} rounds alternating; {loads_before} before, {loads_after} after"
    figures = [
        Figure(
            "python -c pass (floor, same run)",
            "-",
            floor_median,
            floor_p95,
            note=f"{note}; workspace of {WORKSPACE_FILES:,} files made in {made_s:.0f} s",
        )
    ]
    store_median, store_p95 = summarize(store_floor)
    figures.append(
        Figure(
            "python opening the store and reading its gotchas (the floor of a first squiggle)",
            "-",
            store_median,
            store_p95,
            ratio=f"{store_median / floor_median:.1f}x python -c pass",
            note="memory_core only: Store.open and records.list_gotchas, then exit",
        )
    )
    pygls_median, pygls_p95 = summarize(pygls_import)
    figures.append(
        Figure(
            "python -c 'import pygls.lsp.server' (what any answer through pygls waits for)",
            "-",
            pygls_median,
            pygls_p95,
            ratio=f"{pygls_median / floor_median:.1f}x python -c pass",
            note="pygls imports lsprotocol's types at module load",
        )
    )
    peer_initialize = summarize([first for first, _ in starts["without the front"]])[0]
    peer_diagnostics = summarize([second for _, second in starts["without the front"]])[0]
    for name in commands:
        initialize_ms = summarize([first for first, _ in starts[name]])
        diagnostics_ms = summarize([second for _, second in starts[name]])
        ratio = initialize_ms[0] / floor_median
        front = name != "without the front"
        figures.append(
            Figure(
                f"server start to `initialize` answer, {name} ({WORKSPACE_FILES:,} files)",
                "< 4x python -c pass" if front else "- (peer)",
                *initialize_ms,
                ratio=f"{ratio:.1f}x python -c pass"
                + (
                    f"; {initialize_ms[0] / peer_initialize:.2f}x without the front"
                    if front
                    else ""
                ),
                within_budget=ratio < 4 if front else None,
                note=note + (f"; log problems: {problems}" if problems and front else ""),
            )
        )
        figures.append(
            Figure(
                f"server start to first diagnostics (a gotcha in the opened file), {name}",
                "as soon as the store is open" if front else "- (peer)",
                *diagnostics_ms,
                ratio=(
                    f"{diagnostics_ms[0] / store_median:.1f}x the store floor; "
                    f"{diagnostics_ms[0] / peer_diagnostics:.2f}x without the front; "
                    f"{diagnostics_ms[0] - peer_initialize:+.0f} ms after its `initialize` answer"
                    if front
                    else f"{diagnostics_ms[0] - initialize_ms[0]:+.0f} ms after its own answer"
                ),
                note=note,
            )
        )
    return figures
