"""`engram ingest codex`: Codex CLI rollouts into the same session records, counted exactly.

Every rollout in tests/fixtures/codex/ (real files of 0.3x, 0.57 and 0.58, derived files of
0.30, 0.46, 0.77 and 0.125; see that folder's README) and in tests/fixtures/recorded/ (written by
the real Codex CLI 0.98, 0.125 and 0.171) is counted twice: by engram, and by
`independent_count` below, which reads the format as openai/codex writes it and shares no code
with engram. Both must agree on every figure.
"""

from __future__ import annotations

import io
import json
import os
import re
import shutil
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest
import zstandard

from memory_core import memory, sessions
from memory_core.agents import codex_outputs, codex_rollouts
from memory_core.store import Store

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "codex"
REAL_058 = FIXTURES / "real-0.58-acidicsoil.jsonl.zst"
LEGACY_030 = FIXTURES / "derived-0.30-legacy.jsonl"
ENVELOPE_046 = FIXTURES / "derived-0.46-envelope.jsonl"
CURRENT_0125 = FIXTURES / "derived-0.125-current.jsonl"
SUBAGENT_0125 = FIXTURES / "derived-0.125-subagent.jsonl"
REVIEW_077 = FIXTURES / "derived-0.77-review.jsonl"
REVIEW_THREAD_077 = FIXTURES / "derived-0.77-review-thread.jsonl"
REAL_LEGACY = sorted(FIXTURES.glob("real-legacy-ocodex-*.jsonl"))
REAL_057 = FIXTURES / "real-0.57-moonmind.jsonl.zst"
# Written by the real Codex CLI 0.98, 0.125 and 0.171 binaries (scripts/record-agents.sh).
RECORDED = sorted((FIXTURES.parent / "recorded").glob("codex-*/rollout-*.jsonl"))
MAIN_ROLLOUTS = [
    *RECORDED,
    REAL_058,
    REAL_057,
    *REAL_LEGACY,
    LEGACY_030,
    ENVELOPE_046,
    REVIEW_077,
    CURRENT_0125,
]


# -- the independent count ---------------------------------------------------------------------


def _text_of(path: Path) -> str:
    raw = path.read_bytes()
    if path.name.endswith(".zst"):
        raw = zstandard.ZstdDecompressor().stream_reader(io.BytesIO(raw)).read()
    return raw.decode("utf-8")


_INJECTED = re.compile(r"^\s*(?:<(\w[\w-]*)>.*</\1>\s*$|# AGENTS\.md instructions for )", re.S)
_HEADER_EXIT = re.compile(r"^(?:Exit code:|Process exited with code) *(-?\d+)", re.M)
# Outputs of calls Codex could not run, or that the user stopped (failed by the one definition).
_CODEX_ERRORS = (
    "execution error",
    "failed to parse function arguments",
    "unsupported call",
    "aborted",
)


