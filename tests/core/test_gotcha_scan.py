"""Where a gotcha shows in a document, as the editor draws it: which files a glob names, the
exact range of each hit, an anchor found again after lines moved (the nearest copy of its
line), a file-wide note once on line 1, annotations, and what is skipped (binary, too large)."""

from __future__ import annotations

from pathlib import Path

import pytest

from memory_core.gotchas.records import Anchor, Gotcha, line_hash, stable_id
from memory_core.gotchas.scan import (
    Annotation,
    GotchaIndex,
    annotation_gotcha,
    build_index,
    find_annotations,
    looks_binary,
    path_matches,
)

NOW = 1_800_000_000.0


def hits_of(index: GotchaIndex, path: str, lines: list[str]) -> list[tuple[object, ...]]:
    return [
        (h.gotcha_id, h.line, h.start, h.end, h.kind, h.stale) for h in index.scan(path, lines).hits
    ]


@pytest.mark.parametrize(
    ("path", "globs", "matched"),
    [
        ("src/app/models.py", ["*.py"], True),  # no '/': the name, in any folder
        ("src/app/models.py", ["models.py"], True),
        ("src/app/models.py", ["app.py"], False),
        ("src/app/models.py", ["src/*.py"], True),  # '*' crosses folders
        ("lib/app/models.py", ["src/*.py"], False),
        ("src/app/models.py", ["./src/app/models.py"], True),  # "./" is the root
        (".github/workflows/ci.yml", ["./.github/workflows/*.yml"], True),
        ("Xcode/App.swift", ["./Xcode/*.swift"], True),
        ("src/app/models.py", ["**/app/models.py"], True),
        ("app/models.py", ["**/app/models.py"], True),  # "**/" also matches at the root
        ("app/views.py", ["**/app/models.py"], False),
        ("src/app/models.py", ["docs/*", "*.md"], False),
        ("src/app/models.py", ["docs/*", "src/**"], True),  # any of them
        ("src/app/models.py", [], False),
    ],
)
def test_which_files_a_gotchas_globs_name(path: str, globs: list[str], matched: bool) -> None:
    assert path_matches(path, globs) is matched


def test_a_nul_byte_early_in_a_file_makes_it_binary() -> None:
    assert looks_binary(b"abc\x00def") is True
    assert looks_binary(b"a" * 8191 + b"\x00") is True
    assert looks_binary(b"a" * 8192 + b"\x00") is False  # only the start is read
    assert looks_binary("héllo".encode()) is False


def test_an_annotation_is_the_whole_comment_with_its_severity_and_line() -> None:
    lines = [
        "def load():",
        "    cache = {}  # gotcha(CRITICAL): not shared between workers  ",
        "    // gotcha:    ",  # nothing said: not an annotation
        "    /* gotcha(low): closes at the end */",
    ]
    first, last = find_annotations("app/load.py", lines)
    assert first == Annotation(
        id=stable_id("annotation", "app/load.py", "not shared between workers"),
        line=1,
        start=len("    cache = {}  "),
        end=len(lines[1].rstrip()),
        text="not shared between workers",
        severity="critical",
        source_line=lines[1],
    )
    assert (last.line, last.text, last.severity) == (3, "closes at the end", "low")
    # The same words in another file are another gotcha.
    assert find_annotations("other.py", lines)[0].id != first.id
    # A document that never says "gotcha" is skipped whole.
    assert find_annotations("a.py", ["# gotcha: x"], document="nothing here") == []
    assert find_annotations("a.py", ["# GOTCHA: x"], document="# GOTCHA: x")[0].text == "x"


def test_an_annotation_gotcha_is_anchored_to_its_whole_line() -> None:
    [annotation] = find_annotations("a.py", ["x = 1  # gotcha(high): keep x odd"])
    gotcha = annotation_gotcha("a.py", annotation, NOW)
    assert (gotcha.id, gotcha.title, gotcha.description) == (
        annotation.id,
        "keep x odd",
        "keep x odd",
    )
    assert (gotcha.severity, gotcha.source_type, gotcha.status) == (
        "high",
        "annotation",
        "confirmed",
    )
    assert gotcha.created_at == gotcha.updated_at == NOW
    [anchor] = gotcha.anchors
    assert anchor == Anchor(
        "a.py",
        0,
        0,
        line_hash("x = 1  # gotcha(high): keep x odd"),
        "x = 1  # gotcha(high): keep x odd",
    )


