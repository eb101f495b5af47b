"""Codex CLI through engram's real hook entry point (`engram hook codex EVENT`, a fresh process
each time, as Codex runs it), and one memory across agents: what a Codex session taught reaches
the next Claude Code session of the project, and the other way round."""

from __future__ import annotations

import json
import sqlite3
import subprocess
import tomllib
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from tests.agents_fixtures import CORRECTION, hook_payload, realistic_session
from tests.conftest import run_cli

CODEX_SID = "019d70aa-1111-7222-8333-444455556666"
CLAUDE_SID = "5f2c1d4e-aaaa-bbbb-cccc-123456789abc"
CODEX_RULE = "Always run uv sync before the tests."
CODEX_CORRECTION = f"No, don't use pip here: this project installs with uv sync. {CODEX_RULE}"
DEAD_END = "uv run pytest -q"


@pytest.fixture
def repo(workspace: Path) -> Path:
    subprocess.run(["git", "init", "-q", str(workspace)], check=True)
    return workspace


class Rollout:
    """A rollout Codex is writing, line by line, in the current (0.125) shapes."""

    def __init__(self, home: Path, cwd: Path) -> None:
        folder = home / "sessions" / "2026" / "05" / "20"
        folder.mkdir(parents=True, exist_ok=True)
        self.path = folder / f"rollout-2026-05-20T08-00-00-{CODEX_SID}.jsonl"
        self.cwd = cwd
        self.total = [0, 0, 0]
        self.line(
            "session_meta",
            {"id": CODEX_SID, "cwd": str(cwd), "cli_version": "0.125.0", "source": "cli"},
        )

    def line(self, kind: str, payload: dict[str, Any]) -> None:
        # Written as it happens: the hooks record their calls at the same clock.
        stamp = datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")
        with self.path.open("a") as handle:
            handle.write(json.dumps({"timestamp": stamp, "type": kind, "payload": payload}) + "\n")

    def prompt(self, text: str) -> None:
        self.line("event_msg", {"type": "user_message", "message": text, "images": []})
        self.line("turn_context", {"cwd": str(self.cwd), "model": "gpt-5.5-codex"})

    def tokens(self, fresh: int, cached: int, output: int) -> None:
        self.total = [
            self.total[0] + fresh + cached,
            self.total[1] + cached,
            self.total[2] + output,
        ]
        usage = {
            "input_tokens": self.total[0],
            "cached_input_tokens": self.total[1],
            "output_tokens": self.total[2],
            "reasoning_output_tokens": 0,
            "total_tokens": self.total[0] + self.total[2],
        }
        self.line("event_msg", {"type": "token_count", "info": {"total_token_usage": usage}})

    def command(self, call_id: str, command: str, code: int, output: str) -> str:
        self.line(
            "response_item",
            {
                "type": "function_call",
                "name": "exec_command",
                "arguments": json.dumps({"cmd": command}),
                "call_id": call_id,
            },
        )
        text = f"Chunk ID: 1\nWall time: 0.5 seconds\nProcess exited with code {code}\nOutput:\n{output}"
        self.line(
            "response_item", {"type": "function_call_output", "call_id": call_id, "output": text}
        )
        return text

    def reply(self, text: str) -> None:
        self.line(
            "response_item",
            {
                "type": "message",
                "role": "assistant",
                "content": [{"type": "output_text", "text": text}],
            },
        )


def codex_hook(repo: Path, event: str, rollout: Rollout, **extra: Any) -> str:
    payload = {
        "session_id": CODEX_SID,
        "transcript_path": str(rollout.path),
        "cwd": str(repo),
        "hook_event_name": event,
        "model": "gpt-5.5-codex",
        "permission_mode": "default",
        **extra,
    }
    done = run_cli("hook", "codex", event, cwd=repo, stdin=json.dumps(payload))
    assert done.code == 0 and done.stderr == "", done.stderr
    return done.stdout


