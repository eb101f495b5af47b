"""How a gotcha becomes the diagnostic an editor shows (lsp_server/gotcha_format.py): how loud,
where in the client's position units, what it says, and when a folder's index must be rebuilt.

The same JSON goes out early from the stdio front and later from the server
(test_early_diagnostics.py compares the two); here each rule is checked on its own edge.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from lsp_server import gotcha_format
from memory_core import config, gotchas
from memory_core.gotchas import records, team
from memory_core.gotchas.scan import annotation_gotcha, find_annotations
from memory_core.store import Store
from tests.lsp.conftest import make_project


@pytest.fixture
def store(tmp_path: Path) -> Iterator[Store]:
    with Store.init(make_project(tmp_path / "ws")) as opened:
        yield opened


def _diagnostics(
    store: Store, source: str, encoding: str = "utf-16", path: str = "a.py", **settings: object
) -> list[dict[str, object]]:
    folder_settings = config.load(store.root)
    for key, value in settings.items():
        folder_settings.values[f"gotchas.{key}"] = value
    key = gotcha_format.index_key(store, store.root, folder_settings)
    index = gotcha_format.build_folder_index(store, folder_settings, key, 1e10)
    return gotcha_format.document_diagnostics(
        index,
        path,
        gotcha_format.split_lines(source),
        encoding,
        folder_settings["gotchas.regex_timeout_ms"],
    )


@pytest.mark.parametrize(
    ("encoding", "start", "end"),
    [("utf-16", 6, 11), ("utf-8", 9, 14), ("utf-32", 5, 10), ("utf-7", 6, 11)],
)
def test_a_squiggle_after_wide_characters_is_placed_in_the_clients_units(
    store: Store, encoding: str, start: int, end: int
) -> None:
    gotchas.add(store, "eval is unsafe", pattern="eval(", pattern_kind="literal")
    # "é" is 1 unit in UTF-16 and UTF-32, 2 bytes in UTF-8; "😀" 2, 1 and 4.
    [squiggle] = _diagnostics(store, "é😀 x eval(y)\n", encoding)
    assert squiggle["range"] == {
        "start": {"line": 0, "character": start},
        "end": {"line": 0, "character": end},
    }


def test_a_squiggle_on_ascii_text_counts_characters_in_every_encoding(store: Store) -> None:
    gotchas.add(store, "eval is unsafe", pattern="eval(", pattern_kind="literal")
    for encoding in ("utf-8", "utf-16", "utf-32"):
        [squiggle] = _diagnostics(store, "\n\n  eval(y)", encoding)
        assert squiggle["range"]["start"] == {"line": 2, "character": 2}


@pytest.mark.parametrize(
    ("severity", "status", "expected"),
    [
        ("critical", "confirmed", 1),
        ("high", "confirmed", 2),
        ("medium", "confirmed", 3),
        ("low", "confirmed", 4),
        ("critical", "candidate", 3),
        ("high", "candidate", 3),
        ("medium", "candidate", 4),
        ("low", "candidate", 4),
    ],
)
def test_confirmed_gotchas_show_at_their_severity_and_candidates_quietly(
    store: Store, severity: str, status: str, expected: int
) -> None:
    made = gotchas.add(
        store, "eval", pattern="eval(", pattern_kind="literal", severity=severity, status=status
    )
    [squiggle] = _diagnostics(store, "eval(x)\n")
    assert squiggle["severity"] == expected
    assert squiggle["code"] == made.id and squiggle["source"] == "engram"
    assert squiggle["data"] == {"gotcha_id": made.id, "status": status, "kind": "pattern"}
    assert squiggle["message"] == "eval"


def test_a_severity_it_does_not_know_shows_as_information(store: Store) -> None:
    made = gotchas.add(store, "eval", pattern="eval(", pattern_kind="literal")
    assert gotcha_format.severity(records.get(store, made.id)) == 3
    odd = records.get(store, made.id)
    object.__setattr__(odd, "severity", "blocker")
    assert gotcha_format.severity(odd) == gotcha_format.INFORMATION


def test_a_gotcha_comment_squiggles_its_line_until_it_is_resolved(store: Store) -> None:
    source = "x = 1  # gotcha(high): the cache never expires\n"
    [squiggle] = _diagnostics(store, source)
    assert squiggle["message"] == "the cache never expires"
    assert squiggle["severity"] == 2
    assert squiggle["data"]["kind"] == "annotation"  # type: ignore[index]
    assert squiggle["range"]["start"] == {"line": 0, "character": 7}  # type: ignore[index]
    # Resolved in the store: hidden until the comment changes.
    lines = gotcha_format.split_lines(source)
    found = [annotation_gotcha("a.py", a, 1e10) for a in find_annotations("a.py", lines, source)]
    records.sync_annotations(store, "a.py", found)
    records.resolve(store, str(squiggle["code"]))
    assert _diagnostics(store, source) == []
    assert len(_diagnostics(store, source.replace("never", "never ever"))) == 1


def test_a_pattern_slower_than_the_limit_is_reported_once_at_the_top(store: Store) -> None:
    # Catastrophic on runs of 'x', which the write-time probes do not try.
    made = gotchas.add(store, "slow", pattern=r"(x|xx)+\d", pattern_kind="regex")
    found = _diagnostics(store, ("x" * 40 + " y\n") * 50, regex_timeout_ms=30)
    slow = [d for d in found if d["code"] == gotcha_format.SLOW_PATTERN_CODE]
    assert slow == [
        {
            "range": {"start": {"line": 0, "character": 0}, "end": {"line": 0, "character": 0}},
            "message": f"The code pattern of gotcha {made.id} ('(x|xx)+\\\\d') took longer "
            "than 30 ms in this file and was stopped; "
            "simplify it or raise gotchas.regex_timeout_ms.",
            "severity": 2,
            "code": "slow-pattern",
            "source": "engram",
        }
    ]


def test_a_file_over_the_size_limit_is_not_scanned(store: Store) -> None:
    gotchas.add(store, "eval", pattern="eval(", pattern_kind="literal")
    source = "eval(x)\n" + "#" * 92
    assert len(_diagnostics(store, source, max_file_bytes=100)) == 1
    assert _diagnostics(store, source + "#", max_file_bytes=100) == []


def test_lines_end_at_lf_crlf_and_a_lone_cr(store: Store) -> None:
    assert gotcha_format.split_lines("a\r\nb\rc\nd") == ["a", "b", "c", "d"]
    assert gotcha_format.split_lines("a\n\r\n") == ["a", "", ""]
    assert gotcha_format.split_lines("") == [""]


def test_the_index_key_changes_with_what_the_index_is_built_from(store: Store) -> None:
    root = store.root
    settings = config.load(root)
    first = gotcha_format.index_key(store, root, settings)
    assert first[1] is None  # no team file
    assert gotcha_format.index_key(store, root, settings) == first
    gotchas.add(store, "eval", pattern="eval(", pattern_kind="literal")
    added = gotcha_format.index_key(store, root, settings)
    assert added[0] != first[0]
    team.team_path(root).parent.mkdir(parents=True, exist_ok=True)
    team.team_path(root).write_text("# team gotchas\n", encoding="utf-8")
    with_team = gotcha_format.index_key(store, root, settings)
    stat = team.team_path(root).stat()
    assert with_team[1] == (stat.st_mtime_ns, stat.st_size)
    for name, value in (
        ("candidate_decay_days", 3),
        ("regex_timeout_ms", 7),
        ("max_file_bytes", 99),
    ):
        changed = config.load(root)
        changed.values[f"gotchas.{name}"] = value
        assert gotcha_format.index_key(store, root, changed) != with_team, name


@pytest.mark.parametrize(
    ("before", "utf16_column"),
    [("\uffff", 1), ("\U00010000", 2), ("\ud7ff", 1), ("\U0010ffff", 2)],
    ids=["last of the BMP", "first astral", "below the surrogates", "last astral"],
)
def test_utf_16_counts_two_units_exactly_from_the_first_character_past_the_bmp(
    store: Store, before: str, utf16_column: int
) -> None:
    gotchas.add(store, "eval is unsafe", pattern="eval(", pattern_kind="literal")
    [squiggle] = _diagnostics(store, f"{before}eval(y)\n", "utf-16")
    assert squiggle["range"]["start"]["character"] == utf16_column  # type: ignore[index]


def test_a_gotcha_anchored_past_the_end_of_a_shorter_document_still_shows(store: Store) -> None:
    """An anchor without a content hash (written by hand, or by an old engram) on a line the
    document no longer has: the squiggle sits on that line, empty, and nothing fails."""
    anchored = gotchas.add(
        store, "was here", anchors=[records.Anchor("a.py", 10, 10, content_hash=None)]
    )
    [squiggle] = _diagnostics(store, "one\ntwo\n")
    assert squiggle["code"] == anchored.id
    assert squiggle["range"] == {
        "start": {"line": 10, "character": 0},
        "end": {"line": 10, "character": 0},
    }
