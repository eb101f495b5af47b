"""The memory an agent gets at session start (and `engram session resume --context`).

Sections, in the order they are ranked: where the previous session stopped when the evidence
says it stopped in the middle of its work (never "crashed" without evidence), the last session's summary and open items, long-term memories still hot or warm
(decisions, preferences, learnings), user corrections, rules the user stated
(axioms), dead ends (commands that failed repeatedly, and what worked after), gotchas for the
files touched recently, and those files. The text is cut to a token budget (setting
`agents.context_token_budget`, about 4 characters a token) and never over the agent's cap on
injected text (10,000 characters for Claude Code): each section first gets its best few items,
then the rest fill what room is left.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

from memory_core import clock, verify
from memory_core.agents.digest import axioms_in, is_correction, own_words
from memory_core.store import Store

AGENT_OUTPUT_CAP_CHARS = 10_000
CHARS_PER_TOKEN = 4
RECENT_SESSIONS = 5
FIRST_PASS_ITEMS = 3
HEADER = "# engram: what earlier sessions in this project learned"


@dataclass
class Section:
    title: str
    items: list[str] = field(default_factory=list)


def _recent_sessions(store: Store, exclude: str | None) -> list[str]:
    rows = store.query(
        "SELECT session_id FROM agent_sessions WHERE session_id != ? ORDER BY last_seen DESC LIMIT ?",
        (exclude or "", RECENT_SESSIONS),
    )
    return [str(row["session_id"]) for row in rows]


def _in(ids: list[str]) -> str:
    return ", ".join("?" for _ in ids) or "NULL"


# What a session's last recorded event says about where it stopped, in plain words.
_LAST_EVENT_WORDS = {
    "tool_call": "a tool call whose result was never recorded",
    "tool_result": "a tool result the agent had not answered yet",
    "prompt": "a request that had no reply yet",
    "interrupt": "an interruption by the user",
}


def crash_note(store: Store, current: str | None, now: float) -> Section:
    """Where the previous session stopped, when the evidence says it stopped mid-work.

    A session that ended (SessionEnd) or whose transcript ends with the agent's reply finished;
    nothing is said about it. Otherwise engram says what it knows, without calling it a crash:
    no end was recorded, and the last thing that happened was a tool call, a request, ...
    """
    section = Section("Where the previous session stopped")
    row = store.query_one(
        "SELECT * FROM agent_sessions WHERE session_id != ? ORDER BY last_seen DESC LIMIT 1",
        (current or "",),
    )
    if row is None:
        return section
    reason = row["end_reason"]
    if row["ended_at"] is not None and reason not in (None, "stopped"):
        return section  # a recorded end (SessionEnd), or a transcript ending on a reply
    last_event = row["last_event"]
    if last_event is None:
        # Hooks only: a turn opened by UserPromptSubmit that no Stop closed is the evidence.
        open_turn = store.query_one(
            "SELECT 1 FROM agent_turns WHERE session_id = ? AND recorded = 0 LIMIT 1",
            (row["session_id"],),
        )
        last_event = "prompt" if open_turn is not None else None
    if last_event not in _LAST_EVENT_WORDS:
        return section
    if now - float(row["last_seen"]) < 30 * 60 and row["ended_at"] is None:
        return section  # still going, maybe: another window
    request = store.query_one(
        "SELECT text FROM agent_prompts WHERE session_id = ? ORDER BY ts DESC LIMIT 1",
        (row["session_id"],),
    )
    files = store.query(
        "SELECT DISTINCT path FROM agent_tool_uses WHERE session_id = ? AND path IS NOT NULL "
        "AND tool IN ('Edit', 'Write', 'MultiEdit', 'NotebookEdit') ORDER BY ts DESC LIMIT 8",
        (row["session_id"],),
    )
    when = clock.ago(float(row["last_seen"]), now_ts=now)
    text = (
        f"Session {row['session_id']} recorded no end; the last thing it did ({when}) was "
        f"{_LAST_EVENT_WORDS[last_event]}"
    )
    if request is not None and request["text"]:
        text += f', while working on: "{_one_line(str(request["text"]), 160)}"'
    section.items.append(text + ".")
    if files:
        section.items.append(
            "Files it was changing: " + ", ".join(str(r["path"]) for r in files) + "."
        )
    section.items.append(
        "Check those files before continuing; `engram checkpoint list` shows restore points."
    )
    return section


def last_summary(store: Store, current: str | None) -> Section:
    """Where the work ended in the last session: its last requests, what it did, what is open.

    Built from facts (the agent's own summary first when it wrote one), not from the first
    sentences the agent wrote.
    """
    from memory_core import sessions

    section = Section("Last session")
    recent = sessions.list_sessions(store, limit=RECENT_SESSIONS + 1)
    for session in recent:
        sid = str(session.get("id"))
        if not session.get("turns"):
            continue  # a session just starting: nothing to tell of it
        if sid == current:
            # The same session going on after a compaction, a /clear or a resume: what it did
            # so far is what the agent lost.
            section.title = "This session so far"
        summary = session.get("summary") or {}
        label = session.get("label") or sid
        state = "ended" if session.get("status") == "closed" else "last active"
        section.items.append(
            f"{label} ({session.get('agent')}, {session.get('turns')} turns, {state} "
            f"{session.get('ended_at') or session.get('last_activity_at')})"
        )
        if summary.get("overview"):
            section.items.append(f"Summary: {_one_line(str(summary['overview']), 400)}")
        turns = sessions.history(store, sid, last=3)
        asks = [  # in the user's own words: not the agent output or log they pasted
            f"\u201c{_one_line(own_words(str(t['user_message'])), 160)}\u201d"
            for t in turns
            if t.get("user_message") and own_words(str(t["user_message"]))
        ]
        if asks:
            section.items.append("Last requests: " + "; ".join(asks))
        ending = next(
            (t["assistant_response"] for t in reversed(turns) if t.get("assistant_response")), None
        )
        if ending:
            section.items.append(f"Where it ended: {_one_line(_last_words(str(ending)), 300)}")
        done = _what_was_done(store, sid)
        if done:
            section.items.append("Done: " + done)
        open_items = list(summary.get("open_items") or [])
        still_failing = list(
            dict.fromkeys(i["command"] for i in sessions.open_failures(store, sid))
        )
        open_items += [
            f"`{_one_line(command, 120)}` failed the last time it ran"
            + _failure_words(store, sid, str(command))
            for command in still_failing[-3:]
        ]
        section.items.extend(f"Open: {_one_line(str(item), 300)}" for item in open_items)
        section.items.extend(
            verify.mark(
                f"Decided: {_one_line(str(item), 300)}", verify.text_check(store, str(item))
            )
            for item in summary.get("decisions") or []
        )
        break
    return section


def _failure_words(store: Store, session_id: str, command: str) -> str:
    """How the command's last run failed, in plain words: " (blocked by a hook)", ..."""
    from memory_core.agents import failures, lessons

    row = store.query_one(
        "SELECT error FROM agent_tool_uses WHERE session_id = ? AND command = ? AND ok = 0 "
        "ORDER BY ts DESC LIMIT 1",
        (session_id, command),
    )
    if row is None or not row["error"]:
        return ""
    failure = failures.classify(is_error=True, text=str(row["error"]))
    how = failures.describe(failure) if failure is not None else "error"
    error = lessons.error_line(str(row["error"]))
    from memory_core.gotchas.normalize import shorten

    return (
        f" ({how}: {shorten(error, 160)})"
        if error and failure and failure.kind != "blocked"
        else f" ({how})"
    )


def _last_words(text: str) -> str:
    """The end of an answer (its conclusion), from the last paragraph that says something."""
    paragraphs = [p.strip() for p in text.split("\n\n") if p.strip()]
    return paragraphs[-1] if paragraphs else text


def _what_was_done(store: Store, session_id: str) -> str:
    from memory_core import sessions

    numbers = sessions.metrics(store, session_id)
    # The net effect: files it edited and put back as they were are not "changed".
    files = sessions.net_files_changed(store, session_id)
    parts = []
    if files:
        shown = ", ".join(files[:5]) + (f" and {len(files) - 5} more" if len(files) > 5 else "")
        parts.append(f"changed {len(files)} file{'s' if len(files) != 1 else ''} ({shown})")
    if numbers["commands"]:
        parts.append(f"ran {numbers['commands']} commands ({numbers['commands_failed']} failed)")
    return "; ".join(parts)


def now_section(store: Store, current: str | None) -> Section:
    """The git branch and the task in progress: the latest request of the last session that
    its transcript shows no answer to."""
    from memory_core import git

    section = Section("Now")
    head = git.read_head(store.root)
    if head is not None:
        section.items.append(f"Git branch: {head.branch or 'detached HEAD'}")
    row = store.query_one(
        "SELECT session_id, last_event FROM agent_sessions WHERE session_id != ? "
        "ORDER BY last_seen DESC LIMIT 1",
        (current or "",),
    )
    request = None
    if row is not None and row["last_event"] in ("prompt", "tool_call", "tool_result", "interrupt"):
        request = store.query_one(
            "SELECT text FROM agent_prompts WHERE session_id = ? ORDER BY ts DESC LIMIT 1",
            (row["session_id"],),
        )
    elif row is not None and row["last_event"] is None:
        # Hooks only: the turn a UserPromptSubmit opened and no Stop closed.
        request = store.query_one(
            "SELECT user_message AS text FROM agent_turns WHERE session_id = ? AND recorded = 0 "
            "ORDER BY started_at DESC LIMIT 1",
            (row["session_id"],),
        )
    if request is not None and request["text"]:
        section.items.append(
            f"Task in progress (not finished): \u201c{_one_line(str(request['text']), 300)}\u201d"
        )
    return section


def corrections_and_rules(store: Store, sessions: list[str]) -> tuple[Section, Section]:
    corrections = Section("User corrections (do not repeat these mistakes)")
    rules = Section("Rules the user stated")
    if not sessions:
        return corrections, rules
    rows = store.query(
        "SELECT text, ts = (SELECT MIN(ts) FROM agent_prompts f WHERE f.session_id = p.session_id) "
        f"AS first FROM agent_prompts p WHERE session_id IN ({_in(sessions)}) "
        "ORDER BY ts DESC LIMIT 400",
        tuple(sessions),
    )
    seen_rules: set[str] = set()
    seen_corrections: set[str] = set()
    texts = [str(row["text"]) for row in rows]
    firsts = {str(row["text"]) for row in rows if row["first"]}
    # What the user taught outlives the per-prompt ledger (pruned by age): the long-term
    # memories the ingest made of it (tag user-rule) are read too.
    try:
        from memory_core import memory

        texts += [
            str(entry["content"])
            for entry in memory.list_memories(store, tag="user-rule", limit=200)
        ]
    except Exception:
        pass
    decided = {_comparable(str(entry["content"])) for entry in _decision_memories(store)}
    for text in texts:
        if is_correction(text, first=text in firsts):
            line = _one_line(own_words(text), 300)
            if line.lower() not in seen_corrections:
                seen_corrections.add(line.lower())
                corrections.items.append(verify.mark(line, verify.text_check(store, line)))
        for sentence in axioms_in(text):
            if any(_comparable(sentence) in decision for decision in decided):
                continue  # told once, as the decision it is part of
            if sentence.lower() not in seen_rules:
                seen_rules.add(sentence.lower())
                rules.items.append(verify.mark(sentence, verify.text_check(store, sentence)))
    return corrections, rules


def _decision_memories(store: Store) -> list[dict[str, object]]:
    try:
        from memory_core import memory

        return list(memory.list_memories(store, tag="user-decision", limit=200))
    except Exception:
        return []


def _comparable(text: str) -> str:
    return " ".join(text.lower().strip(" .!").split())


def dead_ends(store: Store, sessions: list[str]) -> Section:
    """Commands that failed repeatedly: the error that mattered, and the step that fixed it."""
    from memory_core.agents import lessons
    from memory_core.gotchas.normalize import shorten

    section = Section("Dead ends (failed repeatedly; do not retry blindly)")
    if not sessions:
        return section
    failures = store.query(
        f"SELECT session_id, command, COUNT(*) AS n, MAX(ts) AS last, "
        f"(SELECT error FROM agent_tool_uses e WHERE e.session_id = t.session_id AND e.command = t.command "
        f" AND e.ok = 0 ORDER BY ts DESC LIMIT 1) AS error "
        f"FROM agent_tool_uses t WHERE session_id IN ({_in(sessions)}) AND ok = 0 AND command IS NOT NULL "
        f"GROUP BY session_id, command HAVING n >= 2 ORDER BY last DESC LIMIT 20",
        tuple(sessions),
    )
    for row in failures:
        command = str(row["command"])
        error = lessons.error_line(str(row["error"] or ""))
        text = f"`{_one_line(command, 160)}` failed {row['n']} times"
        if error:
            text += f" ({shorten(error, 200)})"  # cut in the middle: what it names stays whole
        sid, last = str(row["session_id"]), float(row["last"])
        fix = lessons.fix_after(store, sid, command, last)
        instead = None if fix else lessons.worked_instead(store, sid, command, last)
        if fix:
            text += f"; what fixed it: {_one_line(fix, 160)}"
        elif instead:
            text += f"; what worked instead: {_one_line(instead, 160)}"
        else:
            text += "; no fix was recorded after it"
        section.items.append(text)
    return section


def recent_files(store: Store, sessions: list[str], limit: int = 12) -> list[str]:
    if not sessions:
        return []
    rows = store.query(
        f"SELECT path, MAX(ts) AS last FROM agent_tool_uses WHERE session_id IN ({_in(sessions)}) "
        f"AND ok = 1 AND path IS NOT NULL AND tool IN ('Edit', 'Write', 'MultiEdit', 'NotebookEdit') "
        f"GROUP BY path ORDER BY last DESC LIMIT ?",
        (*sessions, limit),
    )
    back: set[str] = set()
    from memory_core.sessions.net import reverted_files

    for sid in sessions:
        back.update(reverted_files(store, sid))
    return [str(row["path"]) for row in rows if str(row["path"]) not in back]


def gotchas_for(store: Store, files: list[str], task: str) -> Section:
    section = Section("Gotchas for the files touched recently")
    if not (files or task):
        return section
    from memory_core.gotchas.context import context_for_task

    text = context_for_task(store, task or "continue the work on " + " ".join(files), files, 5)
    for line in text.splitlines():
        stripped = line.strip()
        if stripped and not stripped.startswith("#"):
            section.items.append(stripped.removeprefix("- ").removeprefix("* "))
    return section


# Memory types an agent should be reminded of at the start of a session.
_REMEMBERED_TYPES = ("decision", "preference", "learning", "finding", "project")


def remembered(store: Store, now: float, limit: int = 8) -> Section:
    """Long-term memories still hot or warm: pinned first, then by current priority."""
    section = Section("Decisions and knowledge to keep")
    from memory_core.memory import current_priority, newest_rows

    # The 200 newest entries, each read for what the choice needs (its priority rounded as
    # `memory.to_dict` gives it, so ties fall as they did on the listed entries).
    kept: list[dict[str, Any]] = []
    for row in newest_rows(store, 200):
        if (
            row["type"] not in _REMEMBERED_TYPES
            or "user-rule" in (row["tags"].split() if row["tags"] else [])  # told as rules
            or row["status"] == "resolved"
        ):
            continue
        priority = round(current_priority(row, now), 4)
        if row["pinned"] or priority >= 0.3:
            kept.append(
                {
                    "id": row["id"],
                    "type": row["type"],
                    "content": row["content"],
                    "pinned": bool(row["pinned"]),
                    "priority": priority,
                }
            )
    kept.sort(key=lambda e: (not e["pinned"], -e["priority"]))
    kept = kept[:limit]
    # Checked against the code as it is now: a memory whose cited code changed or is gone is
    # told last, marked, never as current.
    checks = verify.memory_checks(store, [str(entry["id"]) for entry in kept])
    told: list[tuple[bool, str]] = []
    for entry in kept:
        content = _one_line(str(entry["content"]), 300)
        kind = str(entry["type"])
        if content.lower().startswith(kind + ":"):
            content = content[len(kind) + 1 :].strip()  # "decision: Decision: ..." reads badly
        found = checks.get(str(entry["id"])) or verify.text_check(store, content)
        told.append(
            (
                found is not None and not found.current,
                verify.mark(f"{kind}: {content}", found),
            )
        )
    section.items.extend(text for _stale, text in sorted(told, key=lambda pair: pair[0]))
    return section


def _one_line(text: str, limit: int) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def budget_chars(token_budget: int) -> int:
    return max(0, min(token_budget * CHARS_PER_TOKEN, AGENT_OUTPUT_CAP_CHARS - 200))


def fit(sections: list[Section], limit: int) -> str:
    """Render sections within `limit` characters: each section's best items first, then the rest."""
    chosen: list[list[str]] = [[] for _ in sections]
    used = len(HEADER) + 1

    def cost(index: int, item: str) -> int:
        title = 0 if chosen[index] else len(sections[index].title) + 5
        return title + len(item) + 3

    # No line is told twice, whichever sections it came from.
    seen: set[str] = set()
    for section in sections:
        unique = []
        for item in section.items:
            key = " ".join(item.lower().split())
            if key not in seen:
                seen.add(key)
                unique.append(item)
        section.items = unique
    for passes in (FIRST_PASS_ITEMS, None):
        for index, section in enumerate(sections):
            for item in section.items[len(chosen[index]) : passes]:
                needed = cost(index, item)
                if used + needed > limit:
                    break
                chosen[index].append(item)
                used += needed
    if not any(chosen):
        return ""
    out = [HEADER]
    for section, items in zip(sections, chosen, strict=True):
        if items:
            out.append(f"\n## {section.title}")
            out.extend(f"- {item}" for item in items)
    return "\n".join(out)[:limit]


def session_start_text(
    store: Store,
    *,
    current_session: str | None = None,
    token_budget: int = 2000,
    task: str = "",
    now: float | None = None,
) -> str:
    """The context text for a new (or resumed, cleared, compacted) session; "" when nothing is known."""
    ts = time.time() if now is None else now
    sessions = _recent_sessions(store, None)
    corrections, rules = corrections_and_rules(store, sessions)
    files = recent_files(store, sessions)
    touched = Section("Files touched recently", [", ".join(files)] if files else [])
    sections = [
        now_section(store, current_session),
        crash_note(store, current_session, ts),
        last_summary(store, current_session),
        remembered(store, ts),
        corrections,
        rules,
        dead_ends(store, sessions),
        gotchas_for(store, files, task),
        touched,
    ]
    return fit(sections, budget_chars(token_budget))
