"""The lesson engram learns from the real output of the tools agents run (jest, vitest, mocha,
node --test, pytest, unittest, mypy, ruff, tsc, eslint, go, cargo, rspec, minitest, phpunit,
JUnit under maven and gradle, make), wrapped as the agent saw it: the gotcha title, the dead
end and the session-start context name the real error, whole where it identifies something.

The cases and their held-out third are listed in tests/fixtures/tool_output/manifest.json,
with a second held-out set captured after the rules were written (`second_set`);
`python -m tests.tool_output_corpus` prints the figures for each part."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from memory_core.gotchas import normalize
from tests.tool_output_corpus import Case, cases, lessons

CASES = cases()


def test_the_corpus_covers_every_tool_and_holds_a_third_out() -> None:
    tools = {case.key.split("/")[0] for case in CASES}
    assert tools >= {
        "jest", "vitest", "mocha", "node_test", "pytest", "unittest", "mypy", "ruff", "tsc",
        "eslint", "go_test", "go_build", "cargo_test", "cargo_build", "rspec", "minitest",
        "phpunit", "maven", "gradle", "make", "dotnet_test",
    }  # fmt: skip
    first = [case for case in CASES if not case.second_set and not case.third_set]
    held = sum(case.held_out for case in first)
    assert 0.3 <= held / len(first) <= 0.4
    assert all(case.held_out for case in CASES if case.second_set)
    third = [case for case in CASES if case.third_set]
    assert 0.3 <= sum(case.held_out for case in third) / len(third) <= 0.4


def test_the_third_set_brings_new_tools_and_quotes_dotnet_with_its_source() -> None:
    """No .NET SDK installs here: dotnet test's output is quoted from public issue threads,
    each with where it was published; every other case of the third set was captured here."""
    third = [case for case in CASES if case.third_set]
    assert {c.key.split("/")[0] for c in third} >= {
        "bun_test", "deno_test", "go_vet", "cargo_clippy", "dotnet_test",
    }  # fmt: skip
    for case in third:
        quoted = case.key.startswith("dotnet_test/")
        assert bool(case.source) == quoted, case.key
        if quoted:
            assert case.source.startswith("https://github.com/"), case.key


@pytest.mark.parametrize("case", CASES, ids=[case.key for case in CASES])
def test_title_dead_end_and_context_name_the_real_error(case: Case, tmp_path: Path) -> None:
    workspace = tmp_path / "w"
    (workspace / ".git").mkdir(parents=True)
    told = lessons(case, workspace)
    assert told.names(case.error) == {"title": True, "dead_end": True, "context": True}, (
        told.title,
        told.dead_end,
    )


@pytest.mark.parametrize("case", CASES, ids=[case.key for case in CASES])
def test_a_wrapper_line_is_never_the_lesson(case: Case) -> None:
    title = normalize.title_for(case.output)
    assert not title.startswith(("Exit code", "> ", "$ ", "yarn run", "make: ***", "make["))
    assert "\x1b" not in title


def test_a_long_error_keeps_what_it_names_whole() -> None:
    line = (
        'psycopg2.OperationalError: connection to server at "127.0.0.1", port 5433 failed: '
        'FATAL:  database "engram_test" does not exist'
    )
    for limit in (120, 80, 60):
        short = normalize.shorten(line, limit)
        assert len(short) <= limit
        assert short.endswith('database "engram_test" does not exist')
    assert normalize.shorten("short enough", 120) == "short enough"


def test_a_jest_failure_through_npm_test_is_learned_by_its_typeerror(
    cli: Any, tmp_path: Path
) -> None:
    """Through the real hook process, as Claude Code reports a failing `npm test` three times:
    the gotcha is the TypeError jest printed, not npm's `> shop@1.4.0 test` banner."""
    import json
    import subprocess

    from tests.agents_fixtures import hook_payload

    repo = tmp_path / "repo"
    repo.mkdir()
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    output = next(c for c in CASES if c.key == "jest/npm_test_typeerror").output
    for n in range(3):
        failure = hook_payload(
            "PostToolUseFailure", "S-jest", repo,
            tool_name="Bash", tool_input={"command": "npm test"},
            tool_use_id=f"toolu_npm_{n}", error=output,
        )  # fmt: skip
        assert cli("hook", "claude-code", "PostToolUseFailure", cwd=repo, stdin=failure).code == 0
    listed = cli("gotcha", "list", "--all", "--json", cwd=repo)
    titles = [g["title"] for g in json.loads(listed.stdout)["gotchas"]]
    assert titles == ["TypeError: Cannot read properties of undefined (reading 'reduce')"]
