"""Tags as stored, shared by memories and by deletion selectors (`--topic`).

Its own module so that `memory` and `lifecycle` (which imports it to select by topic) do not
import each other.
"""

from __future__ import annotations

from collections.abc import Iterable

from memory_core.redact import redact


def normalize_tags(tags: Iterable[str]) -> list[str]:
    """Tags as stored: trimmed, lower case, spaces as dashes, no duplicates, order kept."""
    if isinstance(tags, str):
        tags = [tags]
    out: list[str] = []
    for tag in tags:
        clean = "-".join(redact(str(tag)).strip().lower().split())
        if clean and clean not in out:
            out.append(clean)
    return out
