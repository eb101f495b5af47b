"""Redaction's regular expressions compiled once per machine, not once per process.

A hook is a fresh process, and Python compiles a regular expression in Python code: the
patterns a first prompt needs cost a cold process 5 to 20 ms of its budget. The resident server,
which compiles every pattern while warming up, writes what the compiler made of each (the regex
engine's code) to a file in the user's cache folder; a cold process reads that file once
(about 1.5 ms) and makes each pattern from it on first use, in microseconds.

The file holds, for each pattern's source and flags, what `re`'s compiler hands the engine
(`_sre.compile`); it is keyed by the exact Python build. A missing, unreadable or foreign file,
or any error making a pattern from it, falls back to `re.compile`: the cache changes how fast a
pattern is made, never what it matches (tests/core/test_guard_search.py compares the two).
"""

from __future__ import annotations

import marshal
import os
import re
import sys
from array import array
from collections.abc import Iterable

TYPE_CHECKING = False  # `typing` costs a cold hook a third of Python's start
if TYPE_CHECKING:
    from typing import Any

# The engine and compiler `re` itself uses (imported by it). Only on the CPython versions this
# was checked on (3.11 to 3.13: every redaction pattern made from the file matches as compiled);
# on another nothing is cached.
_sre: Any = sys.modules.get("_sre")
_compiler: Any = sys.modules.get("re._compiler")
_parser: Any = sys.modules.get("re._parser")
_CHECKED = sys.implementation.name == "cpython" and (3, 11) <= sys.version_info[:2] <= (3, 13)
if _compiler is None or _parser is None or not _CHECKED:
    _sre = None

# What the engine's code depends on: the Python build and the engine's own version.
_VERSION = f"{sys.implementation.name} {sys.version} {getattr(_sre, 'MAGIC', '')}"

# (flags, the engine's code as 32-bit words, groups, group names, names by index).
_Entry = tuple[int, bytes, int, dict[str, int], tuple[str | None, ...]]
_entries: dict[tuple[str, int], _Entry] | None = None


def path() -> str:
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    name = f"patterns-{sys.version_info[0]}.{sys.version_info[1]}.bin"
    return os.path.join(base, "engram", name)


def _load() -> dict[tuple[str, int], _Entry]:
    global _entries
    if _entries is None:
        _entries = {}
        try:
            with open(path(), "rb") as file:
                version, entries = marshal.loads(file.read())
            if version == _VERSION and isinstance(entries, dict):
                _entries = entries
        except (OSError, ValueError, EOFError, TypeError):
            pass  # no file yet, or not one this build wrote: patterns are compiled as usual
    return _entries


def make(pattern: str, flags: int = 0) -> re.Pattern[str]:
    """`re.compile(pattern, flags)`, from the cached compiled form when there is one."""
    entry = _load().get((pattern, int(flags))) if _sre is not None else None
    if entry is not None:
        try:
            return _from_entry(pattern, entry)
        except Exception:  # a bad entry is only a missed shortcut
            pass
    return re.compile(pattern, flags)


def _from_entry(pattern: str, entry: _Entry) -> re.Pattern[str]:
    flags, code, groups, groupindex, indexgroup = entry
    made: re.Pattern[str] = _sre.compile(
        pattern, flags, array("I", code).tolist(), groups, groupindex, indexgroup
    )
    return made


def _entry(pattern: str, flags: int) -> _Entry:
    """What `re._compiler.compile` hands `_sre.compile` (Python 3.11 to 3.13)."""
    parsed = _parser.parse(pattern, flags)
    code = array("I", [int(op) for op in _compiler._code(parsed, flags)]).tobytes()
    groupindex = dict(parsed.state.groupdict)
    indexgroup: list[str | None] = [None] * parsed.state.groups
    for name, index in groupindex.items():
        indexgroup[index] = name
    return (
        int(flags | parsed.state.flags),
        code,
        parsed.state.groups - 1,
        groupindex,
        tuple(indexgroup),
    )


def save(patterns: Iterable[tuple[str, int]]) -> None:
    """Write the compiled form of `patterns` for later processes; best effort (a read-only
    home only loses the shortcut). Each is checked against `re.compile` before it is kept."""
    if _sre is None:
        return
    entries: dict[tuple[str, int], _Entry] = {}
    for pattern, flags in patterns:
        try:
            entry = _entry(pattern, int(flags))
            made = _from_entry(pattern, entry)
            usual = re.compile(pattern, flags)
            if (made.pattern, made.flags, made.groups, made.groupindex) != (
                usual.pattern,
                usual.flags,
                usual.groups,
                usual.groupindex,
            ):
                continue
        except Exception:  # a pattern this cannot handle is compiled as usual
            continue
        entries[(pattern, int(flags))] = entry
    target = path()
    temporary = f"{target}.{os.getpid()}.tmp"
    try:
        os.makedirs(os.path.dirname(target), exist_ok=True)
        with open(temporary, "wb") as file:
            file.write(marshal.dumps((_VERSION, entries)))
        os.replace(temporary, target)
    except OSError:
        return
