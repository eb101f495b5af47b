"""Every occurrence of many short ASCII words in a large text, in one pass however many words.

Redaction's rules each declare guard words (`token`, `password`, `getconnection(`); a rule reads
only the text around its guards. Searching a megabyte once per guard costs about a millisecond
each (`str.find`), so the cost of a rule grew with the text's length. Here the text is read once
for all of them:

- Each guard is given a window of four characters (three for a guard of three), its rarest in
  code and prose (`guard_frequency`), and one of eight groups.
- Each pair of neighbouring characters of the lowered bytes gets a code of one byte (a byte
  translation XOR-ed, as an integer, with itself shifted by seven bits): a pair of a guard's
  window shares its code with few pairs of ordinary text. Three translations of those codes,
  one per pair of a window (its characters 1-2, 2-3 and 3-4), set in each byte the groups with
  that pair there; AND-ed together (as Python integers, a byte per character), a byte is
  non-zero only where some group's window could start. Only those places (about 9 per
  thousand characters of code, half of them real occurrences) are read in Python, each
  against the guards whose window starts with the three characters there.
- A guard holding another guard (`password` holds `pass`) is looked for only where that one was
  found; a guard shorter than three characters is searched for on its own.

The answer is exactly what `str.find` gives, guard by guard: the codes, groups and frequency
table decide only how many places are read. The text is searched as bytes (one per character,
others `?`), which keeps the offsets of the text; the lowered bytes stand for `text.lower()`
where that keeps every character one character long and no other character lowers to an ASCII
one (`usable`). Measured on the 1.4 MB bench text of code and prose for 110 guards
(docs/benchmarks.md, "Redaction"): 12,000 places read and 33 ms of CPU, where windows of three
single characters read 90,000 places in 51 ms (load 13); an Aho-Corasick automaton
(pyahocorasick, a C extension that walks every character through its trie) was slower than
those already.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Iterator

Key = tuple[str, bool]  # (guard, searched in the lowered text)

_WINDOW = 4
# A guard shorter than this has no window: it is searched for on its own.
_SHORTEST = 3
# The pairs of neighbouring characters of a window of four.
_PAIRS = _WINDOW - 1
_GROUPS = 8
# Every non-zero byte to 1, so one `find` walks the places to read.
_NONZERO = bytes([0] + [1] * 255)
# The one character that is not ASCII and lowers to one that is (KELVIN SIGN to `k`).
_LOWERS_TO_ASCII = "\u212a"
_EVERY_CODE = frozenset(range(256))


def usable(text: str, lowered: str) -> bool:
    """Whether the bytes of `text` and of `text.lower()` find what the strings would: each
    character lowers to one (the dotted capital I, U+0130, lowers to two), and none that is not
    ASCII to one that is."""
    return len(lowered) == len(text) and (text.isascii() or _LOWERS_TO_ASCII not in text)


# Each character's byte for the pair codes: seven bits, the ASCII characters in a fixed
# pseudo-random order (a shuffle of 0 to 127), so that a pair's code keeps both of its characters
# and the codes of different pairs rarely coincide. The code of a pair (a, b) is
# `_CODES[a] ^ _CODES[b] << 1`: what one translation of the text, XOR-ed as an integer with itself
# shifted by seven bits, puts at a (with seven bits, nothing of a's crosses into the next byte).
_CODES = (
    bytes.fromhex(
        "6b0d0e753d76301d08163c7451680713424d31690314320c571e5955021b7834"
        "7d56432066533a103e7c581944265e23040b71257e4e06182f35056c6d49175f"
        "79152b1a004573625c3f6e334677364b473b54480f41602d247a5b4f7b6f5021"
        "38395d706a286711650a1c7f2c1f2a6409374a222e2952615a4c400163722712"
    )
    * 2
)


def _pair_code(first: int, second: int) -> int:
    return _CODES[first] ^ _CODES[second] << 1


class _Frequency:
    """Shares of characters and pairs in ordinary text (per 100,000), from `guard_frequency`;
    one a table does not list counts as less than its rarest entry."""

    def __init__(self) -> None:
        from memory_core import guard_frequency as table

        self.chars = {c: n for c, n in zip(table.CHARS, table.CHAR_COUNTS, strict=True)}
        self.pairs = {p: n for p, n in zip(table.PAIRS, table.PAIR_COUNTS, strict=True)}
        self.rare_char = min(table.CHAR_COUNTS) / 2
        self.rare_pair = min(table.PAIR_COUNTS) / 2

    def of_window(self, window: str) -> float:
        """Expected occurrences per 100,000 characters (each character depending on the one
        before it: a chain of pairs)."""
        share = self.pairs.get(window[:2], self.rare_pair)
        for at in range(1, len(window) - 1):
            share *= self.pairs.get(window[at : at + 2], self.rare_pair)
            share /= self.chars.get(window[at], self.rare_char)
        return share

    def of_codes(self) -> list[float]:
        """Each pair code's share of a text's places (what an unlisted pair leaves, spread)."""
        shares = [0.0] * 256
        for pair, count in self.pairs.items():
            shares[_pair_code(ord(pair[0]), ord(pair[1]))] += count
        rest = max(0.0, 100_000 - sum(self.pairs.values())) / 256
        return [(share + rest) / 100_000 for share in shares]


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
        self._short = [key for key in roots if len(key[0]) < _SHORTEST]
        # Two different characters cannot overlap themselves, and `re` finds such a pair in a
        # large text in half the time of repeated `bytes.find` calls.
        self._short_patterns = {
            key: re.compile(re.escape(key[0].encode()))
            for key in self._short
            if len(key[0]) == 2 and key[0][0] != key[0][1]
        }
        self._plan([key for key in roots if len(key[0]) >= _SHORTEST])
        # For `present`: the guards held by each, checked only when it is there.
        self._held: dict[Key, list[tuple[bytes, bool, Key]]] = {}
        for key, base, _offset in self._derived:
            self._held.setdefault(base, []).append((key[0].encode(), key[1], key))

    def _plan(self, keys: list[Key]) -> None:
        """Each guard's window (its rarest four characters, or its three) and group: the
        commonest windows placed first, each into the group it adds the fewest expected places
        to. A group's places are about the product of the shares of its three pair codes; a
        window of three has no third pair, so its groups (their share of the eight as their share
        of the windows) let any third pair through."""
        frequency = _Frequency()
        placed = []
        for key in keys:
            spelled = key[0].lower()
            size = min(_WINDOW, len(spelled))
            share, offset = min(
                (frequency.of_window(spelled[at : at + size]), at)
                for at in range(len(spelled) - size + 1)
            )
            placed.append((share, key, spelled[offset : offset + size].encode(), offset))
        placed.sort(key=lambda entry: -entry[0])
        code_share = frequency.of_codes()
        short = sum(1 for entry in placed if len(entry[2]) < _WINDOW)
        short_groups = (
            min(_GROUPS - 1, max(1, round(_GROUPS * short / len(placed)))) if short else 0
        )
        # Each group's codes for each pair of a window, and their summed share.
        codes = [[set[int]() for _ in range(_PAIRS)] for _ in range(_GROUPS)]
        shares = [[0.0] * _PAIRS for _ in range(_GROUPS)]
        for group in range(short_groups):
            codes[group][_PAIRS - 1] = set(_EVERY_CODE)
            shares[group][_PAIRS - 1] = 1.0
        by_start: dict[bytes, list[tuple[bytes, int, bool, Key]]] = {}
        for _share, key, window, offset in placed:
            pairs = [
                {_pair_code(window[at], window[at + 1])} if at + 1 < len(window) else set()
                for at in range(_PAIRS)
            ]
            best = (math.inf, 0)
            for group in (
                range(short_groups) if len(window) < _WINDOW else range(short_groups, _GROUPS)
            ):
                before = after = 1.0
                for at, wanted in enumerate(pairs):
                    before *= shares[group][at]
                    after *= shares[group][at] + sum(
                        code_share[code] for code in wanted - codes[group][at]
                    )
                best = min(best, (after - before, group))
            group = best[1]
            for at, wanted in enumerate(pairs):
                new_codes = wanted - codes[group][at]
                codes[group][at] |= new_codes
                shares[group][at] += sum(code_share[code] for code in new_codes)
            by_start.setdefault(window[:_SHORTEST], []).append(
                (key[0].encode(), offset, key[1], key)
            )
        self._tables = []
        for at in range(_PAIRS):
            table = bytearray(256)
            for group, group_codes in enumerate(codes):
                for code in group_codes[at]:
                    table[code] |= 1 << group
            self._tables.append(bytes(table))
        # The guards to read at a place, by its first three characters: most places where the
        # groups let a window through hold one.
        self._by_start = {start: tuple(found) for start, found in by_start.items()}
        self._long = [member[3] for found in self._by_start.values() for member in found]

    def _places(self, lowered: bytes) -> bytes:
        """1 where a window may start, 0 elsewhere."""
        size = len(lowered)
        codes = int.from_bytes(lowered.translate(_CODES), "little")
        pairs = (codes ^ codes >> 7).to_bytes(size, "little")
        first, second, third = self._tables
        starts = (
            int.from_bytes(pairs.translate(first), "little")
            & int.from_bytes(pairs[1:].translate(second), "little")
            & int.from_bytes(pairs[2:].translate(third), "little")
        )
        return starts.to_bytes(size, "little").translate(_NONZERO)

    def _long_hits(self, encoded: bytes, lowered: bytes) -> Iterator[tuple[Key, int]]:
        """(key, start) of every occurrence of the long keys, in order of their windows: the
        places the byte masks mark, each checked against the keys whose window starts there."""
        if not self._long or len(lowered) < _SHORTEST:
            return
        marks = self._places(lowered)
        by_start = self._by_start
        at = marks.find(1)
        while at != -1:
            for needle, offset, fold, key in by_start.get(lowered[at : at + _SHORTEST], ()):
                start = at - offset
                if start >= 0 and (lowered if fold else encoded).startswith(needle, start):
                    yield key, start
            at = marks.find(1, at + 1)

    def find(self, encoded: bytes, lowered: bytes) -> dict[Key, list[int]]:
        """Each covered key's occurrences, in order, in `encoded` (one byte per character of the
        text) or `lowered` (the same, lowered): what repeated `find` calls would give."""
        found: dict[Key, list[int]] = {key: [] for key in self._long}
        if self._long and len(lowered) >= _SHORTEST:
            # `_long_hits` written out: a large text has thousands of hits.
            marks = self._places(lowered)
            by_start = self._by_start
            at = marks.find(1)
            while at != -1:
                for needle, offset, fold, key in by_start.get(lowered[at : at + _SHORTEST], ()):
                    start = at - offset
                    if start >= 0 and (lowered if fold else encoded).startswith(needle, start):
                        found[key].append(start)
                at = marks.find(1, at + 1)
        for key in self._short:
            haystack = lowered if key[1] else encoded
            pattern = self._short_patterns.get(key)
            if pattern is None:
                found[key] = _find_all(haystack, key[0].encode())
            else:
                found[key] = [match.start() for match in pattern.finditer(haystack)]
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