def test_a_long_annotation_title_is_cut_with_an_ellipsis() -> None:
    text = "w" * 119 + "xy"
    long = Annotation("G-1", 0, 0, 10, text, "medium", f"# gotcha: {text}")
    title = annotation_gotcha("a.py", long, NOW).title
    assert title == "w" * 119 + "…" and len(title) == 120
    exact = Annotation("G-1", 0, 0, 10, "v" * 120, "medium", "")
    assert annotation_gotcha("a.py", exact, NOW).title == "v" * 120
    # Without its line (an older store), the comment's text stands for it.
    [anchor] = annotation_gotcha("a.py", exact, NOW).anchors
    assert (anchor.content_hash, anchor.text) == (line_hash("v" * 120), "v" * 120)


def test_pattern_hits_in_their_files_at_exact_columns() -> None:
    everywhere = Gotcha(id="G-all", title="t", code_pattern="utcnow(", pattern_kind="literal")
    scoped = Gotcha(
        id="G-py",
        title="t",
        code_pattern=r"eval\(",
        pattern_kind="regex",
        related_files=["*.py"],
    )
    index = GotchaIndex([everywhere, scoped], now=NOW)
    assert len(index) == 2 and index.get("G-py") is scoped and index.get("G-none") is None
    lines = ["a = utcnow()", "b = eval(x)"]
    assert hits_of(index, "src/a.py", lines) == [
        ("G-all", 0, 4, 11, "pattern", False),
        ("G-py", 1, 4, 9, "pattern", False),
    ]
    assert hits_of(index, "src/a.js", lines) == [("G-all", 0, 4, 11, "pattern", False)]
    assert index.invalid_patterns("src/a.py") == {}


def test_an_anchor_moved_to_the_nearest_copy_of_its_line() -> None:
    line = "    retry()"
    gotcha = Gotcha(id="G-a", title="t", anchors=[Anchor("a.py", 5, 5, line_hash(line), line)])
    index = GotchaIndex([gotcha], now=NOW)
    lines = ["x"] * 12
    lines[1] = line  # four lines up
    lines[8] = line  # three lines down: nearer
    assert hits_of(index, "a.py", lines) == [("G-a", 8, 4, 11, "anchor", False)]
    lines[8] = "x"
    assert hits_of(index, "a.py", lines) == [("G-a", 1, 4, 11, "anchor", False)]
    # Gone from the file: stale, where it was.
    lines[1] = "x"
    assert hits_of(index, "a.py", lines) == [("G-a", 5, 0, 1, "anchor", True)]
    # The file got shorter than the anchor: stale on the last line.
    assert hits_of(index, "a.py", ["a", "  bb  "]) == [("G-a", 1, 2, 4, "anchor", True)]
    assert hits_of(index, "a.py", []) == [("G-a", 0, 0, 0, "anchor", True)]
    # Another file's anchors are not this one's.
    assert hits_of(index, "b.py", [line]) == []


def test_an_anchor_without_a_hash_stays_on_its_line() -> None:
    gotcha = Gotcha(id="G-a", title="t", anchors=[Anchor("a.py", 1, 1)])
    index = GotchaIndex([gotcha], now=NOW)
    assert hits_of(index, "a.py", ["one", "\ttwo  ", "three"]) == [
        ("G-a", 1, 1, 4, "anchor", False)
    ]
    # Past the end and nothing to find it by: the range is empty, not an error.
    assert hits_of(index, "a.py", ["one"]) == [("G-a", 1, 0, 0, "anchor", False)]


def test_a_file_note_shows_once_on_line_one_unless_anchored_there() -> None:
    note = Gotcha(id="G-n", title="t", related_files=["*.py"])
    anchored = Gotcha(id="G-m", title="t", related_files=["*.py"], anchors=[Anchor("a.py", 2, 2)])
    # The anchored one first: the notes after it still show.
    index = GotchaIndex([anchored, note], now=NOW)
    lines = ["import os   ", "", "x = 1"]
    assert hits_of(index, "a.py", lines) == [
        ("G-m", 2, 0, 5, "anchor", False),
        ("G-n", 0, 0, 9, "file", False),
    ]
    # In another file both are notes (an empty file: an empty range on line 1).
    assert hits_of(index, "b.py", []) == [
        ("G-m", 0, 0, 0, "file", False),
        ("G-n", 0, 0, 0, "file", False),
    ]
    assert hits_of(index, "b.js", lines) == []


def test_annotations_are_shown_from_the_text_not_the_store() -> None:
    text = "# gotcha: flaky on CI"
    stored = Gotcha(
        id=stable_id("annotation", "a.py", "flaky on CI"),
        title="flaky on CI",
        source_type="annotation",
        code_pattern="flaky",
        related_files=["*.py"],
        anchors=[Anchor("a.py", 0, 0, line_hash(text), text)],
    )
    index = GotchaIndex([stored], now=NOW)
    result = index.scan("a.py", ["x = 1", text])
    assert [(h.gotcha_id, h.line, h.kind) for h in result.hits] == [(stored.id, 1, "annotation")]
    assert [a.text for a in result.annotations] == ["flaky on CI"]
    # Its comment deleted, it shows nowhere.
    assert index.scan("a.py", ["x = 1"]).hits == []


