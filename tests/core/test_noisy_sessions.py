"""Precision, not only recall: on noisy sessions built from real-shaped transcripts (rejected
approaches reverted by an edit, `git checkout`, `git restore` or `rm`; retracted hypotheses;
one-off network errors; debug prints; secrets in the environment; files only read; questions,
pasted agent text and logs, an agent's /init template), the context after a compaction and at
the next session holds every key fact and none of what must not be told.

`tests/noisy_sessions.py` holds the scenarios; two of the six (HELD_OUT) were set aside before
the rules for net effect, open items and user rules were written."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from memory_core.agents import digest
from memory_core.agents.failures import covers, still_failing
from tests.noisy_sessions import HELD_OUT, LONG, SCENARIOS, run, run_through_hooks

RULE_SECTIONS = ("Rules the user stated", "User corrections", "Decisions and knowledge to keep")


def _rule_sections(text: str) -> str:
    parts = text.split("\n## ")
    return "\n".join(p for p in parts if p.startswith(RULE_SECTIONS))


@pytest.fixture(scope="module", params=list(SCENARIOS))
def told(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Any:
    folder = tmp_path_factory.mktemp(request.param)
    return run(request.param, folder / "w")


@pytest.mark.parametrize("moment", ["compaction", "next"])
def test_every_key_fact_is_told(told: dict[str, Any], moment: str) -> None:
    text = told[moment]
    assert [fact for fact in told["expected"].facts if fact not in text] == []


@pytest.mark.parametrize("moment", ["compaction", "next"])
def test_nothing_that_must_not_be_told_is(told: dict[str, Any], moment: str) -> None:
    text = told[moment]
    expected = told["expected"]
    assert [item for item in expected.never if item in text] == []
    assert [q for q in expected.not_rules if q in _rule_sections(text)] == []


@pytest.mark.parametrize("moment", ["compaction", "next"])
def test_no_line_is_told_twice(told: dict[str, Any], moment: str) -> None:
    lines = [line for line in told[moment].splitlines() if line.startswith("- ")]
    assert len(lines) == len(set(lines))


def test_reverted_files_are_not_changed(told: dict[str, Any]) -> None:
    expected = told["expected"]
    assert told["changed"] == expected.changed
    assert expected.reverted <= told["touched"]  # touched, but put back
    done = next(line for line in told["next"].splitlines() if line.startswith("- Done: "))
    assert f"changed {len(expected.changed)} file" in done
    assert not any(path in done for path in expected.reverted)


def test_the_summary_lists_reverted_files_as_put_back(told: dict[str, Any]) -> None:
    for path in told["expected"].reverted:
        assert f"- `{path}` (changed, then put back)" in told["summary"]
    if told["expected"].reverted:
        touched, changed = len(told["touched"]), len(told["expected"].changed)
        put_back = touched - changed
        assert (
            f"| files modified | {changed} ({touched} touched, {put_back} put back) |"
            in told["summary"]
        )


def test_metrics_and_the_vault_note_count_what_really_changed(told: dict[str, Any]) -> None:
    """`session metrics` and the note's frontmatter agree with the context: files modified is
    the net count; the files put back count only as touched."""
    changed, touched = len(told["expected"].changed), len(told["touched"])
    assert (told["metrics"]["files_modified"], told["metrics"]["files_touched"]) == (
        changed,
        touched,
    )
    frontmatter = told["note"].split("\n---\n", 1)[0]
    assert f"\nfiles_modified: {changed}\n" in frontmatter
    assert f"\nfiles_touched: {touched}\n" in frontmatter


def test_recall_and_precision_over_all_scenarios(tmp_path: Path) -> None:
    """The figures, the held-out scenarios apart (printed with -s)."""
    figures: dict[str, list[int]] = {}
    for name in SCENARIOS:
        result = run(name, tmp_path / name / "w")
        part = "held_out" if name in HELD_OUT else "training"
        counts = figures.setdefault(part, [0, 0, 0, 0])
        expected = result["expected"]
        for moment in ("compaction", "next"):
            text = result[moment]
            counts[0] += sum(fact in text for fact in expected.facts)
            counts[1] += len(expected.facts)
            counts[2] += sum(item in text for item in expected.never)
            counts[3] += len(expected.never)
    for part, (found, facts, leaked, nevers) in figures.items():
        print(f"{part}: recall {found}/{facts}, told what must not be {leaked}/{nevers}")
        assert found / facts >= 0.95
        assert leaked == 0


# -- long sessions, through Claude Code's hooks -------------------------------------------------


@pytest.fixture(scope="module", params=list(LONG))
def long_told(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Any:
    folder = tmp_path_factory.mktemp(request.param)
    return run_through_hooks(request.param, folder / "w")


def test_a_long_session_through_precompact_and_sessionstart(long_told: dict[str, Any]) -> None:
    """About 70 tool calls; what the real PreCompact and SessionStart (source=compact) hooks
    give the same session, and SessionStart the next one: every key fact, nothing that must not
    be told, no line twice, the files put back not changed, the closed failures not open."""
    expected = long_told["expected"]
    assert long_told["tool_calls"] >= 65
    for moment in ("compaction", "next"):
        text = long_told[moment]
        assert [fact for fact in expected.facts if fact not in text] == [], moment
        assert [item for item in expected.never if item in text] == [], moment
        assert [q for q in expected.not_rules if q in _rule_sections(text)] == [], moment
        lines = [line for line in text.splitlines() if line.startswith("- ")]
        assert len(lines) == len(set(lines)), moment
        done = next(line for line in text.splitlines() if line.startswith("- Done: "))
        assert f"changed {len(expected.changed)} files" in done
        assert not any(path in done for path in expected.reverted)
    assert long_told["changed"] == expected.changed
    assert expected.reverted <= long_told["touched"]
    assert long_told["metrics"]["files_modified"] == len(expected.changed)


def test_the_first_prompt_is_a_task_not_a_correction() -> None:
    """A bug report ("19% instead of 20%") opens a session: nothing the agent did is corrected
    yet. Later in the session the same words are a correction; an opening "No," always is."""
    report = "Invoices show German VAT (19% instead of 20%). Fix it."
    assert not digest.is_correction(report, first=True)
    assert digest.is_correction(report)
    assert digest.is_correction("No, keep the old table.", first=True)


# -- the rules underneath, one by one ----------------------------------------------------------


@pytest.mark.parametrize(
    ("command", "same_run_as"),
    [
        ("pytest -s tests/x.py::t", "pytest tests/x.py::t"),
        ("pytest --tb=short -q tests/x.py", "pytest tests/x.py"),
        ("node --test --test-reporter=spec test/", "node --test test/"),
        ("npx mocha --reporter dot", "npx mocha"),
        ("pytest tests/x.py --no-cov", "pytest tests/x.py --no-cov"),  # runs differently: kept
        ("pytest -x tests/x.py", "pytest -x tests/x.py"),
        ("rm -f build/out.txt", "rm -f build/out.txt"),  # not a test run
    ],
)
def test_a_run_that_only_prints_differently_is_the_same_run(command: str, same_run_as: str) -> None:
    """So that the edit between `pytest -s x` failing and `pytest x` passing is what fixed it
    (a dead end says "what fixed it: editing ...", not "what worked instead: pytest x")."""
    from memory_core.agents.failures import output_key

    assert output_key(command) == same_run_as


@pytest.mark.parametrize(
    ("success", "failed", "closes"),
    [
        ("pytest tests/x.py::t", "pytest -s tests/x.py::t", True),
        ("python -m pytest tests/", "pytest -x -q tests/x.py::t", True),
        ("pytest", "pytest tests/x.py::t --tb=short", True),
        ("pytest tests/y.py", "pytest tests/x.py::t", False),
        ("pytest -k login", "pytest tests/x.py", False),
        ("go test ./...", "go test -run TestBackoff ./internal/limits/", True),
        ("bundle exec rspec spec/user_spec.rb", "rspec spec/user_spec.rb:2 --format doc", True),
        ("npx jest cart.test.js --silent", "npx jest cart.test.js", True),
        ("npm test", "npm test -- --watchAll=false", True),
        ("cargo test parses_hex", "cargo test other", False),
        ("ruff check api", "ruff check api --fix", False),
        ("ls", "ls -l", False),
    ],
)
def test_a_later_run_of_the_same_tests_closes_a_failure(
    success: str, failed: str, closes: bool
) -> None:
    assert covers(success, failed) is closes
    open_after = still_failing([(failed, False, 1.0), (success, True, 2.0)])
    assert (open_after == []) is closes


@pytest.mark.parametrize(
    "prompt",
    [
        "Can you make sure the line count is correct?",
        "Should we always default the email like this?",
        "Here is what you wrote:\n> You must always keep the cart in Redux.\nThanks.",
        "The log says:\n[error] the artifact must be signed before upload\nok",
        "```\nmust never be null\n```",
        "You are an AI agent that brings the power of Gemini directly into the terminal. "
        "The output must be well-formatted Markdown.",
        # Gemini CLI's /init prompt as some chats record it: after the agent's setup text.
        "My setup is complete. I will provide my first command in the next turn.\n"
        "You are an AI agent that brings the power of Gemini directly into the terminal. Your "
        "task is to analyze the current directory.\n\nThe output must be well-formatted Markdown.",
        "\nThis is the Gemini CLI. We are setting up the context for our chat.\n"
        "You must always answer in English.",
    ],
)
def test_questions_pasted_text_and_templates_are_not_rules(prompt: str) -> None:
    assert digest.axioms_in(prompt) == []


def test_a_rule_about_errors_is_not_mistaken_for_a_log_line() -> None:
    assert digest.axioms_in("Error messages must always name the file.") == [
        "Error messages must always name the file."
    ]
    assert digest.axioms_in("ERROR: config must be set") == []
    assert digest.axioms_in("Do not ever push to main.") == ["Do not ever push to main."]
    assert digest.axioms_in("You are the expert here.\nAlways use tabs.") == ["Always use tabs."]
    assert digest.axioms_in("Should we always squash merges") == []


def test_the_users_own_rule_next_to_pasted_text_is_kept() -> None:
    prompt = "Here is the log:\n> ERROR must be set\nFrom now on, never use Redux here."
    assert digest.axioms_in(prompt) == ["From now on, never use Redux here."]
    assert digest.own_words(prompt) == "Here is the log:\nFrom now on, never use Redux here."


def test_a_decision_the_user_stated_reaches_summary_note_and_projecthub(tmp_path: Path) -> None:
    from memory_core import sessions
    from memory_core.mcp_server import projecthub_session
    from memory_core.store import Store

    result = run("ts_app", tmp_path / "w")
    decision = "Decision: prices stay in cents as integers."
    summary = result["summary"]
    decisions = summary.split("## Decisions")[1].split("\n## ")[0]
    assert decision in decisions and "none recorded" not in decisions
    store = Store.open(tmp_path / "w")
    try:
        sid = result["session_id"]
        note = sessions.write_export(store, sid).read_text(encoding="utf-8")
        assert decision in note.split("## Decisions")[1].split("\n## ")[0]
        hub = projecthub_session(store, sessions.get(store, sid))
        assert hub["decisions"] == [decision]
    finally:
        store.close()


def test_an_edit_undone_through_the_hooks_alone_is_not_a_change(cli: Any, tmp_path: Path) -> None:
    """No transcript: the PostToolUse hooks of an edit and of the edit that undoes it."""
    import subprocess

    from memory_core import sessions
    from memory_core.store import Store
    from tests.agents_fixtures import hook_payload

    repo = tmp_path / "repo"
    repo.mkdir()
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    (repo / "app.py").write_text("LIMIT = 3\n")
    (repo / "kept.py").write_text("x = 1\n")
    edits = [("app.py", "LIMIT = 3\n", "LIMIT = 9\n"), ("app.py", "LIMIT = 9\n", "LIMIT = 3\n")]
    edits.append(("kept.py", "x = 1\n", "x = 2\n"))
    for n, (name, before, after) in enumerate(edits):
        (repo / name).write_text(after)
        payload = hook_payload(
            "PostToolUse", "S-hooks", repo,
            tool_name="Edit",
            tool_input={"file_path": str(repo / name), "old_string": before, "new_string": after},
            tool_use_id=f"toolu_edit_{n}",
            tool_response={"filePath": str(repo / name), "originalFile": before,
                           "oldString": before, "newString": after, "structuredPatch": []},
        )  # fmt: skip
        assert cli("hook", "claude-code", "PostToolUse", cwd=repo, stdin=payload).code == 0
    store = Store.open(repo)
    try:
        assert set(sessions.files_modified(store, "S-hooks")) == {"app.py", "kept.py"}
        assert sessions.net_files_changed(store, "S-hooks") == ["kept.py"]
    finally:
        store.close()
    shown = cli("session", "metrics", "S-hooks", cwd=repo)
    assert "files modified:    1 (2 touched, the others put back)" in shown.stdout
    figures = json.loads(cli("session", "metrics", "S-hooks", "--json", cwd=repo).stdout)
    assert (figures["files_modified"], figures["files_touched"]) == (1, 2)


def test_a_resumed_sessions_first_new_prompt_can_correct_what_it_continues(
    tmp_path: Path,
) -> None:
    """`claude --resume` replays the old conversation first: the first new prompt follows it
    and its "instead of" corrects it; a fresh session's first "instead of" reports a bug."""
    from memory_core import memory
    from memory_core.agents.transcripts import ingest_file
    from memory_core.store import Store
    from tests.agents_fixtures import Transcript, text

    store = Store.init(tmp_path / "w")
    try:
        fresh = Transcript("S-fresh", store.root)
        fresh.prompt("The export writes commas instead of semicolons. Fix it.")
        fresh.response([text("Fixed.")], stop_reason="end_turn")
        ingest_file(store, fresh.save(tmp_path / "S-fresh.jsonl"))
        resumed = Transcript("S-resumed", store.root, start=fresh.start)
        resumed.lines = [
            line.replace('"sessionId": "S-fresh"', '"sessionId": "S-resumed"')
            for line in fresh.lines
        ]
        resumed._clock, resumed._uuid, resumed._message = 50_000, 50_000, 900
        resumed.prompt("Use tabs instead of semicolons in the export.")
        resumed.response([text("Done.")], stop_reason="end_turn")
        ingest_file(store, resumed.save(tmp_path / "S-resumed.jsonl"))
        kept = [str(m["content"]) for m in memory.list_memories(store, tag="user-rule")]
        assert kept == ["Use tabs instead of semicolons in the export."]
    finally:
        store.close()
