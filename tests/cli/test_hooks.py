"""`engram hook ...`, `engram hooks install`, `engram ingest claude-code` as a user runs them
(through `run_cli`: docs/testing.md, "How the CLI tests run engram")."""

from __future__ import annotations

import json
import random
import sqlite3
import subprocess
from pathlib import Path

import pytest

from tests.agents_fixtures import (
    CORRECTION,
    FAILING_COMMAND,
    FAILURE_OUTPUT,
    SECRETS,
    WORKING_COMMAND,
    hook_payload,
    realistic_session,
)

SESSION = "5f2c1d4e-aaaa-bbbb-cccc-123456789abc"


@pytest.fixture
def repo(workspace: Path) -> Path:
    subprocess.run(["git", "init", "-q", str(workspace)], check=True)
    return workspace


def _db(root: Path) -> sqlite3.Connection:
    conn = sqlite3.connect(root / ".engram" / "engram.db")
    conn.row_factory = sqlite3.Row
    return conn


def _count(root: Path, sql: str, *params: object) -> int:
    with _db(root) as conn:
        return int(conn.execute(sql, params).fetchone()[0])


CLAUDE_EVENTS = {
    "SessionStart": {"source": "startup", "model": "claude-sonnet-4-6"},
    "UserPromptSubmit": {"prompt": "add a health endpoint", "prompt_id": "p-1"},
    "PreToolUse": {
        "tool_name": "Edit",
        "tool_input": {"file_path": "app.py", "old_string": "a", "new_string": "b"},
        "tool_use_id": "toolu_pre",
    },
    "PermissionRequest": {
        "tool_name": "Bash",
        "tool_input": {"command": "rm -rf build"},
        "permission_suggestions": [],
    },
    "PostToolUse": {
        "tool_name": "Bash",
        "tool_input": {"command": "ls"},
        "tool_use_id": "toolu_post",
        "tool_response": {"stdout": "a", "stderr": "", "interrupted": False, "isImage": False},
        "duration_ms": 12,
    },
    "PostToolUseFailure": {
        "tool_name": "Bash",
        "tool_input": {"command": "make"},
        "tool_use_id": "toolu_fail",
        "error": "Exit code 2\nmake: *** No rule to make target",
        "is_interrupt": False,
    },
    "Notification": {
        "message": "Claude needs your permission",
        "notification_type": "permission_prompt",
    },
    "SubagentStart": {"agent_id": "a1", "agent_type": "Explore"},
    "SubagentStop": {
        "agent_id": "a1",
        "agent_type": "Explore",
        "stop_hook_active": False,
        "last_assistant_message": "done",
        "agent_transcript_path": "/nonexistent/agent-a1.jsonl",
    },
    "Stop": {
        "stop_hook_active": False,
        "last_assistant_message": "Added the endpoint.",
        "background_tasks": [],
        "session_crons": [],
    },
    "StopFailure": {"error": "rate_limit", "error_details": "429"},
    "PreCompact": {"trigger": "manual", "custom_instructions": "keep the API notes"},
    "PostCompact": {"trigger": "manual", "compact_summary": "We added a health endpoint."},
    "SessionEnd": {"reason": "prompt_input_exit"},
    "TaskCompleted": {"task_id": "t1"},
    "ConfigChange": {"source": "project_settings"},
}


@pytest.mark.parametrize("event", list(CLAUDE_EVENTS))
def test_every_claude_event_exits_0_and_prints_only_valid_output(
    cli, repo: Path, event: str
) -> None:
    payload = hook_payload(event, "S-events", repo, **CLAUDE_EVENTS[event])
    result = cli(
        "hook", "claude-code", event.lower() if event != "Stop" else "STOP", cwd=repo, stdin=payload
    )
    assert result.code == 0, result.stderr
    assert result.stderr == ""
    if result.stdout.strip():
        output = json.loads(result.stdout)
        assert output["hookSpecificOutput"]["hookEventName"] in (
            "SessionStart",
            "UserPromptSubmit",
            "PreToolUse",
        )
    assert (
        not (repo / ".engram" / "engram.log").exists()
        or "Traceback" not in (repo / ".engram" / "engram.log").read_text()
    )


