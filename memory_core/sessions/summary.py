"""A session as Markdown: the agent's summary (else one built from the recorded facts), the
metrics table, the files touched, checkpoints and rollbacks, and the commands that failed."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from memory_core import clock
from memory_core.sessions.metrics import metrics
from memory_core.sessions.net import reverted_files
from memory_core.sessions.reading import (
    decisions_of,
    failed_commands,
    files_modified,
    files_outside,
    get,
    open_failures,
)
from memory_core.store import Store


def summary_markdown(
    store: Store,
    session_id: str,
    *,
    now: float | None = None,
    session: dict[str, Any] | None = None,
    numbers: dict[str, Any] | None = None,
) -> str:
    """The session as Markdown: summary (the agent's, else built from facts), metrics, files.

    `session` and `numbers`: the session's `get` and `metrics` at `now`, when the caller has
    just read them (the session's note shows them beside this)."""
    if session is None:
        session = get(store, session_id, now=now)
    sid = session["id"]
    if numbers is None:
        numbers = metrics(store, sid, now=now)
    touched = files_modified(store, sid)
    put_back = set(reverted_files(store, sid))
    files = [path for path in touched if path not in put_back]  # what differs in the end
    outside = files_outside(store, sid)
    failed = failed_commands(store, sid)
    still_open = open_failures(store, sid)
    summary = session["summary"]
    lines = [f"# Session {session['label']}", ""]
    lines.append(
        f"{session['agent']} session, {session['status']}, started {session['started_at']}, "
        f"{_plural(numbers['turns'], 'turn')} over {_duration(numbers['duration_seconds'])}."
    )
    lines.append("")

    overview = summary["overview"] or _overview_from_facts(store, session, numbers, files)
    lines += ["## Overview", "", overview, ""]
    if session["rolling_summary"] and not summary["overview"]:
        lines += ["## Rolling summary", "", session["rolling_summary"], ""]

    sections = [
        # The agent's recorded decisions and those the user stated in the session.
        ("Decisions", decisions_of(store, sid, list(summary["decisions"]))),
        ("Outcomes", summary["outcomes"] or _outcomes_from_facts(numbers, files, failed)),
        (
            "Open items",
            summary["open_items"] or _grouped_failures(still_open)[-5:],
        ),
    ]
    for title, items in sections:
        lines += [f"## {title}", ""]
        lines += [f"- {item}" for item in items] if items else ["- none recorded"]
        lines.append("")
    if summary["tags"]:
        lines += ["## Tags", "", ", ".join(summary["tags"]), ""]

    rate = numbers["success_rate"]
    lines += [
        "## Metrics",
        "",
        "| metric | value |",
        "|---|---|",
        f"| duration | {_duration(numbers['duration_seconds'])} |",
        f"| turns | {numbers['turns']} |",
        *_token_rows(numbers),
        f"| average tokens per turn | {numbers['avg_tokens_per_turn']} |",
        f"| files modified | {numbers['files_modified']}"
        + (f" ({numbers['files_touched']} touched, {len(put_back)} put back)" if put_back else "")
        + " |",
        f"| commands (failed) | {numbers['commands']} ({numbers['commands_failed']}) |",
        f"| tool calls ok / failed | {numbers['tool_calls_succeeded']} / {numbers['tool_calls_failed']} |",
        f"| success rate | {'n/a' if rate is None else f'{rate:.0%}'} |",
        "",
        "## Files touched",
        "",
    ]
    lines += (
        [
            f"- `{path}`" + (" (changed, then put back)" if path in put_back else "")
            for path in touched
        ]
        if touched
        else ["- none"]
    )
    lines.append("")
    if outside:
        lines += ["## Files changed outside the project", ""]
        lines += [f"- `{path}`" for path in outside]
        lines.append("")
    lines += _checkpoint_lines(store, sid)
    if failed:
        lines += ["## Commands that failed", ""]
        lines += [f"- {line}" for line in _grouped_failures(failed)]
        lines.append("")
    return "\n".join(lines)


def _grouped_failures(failed: Sequence[Mapping[str, Any]]) -> list[str]:
    """One line per failing command, however often it failed: a retried command is one item."""
    groups: dict[str, list[Mapping[str, Any]]] = {}
    for item in failed:
        groups.setdefault(item["command"], []).append(item)
    lines = []
    for command, runs in groups.items():
        times = f" {len(runs)} times" if len(runs) > 1 else ""
        code = runs[-1]["exit_code"]
        how = f"last exit {code}" if code is not None else "no exit code reported"
        lines.append(f"`{command}` failed{times} ({how}, {runs[-1]['at']})")
    return lines


def _duration(seconds: float) -> str:
    minutes = int(seconds // 60)
    if minutes < 1:
        return f"{int(seconds)} s"
    if minutes < 60:
        return f"{minutes} min"
    return f"{minutes // 60} h {minutes % 60:02d} min"


def _token_rows(numbers: Mapping[str, Any]) -> list[str]:
    """Metrics table rows for tokens: all four kinds, main chain and subagents, for agents."""
    tokens = numbers.get("tokens")
    if not tokens:
        return [f"| tokens (in / out) | {numbers['input_tokens']} / {numbers['output_tokens']} |"]
    rows = []
    for part, label in (("all", "tokens"), ("main", "main chain"), ("subagents", "subagents")):
        t = tokens[part]
        if part == "subagents" and not t["messages"]:
            continue
        rows.append(
            f"| {label} (in / out / cache write / cache read) | {t['input_tokens']} / "
            f"{t['output_tokens']} / {t['cache_creation_tokens']} / {t['cache_read_tokens']} "
            f"({_plural(t['messages'], 'message')}) |"
        )
    return rows


def _plural(count: int, word: str) -> str:
    return f"{count} {word}{'' if count == 1 else 's'}"


def _checkpoint_lines(store: Store, session_id: str) -> list[str]:
    """Checkpoints made and rollbacks done during the session."""
    made = store.query(
        "SELECT id, name, reason, created_at FROM checkpoints WHERE session_id = ? ORDER BY created_at",
        (session_id,),
    )
    rollbacks = store.query(
        "SELECT summary, ok, ts FROM session_tool_calls WHERE session_id = ? AND tool = 'rollback' "
        "ORDER BY ts",
        (session_id,),
    )
    if not made and not rollbacks:
        return []
    lines = ["## Checkpoints and rollbacks", ""]
    for row in made:
        label = f" ({row['name']})" if row["name"] else ""
        lines.append(
            f"- checkpoint `{row['id']}`{label}, {row['reason']}, {clock.iso(row['created_at'])}"
        )
    for row in rollbacks:
        state = "" if row["ok"] else " (incomplete)"
        lines.append(f"- rollback: {row['summary']}{state}, {clock.iso(row['ts'])}")
    lines.append("")
    return lines


def _overview_from_facts(
    store: Store, session: dict[str, Any], numbers: dict[str, Any], files: list[str]
) -> str:
    first = store.query_one(
        "SELECT user_message FROM session_turns WHERE session_id = ? AND user_message IS NOT NULL "
        "AND user_message != '' ORDER BY seq LIMIT 1",
        (session["id"],),
    )
    parts = []
    if first is not None:
        ask = " ".join(first[0].split())
        parts.append(f"Started with: \u201c{ask[:200]}{'…' if len(ask) > 200 else ''}\u201d.")
    if files:
        shown = ", ".join(f"`{p}`" for p in files[:5])
        more = f" and {len(files) - 5} more" if len(files) > 5 else ""
        parts.append(f"Changed {_plural(len(files), 'file')}: {shown}{more}.")
    if numbers["commands"]:
        parts.append(
            f"Ran {_plural(numbers['commands'], 'command')} ({numbers['commands_failed']} failed)."
        )
    made = store.query_one(
        "SELECT COUNT(*) FROM checkpoints WHERE session_id = ? AND reason != 'pre-rollback'",
        (session["id"],),
    )
    rolled = store.query_one(
        "SELECT COUNT(*) FROM session_tool_calls WHERE session_id = ? AND tool = 'rollback'",
        (session["id"],),
    )
    if made is not None and made[0]:
        parts.append(f"Made {_plural(int(made[0]), 'checkpoint')}.")
    if rolled is not None and rolled[0]:
        parts.append(f"Rolled back {_plural(int(rolled[0]), 'time')}.")
    if not parts:
        parts.append("Nothing recorded yet beyond the start of the session.")
    return " ".join(parts)


def _outcomes_from_facts(
    numbers: dict[str, Any], files: list[str], failed: list[dict[str, Any]]
) -> list[str]:
    outcomes = []
    if files:
        outcomes.append(f"{_plural(len(files), 'file')} modified")
    if numbers["tool_calls"]:
        outcomes.append(
            f"{numbers['tool_calls_succeeded']} of {numbers['tool_calls']} tool calls succeeded"
        )
    if numbers["commands"]:
        outcomes.append(
            f"{numbers['commands'] - len(failed)} of {numbers['commands']} commands succeeded"
        )
    return outcomes
