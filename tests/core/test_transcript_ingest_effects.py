"""What an ingested transcript leaves for the user beyond its counts: the rules and decisions
remembered, the files an edit changed when its result arrives in a later run, the settings the
caller passed, and how a session whose transcript stopped long ago is ended.
"""

from __future__ import annotations

import json
import subprocess
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from memory_core import clock, config, sessions
from memory_core.agents import hooks, transcripts
from memory_core.agents.context import crash_note
from memory_core.store import Store
from tests.agents_fixtures import Transcript, hook_payload, text, tool_use

SID = "3b2a1f0e-5555-4666-8777-888899990000"


def ingest(
    store: Store, t: Transcript, tmp_path: Path, **kwargs: object
) -> transcripts.IngestStats:
    return transcripts.ingest_file(store, t.save(tmp_path / f"{SID}.jsonl"), **kwargs)  # type: ignore[arg-type]


def memories(store: Store) -> list[tuple[str, str, str]]:
    rows = store.query("SELECT type, tags, content FROM memories ORDER BY content")
    return [(str(r["type"]), str(r["tags"]), str(r["content"])) for r in rows]


def test_a_rule_and_a_decision_the_user_states_are_remembered_with_their_kind(
    store: Store, tmp_path: Path
) -> None:
    t = Transcript(SID, store.root)
    t.prompt("Never commit generated files. We decided to ship on Fridays only.")
    t.response([text("Understood.")])
    ingest(store, t, tmp_path)
    assert memories(store) == [
        ("preference", "user-rule", "Never commit generated files."),
        ("decision", "user-decision", "We decided to ship on Fridays only."),
    ]


def test_a_long_decision_is_remembered_cut_to_600_characters(store: Store, tmp_path: Path) -> None:
    decision = "We decided to keep " + " and ".join(f"module{i}" for i in range(120)) + "."
    assert len(decision) > 600
    t = Transcript(SID, store.root)
    t.prompt(decision)
    t.response([text("Noted.")])
    ingest(store, t, tmp_path)
    (kind, _tags, content) = memories(store)[0]
    assert kind == "decision"
    assert content == decision[:600]


def test_a_tool_call_without_a_name_is_recorded_as_unknown(store: Store, tmp_path: Path) -> None:
    t = Transcript(SID, store.root)
    t.prompt("look around")
    t.response([{"type": "tool_use", "id": "toolu_x", "input": {}}])
    t.tool_result("toolu_x", "done")
    t.response([text("Looked.")])
    ingest(store, t, tmp_path)
    calls = store.query("SELECT tool FROM session_tool_calls WHERE session_id = ?", (SID,))
    assert [c["tool"] for c in calls] == ["unknown"]


def test_a_long_compaction_summary_is_kept_whole_up_to_20000_characters(
    store: Store, tmp_path: Path
) -> None:
    t = Transcript(SID, store.root)
    t.prompt("work on the parser")
    t.response([text("Working.")])
    t.compaction()
    summary = json.loads(t.lines[-1])
    long_summary = "This session is being continued. " + "detail " * 2000  # 14,033 characters
    summary["message"]["content"] = long_summary
    t.lines[-1] = json.dumps(summary)
    ingest(store, t, tmp_path)
    row = store.query_one("SELECT summary FROM agent_compactions WHERE session_id = ?", (SID,))
    assert row is not None
    assert row["summary"] == long_summary


def test_an_edit_whose_result_arrives_in_a_later_run_still_records_the_changed_file(
    store: Store, tmp_path: Path
) -> None:
    source = store.root / "src" / "app.py"
    source.parent.mkdir()
    source.write_text("x = 2\n", encoding="utf-8")
    t = Transcript(SID, store.root)
    t.prompt("change x to 2")
    t.response(
        [
            tool_use(
                "toolu_edit", "Edit", file_path=str(source), old_string="x = 1", new_string="x = 2"
            )
        ]
    )
    ingest(store, t, tmp_path, flush=False)  # a hook while the agent waits for the edit
    edited_at = clock.parse_iso(json.loads(t.lines[-1])["timestamp"])
    t.tool_result(
        "toolu_edit",
        "The file has been updated.",
        result={"filePath": str(source), "originalFile": "x = 1\n", "structuredPatch": []},
    )
    t.response([text("Changed.")])
    ingest(store, t, tmp_path)
    files = store.query("SELECT path, first_ts FROM session_files WHERE session_id = ?", (SID,))
    assert [(f["path"], f["first_ts"]) for f in files] == [("src/app.py", edited_at)]


