"""Session records from transcripts shaped like real Claude Code 2.1.x ones, checked against an
independent count written from the format (`reference_figures`), figure by figure."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from memory_core import sessions
from memory_core.agents import context, transcripts
from memory_core.store import Store
from tests.agents_fixtures import real_shaped_session, reference_figures

SESSION = "7d0c2a9e-1111-4222-8333-444455556666"
KINDS = ("input_tokens", "output_tokens", "cache_creation_tokens", "cache_read_tokens")


def _ingest(
    store: Store, tmp_path: Path, *, cwd: Path | None = None, subagents_first: bool = False
) -> list[Path]:
    folder = tmp_path / "claude" / "projects" / "p"
    paths = real_shaped_session(store.root, cwd or store.root, folder, SESSION)
    order = [*paths[1:], paths[0]] if subagents_first else paths
    for path in order:
        transcripts.ingest_file(store, path)
    transcripts.settle_sessions(store, [SESSION])
    return paths


def test_every_figure_equals_the_independent_count(store: Store, tmp_path: Path) -> None:
    paths = _ingest(store, tmp_path)
    oracle = reference_figures(paths)[SESSION]
    metrics = sessions.metrics(store, SESSION)
    # Turns are the real prompts (not /model, its output, the interrupt or the notification).
    assert oracle["prompts"] == 3
    assert metrics["turns"] == oracle["prompts"]
    for part in ("main", "subagents"):
        for kind in KINDS:
            assert metrics["tokens"][part][kind] == oracle[part][kind], (part, kind)
        assert metrics["tokens"][part]["messages"] == oracle[part]["messages"]
    for kind in KINDS:
        assert metrics["tokens"]["all"][kind] == oracle["main"][kind] + oracle["subagents"][kind]
    assert metrics["total_tokens"] == sum(
        oracle[part][kind] for part in ("main", "subagents") for kind in KINDS
    )
    # Every tool call, the subagent's included, and every failure.
    assert metrics["tool_calls"] == oracle["tool_calls"] == 9
    assert metrics["tool_calls_failed"] == oracle["failed"] == 3
    # `session list` and `session get` say the same.
    listed = next(s for s in sessions.list_sessions(store) if s["id"] == SESSION)
    got = sessions.get(store, SESSION)
    for view in (listed, got):
        assert view["turns"] == metrics["turns"]
        assert view["tokens"] == metrics["tokens"]
        assert (view["input_tokens"], view["output_tokens"]) == (
            metrics["input_tokens"],
            metrics["output_tokens"],
        )


def test_messages_after_a_compaction_with_no_new_prompt_belong_to_the_turn(
    store: Store, tmp_path: Path
) -> None:
    _ingest(store, tmp_path)
    turns = sessions.history(store, SESSION)
    assert [t["user_message"] for t in turns] == [
        "Make the build pass",
        "No, don't change the build script. Always run npm test after a build.",
        "Update the test to the new constant and run it",
    ]
    first = turns[0]
    # The answer after the compaction is part of the first turn ...
    assert "The test still fails" in first["assistant_response"]
    assert [c["tool"] for c in first["tool_calls"]] == [
        "Bash",
        "Edit",
        "Bash",
        "Bash",
        "Write",
        "Task",
        "Bash",
    ]
    # ... and its tokens too: 7 main-chain responses (3 + 1 + ... written over several lines).
    assert first["output_tokens"] == 180 + 95 + 40 + 30 + 60 + 75 + 66 + 25


def test_failures_phrased_without_exit_code_and_blocked_calls_are_failures(
    store: Store, tmp_path: Path
) -> None:
    _ingest(store, tmp_path)
    metrics = sessions.metrics(store, SESSION)
    # npm run build (npm's own words), rm (a hook denied it), npm test (Exit code 1).
    assert (metrics["commands"], metrics["commands_failed"]) == (5, 3)
    summary = sessions.summary_markdown(store, SESSION)
    assert "2 of 5 commands succeeded" in summary
    # Both `npm run build` and `npm test` succeeded later: not open. The blocked rm is.
    open_section = summary.split("## Open items")[1].split("##")[0]
    assert "rm -rf /tmp/build-cache" in open_section
    assert "npm run build" not in open_section and "npm test" not in open_section


def test_a_transcript_written_elsewhere_maps_its_files_onto_the_workspace(
    store: Store, tmp_path: Path
) -> None:
    elsewhere = tmp_path / "teammate" / "checkout"
    _ingest(store, tmp_path, cwd=elsewhere)
    assert sessions.files_modified(store, SESSION) == ["src/index.ts"]
    # The plan outside every project is listed as such, never dropped.
    outside = sessions.files_outside(store, SESSION)
    assert len(outside) == 1 and outside[0].endswith(".claude/plans/build-plan.md")
    metrics = sessions.metrics(store, SESSION)
    assert (metrics["files_modified"], metrics["files_outside_project"]) == (1, 1)
    assert "## Files changed outside the project" in sessions.summary_markdown(store, SESSION)


@pytest.mark.parametrize("subagents_first", [False, True])
def test_times_come_from_the_transcript_whatever_order_files_are_read(
    store: Store, tmp_path: Path, subagents_first: bool
) -> None:
    paths = _ingest(store, tmp_path, subagents_first=subagents_first)
    oracle = reference_figures(paths)[SESSION]
    session = sessions.get(store, SESSION)
    assert session["started_at"] == oracle["first"][:19] + "Z"
    assert session["ended_at"] == oracle["last"][:19] + "Z"
    from memory_core import clock

    span = clock.parse_iso(oracle["last"]) - clock.parse_iso(oracle["first"])
    assert sessions.metrics(store, SESSION)["duration_seconds"] == pytest.approx(span, abs=1)
    # It ended (yesterday): not active.
    assert session["status"] == "closed"


def test_a_finished_session_is_never_called_crashed(store: Store, tmp_path: Path) -> None:
    _ingest(store, tmp_path)
    row: Any = store.query_one(
        "SELECT end_reason FROM agent_sessions WHERE session_id = ?", (SESSION,)
    )
    assert row["end_reason"] == "finished"
    text = context.session_start_text(store, current_session="next")
    assert "crash" not in text.lower() and "abnormal" not in text.lower()
    # Where the work ended: the last request and the agent's last words.
    assert "Update the test to the new constant and run it" in text
    assert "All done: the build and the tests pass." in text
    # What is open: the call a hook blocked, said so; the failures fixed later are not open.
    assert "Open: `rm -rf /tmp/build-cache` failed the last time it ran (blocked by a hook)" in text
    assert "Open: `npm" not in text


def test_the_digest_reports_the_same_tokens(store: Store, tmp_path: Path) -> None:
    from memory_core.agents import digest

    paths = _ingest(store, tmp_path)
    oracle = reference_figures(paths)[SESSION]
    shot = digest.snapshot(store, SESSION)
    names = {
        "input": "input_tokens",
        "output": "output_tokens",
        "cache_creation": "cache_creation_tokens",
        "cache_read": "cache_read_tokens",
    }
    assert {k: shot["tokens"][k] for k in names} == {k: oracle["main"][v] for k, v in names.items()}
    assert {k: shot["subagent_tokens"][k] for k in names} == {
        k: oracle["subagents"][v] for k, v in names.items()
    }