def independent_count(path: Path) -> dict[str, Any]:
    """The figures of one rollout, straight from its lines (rules in the fixtures' README)."""
    lines = [json.loads(line) for line in _text_of(path).splitlines() if line.strip()]
    legacy = "type" not in lines[0]
    # Codex 0.17x writes no `user_message` event: its user `message` items are the prompts, as
    # in the rollouts before envelopes.
    items_are_prompts = legacy or not any(
        line.get("type") == "event_msg" and line["payload"].get("type") == "user_message"
        for line in lines
    )
    source = {} if legacy else lines[0]["payload"].get("source")
    subagent = isinstance(source, dict) and "subagent" in source
    review_thread = subagent and source["subagent"] == "review"
    in_review, review_asked, main_count = False, False, [0, 0, 0, 0]
    prompts: list[str] = []
    calls: dict[str, dict[str, Any]] = {}
    outputs: dict[str, Any] = {}
    compactions = 0
    times: list[float] = []
    tokens = [0, 0, 0, 0]  # input incl. cached, cached, output, total: summed over runs
    previous = [0, 0, 0, 0]
    for index, line in enumerate(lines):
        kind, item = ("response_item", line) if legacy else (line["type"], line["payload"])
        if not legacy:
            times.append(
                datetime.fromisoformat(line["timestamp"].replace("Z", "+00:00")).timestamp()
            )
        if kind == "event_msg" and item.get("type") == "entered_review_mode":
            # A review counts its tokens from zero here; the session's count goes on after it.
            in_review, review_asked, main_count, previous = True, False, previous, [0, 0, 0, 0]
        elif kind == "event_msg" and item.get("type") == "exited_review_mode" and in_review:
            in_review, previous = False, main_count
        elif kind == "event_msg" and item.get("type") == "user_message":
            message = item.get("message", "")
            if in_review and review_asked:
                continue  # the review's request, written twice
            review_asked = review_asked or in_review
            if (
                item.get("kind") in (None, "plain")
                and message.strip()
                and not _INJECTED.match(message)
            ):
                prompts.append(message)
        elif kind == "event_msg" and item.get("type") == "token_count" and item.get("info"):
            total = item["info"]["total_token_usage"]
            now = [
                total["input_tokens"],
                total["cached_input_tokens"],
                total["output_tokens"],
                total["total_tokens"],
            ]
            start = previous if now[3] >= previous[3] else [0, 0, 0, 0]
            tokens = [t + n - s for t, n, s in zip(tokens, now, start, strict=True)]
            previous = now
        elif kind == "compacted":
            compactions += 1
        elif kind == "response_item":
            what = item.get("type")
            if items_are_prompts and what == "message" and item.get("role") == "user":
                message = "".join(part.get("text", "") for part in item["content"])
                if message.strip() and not _INJECTED.match(message):
                    prompts.append(message)
            elif what in ("function_call", "custom_tool_call", "local_shell_call"):
                calls[item["call_id"]] = item
            elif what == "web_search_call":
                calls[f"web-{index}"] = item
                outputs[f"web-{index}"] = ""
            elif what in ("function_call_output", "custom_tool_call_output"):
                outputs[item["call_id"]] = item["output"]
    failed = 0
    for call_id, output in outputs.items():
        if call_id not in calls:
            continue
        code, error = None, str(output).lstrip().lower().startswith(_CODEX_ERRORS)
        try:
            parsed = json.loads(output)
            error = error or (isinstance(parsed, dict) and parsed.get("isError") is True)
            code = parsed["metadata"]["exit_code"]
        except (ValueError, KeyError, TypeError):
            match = _HEADER_EXIT.search("\n".join(str(output).splitlines()[:6]))
            code = int(match.group(1)) if match else None
        failed += code not in (None, 0) or error
    if subagent:
        prompts = []  # the parent's instruction to its subagent, not something a person typed
    if review_thread:
        tokens = [0, 0, 0, 0]  # the reviewed session's rollout holds them
    return {
        "prompts": len(prompts),
        "tool_calls": sum(1 for call_id in calls if call_id in outputs),
        "failed": failed,
        "compactions": compactions,
        "input_tokens": tokens[0] - tokens[1],
        "cache_read_tokens": tokens[1],
        "output_tokens": tokens[2],
        "total_tokens": tokens[3],
        "duration": round(max(times) - min(times), 3) if times else 0.0,
    }


def engram_figures(store: Store, path: Path) -> dict[str, Any]:
    stats = codex_rollouts.ingest_file(store, path)
    sid = stats.sessions[0] if stats.sessions else _session_of(path)
    metrics = sessions.metrics(store, sid)
    tokens = (metrics.get("tokens") or {}).get("all", {})
    prompts = store.query_one(
        "SELECT COUNT(*) AS n FROM agent_prompts WHERE session_id = ?", (sid,)
    )
    row = store.query_one("SELECT compactions FROM agent_sessions WHERE session_id = ?", (sid,))
    assert prompts is not None and row is not None
    return {
        "prompts": int(prompts["n"]),
        "tool_calls": metrics["tool_calls"],
        "failed": metrics["tool_calls_failed"],
        "compactions": int(row["compactions"]),
        "input_tokens": tokens.get("input_tokens", 0),
        "cache_read_tokens": tokens.get("cache_read_tokens", 0),
        "output_tokens": tokens.get("output_tokens", 0),
        "total_tokens": tokens.get("total_tokens", 0),
        "duration": metrics["duration_seconds"],
    }


@pytest.mark.parametrize("path", MAIN_ROLLOUTS, ids=lambda p: p.name)
def test_every_figure_equals_the_independent_count(store: Store, path: Path) -> None:
    expected = independent_count(path)
    assert engram_figures(store, path) == expected
    # One turn per prompt, every one closed at the end of the rollout.
    assert sessions.metrics(store, _session_of(path))["turns"] == expected["prompts"]


def _session_of(path: Path) -> str:
    first = json.loads(_text_of(path).splitlines()[0])
    return str(first.get("payload", first)["id"])


