"""Digests: what a session taught, written down before compaction can lose it.

A digest is YAML in two documents: a frontmatter (`schema_version: "1.0"`, session_id,
timestamp, duration_minutes, agent_context, compact_trigger) and the sections
`user_corrections`, `patterns_observed`, `axioms_learned` and `context_snapshot`. It is written
at PreCompact (manual or auto), at Stop and SessionEnd, and on a timer while a session is active
(PreCompact is skipped on some paths), to `exports/digests/<session>-<timestamp>.yaml`, and kept
in the `digests` table. `read_digest` accepts every schema version it knows and refuses others.

Extraction is from what the hooks and the ingest stored (already redacted): the human prompts
for corrections ("actually…", "no, …", "should be X not Y", "don't…") and axioms ("always…",
"never…", "must…"); the tool ledger for repeated failures and hot files.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from memory_core import clock
from memory_core.agents import lessons
from memory_core.errors import EngramError, UsageError
from memory_core.filenames import safe_filename
from memory_core.redact import redact_obj
from memory_core.store import Store, write_private_file

SCHEMA_VERSION = "1.0"
KNOWN_SCHEMA_VERSIONS = ("1.0",)
DIGEST_DIR = ("exports", "digests")
SECTIONS = ("user_corrections", "patterns_observed", "axioms_learned", "context_snapshot")

_CORRECTION_START = re.compile(
    r"^\s*(?:actually\b|no\b|nope\b|wrong\b|not quite\b|not that\b|that'?s (?:not|wrong)\b|"
    r"that is (?:not|wrong)\b|stop\b|wait\b|undo\b|revert\b|i said\b|i meant\b|"
    r"you (?:forgot|missed|broke|didn'?t|did not|shouldn'?t)\b|don'?t\b|do not\b|please don'?t\b)",
    re.IGNORECASE,
)
_CORRECTION_ANYWHERE = re.compile(
    r"\bshould (?:be|use|have been|call|return)\b[^.!?\n]*\bnot\b|\binstead of\b|\bnot\b[^.!?\n]{1,60}\bbut\b|"
    r"\brather than\b|\bthat'?s not (?:what|how|right)\b",
    re.IGNORECASE,
)
_AXIOM = re.compile(
    r"\b(?:always|never|must(?:n'?t| not)?|make sure(?: to)?|from now on|every time|"
    r"(?:do not|don'?t) ever)\b",
    re.IGNORECASE,
)
# "No, always use pnpm": the rule is what follows the correction word.
_LEADING_CORRECTION = re.compile(
    r"^(?:no|nope|actually|wait|ok(?:ay)?|and|also|but)\b[,:]?\s*", re.IGNORECASE
)
_SENTENCE = re.compile(r"[^.!?\n]+[.!?]?")
MAX_ITEMS = 20
MAX_ITEM_CHARS = 400


def _short(text: str, limit: int = MAX_ITEM_CHARS) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def is_correction(prompt: str) -> bool:
    return bool(_CORRECTION_START.match(prompt) or _CORRECTION_ANYWHERE.search(prompt))


def axioms_in(prompt: str) -> list[str]:
    """The sentences of a prompt that state a rule (always / never / must ...)."""
    found = []
    for match in _SENTENCE.finditer(prompt):
        sentence = _LEADING_CORRECTION.sub("", match.group(0).strip(" ,;:-"))
        if sentence and _AXIOM.search(sentence):
            found.append(_short(sentence))
    return found


def _normal_prompt(text: str) -> str:
    return re.sub(r"[^a-z0-9 ]+", "", " ".join(text.lower().split()))


@dataclass(frozen=True)
class Digest:
    path: Path
    frontmatter: dict[str, Any]
    sections: dict[str, Any]


def extract(store: Store, session_id: str) -> dict[str, Any]:
    """The four sections for one session, from what the hooks and the ingest stored."""
    prompts = store.query(
        "SELECT ts, text FROM agent_prompts WHERE session_id = ? ORDER BY ts", (session_id,)
    )
    corrections: list[dict[str, Any]] = []
    axioms: list[dict[str, Any]] = []
    seen_axioms: set[str] = set()
    for row in prompts:
        text = str(row["text"])
        if is_correction(text):
            corrections.append({"text": _short(text), "timestamp": clock.iso(row["ts"])})
        for sentence in axioms_in(text):
            key = sentence.lower()
            if key not in seen_axioms:
                seen_axioms.add(key)
                axioms.append({"text": sentence, "timestamp": clock.iso(row["ts"])})

    patterns: list[dict[str, Any]] = []
    failures = store.query(
        "SELECT tool, command, error, COUNT(*) AS n, MIN(ts) AS first, MAX(ts) AS last "
        "FROM agent_tool_uses WHERE session_id = ? AND ok = 0 "
        "GROUP BY tool, COALESCE(command, path, substr(error, 1, 200)) HAVING n >= 2 ORDER BY n DESC, last DESC",
        (session_id,),
    )
    for row in failures:
        what = f"`{row['command']}`" if row["command"] else str(row["tool"])
        first_line = lessons.error_line(row["error"])  # the error that matters, not "Exit code 2"
        patterns.append(
            {
                "kind": "repeated_failure",
                "description": _short(f"{what} failed {row['n']} times: {first_line}"),
                "count": int(row["n"]),
            }
        )
    repeated = Counter(_normal_prompt(str(row["text"])) for row in prompts)
    originals = {_normal_prompt(str(row["text"])): str(row["text"]) for row in prompts}
    for key, count in repeated.most_common():
        if count < 2 or not key:
            break
        patterns.append(
            {
                "kind": "repeated_request",
                "description": _short(f"asked {count} times: {originals[key]}"),
                "count": count,
            }
        )
    hot = store.query(
        "SELECT path, COUNT(*) AS n FROM agent_tool_uses WHERE session_id = ? AND ok = 1 AND path IS NOT NULL "
        "AND tool IN ('Edit', 'Write', 'MultiEdit', 'NotebookEdit') GROUP BY path HAVING n >= 3 ORDER BY n DESC",
        (session_id,),
    )
    for row in hot:
        patterns.append(
            {
                "kind": "hot_file",
                "description": f"{row['path']} edited {row['n']} times",
                "count": int(row["n"]),
            }
        )

    return {
        "user_corrections": corrections[-MAX_ITEMS:],
        "patterns_observed": patterns[:MAX_ITEMS],
        "axioms_learned": axioms[-MAX_ITEMS:],
        "context_snapshot": snapshot(store, session_id),
    }


def snapshot(store: Store, session_id: str) -> dict[str, Any]:
    session = store.query_one("SELECT * FROM agent_sessions WHERE session_id = ?", (session_id,))
    files = store.query(
        "SELECT path, COUNT(*) AS n FROM agent_tool_uses WHERE session_id = ? AND ok = 1 AND path IS NOT NULL "
        "AND tool IN ('Edit', 'Write', 'MultiEdit', 'NotebookEdit') GROUP BY path ORDER BY MIN(ts)",
        (session_id,),
    )
    commands = store.query(
        "SELECT command, ok FROM agent_tool_uses WHERE session_id = ? AND command IS NOT NULL "
        "ORDER BY ts DESC LIMIT 20",
        (session_id,),
    )
    tools = store.query(
        "SELECT tool, COUNT(*) AS n, SUM(ok = 0) AS failed FROM agent_tool_uses WHERE session_id = ? "
        "AND ok IS NOT NULL GROUP BY tool ORDER BY n DESC",
        (session_id,),
    )
    usage = {
        bool(row["sidechain"]): row
        for row in store.query(
            "SELECT sidechain, COALESCE(SUM(input_tokens), 0) AS i, COALESCE(SUM(output_tokens), 0) AS o, "
            "COALESCE(SUM(cache_creation_tokens), 0) AS cc, COALESCE(SUM(cache_read_tokens), 0) AS cr "
            "FROM agent_messages WHERE session_id = ? GROUP BY sidechain",
            (session_id,),
        )
    }
    turns = store.query_one("SELECT COUNT(*) FROM agent_turns WHERE session_id = ?", (session_id,))
    return {
        "agent": session["agent"] if session else None,
        "model": session["model"] if session else None,
        "branch": session["git_branch"] if session else None,
        "cwd": session["cwd"] if session else None,
        "turns": int(turns[0]) if turns else 0,
        "files_modified": [str(row["path"]) for row in files],
        "commands": [
            {"command": str(row["command"]), "ok": None if row["ok"] is None else bool(row["ok"])}
            for row in reversed(commands)
        ],
        "tool_calls": {str(row["tool"]): int(row["n"]) for row in tools},
        "failed_tool_calls": sum(int(row["failed"] or 0) for row in tools),
        # The main conversation's tokens (what `engram session metrics` counts), and subagents' apart.
        "tokens": _tokens(usage.get(False)),
        "subagent_tokens": _tokens(usage.get(True)),
    }


def _tokens(row: Any) -> dict[str, int]:
    return {
        "input": int(row["i"]) if row else 0,
        "output": int(row["o"]) if row else 0,
        "cache_creation": int(row["cc"]) if row else 0,
        "cache_read": int(row["cr"]) if row else 0,
    }


def _dump(documents: list[dict[str, Any]]) -> str:
    import yaml  # type: ignore[import-untyped]

    dumper = getattr(yaml, "CSafeDumper", yaml.SafeDumper)
    text: str = yaml.dump_all(
        documents,
        Dumper=dumper,
        sort_keys=False,
        allow_unicode=True,
        explicit_start=True,
        width=100,
    )
    return text


def write_digest(
    store: Store, session_id: str, *, trigger: str, now: float | None = None
) -> Digest:
    """Write the session's digest now; returns where it went and what it says."""
    ts = clock.now() if now is None else now
    session = store.query_one("SELECT * FROM agent_sessions WHERE session_id = ?", (session_id,))
    started = float(session["started_at"]) if session else ts
    last = max(float(session["last_seen"]) if session else ts, started)
    frontmatter = {
        "schema_version": SCHEMA_VERSION,
        "session_id": session_id,
        "timestamp": clock.iso(ts),
        "duration_minutes": round(max(0.0, last - started) / 60, 1),
        "agent_context": {
            "agent": session["agent"] if session else None,
            "model": session["model"] if session else None,
            "cwd": session["cwd"] if session else None,
            "compactions": int(session["compactions"]) if session else 0,
        },
        "compact_trigger": trigger,
    }
    # Redacted as data, before dumping: a redaction run over the YAML text could break its syntax.
    # The frontmatter holds ids and times only, which some detectors would take for tokens.
    sections = redact_obj(extract(store, session_id))
    text = _dump([frontmatter, sections])
    folder = store.dir.joinpath(*DIGEST_DIR)
    stamp = clock.iso(ts).replace("-", "").replace(":", "")
    safe_session = safe_filename(session_id)
    path = folder / f"{safe_session}-{stamp}.yaml"
    counter = 1
    while path.exists():
        counter += 1
        path = folder / f"{safe_session}-{stamp}-{counter}.yaml"
    write_private_file(path, text)
    with store.transaction() as db:
        db.execute(
            "INSERT INTO digests (session_id, ts, trigger, schema_version, path, content) VALUES (?, ?, ?, ?, ?, ?)",
            (session_id, ts, trigger, SCHEMA_VERSION, str(path.relative_to(store.dir)), text),
        )
        db.execute(
            "UPDATE agent_sessions SET last_digest_at = ? WHERE session_id = ?", (ts, session_id)
        )
    return Digest(path=path, frontmatter=frontmatter, sections=sections)


