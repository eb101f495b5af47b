"""Value classes without `dataclasses`, for the modules a cold hook loads before its answer.

`dataclasses` loads inspect, ast, dis and tokenize: about as much as Python's own start, paid by
every hook that reads gotchas for the agent (a file's before an edit, a prompt's, a session
start's). These bases give what those classes used of it: comparison and printing by their
fields, in the order `FIELDS` names them, and a hash for the ones never changed once made.
"""

from __future__ import annotations


class Value:
    """Compared, hashed and printed by its fields (`FIELDS`); never changed once made."""

    __slots__ = ()
    FIELDS: tuple[str, ...] = ()

    def _fields(self) -> tuple[object, ...]:
        return tuple(getattr(self, name) for name in self.FIELDS)

    def __eq__(self, other: object) -> bool:
        if type(other) is not type(self):
            return NotImplemented
        assert isinstance(other, Value)
        return self._fields() == other._fields()

    def __hash__(self) -> int:
        return hash(self._fields())

    def __repr__(self) -> str:
        fields = ", ".join(f"{name}={getattr(self, name)!r}" for name in self.FIELDS)
        return f"{type(self).__name__}({fields})"


class Record(Value):
    """Compared and printed by its fields; changed in place, so not hashable."""

    __slots__ = ()
    __hash__ = None  # type: ignore[assignment]
