"""Where gotchas show in a document: pattern matches, error anchors, file-wide notes, annotations.

`GotchaIndex` is built once per change of the gotchas (their revision) and answers, for one
workspace-relative path and the document's lines, every `Hit`: a gotcha id and a range. It
indexes what it can up front: gotchas by id, patterns grouped by their related-file globs (one
`Matcher` per distinct set, shared by every file it applies to), anchors by path.

Rules (issue 3): a gotcha shows on every match of its code pattern in files that match its
related-file globs (all files if it names none); on the line an error pointed at, found again
by its content hash when lines move, and flagged stale when that text changed; once on line 1
of each related file when it has neither pattern nor anchor there. A comment containing
`gotcha:` (`#`, `//`, `--`, `;`, `/* */`, `<!-- -->`) is an annotation gotcha on its line.
"""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from itertools import accumulate
from pathlib import Path

from memory_core.gotchas.patterns import Matcher, PatternSpec, SlowPattern
from memory_core.gotchas.records import Anchor, Gotcha, line_hash, stable_id, visible_in_editor
from memory_core.lazy_pattern import compile_later

ANNOTATION = compile_later(
    r"(?:^|(?<=\s))(?:#+|//+|--+|;+|/\*+|<!--|\*)\s*gotcha\s*(?:\((?P<severity>critical|high|medium|low)\))?\s*:"
    r"\s*(?P<text>.*?)\s*(?:\*+/|-->)?\s*$",
    re.IGNORECASE,
)


@dataclass(frozen=True, slots=True)
class Hit:
    gotcha_id: str
    line: int  # 0-based
    start: int  # character offsets in the line
    end: int
    kind: str  # pattern | anchor | file | annotation
    stale: bool = False


@dataclass(frozen=True, slots=True)
class Annotation:
    id: str
    line: int
    start: int
    end: int
    text: str
    severity: str
    # The whole line the comment is on: what the annotation gotcha's anchor hashes, so drift
    # compares like with like (the comment's words alone never equal the line).
    source_line: str = ""


@dataclass
class ScanResult:
    hits: list[Hit] = field(default_factory=list)
    annotations: list[Annotation] = field(default_factory=list)
    slow: list[SlowPattern] = field(default_factory=list)
    skipped: str | None = None  # why the file was not scanned (binary, too large)


_MENTION = compile_later(r"gotcha", re.IGNORECASE)


def find_annotations(
    path: str, lines: Sequence[str], document: str | None = None
) -> list[Annotation]:
    """The `gotcha:` comments of a document; `document`, its whole text, makes a file without
    any cheap to skip."""
    found: list[Annotation] = []
    if document is not None and "gotcha" not in document.lower():
        return found  # one pass in C instead of a look at every line
    for number, line in enumerate(lines):
        if _MENTION.search(line) is None:
            continue
        match = ANNOTATION.search(line)
        if match is None or not match.group("text"):
            continue
        comment = match.group("text")
        found.append(
            Annotation(
                id=stable_id("annotation", path, comment),
                line=number,
                start=match.start(),
                end=len(line.rstrip()),
                text=comment,
                severity=(match.group("severity") or "medium").lower(),
                source_line=line,
            )
        )
    return found


def annotation_gotcha(path: str, annotation: Annotation, now: float) -> Gotcha:
    title = annotation.text if len(annotation.text) <= 120 else annotation.text[:119] + "…"
    return Gotcha(
        id=annotation.id,
        title=title,
        description=annotation.text,
        severity=annotation.severity,
        source_type="annotation",
        status="confirmed",
        created_at=now,
        updated_at=now,
        anchors=[
            Anchor(
                path,
                annotation.line,
                annotation.line,
                line_hash(annotation.source_line or annotation.text),
                annotation.source_line or annotation.text,
            )
        ],
    )


