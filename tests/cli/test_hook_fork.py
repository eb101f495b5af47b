"""A cold hook answers first: a forked worker records after the answer (memory_core/cli/fast_hook.py),
and the events that never tell the agent anything are kept before engram loads
(memory_core/agents/quiet_events.py). docs/resident.md says what "recorded" must mean for what
comes next; these tests hold the cold path to it.

The suite sets ENGRAM_NO_HOOK_FORK=1 (tests/conftest.py); the processes started here drop it.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from memory_core.agents import hooks, quiet_events
from memory_core.agents.payload import CUT_ABOVE_BYTES, canonical_event
from memory_core.agents.quota_hook import CONTEXT_EVENTS, MESSAGE_EVENTS
from memory_core.store import Store
from memory_core.workspace import find_root
from tests.agents_fixtures import hook_payload

HOOK = (
    "import sys\n"
    "from memory_core.cli.entry import main\n"
    "sys.argv = ['engram', *sys.argv[1:]]\n"
    "sys.exit(main())\n"
)


def _cold_env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "ENGRAM_NO_HOOK_FORK"}
    return {**env, "ENGRAM_NO_RESIDENT": "1", **extra}


def _cold_hook(
    agent: str, event: str, payload: str, cwd: Path, **env: str
) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        [sys.executable, "-c", HOOK, "hook", agent, event],
        input=payload.encode(),
        cwd=cwd,
        env=_cold_env(**env),
        capture_output=True,
        timeout=60,
        check=False,
    )


@pytest.fixture
def project(workspace: Path) -> Path:
    (workspace / ".git").mkdir()  # a project: where a hook records
    (workspace / "app.py").write_text("print('hello')\n")
    Store.open_or_init(workspace).close()
    return workspace


def _started(root: Path, session: str) -> None:
    steps: list[tuple[str, dict[str, Any]]] = [
        ("SessionStart", {"source": "startup"}),
        ("UserPromptSubmit", {"prompt": "fix the login test", "prompt_id": "p1"}),
    ]
    for event, extra in steps:
        assert (
            hooks.handle("claude-code", event, hook_payload(event, session, root, **extra))[0] == 0
        )


def _digests(root: Path, session: str) -> list[str]:
    # Store.open waits for a worker still recording (the after-answer lock), as every reader does.
    with Store.open(root) as store:
        rows = store.query("SELECT trigger FROM digests WHERE session_id = ?", (session,))
    return [row["trigger"] for row in rows]


def _spooled(root: Path) -> list[str]:
    spool = root / ".engram" / "spool"
    return sorted(os.listdir(spool)) if spool.is_dir() else []


def test_a_cold_compaction_hook_answers_at_once_and_the_next_reader_finds_it_recorded(
    project: Path,
) -> None:
    _started(project, "s-fork")
    payload = hook_payload("PreCompact", "s-fork", project, trigger="manual")
    done = _cold_hook("claude-code", "PreCompact", payload, project, PYTHONPROFILEIMPORTTIME="1")
    assert done.returncode == 0 and done.stdout == b""
    # Answered before engram's store (and sqlite3) was even loaded: the importtime lines on
    # stderr stop at the answer, when the worker lets go of the agent's stderr.
    before_answer = done.stderr.decode()
    assert "memory_core.agents.quiet_events" in before_answer
    assert "sqlite3" not in before_answer and "memory_core.store" not in before_answer
    # Recorded all the same, as a cold process recording before its exit would have, with
    # nothing left in the spool.
    assert _digests(project, "s-fork") == ["manual"]
    assert [name for name in _spooled(project) if not name.startswith(".")] == []


def test_a_worker_killed_after_its_answer_leaves_the_event_to_the_next_hook(
    project: Path,
) -> None:
    _started(project, "s-killed")
    payload = hook_payload("PreCompact", "s-killed", project, trigger="manual")
    # A worker that kept the event and answered, then died before recording it (killed).
    code = (
        "import os, sys\n"
        "from memory_core.agents import quiet_events\n"
        "kept = quiet_events.keep('claude-code', 'PreCompact', None, sys.stdin.buffer.read())\n"
        "assert kept is not None\n"
        "os._exit(0)\n"
    )
    subprocess.run(
        [sys.executable, "-c", code], input=payload.encode(), cwd=project, check=True, timeout=60
    )
    assert [name.endswith(".claimed") for name in _spooled(project)] == [True]
    assert _digests(project, "s-killed") == []
    # The next hook of any kind folds it in before its own event.
    stop = hook_payload("Stop", "s-killed", project, last_assistant_message="Done.")
    assert hooks.handle("claude-code", "Stop", stop)[0] == 0
    assert "manual" in _digests(project, "s-killed")
    assert _spooled(project) == []


def test_a_cold_hook_that_tells_the_agent_something_tells_it_through_the_fork(
    project: Path,
) -> None:
    from memory_core.gotchas import records

    with Store.open(project) as store:
        records.add(
            store,
            "Login returns 500 when the cookie domain is unset",
            workaround="Set SESSION_COOKIE_DOMAIN.",
            related_files=["app.py"],
        )
    _started(project, "s-context")
    edit = {"file_path": str(project / "app.py"), "old_string": "a", "new_string": "b"}
    payload = hook_payload("PreToolUse", "s-context", project, tool_name="Edit", tool_input=edit)
    done = _cold_hook("claude-code", "PreToolUse", payload, project)
    assert done.returncode == 0, done.stderr
    told = json.loads(done.stdout)["hookSpecificOutput"]["additionalContext"]
    assert "cookie domain is unset" in told
    # The same answer as the hook gives in process (the fork changes when, not what).
    assert json.loads(done.stdout) == json.loads(
        hooks.handle("claude-code", "PreToolUse", payload)[1]
    )


def test_with_the_fork_turned_off_a_cold_hook_records_before_it_exits(project: Path) -> None:
    _started(project, "s-nofork")
    payload = hook_payload("SessionEnd", "s-nofork", project, reason="other")
    done = _cold_hook(
        "claude-code", "SessionEnd", payload, project, ENGRAM_NO_HOOK_FORK="1",
        PYTHONPROFILEIMPORTTIME="1",
    )  # fmt: skip
    assert done.returncode == 0
    assert "memory_core.store" in done.stderr.decode()  # recorded in the agent's own process
    assert "session_end" in _digests(project, "s-nofork")


# -- quiet_events reads what the usual path reads ---------------------------------------------


def test_the_never_telling_events_are_those_the_quota_never_speaks_in() -> None:
    for agent, events in quiet_events.NEVER_TELLING.items():
        for event in events:
            canonical = canonical_event(agent, event)
            assert canonical not in CONTEXT_EVENTS and canonical not in MESSAGE_EVENTS
            assert event in hooks.INSTALLED_EVENTS[agent]
    assert quiet_events.MOST_BYTES <= CUT_ABOVE_BYTES


@pytest.mark.parametrize(
    "text",
    [
        '{"session_id": "s1", "cwd": "/x", "n": [1, 2.5, -3e2, true, false, null]}',
        '  {"caf\\u00e9": "\\ud83d\\ude00", "lone": "\\ud83d", "raw": "caf\u00e9"}\n',
        '{"nan": NaN, "inf": -Infinity, "deep": {"a": [{"b": {}}]}}',
        '{"tab\\t": "line\\nbreak", "dup": 1, "dup": 2}',
    ],
)
def test_a_payload_is_read_as_json_loads_reads_it(text: str) -> None:
    data = text.encode("utf-8", "surrogatepass")
    assert repr(quiet_events._small_object(data)) == repr(json.loads(data))


RECORDED = Path(__file__).resolve().parents[1] / "fixtures" / "recorded"


def test_every_payload_real_agents_sent_is_read_as_json_loads_reads_it() -> None:
    """The payloads Gemini CLI and Codex CLI sent to engram's hooks (tests/fixtures/recorded),
    in their own compact and spaced forms."""
    payloads = [
        json.loads(line)["payload"]
        for hooks_file in sorted(RECORDED.glob("*/hooks.jsonl"))
        for line in hooks_file.read_text(encoding="utf-8").splitlines()
        if line.strip()
    ]
    assert len(payloads) > 20
    for payload in payloads:
        for data in (
            json.dumps(payload).encode(),
            json.dumps(payload, ensure_ascii=False, separators=(",", ":")).encode(),
        ):
            assert quiet_events._small_object(data) == json.loads(data)


@pytest.mark.parametrize(
    "data",
    [b"", b"[1, 2]", b'{"a": 1} x', b'{"a": ', b"\xef\xbb\xbf{}", b'{"a": "\xff"}', b"{'a': 1}"],
)
def test_anything_but_a_plain_json_object_is_left_to_the_usual_path(data: bytes) -> None:
    assert quiet_events._small_object(data) is None


def test_the_root_is_the_one_find_root_gives_or_none(tmp_path: Path) -> None:
    project = tmp_path / "project"
    (project / ".engram").mkdir(parents=True)
    (project / "src" / "deep").mkdir(parents=True)
    (project / "src" / "deep" / "a.py").write_text("")
    (tmp_path / "link").symlink_to(project / "src")
    nested = project / "vendor" / "lib"
    (nested / ".git").mkdir(parents=True)  # a repository of its own, no store yet
    bare = tmp_path / "nothing"
    bare.mkdir()
    for path in (project, project / "src" / "deep", project / "src" / "deep" / "a.py",
                 tmp_path / "link" / "deep"):  # fmt: skip
        assert quiet_events._root(str(path)) == str(find_root(path)) == str(project)
    assert quiet_events._root(str(nested)) is None  # the usual path creates its store
    assert quiet_events._root(str(bare)) is None  # no store: nothing to record there
    assert quiet_events._root(str(tmp_path / "missing")) is None


def test_the_spooled_header_is_the_one_the_spool_writes(project: Path) -> None:
    payload = hook_payload("PostCompact", "s-h", project, trigger="auto").encode()
    kept = quiet_events.keep("codex", "PostCompact", None, payload)
    assert kept is not None
    try:
        header, body = Path(kept.claim).read_bytes().split(b"\n", 1)
        expected = {"agent": "codex", "event": "PostCompact", "ts": kept.when, "why": "answered"}
        assert header == json.dumps(expected).encode() and body == payload
        assert kept.claim.endswith(f".{os.getpid()}.claimed")
    finally:
        os.close(kept.lock_fd)
        os.unlink(kept.claim)


def test_an_event_it_is_not_sure_of_is_not_kept(project: Path, tmp_path: Path) -> None:
    def payload(session: str = "s-n", cwd: Path = project, **extra: Any) -> bytes:
        return hook_payload("SessionEnd", session, cwd, **extra).encode()

    assert quiet_events.keep("claude-code", "Stop", None, payload()) is None  # may warn
    assert quiet_events.keep("claude", "SessionEnd", None, payload()) is None  # another spelling
    assert quiet_events.keep("claude-code", "SessionEnd", None, payload(session="")) is None
    big = payload(reason="x" * quiet_events.MOST_BYTES)
    assert quiet_events.keep("claude-code", "SessionEnd", None, big) is None
    elsewhere = tmp_path / "not-a-project"
    elsewhere.mkdir()
    assert quiet_events.keep("claude-code", "SessionEnd", None, payload(cwd=elsewhere)) is None
    assert _spooled(project) == []


def test_a_cold_worker_writes_the_compiled_patterns_once_for_the_hooks_after_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from memory_core import compiled_patterns, redact
    from memory_core.cli import fast_hook

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    cache = Path(compiled_patterns.path())
    assert not cache.exists()
    fast_hook._cache_compiled_patterns()  # no resident server ever ran: none written yet
    written = cache.stat().st_mtime_ns
    monkeypatch.setattr(compiled_patterns, "_entries", None)  # as a new process reads it
    assert len(compiled_patterns._load()) > 100
    assert redact.redact("token ghp_" + "a1B2" * 9) != "token ghp_" + "a1B2" * 9
    fast_hook._cache_compiled_patterns()  # up to date: not written again
    assert cache.stat().st_mtime_ns == written
