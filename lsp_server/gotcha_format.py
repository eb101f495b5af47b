"""How a gotcha hit becomes a diagnostic, as plain JSON: no lsprotocol, no pygls.

Shared by the server's gotcha provider (lsp_server/features/gotchas.py) and the stdio front's
early diagnostics (lsp_server/early.py), which publishes the first squiggles while pygls and
lsprotocol still load: both must say exactly the same (severity, message, code, range in the
client's position encoding), and tests/lsp/test_early_diagnostics.py compares them.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from memory_core import clock
from memory_core.config import Settings
from memory_core.gotchas import records, team
from memory_core.gotchas.records import Gotcha
from memory_core.gotchas.scan import GotchaIndex, Hit, ScanResult, annotation_gotcha, build_index
from memory_core.store import Store

SOURCE = "engram"
TEAM_FILE_CODE = "team-gotchas"
SLOW_PATTERN_CODE = "slow-pattern"

# LSP DiagnosticSeverity values.
ERROR, WARNING, INFORMATION, HINT = 1, 2, 3, 4
SEVERITY = {"critical": ERROR, "high": WARNING, "medium": INFORMATION, "low": HINT}


def split_lines(source: str) -> list[str]:
    """LSP lines: split on \\n, \\r\\n and a lone \\r (old Mac files), without the line ends.

    The client counts a lone \\r as a line end too, so splitting on \\n alone would put every
    squiggle after one on the wrong line.
    """
    if "\r" in source:
        source = source.replace("\r\n", "\n").replace("\r", "\n")
    return source.split("\n")


def severity(gotcha: Gotcha) -> int:
    """Confirmed gotchas at their severity; candidates quietly, until a person confirms them."""
    if gotcha.status == "candidate":
        return INFORMATION if gotcha.severity in ("critical", "high") else HINT
    return SEVERITY.get(gotcha.severity, INFORMATION)


def message(gotcha: Gotcha, hit: Hit) -> str:
    """The short title (what the Problems panel and the squiggle's first line show); the
    hover adds the rest (workaround, history, provenance) without repeating it."""
    suffix = " (the code changed since it was recorded)" if hit.stale else ""
    return f"{gotcha.title}{suffix}"


def slow_message(gotcha_id: str, pattern: str, timeout_ms: object) -> str:
    return (
        f"The code pattern of gotcha {gotcha_id} ({pattern!r}) took longer than "
        f"{timeout_ms} ms in this file and was stopped; "
        "simplify it or raise gotchas.regex_timeout_ms."
    )


def units(text: str, encoding: str) -> int:
    """The length of `text` in the client's position units (pygls' PositionCodec: utf-16
    code units unless utf-8 or utf-32 was negotiated)."""
    if text.isascii():
        return len(text)
    if encoding == "utf-8":
        return len(text.encode("utf-8"))
    if encoding == "utf-32":
        return len(text)
    return len(text) + sum(1 for char in text if ord(char) > 0xFFFF)


def hit_range(lines: list[str], hit: Hit, encoding: str) -> dict[str, Any]:
    text = lines[hit.line] if hit.line < len(lines) else ""
    return {
        "start": {"line": hit.line, "character": units(text[: hit.start], encoding)},
        "end": {"line": hit.line, "character": units(text[: hit.end], encoding)},
    }


def gotcha_for_hit(index: GotchaIndex, result: ScanResult, path: str, hit: Hit) -> Gotcha | None:
    """The gotcha a hit shows, None when it is hidden."""
    if hit.kind == "annotation":
        for annotation in result.annotations:
            if annotation.id == hit.gotcha_id:
                if hit.gotcha_id in index.by_id:
                    # Resolved or snoozed in the store: hidden until the comment changes.
                    return index.visible.get(hit.gotcha_id)
                return annotation_gotcha(path, annotation, clock.now())
        return None
    return index.visible.get(hit.gotcha_id)


def hit_diagnostic(gotcha: Gotcha, hit: Hit, lines: list[str], encoding: str) -> dict[str, Any]:
    """The diagnostic of one hit, as the JSON the server sends."""
    return {
        "range": hit_range(lines, hit, encoding),
        "message": message(gotcha, hit),
        "severity": severity(gotcha),
        "code": gotcha.id,
        "source": SOURCE,
        "data": {"gotcha_id": gotcha.id, "status": gotcha.status, "kind": hit.kind},
    }


def slow_diagnostic(gotcha_id: str, pattern: str, timeout_ms: object) -> dict[str, Any]:
    return {
        "range": {"start": {"line": 0, "character": 0}, "end": {"line": 0, "character": 0}},
        "message": slow_message(gotcha_id, pattern, timeout_ms),
        "severity": WARNING,
        "code": SLOW_PATTERN_CODE,
        "source": SOURCE,
    }


def document_diagnostics(
    index: GotchaIndex,
    path: str,
    lines: list[str],
    encoding: str,
    timeout_ms: object,
) -> list[dict[str, Any]]:
    """Every gotcha diagnostic of a document at workspace-relative `path` (not the team file's
    own problems), in the order the server gives them."""
    result = index.scan(path, lines)
    found = []
    for hit in result.hits:
        gotcha = gotcha_for_hit(index, result, path, hit)
        if gotcha is not None:
            found.append(hit_diagnostic(gotcha, hit, lines, encoding))
    for slow in result.slow:
        found.append(slow_diagnostic(slow.gotcha_id, slow.pattern, timeout_ms))
    return found


def index_key(store: Store, root: Path, settings: Settings) -> tuple[object, ...]:
    """What a folder's gotcha index depends on: the gotcha revision (bumped by every change,
    from any process), the team file's state and the settings the index is built with."""
    try:
        stat = team.team_path(root).stat()
        team_key: object = (stat.st_mtime_ns, stat.st_size)
    except OSError:
        team_key = None
    return (
        records.revision(store),
        team_key,
        settings["gotchas.candidate_decay_days"],
        settings["gotchas.regex_timeout_ms"],
        settings["gotchas.max_file_bytes"],
    )


def build_folder_index(
    store: Store, settings: Settings, key: tuple[object, ...], now: float
) -> GotchaIndex:
    # Resolved ones too: the index must know an annotation was resolved to hide it.
    found = records.list_gotchas(store, include_resolved=True)
    return build_index(
        found,
        now=now,
        decay_days=float(settings["gotchas.candidate_decay_days"]),
        regex_timeout_ms=float(settings["gotchas.regex_timeout_ms"]),
        max_file_bytes=int(settings["gotchas.max_file_bytes"]),
        revision=int(key[0]),  # type: ignore[call-overload]
    )