def test_the_real_058_rollout_in_figures(store: Store) -> None:
    """Written out, so a shared mistake of engram and the counter cannot hide: Codex's last
    cumulative total is 1,121,566 (1,099,261 input of which 1,027,328 cached, 22,305 output),
    though 79 token_count lines would sum to far more."""
    figures = engram_figures(store, REAL_058)
    assert figures["total_tokens"] == 1_121_566
    assert (figures["input_tokens"], figures["cache_read_tokens"]) == (71_933, 1_027_328)
    assert figures["output_tokens"] == 22_305
    # A third angle: the per-response figures of the lines where the total grew add up to it.
    grown, last_total = 0, 0
    for line in _text_of(REAL_058).splitlines():
        payload = json.loads(line)["payload"]
        info = payload.get("info") if payload.get("type") == "token_count" else None
        if info and info["total_token_usage"]["total_tokens"] != last_total:
            grown += info["last_token_usage"]["total_tokens"]
            last_total = info["total_token_usage"]["total_tokens"]
    assert grown == figures["total_tokens"]
    assert (figures["prompts"], figures["tool_calls"], figures["failed"]) == (1, 39, 3)
    sid = "019a93b9-f380-7600-98ff-940e6b99603c"
    metrics = sessions.metrics(store, sid)
    # 37 shell calls, two of them apply_patch through `bash -lc "apply_patch <<'PATCH' ..."`.
    assert metrics["commands"] == 35
    assert sessions.files_modified(store, sid) == ["components/chat/chat-helpers/index.ts"]
    [turn] = sessions.history(store, sid)
    assert turn["user_message"].startswith("finish up the users work by rigging up the chatbot-ui")
    assert "<environment_context>" not in turn["user_message"]
    assert sessions.get(store, sid)["agent"] == "codex"


def test_the_real_057_rollout_in_figures(store: Store) -> None:
    figures = engram_figures(store, REAL_057)
    assert (figures["prompts"], figures["tool_calls"], figures["failed"]) == (2, 78, 8)
    assert figures["total_tokens"] == 2_717_507


def test_the_oldest_format_without_envelopes(store: Store) -> None:
    codex_rollouts.ingest_file(store, LEGACY_030)
    sid = "5f0c7a3e-1c2d-4e5f-8a9b-0c1d2e3f4a5b"
    turns = sessions.history(store, sid)
    # Not the <user_instructions> nor the <environment_context> messages.
    assert [t["user_message"] for t in turns] == [
        "The checkout total ignores the discount. Fix it and run the tests.",
        "Never edit files under tests/ to make them pass.",
    ]
    assert "both checkout tests pass" in turns[0]["assistant_response"]
    metrics = sessions.metrics(store, sid)
    assert (metrics["commands"], metrics["commands_failed"]) == (2, 1)
    assert sessions.files_modified(store, sid) == ["shop/checkout.py"]
    # No times but the first line's, no token counts: nothing is made up.
    assert metrics["duration_seconds"] == 0.0
    assert "tokens" not in metrics
    # The rule the user stated outlives the per-prompt ledger.
    rules = [m["content"] for m in memory.list_memories(store, tags=["user-rule"])]
    assert "Never edit files under tests/ to make them pass." in rules


def test_046_kinds_interrupt_and_compaction(store: Store) -> None:
    codex_rollouts.ingest_file(store, ENVELOPE_046)
    sid = "0199a7c2-5d1e-7a40-9b3c-2f6e8d4a1b07"
    turns = sessions.history(store, sid)
    assert len(turns) == 2  # the environment_context user_message is not a prompt
    # The interrupted pytest call has no output: it is no finished call and no failure.
    metrics = sessions.metrics(store, sid)
    assert (metrics["tool_calls"], metrics["tool_calls_failed"]) == (3, 1)
    assert sorted(sessions.files_modified(store, sid)) == [
        "shop/checkout.py",
        "tests/test_member_discount.py",
    ]
    summary = store.query_one("SELECT summary FROM agent_compactions WHERE session_id = ?", (sid,))
    assert summary is not None and "member_total()" in summary["summary"]
    corrections = [m["content"] for m in memory.list_memories(store, tags=["user-rule"])]
    assert any(c.startswith("No, don't change the signature of total()") for c in corrections)