def test_a_live_session_recorded_by_hooks_and_its_transcript_counts_everything_once(
    cli, repo: Path, tmp_path: Path
) -> None:
    transcript, expected = realistic_session(repo, SESSION)
    path = transcript.save(tmp_path / "projects" / f"{SESSION}.jsonl")
    start = cli(
        "hook",
        "claude-code",
        "SessionStart",
        cwd=repo,
        stdin=hook_payload("SessionStart", SESSION, repo, path, source="startup"),
    )
    assert start.code == 0
    # PostToolUse hooks for the three failing commands fire live, before the transcript is read again.
    for attempt in range(1, 4):
        failure = hook_payload(
            "PostToolUseFailure",
            SESSION,
            repo,
            path,
            tool_name="Bash",
            tool_input={"command": FAILING_COMMAND},
            tool_use_id=f"toolu_bash_fail{attempt}",
            error=f"Exit code 1\n{FAILURE_OUTPUT}",
        )
        assert cli("hook", "claude-code", "PostToolUseFailure", cwd=repo, stdin=failure).code == 0
    assert (
        _count(repo, "SELECT COUNT(*) FROM gotchas WHERE status = 'candidate' AND occurrences = 3")
        == 1
    )
    assert (
        cli(
            "hook",
            "claude-code",
            "PreCompact",
            cwd=repo,
            stdin=hook_payload(
                "PreCompact", SESSION, repo, path, trigger="auto", custom_instructions=""
            ),
        ).code
        == 0
    )
    assert (
        cli(
            "hook",
            "claude-code",
            "Stop",
            cwd=repo,
            stdin=hook_payload(
                "Stop",
                SESSION,
                repo,
                path,
                stop_hook_active=False,
                last_assistant_message="Deployed.",
            ),
        ).code
        == 0
    )
    assert (
        cli(
            "hook",
            "claude-code",
            "SessionEnd",
            cwd=repo,
            stdin=hook_payload("SessionEnd", SESSION, repo, path, reason="prompt_input_exit"),
        ).code
        == 0
    )

    with _db(repo) as conn:
        session = conn.execute("SELECT * FROM sessions WHERE id = ?", (SESSION,)).fetchone()
        assert (session["status"], session["turn_count"]) == ("closed", expected.turns)
        assert (session["input_tokens"], session["output_tokens"]) == (
            expected.input_tokens,
            expected.output_tokens,
        )
        calls = conn.execute(
            "SELECT COUNT(*), SUM(ok = 0) FROM session_tool_calls WHERE session_id = ?", (SESSION,)
        ).fetchone()
        assert tuple(calls) == (sum(expected.tool_calls.values()), expected.failures)
        # Three failures, not six: the hook and the transcript saw the same tool_use ids.
        assert conn.execute("SELECT occurrences FROM gotchas").fetchone()[0] == 3
        triggers = [r[0] for r in conn.execute("SELECT trigger FROM digests ORDER BY id")]
        # The transcript's lines are months old, so the first tool hook finds the digest timer
        # long due; then PreCompact and SessionEnd each write theirs (Stop finds one recent enough).
        assert triggers == ["timer", "auto", "session_end"]
    digests = sorted((repo / ".engram" / "exports" / "digests").glob("*.yaml"))
    assert len(digests) == 3

    # The next session starts with what this one learned.
    nxt = cli(
        "hook",
        "claude-code",
        "SessionStart",
        cwd=repo,
        stdin=hook_payload("SessionStart", "S-next", repo, source="startup"),
    )
    assert nxt.code == 0
    context = json.loads(nxt.stdout)["hookSpecificOutput"]["additionalContext"]
    assert CORRECTION in context
    assert f"`{FAILING_COMMAND}` failed 3 times" in context and WORKING_COMMAND in context
    resumed = cli("session", "resume", "--context", cwd=repo)
    assert resumed.code == 0 and CORRECTION in resumed.stdout

    # Secrets: not in the store's bytes, not in any export.
    assert cli("session", "save", "--session", SESSION, cwd=repo).code == 0
    assert cli("gotcha", "export", cwd=repo).code == 0
    files = [p for p in (repo / ".engram").rglob("*") if p.is_file()]
    assert any(p.suffix == ".md" for p in files)
    blob = b"".join(p.read_bytes() for p in files)
    for secret in SECRETS:
        assert secret.encode() not in blob


