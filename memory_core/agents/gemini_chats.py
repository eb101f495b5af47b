"""Gemini CLI's recorded chats, ingested into the same session records as Claude Code's.

Where: `~/.gemini/tmp/<project id>/chats/session-<YYYY-MM-DDTHH-MM>-<id8>.jsonl` (older
releases: one `.json` document), subagents under `chats/<parent session id>/<id>.jsonl`.
The project id was a sha256 of the project root; newer releases use a short name registered in
`~/.gemini/projects.json` and keep the root in `<project id>/.project_root`.

Format (gemini-cli `packages/core/src/services/chatRecordingService.ts` and
`chatRecordingTypes.ts`): a metadata record `{sessionId, projectHash, startTime, lastUpdated,
summary?, directories?, kind?}`, then message records `{id, timestamp, type, content, ...}`
where type is user | gemini | info | error | warning; a `gemini` message carries `toolCalls`
`[{id, name, args, result, status, timestamp}]`, `thoughts`, `model` and `tokens` `{input,
output, cached, thoughts?, tool?, total}` (Gemini's promptTokenCount, candidatesTokenCount,
cachedContentTokenCount, ...). The JSONL file is an upsert log: a message is written again in
full whenever its tool calls, results or tokens change (the last copy wins); `{"$rewindTo": id}`
drops that message and the ones after it; `{"$set": {...}}` patches the metadata (its
`messages`, the model's rebuilt context after a compression, is not the history: only the
`<state_snapshot>` summary a compression starts it with is taken, as the compaction).
The legacy `.json` file is the whole record with `messages`.

Mapped onto engram's figures: a `user` message a person typed is a prompt (not a slash or
shell command; not the tool results sent back as functionResponse parts since 0.44; not what
Gemini CLI writes itself: "Please continue.", `System: ` feedback, the session context; a
`<state_snapshot>` is a compaction); each `gemini` message is one response; its tokens become input (prompt tokens not served from
the cache, plus tool-use prompt tokens), cache read (cached tokens) and output (candidates plus
thoughts); tool calls use the Claude Code names (run_shell_command is Bash, replace is Edit ...)
and fail by the shared definition (`failures`): status error or cancelled, a non-zero
`Exit Code: N` in run_shell_command's report (read out of its `<untrusted_context>` wrapper).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from memory_core import clock
from memory_core.agents.payload import canonical_tool, scrub, without_hook_context
from memory_core.agents.transcripts import (
    Entry,
    IngestStats,
    ToolResult,
    ToolUse,
    Usage,
    _read_head,
    _Run,
)
from memory_core.store import Store

AGENT = "gemini"


def gemini_home() -> Path:
    configured = os.environ.get("GEMINI_CLI_HOME")
    base = Path(configured).expanduser() if configured else Path.home()
    return base / ".gemini"


def project_dirs(root: Path) -> list[Path]:
    """Gemini's temp folders for the project at `root` (older and newer naming)."""
    tmp = gemini_home() / "tmp"
    if not tmp.is_dir():
        return []
    found = []
    digest = hashlib.sha256(str(root).encode("utf-8")).hexdigest()
    if (tmp / digest).is_dir():
        found.append(tmp / digest)
    registry = gemini_home() / "projects.json"
    try:
        data = json.loads(registry.read_text(encoding="utf-8"))
    except (OSError, ValueError, RecursionError):
        data = None
    projects = data.get("projects") if isinstance(data, dict) else None
    if isinstance(projects, dict):
        name = projects.get(str(root))
        if isinstance(name, str) and (tmp / name).is_dir():
            found.append(tmp / name)
    for candidate in tmp.iterdir():
        marker = candidate / ".project_root"
        try:
            if marker.is_file() and marker.read_text(encoding="utf-8").strip() == str(root):
                found.append(candidate)
        except OSError:
            continue
    return list(dict.fromkeys(found))


def chat_files(folder: Path) -> list[Path]:
    """The chat files in a folder (a `chats/` folder or one above it), subagents included."""
    return sorted(
        (p for p in folder.rglob("*.json*") if p.is_file() and p.suffix in (".json", ".jsonl")),
        key=lambda p: (len(p.parts), str(p)),
    )