def test_a_line_with_a_malformed_cwd_is_read_against_the_workspace(
    store: Store, tmp_path: Path
) -> None:
    t = Transcript(SID, store.root)
    t.prompt("edit the app")
    t.response([tool_use("toolu_w", "Write", file_path="src/app.py", content="y = 1\n")])
    t.tool_result("toolu_w", "File created.", result={"type": "create", "filePath": "src/app.py"})
    t.response([text("Written.")])
    t.lines = [
        line.replace(f'"cwd": "{store.root}"', '"cwd": 42').replace(
            '"gitBranch": "main"', '"gitBranch": ["main"]'
        )
        for line in t.lines
    ]
    stats = ingest(store, t, tmp_path)
    assert (stats.prompts, stats.tool_calls, stats.malformed) == (1, 1, 0)
    # A branch that is not a name is not shown as one.
    row = store.query_one("SELECT git_branch FROM agent_sessions WHERE session_id = ?", (SID,))
    assert row is not None and row["git_branch"] is None
    files = store.query("SELECT path FROM session_files WHERE session_id = ?", (SID,))
    assert [f["path"] for f in files] == ["src/app.py"]


def test_the_settings_the_caller_passes_decide_when_a_failure_becomes_a_gotcha(
    store: Store, tmp_path: Path
) -> None:
    t = Transcript(SID, store.root)
    t.prompt("run the tests")
    for attempt in range(2):
        t.response([tool_use(f"toolu_{attempt}", "Bash", command="make test")])
        t.tool_result(
            f"toolu_{attempt}",
            "Exit code 2\nmake: *** No rule to make target 'test'.  Stop.",
            is_error=True,
        )
    t.response([text("There is no test target.")])
    # The editor's settings (a layer above `.engram/config.toml`) lower the threshold to 2.
    settings = config.load(store.root, editor={"gotchas": {"threshold": 2}})
    transcripts.ingest_paths(store, [t.save(tmp_path / f"{SID}.jsonl")], settings=settings)
    gotchas = store.query("SELECT status FROM gotchas")
    assert [g["status"] for g in gotchas] == ["candidate"]


# -- sessions whose transcript stopped --------------------------------------------------------


def _ended(store: Store) -> tuple[object, ...]:
    row = store.query_one(
        "SELECT end_reason, last_event, ended_at = last_seen FROM agent_sessions WHERE session_id = ?",
        (SID,),
    )
    assert row is not None
    return tuple(row)


def _last_seen(store: Store) -> float:
    row = store.query_one("SELECT last_seen FROM agent_sessions WHERE session_id = ?", (SID,))
    assert row is not None
    return float(row["last_seen"])


def test_a_transcript_ending_on_a_reply_is_settled_as_finished_once(
    store: Store, tmp_path: Path
) -> None:
    t = Transcript(SID, store.root)
    t.prompt("summarise the module")
    t.response([text("It parses transcripts.")])
    ingest(store, t, tmp_path)
    last_seen = _last_seen(store)
    # Ten minutes of silence: maybe still going.
    assert transcripts.settle_sessions(store, [SID], now=last_seen + 600) == 0
    assert _ended(store) == (None, "reply", None)
    assert transcripts.settle_sessions(store, [SID, SID], now=last_seen + 3600) == 1
    assert _ended(store) == ("finished", "reply", 1)
    assert transcripts.settle_sessions(store, [SID], now=last_seen + 7200) == 0
    # A finished session is no crash: the next session is told nothing about it.
    assert crash_note(store, None, last_seen + 7200).items == []


@pytest.mark.parametrize(
    ("interrupted", "words"),
    [
        (False, "a tool result the agent had not answered yet"),
        (True, "an interruption by the user"),
    ],
)
def test_a_transcript_stopping_after_a_tool_result_is_settled_as_stopped(
    store: Store, tmp_path: Path, interrupted: bool, words: str
) -> None:
    t = Transcript(SID, store.root)
    t.prompt("run the migration")
    t.response([tool_use("toolu_m", "Bash", command="alembic upgrade head")])
    t.tool_result(
        "toolu_m",
        "[Request interrupted by user for tool use]" if interrupted else "upgraded",
        is_error=interrupted,
        result={"stdout": "", "stderr": "", "interrupted": interrupted},
    )
    ingest(store, t, tmp_path)
    last_seen = _last_seen(store)
    assert transcripts.settle_sessions(store, [SID], now=last_seen + 3600) == 1
    event = "interrupt" if interrupted else "tool_result"
    assert _ended(store) == ("stopped", event, 1)
    note = crash_note(store, None, last_seen + 3600).items
    assert words in note[0]
    assert '"run the migration"' in note[0]