def test_gemini_events_record_a_session_through_the_payload(cli, repo: Path) -> None:
    """Without a chat file to read (never written, or not where the payload says), everything
    comes from the hooks' payloads. With one, the chat is read instead: see
    tests/core/test_gemini_current_format.py."""

    def gemini(event: str, **extra: object) -> str:
        data = {
            "session_id": "G-1",
            "transcript_path": str(repo / "chats" / "session-never-written.json"),
            "cwd": str(repo),
            "hook_event_name": event,
            "timestamp": "2026-03-02T09:00:00Z",
            **extra,
        }
        result = cli("hook", "gemini", event, cwd=repo, stdin=json.dumps(data))
        assert result.code == 0 and result.stderr == ""
        return result.stdout

    gemini("SessionStart", source="startup")
    gemini("BeforeAgent", prompt="Actually, never use tabs in this repo")
    for _n in range(3):
        gemini(
            "AfterTool",
            tool_name="run_shell_command",
            tool_input={"command": "npm run build"},
            tool_response={
                "llmContent": "Command: npm run build\nOutput: error TS2304: Cannot find name 'foo'\nExit Code: 2",
                "returnDisplay": "failed",
            },
        )
    (repo / "notes.md").write_text("x\n")
    gemini(
        "AfterTool",
        tool_name="write_file",
        tool_input={"file_path": str(repo / "notes.md"), "content": "x\n"},
        tool_response={"llmContent": "ok", "returnDisplay": "ok"},
    )
    gemini(
        "AfterAgent",
        prompt="Actually, never use tabs in this repo",
        prompt_response="Understood.",
        stop_hook_active=False,
    )
    gemini("PreCompress", trigger="auto")
    gemini("SessionEnd", reason="exit")
    with _db(repo) as conn:
        session = conn.execute("SELECT * FROM sessions WHERE id = 'G-1'").fetchone()
        assert (session["agent"], session["turn_count"], session["status"]) == (
            "gemini",
            1,
            "closed",
        )
        tools = [
            tuple(r) for r in conn.execute("SELECT tool, ok FROM session_tool_calls ORDER BY id")
        ]
        assert tools == [("Bash", 0)] * 3 + [("Write", 1)]
        assert [r[0] for r in conn.execute("SELECT path FROM session_files")] == ["notes.md"]
        assert conn.execute("SELECT status, occurrences FROM gotchas").fetchone()[:] == (
            "candidate",
            3,
        )
        assert conn.execute("SELECT COUNT(*) FROM digests").fetchone()[0] >= 2
    out = cli("session", "resume", "--context", cwd=repo).stdout
    assert "never use tabs in this repo" in out


def test_malformed_and_truncated_payloads_exit_0_and_store_nothing_wrong(cli, repo: Path) -> None:
    valid = hook_payload(
        "PostToolUse",
        "S-fuzz",
        repo,
        tool_name="Bash",
        tool_input={"command": "ls"},
        tool_use_id="toolu_f1",
        tool_response={"stdout": "", "stderr": "", "interrupted": False, "isImage": False},
    )
    rng = random.Random(7)
    cuts = sorted(rng.sample(range(1, len(valid) - 1), 6))
    bad = [valid[:cut] for cut in cuts] + [
        "",
        "null",
        "[1, 2, 3]",
        '"just a string"',
        "\x00\xff garbage",
        json.dumps({"session_id": 42, "tool_name": ["Bash"], "tool_input": "ls", "cwd": 7}),
        json.dumps(
            {
                "session_id": "S-fuzz",
                "cwd": str(repo),
                "tool_name": "Edit",
                "tool_input": {"file_path": "/etc/passwd"},
                "tool_use_id": "toolu_out",
            }
        ),
        json.dumps({"session_id": "S-fuzz", "cwd": "/does/not/exist", "tool_name": "Bash"}),
    ]
    for payload in bad:
        for event in ("PostToolUse", "SessionStart", "NoSuchEvent"):
            result = cli("hook", "claude-code", event, cwd=repo, stdin=payload)
            assert result.code == 0, (payload, result.stderr)
            assert result.stderr == ""
            assert result.stdout.strip() == "" or json.loads(result.stdout)
    assert (repo / ".engram").is_dir()
    with _db(repo) as conn:
        assert [r[0] for r in conn.execute("SELECT id FROM sessions")] == ["S-fuzz"]
        # The one well-formed call outside the workspace is never a modified workspace file:
        # it is listed as a file changed outside the project, under its own absolute path.
        assert (
            conn.execute("SELECT COUNT(*) FROM session_files WHERE outside = 0").fetchone()[0] == 0
        )
        assert [r[0] for r in conn.execute("SELECT path FROM session_files WHERE outside = 1")] == [
            "/etc/passwd"
        ]
        assert conn.execute("SELECT COUNT(*) FROM file_changes").fetchone()[0] == 0
    log = (repo / ".engram" / "engram.log").read_text()
    assert "hook input is not JSON" in log


