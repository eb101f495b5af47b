"""A session's net effect on the workspace: the files that differ at its end from its start.

A file the session edited and then put back (a later edit undoing the first, `git checkout --
file`, `git restore`, `git stash`, `git reset --hard` after its last edit) did not change: it
is "touched", not "changed". The evidence is the file evolution record of the session's own
edits (the content hash before its first edit and after its last one) and the commands it ran
successfully after its last edit of the file; a file without that evidence counts as changed.
"""

from __future__ import annotations

import shlex
import time
from pathlib import Path

from memory_core.lazy_pattern import compile_later
from memory_core.sessions.reading import _COMMAND_FAILED, files_modified
from memory_core.store import Store

# Commands that put files back as git has them: (pattern, whether it covers every file).
_CHECKOUT = compile_later(r"^git\s+(?:checkout|restore)\b(?P<args>.*)$")
_EVERYTHING = compile_later(
    r"^git\s+(?:reset\s+--hard\b|stash(?:\s+(?:push|save))?\s*$|stash\s+-u\b)"
)


def _reverted_paths(command: str) -> tuple[bool, set[str]]:
    """(every file, the named files) that a successful `command` puts back as git has them."""
    text = " ".join(command.split())
    if _EVERYTHING.match(text):
        return True, set()
    match = _CHECKOUT.match(text)
    if match is None or any(mark in text for mark in ("&&", "||", ";", "|")):
        return False, set()
    try:
        words = shlex.split(match.group("args"))
    except ValueError:
        return False, set()
    options = words[: words.index("--")] if "--" in words else words
    if text.startswith("git restore") and _only_the_index(options):
        return False, set()  # `git restore --staged`: unstages, the working tree keeps the edit
    if "--" in words:
        paths = words[words.index("--") + 1 :]
    elif text.startswith("git restore"):
        paths = [w for w in words if not w.startswith("-")]
    else:
        return False, set()  # `git checkout branch`: not a revert of files
    paths = [p.removeprefix("./") for p in paths if p not in ("HEAD",)]
    if "." in paths or "" in paths:
        return True, set()
    return False, set(paths)


def _only_the_index(options: list[str]) -> bool:
    """Whether `git restore` options name the index (`--staged`, `-S`) but not the working tree
    (`--worktree`, `-W`): git then leaves the files in the working tree as they are."""
    short = "".join(o[1:] for o in options if o.startswith("-") and not o.startswith("--"))
    staged = "--staged" in options or "S" in short
    worktree = "--worktree" in options or "W" in short
    return staged and not worktree


_REMOVE = compile_later(r"^(?:git\s+)?rm\s+(?P<args>.+)$")


def _removed_paths(command: str) -> set[str]:
    """The files a successful `rm` (or `git rm`) deleted."""
    text = " ".join(command.split())
    match = _REMOVE.match(text)
    if match is None or any(mark in text for mark in ("&&", "||", ";", "|", "*")):
        return set()
    try:
        words = shlex.split(match.group("args"))
    except ValueError:
        return set()
    return {w.removeprefix("./") for w in words if not w.startswith("-")}


# One SessionStart asks for the same file's committed content from several sections: a few
# seconds of memory spare a `git show` each time, and are too short to go stale in practice.
_COMMITTED_TTL_SECONDS = 5.0
_committed: dict[tuple[str, str], tuple[float, str | None]] = {}


def _committed_hash(root: Path, path: str) -> str | None:
    key = (str(root), path)
    now = time.monotonic()
    cached = _committed.get(key)
    if cached is not None and now - cached[0] < _COMMITTED_TTL_SECONDS:
        return cached[1]
    found = _read_committed_hash(root, path)
    if len(_committed) > 256:
        _committed.clear()
    _committed[key] = (now, found)
    return found


def _read_committed_hash(root: Path, path: str) -> str | None:
    import subprocess  # only here: hooks load this package, few of them ask git

    from memory_core.evolution import content_hash

    try:
        shown = subprocess.run(
            ["git", "-C", str(root), "show", f"HEAD:{path}"],
            capture_output=True,
            timeout=5,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    return content_hash(shown.stdout) if shown.returncode == 0 else None


def reverted_files(store: Store, session_id: str) -> list[str]:
    """Files the session changed and then put back as they were when it first touched them."""
    rows = store.query(
        "SELECT path, ts, hash_before, hash_after, change FROM file_changes "
        "WHERE session_id = ? AND path IS NOT NULL AND change != 'git' ORDER BY ts, id",
        (session_id,),
    )
    first: dict[str, str | None] = {}
    last: dict[str, tuple[float, str | None]] = {}
    deleted_at_end: dict[str, bool] = {}
    for row in rows:
        path = str(row["path"])
        if path not in first:
            first[path] = row["hash_before"]
        last[path] = (float(row["ts"]), None if row["change"] == "deleted" else row["hash_after"])
        deleted_at_end[path] = row["change"] == "deleted"
    if not first:
        return []
    reverts = store.query(
        f"SELECT command, ts FROM session_commands WHERE session_id = ? AND NOT {_COMMAND_FAILED} "
        "AND (command LIKE 'git %' OR command LIKE 'rm %') ORDER BY ts",
        (session_id,),
    )
    back: list[str] = []
    for path, before in first.items():
        last_ts, after = last[path]
        gone = deleted_at_end[path]
        put_back = False
        for command in reverts:
            if float(command["ts"]) < last_ts:
                continue
            everything, named = _reverted_paths(str(command["command"]))
            if everything or path in named:
                put_back = True
            if before is None and path in _removed_paths(str(command["command"])):
                after, gone = None, True  # created by the session, then removed: as at its start
        if put_back:
            # As git has it now: the same as before the session's first edit, or unknown before.
            if before is None or _committed_hash(store.root, path) == before:
                back.append(path)
        elif after == before and (after is not None or gone):
            # A later edit undid the earlier ones (or created, then deleted). Two unknown
            # hashes (a file engram could not read) say nothing: it stays changed.
            back.append(path)
    return back


def net_files_changed(store: Store, session_id: str) -> list[str]:
    """Workspace files that differ at the end of the session from its start, most recent first."""
    files = files_modified(store, session_id)
    if not files:
        return files
    back = set(reverted_files(store, session_id))
    return [path for path in files if path not in back]
