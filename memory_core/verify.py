"""Verify before telling: is what a memory, gotcha, decision or correction says about the code
still true of the workspace as it is now?

Everything engram tells an agent (the SessionStart context, the gotchas for a task, MCP search
results) and that cites code goes through here first, with the same check `engram drift` makes
(`drift.check_citation`: a hash of the cited lines, blind to indentation and blank lines, and a
search for the same lines elsewhere in the file). A citation is then:

- `unchanged`: the cited lines are as they were. Told as it is.
- `moved`: the same lines are elsewhere in the file. Told as it is: what it says still holds.
- `changed`: the cited lines are different now (or the file is shorter than the citation).
- `gone`: the cited file no longer exists.

`changed` and `gone` are told with a plain mark, `[needs checking: ...]`, saying what changed,
never as current (docs/agents.md, "What is told, what is checked before telling, what is left
out", says why a mark and not silence).

Text without a line citation (a correction "don't touch src/auth.py", a decision naming a file)
is checked for the paths it names: a named file that engram saw in this workspace (or a path
with a folder in it) and that no longer exists makes the text `gone`.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from pathlib import Path

from memory_core.lazy_pattern import compile_later
from memory_core.store import Store
from memory_core.values import Value

TYPE_CHECKING = False  # `typing` costs a cold hook a third of Python's start
if TYPE_CHECKING:
    from typing import Any

    from memory_core import drift

TOLD_AS_IS = ("unchanged", "moved")


class Check(Value):
    """What became of a citation: `state` is unchanged, moved, changed or gone; `lines`
    (1-based) where the cited code is now (moved) or was."""

    __slots__ = ("lines", "path", "reason", "state")
    FIELDS = ("state", "reason", "path", "lines")

    def __init__(
        self,
        state: str,
        reason: str = "",
        path: str | None = None,
        lines: tuple[int, int] | None = None,
    ) -> None:
        self.state = state
        self.reason = reason
        self.path = path
        self.lines = lines

    @property
    def current(self) -> bool:
        return self.state in TOLD_AS_IS


UNCHANGED = Check("unchanged")


def _where(path: str, start: int, end: int) -> str:
    return f"{path}:{start}" if start == end else f"{path}:{start}-{end}"


def check(root: Path, citation: drift.Citation, *, text: str | None = None) -> Check:
    """The state of one citation, by `engram drift`'s own check."""
    from memory_core import drift  # on the hook path: only when something cites code

    item = drift.check_citation(root, citation, text=text)
    where = _where(citation.path, citation.start, citation.end)
    if item is None:
        return Check("unchanged", "", citation.path, (citation.start, citation.end))
    if item.severity == "low":
        return Check("moved", f"the code it cites moved to {item.lines}", citation.path, item.lines)
    if item.severity == "critical":
        return Check("gone", f"it cites {citation.path}, which no longer exists", citation.path)
    return Check(
        "changed",
        f"the code it cites ({where}) changed since it was recorded",
        citation.path,
        (citation.start, citation.end),
    )


def mark(text: str, found: Check | None) -> str:
    """`text` as it is told: with a `[needs checking: ...]` mark unless it is still current."""
    if found is None or found.current:
        return text
    return f"{text} [needs checking: {found.reason}]"


# -- memories ------------------------------------------------------------------------------------


def memory_checks(store: Store, memory_ids: Iterable[str]) -> dict[str, Check]:
    """{memory id: Check} for the memories among `memory_ids` that cite code."""
    ids = list(dict.fromkeys(memory_ids))
    if not ids or "memories" not in store.tables():
        return {}
    rows = store.query(
        f"SELECT id, content, file, line, end_line, anchor FROM memories "
        f"WHERE file IS NOT NULL AND id IN ({', '.join('?' for _ in ids)})",
        tuple(ids),
    )
    found: dict[str, Check] = {}
    for row in rows:
        path = str(row["file"])
        if row["anchor"] is None or row["line"] is None:
            # A file cited without lines: it is current while the file is there.
            if not (store.root / path).exists():
                found[row["id"]] = Check("gone", f"it cites {path}, which no longer exists", path)
            else:
                found[row["id"]] = Check("unchanged", "", path)
            continue
        from memory_core import drift

        citation = drift.Citation(
            owner=str(row["id"]),
            path=path,
            start=int(row["line"]),
            end=int(row["end_line"] or row["line"]),
            anchor=str(row["anchor"]),
        )
        found[row["id"]] = check(store.root, citation)
    return found