def test_an_internal_error_is_logged_and_the_agent_is_not_failed(cli, repo: Path) -> None:
    (repo / ".engram").mkdir()
    (repo / ".engram" / "engram.db").write_bytes(b"this is not a database" * 100)
    result = cli(
        "hook",
        "claude-code",
        "PostToolUse",
        cwd=repo,
        stdin=hook_payload("PostToolUse", "S", repo, tool_name="Bash"),
    )
    assert (result.code, result.stdout, result.stderr) == (0, "", "")
    assert "hook claude-code PostToolUse failed" in (repo / ".engram" / "engram.log").read_text()


def test_a_hook_command_naming_an_unknown_agent_is_logged_not_failed(cli, repo: Path) -> None:
    """A mistyped agent in a hand-written hook command: the agent is not failed, and the
    workspace's log says what was wrong (before, it was said nowhere)."""
    (repo / ".engram").mkdir()
    result = cli(
        "hook", "claud", "PostToolUse", cwd=repo, stdin=hook_payload("PostToolUse", "S", repo)
    )
    assert (result.code, result.stdout) == (0, "")
    log = (repo / ".engram" / "engram.log").read_text()
    assert "hook claud PostToolUse failed" in log and "unknown agent 'claud'" in log


def test_hooks_install_and_uninstall_from_the_command_line(cli, repo: Path) -> None:
    settings = repo / ".claude" / "settings.json"
    settings.parent.mkdir()
    settings.write_text(
        json.dumps(
            {
                "hooks": {"Stop": [{"hooks": [{"type": "command", "command": "say done"}]}]},
                "env": {"A": "1"},
            }
        )
    )
    installed = cli("hooks", "install", "claude-code", "--json", cwd=repo)
    assert installed.code == 0, installed.stderr
    assert installed.json()["changed"] is True
    data = json.loads(settings.read_text())
    assert data["env"] == {"A": "1"}
    assert next(h["command"] for g in data["hooks"]["Stop"] for h in g["hooks"]) == "say done"
    assert (repo / ".engram" / "engram.db").exists()
    again = cli("hooks", "install", "claude-code", cwd=repo)
    assert again.code == 0 and "Already installed" in again.stdout
    removed = cli("hooks", "uninstall", "claude-code", cwd=repo)
    assert removed.code == 0 and "Removed 10 engram hook entries" in removed.stdout
    assert json.loads(settings.read_text()) == {
        "hooks": {"Stop": [{"hooks": [{"type": "command", "command": "say done"}]}]},
        "env": {"A": "1"},
    }
    assert cli("hooks", "install", "cursor", cwd=repo).code == 2


def test_ingest_command_reads_this_workspaces_transcripts_once(cli, repo: Path) -> None:
    transcript, expected = realistic_session(repo, SESSION)
    from memory_core.agents.transcripts import project_dir_name

    folder = Path.home() / ".claude" / "projects" / project_dir_name(repo)
    transcript.save(folder / f"{SESSION}.jsonl")
    first = cli("ingest", "claude-code", "--json", cwd=repo)
    assert first.code == 0, first.stderr
    summary = first.json()
    assert (
        summary["files"],
        summary["prompts"],
        summary["turns"],
        summary["tool_calls"],
        summary["failures"],
    ) == (1, expected.prompts, expected.turns, sum(expected.tool_calls.values()), expected.failures)
    second = cli("ingest", "claude-code", "--json", cwd=repo).json()
    assert (second["lines"], second["turns"]) == (0, 0)
    missing = cli("ingest", "claude-code", str(repo / "nope.jsonl"), cwd=repo)
    assert missing.code == 2 and "no transcript at" in missing.stderr
    # A line that is no JSON (a hostile one, nested deeper than any decoder) is said, not hidden.
    with (folder / f"{SESSION}.jsonl").open("a") as handle:
        handle.write('{"type": "user", "message": ' + "[" * 100_000 + "]" * 100_000 + "}\n")
    third = cli("ingest", "claude-code", cwd=repo)
    assert third.code == 0 and "1 line(s) were not valid JSON and were skipped" in third.stdout


