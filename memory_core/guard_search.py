"""Every occurrence of many short ASCII words in a large text, in one pass however many words.

Redaction's rules each declare guard words (`token`, `password`, `getconnection(`); a rule reads
only the text around its guards. Searching a megabyte once per guard costs about a millisecond
each (`str.find`), so the cost of a rule grew with the text's length. Here the text is read once
for all of them:

- Each guard is given a window of three characters (its rarest three in code and prose) and one
  of eight groups. Three translations of the lowered bytes, one per window position, set in each
  byte the groups whose window has that character there; AND-ed together (as Python integers, a
  byte per character), a byte is non-zero only where some group's window could start. Only those
  places (10 to 40 per thousand characters of code) are read in Python, each against the
  guards whose window is the three characters there.
- A guard holding another guard (`password` holds `pass`) is looked for only where that one was
  found; a guard shorter than three characters is searched for on its own.

The answer is exactly what `str.find` gives, guard by guard: the grouping decides only how many
places are read. The text is searched as bytes (one per character, others `?`), which keeps the
offsets of the text; the lowered bytes stand for `text.lower()` where that keeps every character
one character long and no other character lowers to an ASCII one (`usable`). Measured on 1.4 MB
of code and prose for 36 guards: 48 ms with `str.find` per guard, 37 ms with an Aho-Corasick
automaton (pyahocorasick, a C extension, which walks every character through its trie), 19 ms
here; on short texts the automaton and this are alike (docs/benchmarks.md, "Redaction").
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Iterator

Key = tuple[str, bool]  # (guard, searched in the lowered text)

_WINDOW = 3
_GROUPS = 8
# Characters per thousand in code and prose (lowered), the commonest; any other counts 0.5. Only
# which places are read depends on it, never what is found.
_FREQUENCY = {
    " ": 239, "e": 78, "t": 60, "s": 51, "o": 47, "r": 46, "n": 45, "i": 39, "a": 38, "\n": 25,
    "d": 24, "l": 23, "c": 22, '"': 21, "f": 16, "m": 16, "h": 15, ",": 15, "u": 15, "p": 14,
    "_": 13, "(": 13, ")": 13, ".": 12, "g": 10, ":": 10, "w": 8, "=": 8, "y": 7, "-": 6,
    "b": 6, "k": 6, "v": 4, "[": 4, "]": 4, "x": 4, "`": 2, "'": 2, "{": 2, "}": 2, "0": 2,
}  # fmt: skip
_RARE = 0.5
# Every non-zero byte to 1, so one `find` walks the places to read.
_NONZERO = bytes([0] + [1] * 255)
# The one character that is not ASCII and lowers to one that is (KELVIN SIGN to `k`).
_LOWERS_TO_ASCII = "\u212a"


def usable(text: str, lowered: str) -> bool:
    """Whether the bytes of `text` and of `text.lower()` find what the strings would: each
    character lowers to one (the dotted capital I, U+0130, lowers to two), and none that is not
    ASCII to one that is."""
    return len(lowered) == len(text) and (text.isascii() or _LOWERS_TO_ASCII not in text)


def _weight(window: bytes) -> float:
    return math.prod(_FREQUENCY.get(chr(c), _RARE) for c in window)


class GuardSearch:
    """Where each of `keys` occurs: (guard, fold) searched in the lowered bytes when `fold`,
    in the bytes as they are otherwise. Guards that are not ASCII, or hold `?` (which stands for
    any other character in the bytes), are not covered: the caller searches for those itself."""

    def __init__(self, keys: Iterable[Key]) -> None:
        wanted = sorted(
            {k for k in keys if k[0] and k[0].isascii() and "?" not in k[0]},
            key=lambda k: (len(k[0]), not k[1], k[0]),
        )
        self.covered = frozenset(wanted)
        # A guard holding a guard searched for already (`password`: `pass`) is looked for where
        # that one is; the longest such holds the fewest places. A folded guard can stand in
        # for any; a guard searched as it is, only for another searched as it is.
        roots: list[Key] = []
        self._derived: list[tuple[Key, Key, int]] = []
        for key in wanted:
            guard, fold = key
            spelled = guard if fold else guard.lower()
            base = max(
                (
                    root
                    for root in roots
                    if root != key and root[0] in (spelled if root[1] else guard)
                    if root[1] or not fold
                ),
                key=lambda root: len(root[0]),
                default=None,
            )
            if base is None:
                roots.append(key)
            else:
                offset = (spelled if base[1] else guard).find(base[0])
                self._derived.append((key, base, offset))
        self._short = [key for key in roots if len(key[0]) < _WINDOW]
        self._plan([key for key in roots if len(key[0]) >= _WINDOW])
        # For `present`: the guards held by each, checked only when it is there.
        self._held: dict[Key, list[tuple[bytes, bool, Key]]] = {}
        for key, base, _offset in self._derived:
            self._held.setdefault(base, []).append((key[0].encode(), key[1], key))

    def _plan(self, keys: list[Key]) -> None:
        """Each guard's window (its rarest three characters) and group: the commonest windows
        placed first, each into the group whose columns it adds the fewest expected places to."""
        placed = []
        for key in keys:
            spelled = key[0].lower().encode()
            weight, offset = min(
                (_weight(spelled[at : at + _WINDOW]), at)
                for at in range(len(spelled) - _WINDOW + 1)
            )
            placed.append((-weight, key, spelled[offset : offset + _WINDOW], offset))
        placed.sort()
        # Each group's characters in each window column, and their summed frequency: the
        # places a group lets through are about the product of its three sums.
        columns = [[set[int]() for _ in range(_WINDOW)] for _ in range(_GROUPS)]
        sums = [[0.0] * _WINDOW for _ in range(_GROUPS)]
        by_window: dict[bytes, list[tuple[bytes, int, bool, Key]]] = {}
        for _weight_of, key, window, offset in placed:
            best = (math.inf, 0)
            for group in range(_GROUPS):
                before = after = 1.0
                for i, char in enumerate(window):
                    before *= sums[group][i]
                    after *= sums[group][i] + (
                        0.0 if char in columns[group][i] else _FREQUENCY.get(chr(char), _RARE)
                    )
                best = min(best, (after - before, group))
            group = best[1]
            for i, char in enumerate(window):
                if char not in columns[group][i]:
                    columns[group][i].add(char)
                    sums[group][i] += _FREQUENCY.get(chr(char), _RARE)
            by_window.setdefault(window, []).append((key[0].encode(), offset, key[1], key))
        self._tables = []
        for i in range(_WINDOW):
            table = bytearray(256)
            for group, group_columns in enumerate(columns):
                for char in group_columns[i]:
                    table[char] |= 1 << group
            self._tables.append(bytes(table))
        # The guards to read at a place, by the three characters there: a place where the
        # groups' windows cross (`pat` and `key` in one group also let `pet` through) reads one
        # dictionary entry and nothing else.
        self._by_window = {window: tuple(found) for window, found in by_window.items()}
        self._long = [member[3] for found in self._by_window.values() for member in found]

    def _places(self, lowered: bytes) -> tuple[bytes, bytes]:
        """Where a window may start: the groups' bits at each place, and the same as 0 or 1."""
        first, second, third = self._tables
        starts = (
            int.from_bytes(lowered.translate(first), "little")
            & int.from_bytes(lowered[1:].translate(second), "little")
            & int.from_bytes(lowered[2:].translate(third), "little")
        )
        groups = starts.to_bytes(len(lowered), "little")
        return groups, groups.translate(_NONZERO)

    def _long_hits(self, encoded: bytes, lowered: bytes) -> Iterator[tuple[Key, int]]:
        """(key, start) of every occurrence of the long keys, in order of their windows: the
        places the byte masks mark, each checked against the keys whose window it is."""
        if not self._long or len(lowered) < _WINDOW:
            return
        _groups, marks = self._places(lowered)
        by_window = self._by_window
        at = marks.find(1)
        while at != -1:
            for needle, offset, fold, key in by_window.get(lowered[at : at + _WINDOW], ()):
                start = at - offset
                if start >= 0 and (lowered if fold else encoded).startswith(needle, start):
                    yield key, start
            at = marks.find(1, at + 1)

    def find(self, encoded: bytes, lowered: bytes) -> dict[Key, list[int]]:
        """Each covered key's occurrences, in order, in `encoded` (one byte per character of the
        text) or `lowered` (the same, lowered): what repeated `find` calls would give."""
        found: dict[Key, list[int]] = {key: [] for key in self._long}
        for key, start in self._long_hits(encoded, lowered):
            found[key].append(start)
        for key in self._short:
            found[key] = _find_all(lowered if key[1] else encoded, key[0].encode())
        for key, base, offset in self._derived:
            needle = key[0].encode()
            haystack = lowered if key[1] else encoded
            found[key] = [
                at - offset
                for at in found[base]
                if at >= offset and haystack.startswith(needle, at - offset)
            ]
        return found

    def present(self, encoded: bytes, lowered: bytes) -> set[Key]:
        """The covered keys that occur at least once (a short text: which rules to run)."""
        present = {key for key, _ in self._long_hits(encoded, lowered)}
        for key in self._short:
            if key[0].encode() in (lowered if key[1] else encoded):
                present.add(key)
        for key in list(present):  # every guard held is held by a root
            for needle, fold, held in self._held.get(key, ()):
                if held not in present and needle in (lowered if fold else encoded):
                    present.add(held)
        return present


def _find_all(haystack: bytes, needle: bytes) -> list[int]:
    found = []
    at = haystack.find(needle)
    while at != -1:
        found.append(at)
        at = haystack.find(needle, at + 1)
    return found
