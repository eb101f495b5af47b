"""What each hook event leaves behind and tells the agent, run in this process through the same
entry point `engram hook` uses (`hooks.handle`), on payloads shaped as Claude Code sends them
(without a transcript file, so the payload itself is the source)."""

from __future__ import annotations

import json
import re
import sqlite3
import subprocess
from pathlib import Path
from typing import Any

import pytest

from memory_core import gotchas, sessions
from memory_core.agents import hooks
from memory_core.store import Store
from tests.agents_fixtures import hook_payload

SID = "9a8b7c6d-1234-5678-9abc-def012345678"
T0 = 1_800_000_000.0
SECRET = "ghp_" + "Zy9Xw8Vu7T" * 3 + "abc123"


@pytest.fixture
def repo(workspace: Path) -> Path:
    subprocess.run(["git", "init", "-q", str(workspace)], check=True)
    return workspace


def hook(repo: Path, event: str, at: float, session: str | None = SID, **extra: Any) -> str:
    payload = json.loads(hook_payload(event, session or "", repo, **extra))
    if session is None:
        payload.pop("session_id")
    code, out = hooks.handle("claude-code", event, json.dumps(payload), now=at)
    assert code == 0
    return out


def rows(repo: Path, sql: str, *params: object) -> list[tuple[Any, ...]]:
    with sqlite3.connect(repo / ".engram" / "engram.db") as conn:
        return [tuple(r) for r in conn.execute(sql, params)]


def log_text(repo: Path) -> str:
    path = repo / ".engram" / "engram.log"
    return path.read_text(encoding="utf-8") if path.exists() else ""


def test_a_session_from_start_to_end_through_the_payloads(repo: Path) -> None:
    hook(repo, "SessionStart", T0, source="startup", model="claude-opus-4-6")
    hook(repo, "UserPromptSubmit", T0 + 1, prompt=f"deploy with {SECRET}", prompt_id="p1")
    hook(
        repo,
        "PostToolUse",
        T0 + 2,
        tool_name="Bash",
        tool_use_id="toolu_1",
        tool_input={"command": "ls src"},
        tool_response={"stdout": "a.py", "stderr": "", "interrupted": False},
    )
    hook(repo, "Stop", T0 + 3, last_assistant_message="Listed the sources.")
    hook(repo, "UserPromptSubmit", T0 + 4, prompt="and now the tests", prompt_id="p2")
    hook(repo, "Stop", T0 + 5, last_assistant_message="Ran them.")
    hook(repo, "SessionEnd", T0 + 6, reason="prompt_input_exit")

    with Store.open(repo) as store:
        turns = sessions.history(store, SID)
        assert [(t["user_message"], t["assistant_response"]) for t in turns] == [
            ("deploy with [REDACTED:github-token]", "Listed the sources."),
            ("and now the tests", "Ran them."),
        ]
        session = sessions.get(store, SID)
        assert session["status"] == "closed"
        assert session["agent"] == "claude-code"
        assert "Listed the sources." in (session["rolling_summary"] or "")
        metrics = sessions.metrics(store, SID)
        assert (metrics["turns"], metrics["tool_calls"], metrics["commands"]) == (2, 1, 1)
    assert rows(repo, "SELECT ended_at, end_reason, model FROM agent_sessions") == [
        (T0 + 6, "prompt_input_exit", "claude-opus-4-6")
    ]
    triggers = [r[0] for r in rows(repo, "SELECT trigger FROM digests ORDER BY ts")]
    assert triggers[0] == "stop" and triggers[-1] == "session_end"
    blob = (repo / ".engram" / "engram.db").read_bytes()
    assert SECRET.encode() not in blob
    assert "failed" not in log_text(repo)


def test_a_failed_command_is_tracked_with_its_exit_code_and_an_interrupted_one_is_not(
    repo: Path,
) -> None:
    hook(repo, "SessionStart", T0, source="startup")
    for n in range(3):
        hook(
            repo,
            "PostToolUseFailure",
            T0 + 1 + n,
            tool_name="Bash",
            tool_use_id=f"toolu_f{n}",
            tool_input={"command": f"make build --token {SECRET}"},
            error="Exit code 2\nmake: *** No rule to make target 'build'.  Stop.",
            is_interrupt=False,
        )
    hook(
        repo,
        "PostToolUseFailure",
        T0 + 10,
        tool_name="Bash",
        tool_use_id="toolu_int",
        tool_input={"command": "sleep 100"},
        error="Command interrupted",
        is_interrupt=True,
    )
    commands = rows(repo, "SELECT command, exit_code FROM session_commands ORDER BY ts")
    assert commands[:3] == [("make build --token [REDACTED:github-token]", 2)] * 3
    assert commands[3][0] == "sleep 100" and commands[3][1] != 0
    occurrences = rows(repo, "SELECT message, command, tool, session_id FROM error_occurrences")
    assert (
        occurrences
        == [
            (
                "make: *** No rule to make target 'build'.  Stop.",
                "make build --token [REDACTED:github-token]",
                "Bash",
                SID,
            )
        ]
        * 3
    )
    with Store.open(repo) as store:
        [learned] = gotchas.list_gotchas(store)
        assert learned.occurrences == 3 and learned.status == "candidate"
        metrics = sessions.metrics(store, SID)
        assert (metrics["tool_calls"], metrics["tool_calls_failed"]) == (4, 4)