def test_current_format_tools_by_kind(store: Store) -> None:
    codex_rollouts.ingest_file(store, CURRENT_0125)
    sid = "019d6e2a-4b7c-7f10-8a3e-5c9d1b2e4f60"
    tools = {
        row["tool"]: row["n"]
        for row in store.query(
            "SELECT tool, COUNT(*) AS n FROM agent_tool_uses WHERE session_id = ? GROUP BY tool",
            (sid,),
        )
    }
    assert tools == {
        "Bash": 4,  # exec_command x3, shell_command x1
        "apply_patch": 2,  # the freeform tool, and a heredoc through exec_command
        "mcp__context7__resolve-library-id": 1,
        "WebSearch": 1,
    }
    failed = [
        row["command"]
        for row in store.query(
            "SELECT command FROM session_commands WHERE session_id = ? AND failed = 1", (sid,)
        )
    ]
    assert failed == [
        "uv run pytest -q tests/test_export.py",
        "uv run pytest -q tests/test_export_eu.py",
    ]
    assert sorted(sessions.files_modified(store, sid)) == [
        "shop/export.py",
        "tests/fixtures/rows.py",
    ]
    decisions = [m["content"] for m in memory.list_memories(store, tags=["user-decision"])]
    assert any("semicolons as the CSV delimiter" in d for d in decisions)
    # The AGENTS.md message is context, not a request.
    assert all("AGENTS.md" not in t["user_message"] for t in sessions.history(store, sid))


def test_a_compaction_knows_the_contexts_size_before_it(store: Store) -> None:
    lines = CURRENT_0125.read_text().splitlines()
    last_before = None
    for line in lines:
        obj = json.loads(line)
        if obj["type"] == "compacted":
            break
        info = obj["payload"].get("info") if obj["payload"].get("type") == "token_count" else None
        if info:
            last_before = info["last_token_usage"]["total_tokens"]
    codex_rollouts.ingest_file(store, CURRENT_0125)
    row = store.query_one("SELECT pre_tokens FROM agent_compactions")
    assert row is not None and row["pre_tokens"] == last_before


def test_a_review_counts_once_in_both_rollouts_it_is_written_to(store: Store) -> None:
    """/review runs in a thread of its own, with its own rollout, and Codex writes its events
    into the session's rollout too, counting from zero: its tokens count once, as the
    session's subagent work, and the session's own count goes on after it."""
    main_id = "019b55c1-0000-7061-bbb9-000000000001"
    codex_rollouts.ingest_file(store, REVIEW_077)
    codex_rollouts.ingest_file(store, REVIEW_THREAD_077)
    tokens = sessions.metrics(store, main_id)["tokens"]
    assert tokens["main"]["total_tokens"] == 167_700 + 2_100
    assert tokens["subagents"]["total_tokens"] == 40_500 + 700
    turns = sessions.history(store, main_id)
    assert [t["user_message"][:25] for t in turns] == [
        "Return 415 for unsupporte",
        "Review the code changes a",
        "Fix what the review found",
    ]
    # The review thread's own calls are there; its tokens are not counted again.
    thread = sessions.metrics(store, "019b5669-0000-7bc3-bed8-000000000002")
    assert thread["tool_calls"] == 2 and "tokens" not in thread


def test_a_subagent_rollout_is_sidechain_work_of_its_parent(store: Store) -> None:
    codex_rollouts.ingest_file(store, CURRENT_0125)
    main_only = sessions.metrics(store, "019d6e2a-4b7c-7f10-8a3e-5c9d1b2e4f60")
    codex_rollouts.ingest_file(store, SUBAGENT_0125)
    both = sessions.metrics(store, "019d6e2a-4b7c-7f10-8a3e-5c9d1b2e4f60")
    sub = independent_count(SUBAGENT_0125)
    assert both["tokens"]["subagents"]["total_tokens"] == sub["total_tokens"] == 8780
    assert both["tokens"]["main"] == main_only["tokens"]["main"]
    assert both["turns"] == main_only["turns"]  # the parent's instruction is no prompt
    assert (
        store.query_one(
            "SELECT 1 FROM agent_sessions WHERE session_id = '019d6e31-0000-7aaa-8bbb-cccddd000111'"
        )
        is None
    )


