"""The saved-session document (the beans `SessionExport` shape): built from the records,
packed for storage, parsed and validated, older versions upgraded, newer ones refused."""

from __future__ import annotations

import json
import re
from typing import Any

from memory_core import clock
from memory_core.errors import EngramError, NotFoundError, UsageError
from memory_core.sessions.metrics import metrics
from memory_core.sessions.model import _find_row, _json, restore_archived
from memory_core.store import Store

# The format of a saved session document. Version 1 was engram's first layout (no tool calls,
# files or commands; tokens nested); it is upgraded on load. A document with a larger version
# was written by a newer engram and is refused.
FORMAT_VERSION = 2

# The arrays of a document are built by SQLite's JSON functions: for a 1,000-turn session that
# is several times faster than building Python dicts and encoding them (the save budget is 20 ms).
_DOCUMENT_ARRAYS = {
    "turns": (
        "SELECT '[' || COALESCE(group_concat(item, ','), '') || ']' FROM (SELECT json_object("
        "'seq', seq, 'user_message', user_message, 'assistant_response', assistant_response, "
        "'tool_calls', json(tool_calls), 'input_tokens', input_tokens, 'output_tokens', output_tokens, "
        "'started_at', started_at, 'ended_at', ended_at) AS item "
        "FROM session_turns WHERE session_id = ? ORDER BY seq)"
    ),
    "toolCalls": (
        "SELECT '[' || COALESCE(group_concat(item, ','), '') || ']' FROM (SELECT json_object("
        "'tool', tool, 'ok', ok, 'summary', summary, 'ts', ts) AS item "
        "FROM session_tool_calls WHERE session_id = ? ORDER BY id)"
    ),
    "files": (
        "SELECT '[' || COALESCE(group_concat(item, ','), '') || ']' FROM (SELECT json_object("
        "'path', path, 'first_ts', first_ts, 'last_ts', last_ts, 'changes', changes, "
        "'outside', outside) AS item "
        "FROM session_files WHERE session_id = ? ORDER BY path)"
    ),
    "commands": (
        "SELECT '[' || COALESCE(group_concat(item, ','), '') || ']' FROM (SELECT json_object("
        "'command', command, 'exit_code', exit_code, 'ts', ts, 'failed', failed) AS item "
        "FROM session_commands WHERE session_id = ? ORDER BY id)"
    ),
}


def document_json(store: Store, session_id: str, *, now: float | None = None) -> str:
    """The whole session as a saved-session document (the beans `SessionExport` shape), as JSON."""
    ts = clock.now() if now is None else now
    row = _find_row(store, session_id)
    if row is None:
        raise NotFoundError(f"no session {session_id!r}", hint="see `engram session list`")
    sid = row["id"]
    if restore_archived(store, sid):
        row = _find_row(store, sid) or row
    session = {key: row[key] for key in row.keys()}  # noqa: SIM118 - sqlite3.Row has no items()
    for key in ("decisions", "outcomes", "open_items", "tags", "search_footprint", "data"):
        session[key] = json.loads(session[key])
    head = {
        "version": FORMAT_VERSION,
        "savedAt": clock.iso(ts),
        "workspace": {"root": str(store.root), "name": store.root.name},
        "session": session,
        # Exported for readers; an import recomputes them from the records.
        "metrics": metrics(store, sid, now=ts),
    }
    parts = [_json(head)[:-1]]
    for key, sql in _DOCUMENT_ARRAYS.items():
        found = store.query_one(sql, (sid,))
        parts.append(f',"{key}":{found[0] if found is not None else "[]"}')
    return "".join(parts) + "}"


def document(store: Store, session_id: str, *, now: float | None = None) -> dict[str, Any]:
    """The whole session as a saved-session document (the beans `SessionExport` shape)."""
    parsed: dict[str, Any] = json.loads(document_json(store, session_id, now=now))
    return parsed


_ZSTD_MAGIC = b"\x28\xb5\x2f\xfd"


def _pack(text: str) -> bytes:
    import zstandard  # lazily: the hook path never saves

    return bytes(zstandard.ZstdCompressor(level=1).compress(text.encode("utf-8")))


def unpack_document(payload: bytes) -> Any:
    """A stored document: zstd-compressed JSON (plain JSON from earlier saves is read too)."""
    data = bytes(payload)
    if data.startswith(_ZSTD_MAGIC):
        import zstandard

        data = zstandard.ZstdDecompressor().decompress(data, max_output_size=1 << 30)
    return json.loads(data)


# The beans SessionExport versions this engram reads (seed 004 writes "1.0").
BEANS_MAJOR_VERSION = 1


def is_beans_document(raw: Any) -> bool:
    """A beans `SessionExport` (`session.sessionId`), as opposed to engram's own (`session.id`)."""
    session = raw.get("session") if isinstance(raw, dict) else None
    return isinstance(session, dict) and "sessionId" in session and "id" not in session