def test_the_same_tool_call_reported_twice_counts_once(repo: Path) -> None:
    hook(repo, "SessionStart", T0, source="startup")
    for at in (T0 + 1, T0 + 2):
        hook(
            repo,
            "PostToolUse",
            at,
            tool_name="Bash",
            tool_use_id="toolu_same",
            tool_input={"command": "echo hi"},
            tool_response={"stdout": "hi", "stderr": "", "interrupted": False},
        )
    assert rows(repo, "SELECT COUNT(*) FROM session_commands") == [(1,)]
    assert rows(repo, "SELECT COUNT(*) FROM session_tool_calls") == [(1,)]


def test_a_file_edit_reaches_the_session_and_file_evolution(repo: Path) -> None:
    (repo / "src").mkdir()
    (repo / "src" / "app.py").write_text("x = 2\n")
    hook(repo, "SessionStart", T0, source="startup")
    hook(
        repo,
        "PostToolUse",
        T0 + 1,
        tool_name="Edit",
        tool_use_id="toolu_e",
        tool_input={
            "file_path": str(repo / "src" / "app.py"),
            "old_string": "1",
            "new_string": "2",
        },
        tool_response={
            "filePath": str(repo / "src" / "app.py"),
            "originalFile": "x = 1\n",
            "structuredPatch": [{"oldStart": 1, "oldLines": 1, "newStart": 1, "newLines": 1}],
        },
    )
    assert rows(repo, "SELECT session_id, path FROM session_files") == [(SID, "src/app.py")]
    assert rows(repo, "SELECT path, actor, session_id, lines FROM file_changes") == [
        ("src/app.py", "agent", SID, "[[1, 1]]")
    ]


def test_the_agent_is_told_the_gotchas_of_the_file_it_is_about_to_edit(repo: Path) -> None:
    (repo / "db.py").write_text("conn = pool.get()\n")
    with Store.init(repo) as store:
        gotchas.add(
            store,
            "Pool exhaustion under load",
            workaround="release connections in finally",
            related_files=["db.py"],
        )
    out = hook(
        repo,
        "PreToolUse",
        T0,
        tool_name="Edit",
        tool_use_id="toolu_pre",
        tool_input={"file_path": str(repo / "db.py"), "old_string": "a", "new_string": "b"},
    )
    context = json.loads(out)["hookSpecificOutput"]
    assert context["hookEventName"] == "PreToolUse"
    assert context["additionalContext"].startswith("engram: known gotchas for db.py\n")
    assert "Pool exhaustion under load" in context["additionalContext"]
    # A read-only tool, or a file without gotchas: nothing is said.
    assert hook(repo, "PreToolUse", T0, tool_name="Read", tool_input={"file_path": "db.py"}) == ""
    (repo / "other.py").write_text("x = 1\n")
    assert (
        hook(
            repo,
            "PreToolUse",
            T0,
            tool_name="Edit",
            tool_input={"file_path": str(repo / "other.py"), "old_string": "x", "new_string": "y"},
        )
        == ""
    )


def test_a_prompt_about_a_known_problem_brings_its_gotcha_into_the_context(repo: Path) -> None:
    with Store.init(repo) as store:
        gotchas.add(
            store,
            "Postgres must run before the integration tests",
            workaround="docker compose up -d db",
            error_pattern="ECONNREFUSED",
        )
    out = hook(
        repo,
        "UserPromptSubmit",
        T0,
        prompt="the integration tests fail with ECONNREFUSED on postgres",
        prompt_id="p1",
    )
    context = json.loads(out)["hookSpecificOutput"]
    assert context["hookEventName"] == "UserPromptSubmit"
    assert "docker compose up -d db" in context["additionalContext"]
    # Negative control: an unrelated prompt gets no context.
    assert hook(repo, "UserPromptSubmit", T0 + 1, prompt="rename a variable", prompt_id="p2") == ""


def test_session_start_tells_the_next_agent_what_the_last_session_left(repo: Path) -> None:
    hook(repo, "SessionStart", T0, source="startup")
    hook(repo, "UserPromptSubmit", T0 + 1, prompt="add the health endpoint", prompt_id="p1")
    hook(repo, "Stop", T0 + 2, last_assistant_message="Added GET /health returning 200.")
    hook(repo, "SessionEnd", T0 + 3, reason="prompt_input_exit")
    out = hook(repo, "SessionStart", T0 + 100, session="next-session-0001", source="startup")
    context = json.loads(out)["hookSpecificOutput"]
    assert context["hookEventName"] == "SessionStart"
    assert "Added GET /health returning 200." in context["additionalContext"]


def test_a_compaction_summary_is_kept_redacted(repo: Path) -> None:
    hook(repo, "SessionStart", T0, source="startup")
    hook(repo, "PreCompact", T0 + 1, trigger="manual", custom_instructions="")
    hook(
        repo,
        "PostCompact",
        T0 + 2,
        trigger="manual",
        compact_summary=f"We deployed with token {SECRET}.",
    )
    [(session, trigger, kept)] = rows(
        repo, "SELECT session_id, trigger, summary FROM agent_compactions"
    )
    assert (session, trigger) == (SID, "manual")
    assert kept.startswith("We deployed with token [REDACTED:") and SECRET not in kept
    assert [r[0] for r in rows(repo, "SELECT trigger FROM digests")] == ["manual"]