# -- gotchas -------------------------------------------------------------------------------------


def gotcha_checks(store: Store, gotcha_ids: Iterable[str]) -> dict[str, Check]:
    """{gotcha id: Check} for gotchas anchored on code: current while any anchor is current."""
    wanted = set(gotcha_ids)
    if not wanted:
        return {}
    from memory_core import drift

    by_gotcha: dict[str, list[Check]] = {}
    for citation in drift.gotcha_anchor_citations(store):
        if citation.owner in wanted:
            by_gotcha.setdefault(citation.owner, []).append(check(store.root, citation))
    result = {}
    for gotcha_id, checks in by_gotcha.items():
        current = [c for c in checks if c.current]
        result[gotcha_id] = current[0] if current else checks[0]
    return result


# -- paths named in text -------------------------------------------------------------------------

# A file path in prose: `src/auth.py`, `auth.py`, `./config/db.yml` (an extension is required).
_PATH = compile_later(
    r"(?<![\w/.@-])(?:\./)?((?:[\w.-]+/)*[\w-][\w.-]*\.[A-Za-z][A-Za-z0-9]{0,7})\b(?![/(])"
)
# Words with a dot that are not files: version numbers, abbreviations, hosts, packages.
_NOT_A_FILE = compile_later(
    r"^(?:e\.g|i\.e|etc|vs|v?\d[\w.]*|\w+\.(?:com|org|net|io|dev|ai|app)|"
    r"(?:node|next|nuxt|vue|react|express|three|d3|chart|deno|bun|socket\.io)\.js)$",
    re.IGNORECASE,
)


def named_paths(text: str) -> list[str]:
    """The file paths `text` names, in order, each once."""
    found = []
    for match in _PATH.finditer(text):
        path = match.group(1).rstrip(".")
        if "." in path and not _NOT_A_FILE.match(path):
            found.append(path)
    return list(dict.fromkeys(found))


def _seen_paths(store: Store, name: str) -> list[str]:
    """Workspace paths engram recorded as changed that are `name` or end with `/name`: the
    files sessions changed (a small table) and the evolution record of `name` itself (indexed),
    so that a SessionStart never scans every tool call."""
    rows = store.query(
        "SELECT DISTINCT path FROM session_files WHERE outside = 0 AND (path = ? OR path LIKE ?) "
        "UNION SELECT path FROM (SELECT path FROM file_changes WHERE path = ? LIMIT 1) LIMIT 20",
        (name, f"%/{name}", name),
    )
    return [str(row["path"]) for row in rows if row["path"]]


def text_check(store: Store, text: str) -> Check | None:
    """`gone` when `text` names a file of this workspace that no longer exists, else None.

    A name counts when it has a folder in it or a session changed the file in this workspace
    (so "the SQLite docs say ... in foo.c" about another project is not checked here).
    """
    root = store.root
    for path in named_paths(text):
        if (root / path).exists():
            continue
        seen = _seen_paths(store, path)  # named_paths leaves out a leading "./"
        if seen and any((root / other).exists() for other in seen):
            continue  # the name is of a file that is still there under its folder
        if seen or "/" in path:
            return Check("gone", f"{path} does not exist now", path)
    return None


# -- results handed to an agent ------------------------------------------------------------------


def annotate(store: Store, results: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Search results with what became of the code they cite: `citation` ("unchanged",
    "moved", "changed", "gone") on those that cite code, and `needs_checking` (plain words)
    on those whose cited code changed or is gone."""
    memories = [str(r["id"]) for r in results if r.get("kind", "memory") == "memory"]
    gotchas = [str(r["id"]) for r in results if r.get("kind") == "gotcha"]
    checks = {**memory_checks(store, memories), **gotcha_checks(store, gotchas)}
    for result in results:
        found = checks.get(str(result.get("id")))
        if found is None and result.get("kind", "memory") == "memory":
            found = text_check(store, str(result.get("content") or ""))
        if found is None:
            continue
        result["citation"] = found.state
        if not found.current:
            result["needs_checking"] = found.reason
    return results
