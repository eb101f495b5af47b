"""A hook is a cold process on every agent event: it loads what its event needs and no more.

Speed itself is measured by tests/bench/bench_hooks.py; these tests keep the import structure
that makes it (a module that comes back onto the tool-call path fails here, by name), and the
behaviour of what was made lazy.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from memory_core import config

# Each costs a cold process a large share of Python's own start, and a tool call needs none.
HEAVY_FOR_A_TOOL_CALL = (
    "argparse",  # the full command line
    "dataclasses",  # loads inspect, ast, dis, tokenize
    "orjson",  # only for large transcript reads
    "tomllib",  # only when a settings file is there
    "subprocess",
    "yaml",
    "zstandard",
    "memory_core.cli.main",
    "memory_core.agents.transcripts",
    "memory_core.sessions.saved",
)

PROBE = """
import io, json, sys
from memory_core.cli.entry import main
sys.argv = ["engram", *{argv!r}]
sys.stdin = io.TextIOWrapper(io.BytesIO({payload!r}))
code = main()
print(json.dumps({{"code": code, "loaded": sorted(sys.modules)}}))
"""


def _loaded_by(argv: list[str], payload: bytes, cwd: Path) -> set[str]:
    done = subprocess.run(
        [sys.executable, "-c", PROBE.format(argv=argv, payload=payload)],
        cwd=cwd,
        capture_output=True,
        text=True,
        check=True,
    )
    result = json.loads(done.stdout.strip().splitlines()[-1])
    assert result["code"] == 0, done.stderr
    return set(result["loaded"])


def _project(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    root.mkdir()
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    (root / "app.py").write_text("print('hello')\n")
    return root


def _post_tool_use(root: Path, tool_use_id: str) -> bytes:
    return json.dumps(
        {
            "session_id": "s-imports",
            "transcript_path": str(root / "transcript.jsonl"),
            "cwd": str(root),
            "hook_event_name": "PostToolUse",
            "tool_name": "Bash",
            "tool_use_id": tool_use_id,
            "tool_input": {"command": "pytest -q"},
            "tool_response": {"stdout": "3 passed", "stderr": "", "interrupted": False},
        }
    ).encode()


def test_a_tool_call_hook_loads_none_of_the_heavy_modules(tmp_path: Path) -> None:
    root = _project(tmp_path)
    _loaded_by(["hook", "claude-code", "PostToolUse"], _post_tool_use(root, "t-0"), root)
    loaded = _loaded_by(["hook", "claude-code", "PostToolUse"], _post_tool_use(root, "t-1"), root)
    assert "memory_core.sessions.activity" in loaded  # the call was recorded: the path ran
    assert sorted(set(HEAVY_FOR_A_TOOL_CALL) & loaded) == []
    # Recorded, as before the imports moved.
    from memory_core.store import Store

    with Store.open(root) as store:
        row = store.query_one("SELECT ok, command FROM agent_tool_uses WHERE tool_use_id = 't-1'")
    assert row is not None and row["ok"] == 1 and row["command"] == "pytest -q"


def test_the_probe_sees_heavy_modules_where_they_are_loaded(tmp_path: Path) -> None:
    # Negative control: the full command line does load argparse and the CLI module.
    root = _project(tmp_path)
    loaded = _loaded_by(["init"], b"", root)
    assert {"argparse", "memory_core.cli.main"} <= loaded


def test_sessions_names_are_the_functions_even_after_their_modules_load() -> None:
    # `metrics`, `document` and `autosave` are both modules of the package and functions in
    # them: once loaded lazily, the package keeps the function under that name.
    code = (
        "import memory_core.sessions.metrics, memory_core.sessions.document, "
        "memory_core.sessions.autosave\n"
        "from memory_core import sessions\n"
        "print(all(callable(getattr(sessions, n)) and not hasattr(getattr(sessions, n), "
        "'__path__') and getattr(sessions, n).__name__ == n for n in "
        "('metrics', 'document', 'autosave')))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "True"


def test_settings_from_pyproject_still_apply_and_other_pyprojects_are_not_parsed(
    tmp_path: Path,
) -> None:
    (tmp_path / "pyproject.toml").write_text("[tool.engram.gotchas]\nthreshold = 5\n")
    assert config.load(tmp_path)["gotchas.threshold"] == 5
    # Dotted keys under [tool] name engram too.
    (tmp_path / "pyproject.toml").write_text("[tool]\nengram.gotchas.threshold = 7\n")
    assert config.load(tmp_path)["gotchas.threshold"] == 7
    # A project file that never names engram holds nothing of ours: not even read as TOML.
    (tmp_path / "pyproject.toml").write_text("[project\nname = 'broken'\n")
    settings = config.load(tmp_path)
    assert settings.problems == [] and settings["gotchas.threshold"] == 3
    # One that names engram and is broken is reported, as before.
    (tmp_path / "pyproject.toml").write_text("[tool.engram\nthreshold = 'x'\n")
    assert any("cannot read" in problem for problem in config.load(tmp_path).problems)


def test_transcript_lines_read_the_same_by_the_json_module_as_by_orjson(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import orjson

    from memory_core.agents import transcripts

    lines = [
        b'{"type": "user", "text": "caf\xc3\xa9 \\u00e9"}',
        b'{"half": "\\ud83d cut", "pair": "\\ud83d\\ude00"}',  # a lone surrogate escaped
        b'{"raw": "\xed\xa0\x80"}',  # a surrogate as raw bytes
        # (An integer past 64 bits is a float to orjson, an int to the json module: no field of
        # a transcript comes near.)
        b'{"n": 1.5, "tokens": 9007199254740993, "none": null}',
        b'{"nan": NaN}',
    ]

    def read_all() -> list[str]:
        return [repr(transcripts._decode_line(line)) for line in lines]

    monkeypatch.setattr(transcripts, "_orjson", None)
    by_json = read_all()
    monkeypatch.setattr(transcripts, "_orjson", orjson)
    assert read_all() == by_json
    assert "\\ud83d" not in by_json[1] and "😀" in by_json[1]  # scrubbed, the pair kept
    for decoder in (None, orjson):
        monkeypatch.setattr(transcripts, "_orjson", decoder)
        with pytest.raises(ValueError):
            transcripts._decode_line(b'{"cut": "no end')


def test_orjson_is_loaded_once_a_process_has_much_to_read(monkeypatch: pytest.MonkeyPatch) -> None:
    from memory_core.agents import transcripts

    monkeypatch.setattr(transcripts, "_orjson", None)
    monkeypatch.setattr(transcripts, "_bytes_to_read", 0)
    transcripts.fast_decoder_for(4096)  # a hook's few new lines
    assert transcripts._orjson is None
    for _ in range(transcripts.ORJSON_FROM_BYTES // (64 * 1024)):
        transcripts.fast_decoder_for(64 * 1024)  # an ingest of many small transcripts
    assert transcripts._orjson is not None


def _digest_after_a_command(root: Path, command: str) -> tuple[set[str], str]:
    """A session that ran `command`, then a cold PreCompact (which writes the digest)."""
    from memory_core.agents import hooks
    from tests.agents_fixtures import hook_payload

    session = "s-digest"
    for event, extra in (
        ("SessionStart", {"source": "startup"}),
        ("UserPromptSubmit", {"prompt": "run the tests", "prompt_id": "p1"}),
        (
            "PostToolUse",
            {
                "tool_name": "Bash",
                "tool_use_id": "t-1",
                "tool_input": {"command": command},
                "tool_response": {"stdout": "ok", "stderr": "", "interrupted": False},
            },
        ),
    ):
        assert (
            hooks.handle("claude-code", event, hook_payload(event, session, root, **extra))[0] == 0
        )
    payload = hook_payload("PreCompact", session, root, trigger="manual", custom_instructions="")
    loaded = _loaded_by(["hook", "claude-code", "PreCompact"], payload.encode(), root)
    [digest] = (root / ".engram").rglob(f"{session}-*.yaml")
    return loaded, digest.read_text(encoding="utf-8")


def _engram_facts_as_pyyaml_writes_them(digest: str) -> tuple[str, str]:
    import yaml

    frontmatter = digest.split("---\n")[1]
    written = frontmatter[frontmatter.index("engram:") :]
    again = yaml.dump(
        yaml.safe_load(written),
        Dumper=yaml.SafeDumper,
        sort_keys=False,
        allow_unicode=True,
        width=100,
    )
    return written, again


def test_writing_a_digest_does_not_load_yaml_and_writes_what_yaml_would(tmp_path: Path) -> None:
    import yaml

    root = _project(tmp_path)
    loaded, digest = _digest_after_a_command(root, "pytest -q tests/unit: -k 'not slow' #1")
    assert "memory_core.agents.digest" in loaded  # the digest was written in that process
    assert "yaml" not in loaded
    written, again = _engram_facts_as_pyyaml_writes_them(digest)
    assert written == again
    commands = [c["command"] for c in yaml.safe_load(written)["engram"]["commands"]]
    assert commands == ["pytest -q tests/unit: -k 'not slow' #1"]  # quoted, it reads back


def test_a_digest_yaml_must_write_itself_still_loads_yaml(tmp_path: Path) -> None:
    # Negative control: a fact outside what engram's own writer handles (a non-ASCII command)
    # goes to PyYAML, and the probe sees it loaded; the text is the same either way.
    root = _project(tmp_path)
    loaded, digest = _digest_after_a_command(root, "echo café")
    assert "yaml" in loaded
    written, again = _engram_facts_as_pyyaml_writes_them(digest)
    assert "echo café" in written and written == again


COMPILE_COUNTER = """
import json, re, sys
compiled = []
original = re.compile
def counting(pattern, flags=0):
    where = sys._getframe(1).f_globals.get("__name__")
    if where in {ours!r}:
        compiled.append(where)
    return original(pattern, flags)