def test_a_payload_without_a_session_is_logged_and_stores_nothing(repo: Path) -> None:
    Store.init(repo).close()
    assert (
        hook(
            repo,
            "PostToolUse",
            T0,
            session=None,
            tool_name="Bash",
            tool_input={"command": "ls"},
        )
        == ""
    )
    assert rows(repo, "SELECT COUNT(*) FROM agent_sessions") == [(0,)]
    assert rows(repo, "SELECT COUNT(*) FROM session_commands") == [(0,)]
    assert "payload without session_id ignored" in log_text(repo)


def test_a_hook_outside_any_store_creates_none(tmp_path: Path) -> None:
    plain = tmp_path / "not-a-repo"
    plain.mkdir()
    assert hook(plain, "PostToolUse", T0, tool_name="Bash", tool_input={"command": "ls"}) == ""
    assert not (plain / ".engram").exists()


def test_the_digest_timer_writes_a_digest_only_when_one_is_due(repo: Path) -> None:
    (repo / ".engram").mkdir()
    (repo / ".engram" / "config.toml").write_text("[agents]\ndigest_interval_minutes = 10\n")
    hook(repo, "SessionStart", T0, source="startup")

    def post(at: float, n: int) -> None:
        hook(
            repo,
            "PostToolUse",
            at,
            tool_name="Bash",
            tool_use_id=f"toolu_{n}",
            tool_input={"command": "true"},
            tool_response={"stdout": "", "stderr": "", "interrupted": False},
        )

    post(T0 + 60, 1)
    assert rows(repo, "SELECT COUNT(*) FROM digests") == [(0,)]
    post(T0 + 601, 2)
    assert rows(repo, "SELECT trigger FROM digests") == [("timer",)]
    post(T0 + 700, 3)
    assert rows(repo, "SELECT COUNT(*) FROM digests") == [(1,)]


def test_an_internal_error_in_a_hook_is_logged_and_the_agent_is_not_failed(repo: Path) -> None:
    (repo / ".engram").mkdir()
    (repo / ".engram" / "engram.db").write_bytes(b"not a database" * 100)
    code, out = hooks.handle(
        "claude-code",
        "PostToolUse",
        hook_payload("PostToolUse", SID, repo, tool_name="Bash", tool_input={"command": "ls"}),
        now=T0,
    )
    assert (code, out) == (0, "")
    logged = log_text(repo)
    assert "hook claude-code PostToolUse failed: " in logged
    assert "is damaged or not an engram store" in logged


def test_gemini_events_map_onto_the_same_steps(repo: Path) -> None:
    def gemini(event: str, at: float, **extra: Any) -> None:
        payload = {"session_id": "gem-1", "cwd": str(repo), "hook_event_name": event, **extra}
        code, _out = hooks.handle("gemini", event, json.dumps(payload), now=at)
        assert code == 0

    gemini("SessionStart", T0, source="startup")
    gemini("BeforeAgent", T0 + 1, prompt="fix the build")
    gemini(
        "AfterTool",
        T0 + 2,
        tool_name="run_shell_command",
        tool_input={"command": "make"},
        tool_response={"llmContent": "ok", "returnDisplay": "ok"},
    )
    gemini("AfterAgent", T0 + 3, prompt="fix the build", prompt_response="Fixed the Makefile.")
    gemini("SessionEnd", T0 + 4, reason="exit")
    with Store.open(repo) as store:
        turns = sessions.history(store, "gem-1")
        assert [(t["user_message"], t["assistant_response"]) for t in turns] == [
            ("fix the build", "Fixed the Makefile.")
        ]
        assert sessions.get(store, "gem-1")["status"] == "closed"


@pytest.mark.parametrize(
    ("source", "kind"),
    [("startup", "new"), ("resume", "existing"), ("compact", "existing"), ("fork", "existing")],
)
def test_a_resumed_or_forked_session_is_recorded_as_continuing_earlier_work(
    repo: Path, source: str, kind: str
) -> None:
    hook(repo, "SessionStart", T0, source=source)
    with Store.open(repo) as store:
        assert sessions.get(store, SID)["session_type"] == kind


def test_a_second_prompt_without_a_stop_closes_the_first_turn(repo: Path) -> None:
    hook(repo, "UserPromptSubmit", T0, prompt="first ask", prompt_id="p1")
    hook(repo, "UserPromptSubmit", T0 + 5, prompt="second ask", prompt_id="p2")
    hook(repo, "Stop", T0 + 9, last_assistant_message="Done with both.")
    with Store.open(repo) as store:
        turns = sessions.history(store, SID)
    assert [(t["user_message"], t["assistant_response"]) for t in turns] == [
        ("first ask", ""),
        ("second ask", "Done with both."),
    ]


def test_a_prompt_brings_at_most_three_gotchas(repo: Path) -> None:
    with Store.init(repo) as store:
        for n in range(5):
            gotchas.add(store, f"Flaky integration test number {n}", error_pattern=f"flake-{n}")
    out = hook(
        repo, "UserPromptSubmit", T0, prompt="the flaky integration test fails", prompt_id="p1"
    )
    context = json.loads(out)["hookSpecificOutput"]["additionalContext"]
    assert sum(f"Flaky integration test number {n}" in context for n in range(5)) == 3