def test_a_session_fed_by_hooks_alone_is_settled_by_its_open_turn(workspace: Path) -> None:
    subprocess.run(["git", "init", "-q", str(workspace)], check=True)
    t0 = clock.now() - 86_400
    payload = hook_payload("UserPromptSubmit", SID, workspace, prompt="add a cache")
    assert hooks.handle("claude-code", "UserPromptSubmit", payload, now=t0)[0] == 0
    with Store.open(workspace) as store:
        assert transcripts.settle_sessions(store, [SID], now=t0 + 3600) == 1
        # The request never got an answer: stopped, not finished.
        assert _ended(store) == ("stopped", "prompt", 1)
        assert "a request that had no reply yet" in crash_note(store, None, t0 + 3600).items[0]
        # The open turn was closed and handed to the session.
        open_turns = store.query(
            "SELECT 1 FROM agent_turns WHERE session_id = ? AND recorded = 0", (SID,)
        )
        assert open_turns == []


def test_a_session_fed_by_hooks_whose_turns_all_ended_is_settled_as_finished(
    workspace: Path,
) -> None:
    subprocess.run(["git", "init", "-q", str(workspace)], check=True)
    t0 = clock.now() - 86_400
    for event, at, extra in (
        ("UserPromptSubmit", t0, {"prompt": "add a cache"}),
        ("Stop", t0 + 5, {"last_assistant_message": "Added."}),
    ):
        payload = hook_payload(event, SID, workspace, **extra)
        assert hooks.handle("claude-code", event, payload, now=at)[0] == 0
    with Store.open(workspace) as store:
        assert transcripts.settle_sessions(store, [SID], now=t0 + 3600) == 1
        assert _ended(store) == ("finished", "reply", 1)


def test_an_ingest_of_many_turns_takes_one_automatic_checkpoint_not_one_per_due_turn(
    store: Store, tmp_path: Path
) -> None:
    from memory_core import checkpoints

    (store.root / "app.py").write_text("print('v1')\n", encoding="utf-8")
    # A live session: its turns ended minutes ago (turns replayed from an old transcript take
    # no checkpoint at all, below).
    t = Transcript(SID, store.root, start=datetime.now(UTC) - timedelta(minutes=5))
    for n in range(1, 8):
        t.prompt(f"step {n}")
        t.response([text(f"did step {n}")])
    settings = config.load(store.root, overrides={"checkpoints.every_n_turns": 2})
    stats = ingest(store, t, tmp_path, settings=settings)
    assert stats.turns == 7
    # Turns 2, 4 and 6 were due; the workspace is the same tree for all three.
    made = [c["description"] for c in checkpoints.list_checkpoints(store)]
    assert made == ["automatic: turn 6"]


def _seven_turns(cwd: Path, start: datetime) -> Transcript:
    t = Transcript(SID, cwd, start=start)
    for n in range(1, 8):
        t.prompt(f"step {n}")
        t.response([text(f"did step {n}")])
    return t


def test_turns_replayed_from_an_old_transcript_take_no_checkpoint_of_todays_files(
    store: Store, tmp_path: Path
) -> None:
    """A checkpoint holds the files as they are now: for a turn that ended yesterday it would
    hold today's files under yesterday's turn (and in a large workspace, cost a full scan)."""
    from memory_core import checkpoints

    (store.root / "app.py").write_text("print('today')\n", encoding="utf-8")
    settings = config.load(store.root, overrides={"checkpoints.every_n_turns": 2})
    old = _seven_turns(store.root, datetime.now(UTC) - timedelta(days=1))
    stats = ingest(store, old, tmp_path, settings=settings)
    assert stats.turns == 7
    assert sessions.get(store, SID)["turns"] == 7  # the turns themselves are all recorded
    assert checkpoints.list_checkpoints(store) == []


def test_a_live_session_fed_by_its_hooks_still_takes_the_turn_checkpoint(
    store: Store, tmp_path: Path
) -> None:
    """The same transcript read by the hooks of the session writing it (their time is the
    turns' time): the automatic checkpoint is taken, once."""
    from memory_core import checkpoints

    (store.root / "app.py").write_text("print('today')\n", encoding="utf-8")
    config.set_value(store.root, "checkpoints.every_n_turns", 2)
    live = _seven_turns(store.root, datetime.now(UTC) - timedelta(days=1))
    path = live.save(tmp_path / f"{SID}.jsonl")
    end = clock.parse_iso(json.loads(live.lines[-1])["timestamp"]) + 1
    payload = hook_payload("Stop", SID, store.root, path)
    assert hooks.handle("claude-code", "Stop", payload, now=end)[0] == 0
    made = [c["description"] for c in checkpoints.list_checkpoints(store)]
    assert made == ["automatic: turn 6"]