def default_chats(root: Path) -> list[Path]:
    """This workspace's chat files, subagents included, oldest first."""
    files: list[Path] = []
    for folder in project_dirs(root):
        chats = folder / "chats"
        if chats.is_dir():
            files.extend(p for p in chats.rglob("*.json*") if p.suffix in (".json", ".jsonl"))
    return sorted(files, key=lambda p: (p.stat().st_mtime, str(p)))


def _records(data: bytes, suffix: str) -> Iterator[dict[str, Any]]:
    """The file's records, scrubbed of lone surrogates; one that is not JSON, or is nested
    deeper than the decoder or the scrubbing goes, is left out."""
    if suffix == ".json":
        try:
            whole = scrub(json.loads(data))
        except (ValueError, RecursionError):
            return
        if isinstance(whole, dict):
            messages = whole.pop("messages", None)
            yield whole
            for message in messages if isinstance(messages, list) else []:
                if isinstance(message, dict):
                    yield message
        return
    for line in data.split(b"\n"):
        if not line.strip():
            continue
        try:
            record = scrub(json.loads(line))
        except (ValueError, RecursionError):
            continue
        if isinstance(record, dict):
            yield record


def fold(records: Iterable[dict[str, Any]]) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """(metadata, messages in order) after replaying the upsert log."""
    metadata: dict[str, Any] = {}
    messages: dict[str, dict[str, Any]] = {}
    for record in records:
        target = record.get("$rewindTo")
        if isinstance(target, str):
            ids = list(messages)
            cut = ids.index(target) if target in messages else 0
            for message_id in ids[cut:]:
                del messages[message_id]
            continue
        if isinstance(record.get("id"), str) and "type" in record:
            messages[record["id"]] = record  # the last full copy of a message wins
            continue
        patch: dict[str, Any] = record["$set"] if isinstance(record.get("$set"), dict) else record
        metadata.update({k: v for k, v in patch.items() if k != "messages"})
        context = patch.get("messages") if "$set" in record else None
        for message in context if isinstance(context, list) else []:
            # `/compress` (0.61) is recorded only as the model's new context: the summary it
            # starts with is the compaction, once, by its own id.
            if (
                isinstance(message, dict)
                and isinstance(message.get("id"), str)
                and message.get("type") == "user"
                and message["id"] not in messages
                and _COMPRESSION_MARK in _text(message.get("content"))
            ):
                messages[message["id"]] = message
    return metadata, list(messages.values())


def _text(content: Any) -> str:
    """The text of a Gemini `PartListUnion` (a string, a part, or a list of parts)."""
    if isinstance(content, str):
        return content
    if isinstance(content, dict):
        if isinstance(content.get("text"), str):
            return str(content["text"])
        response = content.get("functionResponse")
        if isinstance(response, dict):
            body = response.get("response")
            if isinstance(body, dict):
                for key in ("error", "output", "content"):
                    if isinstance(body.get(key), str):
                        return str(body[key])
                return json.dumps(body)[:4000]
        return ""
    if isinstance(content, list):
        return "\n".join(t for t in (_text(part) for part in content) if t)
    return ""


# Messages Gemini CLI writes as `user` but no person typed: the nudge after an empty reply, its
# loop-detection feedback, the session context it sets up, and a compression's summary.
_INJECTED_PREFIXES = ("Please continue.", "System: ", "<session_context>")
_COMPRESSION_MARK = "<state_snapshot>"
_UNTRUSTED_OPEN = "<untrusted_context>"
_UNTRUSTED_CLOSE = "</untrusted_context>"
_SHELL_FIELD = re.compile(
    r"^(Command|Directory|Output|Error|Exit Code|Signal|Background PIDs|Process Group PGID):[ ]?",
    re.MULTILINE,
)


def _has_function_response(content: Any) -> bool:
    parts = content if isinstance(content, list) else [content]
    return any(isinstance(part, dict) and "functionResponse" in part for part in parts)


def is_injected(text: str) -> bool:
    """A `user` message Gemini CLI wrote itself (not a prompt, and no rule of the user's)."""
    stripped = text.lstrip()
    return stripped.startswith(_INJECTED_PREFIXES) or _COMPRESSION_MARK in text