def claude_session_start(repo: Path, session: str) -> str:
    done = run_cli(
        "hook",
        "claude-code",
        "SessionStart",
        cwd=repo,
        stdin=hook_payload("SessionStart", session, repo, source="startup"),
    )
    assert done.code == 0, done.stderr
    return json.loads(done.stdout)["hookSpecificOutput"]["additionalContext"] if done.stdout else ""


def run_codex_session(repo: Path, home: Path) -> Rollout:
    """A Codex session as its hooks see it: the same command fails three times, another works,
    then the user corrects the agent."""
    rollout = Rollout(home, repo)
    codex_hook(repo, "SessionStart", rollout, source="startup")
    codex_hook(repo, "UserPromptSubmit", rollout, turn_id="t1", prompt="Run the test suite")
    rollout.prompt("Run the test suite")
    for attempt in range(3):
        rollout.tokens(fresh=900, cached=3000 * attempt, output=40)
        output = rollout.command(
            f"call_dead_{attempt}",
            DEAD_END,
            1,
            "ImportError while loading conftest: ModuleNotFoundError: No module named 'shop'\n",
        )
        codex_hook(
            repo,
            "PostToolUse",
            rollout,
            turn_id="t1",
            tool_name="Bash",
            tool_use_id=f"call_dead_{attempt}",
            tool_input={"command": DEAD_END},
            tool_response=output,
        )
    rollout.command("call_works", "uv run --package shop pytest -q", 0, "12 passed in 0.4s\n")
    rollout.tokens(fresh=300, cached=9000, output=120)
    rollout.reply("The suite passes when run inside the shop package.")
    codex_hook(
        repo,
        "Stop",
        rollout,
        turn_id="t1",
        stop_hook_active=False,
        last_assistant_message="The suite passes when run inside the shop package.",
    )
    codex_hook(repo, "UserPromptSubmit", rollout, turn_id="t2", prompt=CODEX_CORRECTION)
    rollout.prompt(CODEX_CORRECTION)
    rollout.tokens(fresh=200, cached=12000, output=30)
    rollout.reply("Understood: uv sync it is.")
    codex_hook(
        repo,
        "Stop",
        rollout,
        turn_id="t2",
        stop_hook_active=False,
        last_assistant_message="Understood: uv sync it is.",
    )
    return rollout


def _db(repo: Path) -> sqlite3.Connection:
    conn = sqlite3.connect(repo / ".engram" / "engram.db")
    conn.row_factory = sqlite3.Row
    return conn


