"""`verify` on its own: what becomes of a citation (unchanged, moved, changed, gone) and what an
agent is then told, on both sides of each edge: code moved vs changed, a change inside vs just
outside the cited lines, a file there vs deleted, one anchor of a gotcha current vs all stale, a
bare file name a session changed vs one engram never saw."""

from __future__ import annotations

from pathlib import Path

import pytest

from memory_core import memory, verify
from memory_core.evolution import record_change
from memory_core.gotchas.records import Anchor, add
from memory_core.sessions.recording import record_file_modified
from memory_core.store import Store

NOW = 1_800_000_000.0
CONFIG = "TIMEOUT = 10\nRETRY_LIMIT = 3\nBACKOFF = 2\nJITTER = 0.1\nDEBUG = False\n"
LIMIT = "The retry limit is 3: the payment provider bans clients that retry more"


def _write(store: Store, name: str, text: str) -> None:
    path = store.root / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


def _cite(store: Store, line: int = 2, end_line: int | None = None) -> str:
    _write(store, "config.py", CONFIG)
    entry = memory.add(
        store, LIMIT, type="decision", file="config.py", line=line, end_line=end_line, now=NOW
    )
    return str(entry["id"])


def _check(store: Store, memory_id: str) -> verify.Check:
    return verify.memory_checks(store, [memory_id])[memory_id]


# -- one line: unchanged, moved (down and up), changed, gone ------------------------------------


def test_unchanged_lines_are_told_as_they_are(store: Store) -> None:
    found = _check(store, _cite(store))
    assert (found.state, found.current, found.lines) == ("unchanged", True, (2, 2))
    assert verify.mark(LIMIT, found) == LIMIT


def test_code_moved_down_is_current_and_says_where_it_is_now(store: Store) -> None:
    memory_id = _cite(store)
    _write(store, "config.py", "# settings\n\n" + CONFIG)
    found = _check(store, memory_id)
    assert (found.state, found.lines) == ("moved", (4, 4))
    assert verify.mark(LIMIT, found) == LIMIT


def test_code_moved_up_is_current_too(store: Store) -> None:
    memory_id = _cite(store, line=3)
    _write(store, "config.py", "BACKOFF = 2\nJITTER = 0.1\n")
    found = _check(store, memory_id)
    assert (found.state, found.lines) == ("moved", (1, 1))
    assert verify.mark(LIMIT, found) == LIMIT


def test_a_changed_line_is_marked_with_where_it_was(store: Store) -> None:
    memory_id = _cite(store)
    _write(store, "config.py", CONFIG.replace("RETRY_LIMIT = 3", "RETRY_LIMIT = 5"))
    found = _check(store, memory_id)
    assert (found.state, found.current, found.lines) == ("changed", False, (2, 2))
    assert verify.mark(LIMIT, found) == (
        f"{LIMIT} [needs checking: the code it cites (config.py:2) changed since it was recorded]"
    )


def test_a_deleted_file_is_marked_gone(store: Store) -> None:
    memory_id = _cite(store)
    (store.root / "config.py").unlink()
    found = _check(store, memory_id)
    assert (found.state, found.current) == ("gone", False)
    assert verify.mark(LIMIT, found).endswith(
        "[needs checking: it cites config.py, which no longer exists]"
    )


def test_a_file_cut_short_above_the_cited_line_is_changed(store: Store) -> None:
    memory_id = _cite(store, line=4)
    _write(store, "config.py", "TIMEOUT = 10\n")
    assert _check(store, memory_id).state == "changed"


# -- several lines: a change on the last cited line vs just below it -----------------------------


def test_a_change_on_the_last_cited_line_marks_the_citation(store: Store) -> None:
    memory_id = _cite(store, line=2, end_line=4)
    _write(store, "config.py", CONFIG.replace("JITTER = 0.1", "JITTER = 0.5"))
    found = _check(store, memory_id)
    assert found.state == "changed"
    assert found.reason == "the code it cites (config.py:2-4) changed since it was recorded"


