"""Code patterns: checked when written, bounded in time when run, matched fast in bulk.

A gotcha's code pattern is a literal or a regular expression, matched line by line. Regexes
run on the `regex` engine with a timeout, so a pattern with catastrophic backtracking costs at
most its time budget per file and is then reported, never a frozen server. An invalid regex is
refused with the position of the error.

Speed (docs/design.md section 7: a 5,000-line file against 1,000 patterns in < 30 ms): every literal,
plus the longest literal each regex cannot match without, goes into one trie-shaped stdlib
regex, so one pass over a line finds which literals occur; a regex runs only on lines holding
its required literal. Results are cached per line text, so after an edit only the changed lines
are scanned again.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from memory_core.errors import UsageError

# Probes run once when a regex is written: inputs on which common catastrophic shapes
# ((a|aa)+$, (\w+\s?)+$, ...) explode. The real bound is the timeout at scan time.
_PROBES = ("a" * 40 + "!", "0" * 40 + "!", " " * 40 + "!", "ab" * 30 + "!", "a " * 30 + "!")
PROBE_TIMEOUT_S = 0.05
LINE_CACHE_LIMIT = 200_000


def _regex_module() -> Any:
    import regex  # type: ignore[import-untyped,unused-ignore]

    return regex


def compile_regex(pattern: str) -> Any:
    """The compiled pattern, or UsageError naming the position of the error."""
    regex = _regex_module()
    try:
        return regex.compile(pattern)
    except regex.error as exc:
        position = f" at position {exc.pos}" if exc.pos is not None else ""
        raise UsageError(
            f"invalid regular expression {pattern!r}: {exc.msg}{position}",
            hint="fix the pattern, or pass it as a literal",
        ) from None


def validate_regex(pattern: str) -> None:
    """Refuse an invalid regex (with position) or one that takes pathological time on a probe."""
    compiled = compile_regex(pattern)
    for probe in _PROBES:
        try:
            compiled.search(probe, timeout=PROBE_TIMEOUT_S)
        except TimeoutError:
            raise UsageError(
                f"the regular expression {pattern!r} takes pathological time (catastrophic "
                f"backtracking) on a {len(probe)}-character input",
                hint="remove nested repetition like (a+)+ or (a|aa)+",
            ) from None


def required_literal(pattern: str) -> str | None:
    """The longest literal text every match of `pattern` contains, or None if unknown.

    Uses the standard library's parser on the top-level sequence only (safe: what the
    top-level sequence requires, every match contains). Case-insensitive or unparseable
    patterns give None and are simply run on every line.
    """
    try:
        import re._parser as parser  # type: ignore[import-not-found,unused-ignore]
        from re import _constants as const  # type: ignore[attr-defined,unused-ignore]
    except ImportError:  # pragma: no cover - older or newer Pythons
        return None
    try:
        parsed = parser.parse(pattern)
    except Exception:
        return None
    if parsed.state.flags & (const.SRE_FLAG_IGNORECASE | const.SRE_FLAG_VERBOSE):
        return None
    best = ""

    def walk(items: Iterable[Any]) -> str:
        nonlocal best
        run = ""
        for op, arg in items:
            if op is const.LITERAL:
                run += chr(arg)
                continue
            if len(run) > len(best):
                best = run
            run = ""
            if op is const.SUBPATTERN:
                sub_flags = arg[1] if len(arg) > 1 else 0
                if not sub_flags & const.SRE_FLAG_IGNORECASE:
                    walk(arg[-1])
        if len(run) > len(best):
            best = run
        return best

    walk(parsed)
    return best or None


@dataclass(frozen=True, slots=True)
class PatternSpec:
    gotcha_id: str
    pattern: str
    kind: str  # "literal" | "regex"


@dataclass(frozen=True, slots=True)
class Match:
    gotcha_id: str
    start: int  # character offsets in the line
    end: int


@dataclass(frozen=True, slots=True)
class SlowPattern:
    gotcha_id: str
    pattern: str


def _trie_regex(literals: Sequence[str]) -> str:
    """A regex alternation shaped like a trie (shared prefixes factored), fast in sre."""
    import re

    trie: dict[str, Any] = {}
    for literal in literals:
        node = trie
        for char in literal:
            node = node.setdefault(char, {})
        node[""] = True

    def render(node: dict[str, Any]) -> str:
        ends = "" in node
        branches = [re.escape(char) + render(child) for char, child in sorted(node.items()) if char]
        if not branches:
            return ""
        body = branches[0] if len(branches) == 1 else "(?:" + "|".join(branches) + ")"
        if ends:
            body = "(?:" + body + ")?"
        return body

    return render(trie)


class _LazyRegex:
    """A gotcha's regex, compiled the first time a line could match it (most never run)."""

    __slots__ = ("_compiled", "gotcha_id", "pattern")

    def __init__(self, gotcha_id: str, pattern: str) -> None:
        self.gotcha_id = gotcha_id
        self.pattern = pattern
        self._compiled: Any = None

    def compiled(self) -> Any:
        if self._compiled is None:
            self._compiled = compile_regex(self.pattern)
        return self._compiled


