"""`scripts/mutation.sh --stale`: which rows of docs/testing.md's every-module table no longer
score the code as it is, so a table "measured on the final main" can be checked, not trusted."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def mutation() -> ModuleType:
    spec = importlib.util.spec_from_file_location("mutation_script", REPO / "scripts/mutation.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def _last_commit_of(path: str) -> str:
    return subprocess.run(
        ["git", "log", "-1", "--format=%h", "--", path],
        cwd=REPO,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()


def _table(*rows: str) -> str:
    header = "| module | files | tests | score (caught / survived / equivalent)"
    return "\n".join(["intro", header, "|---|", *rows, "", "| other | table | after | (0123456) |"])


def test_a_row_measured_on_the_code_as_it_is_is_current(mutation: ModuleType) -> None:
    tags = _last_commit_of("memory_core/tags.py")
    older = _last_commit_of("memory_core/clock.py")
    why = mutation.stale_modules(
        _table(
            f"| tags | `memory_core/tags.py` | 1 | 100.0 % (11 / 0 / 0), all 11, main ({tags}) |",
            f"| clock | `memory_core/clock.py` | 2 | 90.0 %, 60 of 60, main ({older}) |",
            "| text | `memory_core/text.py` | 2 | no mutants (a list of words) |",
        )
    )
    assert "tags" not in why and "clock" not in why and "text" not in why
    # Every module the table does not name is reported, the table after it is not read.
    assert why["store"] == "no row"
    assert "other" not in why


def test_rows_that_do_not_score_the_code_as_it_is_are_named_with_why(
    mutation: ModuleType,
) -> None:
    first_commit = subprocess.run(
        ["git", "rev-list", "--max-parents=0", "HEAD"],
        cwd=REPO,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()[0][:7]
    tags = _last_commit_of("memory_core/tags.py")
    why = mutation.stale_modules(
        _table(
            f"| store | `memory_core/store.py` | 4 | 97.0 %, 150 of 554, ({first_commit}) |",
            "| errors | `memory_core/errors.py` | 1 | 100.0 % (5 / 0 / 0), 2026-11-27 |",
            f"| tags | `memory_core/tags.py` | 1 | 84.9 % (45 / 8 / 0), main ({tags}) |",
            "| clock | `memory_core/clock.py` | 2 | 100.0 %, main (abcdef0) |",
        )
    )
    assert why["store"] == f"code changed since {first_commit}"
    assert why["errors"] == "no commit recorded"
    assert why["tags"] == f"84.9 % at {tags}"
    assert why["clock"] == "commit abcdef0 unknown here"