def test_what_is_skipped_and_why(tmp_path: Path) -> None:
    needle = Gotcha(id="G-x", title="t", code_pattern="needle", pattern_kind="literal")
    index = build_index(
        [needle], now=NOW, decay_days=30, regex_timeout_ms=50, max_file_bytes=20, revision=7
    )
    assert index.revision == 7 and index.max_file_bytes == 20 and index.regex_timeout_ms == 50
    at_cap = index.scan("a.txt", ["x" * 13, "needle"])  # 20 characters with the newline
    assert at_cap.skipped is None and [h.line for h in at_cap.hits] == [1]
    over = index.scan("a.txt", ["x" * 14, "needle"])
    assert over.hits == [] and over.skipped == "larger than gotchas.max_file_bytes (20 bytes)"
    assert index.scan("a.txt", ["needle"], size_bytes=21).skipped is not None
    assert index.scan("a.txt", ["needle", "\x00"]).skipped == "binary file"
    # A NUL byte far down a long text file is not a binary file.
    wide = GotchaIndex([needle], now=NOW)
    late = wide.scan("a.txt", ["needle"] + ["x"] * 200 + ["\x00"])
    assert late.skipped is None and [h.line for h in late.hits] == [0]
    (tmp_path / "big.txt").write_text("needle\n" * 5)
    assert index.scan_file(tmp_path, "big.txt").skipped == (
        "larger than gotchas.max_file_bytes (20 bytes)"
    )
    (tmp_path / "ok.txt").write_bytes(b"needle \xff\n")  # not UTF-8: read anyway
    assert [h.start for h in index.scan_file(tmp_path, "ok.txt").hits] == [0]
    missing = index.scan_file(tmp_path, "gone.txt")
    assert missing.skipped is not None and missing.skipped.startswith("cannot read: ")
    (tmp_path / "bin.dat").write_bytes(b"needle\x00")
    assert index.scan_file(tmp_path, "bin.dat").skipped == "binary file"


def test_a_long_new_file_is_scanned_in_one_pass_with_the_same_hits() -> None:
    needle = Gotcha(id="G-x", title="t", code_pattern="needle", pattern_kind="literal")
    lines = [f"line {n}" for n in range(1000)]
    lines[3] = "a needle"
    lines[998] = "needle again needle"
    expected = [
        ("G-x", 3, 2, 8, "pattern", False),
        ("G-x", 998, 0, 6, "pattern", False),
        ("G-x", 998, 13, 19, "pattern", False),
    ]
    index = GotchaIndex([needle], now=NOW)
    assert hits_of(index, "big.txt", lines) == expected
    # Seen again (an edit): line by line from the cache, the same answer.
    assert hits_of(index, "big.txt", lines) == expected


def test_a_long_new_file_with_a_pattern_no_literal_narrows_is_read_line_by_line() -> None:
    secret = Gotcha(id="G-s", title="t", code_pattern=r"(?i)secret\s*=", pattern_kind="regex")
    lines = [f"x{n} = {n}" for n in range(300)]
    lines[250] = "SECRET = load()"
    index = GotchaIndex([secret], now=NOW)
    assert hits_of(index, "conf.py", lines) == [("G-s", 250, 0, 8, "pattern", False)]


def test_learned_gotchas_fade_after_thirty_days_by_default() -> None:
    learned = Gotcha(
        id="G-l",
        title="t",
        code_pattern="x",
        pattern_kind="literal",
        source_type="auto_detected",
        last_seen=NOW - 30.5 * 86400,
    )
    assert len(GotchaIndex([learned], now=NOW)) == 0
    learned.last_seen = NOW - 29.5 * 86400
    assert len(GotchaIndex([learned], now=NOW)) == 1


def test_a_file_on_disk_is_scanned_with_its_own_paths_gotchas(tmp_path: Path) -> None:
    scoped = Gotcha(
        id="G-py",
        title="t",
        code_pattern="eval(",
        pattern_kind="literal",
        related_files=["*.py"],
    )
    index = GotchaIndex([scoped], now=NOW)
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "a.py").write_text("y = eval(x)\n")
    (tmp_path / "src" / "a.js").write_text("y = eval(x)\n")
    assert [(h.gotcha_id, h.start) for h in index.scan_file(tmp_path, "src/a.py").hits] == [
        ("G-py", 4)
    ]
    assert index.scan_file(tmp_path, "src/a.js").hits == []