def test_a_codex_sessions_lessons_reach_the_next_claude_code_session(
    repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CODEX_HOME", str(tmp_path / "codex-home"))
    # Negative control: before the Codex session, Claude Code is told none of it.
    before = claude_session_start(repo, "claude-before")
    assert CODEX_CORRECTION not in before and DEAD_END not in before
    run_codex_session(repo, tmp_path / "codex-home")
    told = claude_session_start(repo, "claude-after")
    assert CODEX_CORRECTION in told
    rules = told[told.index("## Rules the user stated") :]
    assert CODEX_RULE in rules
    assert f"`{DEAD_END}` failed 3 times" in told
    assert "ModuleNotFoundError: No module named 'shop'" in told
    assert "what worked instead: `uv run --package shop pytest -q`" in told
    # Hooks and the rollout saw the same session: each thing once.
    with _db(repo) as conn:
        prompts = conn.execute(
            "SELECT COUNT(*) FROM agent_prompts WHERE session_id = ?", (CODEX_SID,)
        ).fetchone()[0]
        calls = conn.execute(
            "SELECT COUNT(*) FROM agent_tool_uses WHERE session_id = ?", (CODEX_SID,)
        ).fetchone()[0]
    assert (prompts, calls) == (2, 4)
    metrics = run_cli("session", "metrics", CODEX_SID, "--json", cwd=repo).json()
    assert metrics["turns"] == 2
    assert (metrics["tool_calls"], metrics["tool_calls_failed"]) == (4, 3)
    # Codex's own total after each response, never a sum of repeated figures.
    assert metrics["tokens"]["all"]["total_tokens"] == (
        (900 + 40) + (900 + 3000 + 40) + (900 + 6000 + 40) + (300 + 9000 + 120) + (200 + 12000 + 30)
    )
    listed = run_cli("session", "list", cwd=repo).stdout
    assert f"{CODEX_SID}" in listed and "codex, 2 turns" in listed
    log = repo / ".engram" / "engram.log"
    assert not log.exists() or "ERROR" not in log.read_text()
    # Ingesting the rollout afterwards counts nothing again.
    again = run_cli("ingest", "codex", "--json", cwd=repo)
    assert again.code == 0, again.stderr
    assert run_cli("session", "metrics", CODEX_SID, "--json", cwd=repo).json() == metrics


def test_a_claude_code_sessions_lessons_reach_the_next_codex_session(
    repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CODEX_HOME", str(tmp_path / "codex-home"))
    transcript, _ = realistic_session(repo, CLAUDE_SID)
    path = transcript.save(tmp_path / f"{CLAUDE_SID}.jsonl")
    rollout = Rollout(tmp_path / "codex-home", repo)
    # Negative control: a Codex session started before knows nothing of it.
    before = codex_hook(repo, "SessionStart", rollout, source="startup")
    assert CORRECTION not in before
    done = run_cli(
        "hook", "claude-code", "Stop", cwd=repo, stdin=hook_payload("Stop", CLAUDE_SID, repo, path)
    )
    assert done.code == 0, done.stderr
    out = codex_hook(repo, "SessionStart", rollout, source="resume")
    # What Codex reads from a SessionStart hook: hookSpecificOutput.additionalContext.
    context = json.loads(out)["hookSpecificOutput"]
    assert context["hookEventName"] == "SessionStart"
    assert CORRECTION in context["additionalContext"]


def test_the_compaction_hook_says_what_the_rollout_does_not(
    repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CODEX_HOME", str(tmp_path / "codex-home"))
    rollout = Rollout(tmp_path / "codex-home", repo)
    rollout.prompt("Summarise the design doc")
    rollout.tokens(fresh=200_000, cached=0, output=900)
    codex_hook(repo, "PreCompact", rollout, turn_id="t1", trigger="manual")
    rollout.line("compacted", {"message": "The design doc says: one store per workspace."})
    codex_hook(repo, "PostCompact", rollout, turn_id="t1", trigger="manual")
    with _db(repo) as conn:
        rows = conn.execute(
            "SELECT trigger, summary FROM agent_compactions WHERE session_id = ?", (CODEX_SID,)
        ).fetchall()
    assert [tuple(row) for row in rows] == [
        ("manual", "The design doc says: one store per workspace.")
    ]
    # PreCompact wrote a digest before the context went.
    assert list((repo / ".engram" / "exports" / "digests").glob(f"{CODEX_SID}-*.yaml"))


def test_codex_payloads_never_break_codex(repo: Path, tmp_path: Path) -> None:
    for event, stdin in (
        ("Stop", json.dumps({"session_id": CODEX_SID, "transcript_path": str(tmp_path)})),
        ("PostToolUse", "{not json"),
        ("PermissionRequest", json.dumps({"session_id": CODEX_SID, "tool_name": "Bash"})),
        ("SessionStart", json.dumps([1, 2, 3])),
        ("PostToolUse", json.dumps({"session_id": CODEX_SID, "tool_name": 7, "cwd": 3})),
    ):
        done = run_cli("hook", "codex", event, cwd=repo, stdin=stdin)
        assert (done.code, done.stderr) == (0, ""), (event, done.stderr)
    log = (repo / ".engram" / "engram.log").read_text()
    # Logged for whoever looks into it, never shown to Codex.
    assert "hook codex PostToolUse failed: UsageError: hook input is not JSON" in log
    assert "hook codex SessionStart failed: UsageError: hook input is a JSON list" in log


def test_a_tool_call_is_judged_as_its_rollout_would_judge_it(repo: Path) -> None:
    """Whichever records a call first (hook or rollout), it is failed or not the same way:
    the exit code Codex reports decides, not words in the command's own output."""
    cases = {
        "call_ok": "Process exited with code 0\nOutput:\nError: Exit code 1 (a test of the CLI)\n",
        "call_bad": "Chunk ID: 4\nWall time: 0.3 seconds\nProcess exited with code 2\nOutput:\nno\n",
        "call_read": "Error: Exit code 1 is what the CI log says",  # no exit reported
    }
    for call_id, response in cases.items():
        payload = {
            "session_id": CODEX_SID,
            "transcript_path": None,
            "cwd": str(repo),
            "hook_event_name": "PostToolUse",
            "tool_name": "Bash",
            "tool_use_id": call_id,
            "tool_input": {"command": f"run {call_id}"},
            "tool_response": response,
        }
        done = run_cli("hook", "codex", "PostToolUse", cwd=repo, stdin=json.dumps(payload))
        assert (done.code, done.stderr) == (0, "")
    with _db(repo) as conn:
        outcomes = dict(conn.execute("SELECT tool_use_id, ok FROM agent_tool_uses").fetchall())
    assert outcomes == {"call_ok": 1, "call_bad": 0, "call_read": 1}


def test_a_patch_codex_is_about_to_apply_brings_its_files_gotchas(repo: Path) -> None:
    done = run_cli(
        "gotcha",
        "add",
        "Never call load() at import time in shop/db.py",
        "--file",
        "shop/db.py",
        cwd=repo,
    )
    assert done.code == 0, done.stderr
    patch = "*** Begin Patch\n*** Update File: shop/db.py\n@@\n-x\n+y\n*** End Patch\n"
    payload = {
        "session_id": CODEX_SID,
        "transcript_path": None,
        "cwd": str(repo),
        "hook_event_name": "PreToolUse",
        "tool_name": "apply_patch",
        "tool_use_id": "call_p",
        "tool_input": {"command": patch},
    }
    out = run_cli("hook", "codex", "PreToolUse", cwd=repo, stdin=json.dumps(payload))
    context = json.loads(out.stdout)["hookSpecificOutput"]
    assert context["hookEventName"] == "PreToolUse"
    assert "load() at import time" in context["additionalContext"]
    # Another file: nothing to say, and nothing printed.
    payload["tool_input"] = {"command": patch.replace("shop/db.py", "shop/ui.py")}
    quiet = run_cli("hook", "codex", "PreToolUse", cwd=repo, stdin=json.dumps(payload))
    assert (quiet.code, quiet.stdout) == (0, "")


# -- the installer ------------------------------------------------------------------------------


def test_install_merges_into_the_users_hooks_json(repo: Path, tmp_path: Path) -> None:
    home = tmp_path / "codex-home"
    home.mkdir()
    theirs = {
        "hooks": {
            "Stop": [{"hooks": [{"type": "command", "command": "notify-send done", "timeout": 5}]}],
            "PreToolUse": [
                {"matcher": "Bash", "hooks": [{"type": "command", "command": "./guard.sh"}]}
            ],
        }
    }
    (home / "hooks.json").write_text(json.dumps(theirs, indent=2))
    env = {"CODEX_HOME": str(home)}
    done = run_cli("hooks", "install", "codex", "--user", "--json", cwd=repo, env=env)
    assert done.code == 0, done.stderr
    assert "/hooks" in done.json()["note"]  # Codex asks the user to trust new hooks
    data = json.loads((home / "hooks.json").read_text())
    assert data["hooks"]["Stop"][0] == theirs["hooks"]["Stop"][0]
    assert data["hooks"]["PreToolUse"][0] == theirs["hooks"]["PreToolUse"][0]
    events = {
        event
        for event, groups in data["hooks"].items()
        for group in groups
        for handler in group["hooks"]
        if "hook codex" in handler["command"]
    }
    assert events == {
        "SessionStart",
        "UserPromptSubmit",
        "PreToolUse",
        "PostToolUse",
        "PreCompact",
        "PostCompact",
        "Stop",
    }
    twice = run_cli("hooks", "install", "codex", "--user", "--json", cwd=repo, env=env)
    assert twice.json()["changed"] is False
    removed = run_cli("hooks", "uninstall", "codex", "--user", "--json", cwd=repo, env=env)
    assert removed.json()["removed"] == 7
    assert json.loads((home / "hooks.json").read_text()) == theirs


CONFIG_TOML = """# my Codex settings
model = "gpt-5.5-codex"  # the one I like

[hooks]
# tells me when a turn ends
[[hooks.Stop]]
hooks = [{ type = "command", command = "notify-send done" }]  # keep me

[hooks.state."/home/me/.codex/config.toml:stop:0:0"]
trusted_hash = "sha256:0f3c"

[projects."/home/me/work"]
trust_level = "trusted"
"""


def test_install_writes_into_config_toml_when_the_users_hooks_are_there(
    repo: Path, tmp_path: Path
) -> None:
    home = tmp_path / "codex-home"
    home.mkdir()
    config = home / "config.toml"
    config.write_text(CONFIG_TOML)
    env = {"CODEX_HOME": str(home)}
    done = run_cli("hooks", "install", "codex", "--user", "--json", cwd=repo, env=env)
    assert done.code == 0, done.stderr
    assert done.json()["settings"] == str(config)
    assert not (home / "hooks.json").exists()  # one representation per layer, as Codex asks
    text = config.read_text()
    for kept in (
        "# my Codex settings",
        "# the one I like",
        "# tells me when a turn ends",
        "# keep me",
    ):
        assert kept in text
    parsed = tomllib.loads(text)
    assert parsed["model"] == "gpt-5.5-codex"
    assert parsed["projects"]["/home/me/work"] == {"trust_level": "trusted"}
    assert parsed["hooks"]["state"] == {
        "/home/me/.codex/config.toml:stop:0:0": {"trusted_hash": "sha256:0f3c"}
    }
    stop = parsed["hooks"]["Stop"]
    assert stop[0] == {"hooks": [{"type": "command", "command": "notify-send done"}]}
    assert stop[1]["hooks"][0]["command"].endswith("hook codex Stop")
    assert parsed["hooks"]["PreToolUse"][0]["matcher"] == "apply_patch"
    assert parsed["hooks"]["PreCompact"][0]["hooks"][0]["timeout"] == 60
    assert (
        run_cli("hooks", "install", "codex", "--user", "--json", cwd=repo, env=env).json()[
            "changed"
        ]
        is False
    )
    assert config.read_text() == text
    removed = run_cli("hooks", "uninstall", "codex", "--user", "--json", cwd=repo, env=env)
    assert removed.json()["removed"] == 7
    assert config.read_text() == CONFIG_TOML


def test_install_refuses_a_broken_config_and_leaves_it_untouched(
    repo: Path, tmp_path: Path
) -> None:
    project = repo / ".codex"
    project.mkdir()
    (project / "config.toml").write_text("[hooks\nmodel = ")
    done = run_cli("hooks", "install", "codex", cwd=repo)
    assert done.code == 2 and "not valid TOML" in done.stderr and "Traceback" not in done.stderr
    assert (project / "config.toml").read_text() == "[hooks\nmodel = "
    assert not (project / "hooks.json").exists()


def test_project_install_writes_the_projects_hooks_json(repo: Path) -> None:
    done = run_cli("hooks", "install", "codex", "--json", cwd=repo)
    assert done.code == 0, done.stderr
    path = repo / ".codex" / "hooks.json"
    assert done.json()["settings"] == str(path)
    assert "SessionStart" in json.loads(path.read_text())["hooks"]