def test_a_change_just_below_the_cited_lines_does_not(store: Store) -> None:
    memory_id = _cite(store, line=2, end_line=4)
    _write(store, "config.py", CONFIG.replace("DEBUG = False", "DEBUG = True"))
    assert _check(store, memory_id).state == "unchanged"


# -- a file cited without lines ------------------------------------------------------------------


def test_a_file_cited_without_lines_is_current_while_it_is_in_the_workspace(
    store: Store, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _write(store, "docs/deploy.md", "# Deploy\n")
    entry = memory.add(store, "Deploys go through docs/deploy.md", file="docs/deploy.md", now=NOW)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)  # the workspace, not the process's folder, is what counts
    assert _check(store, str(entry["id"])).state == "unchanged"
    (store.root / "docs/deploy.md").unlink()
    (elsewhere / "docs").mkdir()
    (elsewhere / "docs/deploy.md").write_text("# another project\n", encoding="utf-8")
    found = _check(store, str(entry["id"]))
    assert (found.state, found.reason) == (
        "gone",
        "it cites docs/deploy.md, which no longer exists",
    )


def test_a_line_cited_past_the_end_of_the_file_is_checked_as_the_file(store: Store) -> None:
    """Recorded citing line 9 of a 5-line file, there were no lines to anchor: the memory is
    current while the file is there, and gone once it is deleted."""
    memory_id = _cite(store, line=9)
    assert _check(store, memory_id).state == "unchanged"
    (store.root / "config.py").unlink()
    assert _check(store, memory_id).state == "gone"


def test_memories_citing_no_code_are_not_checked(store: Store) -> None:
    plain = memory.add(store, "We prefer small commits", now=NOW)
    cited = _cite(store)
    found = verify.memory_checks(store, [str(plain["id"]), cited, cited, "no-such-id"])
    assert list(found) == [cited]
    assert verify.memory_checks(store, []) == {}


# -- gotchas: current while any anchor is ---------------------------------------------------------


def _pool_gotcha(store: Store) -> str:
    _write(store, "db.py", "def connect():\n    return open_pool(size=1)\n")
    _write(store, "tests/conftest.py", "POOL = open_pool(size=1)\n")
    gotcha = add(
        store,
        "The pool of size 1 deadlocks under the test runner",
        anchors=[
            Anchor("db.py", 1, 1, None, "    return open_pool(size=1)"),
            Anchor("tests/conftest.py", 0, 0, None, "POOL = open_pool(size=1)"),
        ],
    )
    return gotcha.id


def test_a_gotcha_with_one_anchor_still_current_is_current(store: Store) -> None:
    gotcha_id = _pool_gotcha(store)
    _write(store, "db.py", "def connect():\n    return open_pool(size=8)\n")
    assert verify.gotcha_checks(store, [gotcha_id])[gotcha_id].current


def test_a_gotcha_whose_every_anchor_changed_is_marked(store: Store) -> None:
    gotcha_id = _pool_gotcha(store)
    _write(store, "db.py", "def connect():\n    return open_pool(size=8)\n")
    (store.root / "tests/conftest.py").unlink()
    found = verify.gotcha_checks(store, [gotcha_id])[gotcha_id]
    assert not found.current and found.state in {"changed", "gone"}
    assert verify.gotcha_checks(store, ["some-other-gotcha"]) == {}
    assert verify.gotcha_checks(store, []) == {}


# -- paths named in prose ------------------------------------------------------------------------


def test_a_path_with_a_folder_is_gone_once_deleted(store: Store) -> None:
    text = "Never edit ./config/db.yml by hand"
    _write(store, "config/db.yml", "pool: 1\n")
    assert verify.text_check(store, text) is None
    (store.root / "config/db.yml").unlink()
    found = verify.text_check(store, text)
    assert found is not None
    assert (found.state, found.reason) == ("gone", "config/db.yml does not exist now")