def test_a_remembered_rule_carries_its_session_its_source_and_the_time_it_was_said(
    store: Store, tmp_path: Path
) -> None:
    t = Transcript(SID, store.root)
    t.prompt("Always run the linter before committing.")
    t.response([text("Will do.")])
    ingest(store, t, tmp_path)
    said_at = clock.parse_iso(json.loads(t.lines[0])["timestamp"])
    row = store.query_one("SELECT session_id, provenance, created_at FROM memories")
    assert row is not None
    assert row["session_id"] == SID
    assert json.loads(row["provenance"]) == {"session_id": SID, "source": "transcript"}
    assert row["created_at"] == said_at


def test_an_edit_records_the_content_it_wrote_even_after_the_file_changed_again(
    store: Store, tmp_path: Path
) -> None:
    from memory_core import evolution

    source = store.root / "app.py"
    source.write_text("x = 3\n", encoding="utf-8")  # the user changed it after the agent did
    t = Transcript(SID, store.root)
    t.prompt("set x to 2")
    t.response(
        [tool_use("toolu_e", "Edit", file_path=str(source), old_string="x = 1", new_string="x = 2")]
    )
    t.tool_result(
        "toolu_e",
        "The file has been updated.",
        result={"filePath": str(source), "originalFile": "x = 1\n", "structuredPatch": []},
    )
    t.response([text("Set.")])
    ingest(store, t, tmp_path)
    changes = [c for c in evolution.history(store, "app.py") if c["actor"] == "agent"]
    assert [(c["hash_before"], c["hash_after"]) for c in changes] == [
        (evolution.content_hash("x = 1\n"), evolution.content_hash("x = 2\n"))
    ]


def test_a_transcript_written_in_another_folder_maps_its_files_onto_the_workspace(
    store: Store, tmp_path: Path
) -> None:
    elsewhere = tmp_path / "old-checkout" / "project"
    t = Transcript(SID, elsewhere)
    t.prompt("write the helper")
    t.response(
        [
            tool_use(
                "toolu_w", "Write", file_path=str(elsewhere / "src" / "helper.py"), content="pass\n"
            )
        ]
    )
    t.tool_result("toolu_w", "File created.", result={"type": "create"})
    t.response([text("Written.")])
    ingest(store, t, tmp_path)
    files = store.query("SELECT path FROM session_files WHERE session_id = ?", (SID,))
    assert [f["path"] for f in files] == ["src/helper.py"]
    # The turn names the file as the workspace knows it, not by the other folder's path.
    from memory_core import sessions

    (turn,) = sessions.history(store, SID)
    assert [c["summary"] for c in turn["tool_calls"]] == ["src/helper.py"]


def test_a_shell_call_in_a_turn_is_summarised_by_its_command(store: Store, tmp_path: Path) -> None:
    from memory_core import sessions

    t = Transcript(SID, store.root)
    t.prompt("run the unit tests")
    t.response([tool_use("toolu_b", "Bash", command="pytest -q tests/unit")])
    t.tool_result(
        "toolu_b", "12 passed", result={"stdout": "12 passed", "stderr": "", "interrupted": False}
    )
    t.response([text("All pass.")])
    ingest(store, t, tmp_path)
    (turn,) = sessions.history(store, SID)
    assert [(c["tool"], c["summary"]) for c in turn["tool_calls"]] == [
        ("Bash", "pytest -q tests/unit")
    ]


def test_a_subagent_file_read_after_the_main_one_is_not_taken_for_the_sessions_transcript(
    store: Store, tmp_path: Path
) -> None:
    main = Transcript(SID, store.root)
    main.prompt("delegate the search")
    main.response([text("Delegating.")])
    main_path = main.save(tmp_path / f"{SID}.jsonl")
    transcripts.ingest_file(store, main_path)
    sub = Transcript(SID, store.root)
    sub.response([text("found it")], sidechain=True, agent_id="a1b2", message_id="msg_sub")
    transcripts.ingest_file(store, sub.save(tmp_path / SID / "subagents" / "agent-a1b2.jsonl"))
    row = store.query_one("SELECT transcript_path FROM agent_sessions WHERE session_id = ?", (SID,))
    # What `engram session capture` backs up: the conversation, not one subagent's part of it.
    assert row is not None and row["transcript_path"] == str(main_path.resolve())


