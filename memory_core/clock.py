"""Time, in one place, so tests can inject it.

Everything in the store is timestamped in Unix seconds (float, UTC). Functions that depend on
the time take an optional `now`; when it is None they read `now()` here.
"""

from __future__ import annotations

import time
from datetime import UTC, datetime


def now() -> float:
    return time.time()


def iso(ts: float) -> str:
    """An ISO-8601 UTC timestamp with a trailing Z, as people and other tools expect."""
    return datetime.fromtimestamp(ts, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def parse_iso(text: str) -> float:
    """Parse an ISO-8601 date or timestamp (a trailing Z is UTC; a naive one is UTC too)."""
    value = text.strip()
    if value.endswith("Z"):
        value = value[:-1] + "+00:00"
    parsed = datetime.fromisoformat(value)
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=UTC)
    return parsed.timestamp()


def ago(ts: float, *, now_ts: float | None = None) -> str:
    """A short human duration since `ts`: '5 min ago', '3 h ago', '2 d ago'."""
    seconds = max(0.0, (now_ts if now_ts is not None else now()) - ts)
    if seconds < 60:
        return "just now"
    if seconds < 3600:
        return f"{int(seconds // 60)} min ago"
    if seconds < 86400:
        return f"{int(seconds // 3600)} h ago"
    return f"{int(seconds // 86400)} d ago"
