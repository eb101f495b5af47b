"""Regular expressions compiled the first time they are used, not when their module loads.

A hook is a cold process: the gotcha and digest modules hold about a hundred patterns, and
compiling them all at import cost a hook more instructions than Python's own start, while a
given event uses a handful. `compile_later(...)` stands in for `re.compile(...)` at module level;
the first attribute asked of it (`.search`, `.sub`, `.pattern`...) compiles the pattern, and
each attribute is then kept on the object, so later calls cost one dictionary lookup as before.
"""

from __future__ import annotations

import re

# A tool call's hook loads this: `typing` would cost it more than the patterns it defers.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any


class _PatternCompiledOnFirstUse:
    def __init__(self, pattern: str | bytes, flags: int) -> None:
        self._source = (pattern, flags)

    def __getattr__(self, name: str) -> Any:
        # Called only for what is not yet in the instance's dict: compile, then keep it there.
        if name.startswith("__") or name == "_compiled":
            raise AttributeError(name)
        # The compiled pattern is kept too: a second method (`.sub` after `.search`) must not
        # compile again, which it would once `re`'s own cache (512 patterns) has let it go, as
        # in the resident server's children, whose server compiles more than that.
        compiled = self.__dict__.get("_compiled")
        if compiled is None:
            pattern, flags = self._source
            compiled = self.__dict__["_compiled"] = re.compile(pattern, flags)
        value = getattr(compiled, name)
        self.__dict__[name] = value
        return value

    def __repr__(self) -> str:
        return f"compile_later({self._source[0]!r}, {self._source[1]!r})"


def compile_later(pattern: str, flags: int | re.RegexFlag = 0) -> re.Pattern[str]:
    """`re.compile(pattern, flags)`, done when the pattern is first used."""
    # It answers every attribute of a compiled pattern; the checker is told it is one.
    return _PatternCompiledOnFirstUse(pattern, int(flags))  # type: ignore[return-value]


def compile_bytes_later(pattern: bytes, flags: int | re.RegexFlag = 0) -> re.Pattern[bytes]:
    """`re.compile(pattern, flags)` of a bytes pattern, done when the pattern is first used."""
    return _PatternCompiledOnFirstUse(pattern, int(flags))  # type: ignore[return-value]
