"""The precision set's split and measure: the held-out third is fixed by each file's name alone,
and a changed line is counted once whatever redaction did to the lines around it."""

from __future__ import annotations

import hashlib
import importlib.util
from pathlib import Path
from types import ModuleType

REPO = Path(__file__).resolve().parents[2]


def _script(name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(name, REPO / "scripts" / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


BUILD = _script("build_precision_set")
MEASURE = _script("measure_redaction")


def test_the_split_depends_on_the_name_alone_and_holds_out_about_a_third() -> None:
    names = [f"source-{i}/file-{i}.txt" for i in range(3000)]
    held_out = [name for name in names if BUILD.split_of(name) == "holdout"]
    assert 900 <= len(held_out) <= 1100
    # The rule written in the builder's docstring, computed here apart.
    assert all(hashlib.sha256(name.encode()).digest()[0] % 3 == 0 for name in held_out)
    # A view of a file (`#text`, `#fingerprints`) goes where the file goes.
    assert all(BUILD.split_of(f"{name}#text") == BUILD.split_of(name) for name in names[:300])


def test_changed_lines_are_counted_once_also_when_redaction_joins_lines() -> None:
    before = "keep\nsecret one\nsecret two\nkeep too\n"
    assert MEASURE.changed_lines(before, before) == []
    same_count = "keep\n[REDACTED:secret]\nsecret two\nkeep too\n"
    assert MEASURE.changed_lines(before, same_count) == [("secret one", "[REDACTED:secret]")]
    joined = "keep\n[REDACTED:private-key]\nkeep too\n"
    assert [line for line, _new in MEASURE.changed_lines(before, joined)] == [
        "secret one",
        "secret two",
    ]