def test_reading_again_or_from_another_path_counts_nothing_twice(
    store: Store, tmp_path: Path
) -> None:
    codex_rollouts.ingest_file(store, CURRENT_0125)
    sid = "019d6e2a-4b7c-7f10-8a3e-5c9d1b2e4f60"
    before = sessions.metrics(store, sid)
    codex_rollouts.ingest_file(store, CURRENT_0125)
    # The same bytes compressed elsewhere (Codex compresses old rollouts), and a plain copy.
    packed = tmp_path / "rollout-copy.jsonl.zst"
    packed.write_bytes(zstandard.ZstdCompressor().compress(CURRENT_0125.read_bytes()))
    codex_rollouts.ingest_file(store, packed)
    shutil.copy(CURRENT_0125, tmp_path / "rollout-copy.jsonl")
    codex_rollouts.ingest_file(store, tmp_path / "rollout-copy.jsonl")
    after = sessions.metrics(store, sid)
    after.pop("duration_seconds"), before.pop("duration_seconds")
    assert after == before
    assert len(sessions.history(store, sid)) == 2


def test_a_sessions_lines_written_again_with_new_times_count_once(
    store: Store, tmp_path: Path
) -> None:
    """Tools report Codex sessions whose history reappears in another rollout file, written
    anew: a line's identity is what it holds, not when it was written."""
    sid = "019d6e2a-4b7c-7f10-8a3e-5c9d1b2e4f60"
    codex_rollouts.ingest_file(store, CURRENT_0125)
    before = sessions.metrics(store, sid)
    later = []
    for line in CURRENT_0125.read_text().splitlines():
        obj = json.loads(line)
        obj["timestamp"] = obj["timestamp"].replace("2026-05-14T16:", "2026-06-02T09:")
        later.append(json.dumps(obj))
    again = tmp_path / f"rollout-2026-06-02T09-10-00-{sid}.jsonl"
    again.write_text("\n".join(later) + "\n")
    codex_rollouts.ingest_file(store, again)
    after = sessions.metrics(store, sid)
    for figure in ("turns", "tool_calls", "tool_calls_failed", "commands", "tokens"):
        assert after[figure] == before[figure], figure
    prompts = store.query_one(
        "SELECT COUNT(*) AS n FROM agent_prompts WHERE session_id = ?", (sid,)
    )
    assert prompts is not None and prompts["n"] == 2


def test_a_growing_rollout_read_in_parts_adds_up_to_the_whole(store: Store, tmp_path: Path) -> None:
    data = CURRENT_0125.read_bytes()
    lines = data.splitlines(keepends=True)
    live = tmp_path / "rollout-live.jsonl"
    # Codex is writing: the first part, then half of a line.
    cut = 20
    live.write_bytes(b"".join(lines[:cut]) + lines[cut][:40])
    codex_rollouts.ingest_file(store, live, flush=False)
    live.write_bytes(b"".join(lines[: cut + 15]))
    codex_rollouts.ingest_file(store, live, flush=False)
    # The last line is complete but has no newline yet: it is read, once.
    live.write_bytes(data.rstrip(b"\n"))
    codex_rollouts.ingest_file(store, live)
    live.write_bytes(data)
    codex_rollouts.ingest_file(store, live)
    parts = engram_figures(store, live)
    assert parts == independent_count(CURRENT_0125)