class Matcher:
    """All code patterns of one set of gotchas, matched line by line (see the module docstring)."""

    def __init__(self, specs: Sequence[PatternSpec], *, timeout_ms: float = 50.0) -> None:
        import re

        self.timeout_s = timeout_ms / 1000.0
        self.invalid: dict[str, str] = {}
        self._literal_owners: dict[str, list[str]] = {}
        self._regex_by_literal: dict[str, list[_LazyRegex]] = {}
        self._always_regexes: list[_LazyRegex] = []
        for spec in specs:
            if spec.kind == "literal":
                self._literal_owners.setdefault(spec.pattern, []).append(spec.gotcha_id)
                continue
            lazy = _LazyRegex(spec.gotcha_id, spec.pattern)
            needle = required_literal(spec.pattern)
            if needle:
                self._regex_by_literal.setdefault(needle, []).append(lazy)
            else:
                self._always_regexes.append(lazy)
        needles = set(self._literal_owners) | set(self._regex_by_literal)
        self._needles = needles
        # The scanner is greedy, so at a position it returns the longest needle there; the
        # other needles at that position are its prefixes, found by these lengths.
        self._lengths = sorted({len(n) for n in needles})
        self._scanner = re.compile(_trie_regex(sorted(needles))) if needles else None
        self._line_cache: dict[str, tuple[Match, ...]] = {}
        self.specs = len(specs)

    def mostly_cached(self, sample: Sequence[str]) -> bool:
        cache = self._line_cache
        return sum(1 for line in sample if line in cache) * 2 > len(sample)

    def candidate_lines(self, text: str, line_starts: Sequence[int]) -> list[int] | None:
        """Indexes of the lines that can match anything, from one pass over the whole text.

        None when every line must be checked (a regex with no required literal, or a needle
        spanning lines). Lines that hold no needle cannot match, so a file is scanned in one C
        loop and only the few lines with a needle go through `match_line`.
        """
        if self._always_regexes or any("\n" in needle for needle in self._needles):
            return None
        if self._scanner is None:
            return []
        from bisect import bisect_right

        found: list[int] = []
        last = -1
        for hit in self._scanner.finditer(text):
            number = bisect_right(line_starts, hit.start()) - 1
            if number != last:
                found.append(number)
                last = number
        return found

    def match_line(
        self,
        line: str,
        budget: dict[str, float] | None = None,
        slow: list[SlowPattern] | None = None,
    ) -> tuple[Match, ...]:
        """Every pattern match in `line`.

        `budget` maps a gotcha id to the regex time it has left in this file (seconds); a
        pattern that runs out is recorded in `slow` and skipped for the rest of the file.
        """
        cached = self._line_cache.get(line)
        if cached is not None:
            return cached
        found: list[Match] = []
        complete = True
        regexes: list[_LazyRegex] = list(self._always_regexes)
        scanner = self._scanner
        if scanner is not None:
            search = scanner.search
            needles = self._needles
            owners_of = self._literal_owners
            regex_by_literal = self._regex_by_literal
            seen_needles: set[str] = set()
            position = 0
            while True:
                hit = search(line, position)
                if hit is None:
                    break
                start = hit.start()
                longest = hit.group()
                for length in self._lengths:
                    if length > len(longest):
                        break
                    needle = longest if length == len(longest) else longest[:length]
                    if needle not in needles:
                        continue
                    owners = owners_of.get(needle)
                    if owners:
                        end = start + length
                        found.extend(Match(owner, start, end) for owner in owners)
                    if needle not in seen_needles:
                        seen_needles.add(needle)
                        regexes.extend(regex_by_literal.get(needle, ()))
                position = start + 1
        if regexes:
            budget = budget if budget is not None else {}
            for lazy in regexes:
                gotcha_id = lazy.gotcha_id
                if gotcha_id in self.invalid:
                    continue
                left = budget.get(gotcha_id, self.timeout_s)
                if left <= 0:
                    complete = False
                    continue
                try:
                    compiled = lazy.compiled()
                except UsageError as exc:
                    self.invalid[gotcha_id] = exc.message
                    continue
                began = time.perf_counter()
                try:
                    for match in compiled.finditer(line, timeout=left):
                        if match.end() > match.start():
                            found.append(Match(gotcha_id, match.start(), match.end()))
                except TimeoutError:
                    complete = False
                    budget[gotcha_id] = 0.0
                    if slow is not None:
                        slow.append(SlowPattern(gotcha_id, lazy.pattern))
                    continue
                budget[gotcha_id] = left - (time.perf_counter() - began)
        result = tuple(found)
        if complete:
            if len(self._line_cache) >= LINE_CACHE_LIMIT:
                self._line_cache.clear()
            self._line_cache[line] = result
        return result