@lru_cache(maxsize=4096)
def _glob_regex(glob: str) -> re.Pattern[str]:
    # fnmatch's '*' already crosses '/', so 'src/**/*.py' and 'src/*.py' both match deep files;
    # a glob without '/' matches the file name in any folder, as .gitignore does.
    return re.compile(fnmatch.translate(glob))


def path_matches(path: str, globs: Sequence[str]) -> bool:
    name = path.rsplit("/", 1)[-1]
    for glob in globs:
        target = path if "/" in glob else name
        # "./" is the workspace's root ("./.github/*.yml": only those two characters go).
        if _glob_regex(glob.removeprefix("./")).match(target):
            return True
        if glob.startswith("**/") and _glob_regex(glob[3:]).match(path):
            return True
    return False


def looks_binary(data: bytes) -> bool:
    return b"\x00" in data[:8192]


class GotchaIndex:
    """The gotchas the editor shows, indexed for fast scans and hovers."""

    def __init__(
        self,
        gotchas: Sequence[Gotcha],
        *,
        now: float,
        decay_days: float = 30.0,
        regex_timeout_ms: float = 50.0,
        max_file_bytes: int = 2 * 1024 * 1024,
        revision: int = 0,
    ) -> None:
        self.revision = revision
        self.by_id: dict[str, Gotcha] = {g.id: g for g in gotchas}
        self.regex_timeout_ms = regex_timeout_ms
        self.max_file_bytes = max_file_bytes
        self.visible: dict[str, Gotcha] = {
            g.id: g for g in gotchas if visible_in_editor(g, now=now, decay_days=decay_days)
        }
        self._global_specs: list[PatternSpec] = []
        self._scoped: list[tuple[tuple[str, ...], PatternSpec]] = []
        self._file_notes: list[Gotcha] = []
        self.anchors_by_path: dict[str, list[tuple[str, Anchor]]] = {}
        for gotcha in self.visible.values():
            if gotcha.source_type == "annotation":
                continue  # shown from the live text of the comment, not from the store
            if gotcha.code_pattern:
                spec = PatternSpec(gotcha.id, gotcha.code_pattern, gotcha.pattern_kind)
                if gotcha.related_files:
                    self._scoped.append((tuple(gotcha.related_files), spec))
                else:
                    self._global_specs.append(spec)
            for anchor in gotcha.anchors:
                self.anchors_by_path.setdefault(anchor.path, []).append((gotcha.id, anchor))
            if gotcha.related_files and not gotcha.code_pattern:
                self._file_notes.append(gotcha)
        self._matchers: dict[tuple[str, ...], Matcher] = {}
        self._per_path: dict[str, tuple[Matcher, list[Gotcha]]] = {}

    def __len__(self) -> int:
        return len(self.visible)

    def get(self, gotcha_id: str) -> Gotcha | None:
        return self.by_id.get(gotcha_id)

    def _for_path(self, path: str) -> tuple[Matcher, list[Gotcha]]:
        cached = self._per_path.get(path)
        if cached is not None:
            return cached
        specs = list(self._global_specs)
        specs += [spec for globs, spec in self._scoped if path_matches(path, globs)]
        key = tuple(sorted(f"{s.gotcha_id}\x00{s.kind}\x00{s.pattern}" for s in specs))
        matcher = self._matchers.get(key)
        if matcher is None:
            matcher = Matcher(specs, timeout_ms=self.regex_timeout_ms)
            self._matchers[key] = matcher
        notes = [g for g in self._file_notes if path_matches(path, g.related_files)]
        result = (matcher, notes)
        if len(self._per_path) > 10_000:
            self._per_path.clear()
        self._per_path[path] = result
        return result

    def invalid_patterns(self, path: str) -> dict[str, str]:
        return self._for_path(path)[0].invalid

    def scan(self, path: str, lines: Sequence[str], *, size_bytes: int | None = None) -> ScanResult:
        """Every hit of every visible gotcha in the document at workspace-relative `path`."""
        result = ScanResult()
        # `document`, not `text`: the loops below name lines too, and reusing one name made
        # the annotation search see the last anchored line instead of the document.
        document = "\n".join(lines)
        if size_bytes is None:
            size_bytes = len(document)
        if size_bytes > self.max_file_bytes:
            result.skipped = f"larger than gotchas.max_file_bytes ({self.max_file_bytes} bytes)"
            return result
        if lines and any("\x00" in line for line in lines[:200]):
            result.skipped = "binary file"
            return result
        matcher, notes = self._for_path(path)
        budget: dict[str, float] = {}
        hits = result.hits
        match_line = matcher.match_line
        numbers: Iterable[int] = range(len(lines))
        # A file seen before (an edit) is cheapest line by line from the line cache; a new one
        # in one pass over the whole text. A sample of lines tells which this is.
        if len(lines) > 200 and not matcher.mostly_cached(lines[:: max(1, len(lines) // 50)]):
            starts = list(accumulate((len(line) + 1 for line in lines[:-1]), initial=0))
            candidates = matcher.candidate_lines(document, starts)
            if candidates is not None:
                numbers = candidates
        for number in numbers:
            for match in match_line(lines[number], budget, result.slow):
                hits.append(Hit(match.gotcha_id, number, match.start, match.end, "pattern"))
        anchored = set()
        line_hashes: dict[str, list[int]] | None = None
        for gotcha_id, anchor in self.anchors_by_path.get(path, ()):
            anchored.add(gotcha_id)
            row, stale = anchor.line, False
            current = lines[row] if row < len(lines) else None
            if anchor.content_hash and (
                current is None or line_hash(current) != anchor.content_hash
            ):
                if line_hashes is None:
                    line_hashes = {}
                    for index, line in enumerate(lines):
                        line_hashes.setdefault(line_hash(line), []).append(index)
                moved = line_hashes.get(anchor.content_hash)
                if moved:
                    row = min(moved, key=lambda candidate: abs(candidate - anchor.line))
                else:
                    stale = True
                    row = min(row, max(0, len(lines) - 1))
            anchored_line = lines[row] if row < len(lines) else ""
            start = len(anchored_line) - len(anchored_line.lstrip())
            end = max(start, len(anchored_line.rstrip()))
            hits.append(Hit(gotcha_id, row, start, end, "anchor", stale))
        for gotcha in notes:
            if gotcha.id in anchored:
                continue
            first = lines[0] if lines else ""
            hits.append(Hit(gotcha.id, 0, 0, len(first.rstrip()), "file"))
        result.annotations = find_annotations(path, lines, document)
        for annotation in result.annotations:
            hits.append(
                Hit(annotation.id, annotation.line, annotation.start, annotation.end, "annotation")
            )
        result.slow = list({s.gotcha_id: s for s in result.slow}.values())
        return result

    def scan_file(self, root: Path, path: str) -> ScanResult:
        """Scan a file on disk (binary files and files over the size cap are skipped)."""
        full = root / path
        try:
            size = full.stat().st_size
            if size > self.max_file_bytes:
                return ScanResult(
                    skipped=f"larger than gotchas.max_file_bytes ({self.max_file_bytes} bytes)"
                )
            data = full.read_bytes()
        except OSError as exc:
            return ScanResult(skipped=f"cannot read: {exc}")
        if looks_binary(data):
            return ScanResult(skipped="binary file")
        return self.scan(path, data.decode("utf-8", errors="replace").splitlines(), size_bytes=size)


def build_index(
    gotchas: Sequence[Gotcha],
    *,
    now: float,
    decay_days: float,
    regex_timeout_ms: float,
    max_file_bytes: int,
    revision: int = 0,
) -> GotchaIndex:
    return GotchaIndex(
        gotchas,
        now=now,
        decay_days=decay_days,
        regex_timeout_ms=regex_timeout_ms,
        max_file_bytes=max_file_bytes,
        revision=revision,
    )
