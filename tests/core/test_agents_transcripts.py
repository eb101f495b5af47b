"""Claude Code transcript ingest: exact counts from a realistic transcript, incremental runs."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from memory_core import sessions
from memory_core.agents import transcripts
from memory_core.agents.transcripts import ingest_file, parse_line
from memory_core.store import Store
from tests.agents_fixtures import (
    FAILING_COMMAND,
    SECRETS,
    Transcript,
    realistic_session,
    text,
    tool_use,
)

SESSION = "5f2c1d4e-aaaa-bbbb-cccc-123456789abc"


@pytest.fixture
def ingested(store: Store, tmp_path: Path) -> tuple[Store, Path, transcripts.IngestStats, object]:
    transcript, expected = realistic_session(store.root, SESSION)
    path = transcript.save(tmp_path / "claude" / f"{SESSION}.jsonl")
    stats = ingest_file(store, path)
    return store, path, stats, expected


def test_counts_prompts_turns_tool_calls_and_failures_exactly(ingested) -> None:
    store, _path, stats, expected = ingested
    assert stats.prompts == expected.prompts
    assert stats.turns == expected.turns
    assert stats.failures == expected.failures
    assert stats.compactions == 1
    assert stats.malformed == 0
    per_tool = {
        row["tool"]: row["n"]
        for row in store.query(
            "SELECT tool, COUNT(*) AS n FROM agent_tool_uses WHERE ok IS NOT NULL GROUP BY tool"
        )
    }
    assert per_tool == expected.tool_calls
    # The session as `engram session` sees it: turns, tool calls, files, commands.
    session = sessions.get(store, SESSION)
    assert session["agent"] == "claude-code"
    assert session["turns"] == expected.turns
    assert sorted(sessions.files_modified(store, SESSION)) == expected.modified_files
    metrics = sessions.metrics(store, SESSION)
    assert metrics["tool_calls"] == sum(expected.tool_calls.values())
    assert metrics["tool_calls_failed"] == expected.failures
    assert (metrics["commands"], metrics["commands_failed"]) == (5, 3)
    assert metrics["files_modified"] == len(expected.modified_files)
    main = metrics["tokens"]["main"]
    assert (main["input_tokens"], main["output_tokens"]) == (
        expected.input_tokens,
        expected.output_tokens,
    )
    assert metrics["tokens"]["main"]["messages"] == expected.main_messages
    assert metrics["tokens"]["subagents"]["messages"] == expected.sidechain_messages
    assert metrics["total_tokens"] == metrics["tokens"]["all"]["total_tokens"]
    commands = store.query(
        "SELECT command, exit_code FROM session_commands WHERE session_id = ? ORDER BY ts",
        (SESSION,),
    )
    assert [c["exit_code"] for c in commands] == [1, 1, 1, 0, 0]
    assert commands[0]["command"] == FAILING_COMMAND
    assert session_footprint(store) == ["def check", "COOKIE"]


def test_split_assistant_messages_count_their_tokens_once(ingested) -> None:
    store, _path, _stats, expected = ingested
    main = store.query_one(
        "SELECT COUNT(*) AS n, SUM(input_tokens) AS i, SUM(output_tokens) AS o FROM agent_messages WHERE sidechain = 0"
    )
    assert main["n"] == expected.main_messages
    assert (main["i"], main["o"]) == (expected.input_tokens, expected.output_tokens)
    side = store.query_one(
        "SELECT COUNT(*) AS n, SUM(output_tokens) AS o FROM agent_messages WHERE sidechain = 1"
    )
    assert (side["n"], side["o"]) == (expected.sidechain_messages, 15 + 12)
    # The first response was written as three lines with output_tokens 1, 1, 40: it counts 40.
    first = store.query_one("SELECT * FROM agent_messages ORDER BY ts LIMIT 1")
    assert (first["input_tokens"], first["output_tokens"], first["cache_read_tokens"]) == (
        10,
        40,
        9000,
    )
    turns = sessions.history(store, SESSION)
    assert [(t["input_tokens"], t["output_tokens"]) for t in turns] == expected.turn_tokens
    session = sessions.get(store, SESSION)
    main = session["tokens"]["main"]
    assert (main["input_tokens"], main["output_tokens"]) == (
        expected.input_tokens,
        expected.output_tokens,
    )
    # The session's totals hold the subagent's work too, kept apart in the breakdown.
    assert session["output_tokens"] == expected.output_tokens + 15 + 12


def test_sidechain_lines_never_count_as_prompts_or_turns(ingested) -> None:
    store, _path, stats, _expected = ingested
    assert stats.sidechain_lines == 4
    prompts = [row["text"] for row in store.query("SELECT text FROM agent_prompts ORDER BY ts")]
    assert "Find other cookie users" not in prompts
    assert not any(
        p.startswith(("<command-name>", "<bash-input>", "[Request interrupted")) for p in prompts
    )
    side_call = store.query_one(
        "SELECT sidechain, ok FROM agent_tool_uses WHERE tool_use_id = 'toolu_side_grep'"
    )
    assert (side_call["sidechain"], side_call["ok"]) == (1, 1)


def test_the_failing_command_repeated_three_times_makes_a_candidate_gotcha(ingested) -> None:
    store, _path, _stats, _expected = ingested
    rows = store.query("SELECT * FROM gotchas")
    assert len(rows) == 1
    gotcha = rows[0]
    assert gotcha["status"] == "candidate"
    assert gotcha["occurrences"] == 3
    assert "AssertionError" in gotcha["title"] or "test_login" in gotcha["title"]
    samples = json.loads(gotcha["samples"])
    assert samples[0]["command"] == FAILING_COMMAND
    assert samples[0]["session_id"] == SESSION


def test_agent_file_changes_reach_file_evolution_with_the_session(ingested) -> None:
    store, _path, _stats, expected = ingested
    rows = store.query("SELECT path, actor, session_id FROM file_changes ORDER BY path")
    assert sorted({r["path"] for r in rows}) == expected.modified_files
    assert {(r["actor"], r["session_id"]) for r in rows} == {("agent", SESSION)}


def test_compaction_is_recorded_with_its_summary(ingested) -> None:
    store, _path, _stats, _expected = ingested
    row = store.query_one("SELECT * FROM agent_compactions")
    assert (row["trigger"], row["pre_tokens"]) == ("auto", 155000)
    assert row["summary"].startswith("This session is being continued")


def test_secrets_are_redacted_before_anything_is_stored(ingested) -> None:
    store, _path, _stats, _expected = ingested
    store.close()
    stored = b"".join(p.read_bytes() for p in store.dir.rglob("*") if p.is_file())
    for secret in SECRETS:
        assert secret.encode() not in stored
    reopened = Store.open(store.root)
    prompt = reopened.query_one("SELECT text FROM agent_prompts WHERE text LIKE 'Deploy%'")
    assert "[REDACTED" in prompt["text"]
    reopened.close()


def test_a_second_run_reads_only_what_was_appended(store: Store, tmp_path: Path) -> None:
    transcript, _expected = realistic_session(store.root, SESSION)
    path = transcript.save(tmp_path / f"{SESSION}.jsonl")
    first = ingest_file(store, path)
    assert ingest_file(store, path).lines == 0
    size = path.stat().st_size
    more = Transcript(SESSION, store.root, start=transcript.start)
    more._clock, more._uuid, more._message = 10_000, 90_000, 500
    more.prompt("Now add a changelog entry")
    more.response([tool_use("toolu_late", "Bash", command="git log -1")], stop_reason="tool_use")
    with path.open("a") as handle:
        handle.write("\n".join(more.lines) + "\n")
        # Claude Code writes asynchronously: a half-written line waits for the next run.
        handle.write('{"type":"assistant","sessionId":"' + SESSION + '","mess')
    # As a hook does while the agent is still answering: the turn stays open.
    second = ingest_file(store, path, flush=False)
    assert second.lines == 2
    assert second.bytes == path.stat().st_size - size - len(
        '{"type":"assistant","sessionId":"' + SESSION + '","mess'
    )
    assert second.prompts == 1 and second.turns == 0
    assert first.prompts + second.prompts == 4
    assert sessions.get(store, SESSION)["turns"] == 3
    # The call waits for its result, which the next run reads: the call is found and recorded.
    size = path.stat().st_size
    late = Transcript(SESSION, store.root, start=transcript.start)
    late._clock, late._uuid, late._message = 20_000, 95_000, 600
    late.tool_result("toolu_late", "abc123 Add a changelog entry")
    with path.open("r+") as handle:
        handle.seek(size - len('{"type":"assistant","sessionId":"' + SESSION + '","mess'))
        handle.truncate()
        handle.write("\n".join(late.lines) + "\n")
    assert ingest_file(store, path, flush=False).tool_calls == 1
    row = store.query_one("SELECT ok FROM agent_tool_uses WHERE tool_use_id = 'toolu_late'")
    assert row["ok"] == 1
    commands = store.query("SELECT command FROM session_commands WHERE session_id = ?", (SESSION,))
    assert "git log -1" in [row["command"] for row in commands]
    # The turn is still open (its answer is not written yet): the flush at session end closes it.
    assert len(transcripts.flush_session(store, SESSION)) == 1
    assert sessions.get(store, SESSION)["turns"] == 4


def test_a_replaced_file_is_read_again_without_counting_twice(store: Store, tmp_path: Path) -> None:
    transcript, expected = realistic_session(store.root, SESSION)
    path = transcript.save(tmp_path / f"{SESSION}.jsonl")
    ingest_file(store, path)
    path.write_text(
        "\n".join(reversed(transcript.lines[:5])) + "\n" + "\n".join(transcript.lines) + "\n"
    )
    again = ingest_file(store, path)
    assert again.restarted
    assert again.prompts == 0 and again.turns == 0
    assert sessions.get(store, SESSION)["turns"] == expected.turns
    assert store.query_one("SELECT COUNT(*) FROM session_tool_calls")[0] == sum(
        expected.tool_calls.values()
    )


def test_parser_skips_unknown_and_malformed_lines(store: Store, tmp_path: Path) -> None:
    t = Transcript("S-unknown", store.root)
    t.prompt("hello")
    t.write({"type": "brand-new-line-type", "whatever": True})
    t.response([text("hi")], stop_reason="end_turn")
    path = t.save(tmp_path / "t.jsonl")
    with path.open("a") as handle:
        # Garbage without a conversation type is skipped unread; a broken conversation line is counted.
        handle.write('not json at all\n[1, 2]\n{"type":"user","message":{"content":"cut off\n')
        # Nested deeper than any decoder goes (a hostile file): counted, not a crash.
        handle.write('{"type": "user", "message": ' + "[" * 100_000 + "]" * 100_000 + "}\n")
    stats = ingest_file(store, path)
    assert (stats.prompts, stats.turns, stats.malformed) == (1, 1, 2)
    assert parse_line([1, 2]) is None
    assert parse_line({"type": "assistant", "message": "oops"}) is not None


def test_synthetic_messages_carry_no_tokens(store: Store, tmp_path: Path) -> None:
    t = Transcript("S-synth", store.root)
    t.prompt("hello")
    t.response([text("API Error: overloaded")], stop_reason="end_turn", model="<synthetic>")
    stats = ingest_file(store, t.save(tmp_path / "s.jsonl"))
    assert stats.assistant_messages == 0


def test_default_transcripts_are_found_by_the_project_folder_name(
    store: Store, tmp_path: Path
) -> None:
    home = Path.home()
    folder = home / ".claude" / "projects" / transcripts.project_dir_name(store.root)
    t = Transcript("S-found", store.root)
    t.prompt("hi")
    main = t.save(folder / "S-found.jsonl")
    sub = t.save(folder / "S-found" / "subagents" / "agent-a1.jsonl")
    t.save(home / ".claude" / "projects" / "-some-other-project" / "x.jsonl")
    assert set(transcripts.default_transcripts(store.root)) == {main, sub}
    assert transcripts.project_dir_name(Path("/home/u/work/my_repo")) == "-home-u-work-my-repo"


def test_a_subagent_file_adds_sidechain_work_to_the_parent_session(
    store: Store, tmp_path: Path
) -> None:
    parent = Transcript(SESSION, store.root)
    parent.prompt("Look for cookie users")
    parent.response([text("Delegating.")], stop_reason="end_turn")
    ingest_file(store, parent.save(tmp_path / f"{SESSION}.jsonl"))
    sub = Transcript(SESSION, store.root)
    agent = "a7dd4f3b8ec5e486c"
    first = sub.envelope("user", sidechain=True, agent_id=agent, parent=None)
    first["message"] = {"role": "user", "content": "Find cookie users"}
    sub.write(first)
    sub.response(
        [tool_use("toolu_sub1", "Grep", pattern="COOKIE")],
        stop_reason="tool_use",
        sidechain=True,
        agent_id=agent,
        message_id="msg_sub_1",
        output_tokens=15,
    )
    sub.tool_result("toolu_sub1", "src/session.py", sidechain=True, agent_id=agent)
    stats = ingest_file(store, sub.save(tmp_path / SESSION / "subagents" / f"agent-{agent}.jsonl"))
    assert (stats.prompts, stats.turns, stats.tool_calls) == (0, 0, 1)
    assert sessions.get(store, SESSION)["turns"] == 1
    calls = store.query("SELECT tool, ok FROM session_tool_calls WHERE session_id = ?", (SESSION,))
    assert [(c["tool"], c["ok"]) for c in calls] == [("Grep", 1)]
    usage = store.query_one(
        "SELECT sidechain, output_tokens FROM agent_messages WHERE message_key = 'msg_sub_1'"
    )
    assert (usage["sidechain"], usage["output_tokens"]) == (1, 15)


def test_a_resumed_sessions_replayed_prefix_is_not_counted_again(
    store: Store, tmp_path: Path
) -> None:
    transcript, expected = realistic_session(store.root, SESSION)
    ingest_file(store, transcript.save(tmp_path / f"{SESSION}.jsonl"))
    # `claude --resume` writes a new file whose first lines replay the old ones (same uuids, ids).
    resumed = Transcript("S-resumed", store.root, start=transcript.start)
    resumed.lines = [
        line.replace(f'"sessionId": "{SESSION}"', '"sessionId": "S-resumed"')
        for line in transcript.lines
    ]
    assert sum('"S-resumed"' in line for line in resumed.lines) > 30
    resumed._clock, resumed._uuid, resumed._message = 50_000, 50_000, 900
    resumed.prompt("Continue with the changelog")
    resumed.response([text("Added.")], stop_reason="end_turn")
    stats = ingest_file(store, resumed.save(tmp_path / "S-resumed.jsonl"))
    assert (stats.prompts, stats.turns) == (1, 1)
    assert store.query_one("SELECT COUNT(*) FROM agent_tool_uses WHERE ok IS NOT NULL")[0] == sum(
        expected.tool_calls.values()
    )
    assert store.query_one("SELECT COUNT(*) FROM gotchas")[0] == 1
    assert store.query_one("SELECT occurrences FROM gotchas")[0] == 3


def test_half_a_surrogate_pair_from_truncation_is_stored_readably(
    store: Store, tmp_path: Path
) -> None:
    t = Transcript("S-emoji", store.root)
    t.prompt("run it \U0001f600")
    t.response([tool_use("toolu_e", "Bash", command="make")], stop_reason="tool_use")
    # Claude Code middle-truncates long errors; the cut can fall inside an emoji's surrogate pair.
    t.tool_result(
        "toolu_e",
        "Exit code 2\nbuild failed \ud83d",
        is_error=True,
        result="Error: Exit code 2\nbuild failed \ud83d",
    )
    t.response([text("It failed.")], stop_reason="end_turn")
    stats = ingest_file(store, t.save(tmp_path / "e.jsonl"))
    assert (stats.prompts, stats.turns, stats.failures) == (1, 1, 1)
    assert store.query_one("SELECT error FROM agent_tool_uses")["error"].endswith("build failed ?")
    assert store.query_one("SELECT text FROM agent_prompts")["text"] == "run it \U0001f600"


def test_claude_config_dir_and_project_dir_name_are_honoured(
    store: Store, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    config_dir = tmp_path / "claude-config"
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(config_dir))
    t = Transcript("S-cfg", store.root)
    t.prompt("hi")
    derived = t.save(
        config_dir / "projects" / transcripts.project_dir_name(store.root) / "S-cfg.jsonl"
    )
    assert transcripts.default_transcripts(store.root) == [derived]
    monkeypatch.setenv("CLAUDE_CODE_PROJECT_DIR_NAME", "my-project")
    named = t.save(config_dir / "projects" / "my-project" / "S-cfg.jsonl")
    assert transcripts.default_transcripts(store.root) == [named]


def session_footprint(store: Store) -> list[str]:
    return list(sessions.get(store, SESSION)["search_footprint"])


@pytest.mark.parametrize("writes_stop_reason", [False, True])
def test_a_turn_never_needs_a_stop_reason_and_an_old_builds_one_may_end_it_sooner(
    store: Store, tmp_path: Path, writes_stop_reason: bool
) -> None:
    t = Transcript("S-stop", store.root, writes_stop_reason=writes_stop_reason)
    t.prompt("Explain the parser")
    t.response([text("It reads tokens."), text("Then it builds a tree.")], stop_reason="end_turn")
    path = t.save(tmp_path / "stop.jsonl")
    # While the agent may still be answering (a hook's ingest), only a stop reason ends it ...
    ingest_file(store, path, flush=False)
    assert sessions.get(store, "S-stop")["turns"] == (1 if writes_stop_reason else 0)
    # ... and the end of an ingested transcript always does.
    ingest_file(store, path)
    transcripts.flush_session(store, "S-stop")
    assert sessions.get(store, "S-stop")["turns"] == 1
    assert sessions.history(store, "S-stop")[0]["assistant_response"] == (
        "It reads tokens.\n\nThen it builds a tree."
    )
