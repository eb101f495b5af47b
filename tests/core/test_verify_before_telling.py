"""What engram tells the next agent about code is checked against the workspace as it is now:
a memory, gotcha, decision or correction whose cited code changed or vanished is never told as
current (it carries a `[needs checking: ...]` mark); an unchanged or merely moved one is told
as it was."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from memory_core import memory, sessions, verify
from memory_core.agents import context
from memory_core.gotchas.context import context_for_task
from memory_core.gotchas.records import Anchor, add
from memory_core.store import Store

NOW = 1_800_000_000.0
DECISION = "The retry limit is 3: the payment provider bans clients that retry more"


def _section(text: str, title: str) -> str:
    return text.split(f"## {title}")[1].split("\n## ")[0] if f"## {title}" in text else ""


def _limit_decision(store: Store) -> str:
    (store.root / "config.py").write_text("TIMEOUT = 10\nRETRY_LIMIT = 3\n", encoding="utf-8")
    entry = memory.add(
        store, DECISION, type="decision", pinned=True, file="config.py", line=2, now=NOW
    )
    return str(entry["id"])


def _told(store: Store) -> str:
    return _section(context.session_start_text(store, now=NOW), "Decisions and knowledge to keep")


def test_an_unchanged_citation_is_told_as_it_is(store: Store) -> None:
    _limit_decision(store)
    kept = _told(store)
    assert f"decision: {DECISION}" in kept
    assert "needs checking" not in kept


def test_a_decision_whose_cited_line_changed_is_never_told_as_current(store: Store) -> None:
    _limit_decision(store)
    (store.root / "config.py").write_text("TIMEOUT = 10\nRETRY_LIMIT = 5\n", encoding="utf-8")
    kept = _told(store)
    line = next(item for item in kept.splitlines() if DECISION in item)
    assert "[needs checking: the code it cites (config.py:2) changed since it was recorded]" in line


def test_moved_code_is_still_current(store: Store) -> None:
    _limit_decision(store)
    (store.root / "config.py").write_text(
        "# settings\n\nTIMEOUT = 10\n    RETRY_LIMIT = 3\n", encoding="utf-8"
    )
    kept = _told(store)
    assert f"decision: {DECISION}" in kept and "needs checking" not in kept


def test_a_decision_citing_a_deleted_file_is_marked_gone(store: Store) -> None:
    _limit_decision(store)
    (store.root / "config.py").unlink()
    kept = _told(store)
    line = next(item for item in kept.splitlines() if DECISION in item)
    assert "[needs checking: it cites config.py, which no longer exists]" in line


def test_stale_memories_come_after_current_ones(store: Store) -> None:
    stale_id = _limit_decision(store)
    (store.root / "config.py").write_text("RETRY_LIMIT = 5\n", encoding="utf-8")
    memory.add(store, "Use uv, not pip, in this repository", type="decision", now=NOW)
    kept = _told(store)
    assert kept.index("Use uv") < kept.index(DECISION)
    assert verify.memory_checks(store, [stale_id])[stale_id].state == "changed"


def test_a_gotcha_whose_anchored_code_changed_is_marked(store: Store) -> None:
    (store.root / "db.py").write_text("def connect():\n    return open_pool(size=1)\n")
    gotcha = add(
        store,
        "The pool of size 1 deadlocks under the test runner",
        related_files=["db.py"],
        anchors=[Anchor("db.py", 1, 1, None, "    return open_pool(size=1)")],
    )
    before = context_for_task(store, "change the pool", ["db.py"])
    assert gotcha.id in before and "needs checking" not in before
    (store.root / "db.py").write_text("def connect():\n    return open_pool(size=8)\n")
    after = context_for_task(store, "change the pool", ["db.py"])
    title = next(line for line in after.splitlines() if gotcha.id in line)
    assert "[needs checking: the code it cites (db.py:2) changed since it was recorded]" in title


def test_a_correction_naming_a_file_that_is_gone_is_marked(store: Store) -> None:
    from memory_core.agents.transcripts import ingest_file
    from tests.agents_fixtures import Transcript, text, tool_use

    (store.root / "src").mkdir()
    (store.root / "src" / "legacy_auth.py").write_text("x = 1\n")
    t = Transcript("S-old", store.root)
    t.prompt("No, don't touch src/legacy_auth.py: the bug is in the cookie.")
    t.response([tool_use("toolu_r", "Read", file_path=str(store.root / "src/legacy_auth.py"))])
    t.tool_result("toolu_r", "x = 1")
    t.response([text("Understood.")])
    ingest_file(store, t.save(store.root / "old.jsonl"))
    corrections = "User corrections (do not repeat these mistakes)"
    told = context.session_start_text(store, current_session="next", now=NOW)
    line = next(i for i in _section(told, corrections).splitlines() if "legacy_auth" in i)
    assert "needs checking" not in line
    (store.root / "src" / "legacy_auth.py").unlink()
    told = context.session_start_text(store, current_session="next", now=NOW)
    line = next(i for i in _section(told, corrections).splitlines() if "legacy_auth" in i)
    assert "[needs checking: src/legacy_auth.py does not exist now]" in line


def test_a_summary_decision_naming_a_deleted_file_is_marked(store: Store) -> None:
    (store.root / "schema.sql").write_text("create table t (id int);\n")
    sessions.start(store, session_id="S-1", agent="claude-code", now=NOW - 100)
    sessions.record_turn(
        store, "S-1", user_message="design the schema", assistant_response="done",
        started_at=NOW - 99, ended_at=NOW - 98,
    )  # fmt: skip
    sessions.set_summary(store, "S-1", decisions=["Keep every table in app/schema.sql"])
    told = context.session_start_text(store, current_session="next", now=NOW)
    assert "Decided: Keep every table in app/schema.sql [needs checking:" in told


def test_paths_in_prose_are_found_and_versions_are_not() -> None:
    assert verify.named_paths("see src/app/main.py and ./config/db.yml, e.g. v1.2.3") == [
        "src/app/main.py",
        "config/db.yml",
    ]
    assert verify.named_paths("we use Node.js 20 and example.com") == []
    assert verify.named_paths("don't touch app.js or server/index.ts") == [
        "app.js",
        "server/index.ts",
    ]


def test_search_results_say_what_became_of_their_code(store: Store) -> None:
    memory_id = _limit_decision(store)
    results = verify.annotate(store, [{"id": memory_id, "kind": "memory", "content": DECISION}])
    assert results[0]["citation"] == "unchanged" and "needs_checking" not in results[0]
    (store.root / "config.py").write_text("RETRY_LIMIT = 5\n", encoding="utf-8")
    results = verify.annotate(store, [{"id": memory_id, "kind": "memory", "content": DECISION}])
    assert results[0]["citation"] == "changed"
    assert "config.py:2" in results[0]["needs_checking"]


def test_the_session_start_hook_tells_a_stale_decision_as_needing_checking(
    cli: Any, tmp_path: Path
) -> None:
    """Through the real `engram hook claude-code SessionStart` process: unchanged, the decision
    is told as it is (the negative control); after its line changed, with the mark."""
    import json
    import subprocess

    from tests.agents_fixtures import hook_payload

    repo = tmp_path / "repo"
    repo.mkdir()
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    (repo / "config.py").write_text("TIMEOUT = 10\nRETRY_LIMIT = 3\n", encoding="utf-8")
    added = cli(
        "memory", "add", DECISION, "--type", "decision", "--file", "config.py", "--line", "2",
        cwd=repo,
    )  # fmt: skip
    assert added.code == 0, added.stderr

    def told() -> str:
        start = cli(
            "hook", "claude-code", "SessionStart", cwd=repo,
            stdin=hook_payload("SessionStart", "S-new", repo, source="startup"),
        )  # fmt: skip
        assert start.code == 0
        return str(json.loads(start.stdout)["hookSpecificOutput"]["additionalContext"])

    before = told()
    assert f"decision: {DECISION}" in before and "needs checking" not in before
    (repo / "config.py").write_text("TIMEOUT = 10\nRETRY_LIMIT = 5\n", encoding="utf-8")
    after = told()
    line = next(item for item in after.splitlines() if DECISION in item)
    assert "[needs checking: the code it cites (config.py:2) changed since it was recorded]" in line


async def test_mcp_memory_search_says_when_the_cited_code_changed(store: Store) -> None:
    import json
    import sys

    from mcp import Client
    from mcp.client.stdio import StdioServerParameters

    memory_id = _limit_decision(store)
    server = StdioServerParameters(
        command=sys.executable,
        args=["-m", "memory_core", "--workspace", str(store.root), "mcp"],
        cwd=str(store.root),
    )

    async def search() -> dict[str, Any]:
        async with Client(server) as client:
            result = await client.call_tool("memory_search", {"query": "retry limit"})
            assert not result.is_error
            data = result.structured_content or json.loads(result.content[0].text)
            return next(r for r in data["results"] if r["id"] == memory_id)

    found = await search()
    assert found["citation"] == "unchanged" and "needs_checking" not in found
    (store.root / "config.py").write_text("RETRY_LIMIT = 5\n", encoding="utf-8")
    found = await search()
    assert found["citation"] == "changed"
    assert (
        found["needs_checking"] == "the code it cites (config.py:2) changed since it was recorded"
    )