def test_an_edit_named_relative_to_the_agents_folder_finds_that_files_gotchas(
    repo: Path,
) -> None:
    (repo / "src").mkdir()
    (repo / "src" / "db.py").write_text("pool.get()\n")
    with Store.init(repo) as store:
        gotchas.add(store, "Pool exhaustion", related_files=["src/db.py"])
    payload = json.loads(
        hook_payload(
            "PreToolUse",
            SID,
            repo / "src",
            tool_name="Edit",
            tool_input={"file_path": "db.py", "old_string": "a", "new_string": "b"},
        )
    )
    code, out = hooks.handle("claude-code", "PreToolUse", json.dumps(payload), now=T0)
    assert code == 0
    assert json.loads(out)["hookSpecificOutput"]["additionalContext"].startswith(
        "engram: known gotchas for src/db.py\n"
    )


def test_an_interrupted_call_without_a_message_is_stored_as_interrupted(repo: Path) -> None:
    # The user pressed Esc: Claude Code reports the call with `interrupted` and no error text.
    hook(
        repo,
        "PostToolUse",
        T0,
        tool_name="Bash",
        tool_use_id="toolu_i",
        tool_input={"command": "sleep 50"},
        tool_response={"stdout": "", "stderr": "", "interrupted": True},
    )
    assert rows(repo, "SELECT ok, error FROM agent_tool_uses") == [(0, "interrupted")]
    hook(
        repo,
        "PostToolUse",
        T0 + 1,
        tool_name="Bash",
        tool_use_id="toolu_ok",
        tool_input={"command": "true"},
        tool_response={"stdout": "", "stderr": "", "interrupted": False},
    )
    assert rows(repo, "SELECT command, exit_code FROM session_commands ORDER BY ts")[-1] == (
        "true",
        0,
    )


def test_a_long_compaction_summary_is_kept_whole(repo: Path) -> None:
    summary = " ".join(f"Point {n} of the work so far." for n in range(400))
    assert len(summary) > 10_000
    hook(repo, "PostCompact", T0, trigger="auto", compact_summary=summary)
    assert rows(repo, "SELECT summary FROM agent_compactions") == [(summary,)]


def test_gemini_after_agent_alone_still_records_the_turn(repo: Path) -> None:
    payload = {
        "session_id": "gem-2",
        "cwd": str(repo),
        "hook_event_name": "AfterAgent",
        "prompt": "summarise the diff",
        "prompt_response": "Two files changed.",
    }
    code, _out = hooks.handle("gemini", "AfterAgent", json.dumps(payload), now=T0)
    assert code == 0
    with Store.open(repo) as store:
        turns = sessions.history(store, "gem-2")
    assert [(t["user_message"], t["assistant_response"]) for t in turns] == [
        ("summarise the diff", "Two files changed.")
    ]


def test_a_session_end_records_a_completion(repo: Path) -> None:
    hook(repo, "SessionStart", T0, source="startup")
    hook(repo, "SessionEnd", T0 + 1, reason="logout")
    with Store.open(repo) as store:
        session = sessions.get(store, SID)
    assert (session["status"], session["end_reason"]) == ("closed", "completion")
    assert rows(repo, "SELECT end_reason FROM agent_sessions") == [("logout",)]


def test_the_hook_command_prints_the_context_as_one_json_line(
    repo: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import io
    import sys

    with Store.init(repo) as store:
        gotchas.add(store, "Run migrations first", error_pattern="no such table")
    payload = hook_payload(
        "UserPromptSubmit", SID, repo, prompt="tests say no such table: users", prompt_id="p"
    )
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(payload.encode())))
    assert hooks.main("claude-code", "UserPromptSubmit") == 0
    out = capsys.readouterr().out
    assert out.endswith("}\n") and out.count("\n") == 1
    assert "Run migrations first" in json.loads(out)["hookSpecificOutput"]["additionalContext"]


def test_a_transcript_path_from_another_agent_is_not_read_as_claudes(repo: Path) -> None:
    from tests.agents_fixtures import Transcript

    t = Transcript("gem-3", repo)
    t.prompt("from a claude-looking file")
    path = t.save(repo / "elsewhere.jsonl")
    payload = {
        "session_id": "gem-3",
        "cwd": str(repo),
        "transcript_path": str(path),
        "hook_event_name": "BeforeAgent",
        "prompt": "from the payload",
    }
    code, _out = hooks.handle("gemini", "BeforeAgent", json.dumps(payload), now=T0)
    assert code == 0
    assert rows(repo, "SELECT text FROM agent_prompts") == [("from the payload",)]


