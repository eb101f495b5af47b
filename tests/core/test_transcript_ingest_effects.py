"""What an ingested transcript leaves for the user beyond its counts: the rules and decisions
remembered, the files an edit changed when its result arrives in a later run, the settings the
caller passed, and how a session whose transcript stopped long ago is ended.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from memory_core import clock, config
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
    t.tool_result(
        "toolu_edit",
        "The file has been updated.",
        result={"filePath": str(source), "originalFile": "x = 1\n", "structuredPatch": []},
    )
    t.response([text("Changed.")])
    ingest(store, t, tmp_path)
    files = store.query("SELECT path FROM session_files WHERE session_id = ?", (SID,))
    assert [f["path"] for f in files] == ["src/app.py"]


def test_a_line_with_a_malformed_cwd_is_read_against_the_workspace(
    store: Store, tmp_path: Path
) -> None:
    t = Transcript(SID, store.root)
    t.prompt("edit the app")
    t.response([tool_use("toolu_w", "Write", file_path="src/app.py", content="y = 1\n")])
    t.tool_result("toolu_w", "File created.", result={"type": "create", "filePath": "src/app.py"})
    t.response([text("Written.")])
    t.lines = [line.replace(f'"cwd": "{store.root}"', '"cwd": 42') for line in t.lines]
    stats = ingest(store, t, tmp_path)
    assert (stats.prompts, stats.tool_calls, stats.malformed) == (1, 1, 0)
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
    ingest(store, t, tmp_path, settings=settings)
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
    t = Transcript(SID, store.root)
    for n in range(1, 8):
        t.prompt(f"step {n}")
        t.response([text(f"did step {n}")])
    settings = config.load(store.root, overrides={"checkpoints.every_n_turns": 2})
    stats = ingest(store, t, tmp_path, settings=settings)
    assert stats.turns == 7
    # Turns 2, 4 and 6 were due; the workspace is the same tree for all three.
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
