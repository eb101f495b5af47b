"""The error `key_error` finds in every case of the real tool output corpus, and where it points.

tests/fixtures/tool_output/key_errors.json holds, per case, the line engram names as the error
(the gotcha's title before it is shortened) and the file and line it anchors the gotcha to;
`null` where no tool rule applies and the general rules of `normalize` decide. Each entry was
checked by hand against the case's output: the message is the tool's own line for the error
that stopped it, the location the project's own file and line (not a frame inside jest or
node_modules, not gradle's task name glued to the path).

In-process and fast (no store, no ingest), so it also scores `tool_errors` in mutation runs;
tests/core/test_tool_output_corpus.py runs the same cases through ingest and the context.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from memory_core.gotchas import normalize, tool_errors
from tests.tool_output_corpus import Case, cases

CASES = cases()
EXPECTED = json.loads(
    (
        Path(__file__).resolve().parents[1] / "fixtures" / "tool_output" / "key_errors.json"
    ).read_text(encoding="utf-8")
)


@pytest.fixture(autouse=True)
def _errors_found_afresh() -> None:
    """`key_error` remembers its answers; each test finds its errors afresh (a mutation run
    forks every test from a process that already ran them, and a remembered answer would
    hide a change to the rules)."""
    tool_errors.key_error.cache_clear()


def test_the_table_has_every_case_of_the_corpus() -> None:
    assert sorted(EXPECTED) == sorted(case.key for case in CASES)


@pytest.mark.parametrize("case", CASES, ids=[case.key for case in CASES])
def test_the_key_error_and_its_location_in_real_output(case: Case) -> None:
    expected = EXPECTED[case.key]
    found = tool_errors.key_error(case.output)
    if expected is None:
        # Left to the general rules, which still name the error in the title.
        assert found is None
        title = normalize.title_for(case.output)
        assert all(part in title for part in case.error), title
        return
    assert found is not None
    assert (found.message, found.path, found.line) == (
        expected["message"],
        expected["path"],
        expected["line"],
    )
    # The table agrees with what the case says identifies its error.
    assert all(part in found.message for part in case.error)
