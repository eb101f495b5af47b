"""`engram ingest claude-code` and `engram session metrics|list|summary` on a session shaped
like a real Claude Code 2.1.x one, as a user runs them; figures against the independent count."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from tests.agents_fixtures import real_shaped_session, reference_figures

SESSION = "7d0c2a9e-1111-4222-8333-444455556666"
KINDS = ("input_tokens", "output_tokens", "cache_creation_tokens", "cache_read_tokens")


def _paths(workspace: Path, tmp_path: Path, start: datetime | None = None) -> list[Path]:
    (workspace / ".git").mkdir(exist_ok=True)
    return real_shaped_session(workspace, workspace, tmp_path / "transcripts", SESSION, start)


def test_metrics_list_and_summary_agree_with_the_reference_count(
    cli: Any, workspace: Path, tmp_path: Path
) -> None:
    paths = _paths(workspace, tmp_path)
    oracle = reference_figures(paths)[SESSION]
    done = cli("ingest", "claude-code", *map(str, paths), "--json", cwd=workspace)
    assert done.code == 0, done.stderr
    metrics = cli("session", "metrics", SESSION, "--json", cwd=workspace).json()
    assert metrics["turns"] == oracle["prompts"] == 3
    for part in ("main", "subagents"):
        assert {k: metrics["tokens"][part][k] for k in KINDS} == {k: oracle[part][k] for k in KINDS}
    assert metrics["tool_calls"] == oracle["tool_calls"]
    assert metrics["tool_calls_failed"] == oracle["failed"]
    listed = cli("session", "list", "--json", cwd=workspace).json()["sessions"]
    entry = next(s for s in listed if s["id"] == SESSION)
    assert entry["status"] == "closed"  # it ended yesterday: not active
    assert (entry["turns"], entry["input_tokens"], entry["output_tokens"]) == (
        metrics["turns"],
        metrics["input_tokens"],
        metrics["output_tokens"],
    )
    summary = cli("session", "summary", SESSION, cwd=workspace).stdout
    main = metrics["tokens"]["main"]
    assert (
        f"| main chain (in / out / cache write / cache read) | {main['input_tokens']} / "
        f"{main['output_tokens']} / {main['cache_creation_tokens']} / {main['cache_read_tokens']}"
    ) in summary
    shown = cli("session", "metrics", SESSION, cwd=workspace).stdout
    assert (
        f"  main chain:      {main['total_tokens']} ({main['input_tokens']} in, "
        f"{main['output_tokens']} out, {main['cache_creation_tokens']} cache write, "
        f"{main['cache_read_tokens']} cache read; {main['messages']} messages)"
    ) in shown
    # Ingesting again changes nothing.
    assert cli("ingest", "claude-code", *map(str, paths), cwd=workspace).code == 0
    assert cli("session", "metrics", SESSION, "--json", cwd=workspace).json() == metrics


def test_history_older_than_retention_keeps_its_figures_and_what_the_user_taught(
    cli: Any, workspace: Path, tmp_path: Path
) -> None:
    old = (datetime.now(UTC) - timedelta(days=200)).replace(microsecond=0)
    paths = _paths(workspace, tmp_path, start=old)
    first = cli("ingest", "claude-code", *map(str, paths), cwd=workspace)
    assert first.code == 0
    # It says what detail it does not keep.
    assert "1 session(s) are older than the 90-day retention" in first.stdout
    before = cli("session", "metrics", SESSION, "--json", cwd=workspace).json()
    assert before["turns"] == 3 and before["tokens"]["all"]["messages"] > 0
    # The next ingest applies retention (90 days by default) to the per-event records ...
    assert cli("ingest", "claude-code", *map(str, paths), cwd=workspace).code == 0
    after = cli("session", "metrics", SESSION, "--json", cwd=workspace).json()
    # ... the session's figures stay,
    assert after == before
    # ... and so does the rule the user stated, as a long-term memory.
    context = cli("session", "resume", "--context", "--json", cwd=workspace).json()["context"]
    assert "Always run npm test after a build." in context


def test_a_request_a_hook_saw_and_no_stop_closed_is_the_task_in_progress(
    cli: Any, workspace: Path
) -> None:
    from tests.agents_fixtures import hook_payload

    (workspace / ".git").mkdir()
    payload = hook_payload(
        "UserPromptSubmit", "S-hooks", workspace, prompt="Port the parser to Rust"
    )
    assert cli("hook", "claude-code", "UserPromptSubmit", cwd=workspace, stdin=payload).code == 0
    context = cli("session", "resume", "--context", "--json", cwd=workspace).json()["context"]
    assert "Task in progress (not finished): \u201cPort the parser to Rust\u201d" in context
    # Once the agent answered (Stop), it is no longer in progress.
    stop = hook_payload("Stop", "S-hooks", workspace, last_assistant_message="Ported.")
    assert cli("hook", "claude-code", "Stop", cwd=workspace, stdin=stop).code == 0
    context = cli("session", "resume", "--context", "--json", cwd=workspace).json()["context"]
    assert "Task in progress" not in context


def test_the_next_session_start_ends_earlier_silent_sessions_from_evidence(
    workspace: Path,
) -> None:
    from memory_core import sessions
    from memory_core.agents import hooks
    from memory_core.store import Store
    from tests.agents_fixtures import hook_payload

    (workspace / ".git").mkdir()
    then = 1_800_000_000.0
    # One session answered its request (Stop), another was left in the middle of one.
    for offset, (sid, events) in enumerate(
        (("S-done", ("UserPromptSubmit", "Stop")), ("S-cut", ("UserPromptSubmit",)))
    ):
        for event in events:
            payload = hook_payload(
                event, sid, workspace, prompt=f"work of {sid}", last_assistant_message="ok"
            )
            moment = then + 60 * offset  # S-cut is the most recent
            code, _ = hooks.handle(
                "claude-code", event, payload, workspace=str(workspace), now=moment
            )
            assert code == 0
    later = then + 3600
    start = hook_payload("SessionStart", "S-new", workspace, source="startup")
    code, out = hooks.handle(
        "claude-code", "SessionStart", start, workspace=str(workspace), now=later
    )
    assert code == 0
    with Store.open_or_init(workspace) as store:
        listed = {s["id"]: s for s in sessions.list_sessions(store, now=later)}
        # Neither is "active" any more ...
        assert listed["S-done"]["status"] == listed["S-cut"]["status"] == "closed"
        ended = {
            str(r["session_id"]): str(r["end_reason"])
            for r in store.query("SELECT session_id, end_reason FROM agent_sessions")
        }
        # ... one finished, the other stopped mid-request; neither is called a crash.
        assert (ended["S-done"], ended["S-cut"]) == ("finished", "stopped")
    assert "crash" not in out.lower()
    assert "S-cut recorded no end" in out and "a request that had no reply yet" in out