def test_a_bare_name_counts_only_when_a_session_changed_that_file(store: Store) -> None:
    text = "Don't touch auth.py: the bug is in the cookie"
    assert verify.text_check(store, text) is None  # a name engram never saw: another project's
    record_file_modified(store, "S-1", "auth.py", NOW)
    found = verify.text_check(store, text)
    assert found is not None and found.reason == "auth.py does not exist now"
    _write(store, "auth.py", "x = 1\n")
    assert verify.text_check(store, text) is None


def test_a_bare_name_of_a_file_still_in_its_folder_is_current(store: Store) -> None:
    record_file_modified(store, "S-1", "src/auth.py", NOW)
    _write(store, "src/auth.py", "x = 1\n")
    assert verify.text_check(store, "Don't touch auth.py") is None
    (store.root / "src/auth.py").unlink()
    found = verify.text_check(store, "Don't touch auth.py")
    assert found is not None and found.state == "gone"


def test_every_name_in_the_text_is_checked_not_only_the_first(store: Store) -> None:
    record_file_modified(store, "S-1", "src/auth.py", NOW)
    _write(store, "src/auth.py", "x = 1\n")
    found = verify.text_check(store, "auth.py calls lib/old_session.py")
    assert found is not None and found.reason == "lib/old_session.py does not exist now"


def test_a_bare_name_in_the_evolution_record_only_counts_too(store: Store) -> None:
    _write(store, "billing.py", "RATE = 1\n")
    record_change(store, "billing.py", actor="external", after="RATE = 1\n", now=NOW)
    assert verify.text_check(store, "billing.py rounds down") is None
    (store.root / "billing.py").unlink()
    found = verify.text_check(store, "billing.py rounds down")
    assert found is not None and found.reason == "billing.py does not exist now"


def test_words_with_dots_that_are_not_files() -> None:
    text = "Upgrade to v2.3.1 (e.g. via node.js or example.com), then edit src/app.ts and app.ts."
    assert verify.named_paths(text) == ["src/app.ts", "app.ts"]


# -- search results ------------------------------------------------------------------------------


def test_a_result_without_a_kind_is_a_memory_and_is_checked(store: Store) -> None:
    memory_id = _cite(store)
    results = verify.annotate(store, [{"id": memory_id, "content": LIMIT}])
    assert results[0]["citation"] == "unchanged" and "needs_checking" not in results[0]
    _write(store, "config.py", "RETRY_LIMIT = 5\n")
    results = verify.annotate(store, [{"id": memory_id, "content": LIMIT}])
    assert results[0]["citation"] == "changed"
    assert results[0]["needs_checking"] == (
        "the code it cites (config.py:2) changed since it was recorded"
    )


def test_a_result_without_a_kind_naming_a_deleted_path_is_marked(store: Store) -> None:
    plain = memory.add(store, "Keep the schema in app/schema.sql", now=NOW)
    results = verify.annotate(store, [{"id": str(plain["id"]), "content": plain["content"]}])
    assert results[0]["citation"] == "gone"
    assert results[0]["needs_checking"] == "app/schema.sql does not exist now"


def test_results_say_what_became_of_gotchas_and_of_paths_in_text(store: Store) -> None:
    gotcha_id = _pool_gotcha(store)
    plain = memory.add(store, "Keep the schema in app/schema.sql", now=NOW)
    results = verify.annotate(
        store,
        [
            {"id": gotcha_id, "kind": "gotcha", "content": "pool"},
            {"id": str(plain["id"]), "kind": "memory", "content": plain["content"]},
            {"id": "S-1", "kind": "session", "content": "edited app/schema.sql"},
        ],
    )
    assert results[0]["citation"] == "unchanged" and "needs_checking" not in results[0]
    assert results[1]["citation"] == "gone"
    assert results[1]["needs_checking"] == "app/schema.sql does not exist now"
    assert "citation" not in results[2]  # a session is not checked as a memory