def test_pre_tool_use_warns_the_agent_about_gotchas_of_the_file_it_is_about_to_edit(
    cli, repo: Path
) -> None:
    added = cli(
        "gotcha",
        "add",
        "settings.py is generated; edit settings.in",
        "--file",
        "config/settings.py",
        "--workaround",
        "edit config/settings.in and run make settings",
        cwd=repo,
    )
    assert added.code == 0, added.stderr
    edit = hook_payload(
        "PreToolUse",
        "S-pre",
        repo,
        tool_name="Edit",
        tool_use_id="toolu_x",
        tool_input={
            "file_path": str(repo / "config" / "settings.py"),
            "old_string": "a",
            "new_string": "b",
        },
    )
    result = cli("hook", "claude-code", "PreToolUse", cwd=repo, stdin=edit)
    assert result.code == 0
    output = json.loads(result.stdout)["hookSpecificOutput"]
    assert output["hookEventName"] == "PreToolUse"
    assert "settings.py is generated" in output["additionalContext"]
    other = hook_payload(
        "PreToolUse",
        "S-pre",
        repo,
        tool_name="Edit",
        tool_use_id="toolu_y",
        tool_input={"file_path": str(repo / "app.py"), "old_string": "a", "new_string": "b"},
    )
    assert cli("hook", "claude-code", "PreToolUse", cwd=repo, stdin=other).stdout == ""


