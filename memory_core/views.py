"""Command results as Markdown for people: what every editor shows (VS Code renders it in its
Markdown preview, Neovim in its results window, Emacs in a buffer), so that each front end
shows the same words and none shows raw JSON or internal row ids.

Each function takes the JSON result of the matching server command (`engram.checkpoint.list`,
`engram.session.history`, ...) and returns Markdown. Times are given with how long ago.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from memory_core import clock


def _ago(iso: Any) -> str:
    if not isinstance(iso, str) or not iso:
        return ""
    try:
        ts = clock.parse_iso(iso)
    except ValueError:
        return iso
    return f"{iso[:16].replace('T', ' ')} ({clock.ago(ts)})"


def _one_line(text: Any, limit: int = 200) -> str:
    value = " ".join(str(text or "").split())
    return value if len(value) <= limit else value[: limit - 1] + "…"


def _doc(title: str, body: Iterable[str], empty: str) -> str:
    lines = list(body)
    return "\n".join([f"# {title}", "", *(lines or [empty]), ""])


def checkpoints(items: Sequence[Mapping[str, Any]]) -> str:
    reasons = {
        "manual": "made by hand",
        "pre-rollback": "made before a rollback, to undo it",
        "burst": "automatic: many files changed at once",
        "turns": "automatic: every few agent turns",
    }
    body = []
    for item in items:
        reason = reasons.get(str(item.get("reason")), str(item.get("reason") or ""))
        description = f" — {item['description']}" if item.get("description") else ""
        files = item.get("files")
        count = (
            f"{files} {'file' if files == 1 else 'files'}" if isinstance(files, int) else "? files"
        )
        body.append(
            f"- **{item.get('label') or item.get('id')}** `{item.get('id')}`: "
            f"{_ago(item.get('created_at'))}, {count}, {reason}{description}"
        )
    return _doc("Checkpoints", body, "No checkpoints yet.")


def sessions(items: Sequence[Mapping[str, Any]]) -> str:
    body = []
    for item in items:
        overview = (item.get("summary") or {}).get("overview") or item.get("rolling_summary")
        body.append(
            f"- **{item.get('label') or item.get('id')}** ({item.get('agent') or 'agent'}, "
            f"{item.get('status')}): started {_ago(item.get('started_at'))}, "
            f"{item.get('turns', 0)} turn(s)" + (f"\n  {_one_line(overview)}" if overview else "")
        )
    return _doc("Sessions", body, "No sessions recorded yet.")


def history(session_id: str, turns: Sequence[Mapping[str, Any]]) -> str:
    body = []
    for turn in turns:
        body += [f"## Turn {turn.get('seq')}, {_ago(turn.get('started_at'))}", ""]
        if turn.get("user_message"):
            body += [f"**You:** {_one_line(turn['user_message'], 600)}", ""]
        if turn.get("assistant_response"):
            body += [f"**Agent:** {_one_line(turn['assistant_response'], 600)}", ""]
        calls = turn.get("tool_calls") or []
        if calls:
            names = [
                str(c.get("tool") or c.get("name") or "tool") for c in calls if isinstance(c, dict)
            ]
            body += [f"Tools: {', '.join(names)}", ""]
    return _doc(f"History of session {session_id}", body, "No turns recorded yet.")


def resumed(loaded: Mapping[str, Any], opened: Sequence[str]) -> str:
    """A restored session: where it stood (overview, open items), what changed in the workspace
    since, the files reopened, then its turns."""
    session = loaded.get("session") or {}
    summary = session.get("summary") or {}
    turns = loaded.get("turns") or []
    count = int(session.get("turns") or 0)
    body = [
        f"{session.get('agent') or 'agent'} session, {session.get('status') or 'saved'}, "
        f"{count} {'turn' if count == 1 else 'turns'}, started {_ago(session.get('started_at'))}.",
        "",
    ]
    if summary.get("overview"):
        body += ["## Where it stood", "", _one_line(summary["overview"], 800), ""]
    for title, key in (("Decisions", "decisions"), ("Open items", "open_items")):
        items = summary.get(key) or []
        if items:
            body += [f"## {title}", "", *(f"- {_one_line(item, 300)}" for item in items), ""]
    changes = loaded.get("workspace_changes")
    if isinstance(changes, Mapping):
        lines = []
        if changes.get("branch"):
            branch = changes["branch"]
            lines.append(f"- branch switched from `{branch.get('then')}` to `{branch.get('now')}`")
        for key in ("added", "modified", "deleted"):
            paths = list(changes.get(key) or [])
            if paths:
                shown = ", ".join(f"`{p}`" for p in paths[:8])
                more = f" and {len(paths) - 8} more" if len(paths) > 8 else ""
                lines.append(f"- {key}: {shown}{more}")
        body += ["## Since the session", "", *(lines or ["- nothing changed in the workspace"]), ""]
    if opened:
        body += ["## Reopened", "", *(f"- `{rel}`" for rel in opened), ""]
    history_lines = history(str(session.get("id") or loaded.get("id") or ""), turns).splitlines()
    body += ["## Turns", "", *history_lines[2:]]
    label = session.get("label") or session.get("id") or loaded.get("id")
    return _doc(f"Session {label}", body, "")


def metrics(result: Mapping[str, Any]) -> str:
    rate = result.get("success_rate")
    rows = [
        ("Duration", f"{round(float(result.get('duration_seconds') or 0) / 60, 1)} min"),
        ("Turns", result.get("turns")),
        (
            "Tokens (in / out)",
            f"{result.get('input_tokens', 0)} / {result.get('output_tokens', 0)}",
        ),
        ("Average tokens per turn", result.get("avg_tokens_per_turn")),
        (
            "Files modified (touched)",
            f"{result.get('files_modified')} ({result.get('files_touched', result.get('files_modified'))})",
        ),
        ("Commands (failed)", f"{result.get('commands', 0)} ({result.get('commands_failed', 0)})"),
        (
            "Tool calls ok / failed",
            f"{result.get('tool_calls_succeeded', 0)} / {result.get('tool_calls_failed', 0)}",
        ),
        ("Success rate", "—" if rate is None else f"{round(float(rate) * 100)}%"),
    ]
    body = ["| metric | value |", "|---|---|", *(f"| {k} | {v} |" for k, v in rows)]
    return _doc(f"Metrics of session {result.get('id')}", body, "")


def gotchas(items: Sequence[Mapping[str, Any]]) -> str:
    """Grouped by file (their anchors, else their related files), most severe first."""
    order = {"critical": 0, "high": 1, "medium": 2, "low": 3}
    by_file: dict[str, list[Mapping[str, Any]]] = {}
    for item in items:
        files = (
            sorted(
                {
                    str(a["path"])
                    for a in item.get("anchors") or []
                    if isinstance(a, dict) and a.get("path")
                }
            )
            or list(item.get("related_files") or [])
            or ["Anywhere in the project"]
        )
        for name in files:
            by_file.setdefault(name, []).append(item)
    body = []
    for name in sorted(by_file, key=lambda n: (n == "Anywhere in the project", n)):
        body += [f"## {name}", ""]
        for item in sorted(by_file[name], key=lambda g: order.get(str(g.get("severity")), 9)):
            source = item.get("source") or {}
            seen = source.get("occurrences") or 0
            body.append(
                f"- **{item.get('title')}** `{item.get('id')}` ({item.get('severity')}, "
                f"{item.get('status')}{f', seen {seen} times' if seen else ''})"
            )
            if item.get("workaround"):
                body.append(f"  - Workaround: {_one_line(item['workaround'], 400)}")
        body.append("")
    return _doc("Gotchas", body, "No gotchas yet.")


def _found(item: Mapping[str, Any]) -> str:
    """One search hit: a memory by its text and type; a gotcha, session or digest by its title,
    with the first lines of what it holds (a gotcha's workaround, a summary's overview)."""
    kind = item.get("kind") or "memory"
    when = _ago(item.get("created_at"))
    if kind == "memory":
        what = item.get("type") or "memory"
        return f"- **{_one_line(item.get('content'), 400)}** ({what}, {when})"
    title = _one_line(item.get("label"), 200)
    details = [
        line.strip()
        for line in str(item.get("content") or "").splitlines()
        if line.strip() and line.strip() != title
    ]
    line = f"- **{title}** ({kind} `{item.get('id')}`, {when})"
    if details:
        line += f"\n  {_one_line(' · '.join(details[:2]), 300)}"
    return line


def memories(query: str, items: Sequence[Mapping[str, Any]]) -> str:
    body = [_found(item) for item in items]
    return _doc(f"Memory: {query}", body, f"Nothing remembered about “{query}”.")


def status(result: Mapping[str, Any]) -> str:
    counts = result.get("counts") or {}
    size = int(result.get("size_bytes") or 0)
    body = [
        f"- Workspace: `{result.get('root')}`",
        f"- Store: `{result.get('store')}` ({round(size / 1024)} KiB, schema "
        f"{result.get('schema_version')})",
        "",
        "| holds | count |",
        "|---|---|",
    ]
    for key, label in (
        ("gotchas", "Gotchas"),
        ("checkpoints", "Checkpoints"),
        ("sessions", "Sessions"),
        ("memories", "Memories"),
        ("snapshots", "Context snapshots"),
        ("file_changes", "Recorded file changes"),
    ):
        if key in counts:
            body.append(f"| {label} | {counts[key]} |")
    limits = result.get("limits") or {}
    if limits:
        body += ["", "## Limits", ""]
        if limits.get("session_quota_bytes"):
            body.append(
                f"- Session quota: {int(limits['session_quota_bytes']):,} bytes per session"
            )
        if limits.get("checkpoint_store_cap_bytes"):
            used = int(limits.get("checkpoints_bytes") or 0)
            cap = int(limits["checkpoint_store_cap_bytes"])
            body.append(f"- Checkpoint content: {used:,} of {cap:,} bytes")
        for rule in limits.get("retention") or []:
            if isinstance(rule, dict):
                kept = []
                if rule.get("max_rows"):
                    kept.append(f"at most {rule['max_rows']:,} rows")
                if rule.get("max_age_days"):
                    kept.append(f"{rule['max_age_days']:g} days")
                body.append(
                    f"- {rule.get('table')}: {rule.get('rows', 0):,} kept ({', '.join(kept) or 'no limit'})"
                )
    problems = result.get("settings_problems") or []
    if problems:
        body += ["", "## Settings problems", ""]
        body += [
            f"- {_one_line(p if isinstance(p, str) else p.get('message', p))}" for p in problems
        ]
    return _doc("engram status", body, "")
