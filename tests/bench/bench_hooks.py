"""Every agent hook event as a cold process, against `python -c pass`, at an empty and a large store.

An agent starts `engram hook AGENT EVENT` as a fresh process for each event (Claude Code and
Codex CLI on every tool call and prompt, Gemini CLI likewise), so what it waits for is Python's
start plus what engram does. Each event is measured as the agent runs it: the `engram` script,
the payload on stdin, a real transcript (Claude Code's JSONL, Gemini CLI's chat, Codex's rollout)
growing as the session goes, one session after another; every hook run is preceded by a
`python -c pass` of the same interpreter, so load on the machine hits both alike, and the ratio
of the medians is the figure (target: 2.5x, issue 32).

Installed as users run it: `pipx install engram-lsp` makes a virtual environment holding
engram's package with its bytecode and an `engram` script. Here that environment is built
beside the checkout (a venv whose site-packages names this checkout and the running
interpreter's libraries, and the script pip writes), with bytecode compiled first and
PYTHONDONTWRITEBYTECODE unset. Its `python -c pass` is the floor. The development venv's
`python -c pass` (an editable install: setuptools' import finder loads pathlib, re and more on
every start) is measured beside it and reported too: issue 32's figures were taken against it.

The large store holds ENGRAM_BENCH_HOOK_SESSIONS earlier agent sessions (default 2,000, each
with a prompt, an edit, a failing and a passing command and its end, recorded through the same
hook handlers in process), as many memories, and a tenth as many gotchas.

`python -m tests.bench hooks`; ENGRAM_BENCH_HOOK_RUNS sessions measured per store (default 12).
ENGRAM_BENCH_HOOK_STORES=empty,large measures only the stores named. ENGRAM_BENCH_HOOK_LARGE=PATH
takes the large store from PATH (a folder whose `project` a run of `fill` made, e.g. one kept
from an earlier run with ENGRAM_BENCH_HOOK_KEEP=PATH): a copy is measured, so stores of
thousands of sessions, which take many minutes to build, can be measured again and again.

A hook answers first and records after (a cold one from a fork of itself, memory_core/cli/
fast_hook.py; a resident one from the server's child), and the next opening of the store waits
for that recording. An agent's next event comes after the model's or the tool's work (seconds),
so each run starts once the last one's recording is in (the store's after-answer lock is free):
the figure is the hook's own wait. ENGRAM_BENCH_HOOK_BACK_TO_BACK=1 runs the events 20 ms apart
instead, each waiting for the one before. The CPU time of a cold run is its own process's: the
fork that records after the answer is not the agent's wait (its CPU is not counted).
"""

from __future__ import annotations

import contextlib
import json
import os
import resource
import shutil
import subprocess
import sys
import sysconfig
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from tests.bench.harness import Figure, summarize

HOOK_RUNS = int(os.environ.get("ENGRAM_BENCH_HOOK_RUNS", "12"))
STORES = os.environ.get("ENGRAM_BENCH_HOOK_STORES", "empty,large").split(",")
LARGE_FROM = os.environ.get("ENGRAM_BENCH_HOOK_LARGE")
KEEP_LARGE = os.environ.get("ENGRAM_BENCH_HOOK_KEEP")
LARGE_SESSIONS = int(os.environ.get("ENGRAM_BENCH_HOOK_SESSIONS", "2000"))
BACK_TO_BACK = os.environ.get("ENGRAM_BENCH_HOOK_BACK_TO_BACK", "") not in ("", "0")
TARGET_RATIO = 2.5
REPO = Path(__file__).resolve().parents[2]

# One session of each agent as the tests send it (tests/cli/test_resident.py,
# tests/core/test_hooks_answer_first.py): its start, a prompt, a tool call, the turn's end, a
# compaction or the session's end. The other events run the same way (`EVENTS` below).
A_SESSION = {
    "claude-code": (
        "SessionStart",
        "UserPromptSubmit",
        "PreToolUse",
        "PostToolUse",
        "Stop",
        "PreCompact",
        "SessionEnd",
    ),
    "gemini": ("SessionStart", "BeforeAgent", "AfterTool", "AfterAgent", "SessionEnd"),
    "codex": ("SessionStart", "UserPromptSubmit", "PostToolUse", "Stop", "PostCompact"),
}

