"""Gemini CLI's chat files read piece by piece (memory_core/agents/gemini_chats.py), on the shapes
its releases write: the upsert log folded (a message rewritten, a rewind, a `$set` of metadata, a
`/compress` summary), the old whole-JSON file beside today's JSONL, a line that is not JSON or is
nested too deep, the parts of a message, the shell tool's report with and without its
`<untrusted_context>` wrapper, and the token counts mapped onto engram's four kinds."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from memory_core.agents import gemini_chats as g

RECORDED = Path(__file__).resolve().parents[1] / "fixtures" / "recorded"


def test_the_recorded_0_61_chat_folds_to_its_messages_and_metadata() -> None:
    [chat] = (RECORDED / "gemini-0.61.0").glob("session-*-26-*.jsonl")
    metadata, messages = g.fold(g._records(chat.read_bytes(), ".jsonl"))
    assert metadata["sessionId"] == "065aa4b4-e4e3-46d7-90e6-9c76e5c56963"
    assert metadata["kind"] == "main" and "lastUpdated" in metadata
    kinds = [m["type"] for m in messages]
    assert kinds.count("user") == 12 and kinds[0] == "user"
    prompts = [g._text(m["content"]) for m in messages if m["type"] == "user"]
    assert prompts[0].endswith("Create hello.py that prints hello")


def test_a_rewritten_message_keeps_its_last_copy_and_its_place() -> None:
    records = [
        {"sessionId": "s"},
        {"id": "a", "type": "user", "content": "first"},
        {"id": "b", "type": "gemini", "content": "draft"},
        {"id": "c", "type": "user", "content": "second"},
        {"id": "b", "type": "gemini", "content": "final"},
        {"$set": {"lastUpdated": "t2", "messages": [{"id": "x"}]}},
    ]
    metadata, messages = g.fold(records)
    assert [(m["id"], m["content"]) for m in messages] == [
        ("a", "first"),
        ("b", "final"),
        ("c", "second"),
    ]
    assert metadata == {"sessionId": "s", "lastUpdated": "t2"}


def test_a_rewind_drops_the_message_it_names_and_everything_after() -> None:
    records = [
        {"id": "a", "type": "user", "content": "one"},
        {"id": "b", "type": "gemini", "content": "two"},
        {"id": "c", "type": "user", "content": "three"},
        {"$rewindTo": "b"},
        {"id": "d", "type": "user", "content": "four"},
    ]
    assert [m["id"] for m in g.fold(records)[1]] == ["a", "d"]
    # A rewind to a message not in the log clears it all.
    assert g.fold([{"id": "a", "type": "user"}, {"$rewindTo": "zz"}])[1] == []


def test_a_compression_summary_in_a_set_is_kept_once_as_a_message() -> None:
    summary = {
        "id": "s1",
        "type": "user",
        "content": [{"text": "<state_snapshot>done</state_snapshot>"}],
    }
    other = {"id": "s2", "type": "user", "content": "just context"}
    records = [
        {"$set": {"messages": [summary, other]}},
        {"$set": {"messages": [summary]}},
        {"messages": [{"id": "s3", "type": "user", "content": "<state_snapshot>"}]},
    ]
    metadata, messages = g.fold(records)
    assert [m["id"] for m in messages] == ["s1"]
    assert "messages" not in metadata


def test_the_old_whole_json_file_and_broken_lines_are_read_as_far_as_they_go() -> None:
    whole = {"sessionId": "s", "messages": [{"id": "a", "type": "user"}, "junk", {"id": "b"}]}
    assert list(g._records(json.dumps(whole).encode(), ".json")) == [
        {"sessionId": "s"},
        {"id": "a", "type": "user"},
        {"id": "b"},
    ]
    assert list(g._records(b"{not json", ".json")) == []
    assert list(g._records(b"[1, 2]", ".json")) == []
    lines = b'{"a": 1}\n\n  \n{broken\n[1]\n' + b"[" * 100_000 + b"\n" + b'{"b": "x\\ud83d"}\n'
    assert list(g._records(lines, ".jsonl")) == [{"a": 1}, {"b": "x?"}]


def test_the_text_of_every_part_shape() -> None:
    assert g._text("plain") == "plain"
    assert g._text({"text": "t"}) == "t"
    assert g._text([{"text": "a"}, {"inlineData": {}}, "b", 3]) == "a\nb"
    for key in ("error", "output", "content"):
        part = {"functionResponse": {"response": {key: "said", "other": 1}}}
        assert g._text(part) == "said"
    assert g._text({"functionResponse": {"response": {"n": 1}}}) == '{"n": 1}'
    assert len(g._text({"functionResponse": {"response": {"n": "x" * 9000}}})) == 4000
    assert g._text({"functionResponse": {"response": "text"}}) == ""
    assert g._text(None) == "" and g._text({"other": 1}) == ""


def test_messages_gemini_wrote_itself_are_not_prompts() -> None:
    for text in (
        "Please continue.",
        "  System: loop detected",
        "<session_context>x",
        "a <state_snapshot>",
    ):
        assert g.is_injected(text)
    assert not g.is_injected("Please continue the refactor in api.py")
    assert not g.is_injected("fix the System: prefix in logs")


def test_a_shell_report_is_read_field_by_field() -> None:
    today = "<untrusted_context>\nOutput: boom\nline 2\nError: (none)\nExit Code: 1\nProcess Group PGID: 7\n</untrusted_context>"
    assert g.shell_report(today) == {"output": "boom\nline 2", "exitCode": 1}
    older = "Command: make\nDirectory: (root)\nOutput: x\nError: bad\nExit Code: -1\nSignal: (none)"
    assert g.shell_report(older) == {
        "output": "x",
        "command": "make",
        "error": "bad",
        "exitCode": -1,
    }
    assert g.shell_report("Output:\nExit Code: ") == {"output": ""}
    assert g.shell_report("Command: ls\nExit Code: 1") is None  # no Output: not a shell report
    assert g.shell_report("plain text") is None


def test_the_wrapper_is_taken_off_only_when_it_wraps_the_whole_output() -> None:
    wrapped = "<untrusted_context>\nsay &lt;/untrusted_context&gt; here\n</untrusted_context>"
    assert g.unwrap(wrapped) == "say </untrusted_context> here"
    half = "<untrusted_context>\nno end"
    assert g.unwrap(half) == half


@pytest.mark.parametrize(
    ("tokens", "usage"),
    [
        (
            {"input": 1000, "cached": 300, "tool": 20, "output": 50, "thoughts": 7},
            (720, 57, 0, 300),
        ),
        ({"input": 100, "cached": 300}, (0, 0, 0, 300)),
        ({"input": True, "output": -5, "cached": "3"}, (0, 0, 0, 0)),
        (None, (0, 0, 0, 0)),
    ],
)
def test_gemini_token_counts_map_onto_engrams_four_kinds(
    tokens: object, usage: tuple[int, int, int, int]
) -> None:
    got = g._usage(tokens)
    assert (
        got.input_tokens,
        got.output_tokens,
        got.cache_creation_tokens,
        got.cache_read_tokens,
    ) == usage


def _entries(metadata: dict[str, object], *messages: dict[str, object]) -> list[object]:
    return list(g.entries(metadata, list(messages)))


def test_each_kind_of_message_becomes_an_entry_of_its_session_and_folder() -> None:
    meta = {"sessionId": "s", "directories": ["/work/app", "/other"]}
    found = _entries(
        meta,
        {"id": "1", "type": "user", "timestamp": "2026-11-27T12:00:00Z", "content": "fix it"},
        {"id": "2", "type": "user", "content": [{"functionResponse": {"id": "c", "response": {}}}]},
        {"id": "3", "type": "error", "timestamp": "2026-11-27T12:00:05Z", "content": "quota"},
        {"id": "4", "type": "info", "content": "x"},
        {"id": "5", "type": "warning", "content": "y"},
        {"id": "6", "type": "something_new", "content": "z"},
    )
    assert [(e.kind, e.uuid, e.cwd) for e in found] == [  # type: ignore[attr-defined]
        ("prompt", "gemini:s:1", "/work/app"),
        ("user_other", "gemini:s:2", "/work/app"),
        ("user_other", "gemini:s:3", "/work/app"),
        ("user_other", "gemini:s:4", "/work/app"),
        ("user_other", "gemini:s:5", "/work/app"),
    ]
    assert found[2].ts == found[0].ts + 5  # type: ignore[attr-defined]
    assert not any(e.sidechain for e in found)  # type: ignore[attr-defined]


def test_a_subagents_messages_are_sidechain_and_never_prompts() -> None:
    found = _entries(
        {"sessionId": "sub", "kind": "subagent"},
        {"id": "1", "type": "user", "content": "look for callers"},
        {"id": "2", "type": "user", "content": [{"functionResponse": {"response": {}}}]},
        {"id": "3", "type": "info", "content": "x"},
    )
    assert [(e.kind, e.sidechain) for e in found] == [  # type: ignore[attr-defined]
        ("user_other", True),
        ("user_other", True),
        ("user_other", True),
    ]
    assert _entries({"sessionId": ""}, {"id": "1", "type": "user", "content": "x"}) == []


def test_the_prompt_is_what_the_person_typed_before_gemini_expanded_it() -> None:
    [entry] = _entries(
        {"sessionId": "s"},
        {
            "id": "1",
            "type": "user",
            "content": "Explain this file:\n--- a.py ---\nx = 1",
            "displayContent": [{"text": "Explain @a.py"}],
        },
    )
    assert (entry.kind, entry.text) == ("prompt", "Explain @a.py")  # type: ignore[attr-defined]


def test_the_projects_gemini_folders_are_found_by_each_naming(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import hashlib

    home = tmp_path / "home"
    root = tmp_path / "project"
    tmp = home / ".gemini" / "tmp"
    by_hash = tmp / hashlib.sha256(str(root).encode("utf-8")).hexdigest()
    by_name = tmp / "project-1"
    by_marker = tmp / "project-2"
    for folder in (by_hash, by_name, by_marker, tmp / "someone-else"):
        folder.mkdir(parents=True)
    (home / ".gemini" / "projects.json").write_text(
        json.dumps({"projects": {str(root): "project-1", "/elsewhere": "someone-else"}})
    )
    (by_marker / ".project_root").write_text(f"{root}\n")
    (tmp / "someone-else" / ".project_root").write_text("/elsewhere\n")
    monkeypatch.setenv("GEMINI_CLI_HOME", str(home))
    assert sorted(g.project_dirs(root)) == sorted([by_hash, by_name, by_marker])
    chats = by_name / "chats"
    chats.mkdir()
    for name in ("session-a.jsonl", "session-b.json", "notes.json.bak", "sub/session-c.jsonl"):
        (chats / name).parent.mkdir(exist_ok=True)
        (chats / name).write_text("{}\n")
    assert [p.name for p in g.chat_files(chats)] == [
        "session-a.jsonl",
        "session-b.json",
        "session-c.jsonl",
    ]