def test_a_payload_without_cwd_uses_the_agents_project_variable(
    repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CLAUDE_PROJECT_DIR", str(repo))
    monkeypatch.chdir(repo.parent)
    payload = json.loads(hook_payload("SessionStart", SID, repo, source="startup"))
    payload.pop("cwd")
    code, _out = hooks.handle("claude-code", "SessionStart", json.dumps(payload), now=T0)
    assert code == 0
    assert rows(repo, "SELECT session_id FROM agent_sessions") == [(SID,)]


@pytest.mark.parametrize(
    "payload",
    [
        b'{"session_id": "S", "cwd": ',
        # Nested deeper than the JSON decoder goes: said to be no JSON, not an internal error.
        b'{"session_id": "S", "tool_input": ' + b"[" * 100_000 + b"]" * 100_000 + b"}",
        # Decoded, but deeper than the scrubbing of what was decoded goes.
        b'{"session_id": "S", "tool_input": ' + b"[" * 900 + b"]" * 900 + b"}",
    ],
    ids=["cut-off", "nested-too-deeply", "nested-900-deep"],
)
def test_a_malformed_payload_is_logged_in_the_given_workspace(repo: Path, payload: bytes) -> None:
    Store.init(repo).close()
    code, out = hooks.handle("claude-code", "PostToolUse", payload, workspace=str(repo), now=T0)
    assert (code, out) == (0, "")
    log = log_text(repo)
    assert "hook claude-code PostToolUse failed: UsageError: hook input is" in log
    assert "RecursionError" not in log


def test_a_one_minute_digest_timer_works_and_a_turns_summary_is_kept_short(repo: Path) -> None:
    (repo / ".engram").mkdir()
    (repo / ".engram" / "config.toml").write_text("[agents]\ndigest_interval_minutes = 1\n")
    hook(repo, "SessionStart", T0, source="startup")
    hook(
        repo,
        "PostToolUse",
        T0 + 61,
        tool_name="Bash",
        tool_use_id="toolu_1",
        tool_input={"command": "true"},
        tool_response={"stdout": "", "stderr": "", "interrupted": False},
    )
    assert rows(repo, "SELECT trigger FROM digests") == [("timer",)]
    hook(repo, "UserPromptSubmit", T0 + 62, prompt="explain", prompt_id="p1")
    hook(repo, "Stop", T0 + 63, last_assistant_message="word " * 1000)
    with Store.open(repo) as store:
        summary = sessions.get(store, SID)["rolling_summary"] or ""
    # Cut to about 600 characters around a marker saying how much was left out.
    assert len(summary) < 700 and "characters cut" in summary


def test_a_command_whose_response_says_it_exited_non_zero_is_a_failure_with_its_stderr(
    repo: Path,
) -> None:
    # No error flag on the event: only the tool's structured response says the command failed.
    hook(
        repo,
        "PostToolUse",
        T0,
        tool_name="Bash",
        tool_use_id="toolu_lint",
        tool_input={"command": "npm run lint"},
        tool_response={
            "stdout": "",
            "stderr": "npm ERR! Missing script: lint",
            "exitCode": 1,
            "interrupted": False,
        },
    )
    assert rows(repo, "SELECT ok, error FROM agent_tool_uses") == [
        (0, "npm ERR! Missing script: lint")
    ]
    assert rows(repo, "SELECT command, exit_code FROM session_commands") == [("npm run lint", 1)]


def test_a_gotcha_whose_title_starts_with_no_gotcha_still_reaches_the_agent(repo: Path) -> None:
    with Store.init(repo) as store:
        gotchas.add(
            store,
            "No gotcha comments in vendored code",
            description="vendor/ is regenerated; annotations there are lost",
            error_pattern="vendored annotation lost",
        )
    out = hook(repo, "UserPromptSubmit", T0, prompt="why was my vendored annotation lost?")
    context = json.loads(out)["hookSpecificOutput"]["additionalContext"]
    assert "No gotcha comments in vendored code" in context
    # A prompt no gotcha is about adds nothing to the agent's context.
    assert hook(repo, "UserPromptSubmit", T0 + 1, prompt="rename the button") == ""


@pytest.mark.parametrize("variable", ["CLAUDE_PROJECT_DIR", "GEMINI_PROJECT_DIR", "GEMINI_CWD"])
def test_a_payload_without_cwd_is_recorded_in_the_folder_the_agent_names(
    repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, variable: str
) -> None:
    for name in ("CLAUDE_PROJECT_DIR", "GEMINI_PROJECT_DIR", "GEMINI_CWD"):
        monkeypatch.delenv(name, raising=False)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    monkeypatch.setenv(variable, str(repo))
    payload = {"session_id": "gem-7", "hook_event_name": "SessionStart", "source": "startup"}
    code, _out = hooks.handle("gemini", "SessionStart", json.dumps(payload), now=T0)
    assert code == 0
    assert rows(repo, "SELECT session_id FROM agent_sessions") == [("gem-7",)]
    assert not (elsewhere / ".engram").exists()


def test_an_ignored_payload_is_a_warning_and_a_failed_hook_an_error_with_its_traceback(
    repo: Path,
) -> None:
    Store.init(repo).close()
    hook(repo, "PostToolUse", T0, session=None, tool_name="Bash", tool_input={"command": "ls"})
    [warning] = log_text(repo).splitlines()
    assert " WARNING [" in warning
    assert warning.endswith("hook claude-code PostToolUse: payload without session_id ignored")
    (repo / ".engram" / "engram.db").write_bytes(b"not a database" * 100)
    hook(repo, "PostToolUse", T0 + 1, tool_name="Bash", tool_input={"command": "ls"})
    failure = log_text(repo).split("\n", 1)[1]
    assert " ERROR [" in failure
    assert "hook claude-code PostToolUse failed: StoreFaultError: " in failure
    # The traceback, for a bug report: where in engram it failed.
    assert "Traceback (most recent call last):" in failure
    assert "memory_core/store.py" in failure


def test_a_slash_command_is_remembered_as_the_sessions_last_command(repo: Path) -> None:
    hook(repo, "SessionStart", T0, source="startup")
    hook(repo, "UserPromptSubmit", T0 + 1, prompt="  /review src/app.py carefully", prompt_id="p1")
    hook(repo, "UserPromptSubmit", T0 + 2, prompt="thanks, now fix it", prompt_id="p2")
    [(last_commands,)] = rows(repo, "SELECT last_commands FROM sessions WHERE id = ?", SID)
    assert json.loads(last_commands) == ["/review"]


def test_a_prompt_delivered_twice_is_one_turn_that_keeps_its_answer(repo: Path) -> None:
    hook(repo, "SessionStart", T0, source="startup")
    hook(repo, "UserPromptSubmit", T0 + 1, prompt="fix the build", prompt_id="p1")
    hook(repo, "UserPromptSubmit", T0 + 2, prompt="fix the build", prompt_id="p1")
    hook(repo, "Stop", T0 + 3, last_assistant_message="Fixed the import in setup.py.")
    with Store.open(repo) as store:
        turns = sessions.history(store, SID)
    assert [(t["user_message"], t["assistant_response"]) for t in turns] == [
        ("fix the build", "Fixed the import in setup.py.")
    ]
    assert rows(repo, "SELECT text FROM agent_prompts") == [("fix the build",)]


def test_a_compaction_summary_is_kept_whole_up_to_20000_characters(repo: Path) -> None:
    hook(repo, "PostCompact", T0, trigger="auto", compact_summary="a" * 20_000)
    hook(repo, "PostCompact", T0 + 1, trigger="auto", compact_summary="b" * 20_001)
    [(whole,), (cut,)] = rows(repo, "SELECT summary FROM agent_compactions ORDER BY ts")
    assert whole == "a" * 20_000
    # One character over: cut in the middle to at most the limit, both ends kept, and the
    # count said is exactly what went.
    assert len(cut) <= 20_000
    head, marker, tail = cut.split("\n")
    assert head == tail == "b" * len(head) and len(head) >= 9_900
    assert marker == f"[... {20_001 - 2 * len(head)} characters cut ...]"


def test_session_start_context_stays_within_the_configured_token_budget(repo: Path) -> None:
    (repo / ".engram").mkdir()
    hook(repo, "SessionStart", T0, source="startup")
    for n in range(30):
        hook(repo, "UserPromptSubmit", T0 + 2 * n + 1, prompt=f"step {n}", prompt_id=f"p{n}")
        hook(
            repo,
            "Stop",
            T0 + 2 * n + 2,
            last_assistant_message=f"Step {n}: changed module_{n}.py and its tests. " * 4,
        )
    hook(repo, "SessionEnd", T0 + 100, reason="prompt_input_exit")

    def context_at_start(session: str) -> str:
        out = hook(repo, "SessionStart", T0 + 200, session=session, source="startup")
        return str(json.loads(out)["hookSpecificOutput"]["additionalContext"])

    roomy = context_at_start("next-0001")
    (repo / ".engram" / "config.toml").write_text("[agents]\ncontext_token_budget = 100\n")
    tight = context_at_start("next-0002")
    # The budget is for the memory of earlier sessions; the continuity line and the reminder
    # about unsummarised sessions follow it.
    assert "\n\nContinuing (existing session)" in roomy and "\n\nContinuing" in tight
    assert len(roomy.split("\n\nContinuing")[0]) > 400
    assert 0 < len(tight.split("\n\nContinuing")[0]) <= 400  # 100 tokens, 4 characters each


def test_a_session_end_backs_up_its_transcript_redacted(repo: Path) -> None:
    from memory_core.session_vault import backup_path, read_backup
    from tests.agents_fixtures import Transcript

    t = Transcript(SID, repo)
    t.prompt(f"deploy with {SECRET}")
    path = t.save(repo.parent / "transcript.jsonl")
    hook(repo, "SessionStart", T0, source="startup", transcript_path=str(path))
    hook(repo, "SessionEnd", T0 + 1, reason="exit", transcript_path=str(path))
    with Store.open(repo) as store:
        backup = backup_path(store, SID)
    restored = read_backup(backup).decode("utf-8")
    assert "deploy with [REDACTED:github-token]" in restored
    assert SECRET not in restored
    assert "failed" not in log_text(repo)


def test_a_failed_transcript_backup_is_logged_and_the_session_still_closes(
    repo: Path, tmp_path: Path
) -> None:
    from tests.agents_fixtures import Transcript

    t = Transcript(SID, repo)
    t.prompt("hello")
    path = t.save(repo.parent / "transcript.jsonl")
    # The configured vault is a file, not a folder: the backup cannot be written there.
    blocker = tmp_path / "vault-is-a-file"
    blocker.write_text("")
    (repo / ".engram").mkdir()
    (repo / ".engram" / "config.toml").write_text(f'[sessions]\nvault_dir = "{blocker}"\n')
    hook(repo, "SessionStart", T0, source="startup", transcript_path=str(path))
    hook(repo, "SessionEnd", T0 + 1, reason="exit", transcript_path=str(path))
    with Store.open(repo) as store:
        assert sessions.get(store, SID)["status"] == "closed"
    logged = log_text(repo)
    assert re.search(
        r" WARNING \[\d+\] transcript backup failed: \[Errno 20\] Not a directory", logged
    )
    assert "Traceback (most recent call last):" in logged
    assert " ERROR [" not in logged  # the hook itself went on to the end


def test_tool_uses_the_user_rejected_teach_no_gotcha(repo: Path) -> None:
    # Denying a permission prompt reaches the hook as a failure whose text alone says why.
    for n in range(3):
        hook(
            repo,
            "PostToolUseFailure",
            T0 + n,
            tool_name="Bash",
            tool_use_id=f"toolu_no{n}",
            tool_input={"command": "rm -rf build"},
            error="The user doesn't want to proceed with this tool use. The tool use was rejected.",
        )
    assert rows(repo, "SELECT COUNT(*) FROM error_occurrences") == [(0,)]
    with Store.open(repo) as store:
        assert gotchas.list_gotchas(store) == []
    assert [r[0] for r in rows(repo, "SELECT ok FROM agent_tool_uses")] == [0, 0, 0]


def test_session_end_keeps_engrams_section_of_claude_md_current(repo: Path) -> None:
    from memory_core import memory

    claude_md = repo / "CLAUDE.md"
    person = "# Project notes\n\nWritten by people.\n\n"
    claude_md.write_text(person + "<!-- engram:begin -->\n<!-- engram:end -->\n", encoding="utf-8")
    hook(repo, "SessionStart", T0, source="startup")
    with Store.open(repo) as store:
        memory.add(store, "Feature flags live in flags.toml", type="decision", pinned=True)
    hook(repo, "SessionEnd", T0 + 1, reason="exit")
    text = claude_md.read_text(encoding="utf-8")
    assert text.startswith(person + "<!-- engram:begin -->")
    assert "Feature flags live in flags.toml" in text
    assert text.rstrip().endswith("<!-- engram:end -->")


def test_a_session_start_without_a_session_id_still_gets_the_projects_memory(
    repo: Path,
) -> None:
    hook(repo, "SessionStart", T0, source="startup")
    hook(repo, "UserPromptSubmit", T0 + 1, prompt="add the health endpoint", prompt_id="p1")
    hook(repo, "Stop", T0 + 2, last_assistant_message="Added GET /health returning 200.")
    hook(repo, "SessionEnd", T0 + 3, reason="prompt_input_exit")
    out = hook(repo, "SessionStart", T0 + 100, session=None, source="startup")
    assert "Added GET /health returning 200." in out
    # Nothing is recorded under a made-up session.
    assert rows(repo, "SELECT session_id FROM agent_sessions") == [(SID,)]


def test_the_event_named_on_the_command_line_counts_when_the_payload_names_none(
    repo: Path,
) -> None:
    hook(repo, "SessionStart", T0, source="startup")
    hook(repo, "UserPromptSubmit", T0 + 1, prompt="explain the cache", prompt_id="p1")
    payload = json.loads(
        hook_payload("Stop", SID, repo, last_assistant_message="It is per process.")
    )
    payload.pop("hook_event_name")
    assert hooks.handle("claude-code", "Stop", json.dumps(payload), now=T0 + 2) == (0, "")
    with Store.open(repo) as store:
        turns = sessions.history(store, SID)
    assert [(t["user_message"], t["assistant_response"]) for t in turns] == [
        ("explain the cache", "It is per process.")
    ]


def test_an_unknown_agent_name_never_fails_the_agent(repo: Path) -> None:
    payload = hook_payload("Stop", SID, repo)
    assert hooks.handle("copilot", "Stop", payload, now=T0) == (0, "")
    assert not (repo / ".engram").exists()


def test_a_digest_interval_of_zero_turns_the_timer_off(repo: Path) -> None:
    (repo / ".engram").mkdir()
    (repo / ".engram" / "config.toml").write_text("[agents]\ndigest_interval_minutes = 0\n")
    hook(repo, "SessionStart", T0, source="startup")
    for n in range(3):
        hook(
            repo,
            "PostToolUse",
            T0 + 3600 * (n + 1),
            tool_name="Bash",
            tool_use_id=f"toolu_{n}",
            tool_input={"command": "true"},
            tool_response={"stdout": "", "stderr": "", "interrupted": False},
        )
    assert rows(repo, "SELECT COUNT(*) FROM digests") == [(0,)]


def _claude_transcript(repo: Path, name: str, session: str = SID) -> Any:
    from tests.agents_fixtures import Transcript

    return Transcript(session, repo), repo.parent / name


def test_with_a_transcript_a_prompt_and_its_answer_are_recorded_once(repo: Path) -> None:
    from tests.agents_fixtures import text

    t, path = _claude_transcript(repo, "main.jsonl")
    t.prompt("fix the login test")
    t.save(path)
    hook(repo, "SessionStart", T0, source="startup", transcript_path=str(path))
    hook(
        repo,
        "UserPromptSubmit",
        T0 + 1,
        prompt="fix the login test",
        prompt_id="p1",
        transcript_path=str(path),
    )
    t.response([text("Fixed: the fixture used a stale token.")])
    t.save(path)
    hook(
        repo,
        "Stop",
        T0 + 2,
        transcript_path=str(path),
        last_assistant_message="Fixed: the fixture used a stale token.",
    )
    assert rows(repo, "SELECT text FROM agent_prompts") == [("fix the login test",)]
    with Store.open(repo) as store:
        turns = sessions.history(store, SID)
    assert [(t["user_message"], t["assistant_response"]) for t in turns] == [
        ("fix the login test", "Fixed: the fixture used a stale token.")
    ]


def test_a_subagents_transcript_is_ingested_when_it_stops(repo: Path) -> None:
    from tests.agents_fixtures import text, tool_use

    t, path = _claude_transcript(repo, "main.jsonl")
    t.prompt("review the auth module")
    t.save(path)
    sub, sub_path = _claude_transcript(repo, "agent-a1.jsonl")
    sub.response(
        [tool_use("toolu_grep", "Grep", pattern="def login", path="src")],
        sidechain=True,
        agent_id="a1",
    )
    sub.tool_result("toolu_grep", "src/auth.py:1:def login(user):")
    sub.response([text("login is in src/auth.py")], sidechain=True, agent_id="a1")
    sub.save(sub_path)
    hook(repo, "SessionStart", T0, source="startup", transcript_path=str(path))
    hook(
        repo,
        "SubagentStop",
        T0 + 1,
        transcript_path=str(path),
        agent_transcript_path=str(sub_path),
        agent_id="a1",
    )
    assert rows(repo, "SELECT tool FROM agent_tool_uses") == [("Grep",)]


def test_a_transcript_not_backed_up_says_why_in_the_log(repo: Path) -> None:
    t, path = _claude_transcript(repo, "main.jsonl")
    t.prompt("hello")
    t.save(path)
    (repo / ".engram").mkdir()
    (repo / ".engram" / "config.toml").write_text("[sessions]\nbackup_transcripts = false\n")
    hook(repo, "SessionStart", T0, source="startup", transcript_path=str(path))
    hook(repo, "SessionEnd", T0 + 1, reason="exit", transcript_path=str(path))
    [line] = [x for x in log_text(repo).splitlines() if "not backed up" in x]
    assert re.search(
        r" INFO \[\d+\] transcript not backed up: sessions\.backup_transcripts is off$", line
    )


def test_an_edit_brings_at_most_three_of_the_files_gotchas(repo: Path) -> None:
    (repo / "db.py").write_text("conn = pool.get()\n")
    with Store.init(repo) as store:
        for n in range(5):
            gotchas.add(store, f"Database pitfall number {n}", related_files=["db.py"])
    out = hook(
        repo,
        "PreToolUse",
        T0,
        tool_name="Edit",
        tool_input={"file_path": str(repo / "db.py"), "old_string": "a", "new_string": "b"},
    )
    context = json.loads(out)["hookSpecificOutput"]["additionalContext"]
    assert sum(f"Database pitfall number {n}" in context for n in range(5)) == 3


def test_an_earlier_session_silent_for_half_an_hour_is_ended_when_a_new_one_starts(
    repo: Path,
) -> None:
    hook(repo, "SessionStart", T0, source="startup")
    hook(repo, "UserPromptSubmit", T0 + 1, prompt="start the refactor", prompt_id="p1")
    # The agent was closed without a SessionEnd; 31 minutes later another session starts.
    hook(repo, "SessionStart", T0 + 31 * 60, session="later-0001", source="startup")
    ended = dict(rows(repo, "SELECT session_id, ended_at IS NOT NULL FROM agent_sessions"))
    assert ended == {SID: 1, "later-0001": 0}


@pytest.mark.parametrize(
    ("response", "stored"),
    [
        ({"error": "permission denied: /etc/hosts", "stdout": "partial"}, "permission denied"),
        ({"stdout": "", "stderr": "npm ERR! Missing script: lint"}, "npm ERR! Missing script"),
        ({"llmContent": "Command exited with code 1: make: *** No rule"}, "Command exited"),
        ({"stdout": "FAILED tests/test_a.py::test_x"}, "FAILED tests/test_a.py"),
    ],
)
def test_a_failed_calls_error_is_the_most_telling_text_of_its_response(
    repo: Path, response: dict[str, Any], stored: str
) -> None:
    hook(
        repo,
        "PostToolUse",
        T0,
        tool_name="Bash",
        tool_use_id="toolu_x",
        tool_input={"command": "make check"},
        tool_response={**response, "exitCode": 1},
    )
    [(ok, error)] = rows(repo, "SELECT ok, error FROM agent_tool_uses")
    assert ok == 0 and error.startswith(stored)


def test_a_resumed_session_is_not_reminded_of_its_own_missing_summary(repo: Path) -> None:
    hook(repo, "SessionStart", T0, source="startup")
    hook(repo, "UserPromptSubmit", T0 + 1, prompt="start the refactor", prompt_id="p1")
    hook(repo, "Stop", T0 + 2, last_assistant_message="Moved the helpers.")
    out = hook(repo, "SessionStart", T0 + 60, source="resume")
    assert "no summary yet" not in out
    # Another session is reminded of it.
    other = hook(repo, "SessionStart", T0 + 120, session="other-0001", source="startup")
    assert f"1 earlier session has no summary yet ({SID})" in other


def test_each_turn_adds_at_most_600_characters_to_the_rolling_summary(repo: Path) -> None:
    (repo / ".engram").mkdir()
    (repo / ".engram" / "config.toml").write_text("[sessions]\nsummary_compact_chars = 100000\n")
    hook(repo, "SessionStart", T0, source="startup")
    hook(repo, "UserPromptSubmit", T0 + 1, prompt="explain", prompt_id="p1")
    hook(repo, "Stop", T0 + 2, last_assistant_message="word " * 400)
    with Store.open(repo) as store:
        summary = sessions.get(store, SID)["rolling_summary"] or ""
    assert "characters cut" in summary
    assert 500 < len(summary) <= 620