def parse_document(raw: Any) -> dict[str, Any]:
    """Validate a saved-session document, upgrading older versions; refuse newer ones."""
    if not isinstance(raw, dict) or not isinstance(raw.get("session"), dict):
        raise UsageError(
            "not a saved engram session: expected an object with `session` and `turns`"
        )
    if is_beans_document(raw):
        # beans versions its file format on its own ("1.0"): the beans reader is version 1's.
        found = raw.get("version", "1.0")
        if _major_version(found) != BEANS_MAJOR_VERSION:
            raise EngramError(
                f"this beans session file has version {found}; this engram reads beans session"
                f" files of version {BEANS_MAJOR_VERSION}.x",
                hint="export it again from a beans that writes version 1.x; nothing was changed",
            )
        raw = {**raw, "version": 1}
    version = _major_version(raw.get("version", 1))
    _refuse_newer(version)
    doc = dict(raw)
    if version == 1:
        doc = _upgrade_v1(doc)
    session = doc["session"]
    if not isinstance(session.get("id"), str) or not session["id"]:
        raise UsageError(
            "saved session has no `session.id` (engram's format) nor `session.sessionId`"
            " (a beans SessionExport)"
        )
    turns = doc.get("turns") or []
    if not isinstance(turns, list) or not all(isinstance(t, dict) for t in turns):
        raise UsageError("saved session `turns` must be a list of objects")
    doc["version"] = FORMAT_VERSION
    return doc


def _refuse_newer(version: int) -> None:
    if version > FORMAT_VERSION or version < 1:
        raise EngramError(
            f"this saved session has format version {version}, written by a newer engram "
            f"(this one reads versions 1 to {FORMAT_VERSION})"
            if version > FORMAT_VERSION
            else f"this saved session has format version {version}; this engram reads versions"
            f" 1 to {FORMAT_VERSION}",
            hint="upgrade engram to load it; nothing was changed"
            if version > FORMAT_VERSION
            else "nothing was changed",
        )


def _major_version(value: Any) -> int:
    try:
        if isinstance(value, str):
            return int(value.split(".", 1)[0])
        if isinstance(value, bool):
            raise ValueError
        return int(value)
    except (TypeError, ValueError):
        raise UsageError(f"saved session has an unreadable version {value!r}") from None


# A JSON string (kept as it is) or a placeholder outside one (`[...]`, `{...}`, `…` too).
_STRING_OR_PLACEHOLDER = re.compile(
    r'"(?:[^"\\]|\\.)*"|\[\s*(?:\.\.\.|…)\s*\]|\{\s*(?:\.\.\.|…)\s*\}', re.DOTALL
)


def fill_placeholders(text: str) -> tuple[str, int]:
    """Read `[...]` and `{...}` outside strings as empty: the shorthand of documentation examples
    (the beans SessionExport example abbreviates its tool calls so). Returns the text and how
    many placeholders it had."""
    count = 0

    def one(match: re.Match[str]) -> str:
        nonlocal count
        token = match.group(0)
        if token.startswith('"'):
            return token
        count += 1
        return "[]" if token.startswith("[") else "{}"

    return _STRING_OR_PLACEHOLDER.sub(one, text), count


def _ts(value: Any) -> float | None:
    if value is None or isinstance(value, int | float):
        return value
    return clock.parse_iso(str(value))


def _upgrade_v1(doc: dict[str, Any]) -> dict[str, Any]:
    """Version 1: camelCase session fields, ISO times, tokens as {input, output}, `content` turns.

    The beans `SessionExport` ("1.0": `sessionId`, `turnNumber`, tokens as {prompt, completion},
    `modifiedFiles`) is read here too. Its `turnCount`, `totalTokens` and `commandsExecuted` are
    recomputed from what the document holds, never trusted (the beans example itself says 5
    turns and 12,500 tokens over one turn of 700).
    """
    old = doc["session"]
    summary = old.get("summary") or {}
    # A field the document lacks stays None here: `restore_document` gives every missing field
    # its default, for this version and the current one alike.
    session = {
        "id": old.get("id") or old.get("sessionId"),
        "name": old.get("name"),
        "agent": old.get("agent"),
        "session_type": old.get("type"),
        "status": old.get("status"),
        "started_at": _ts(old.get("startedAt") or old.get("started_at")),
        "last_activity_at": _ts(old.get("lastActivityAt")),
        "ended_at": _ts(old.get("endedAt")),
        "overview": summary.get("overview"),
        "decisions": summary.get("decisions"),
        "outcomes": summary.get("outcomes"),
        "open_items": summary.get("openItems"),
        "tags": summary.get("tags"),
    }
    turns = []
    raw_turns = doc.get("turns") or []
    if not isinstance(raw_turns, list) or not all(isinstance(t, dict) for t in raw_turns):
        raise UsageError("saved session `turns` must be a list of objects")
    if all(isinstance(t.get("turnNumber"), int) for t in raw_turns):
        raw_turns = sorted(raw_turns, key=lambda t: int(t["turnNumber"]))
    # Listed in order; `restore_document` numbers them 1, 2, ... as it writes them.
    for turn in raw_turns:
        tokens = turn.get("tokens") or {}
        turns.append(
            {
                "user_message": turn.get("user") or turn.get("userMessage"),
                "assistant_response": turn.get("assistant") or turn.get("assistantResponse"),
                "tool_calls": turn.get("toolCalls"),
                "input_tokens": int(tokens.get("input", tokens.get("prompt", 0))),
                "output_tokens": int(tokens.get("output", tokens.get("completion", 0))),
                "started_at": _ts(turn.get("timestamp")),
                "ended_at": _ts(turn.get("timestamp")),
            }
        )
    upgraded = {**doc, "session": session, "turns": turns}
    modified = old.get("modifiedFiles")
    if not doc.get("files") and isinstance(modified, list):
        upgraded["files"] = [{"path": str(path)} for path in modified if path]
    return upgraded