re.compile = counting
import memory_core.agents.digest, memory_core.agents.failures, memory_core.verify
import memory_core.agents.transcripts, memory_core.agents.memory_files
import memory_core.agents.codex_rollouts, memory_core.sessions.net
from memory_core.gotchas import normalize, scan, team, tool_errors
at_import = list(compiled)
{then}
print(json.dumps({{"at_import": at_import, "after": compiled[len(at_import):]}}))
"""


# The modules whose patterns wait for their first use, and the module that compiles them then.
DEFERRED = (
    "memory_core.agents.digest",
    "memory_core.agents.failures",
    "memory_core.verify",
    "memory_core.gotchas.normalize",
    "memory_core.gotchas.tool_errors",
    "memory_core.gotchas.scan",
    "memory_core.gotchas.team",
    "memory_core.agents.transcripts",
    "memory_core.agents.memory_files",
    "memory_core.agents.codex_rollouts",
    "memory_core.sessions.net",
    "memory_core.lazy_pattern",
)


def _compiles(then: str) -> tuple[list[str], list[str]]:
    done = subprocess.run(
        [sys.executable, "-c", COMPILE_COUNTER.format(then=then, ours=DEFERRED)],
        capture_output=True,
        text=True,
        check=True,
    )
    result = json.loads(done.stdout.strip().splitlines()[-1])
    return result["at_import"], result["after"]


def test_the_gotcha_and_digest_patterns_are_compiled_when_first_used() -> None:
    at_import, after = _compiles("")
    assert at_import == []  # about a hundred patterns, none compiled by loading their modules
    assert after == []


def test_a_pattern_is_compiled_once_used_and_matches_as_before() -> None:
    # Negative control: the counter sees the compile when a pattern is used, and the parse works.
    trace = 'Traceback (most recent call last):\n  File "app.py", line 3, in <module>\nKeyError: 1'
    then = f"assert tool_errors.key_error({trace!r}) is not None"
    at_import, after = _compiles(then)
    assert at_import == [] and "memory_core.lazy_pattern" in after
    _, again = _compiles(f"tool_errors.key_error({trace!r}); tool_errors.key_error({trace!r})")
    assert len(again) == len(after)  # a second use compiles nothing more


# -- what each event loads before the agent has its answer ------------------------------------

# What a cold hook has loaded of engram when its answer goes out (memory_core/cli/fast_hook.py:
# a forked worker answers first; what it loads after its answer costs the agent nothing), per
# event of a session. A change that makes an event load another module before its answer fails
# here by name: load it after the answer, or add it below, knowingly.
HOOK_PATH = {
    "memory_core",
    "memory_core.cli",
    "memory_core.cli.entry",
    "memory_core.cli.fast_hook",
    "memory_core.resident",
    "memory_core.agents",
    "memory_core.agents.quiet_events",
}
# Answered once the quota's last measurement says it will stay quiet: the store opened and the
# spool folded, no handler run yet.
QUOTA_CHECKED = HOOK_PATH | {
    "memory_core.agents.hooks",
    "memory_core.agents.payload",
    "memory_core.agents.quota_hook",
    "memory_core.agents.spool",
    "memory_core.clock",
    "memory_core.config",
    "memory_core.decay",
    "memory_core.errors",
    "memory_core.log",
    "memory_core.quota",
    "memory_core.store",
    "memory_core.workspace",
}
# The gotchas of a file or a prompt, for the agent.
GOTCHA_CONTEXT = {
    "memory_core.agents.record",
    "memory_core.compiled_patterns",
    "memory_core.cyclic_gc",
    "memory_core.gotchas",
    "memory_core.gotchas.context",
    "memory_core.gotchas.normalize",
    "memory_core.gotchas.rank_index",
    "memory_core.gotchas.records",
    "memory_core.gotchas.team",
    "memory_core.gotchas.tool_errors",
    "memory_core.guard_search",
    "memory_core.lazy_pattern",
    "memory_core.redact",
    "memory_core.text",
    "memory_core.values",
    "memory_core.verify",
}
# The transcript read and its turns recorded before a prompt's answer.
TRANSCRIPT_AND_TURNS = {
    "memory_core.agents.digest",
    "memory_core.agents.failures",
    "memory_core.agents.transcripts",
    "memory_core.events",
    "memory_core.filenames",
    "memory_core.secret_words",
    "memory_core.sessions",
    "memory_core.sessions.activity",
    "memory_core.sessions.compaction",
    "memory_core.sessions.document",
    "memory_core.sessions.metrics",
    "memory_core.sessions.model",
    "memory_core.sessions.net",
    "memory_core.sessions.note",
    "memory_core.sessions.reading",
    "memory_core.sessions.recording",
    "memory_core.sessions.summary",
}
# A session start's context: earlier sessions, memories, the vault's reminder, memory files.
SESSION_CONTEXT = {
    "memory_core.agents.context",
    "memory_core.agents.lessons",
    "memory_core.agents.memory_files",
    "memory_core.git",
    "memory_core.memory",
    "memory_core.session_state",
    "memory_core.session_vault",
    "memory_core.tags",
}
SESSION_START = QUOTA_CHECKED | GOTCHA_CONTEXT | TRANSCRIPT_AND_TURNS | SESSION_CONTEXT
# (agent, event): (the modules it may load before its answer, whether exactly those).
LOADED_BEFORE_THE_ANSWER: dict[tuple[str, str], tuple[set[str], bool]] = {
    ("claude-code", "SessionStart"): (SESSION_START, False),
    ("claude-code", "UserPromptSubmit"): (
        QUOTA_CHECKED | GOTCHA_CONTEXT | TRANSCRIPT_AND_TURNS,
        False,
    ),
    ("claude-code", "PreToolUse"): (QUOTA_CHECKED | GOTCHA_CONTEXT, False),
    ("claude-code", "PostToolUse"): (QUOTA_CHECKED, True),
    # Kept before the answer (quiet_events), recorded after it: no more than the hook's path.
    ("claude-code", "PreCompact"): (HOOK_PATH, True),
    ("claude-code", "SessionEnd"): (HOOK_PATH, True),
    ("gemini", "AfterTool"): (QUOTA_CHECKED, True),
    ("codex", "PostToolUse"): (QUOTA_CHECKED | {"memory_core.agents.codex_outputs"}, True),
    ("codex", "PostCompact"): (HOOK_PATH, True),
}
# Never loaded before the answer of an event but a session start and a prompt (which read the
# transcript first): each costs a large share of Python's own start.
HEAVY_BEFORE_A_QUIET_ANSWER = (
    "argparse",
    "dataclasses",
    "inspect",
    "typing",
    "tomllib",
    "subprocess",
    "yaml",
    "zstandard",
    "orjson",
)
READ_THE_TRANSCRIPT_FIRST = {"SessionStart", "UserPromptSubmit"}
PROBE_COLD = (
    "import sys\n"
    "from memory_core.cli.entry import main\n"
    "sys.argv = ['engram', *sys.argv[1:]]\n"
    "sys.exit(main())\n"
)


def _loaded_before_the_answer(agent: str, event: str, payload: bytes, cwd: Path) -> set[str]:
    env = {k: v for k, v in os.environ.items() if k != "ENGRAM_NO_HOOK_FORK"}
    done = subprocess.run(
        [sys.executable, "-c", PROBE_COLD, "hook", agent, event],
        input=payload,
        cwd=cwd,
        env={**env, "PYTHONPROFILEIMPORTTIME": "1"},
        capture_output=True,
        check=True,
    )
    # The worker lets go of the agent's stderr as it answers: the lines stop there.
    return {
        line.rsplit("|", 1)[1].strip()
        for line in done.stderr.decode().splitlines()
        if line.startswith("import time:") and "|" in line
    } - {"package"}


def test_each_event_loads_only_its_own_modules_before_its_answer(tmp_path: Path) -> None:
    from memory_core.agents import hooks
    from memory_core.store import Store
    from tests.bench.bench_hooks import EVENTS, SESSIONS

    root = _project(tmp_path)
    Store.open_or_init(root).close()
    sessions = {agent: SESSIONS[agent](root, f"pin-{agent}") for agent in EVENTS}
    wrong: dict[str, object] = {}
    for agent, events in EVENTS.items():  # each agent's events in session order
        for event in events:
            payload = json.dumps(sessions[agent].payload(event)).encode()
            if (agent, event) not in LOADED_BEFORE_THE_ANSWER:
                hooks.handle(agent, event, payload, workspace=str(root))  # the session goes on
                continue
            loaded = _loaded_before_the_answer(agent, event, payload, root)
            engram = {name for name in loaded if name.startswith("memory_core")}
            allowed, exactly = LOADED_BEFORE_THE_ANSWER[(agent, event)]
            if engram - allowed or (exactly and engram != allowed):
                wrong[f"{agent} {event}"] = {"more": sorted(engram - allowed),
                                             "fewer": sorted(allowed - engram)}  # fmt: skip
            heavy = set(HEAVY_BEFORE_A_QUIET_ANSWER) & loaded
            if heavy and event not in READ_THE_TRANSCRIPT_FIRST:
                wrong[f"{agent} {event} heavy"] = sorted(heavy)
            if allowed == HOOK_PATH and "sqlite3" in loaded:  # kept before the store loads
                wrong[f"{agent} {event} sqlite3"] = True
    assert wrong == {}
