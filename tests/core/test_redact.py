"""Secrets never reach the store or an export, whatever door they come in by.

A corpus of 27 kinds of fake secrets is written through memory add (library, CLI, LSP is
covered by the same library call), error tracking (`engram error track`), agent hooks
(`engram hook claude-code ...`), transcript ingest (`engram ingest claude-code`) and the event
log; then the raw bytes of the database, its WAL and every export (json, yaml, md,
anonymized) are searched for each secret.
"""

from __future__ import annotations

import json
import subprocess
import time
from pathlib import Path

import pytest

from memory_core import events, memory
from memory_core.events import Event
from memory_core.redact import redact, redact_obj
from memory_core.store import Store
from tests.agents_fixtures import Transcript, hook_payload, text, tool_use
from tests.core.secret_corpus import corpus

CORPUS = corpus()


def test_the_corpus_covers_at_least_twenty_kinds() -> None:
    assert len({kind for kind, _text, _secret in CORPUS}) >= 20


@pytest.mark.parametrize(("kind", "text", "secret"), CORPUS, ids=[c[0] for c in CORPUS])
def test_each_kind_is_redacted_and_labelled(kind: str, text: str, secret: str) -> None:
    out = redact(text)
    assert secret not in out
    assert "[REDACTED:" in out


@pytest.mark.parametrize(
    "text",
    [
        "def get_token(self): return self.token",
        "token: str = None",
        "api_key = os.environ['API_KEY']",
        "password = settings.DB_PASSWORD",
        "session_id=abc123-def",
        "the monkey = banana",
        "see https://example.com/docs/auth",
        "key = 'name'",
        "ssh-keygen -t ed25519 -C me",
        "input_tokens: 1234567, output_tokens=89012",
        "tokenizer = 'unicode61 remove_diacritics'",
        "secretary: Margaret_Hamilton_1969",
        '{"session_id": "5f2c1d4e-aaaa-bbbb-cccc-123456789abc"}',
    ],
)
def test_ordinary_code_and_prose_are_left_alone(text: str) -> None:
    assert redact(text) == text


def test_a_low_entropy_value_under_a_weak_name_is_kept_but_a_random_one_is_not() -> None:
    assert redact("cache_key = user_profile_v2") == "cache_key = user_profile_v2"
    assert "Zq8" not in redact("cache_key = Zq8vT1mXw9LpR4sKd2Jh7Gc")


def test_ids_under_key_like_names_are_not_secrets() -> None:
    session = "5f2c1d4e-aaaa-bbbb-cccc-123456789abc"
    value = {
        "session_id": session,
        "cache_key_id": "Zq8vT1mXw9LpR4sKd2Jh7Gc",
        "request_sig_path": "/tmp/x",
    }
    assert redact_obj(value) == value
    assert redact(f"session_id={session} cache_key_id: Zq8vT1mXw9LpR4sKd2Jh7Gc") == (
        f"session_id={session} cache_key_id: Zq8vT1mXw9LpR4sKd2Jh7Gc"
    )
    # Strong names in any case style.
    for sample in (
        "apiToken: Zq8vT1mXw9Lp",
        "DB_PASSWORD=hunter22x",
        "client-secret = abcdefgh1",
        "tokens: qwertyuiop1",
    ):
        assert "[REDACTED:secret]" in redact(sample), sample
    # A strong name keeps even a UUID-shaped value secret (some APIs use UUIDs as keys).
    assert session not in redact(f"api_key = {session}")


def test_redact_obj_hides_values_under_secret_names_and_keeps_structure() -> None:
    value = {
        "env": {"DB_PASSWORD": "plainword", "HOME": "/home/x"},
        "args": ["--token=" + "a" * 8 + "Zx91"],
        "n": 3,
    }
    out = redact_obj(value)
    assert out["env"] == {"DB_PASSWORD": "[REDACTED:secret]", "HOME": "/home/x"}
    assert out["args"] == ["--token=[REDACTED:secret]"]
    assert out["n"] == 3


def test_redaction_is_cheap_to_import_in_a_cold_process() -> None:
    code = "import time; t = time.perf_counter(); import memory_core.redact as r; r.redact('x = 1'); print(time.perf_counter() - t)"
    runs = [
        float(
            subprocess.run(
                [__import__("sys").executable, "-c", code],
                capture_output=True,
                text=True,
                check=True,
            ).stdout
        )
        for _ in range(3)
    ]
    assert min(runs) < 0.05, runs


@pytest.fixture
def repo(workspace: Path) -> Path:
    subprocess.run(["git", "init", "-q", str(workspace)], check=True)
    return workspace


def _store_bytes(root: Path) -> bytes:
    store_dir = root / ".engram"
    blob = b""
    for name in ("engram.db", "engram.db-wal"):
        path = store_dir / name
        if path.exists():
            blob += path.read_bytes()
    return blob


def _leaks(haystack: bytes) -> list[str]:
    return [kind for kind, _text, secret in CORPUS if secret.encode() in haystack]