def test_default_selection_is_this_workspaces_sessions(
    workspace: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = tmp_path / "codex-home"
    monkeypatch.setenv("CODEX_HOME", str(home))
    mine = _rollout_in(home, "2026/05/14", "aaaa", workspace / "sub")
    _rollout_in(home, "2026/05/14", "bbbb", tmp_path / "elsewhere")
    archived = _rollout_in(home, "", "cccc", workspace, archived=True, packed=True)
    assert set(codex_rollouts.default_rollouts(workspace)) == {mine, archived}


def test_the_oldest_rollouts_name_their_folder_in_the_environment_context(
    tmp_path: Path,
) -> None:
    lines = LEGACY_030.read_text().splitlines()
    header = json.loads(lines[0])
    del header["cwd"], header["originator"], header["cli_version"]  # as 0.2x wrote it
    path = tmp_path / "rollout-2025-08-20T10-00-00-5f0c7a3e.jsonl"
    path.write_text("\n".join([json.dumps(header), *lines[1:]]) + "\n")
    assert codex_rollouts.session_cwd(path) == "/home/dev/shop"


def _rollout_in(
    home: Path, day: str, sid: str, cwd: Path, *, archived: bool = False, packed: bool = False
) -> Path:
    folder = home / ("archived_sessions" if archived else "sessions") / day
    folder.mkdir(parents=True, exist_ok=True)
    line = {
        "timestamp": "2026-05-14T10:00:00.000Z",
        "type": "session_meta",
        "payload": {"id": sid, "timestamp": "2026-05-14T10:00:00.000Z", "cwd": str(cwd)},
    }
    data = (json.dumps(line) + "\n").encode()
    path = folder / f"rollout-2026-05-14T10-00-00-{sid}.jsonl{'.zst' if packed else ''}"
    path.write_bytes(zstandard.ZstdCompressor().compress(data) if packed else data)
    return path


def test_broken_lines_are_skipped_and_said(store: Store, tmp_path: Path) -> None:
    text = ENVELOPE_046.read_text().splitlines()
    text.insert(5, '{"timestamp": "2025-10-08T09:00:05.400Z", "type": "event_msg", "payl')
    text.insert(7, "not json at all")
    path = tmp_path / "rollout-broken.jsonl"
    path.write_text("\n".join(text) + "\n")
    stats = codex_rollouts.ingest_file(store, path)
    assert stats.malformed == 2
    assert engram_figures(store, path) == independent_count(ENVELOPE_046)


def test_a_forks_copy_of_its_parents_history_counts_once(
    store: Store, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Codex's backtrack (Esc Esc) and /fork start a new rollout that copies the parent's lines,
    rewritten with new times, before the fork's own: they belong to the parent, once."""
    home = tmp_path / "codex-home"
    monkeypatch.setenv("CODEX_HOME", str(home))
    day = home / "sessions" / "2026" / "05" / "14"
    day.mkdir(parents=True)
    parent_id = "019d6e2a-4b7c-7f10-8a3e-5c9d1b2e4f60"
    parent = day / f"rollout-2026-05-14T16-10-00-{parent_id}.jsonl"
    shutil.copy(CURRENT_0125, parent)
    codex_rollouts.ingest_file(store, parent)
    before = sessions.metrics(store, parent_id)
    # The fork: its own first line, the parent's lines up to its second prompt (new times),
    # then a prompt of its own.
    fork_id = "019d6e40-aaaa-7bbb-8ccc-ddddeeee0001"
    copied = []
    for line in CURRENT_0125.read_text().splitlines():
        obj = json.loads(line)
        payload = obj["payload"]
        if payload.get("role") == "user" and "semicolons" in json.dumps(payload):
            break  # Codex cuts before the user message being edited
        obj["timestamp"] = "2026-05-14T17:00:00.000Z"
        copied.append(json.dumps(obj))
    own = [
        {
            "timestamp": "2026-05-14T17:00:00.000Z",
            "type": "session_meta",
            "payload": {"id": fork_id, "forked_from_id": parent_id, "cwd": "/home/dev/shop"},
        },
        *[json.loads(line) for line in copied],
        {
            "timestamp": "2026-05-14T17:01:00.000Z",
            "type": "event_msg",
            "payload": {"type": "user_message", "message": "Use tabs as the delimiter instead."},
        },
        {
            "timestamp": "2026-05-14T17:01:05.000Z",
            "type": "event_msg",
            "payload": {
                "type": "token_count",
                "info": {
                    "total_token_usage": {
                        "input_tokens": 5000,
                        "cached_input_tokens": 4000,
                        "output_tokens": 80,
                        "reasoning_output_tokens": 0,
                        "total_tokens": 5080,
                    }
                },
            },
        },
    ]
    fork = day / f"rollout-2026-05-14T17-00-00-{fork_id}.jsonl"
    fork.write_text("".join(json.dumps(obj) + "\n" for obj in own))
    codex_rollouts.ingest_file(store, fork)
    # The whole first turn and the compaction: its prompt, tool calls and token counts.
    assert sum('"function_call"' in line for line in copied) == 5
    assert sum('"token_count"' in line for line in copied) == 6
    assert any('"compacted"' in line for line in copied)
    assert sessions.metrics(store, parent_id) == before
    forked = sessions.metrics(store, fork_id)
    assert forked["tool_calls"] == 0
    assert forked["turns"] == 1
    assert forked["tokens"]["all"]["total_tokens"] == 5080
    assert [t["user_message"] for t in sessions.history(store, fork_id)] == [
        "Use tabs as the delimiter instead."
    ]
    # Without the parent's rollout, nothing says which lines were copied: they count in the fork.
    parent.unlink()
    lone = tmp_path / f"rollout-2026-05-14T17-00-00-{fork_id}.jsonl"
    fork.rename(lone)
    fresh = Store.open_or_init(tmp_path / "other")
    try:
        codex_rollouts.ingest_file(fresh, lone)
        assert sessions.metrics(fresh, fork_id)["turns"] == 2
    finally:
        fresh.close()


def test_a_rollout_without_user_message_events_has_its_user_messages_as_prompts(
    store: Store, tmp_path: Path
) -> None:
    """Every Codex release with envelopes writes a `user_message` event per prompt; a rollout
    another program wrote may have only the user message items, and those are the prompts."""
    lines = [
        line
        for line in CURRENT_0125.read_text().splitlines()
        if '"type":"user_message"' not in line
    ]
    path = tmp_path / "rollout-2026-05-14T16-10-00-019d6e2a-4b7c-7f10-8a3e-5c9d1b2e4f60.jsonl"
    path.write_text("\n".join(lines) + "\n")
    codex_rollouts.ingest_file(store, path)
    turns = sessions.history(store, "019d6e2a-4b7c-7f10-8a3e-5c9d1b2e4f60")
    # Not the AGENTS.md nor the <environment_context> message, nor the developer's.
    assert [t["user_message"] for t in turns] == [
        "Make the CSV export include the discount column, then run the export tests.",
        "We'll go with semicolons as the CSV delimiter for the EU export.",
    ]


def test_a_rollout_without_its_first_line_is_still_its_sessions(
    store: Store, tmp_path: Path
) -> None:
    sid = "0199a7c2-5d1e-7a40-9b3c-2f6e8d4a1b07"
    path = tmp_path / f"rollout-2025-10-08T09-00-00-{sid}.jsonl"
    path.write_text("".join(ENVELOPE_046.read_text().splitlines(keepends=True)[1:]))
    codex_rollouts.ingest_file(store, path)
    assert len(sessions.history(store, sid)) == 2
    assert sessions.metrics(store, sid)["tokens"]["all"]["total_tokens"] == 45038


def test_the_cli_ingests_codex_sessions(cli: Any, workspace: Path, tmp_path: Path) -> None:
    (workspace / ".git").mkdir()
    home = tmp_path / "codex-home"
    folder = home / "sessions" / "2026" / "05" / "14"
    folder.mkdir(parents=True)
    text = CURRENT_0125.read_text().replace("/home/dev/shop", str(workspace))
    (folder / "rollout-2026-05-14T16-10-00-019d6e2a.jsonl").write_text(text)
    env = {"CODEX_HOME": str(home)}
    done = cli("ingest", "codex", "--json", cwd=workspace, env=env)
    assert done.code == 0, done.stderr
    summary = done.json()
    assert (summary["files"], summary["prompts"], summary["tool_calls"]) == (1, 2, 8)
    assert summary["failures"] == 2 and summary["compactions"] == 1
    listed = cli("session", "list", cwd=workspace, env=env)
    assert "019d6e2a-4b7c-7f10-8a3e-5c9d1b2e4f60" in listed.stdout
    assert "codex, 2 turns" in listed.stdout
    metrics = cli(
        "session", "metrics", "019d6e2a-4b7c-7f10-8a3e-5c9d1b2e4f60", "--json", cwd=workspace
    ).json()
    assert (
        metrics["tokens"]["all"]["total_tokens"] == independent_count(CURRENT_0125)["total_tokens"]
    )
    # A folder is read whole; a missing path is the user's mistake, in one line.
    again = cli("ingest", "codex", str(home / "sessions"), "--json", cwd=workspace, env=env)
    assert again.code == 0 and again.json()["prompts"] == 0
    missing = cli("ingest", "codex", str(workspace / "nope.jsonl"), cwd=workspace, env=env)
    assert missing.code == 2 and "no transcript at" in missing.stderr
    assert "Traceback" not in missing.stderr
    empty = cli("ingest", "codex", cwd=workspace, env={"CODEX_HOME": str(tmp_path / "none")})
    assert empty.code == 0 and "No Codex CLI sessions" in empty.stdout


def test_injected_context_is_never_a_prompt() -> None:
    for text in (
        "<environment_context>\n  <cwd>/x</cwd>\n</environment_context>",
        "<user_instructions>\nbe brief\n</user_instructions>",
        "# AGENTS.md instructions for /x\n\n<INSTRUCTIONS>\nuse uv\n</INSTRUCTIONS>",
        "<user_shell_command>\n<command>ls</command>\n</user_shell_command>",
        "<turn_aborted>\nThe user interrupted.\n</turn_aborted>",
    ):
        assert codex_rollouts.is_injected(text)
    assert not codex_rollouts.is_injected("Fix <b>bold</b> rendering in the <title> tag")
    assert not codex_rollouts.is_injected("<div>why is this div empty?</div> in index.html")


@pytest.mark.parametrize(
    ("output", "failed", "interrupted"),
    [
        ('{"output":"ok\\n","metadata":{"exit_code":0,"duration_seconds":0.1}}', False, False),
        ('{"output":"boom\\n","metadata":{"exit_code":2,"duration_seconds":0.1}}', True, False),
        # The exit code decides, not words in a successful command's own output.
        (
            "Exit code: 0\nWall time: 0.2 seconds\nOutput:\ngo vet: exit status 1 (expected)\n",
            False,
            False,
        ),
        (
            "Exit code: 127\nWall time: 0 seconds\nOutput:\nbash: uvx: command not found\n",
            True,
            False,
        ),
        (
            "Chunk ID: 1\nWall time: 1.0 seconds\nProcess exited with code 1\nOutput:\nFAIL\n",
            True,
            False,
        ),
        (
            "Chunk ID: 2\nWall time: 10.0 seconds\nProcess running with session ID 7\nOutput:\n",
            False,
            False,
        ),
        ("aborted", False, True),
        ('{"content":[{"type":"text","text":"no such library"}],"isError":true}', True, False),
        ("execution error: Io(Os { code: 2, kind: NotFound })", True, False),
        # No exit reported (a file read, an MCP result): its words decide nothing.
        (
            "Error: Exit code 1\nmake: *** [all] Error 1 (from the CI log I was asked to read)",
            False,
            False,
        ),
    ],
)
def test_a_calls_outcome_from_its_output(output: str, failed: bool, interrupted: bool) -> None:
    result = codex_rollouts.tool_result("call_1", output)
    assert (result.is_error, result.interrupted) == (failed, interrupted)


def test_an_exec_command_end_event_gives_the_exit_code_the_output_lacks(
    store: Store, tmp_path: Path
) -> None:
    lines = [
        '{"timestamp":"2026-06-01T10:00:00.000Z","type":"session_meta","payload":{"id":"s-end","cwd":"/w"}}',
        '{"timestamp":"2026-06-01T10:00:01.000Z","type":"event_msg","payload":{"type":"user_message","message":"test it"}}',
        '{"timestamp":"2026-06-01T10:00:02.000Z","type":"response_item","payload":{"type":"function_call","name":"exec_command","arguments":"{\\"cmd\\":\\"make test\\"}","call_id":"c1"}}',
        '{"timestamp":"2026-06-01T10:00:03.000Z","type":"event_msg","payload":{"type":"exec_command_end","call_id":"c1","exit_code":2}}',
        '{"timestamp":"2026-06-01T10:00:03.100Z","type":"response_item","payload":{"type":"function_call_output","call_id":"c1","output":"make: *** [test] Error 2\\n"}}',
    ]
    path = tmp_path / "rollout-end.jsonl"
    path.write_text("\n".join(lines) + "\n")
    codex_rollouts.ingest_file(store, path)
    metrics = sessions.metrics(store, "s-end")
    assert (metrics["tool_calls"], metrics["tool_calls_failed"]) == (1, 1)


def test_a_shell_call_that_is_really_apply_patch() -> None:
    patch = "*** Begin Patch\n*** Add File: a.py\n+x = 1\n*** Update File: b.py\n*** Move to: c.py\n@@\n-y\n+z\n*** Delete File: d.py\n*** End Patch\n"
    for arguments in (
        {"command": ["apply_patch", patch]},
        {"command": ["bash", "-lc", f"apply_patch <<'EOF'\n{patch}EOF\n"]},
        {"command": f"cd sub && apply_patch <<'PATCH'\n{patch}PATCH"},
    ):
        tool, data = codex_rollouts.tool_use("shell", arguments)
        assert tool == "apply_patch"
        assert codex_outputs.patch_files(data) == ["a.py", "b.py", "c.py", "d.py"]
    # Mentioning apply_patch is not running it.
    tool, data = codex_rollouts.tool_use(
        "shell", {"command": ["bash", "-lc", "grep -r apply_patch docs"]}
    )
    assert (tool, data["command"]) == ("Bash", "grep -r apply_patch docs")


def test_no_codex_home_means_no_rollouts(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CODEX_HOME", str(tmp_path / "missing"))
    assert codex_rollouts.rollout_files() == []
    monkeypatch.delenv("CODEX_HOME")
    assert codex_rollouts.codex_home() == Path(os.environ["HOME"]) / ".codex"
