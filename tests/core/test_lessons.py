"""Dead ends, digests and the session-start context name the error that mattered (from real
pytest output) and the step that actually fixed it."""

from __future__ import annotations

from pathlib import Path

from memory_core import sessions
from memory_core.agents import context, digest, lessons
from memory_core.agents.transcripts import ingest_file
from memory_core.store import Store
from tests.agents_fixtures import Transcript, text, tool_use

CORPUS = Path(__file__).resolve().parents[1] / "fixtures" / "tool_output"
ERROR = "ModuleNotFoundError: No module named 'missing_package_xyz'"


def _session(store: Store, tmp_path: Path) -> None:
    pytest_output = (CORPUS / "pytest_collection_error.txt").read_text(encoding="utf-8")
    t = Transcript("S-fix", store.root)
    t.prompt("Run the tests and fix them")
    for n in (1, 2):
        t.response([tool_use(f"toolu_p{n}", "Bash", command="pytest -q")])
        # How Claude Code hands a failing command to the agent: "Exit code N", then the output.
        t.tool_result(
            f"toolu_p{n}",
            "Exit code 2\n" + pytest_output,
            is_error=True,
            result="Error: Exit code 2\n" + pytest_output,
        )
    t.response([tool_use("toolu_pip", "Bash", command="pip install -e .")])
    t.tool_result(
        "toolu_pip", "Successfully installed app-0.1", result={"stdout": "ok", "stderr": ""}
    )
    t.response([tool_use("toolu_p3", "Bash", command="pytest -q")])
    t.tool_result("toolu_p3", "3 passed in 0.10s", result={"stdout": "3 passed", "stderr": ""})
    t.response([text("The tests pass now.")])
    ingest_file(store, t.save(tmp_path / "fix.jsonl"))


def test_the_dead_end_names_the_error_and_the_step_that_fixed_it(
    store: Store, tmp_path: Path
) -> None:
    _session(store, tmp_path)
    out = context.session_start_text(store, current_session="next")
    line = next(item for item in out.splitlines() if "`pytest -q` failed 2 times" in item)
    assert ERROR in line
    assert "what fixed it: `pip install -e .`" in line
    assert "Exit code" not in line and "=====" not in line


def test_the_digest_names_the_error_not_the_exit_code(store: Store, tmp_path: Path) -> None:
    _session(store, tmp_path)
    pattern = next(
        p
        for p in digest.extract(store, "S-fix")["patterns_observed"]
        if p["kind"] == "repeated_failure"
    )
    assert ERROR in pattern["description"]
    assert "Exit code" not in pattern["description"]


def test_a_command_that_later_succeeded_is_not_open(store: Store, tmp_path: Path) -> None:
    _session(store, tmp_path)
    assert sessions.open_failures(store, "S-fix") == []
    summary = sessions.summary_markdown(store, "S-fix")
    assert "pytest -q" not in summary.split("## Open items")[1].split("##")[0]
    # ... while the failures still count as failures.
    assert sessions.metrics(store, "S-fix")["commands_failed"] == 2


def test_a_command_that_never_worked_has_no_fix(store: Store, tmp_path: Path) -> None:
    t = Transcript("S-stuck", store.root)
    t.prompt("build it")
    for n in (1, 2):
        t.response([tool_use(f"toolu_b{n}", "Bash", command="make")])
        t.tool_result(f"toolu_b{n}", "Exit code 2\nmake: *** No rule", is_error=True)
    t.response([text("I could not build it.")])
    ingest_file(store, t.save(tmp_path / "stuck.jsonl"))
    last = float(store.query_one("SELECT MAX(ts) FROM agent_tool_uses")[0])
    assert lessons.fix_after(store, "S-stuck", "make", last) is None
    assert [f["command"] for f in sessions.open_failures(store, "S-stuck")] == ["make", "make"]


def test_a_decision_the_user_stated_is_kept_as_a_long_term_memory(
    store: Store, tmp_path: Path
) -> None:
    from memory_core import limits, memory
    from memory_core.config import load

    t = Transcript("S-decide", store.root)
    t.start = t.start.replace(year=t.start.year - 1)  # older than the 90-day retention
    t.prompt("We looked at both. OK, we will go with SQLite for the cache. Now wire it in.")
    t.response([text("Wiring SQLite in.")])
    t.prompt("let's look at the failing test")  # a request, not a decision
    t.response([text("Looking.")])
    ingest_file(store, t.save(tmp_path / "decide.jsonl"))
    limits.enforce(store, load(store.root))  # prunes the year-old prompts' text
    # Their keys stay (a second read of the transcript must not count them again); the text goes.
    assert store.query_one("SELECT COUNT(*) FROM agent_prompts WHERE text != ''")[0] == 0
    kept = [m["content"] for m in memory.list_memories(store, type="decision")]
    assert kept == ["OK, we will go with SQLite for the cache."]
    out = context.session_start_text(store, current_session="next")
    assert "decision: OK, we will go with SQLite for the cache." in out