def test_parallel_hooks_lose_nothing(repo: Path) -> None:
    import os
    import sys

    # Claude Code runs matching hooks in parallel, and parallel tool calls fire at once.
    procs = []
    for n in range(8):
        payload = hook_payload(
            "PostToolUse",
            "S-par",
            repo,
            tool_name="Bash",
            tool_use_id=f"toolu_par{n}",
            tool_input={"command": f"echo {n}"},
            tool_response={"stdout": str(n), "stderr": "", "interrupted": False, "isImage": False},
        )
        proc = subprocess.Popen(
            [sys.executable, "-m", "memory_core", "hook", "claude-code", "PostToolUse"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            cwd=repo,
            env=dict(os.environ),
        )
        procs.append((proc, payload))
    for proc, payload in procs:
        proc.stdin.write(payload.encode())
        proc.stdin.close()
    for proc, _ in procs:
        assert proc.wait(timeout=60) == 0
        assert proc.stderr.read() == b""
    assert _count(repo, "SELECT COUNT(*) FROM session_tool_calls WHERE session_id = 'S-par'") == 8
    assert _count(repo, "SELECT COUNT(*) FROM session_commands WHERE session_id = 'S-par'") == 8
    assert _count(repo, "SELECT COUNT(*) FROM sessions") == 1


def test_the_digest_timer_follows_the_configured_interval(cli, repo: Path) -> None:
    assert cli("config", "set", "agents.digest_interval_minutes", "0", cwd=repo).code == 0
    start = json.loads(hook_payload("SessionStart", "S-timer", repo, source="startup"))
    from memory_core.agents import hooks

    hooks.handle("claude-code", "SessionStart", json.dumps(start), now=1_000_000.0)
    call = hook_payload(
        "PostToolUse",
        "S-timer",
        repo,
        tool_name="Bash",
        tool_use_id="toolu_t1",
        tool_input={"command": "ls"},
    )
    hooks.handle("claude-code", "PostToolUse", call, now=1_000_000.0 + 3600)
    assert _count(repo, "SELECT COUNT(*) FROM digests") == 0  # 0 turns the timer off
    assert cli("config", "set", "agents.digest_interval_minutes", "10", cwd=repo).code == 0
    hooks.handle(
        "claude-code",
        "SessionStart",
        hook_payload("SessionStart", "S-timer", repo, source="resume"),
        now=1_000_000.0 + 3700,
    )
    later = 1_000_000.0 + 3700
    hooks.handle("claude-code", "PostToolUse", call.replace("toolu_t1", "toolu_t2"), now=later)
    assert (
        _count(repo, "SELECT COUNT(*) FROM digests WHERE trigger = 'timer'") == 1
    )  # an hour since the start
    hooks.handle(
        "claude-code", "PostToolUse", call.replace("toolu_t1", "toolu_t3"), now=later + 9 * 60
    )
    assert _count(repo, "SELECT COUNT(*) FROM digests") == 1
    hooks.handle(
        "claude-code", "PostToolUse", call.replace("toolu_t1", "toolu_t4"), now=later + 11 * 60
    )
    assert _count(repo, "SELECT COUNT(*) FROM digests WHERE trigger = 'timer'") == 2


GEMINI_EVENTS = {
    "SessionStart": {"source": "startup"},
    "BeforeAgent": {"prompt": "add a health endpoint"},
    "BeforeModel": {"llm_request": {"model": "gemini-2.5-pro", "messages": []}},
    "AfterModel": {"llm_request": {}, "llm_response": {"candidates": []}},
    "BeforeToolSelection": {"llm_request": {}},
    "BeforeTool": {
        "tool_name": "write_file",
        "tool_input": {"file_path": "app.py", "content": "x"},
    },
    "AfterTool": {
        "tool_name": "read_file",
        "tool_input": {"absolute_path": "app.py"},
        "tool_response": {"llmContent": "x", "returnDisplay": "x"},
    },
    "AfterAgent": {
        "prompt": "add a health endpoint",
        "prompt_response": "Added.",
        "stop_hook_active": False,
    },
    "PreCompress": {"trigger": "auto"},
    "Notification": {"notification_type": "ToolPermission", "message": "allow?", "details": {}},
    "SessionEnd": {"reason": "exit"},
}


@pytest.mark.parametrize("event", list(GEMINI_EVENTS))
def test_every_gemini_event_exits_0_with_json_or_nothing_on_stdout(
    cli, repo: Path, event: str
) -> None:
    data = {
        "session_id": "G-events",
        "transcript_path": str(repo / "chat.jsonl"),
        "cwd": str(repo),
        "hook_event_name": event,
        "timestamp": "2026-03-02T09:00:00Z",
        **GEMINI_EVENTS[event],
    }
    result = cli("hook", "gemini", event, cwd=repo, stdin=json.dumps(data))
    assert (result.code, result.stderr) == (0, "")
    # Gemini CLI parses stdout as JSON: it must be one object or nothing.
    assert result.stdout.strip() == "" or isinstance(json.loads(result.stdout), dict)


def test_the_installed_command_runs_as_claude_code_would_run_it(cli, repo: Path) -> None:
    installed = cli("hooks", "install", "claude-code", "--json", cwd=repo)
    assert installed.code == 0, installed.stderr
    # settings.json with engram on PATH, else the personal settings.local.json: either way,
    # the command Claude Code will run.
    settings = json.loads(Path(installed.json()["settings"]).read_text())
    command = settings["hooks"]["PostToolUse"][0]["hooks"][0]["command"]
    payload = hook_payload(
        "PostToolUse",
        "S-installed",
        repo,
        tool_name="Bash",
        tool_use_id="toolu_i1",
        tool_input={"command": "make test"},
        tool_response={"stdout": "ok", "stderr": "", "interrupted": False, "isImage": False},
    )
    # Claude Code runs a command hook through the shell, in the project, JSON on stdin.
    import os

    env = {**os.environ, "CLAUDE_PROJECT_DIR": str(repo)}
    done = subprocess.run(
        ["bash", "-c", command],
        input=payload,
        text=True,
        capture_output=True,
        cwd=repo,
        env=env,
        timeout=60,
    )
    assert (done.returncode, done.stderr) == (0, "")
    assert (
        _count(
            repo,
            "SELECT COUNT(*) FROM session_commands WHERE session_id = 'S-installed' AND command = 'make test'",
        )
        == 1
    )


def test_turns_make_checkpoints_every_n_and_stops_feed_the_rolling_summary(cli, repo: Path) -> None:
    (repo / "app.py").write_text("print('hello')\n")
    assert cli("config", "set", "checkpoints.every_n_turns", "2", cwd=repo).code == 0
    session = "6a1e0b2c-0000-4000-8000-00000000cafe"
    for turn in range(1, 4):
        prompt = hook_payload(
            "UserPromptSubmit", session, repo, prompt=f"step {turn}", prompt_id=f"p{turn}"
        )
        assert cli("hook", "claude-code", "UserPromptSubmit", cwd=repo, stdin=prompt).code == 0
        said = f"Finished step {turn}. The health endpoint now answers."
        stop = hook_payload(
            "Stop", session, repo, stop_hook_active=False, last_assistant_message=said
        )
        assert cli("hook", "claude-code", "Stop", cwd=repo, stdin=stop).code == 0
    reasons = [
        c["reason"] for c in cli("checkpoint", "list", "--json", cwd=repo).json()["checkpoints"]
    ]
    assert reasons == ["turns"]  # after turn 2; turn 3 is not a multiple of 2
    with _db(repo) as conn:
        rolling = conn.execute(
            "SELECT rolling_summary FROM sessions WHERE id = ?", (session,)
        ).fetchone()[0]
    assert "Finished step 1." in rolling and "Finished step 3." in rolling
