"""Names from outside are data, never paths.

Session, checkpoint, snapshot and memory ids, names and agents' ids arrive from hook payloads,
from exports someone shares, from editor commands. Any of them may hold `/`, `..`, a NUL or
a thousand characters. Every file name engram derives from such a value goes through
`safe_filename`, and every path it builds under a folder goes through `child_path`, which
refuses (raises) rather than writes anywhere but inside that folder.
"""

from __future__ import annotations

import hashlib
import os
import re
from pathlib import Path

from memory_core.errors import UsageError

# Letters, digits, `_`, `-` and `.`: readable in a file manager, valid on every file system.
_UNSAFE = re.compile(r"[^A-Za-z0-9_.-]+")
MAX_NAME_CHARS = 120


def safe_filename(value: object, *, max_chars: int = MAX_NAME_CHARS) -> str:
    """A file name (no folder part) made from `value`; the same value gives the same name.

    Anything outside `[A-Za-z0-9_.-]` becomes `_`, leading dots are dropped (no hidden files,
    no `..`), and the name is cut to `max_chars`. When the name had to change, a short hash of
    the original is appended, so that `a/b` and `a_b` do not share a file.
    """
    text = str(value)
    cleaned = _UNSAFE.sub("_", text).lstrip(".")
    if cleaned == text and 0 < len(cleaned) <= max_chars:
        return cleaned
    digest = hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:8]
    keep = max(1, max_chars - len(digest) - 1)
    return f"{cleaned[:keep] or '_'}-{digest}"


def child_path(folder: Path, *names: str) -> Path:
    """`folder / name / ...`, checked to stay inside `folder` (each name must be safe already).

    A guard, not a cleaner: a caller that forgot `safe_filename` gets an error, never a file
    written outside the store.
    """
    path = folder.joinpath(*names)
    base = os.path.normpath(folder)
    resolved = os.path.normpath(path)
    if any(
        part in ("", ".", "..") or "/" in part or "\\" in part or "\0" in part for part in names
    ):
        raise UsageError(f"refusing the file name {names!r}: it is not a plain name")
    if os.path.commonpath([base, resolved]) != base:
        raise UsageError(f"refusing to write {path}: it is outside {folder}")
    return path