def unwrap(text: str) -> str:
    """Tool output without the `<untrusted_context>` wrapper Gemini CLI puts around it."""
    stripped = text.strip()
    if stripped.startswith(_UNTRUSTED_OPEN) and stripped.endswith(_UNTRUSTED_CLOSE):
        stripped = stripped[len(_UNTRUSTED_OPEN) : -len(_UNTRUSTED_CLOSE)].strip("\n")
        return stripped.replace("&lt;/untrusted_context&gt;", _UNTRUSTED_CLOSE)
    return text


def shell_report(text: str) -> dict[str, Any] | None:
    """run_shell_command's report (`Output: ...`, `Error: ...`, `Exit Code: N`, ...) as fields;
    None for other text. Older releases put `Command:` first; today's start at `Output:`."""
    body = unwrap(text)
    marks = list(_SHELL_FIELD.finditer(body))
    if not marks or not any(m.group(1) == "Output" for m in marks):
        return None
    fields: dict[str, str] = {}
    for index, mark in enumerate(marks):
        end = marks[index + 1].start() if index + 1 < len(marks) else len(body)
        fields[mark.group(1)] = body[mark.end() : end].rstrip("\n")
    report: dict[str, Any] = {"output": fields.get("Output", "")}
    if fields.get("Command"):
        report["command"] = fields["Command"]
    error = fields.get("Error", "")
    if error and error != "(none)":
        report["error"] = error
    code = fields.get("Exit Code", "").strip()
    if code.lstrip("-").isdigit():
        report["exitCode"] = int(code)
    return report


def _args(call: dict[str, Any]) -> dict[str, Any]:
    args = call.get("args")
    return dict(args) if isinstance(args, dict) else {}


