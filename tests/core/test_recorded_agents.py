"""Sessions the real Gemini CLI and Codex CLI binaries wrote (tests/fixtures/recorded/, made by
scripts/record-agents.sh against a local scripted model): their hooks replayed as they fired.

Each hook call is replayed with the payload the agent sent and the agent's file as it stood at
that moment (the recorder kept its line count), so the hooks see what they saw live: Codex's
PostToolUse before the rollout has the call's output, Gemini's PreCompress before every model
request, a chat file whose prompts carry the context engram's own SessionStart added. Then the
same files are ingested whole. The figures must be those of the live run, nothing counted twice,
and the lesson of the session (a command that failed three times, a rule the user stated) must
reach a Claude Code session that starts next in the same project.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from memory_core import clock, sessions
from memory_core.agents import codex_rollouts, gemini_chats, hooks
from memory_core.store import Store

RECORDED = Path(__file__).resolve().parent.parent / "fixtures" / "recorded"
HOOKED = sorted(p for p in RECORDED.iterdir() if (p / "hooks.jsonl").exists())
RECORDED_AT = "/home/dev"  # what the recorder put in place of its scratch folder
RULE = "Always run python3 with -X dev in this project."
DEAD_END = "`python3 -c 'import missing_helper_module'` failed 3 times"
COUNTED = (
    "turns",
    "tool_calls",
    "tool_calls_failed",
    "commands",
    "commands_failed",
    "files_modified",
    "input_tokens",
    "output_tokens",
    "total_tokens",
)


# What each recorded session did (tests/fixtures/recorded/README.md): its prompts, how many
# calls failed, files changed, and the start of its compaction's summary.
SCRIPTED = (
    [
        "Create hello.py that prints hello",
        f"Run the checks. {RULE}",
        "Add a greeting function to hello.py",
    ],
    3,
    1,
    None,
)
EXPECTED: dict[str, tuple[list[str], int, int, str | None]] = {
    # The declined write and the read of the file it never wrote fail too; /compress.
    "gemini-0.61.0-interactive": (
        [
            "Create hello.py that prints hello",
            f"Run the checks. {RULE}",
            "Just answer: what is left to do",
        ],
        5,
        0,
        "<state_snapshot>\n<overall_goal>Make the checks of hello.py pass.",
    ),
    # The read of the missing hello.py fails too; /compact.
    "codex-0.125.0-interactive": (
        [f"Run the checks. {RULE}", "Just answer: what is left to do"],
        4,
        0,
        "Another language model started to solve this problem",
    ),
}


def _transcripts(folder: Path) -> list[Path]:
    return sorted(folder.glob("session-*.jsonl")) + sorted(folder.glob("rollout-*.jsonl"))


_PATCH_FILE = re.compile(r"^\*\*\* (?:Add|Update|Delete) File: (.+)$", re.M)


def _files_changed(folder: Path) -> set[str]:
    """The files the calls name, read from the agent's own records (not from engram's code):
    Gemini's write_file and replace `file_path`; the files of Codex's apply_patch patches."""
    names: set[str] = set()
    for path in _transcripts(folder):
        for line in path.read_text(encoding="utf-8").splitlines():
            record = json.loads(line)
            for call in record.get("toolCalls") or []:
                if (
                    call.get("name") in ("write_file", "replace")
                    and call.get("status") == "success"
                ):
                    names.add(Path(call["args"]["file_path"]).name)
            item = record.get("payload") if isinstance(record.get("payload"), dict) else {}
            if item.get("type") in ("custom_tool_call", "function_call"):
                names.update(_PATCH_FILE.findall(str(item.get("input") or item.get("arguments"))))
    return names


def _claude_session_start(root: Path) -> str:
    payload = {
        "session_id": "00000000-0000-4000-8000-00000000c1a0",
        "transcript_path": str(root / "none.jsonl"),
        "cwd": str(root),
        "hook_event_name": "SessionStart",
        "source": "startup",
    }
    code, out = hooks.handle("claude-code", "SessionStart", json.dumps(payload), now=clock.now())
    assert code == 0
    return str(json.loads(out)["hookSpecificOutput"]["additionalContext"]) if out else ""


def _write_as_the_agent_did(payload: dict[str, Any]) -> None:
    """Puts a write call's result on disk before its after-tool hook, as the live run had it:
    engram reads the file's state when the hook runs, so a replay without the file would see a
    file created and gone (Gemini's write_file and replace, Codex's apply_patch)."""
    cwd = Path(str(payload.get("cwd")))
    args = payload.get("tool_input") if isinstance(payload.get("tool_input"), dict) else {}
    tool = payload.get("tool_name")
    if tool == "write_file":
        (cwd / args["file_path"]).write_text(args["content"], encoding="utf-8")
    elif tool == "replace":
        target = cwd / args["file_path"]
        text = target.read_text(encoding="utf-8")
        target.write_text(text.replace(args["old_string"], args["new_string"], 1), encoding="utf-8")
    elif tool == "apply_patch":
        for header, body in re.findall(
            r"^\*\*\* ((?:Add|Update) File: .+)\n((?:[-+ @].*\n?)*)", args["command"], re.M
        ):
            target = cwd / header.split(": ", 1)[1]
            lines = [line for line in body.splitlines() if not line.startswith("@@")]
            old = "".join(line[1:] + "\n" for line in lines if line[:1] in ("-", " "))
            new = "".join(line[1:] + "\n" for line in lines if line[:1] in ("+", " "))
            if header.startswith("Add"):
                target.write_text(new, encoding="utf-8")
            else:
                text = target.read_text(encoding="utf-8")
                target.write_text(text.replace(old, new, 1), encoding="utf-8")


def _replay(folder: Path, base: Path) -> tuple[str, str]:
    """Every hook call of the recorded session, in order; returns (agent, session id)."""
    moved = {
        p.name: p.read_text(encoding="utf-8").replace(RECORDED_AT, str(base))
        for p in _transcripts(folder)
    }
    agent = ""
    session = ""
    for line in (folder / "hooks.jsonl").read_text(encoding="utf-8").splitlines():
        call: dict[str, Any] = json.loads(line.replace(RECORDED_AT, str(base)))
        _, agent, event = call["argv"]
        payload = call["payload"]
        session = payload["session_id"]
        target = payload.get("transcript_path")
        if isinstance(target, str) and call["transcript_lines"] is not None:
            lines = moved[Path(target).name].splitlines(keepends=True)
            Path(target).parent.mkdir(parents=True, exist_ok=True)
            Path(target).write_text("".join(lines[: call["transcript_lines"]]), encoding="utf-8")
        if event in ("PostToolUse", "AfterTool"):
            _write_as_the_agent_did(payload)
        code, _ = hooks.handle(agent, event, json.dumps(payload), now=clock.now())
        assert code == 0
    for name, text in moved.items():  # the files as the agent left them
        found = list(base.rglob(name))
        (found[0] if found else base / name).write_text(text, encoding="utf-8")
    return agent, session


@pytest.mark.parametrize("folder", HOOKED, ids=lambda p: p.name)
def test_a_real_session_through_its_hooks_then_ingested_counts_each_thing_once(
    folder: Path, tmp_path: Path
) -> None:
    root = tmp_path / "project"
    (root / ".git").mkdir(parents=True)
    store = Store.open_or_init(root)
    try:
        # Negative control: before the session, a Claude Code start is told none of it.
        before = _claude_session_start(root)
        assert DEAD_END not in before and RULE not in before
        agent, session = _replay(folder, tmp_path)
        live = json.loads((folder / "figures.json").read_text(encoding="utf-8"))
        from_hooks = sessions.metrics(store, session)
        # What engram recorded from the hooks here is what it recorded in the live run.
        assert {k: from_hooks[k] for k in COUNTED} == {k: live["from_hooks"][k] for k in COUNTED}
        typed, failed, changed, summary = EXPECTED.get(folder.name, SCRIPTED)
        assert from_hooks["turns"] == len(typed)
        assert from_hooks["tool_calls_failed"] == failed
        assert from_hooks["files_modified"] == len(_files_changed(folder)) == changed
        # The same files ingested afterwards, then again: nothing counted twice.
        for path in _transcripts(folder):
            moved = next(tmp_path.rglob(path.name))
            for _ in range(2):
                if agent == "codex":
                    codex_rollouts.ingest_file(store, moved)
                else:
                    gemini_chats.ingest_chat_file(store, moved)
        after = sessions.metrics(store, session)
        assert {k: after[k] for k in COUNTED} == {k: from_hooks[k] for k in COUNTED}
        prompts = [
            row["text"]
            for row in store.query(
                "SELECT text FROM agent_prompts WHERE session_id = ? ORDER BY ts", (session,)
            )
        ]
        # The prompts as typed: not the context engram's own SessionStart put before them.
        assert prompts == typed
        told = _claude_session_start(root)
        assert DEAD_END in told
        assert "ModuleNotFoundError: No module named 'missing_helper_module'" in told
        assert RULE in told[told.index("## Rules the user stated") :]
        assert "<hook_context>" not in told
        compactions = store.query(
            "SELECT summary FROM agent_compactions WHERE session_id = ?", (session,)
        )
        # Gemini 0.61 records /compress only as the new context starting with its summary.
        assert [row["summary"][: len(summary)] for row in compactions] == (
            [summary] if summary else []
        )
        if not changed:
            # The write the user declined changed nothing and is no open failure.
            assert "changed 1 file" not in told and "write_file" not in told
        if agent == "gemini":
            # PreCompress fires before every model request: no digest for each of them.
            calls = [json.loads(line) for line in (folder / "hooks.jsonl").open()]
            events = [call["argv"][2] for call in calls]
            manual = sum(1 for call in calls if call["payload"].get("trigger") == "manual")
            digests = list((root / ".engram" / "exports" / "digests").glob("*.yaml"))
            assert events.count("PreCompress") >= 8
            ends = events.count("AfterAgent") + events.count("SessionEnd")
            assert len(digests) <= ends + manual < events.count("PreCompress")
    finally:
        store.close()


@pytest.mark.parametrize(
    "folder", [p for p in HOOKED if not p.name.endswith("-interactive")], ids=lambda p: p.name
)
def test_a_claude_code_sessions_lesson_reaches_the_real_agents_session_start(
    folder: Path, tmp_path: Path
) -> None:
    """The other way round: the SessionStart payload the real agent sent, answered after a
    Claude Code session in the same project, carries that session's correction."""
    from tests.agents_fixtures import CORRECTION, hook_payload, realistic_session

    root = tmp_path / "project"
    (root / ".git").mkdir(parents=True)
    store = Store.open_or_init(root)
    try:
        first = json.loads(
            (folder / "hooks.jsonl")
            .read_text(encoding="utf-8")
            .splitlines()[0]
            .replace(RECORDED_AT, str(tmp_path))
        )
        assert first["argv"][2] == "SessionStart"
        agent, payload = first["argv"][1], json.dumps(first["payload"])
        # Negative control: before the Claude Code session, the agent is told none of it.
        _, out = hooks.handle(agent, "SessionStart", payload, now=clock.now())
        assert CORRECTION not in out
        transcript, _ = realistic_session(root, "5f2c1d4e-aaaa-bbbb-cccc-123456789abc")
        path = transcript.save(tmp_path / "claude.jsonl")
        stop = hook_payload("Stop", "5f2c1d4e-aaaa-bbbb-cccc-123456789abc", root, path)
        assert hooks.handle("claude-code", "Stop", stop, now=clock.now())[0] == 0
        _, out = hooks.handle(agent, "SessionStart", payload, now=clock.now())
        context = json.loads(out)["hookSpecificOutput"]
        assert context["hookEventName"] == "SessionStart"
        assert CORRECTION in context["additionalContext"]
    finally:
        store.close()