def test_no_secret_reaches_the_store_or_any_export_through_any_entry_point(cli, repo: Path) -> None:
    session = "7a1b2c3d-0000-1111-2222-333344445555"
    blob_of_secrets = "\n".join(text for _kind, text, _secret in CORPUS)

    # 1. memory add: the library, and the CLI with the text on the command line and on stdin.
    with Store.init(repo) as store:
        for kind, text_, _secret in CORPUS:
            memory.add(
                store, f"{kind}: {text_}", type="finding", tags=[kind], provenance={"note": text_}
            )
        # The event log every feature writes to.
        events.append(
            store,
            Event(
                "test.secret",
                data={"payload": blob_of_secrets, "env": {"API_TOKEN": "tok" + "x" * 20}},
            ),
        )
    for kind, text_, _secret in CORPUS[:8]:
        assert cli("memory", "add", f"{kind} {text_}", "--tag", "cli", cwd=repo).code == 0
    assert (
        cli("memory", "add", "-", "--type", "learning", cwd=repo, stdin=blob_of_secrets).code == 0
    )

    # 2. error tracking through the CLI, three times so a gotcha is auto-captured from it.
    for kind, text_, _secret in CORPUS:
        for _ in range(3):
            result = cli(
                "error", "track", f"RuntimeError: connection failed ({kind}) {text_}", cwd=repo
            )
            assert result.code == 0, result.stderr

    # 3. agent hooks: a session start, prompts and a failing tool carrying the secrets.
    start = hook_payload("SessionStart", session, repo, source="startup")
    assert cli("hook", "claude-code", "SessionStart", cwd=repo, stdin=start).code == 0
    for kind, text_, _secret in CORPUS:
        prompt = hook_payload("UserPromptSubmit", session, repo, prompt=f"use this {kind}: {text_}")
        assert cli("hook", "claude-code", "UserPromptSubmit", cwd=repo, stdin=prompt).code == 0
    failure = hook_payload(
        "PostToolUseFailure",
        session,
        repo,
        tool_name="Bash",
        tool_input={"command": f"deploy --key {CORPUS[0][1]}"},
        tool_use_id="toolu_fail",
        error=blob_of_secrets,
    )
    assert cli("hook", "claude-code", "PostToolUseFailure", cwd=repo, stdin=failure).code == 0
    end = hook_payload("SessionEnd", session, repo, reason="exit")
    assert cli("hook", "claude-code", "SessionEnd", cwd=repo, stdin=end).code == 0

    # 4. transcript ingest: secrets in prompts, answers and tool inputs.
    transcript = Transcript("9e8d7c6b-0000-1111-2222-333344445555", repo)
    for index, (kind, text_, _secret) in enumerate(CORPUS):
        transcript.prompt(f"here is the {kind}: {text_}")
        transcript.response(
            [text(f"Using {text_}"), tool_use(f"toolu_{index}", "Bash", command=f"echo {text_}")],
            stop_reason="end_turn",
        )
    path = transcript.save(repo / "transcripts" / "t.jsonl")
    ingested = cli("ingest", "claude-code", str(path), cwd=repo)
    assert ingested.code == 0, ingested.stderr

    # Something was recorded through each door (the test is not vacuous) ...
    with Store.open(repo) as store:
        counts = store.counts()
    assert counts["memories"] >= len(CORPUS) + 9
    assert counts["error_occurrences"] >= len(CORPUS)
    assert counts.get("agent_prompts", 0) + counts.get("session_turns", 0) > 0

    # ... and no secret is in the database or its WAL, nor in any other file of the store
    # (log, exports, team file).
    assert _leaks(_store_bytes(repo)) == []
    for path in (repo / ".engram").rglob("*"):
        if path.is_file():
            assert _leaks(path.read_bytes()) == [], path

    # Nor in any export.
    outputs = []
    for fmt in ("json", "yaml", "md"):
        out = repo / f"export.{fmt}"
        assert cli("export", "--format", fmt, "--out", str(out), cwd=repo).code == 0
        outputs.append(out)
    anon = repo / "anon.json"
    assert cli("anonymize", "--out", str(anon), cwd=repo).code == 0
    outputs.append(anon)
    cli("gotcha", "export", cwd=repo)
    outputs.extend(p for p in (repo / ".engram" / "exports").rglob("*") if p.is_file())
    for out in outputs:
        assert _leaks(out.read_bytes()) == [], out
    # The export really holds the redacted memories (it is not empty).
    exported = json.loads((repo / "export.json").read_text())
    assert any("[REDACTED:" in row["content"] for row in exported["tables"]["memories"])


def test_redaction_of_a_large_text_stays_fast() -> None:
    # A worst case for the guards: half a megabyte of code with every kind of secret in it,
    # so every detector runs. Best of three, on a machine shared with other work.
    sample = (Path(__file__).parents[2] / "memory_core" / "lifecycle.py").read_text() * 20
    sample += " ".join(text_ for _k, text_, _s in CORPUS)
    rates = []
    for _ in range(3):
        start = time.perf_counter()
        out = redact(sample)
        rates.append(len(sample) / (time.perf_counter() - start) / 1e6)
    assert _leaks(out.encode()) == []
    assert max(rates) > 2, f"{max(rates):.1f} MB/s"