# The events `engram hooks install` registers for each agent, in the order a session sends them.
EVENTS = {
    "claude-code": (
        "SessionStart",
        "UserPromptSubmit",
        "PreToolUse",
        "PostToolUse",
        "PostToolUseFailure",
        "SubagentStop",
        "Stop",
        "PreCompact",
        "PostCompact",
        "SessionEnd",
    ),
    "gemini": (
        "SessionStart",
        "BeforeAgent",
        "BeforeTool",
        "AfterTool",
        "AfterAgent",
        "PreCompress",
        "SessionEnd",
    ),
    "codex": (
        "SessionStart",
        "UserPromptSubmit",
        "PreToolUse",
        "PostToolUse",
        "Stop",
        "PreCompact",
        "PostCompact",
    ),
}


def _env() -> dict[str, str]:
    """A user's environment: bytecode written; cold processes (no resident server)."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    return {**env, "ENGRAM_NO_RESIDENT": "1"}


class ResidentServer:
    """engram's resident fork server (docs/resident.md) for one installation, in a private
    socket folder, started before the runs and stopped after them."""

    def __init__(self, engram: Path, folder: Path) -> None:
        folder.mkdir(mode=0o700, parents=True, exist_ok=True)
        env = {k: v for k, v in _env().items() if k != "ENGRAM_NO_RESIDENT"}
        self.env = {**env, "ENGRAM_RESIDENT_DIR": str(folder)}
        self.engram = engram
        started = subprocess.run(
            [str(engram), "daemon", "start", "--json"], env=self.env, capture_output=True
        )
        if started.returncode != 0:
            raise RuntimeError(f"the resident server did not start: {started.stderr!r}")

    def requests(self) -> int:
        status = subprocess.run(
            [str(self.engram), "daemon", "status", "--json"],
            env=self.env,
            capture_output=True,
            check=True,
        )
        return int(json.loads(status.stdout)["requests"])

    def stop(self) -> None:
        subprocess.run([str(self.engram), "daemon", "stop"], env=self.env, capture_output=True)


def installed_engram(folder: Path, repo: Path = REPO) -> tuple[Path, Path]:
    """(python, engram script) of an environment laid out as `pipx install` makes it (`repo`:
    the checkout it installs; another one to compare two versions in the same run)."""
    subprocess.run(
        [sys.executable, "-m", "compileall", "-q", str(repo / "memory_core")],
        env=_env(),
        capture_output=True,
        check=False,
    )
    base = getattr(sys, "_base_executable", sys.executable)
    subprocess.run([base, "-m", "venv", "--without-pip", str(folder)], check=True)
    python = folder / "bin" / "python"
    site = subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    # The checkout as the package (no import finder of an editable install), then the
    # libraries of the interpreter running this benchmark.
    libraries = sysconfig.get_paths()["purelib"]
    (Path(site) / "engram_checkout.pth").write_text(f"{repo}\n{libraries}\n")
    script = folder / "bin" / "engram"
    script.write_text(
        f"#!{python}\n"
        "import sys\n"
        "from memory_core.cli.entry import main\n"
        "if __name__ == '__main__':\n"
        "    sys.argv[0] = sys.argv[0].removesuffix('.exe')\n"
        "    sys.exit(main())\n"
    )
    script.chmod(0o755)
    return python, script


# -- the sessions the agents run -----------------------------------------------------------------


def _stamp() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%S.000Z", time.gmtime())


class ClaudeSession:
    """A Claude Code session: its JSONL transcript grows as the hooks fire."""

    def __init__(self, root: Path, sid: str) -> None:
        self.root = root
        self.sid = sid
        self.path = root.parent / "claude" / f"{sid}.jsonl"
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.path.touch()
        self.n = 0
        self.last: str | None = None

    def _line(self, kind: str, message: dict[str, Any], **extra: Any) -> None:
        self.n += 1
        uuid = f"{self.sid}-{self.n:04d}"
        line = {
            "parentUuid": self.last,
            "isSidechain": False,
            "userType": "external",
            "cwd": str(self.root),
            "sessionId": self.sid,
            "version": "2.1.39",
            "gitBranch": "main",
            "type": kind,
            "uuid": uuid,
            "timestamp": _stamp(),
            "message": message,
            **extra,
        }
        self.last = uuid
        with self.path.open("a") as handle:
            handle.write(json.dumps(line) + "\n")

    def _assistant(self, block: dict[str, Any]) -> None:
        self._line(
            "assistant",
            {
                "id": f"msg_{self.sid}_{self.n}",
                "type": "message",
                "role": "assistant",
                "model": "claude-sonnet-4-6",
                "content": [block],
                "stop_reason": None,
                "usage": {"input_tokens": 12, "output_tokens": 80, "cache_read_input_tokens": 9000},
            },
            requestId=f"req_{self.sid}_{self.n}",
        )

    def _result(self, tool_id: str, content: str, result: Any, error: bool = False) -> None:
        block: dict[str, Any] = {"tool_use_id": tool_id, "type": "tool_result", "content": content}
        if error:
            block["is_error"] = True
        self._line("user", {"role": "user", "content": [block]}, toolUseResult=result)

    def payload(self, event: str) -> dict[str, Any]:
        base: dict[str, Any] = {
            "session_id": self.sid,
            "transcript_path": str(self.path),
            "cwd": str(self.root),
            "hook_event_name": event,
            "permission_mode": "default",
        }
        app = str(self.root / "app.py")
        edit = {"file_path": app, "old_string": "hello", "new_string": "hello there"}
        if event == "SessionStart":
            base["source"] = "startup"
        elif event == "UserPromptSubmit":
            prompt = "The login test fails with a 500: fix app.py and run the tests."
            self._line("user", {"role": "user", "content": prompt})
            base["prompt"] = prompt
        elif event == "PreToolUse":
            self._assistant(
                {"type": "tool_use", "id": f"te_{self.sid}", "name": "Edit", "input": edit}
            )
            base.update(tool_name="Edit", tool_input=edit, tool_use_id=f"te_{self.sid}")
        elif event == "PostToolUse":
            response = {"filePath": app, "originalFile": "print('hello')\n", "structuredPatch": []}
            self._result(f"te_{self.sid}", "The file has been updated.", response)
            base.update(
                tool_name="Edit",
                tool_input=edit,
                tool_use_id=f"te_{self.sid}",
                tool_response=response,
            )
        elif event == "PostToolUseFailure":
            command = {"command": "pytest tests/test_login.py -q"}
            error = "Exit code 1\nFAILED tests/test_login.py::test_login - assert 500 == 200"
            self._assistant(
                {"type": "tool_use", "id": f"tb_{self.sid}", "name": "Bash", "input": command}
            )
            self._result(f"tb_{self.sid}", error, "Error: " + error, error=True)
            base.update(
                tool_name="Bash",
                tool_input=command,
                tool_use_id=f"tb_{self.sid}",
                error=error,
            )
        elif event in ("Stop", "SubagentStop"):
            if event == "Stop":
                self._assistant({"type": "text", "text": "Fixed: the cookie was not set."})
            base["last_assistant_message"] = "Fixed: the cookie was not set."
            base["stop_hook_active"] = False
        elif event == "PreCompact":
            base.update(trigger="manual", custom_instructions="")
        elif event == "PostCompact":
            base.update(trigger="manual", compact_summary="The login test was fixed.")
        elif event == "SessionEnd":
            base["reason"] = "prompt_input_exit"
        return base


class GeminiSession:
    """A Gemini CLI session: its chat file (JSONL upsert log) grows as the hooks fire."""

    def __init__(self, root: Path, sid: str) -> None:
        self.root = root
        self.sid = sid
        self.path = root.parent / "gemini" / f"session-{sid}.jsonl"
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.n = 0
        self._write(
            {
                "sessionId": sid,
                "projectHash": "9f86d081884c7d659a2feaa0c55ad015",
                "startTime": _stamp(),
                "lastUpdated": _stamp(),
                "kind": "main",
                "directories": [str(root)],
            }
        )

    def _write(self, record: dict[str, Any]) -> None:
        with self.path.open("a") as handle:
            handle.write(json.dumps(record) + "\n")

    def payload(self, event: str) -> dict[str, Any]:
        base: dict[str, Any] = {
            "session_id": self.sid,
            "transcript_path": str(self.path),
            "cwd": str(self.root),
            "hook_event_name": event,
            "timestamp": _stamp(),
        }
        app = str(self.root / "app.py")
        replace = {"file_path": app, "old_string": "hello", "new_string": "hello there"}
        if event == "SessionStart":
            base["source"] = "startup"
        elif event == "BeforeAgent":
            base["prompt"] = "Fix the login test in app.py."
            self._write({"id": f"u-{self.sid}", "timestamp": _stamp(), "type": "user",
                         "content": [{"text": base["prompt"]}]})  # fmt: skip
        elif event == "BeforeTool":
            base.update(tool_name="replace", tool_input=replace)
        elif event == "AfterTool":
            base.update(
                tool_name="replace",
                tool_input=replace,
                tool_response={"llmContent": "Successfully modified file", "returnDisplay": ""},
            )
        elif event == "AfterAgent":
            self._write(
                {
                    "id": f"g-{self.sid}",
                    "timestamp": _stamp(),
                    "type": "gemini",
                    "content": "Fixed the cookie.",
                    "toolCalls": [
                        {
                            "id": f"call-{self.sid}",
                            "name": "replace",
                            "args": replace,
                            "result": [
                                {
                                    "functionResponse": {
                                        "id": f"call-{self.sid}",
                                        "name": "replace",
                                        "response": {"output": "Successfully modified file"},
                                    }
                                }
                            ],
                            "status": "success",
                            "timestamp": _stamp(),
                        }
                    ],
                    "tokens": {"input": 8200, "output": 120, "cached": 6000, "total": 8320},
                    "model": "gemini-2.5-pro",
                }
            )
            base.update(prompt="Fix the login test in app.py.", prompt_response="Fixed the cookie.")
        elif event == "PreCompress":
            base["trigger"] = "manual"
        elif event == "SessionEnd":
            base["reason"] = "exit"
        return base


class CodexSession:
    """A Codex CLI session: its rollout (0.125 shapes) grows as the hooks fire."""

    def __init__(self, root: Path, sid: str) -> None:
        self.root = root
        self.sid = sid
        self.path = root.parent / "codex" / f"rollout-2026-05-20T08-00-00-{sid}.jsonl"
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._line("session_meta", {"id": sid, "cwd": str(root), "cli_version": "0.125.0"})

    def _line(self, kind: str, payload: dict[str, Any]) -> None:
        with self.path.open("a") as handle:
            handle.write(json.dumps({"timestamp": _stamp(), "type": kind, "payload": payload}))
            handle.write("\n")

    def payload(self, event: str) -> dict[str, Any]:
        base: dict[str, Any] = {
            "session_id": self.sid,
            "transcript_path": str(self.path),
            "cwd": str(self.root),
            "hook_event_name": event,
            "model": "gpt-5.5-codex",
            "permission_mode": "default",
            "turn_id": "t1",
        }
        patch = "*** Begin Patch\n*** Update File: app.py\n@@\n-print('hello')\n+print('hi')\n*** End Patch\n"
        if event == "SessionStart":
            base["source"] = "startup"
        elif event == "UserPromptSubmit":
            base["prompt"] = "Run the test suite"
            self._line("event_msg", {"type": "user_message", "message": "Run the test suite"})
            self._line("turn_context", {"cwd": str(self.root), "model": "gpt-5.5-codex"})
        elif event == "PreToolUse":
            base.update(tool_name="apply_patch", tool_input={"command": patch})
        elif event == "PostToolUse":
            call = f"call_{self.sid}"
            output = "Process exited with code 1\nOutput:\nFAILED tests/test_login.py::test_login\n"
            self._line(
                "response_item",
                {
                    "type": "function_call",
                    "name": "exec_command",
                    "arguments": json.dumps({"cmd": "uv run pytest -q"}),
                    "call_id": call,
                },
            )
            self._line(
                "response_item", {"type": "function_call_output", "call_id": call, "output": output}
            )
            base.update(
                tool_name="Bash",
                tool_use_id=call,
                tool_input={"command": "uv run pytest -q"},
                tool_response=output,
            )
        elif event == "Stop":
            self._line(
                "response_item",
                {
                    "type": "message",
                    "role": "assistant",
                    "content": [{"type": "output_text", "text": "The suite passes now."}],
                },
            )
            base.update(stop_hook_active=False, last_assistant_message="The suite passes now.")
        elif event in ("PreCompact", "PostCompact"):
            base["trigger"] = "manual"
        return base


SESSIONS: dict[str, Callable[[Path, str], Any]] = {
    "claude-code": ClaudeSession,
    "gemini": GeminiSession,
    "codex": CodexSession,
}


# -- the stores ------------------------------------------------------------------------------------


def _project(folder: Path, engram: Path) -> Path:
    root = folder / "project"
    root.mkdir(parents=True)
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    (root / "app.py").write_text("print('hello')\n")
    subprocess.run([str(engram), "init"], cwd=root, env=_env(), capture_output=True, check=True)
    return root


def fill(root: Path, sessions: int) -> str:
    """`sessions` earlier sessions (every agent in turn) through the hook handlers in process,
    as many memories and a tenth as many gotchas; what it made, in words."""
    from memory_core import memory
    from memory_core.agents import hooks
    from memory_core.gotchas import records
    from memory_core.store import Store

    agents = list(SESSIONS)
    start = time.time() - 60 * 86400  # spread over the last 60 days, the oldest first
    step = 60 * 86400 / max(sessions, 1)
    began = time.perf_counter()
    for index in range(sessions):
        agent = agents[index % len(agents)]
        session = SESSIONS[agent](root, f"old-{agent}-{index:05d}")
        for offset, event in enumerate(EVENTS[agent]):
            if event == "SessionStart":
                continue  # it reads the store (the context) and adds nothing to it but a touch
            data = json.dumps(session.payload(event))
            hooks.handle(agent, event, data, workspace=str(root), now=start + index * step + offset)
    with Store.open(root) as store:
        for index in range(sessions):
            memory.add(
                store,
                f"Decision {index}: the session cookie is set by middleware {index % 50}, not in "
                f"the login view; run the tests with --no-cov (module {index % 200}).",
                type=("decision", "learning", "preference", "project")[index % 4],
                tags=[f"area-{index % 30}"],
            )
        for index in range(max(1, sessions // 10)):
            records.add(
                store,
                f"Login returns 500 when the cookie domain is unset (variant {index})",
                description="The session middleware drops the cookie without a domain.",
                workaround="Set SESSION_COOKIE_DOMAIN in settings.",
                related_files=[f"src/module_{index % 200}.py", "app.py"],
                error_pattern=f"AssertionError: assert 500 == 200 .*variant {index}",
            )
    size = (root / ".engram" / "engram.db").stat().st_size / 1e6
    return (
        f"{sessions:,} sessions ({sessions // 3:,} per agent), {sessions:,} memories, "
        f"{max(1, sessions // 10):,} gotchas, store {size:.0f} MB, built in "
        f"{time.perf_counter() - began:.0f} s"
    )


def _described(root: Path, how: str) -> str:
    """What a store holds, in words (for a store this run did not build)."""
    import sqlite3

    with contextlib.closing(sqlite3.connect(root / ".engram" / "engram.db")) as db:
        count = {
            table: db.execute(f"SELECT count(*) FROM {table}").fetchone()[0]
            for table in ("agent_sessions", "memories", "gotchas", "events")
        }
    size = (root / ".engram" / "engram.db").stat().st_size / 1e6
    return (
        f"{count['agent_sessions']:,} sessions, {count['memories']:,} memories, "
        f"{count['gotchas']:,} gotchas, {count['events']:,} events, store {size:.0f} MB, {how}"
    )


# -- measuring -----------------------------------------------------------------------------------


def wait_for_recording(root: Path, most_seconds: float = 5.0) -> None:
    """Until no hook of the store of `root` is still recording after its answer, nor closing
    the store after it (the last connection's close folds the write-ahead log and removes it:
    its fsyncs would otherwise fall in the next run's time). At most `most_seconds`."""
    import fcntl

    try:
        fd = os.open(root / ".engram" / "after-answer.lock", os.O_RDONLY)
    except OSError:
        return
    try:
        fcntl.flock(fd, fcntl.LOCK_SH)
    finally:
        os.close(fd)
    log = root / ".engram" / "engram.db-wal"
    deadline = time.monotonic() + most_seconds
    while log.exists() and time.monotonic() < deadline:
        time.sleep(0.002)


def _wall(
    cmd: list[str], data: bytes | None, env: dict[str, str], cwd: Path, cpu: list[float]
) -> float:
    """Wall ms of one process; its CPU ms (user + system) appended to `cpu`: on a busy machine
    (two cores shared by a team) CPU time moves far less with the load than wall time."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    subprocess.run(cmd, input=data, capture_output=True, env=env, cwd=cwd, check=False)
    wall = (time.perf_counter() - start) * 1000
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu.append(((after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)) * 1000)
    return wall


class Samples:
    """Wall and CPU ms of the runs of one command."""

    def __init__(self) -> None:
        self.wall: list[float] = []
        self.cpu: list[float] = []


def measure_store(
    root: Path, python: Path, engram: Path, label: str, runs: int, server: ResidentServer
) -> tuple[dict[tuple[str, str, str], Samples], Samples, Samples]:
    """Per (agent, event, "cold" or "resident") the runs of its hook process; the floor's runs
    (each right before a hook run) and the development venv's `python -c pass` runs. Each
    event runs cold and through the resident server alternately (the same payload twice: the
    second sees the first's effects, as a repeated event would)."""
    env = _env()
    floor_cmd = [str(python), "-c", "pass"]
    dev_cmd = [sys.executable, "-c", "pass"]
    samples: dict[tuple[str, str, str], Samples] = {}
    floor, dev_floor, warm = Samples(), Samples(), Samples()
    for run in range(-1, runs):  # run -1 warms the page cache and the store
        for agent, events in EVENTS.items():
            session = SESSIONS[agent](root, f"bench-{label}-{agent}-{run + 1:03d}")
            for event in events:
                data = json.dumps(session.payload(event)).encode()
                order = ("cold", "resident") if run % 2 else ("resident", "cold")
                for how in order:
                    if not BACK_TO_BACK:
                        wait_for_recording(root)
                    hook = samples.setdefault((agent, event, how), Samples()) if run >= 0 else warm
                    into = floor if run >= 0 else warm
                    into.wall.append(_wall(floor_cmd, None, env, root, into.cpu))
                    hook_env = server.env if how == "resident" else env
                    hook.wall.append(
                        _wall([str(engram), "hook", agent, event], data, hook_env, root, hook.cpu)
                    )
        into = dev_floor if run >= 0 else warm
        into.wall.append(_wall(dev_cmd, None, env, root, into.cpu))
    return samples, floor, dev_floor


def hook_latency() -> list[Figure]:
    figures: list[Figure] = []
    with tempfile.TemporaryDirectory(prefix="engram-bench-hooks-") as tmp:
        python, engram = installed_engram(Path(tmp) / "venv")
        stores: dict[str, Path] = {}
        described = ""
        if "empty" in STORES:
            stores["empty store"] = _project(Path(tmp) / "empty", engram)
        if "large" in STORES:
            if LARGE_FROM:
                large = Path(tmp) / "large" / "project"
                shutil.copytree(Path(LARGE_FROM) / "project", large, symlinks=True)
                described = _described(large, f"copied from {LARGE_FROM}")
            else:
                large = _project(Path(tmp) / "large", engram)
                described = fill(large, LARGE_SESSIONS)
                if KEEP_LARGE:
                    shutil.copytree(large, Path(KEEP_LARGE) / "project", symlinks=True)
            stores["large store"] = large
        server = ResidentServer(engram, Path(tmp) / "resident")
        try:
            for label, root in stores.items():
                figures += _store_figures(label, root, python, engram, server, described)
            served = server.requests()
        finally:
            server.stop()
        figures.append(
            Figure(
                "resident server: requests it served",
                "-",
                note=f"{served} (each resident hook run above, and the warm-up runs)",
            )
        )
        shutil.rmtree(Path(tmp) / "venv", ignore_errors=True)
    return figures


def _store_figures(
    label: str, root: Path, python: Path, engram: Path, server: ResidentServer, described: str
) -> list[Figure]:
    figures: list[Figure] = []
    samples, floor, dev_floor = measure_store(
        root, python, engram, label.split()[0], HOOK_RUNS, server
    )
    floor_median, floor_p95 = summarize(floor.wall)
    floor_cpu, _ = summarize(floor.cpu)
    dev_median, _ = summarize(dev_floor.wall)
    load = os.getloadavg()[0]
    figures.append(
        Figure(
            f"python -c pass, installed layout (floor, {label} run)",
            "-",
            floor_median,
            floor_p95,
            note=f"CPU time {floor_cpu:.1f} ms; the development venv's python -c pass "
            f"{dev_median:.1f} ms (editable install); load average {load:.1f} on "
            f"{os.cpu_count()} CPUs" + (f"; {described}" if label == "large store" else ""),
        )
    )
    for (agent, event, how), runs in samples.items():
        median, p95 = summarize(runs.wall)
        cpu, _ = summarize(runs.cpu)
        ratio = median / floor_median
        figures.append(
            Figure(
                f"hook {agent} {event}, {label}, "
                + ("cold process" if how == "cold" else "resident server"),
                f"< {TARGET_RATIO}x python -c pass",
                median,
                p95,
                # A resident run's CPU time is its client's: the forked child's is the server's.
                ratio=f"{ratio:.2f}x; {'CPU' if how == 'cold' else 'client CPU'} "
                f"{cpu / floor_cpu:.2f}x; {median / dev_median:.2f}x dev venv",
                within_budget=ratio < TARGET_RATIO,
                note=f"load average {os.getloadavg()[0]:.1f}",
            )
        )
    return figures


def run() -> list[Figure]:
    return hook_latency()


if __name__ == "__main__":
    for figure in run():
        print(" | ".join(figure.row()), figure.note)