def test_a_transcript_ending_on_an_unanswered_request_is_settled_as_stopped(
    store: Store, tmp_path: Path
) -> None:
    t = Transcript(SID, store.root)
    t.prompt("first question")
    t.response([text("First answer.")])
    t.prompt("rename the package")
    ingest(store, t, tmp_path)
    last_seen = _last_seen(store)
    assert transcripts.settle_sessions(store, [SID], now=last_seen + 3600) == 1
    assert _ended(store) == ("stopped", "prompt", 1)
    note = crash_note(store, None, last_seen + 3600).items
    assert "a request that had no reply yet" in note[0]
    assert '"rename the package"' in note[0]


def test_the_last_event_survives_a_final_chunk_without_conversation(
    store: Store, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(transcripts, "CHUNK_LINES", 2)  # chunks of two lines, to end on noise
    t = Transcript(SID, store.root)
    t.prompt("tidy the imports")
    t.response([text("Tidied.")])
    t.noise()
    ingest(store, t, tmp_path)
    last_seen = _last_seen(store)
    assert transcripts.settle_sessions(store, [SID], now=last_seen + 3600) == 1
    assert _ended(store) == ("finished", "reply", 1)


def test_a_long_shell_command_is_summarised_with_the_true_count_of_characters_cut(
    store: Store, tmp_path: Path
) -> None:
    from memory_core import sessions

    command = "python -c 'print(1)' " + "--flag " * 211  # 1,498 characters
    t = Transcript(SID, store.root)
    t.prompt("run it")
    t.response([tool_use("toolu_l", "Bash", command=command)])
    t.tool_result("toolu_l", "1", result={"stdout": "1", "stderr": "", "interrupted": False})
    t.response([text("Ran.")])
    ingest(store, t, tmp_path)
    (turn,) = sessions.history(store, SID)
    (call,) = turn["tool_calls"]
    summary = str(call["summary"])
    head, marker, tail = summary.split("\n")
    cut = int(marker.removeprefix("[... ").removesuffix(" characters cut ...]"))
    assert command.startswith(head) and command.endswith(tail)
    assert len(head) + cut + len(tail) == len(command)
    assert len(summary) <= 300


def test_a_long_correction_is_remembered_cut_to_600_characters(
    store: Store, tmp_path: Path
) -> None:
    correction = "No, that is wrong: " + "the cache key includes the tenant id and " * 20
    assert len(" ".join(correction.split())) > 600
    t = Transcript(SID, store.root)
    t.prompt(correction)
    t.response([text("Fixing.")])
    ingest(store, t, tmp_path)
    contents = [content for (kind, _tags, content) in memories(store) if kind == "preference"]
    assert " ".join(correction.split())[:600] in contents


def test_the_progress_callback_counts_the_bytes_of_this_run(store: Store, tmp_path: Path) -> None:
    t = Transcript(SID, store.root)
    t.prompt("first")
    t.response([text("one")])
    path = t.save(tmp_path / f"{SID}.jsonl")
    first_size = path.stat().st_size
    done: list[int] = []
    transcripts.ingest_file(store, path, progress=done.append)
    assert done == [first_size]
    t.prompt("second")
    t.response([text("two")])
    t.save(path)
    done.clear()
    stats = transcripts.ingest_file(store, path, progress=done.append)
    assert done == [path.stat().st_size - first_size] == [stats.bytes]
    assert stats.as_dict()["bytes"] == stats.bytes and stats.as_dict()["prompts"] == 1


def test_a_claude_transcript_whose_first_line_names_a_project_hash_is_still_one(
    tmp_path: Path,
) -> None:
    path = tmp_path / "t.jsonl"
    path.write_text(json.dumps({"type": "user", "projectHash": "abc", "message": {}}) + "\n")
    assert transcripts.is_claude_transcript(path)
    gemini = tmp_path / "g.jsonl"
    gemini.write_text(json.dumps({"sessionId": "s", "projectHash": "abc"}) + "\n")
    assert not transcripts.is_claude_transcript(gemini)


def test_a_prompt_given_as_a_list_of_plain_strings_is_a_prompt(
    store: Store, tmp_path: Path
) -> None:
    t = Transcript(SID, store.root)
    t.prompt("placeholder")
    line = json.loads(t.lines[-1])
    line["message"]["content"] = ["fix the flaky test"]
    t.lines[-1] = json.dumps(line)
    t.response([text("Fixed.")])
    stats = ingest(store, t, tmp_path)
    assert stats.prompts == 1
    row = store.query_one("SELECT text FROM agent_prompts WHERE session_id = ?", (SID,))
    assert row is not None and row["text"] == "fix the flaky test"


def _output_tokens(store: Store) -> tuple[int, int]:
    row = store.query_one(
        "SELECT main_output_tokens, sub_output_tokens FROM agent_sessions WHERE session_id = ?",
        (SID,),
    )
    assert row is not None
    return int(row[0]), int(row[1])


def test_a_response_whose_output_count_grows_line_by_line_counts_its_final_count_once(
    store: Store, tmp_path: Path
) -> None:
    t = Transcript(SID, store.root)
    t.prompt("explain")
    t.response([text("Part one."), text("Part two."), text("Part three.")], output_tokens=90)
    # Streaming: each line of the response carries the output count so far.
    for index, count in ((-3, 10), (-2, 40)):
        line = json.loads(t.lines[index])
        line["message"]["usage"]["output_tokens"] = count
        t.lines[index] = json.dumps(line)
    ingest(store, t, tmp_path)
    assert _output_tokens(store) == (90, 0)
    row = store.query_one("SELECT output_tokens FROM agent_turns WHERE session_id = ?", (SID,))
    assert row is not None and row["output_tokens"] == 90


def test_an_older_response_without_a_message_id_still_counts_its_tokens(
    store: Store, tmp_path: Path
) -> None:
    t = Transcript(SID, store.root)
    t.prompt("hello")
    t.response([text("Hi.")], output_tokens=7)
    line = json.loads(t.lines[-1])
    del line["message"]["id"]
    t.lines[-1] = json.dumps(line)
    ingest(store, t, tmp_path)
    assert _output_tokens(store) == (7, 0)


def test_the_parents_copy_of_a_response_replaces_a_subagents_replay_read_first(
    store: Store, tmp_path: Path
) -> None:
    sub = Transcript(SID, store.root)
    sub.response(
        [text("Delegating.")],
        sidechain=True,
        agent_id="a9",
        message_id="msg_shared",
        output_tokens=30,
    )
    transcripts.ingest_file(store, sub.save(tmp_path / SID / "subagents" / "agent-a9.jsonl"))
    assert _output_tokens(store) == (0, 30)
    main = Transcript(SID, store.root)
    main.prompt("find the cookie readers")
    main.response([text("Delegating.")], message_id="msg_shared", output_tokens=30)
    transcripts.ingest_file(store, main.save(tmp_path / f"{SID}.jsonl"))
    # The response is the parent's: counted once, on the main conversation's side.
    assert _output_tokens(store) == (30, 0)


def test_an_ingested_session_keeps_the_transcripts_own_times(store: Store, tmp_path: Path) -> None:
    t = Transcript(SID, store.root)
    t.prompt("start")
    t.response([text("Done.")])
    ingest(store, t, tmp_path)
    first = clock.parse_iso(json.loads(t.lines[0])["timestamp"])
    last = clock.parse_iso(json.loads(t.lines[-1])["timestamp"])
    row = store.query_one("SELECT started_at, last_activity_at FROM sessions WHERE id = ?", (SID,))
    assert row is not None and (row["started_at"], row["last_activity_at"]) == (first, last)
    assert transcripts.settle_sessions(store, [SID], now=last + 3600) == 1
    row = store.query_one("SELECT status, ended_at FROM sessions WHERE id = ?", (SID,))
    # Ended when it went silent, not when engram noticed.
    assert row is not None and (row["status"], row["ended_at"]) == ("closed", last)


def test_a_line_that_is_not_utf8_is_skipped_as_malformed_and_the_rest_is_read(
    store: Store, tmp_path: Path
) -> None:
    t = Transcript(SID, store.root)
    t.prompt("first")
    t.response([text("one")])
    t.prompt("second")
    t.response([text("two")])
    path = t.save(tmp_path / f"{SID}.jsonl")
    lines = path.read_bytes().split(b"\n")
    lines[1] = lines[1].replace(b"one", b"\xff\xfe")  # a damaged line
    path.write_bytes(b"\n".join(lines))
    stats = transcripts.ingest_file(store, path)
    assert (stats.malformed, stats.prompts, stats.turns) == (1, 2, 2)


def test_a_reply_line_with_two_text_blocks_reads_as_two_paragraphs(
    store: Store, tmp_path: Path
) -> None:
    from memory_core import sessions

    t = Transcript(SID, store.root)
    t.prompt("status?")
    t.response([text("Tests pass.")])
    line = json.loads(t.lines[-1])
    line["message"]["content"].append(text("Lint is clean."))
    t.lines[-1] = json.dumps(line)
    ingest(store, t, tmp_path)
    (turn,) = sessions.history(store, SID)
    assert turn["assistant_response"] == "Tests pass.\nLint is clean."


def _tokens(store: Store) -> tuple[int, ...]:
    row = store.query_one(
        "SELECT main_input_tokens, main_output_tokens, main_cache_creation_tokens, "
        "main_cache_read_tokens, main_messages FROM agent_sessions WHERE session_id = ?",
        (SID,),
    )
    assert row is not None
    return tuple(int(v) for v in row)


def test_a_response_split_across_two_runs_counts_every_token_kind_once(
    store: Store, tmp_path: Path
) -> None:
    t = Transcript(SID, store.root)
    t.prompt("write the docs")
    t.response(
        [text("Writing."), text("Done.")],
        input_tokens=11,
        output_tokens=77,
        cache_creation=333,
        cache_read=5555,
    )
    whole = list(t.lines)
    t.lines = whole[:-1]  # a hook ran while the response was being written
    ingest(store, t, tmp_path, flush=False)
    assert _tokens(store) == (11, 1, 333, 5555, 1)
    t.lines = whole
    ingest(store, t, tmp_path)
    assert _tokens(store) == (11, 77, 333, 5555, 1)


def test_nothing_new_at_the_end_of_a_transcript_still_closes_the_open_turn(
    store: Store, tmp_path: Path
) -> None:
    from memory_core import sessions

    t = Transcript(SID, store.root)
    t.prompt("what changed?")
    t.response([text("Two files.")])
    ingest(store, t, tmp_path, flush=False)  # read while the agent was answering
    assert sessions.history(store, SID) == []
    stats = ingest(store, t, tmp_path)  # the Stop hook: the file has nothing new
    assert stats.turns == 1
    assert [turn["assistant_response"] for turn in sessions.history(store, SID)] == ["Two files."]


def test_every_compaction_of_a_transcript_is_counted(store: Store, tmp_path: Path) -> None:
    t = Transcript(SID, store.root)
    t.prompt("long task")
    t.response([text("Working.")])
    t.compaction()
    t.response([text("Still working.")])
    t.compaction(trigger="manual")
    stats = ingest(store, t, tmp_path)
    assert stats.compactions == 2
    row = store.query_one("SELECT compactions FROM agent_sessions WHERE session_id = ?", (SID,))
    assert row is not None and row["compactions"] == 2


def test_an_inline_subagent_replay_then_the_parents_lines_give_the_turn_its_tokens(
    store: Store, tmp_path: Path
) -> None:
    t = Transcript(SID, store.root)
    t.prompt("plan the migration")
    t.response([text("Planning.")], message_id="msg_plan", output_tokens=90)
    main_line = json.loads(t.lines[-1])
    # Older builds wrote subagents inline: the replay of the parent's response comes first,
    # with partial counts, then the parent's own lines of it.
    lines = []
    for sidechain, output in ((True, 5), (True, 20), (False, 40), (False, 90)):
        line = json.loads(json.dumps(main_line))
        line["isSidechain"] = sidechain
        line["uuid"] = f"{line['uuid']}-{output}"
        line["message"]["usage"]["output_tokens"] = output
        lines.append(json.dumps(line))
    t.lines[-1:] = lines
    t.prompt("next")
    t.response([text("Ok.")], output_tokens=3)
    ingest(store, t, tmp_path)
    rows = store.query(
        "SELECT output_tokens FROM agent_turns WHERE session_id = ? ORDER BY started_at", (SID,)
    )
    assert [r["output_tokens"] for r in rows] == [90, 3]
    assert _output_tokens(store) == (93, 0)


def _session_end(store: Store) -> tuple[object, ...]:
    row = store.query_one("SELECT status, end_reason FROM sessions WHERE id = ?", (SID,))
    assert row is not None
    return tuple(row)


def test_a_settled_session_says_whether_it_completed_or_stopped(
    store: Store, tmp_path: Path
) -> None:
    t = Transcript(SID, store.root)
    t.prompt("rename the module")
    t.response([text("Renamed.")])
    ingest(store, t, tmp_path)
    assert transcripts.settle_sessions(store, [SID], now=_last_seen(store) + 3600) == 1
    assert _session_end(store) == ("closed", "completion")


def test_a_session_stopping_on_a_request_is_closed_as_stopped(store: Store, tmp_path: Path) -> None:
    t = Transcript(SID, store.root)
    t.prompt("rename the module")
    ingest(store, t, tmp_path)
    assert transcripts.settle_sessions(store, [SID], now=_last_seen(store) + 3600) == 1
    assert _session_end(store) == ("closed", "stopped")


def test_ingesting_paths_without_flush_leaves_the_turn_open(store: Store, tmp_path: Path) -> None:
    from memory_core import sessions

    t = Transcript(SID, store.root)
    t.prompt("still answering")
    t.response([text("Working on it.")])
    stats = transcripts.ingest_paths(store, [t.save(tmp_path / f"{SID}.jsonl")], flush=False)
    assert [s.turns for s in stats] == [0]
    assert sessions.history(store, SID) == []


def test_a_session_end_closes_the_open_turn_at_the_time_the_session_ended(
    store: Store, tmp_path: Path
) -> None:
    t = Transcript(SID, store.root)
    t.prompt("one more thing")
    t.response([text("Done.")])
    ingest(store, t, tmp_path, flush=False)
    ended = clock.parse_iso(json.loads(t.lines[-1])["timestamp"]) + 42
    finished = transcripts.flush_session(store, SID, ended_at=ended)
    assert [f.ended_at for f in finished] == [ended]
    row = store.query_one("SELECT ended_at FROM agent_turns WHERE session_id = ?", (SID,))
    assert row is not None and row["ended_at"] == ended


def test_a_call_the_user_interrupted_is_known_from_its_result_alone(
    store: Store, tmp_path: Path
) -> None:
    t = Transcript(SID, store.root)
    t.prompt("run the slow suite")
    t.response([tool_use("toolu_s", "Bash", command="pytest -q tests/slow")])
    # No error flag and no marker in the text: only the structured result says it.
    t.tool_result(
        "toolu_s", "collected 120 items", result={"stdout": "", "stderr": "", "interrupted": True}
    )
    stats = ingest(store, t, tmp_path)
    # Unsuccessful, as `session metrics` counts it, but the user stopped it: nothing to learn.
    assert (stats.failures, stats.interrupted) == (1, 1)
    assert store.query_one("SELECT COUNT(*) FROM error_occurrences")[0] == 0
    assert sessions.metrics(store, SID)["tool_calls_failed"] == 1
    last_seen = _last_seen(store)
    assert transcripts.settle_sessions(store, [SID], now=last_seen + 3600) == 1
    assert _ended(store) == ("stopped", "interrupt", 1)


def test_a_call_whose_structured_result_carries_an_exit_code_failed(
    store: Store, tmp_path: Path
) -> None:
    t = Transcript(SID, store.root)
    t.prompt("build it")
    t.response([tool_use("toolu_m", "Bash", command="make build")])
    # No error flag and a calm text: the exit code in the structured result is the evidence.
    t.tool_result("toolu_m", "build output", result={"stdout": "build output", "exitCode": 2})
    t.response([text("The build failed.")])
    stats = ingest(store, t, tmp_path)
    assert stats.failures == 1
    commands = store.query(
        "SELECT command, exit_code FROM session_commands WHERE session_id = ?", (SID,)
    )
    assert [(c["command"], c["exit_code"]) for c in commands] == [("make build", 2)]


def test_a_command_that_never_got_its_result_is_kept_as_run_with_no_exit_code(
    store: Store, tmp_path: Path
) -> None:
    """The session ended while the command ran: `engram session` lists it, neither passed nor
    failed, and the call is not counted as a failure."""
    t = Transcript(SID, store.root)
    t.prompt("run the slow suite")
    t.response([tool_use("toolu_slow", "Bash", command="pytest -x tests/slow")])
    ingest(store, t, tmp_path)
    assert transcripts.settle_sessions(store, [SID], now=_last_seen(store) + 3600) == 1
    commands = store.query(
        "SELECT command, exit_code, failed FROM session_commands WHERE session_id = ?", (SID,)
    )
    assert [tuple(c) for c in commands] == [("pytest -x tests/slow", None, None)]
    calls = store.query(
        "SELECT tool, ok, summary FROM session_tool_calls WHERE session_id = ?", (SID,)
    )
    assert [tuple(c) for c in calls] == [("Bash", 1, "pytest -x tests/slow")]


def test_an_unanswered_edit_from_another_checkout_is_summarised_by_its_workspace_path(
    store: Store, tmp_path: Path
) -> None:
    """A teammate's transcript, written in their own checkout, stops before an edit's result:
    the call is kept under the file's path in this workspace, not as a bare `Edit`."""
    elsewhere = tmp_path / "teammate" / "checkout"
    t = Transcript(SID, elsewhere)
    t.prompt("fix the parser")
    t.response(
        [
            tool_use(
                "toolu_edit",
                "Edit",
                file_path=str(elsewhere / "src" / "parser.py"),
                old_string="a",
                new_string="b",
            )
        ]
    )
    ingest(store, t, tmp_path)
    assert transcripts.settle_sessions(store, [SID], now=_last_seen(store) + 3600) == 1
    calls = store.query("SELECT tool, summary FROM session_tool_calls WHERE session_id = ?", (SID,))
    assert [tuple(c) for c in calls] == [("Edit", "src/parser.py")]