def parse_digest(text: str, *, where: str = "digest") -> Digest:
    """Read a digest's YAML; refuses a schema version this engram does not know."""
    import yaml

    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    try:
        documents = [doc for doc in yaml.load_all(text, Loader=loader) if doc is not None]
    except yaml.YAMLError as exc:
        raise UsageError(f"{where} is not valid YAML: {exc}") from None
    if not documents or not isinstance(documents[0], dict):
        raise UsageError(f"{where} has no frontmatter")
    frontmatter = documents[0]
    version = frontmatter.get("schema_version")
    if version is None:
        raise UsageError(f"{where} has no schema_version")
    if str(version) not in KNOWN_SCHEMA_VERSIONS:
        raise EngramError(
            f"{where} has schema_version {json.dumps(str(version))}, which this engram cannot read "
            f"(it knows {', '.join(KNOWN_SCHEMA_VERSIONS)})",
            hint="upgrade engram to read digests written by a newer version",
        )
    sections = documents[1] if len(documents) > 1 and isinstance(documents[1], dict) else {}
    for name in SECTIONS:
        sections.setdefault(name, {} if name == "context_snapshot" else [])
    return Digest(path=Path(where), frontmatter=frontmatter, sections=sections)


def read_digest(path: str | Path) -> Digest:
    file_path = Path(path)
    try:
        text = file_path.read_text(encoding="utf-8")
    except OSError as exc:
        raise UsageError(f"cannot read digest {file_path}: {exc.strerror or exc}") from None
    digest = parse_digest(text, where=str(file_path))
    return Digest(path=file_path, frontmatter=digest.frontmatter, sections=digest.sections)


def due(
    store: Store, session_id: str, interval_minutes: float, *, now: float | None = None
) -> bool:
    """True when the session has gone `interval_minutes` without a digest (the timer path)."""
    if interval_minutes <= 0:
        return False
    ts = clock.now() if now is None else now
    row = store.query_one(
        "SELECT started_at, last_digest_at FROM agent_sessions WHERE session_id = ? AND ended_at IS NULL",
        (session_id,),
    )
    if row is None:
        return False
    since = row["last_digest_at"] if row["last_digest_at"] is not None else row["started_at"]
    return ts - float(since) >= interval_minutes * 60