def _int(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else 0


def _usage(tokens: Any) -> Usage:
    """Engram's four kinds from Gemini's counts; a response recorded without them counts zero
    (it is still one of the session's responses)."""
    if not isinstance(tokens, dict):
        return Usage()
    cached = _int(tokens.get("cached"))
    return Usage(
        input_tokens=max(0, _int(tokens.get("input")) - cached) + _int(tokens.get("tool")),
        output_tokens=_int(tokens.get("output")) + _int(tokens.get("thoughts")),
        cache_creation_tokens=0,
        cache_read_tokens=cached,
    )


def entries(
    metadata: dict[str, Any], messages: list[dict[str, Any]], *, parent: str | None = None
) -> Iterator[Entry]:
    """The chat as the entries the transcript ingest handles (a subagent's as sidechain)."""
    sid = parent or metadata.get("sessionId")
    if not isinstance(sid, str) or not sid:
        return
    sidechain = parent is not None or metadata.get("kind") == "subagent"
    cwd = None
    directories = metadata.get("directories")
    if isinstance(directories, list) and directories and isinstance(directories[0], str):
        cwd = directories[0]
    for message in messages:
        stamp = message.get("timestamp")
        ts = clock.parse_iso(stamp) if isinstance(stamp, str) and stamp else 0.0
        kind = message.get("type")
        uuid = f"gemini:{sid}:{message['id']}"
        if kind == "user":
            content = message.get("content")
            if _has_function_response(content):
                # Since 0.44 the tool results sent back to the model are recorded as a `user`
                # message of functionResponse parts: the calls' own records carry them.
                yield Entry("user_other", uuid, sid, ts, sidechain=sidechain, cwd=cwd)
                continue
            text = _text(content)
            if _COMPRESSION_MARK in text:
                # /compress (or an automatic compression): the summary that replaces the history.
                yield Entry("compact_boundary", uuid, sid, ts, sidechain=sidechain, cwd=cwd)
                yield Entry(
                    "compact_summary", uuid, sid, ts, sidechain=sidechain, cwd=cwd, text=text
                )
                continue
            # What the person typed, when Gemini CLI expanded it (@file, a custom command).
            shown = message.get("displayContent")
            typed = without_hook_context(_text(shown) if shown else text)
            entry = Entry("user_other", uuid, sid, ts, sidechain=sidechain, cwd=cwd, text=typed)
            if (
                not sidechain
                and typed.strip()
                and not typed.lstrip().startswith(("/", "!"))
                and not is_injected(typed)
            ):
                entry.kind = "prompt"
            yield entry
        elif kind in ("info", "warning", "error"):
            # Not conversation, but the session was still going: its time counts.
            yield Entry("user_other", uuid, sid, ts, sidechain=sidechain, cwd=cwd)
        elif kind == "gemini":
            calls = [c for c in message.get("toolCalls") or [] if isinstance(c, dict)]
            entry = Entry(
                "assistant",
                uuid,
                sid,
                ts,
                sidechain=sidechain,
                cwd=cwd,
                message_key=uuid,
                model=message.get("model") if isinstance(message.get("model"), str) else None,
                usage=_usage(message.get("tokens")),
                text=_text(message.get("content")),
                tool_uses=[
                    ToolUse(
                        id=str(call.get("id")),
                        name=canonical_tool(AGENT, str(call.get("name") or "unknown")),
                        input=_args(call),
                    )
                    for call in calls
                    if call.get("id")
                ],
            )
            yield entry
            results = []
            for call in calls:
                status = str(call.get("status") or "")
                if not call.get("id") or status in ("", "scheduled", "executing", "validating"):
                    continue  # still running when the file was written
                text = unwrap(without_hook_context(_text(call.get("result"))))
                report = shell_report(text) if call.get("name") == "run_shell_command" else None
                if report is not None:
                    # The command's own output and exit code, not the report around them.
                    text = report.get("error") or report["output"]
                results.append(
                    ToolResult(
                        tool_use_id=str(call["id"]),
                        is_error=status == "error",
                        text=text,
                        structured=report,
                        # Declined or stopped by the user ("cancelled"): unsuccessful, as a
                        # rejected Claude Code call is, but no error to learn or to leave open.
                        interrupted=status == "cancelled",
                    )
                )
            if results:
                yield Entry(
                    "tool_results",
                    None,
                    sid,
                    ts,
                    sidechain=sidechain,
                    cwd=cwd,
                    tool_results=results,
                )


def ingest_chat_file(
    store: Store, path: str | os.PathLike[str], *, settings: Any = None, flush: bool = True
) -> IngestStats:
    """Ingest a Gemini chat file (read whole: it is an upsert log); unchanged files are skipped."""
    file_path = Path(path).expanduser().resolve()
    key = str(file_path)
    stats = IngestStats(path=key)
    data = file_path.read_bytes()
    head = _read_head(file_path)
    row = store.query_one("SELECT offset, head FROM agent_ingest_offsets WHERE path = ?", (key,))
    if row is not None and int(row["offset"]) == len(data) and str(row["head"]) == head:
        if flush:  # nothing new, but the turn still open ends here (AfterAgent, SessionEnd)
            from memory_core.agents.transcripts import flush_session

            for open_turn in store.query(
                "SELECT DISTINCT session_id FROM agent_turns WHERE recorded = 0 AND session_id IN "
                "(SELECT session_id FROM agent_ingest_offsets WHERE path = ?)",
                (key,),
            ):
                stats.turns += len(flush_session(store, str(open_turn["session_id"])))
        return stats
    if settings is None:
        from memory_core import config

        settings = config.load(store.root)
    metadata, messages = fold(_records(data, file_path.suffix))
    parent = None
    if file_path.parent.name != "chats" and file_path.parent.parent.name == "chats":
        parent = file_path.parent.name  # chats/<parent session id>/<subagent>.jsonl
    run = _Run(store, file_path, stats, settings, agent=AGENT)
    stats.bytes = len(data)
    with store.transaction() as db:
        for entry in entries(metadata, messages, parent=parent):
            stats.lines += 1
            run.handle(db, entry)
        run.end_of_input(db, flush=flush)
        run.write_figures(db)
        db.execute(
            "INSERT INTO agent_ingest_offsets (path, agent, session_id, offset, size, head, lines, updated_at) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT(path) DO UPDATE SET offset = excluded.offset, "
            "size = excluded.size, head = excluded.head, lines = excluded.lines, "
            "updated_at = excluded.updated_at, session_id = COALESCE(excluded.session_id, session_id)",
            (
                key,
                AGENT,
                stats.sessions[0] if stats.sessions else None,
                len(data),
                len(data),
                head,
                stats.lines,
                clock.now(),
            ),
        )
    with store.transaction():
        run.run_effects()
    return stats
