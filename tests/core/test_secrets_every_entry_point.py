"""No secret of the corpus reaches the store's bytes, whatever door it comes in by.

Every real-format secret of `tests/core/secret_corpus.py` is sent, batched into few calls,
through each entry point a user or an agent has: the CLI (memory add, gotcha add, error track
with `--command`, checkpoint create with a name and description, session start/save names,
snapshot notes), the real `engram hook claude-code ...` and `engram hook gemini ...` entries,
transcript ingest, and the MCP server. Then the raw bytes of `.engram/` (database, WAL, logs,
exports), the decompressed blobs inside the database, and every export format are searched for
each secret.

Negative control: a marker word sent with each door's text must be found in the store, so a
door that silently dropped its input (and so "leaked nothing") fails the test.
"""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
import zlib
from pathlib import Path
from typing import Any

import pytest
import zstandard
from mcp import Client
from mcp.client.stdio import StdioServerParameters

from tests.agents_fixtures import Transcript, hook_payload, text, tool_use
from tests.core.secret_corpus import Secret, secrets

SECRETS = secrets()
SESSION = "7a1b2c3d-0000-1111-2222-333344445555"


def batches(limit: int) -> list[str]:
    """The corpus texts joined into as few texts of at most `limit` characters as fit.

    A cut-off private key block is hidden to the end of its text, which would hide whatever
    follows it: it goes last in its batch.
    """
    out: list[str] = []
    current = ""
    for case in sorted(SECRETS, key=lambda s: s.kind.startswith("truncated")):
        piece = case.text + "\n"
        if current and len(current) + len(piece) > limit:
            out.append(current)
            current = ""
        current += piece
        if case.kind.startswith("truncated"):
            out.append(current)
            current = ""
    if current:
        out.append(current)
    return out


def _decompressed(value: bytes) -> bytes:
    for decompress in (
        lambda b: zstandard.ZstdDecompressor().decompress(b, max_output_size=64 << 20),
        zlib.decompress,
    ):
        try:
            return bytes(decompress(value))
        except Exception:  # not compressed with this codec
            continue
    return b""


def store_bytes(root: Path) -> bytes:
    """Every byte engram keeps for this workspace: the files of `.engram/` as they are on disk
    and every compressed blob inside the database, decompressed."""
    store_dir = root / ".engram"
    # Pieces joined once at the end: adding to one bytes object row by row copies it each time.
    pieces = [p.read_bytes() for p in sorted(store_dir.rglob("*")) if p.is_file()]
    db = sqlite3.connect(f"file:{store_dir / 'engram.db'}?mode=ro", uri=True)
    try:
        tables = [row[0] for row in db.execute("SELECT name FROM sqlite_master WHERE type='table'")]
        for table in tables:
            for row in db.execute(f'SELECT * FROM "{table}"'):
                for value in row:
                    if isinstance(value, bytes):
                        pieces += [value, _decompressed(value)]
                    elif isinstance(value, str):
                        pieces.append(value.encode())
    finally:
        db.close()
    return b"".join(pieces)


def leaks(haystack: bytes) -> list[str]:
    return [case.kind for case in SECRETS if case.secret.encode() in haystack]


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    root.mkdir()
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    (root / "app.py").write_text("print('hello')\n")
    return root.resolve()


def _ok(result: Any) -> None:
    assert result.code == 0, result.stderr


async def _through_mcp(repo: Path, texts: list[str]) -> None:
    server = StdioServerParameters(
        command=sys.executable,
        args=["-m", "memory_core", "--workspace", str(repo), "mcp"],
        cwd=str(repo),
    )
    async with Client(server) as client:
        for batch in texts:
            added = await client.call_tool(
                "memory_add", {"content": "door-mcp-memory " + batch, "type": "finding"}
            )
            assert not added.is_error, added.content
        created = await client.call_tool(
            "checkpoint_create",
            {"name": "door-mcp-checkpoint " + texts[0], "description": texts[-1]},
        )
        assert not created.is_error, created.content
        summary = await client.call_tool(
            "session_update_summary",
            {"session_id": SESSION, "overview": "door-mcp-summary " + texts[0], "decisions": texts},
        )
        assert not summary.is_error, summary.content


async def test_no_secret_reaches_the_store_through_any_entry_point(
    cli: Any, repo: Path, tmp_path: Path
) -> None:
    everything = "\n".join(case.text for case in SECRETS)
    assert cli("init", cwd=repo).code == 0
    markers: list[str] = []

    def door(name: str) -> str:
        markers.append(name)
        return name

    # The command line.
    _ok(cli("memory", "add", door("door-cli-memory") + " " + everything, cwd=repo))
    _ok(
        cli(
            "memory",
            "add",
            "-",
            "--type",
            "learning",
            cwd=repo,
            stdin=door("door-stdin") + everything,
        )
    )
    _ok(
        cli(
            "gotcha", "add", door("door-gotcha-title") + " " + SECRETS[0].text,
            "--description", everything,
            "--workaround", door("door-gotcha-workaround") + " " + everything,
            "--error-pattern", SECRETS[1].text,
            cwd=repo,
        )
    )  # fmt: skip
    for index, batch in enumerate(batches(19_000)):
        # Three times, so a gotcha is auto-captured from it with the command in its samples.
        for _ in range(3):
            _ok(
                cli(
                    "error", "track", f"RuntimeError: deploy failed {door(f'door-error-{index}')}\n{batch}",
                    "--command", f"deploy {door(f'door-command-{index}')} " + batch,
                    cwd=repo,
                )
            )  # fmt: skip
    _ok(
        cli(
            "checkpoint", "create", door("door-checkpoint-name") + " " + everything,
            "--description", door("door-checkpoint-description") + " " + everything,
            cwd=repo,
        )
    )  # fmt: skip
    _ok(cli("session", "save", door("door-session-name") + " " + everything, cwd=repo))
    _ok(cli("session", "start", door("door-session-start") + " " + SECRETS[2].text, cwd=repo))
    _ok(cli("snapshot", "capture", "--note", door("door-snapshot") + " " + everything, cwd=repo))

    # Claude Code hooks, through the real entry point.
    def hook(event: str, **extra: Any) -> None:
        payload = hook_payload(event, SESSION, repo, **extra)
        _ok(cli("hook", "claude-code", event, cwd=repo, stdin=payload))

    hook("SessionStart", source="startup")
    for index, batch in enumerate(batches(3_900)):
        hook("UserPromptSubmit", prompt=f"{door(f'door-prompt-{index}')} {batch}")
    for index, batch in enumerate(batches(1_900)):
        hook(
            "PostToolUse",
            tool_name="Bash",
            tool_input={"command": f"echo {door(f'door-tool-{index}')} {batch}"[:280]},
            # A successful call's output is not stored (its summary is): sent all the same.
            tool_response={"stdout": batch, "stderr": ""},
            tool_use_id=f"toolu_ok_{index}",
        )
        hook(
            "PostToolUseFailure",
            tool_name="Bash",
            tool_input={"command": "deploy --verbose"},
            tool_use_id=f"toolu_fail_{index}",
            error=f"{door(f'door-failure-{index}')} {batch}",
        )
    hook("PreCompact", trigger="auto", custom_instructions=everything)
    hook(
        "PostCompact",
        trigger="auto",
        compact_summary=door("door-compact-summary") + " " + everything,
    )
    last_batch = batches(3_900)[-1]
    hook(
        "Stop", stop_hook_active=False, last_assistant_message=door("door-stop") + " " + last_batch
    )
    hook("SessionEnd", reason="exit")

    # Gemini CLI hooks.
    for index, batch in enumerate(batches(3_900)):
        data = {
            "session_id": "G-secrets",
            "transcript_path": str(tmp_path / "chat.json"),
            "cwd": str(repo),
            "hook_event_name": "BeforeAgent",
            "prompt": f"{door(f'door-gemini-{index}')} {batch}",
        }
        _ok(cli("hook", "gemini", "BeforeAgent", cwd=repo, stdin=json.dumps(data)))

    # Transcript ingest: secrets in prompts, answers, tool inputs and tool results; the file
    # lives outside the workspace (a checkpoint keeps workspace files as they are).
    transcript = Transcript("9e8d7c6b-0000-1111-2222-333344445555", repo)
    for index, case in enumerate(SECRETS):
        transcript.prompt(f"door-transcript here is the {case.kind}: {case.text}")
        transcript.response(
            [
                text(f"Using {case.text}"),
                tool_use(f"toolu_{index}", "Bash", command=f"echo {case.text}"),
            ],
            stop_reason="tool_use",
        )
        transcript.tool_result(f"toolu_{index}", case.text)
    markers.append("door-transcript")
    path = transcript.save(tmp_path / "transcripts" / "t.jsonl")
    _ok(cli("ingest", "claude-code", str(path), cwd=repo))

    # The MCP server.
    await _through_mcp(repo, batches(3_900))
    markers.extend(["door-mcp-memory", "door-mcp-checkpoint", "door-mcp-summary"])

    # Every door stored its text (negative control) ...
    stored = store_bytes(repo)
    missing = [marker for marker in markers if marker.encode() not in stored]
    assert missing == [], ", ".join(missing)
    # ... and no secret, in the database, its WAL, compressed blobs, logs or exports.
    assert leaks(stored) == []

    # Nor in any export format, nor in the regenerated gotcha exports.
    outputs = []
    for fmt in ("json", "yaml", "md"):
        out = tmp_path / f"export.{fmt}"
        _ok(cli("export", "--format", fmt, "--out", str(out), cwd=repo))
        outputs.append(out)
    anon = tmp_path / "anon.json"
    _ok(cli("anonymize", "--out", str(anon), cwd=repo))
    outputs.append(anon)
    _ok(cli("gotcha", "export", cwd=repo))
    outputs.extend(p for p in (repo / ".engram" / "exports").rglob("*") if p.is_file())
    for out in outputs:
        assert leaks(out.read_bytes()) == [], out
    exported = json.loads((tmp_path / "export.json").read_text())
    assert any("[REDACTED:" in row["content"] for row in exported["tables"]["memories"])


def test_the_negative_control_sees_an_unredacted_text(repo: Path) -> None:
    # The scan itself finds a secret stored raw (here by writing around redaction).
    from memory_core.store import Store

    case: Secret = SECRETS[0]
    with Store.init(repo) as store, store.transaction() as db:
        db.execute(
            "INSERT INTO saved_sessions (session_id, name, format_version, saved_at, payload, size) "
            "VALUES (?, ?, ?, ?, ?, ?)",
            ("S-raw", None, 1, 0.0, zstandard.ZstdCompressor().compress(case.text.encode()), 1),
        )
    assert leaks(store_bytes(repo)) == [case.kind]


def test_checkpoints_leave_secret_files_out_unless_told_and_keep_other_files_as_they_are(
    cli: Any, repo: Path
) -> None:
    # What docs/secrets.md promises about checkpoints, which keep file bytes as they are.
    in_env = "sk_live_" + "".join(reversed("0123456789abcdefghijKLMNOP"))
    in_key = "MIIEow" + "IBAAKCAQEA" + "x9Zq" * 8
    in_source = "hunter2-in-settings-" + "Q7w" * 4
    (repo / ".env").write_text(f"STRIPE_KEY={in_env}\n")
    (repo / "deploy.key").write_text(f"{in_key}\n")
    (repo / "settings.py").write_text(f'PASSWORD = "{in_source}"\n')
    assert cli("init", cwd=repo).code == 0
    _ok(cli("checkpoint", "create", "before", cwd=repo))
    stored = store_bytes(repo)
    assert in_env.encode() not in stored
    assert in_key.encode() not in stored
    # An ordinary file is captured byte for byte, secret included (the negative control).
    assert in_source.encode() in stored

    _ok(cli("config", "set", "checkpoints.include_secret_files", "true", cwd=repo))
    _ok(cli("checkpoint", "create", "with secret files", cwd=repo))
    assert in_env.encode() in store_bytes(repo)


def test_a_secret_in_a_transcripts_first_prompt_is_nowhere_under_engram(
    cli: Any, repo: Path, tmp_path: Path
) -> None:
    # A file short enough that its whole first line, prompt included, lies in the head that
    # recognises the file: the head is kept as a hash, never as its bytes (nor their hex).
    secret = "ghp_" + "".join(reversed("0123456789abcdefghijKLMNOPQRSTUVWXYZ"))
    transcript = Transcript("4f3e2d1c-0000-1111-2222-333344445555", repo)
    transcript.prompt(f"door-first-prompt {secret}")
    transcript.response([text("Done.")])
    path = transcript.save(tmp_path / "first.jsonl")
    first_line = path.read_bytes().split(b"\n")[0]
    assert secret.encode() in first_line
    assert cli("init", cwd=repo).code == 0
    _ok(cli("ingest", "claude-code", str(path), cwd=repo))
    # The same file with more lines is still the same file: read on, not from the start.
    transcript.prompt("door-second-prompt")
    transcript.save(path)
    _ok(cli("ingest", "claude-code", str(path), cwd=repo))

    stored = store_bytes(repo)
    assert b"door-first-prompt" in stored and b"door-second-prompt" in stored  # both ingested
    for form in (secret.encode(), secret.encode().hex().encode(), first_line[:40].hex().encode()):
        assert form not in stored, form[:20]
    out = tmp_path / "export.json"
    _ok(cli("export", "--format", "json", "--out", str(out), cwd=repo))
    anon = tmp_path / "anon.json"
    _ok(cli("anonymize", "--out", str(anon), cwd=repo))
    for exported in (out.read_bytes(), anon.read_bytes()):
        assert secret.encode() not in exported
        assert first_line[:40].hex().encode() not in exported
    offsets = json.loads(out.read_text())["tables"]["agent_ingest_offsets"]
    assert [row["head"].partition(":")[0] for row in offsets] == ["512"]


def test_the_public_corpora_held_out_thirds_are_redacted_alike_on_every_path(
    cli: Any, repo: Path, tmp_path: Path
) -> None:
    # What redaction hides in a text alone it hides through the command line, the agent's
    # prompt hook and transcript ingest too: the figures measured on the corpus hold on
    # every path (tests/core/public_secret_corpus.py, docs/secrets.md).
    from memory_core.redact import redact
    from tests.core.public_secret_corpus import PATH, PATH_B, PATH_C, leaked, load

    # The held-out thirds of corpora A and B and the whole of corpus C (all held out), in one
    # store (one set of processes).
    held = [
        c
        for path in (PATH, PATH_B, PATH_C)
        for c in load(path)
        if c.type == "secret" and c.split == "holdout"
    ]
    caught = [c for c in held if not leaked(c.secret, redact(c.text))]
    assert len(caught) >= 900
    assert sum(1 for c in caught if c.source.startswith("Skyscanner/whispers")) >= 100  # C's

    def batches(limit: int) -> list[str]:
        texts: list[str] = []
        current = ""
        for case in caught:
            if current and len(current) + len(case.text) > limit:
                texts.append(current)
                current = ""
            current += case.text + "\n"
        texts.append(current)
        return texts

    assert cli("init", cwd=repo).code == 0
    # A memory holds up to 64 KiB (in few processes); an agent's prompt is kept up to 4,000
    # characters, so the hook gets smaller texts, all of them kept whole.
    for index, batch in enumerate(batches(60_000)):
        _ok(cli("memory", "add", "-", cwd=repo, stdin=f"door-corpus-memory-{index}\n{batch}"))
    texts = batches(3_800)
    for index, batch in enumerate(texts):
        payload = hook_payload(
            "UserPromptSubmit", SESSION, repo, prompt=f"door-corpus-prompt-{index} {batch}"
        )
        _ok(cli("hook", "claude-code", "UserPromptSubmit", cwd=repo, stdin=payload))
    transcript = Transcript("5a4b3c2d-0000-1111-2222-333344445555", repo)
    for case in caught:
        transcript.prompt(f"door-corpus-transcript {case.text}")
        transcript.response([text(f"Noted: {case.text}")])
    _ok(cli("ingest", "claude-code", str(transcript.save(tmp_path / "p.jsonl")), cwd=repo))

    stored = store_bytes(repo)
    for marker in ("door-corpus-memory-0", "door-corpus-prompt-0", "door-corpus-transcript"):
        assert marker.encode() in stored, marker
    # The whole of each secret and either half of it, unless that part is in another case's
    # text too, outside its secret, in any case (the rule sets' made-up examples share runs
    # like `1234567890abcdef`, and the full-text index keeps words lowercased: `abcdefghijklmnop`
    # of one example is in `aBcDeFgHiJkLmNoP...` of another's text).
    everything = "\n".join(c.text for c in held).lower()

    folded_texts = [(c.secret, c.text.lower()) for c in held]

    def own(part: str) -> bool:
        folded = part.lower()
        return everything.count(folded) == sum(
            text.count(folded) for secret, text in folded_texts if part in secret
        )

    def parts(secret: str) -> list[str]:
        half = len(secret) // 2
        halves = [secret[:half], secret[half:]] if len(secret) >= 16 else []
        return [p for p in [secret, *halves] if own(p)]

    # Searched as bytes: the same matches as in the decoded text (a part is valid UTF-8, so it
    # cannot match inside a character), at a byte per character.
    left = [c.kind for c in caught if any(part.encode() in stored for part in parts(c.secret))]
    assert left == []


def test_a_store_that_kept_transcript_bytes_loses_them_on_upgrade_and_reads_on(
    repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A store of schema 11 kept a transcript's first 512 bytes hex-encoded. Opening it with
    # this engram migrates it: the bytes are gone, and the file is not read again from the
    # start (the offset it had is trusted, the head's hash recorded on the next read).
    from memory_core import store as store_module
    from memory_core.agents.transcripts import ingest_file
    from memory_core.store import Store

    secret = "ghp_" + "".join(reversed("abcdefghij0123456789KLMNOPQRSTUVWXYZ"))
    transcript = Transcript("6b5a4c3d-0000-1111-2222-333344445555", repo)
    transcript.prompt(f"door-upgrade {secret}")
    transcript.response([text("Done.")])
    path = transcript.save(tmp_path / "old.jsonl")
    # A store made by an engram whose newest migration was 11 (the later ones not applied).
    known = store_module.migrations()
    with monkeypatch.context() as old_engram:
        old_engram.setattr(store_module, "migrations", lambda: [m for m in known if m[0] <= 11])
        with Store.init(repo) as store:
            first = ingest_file(store, path)
            assert first.prompts == 1
            with store.transaction() as db:
                db.execute(
                    "UPDATE agent_ingest_offsets SET head = ?", (path.read_bytes()[:512].hex(),)
                )
            assert store.schema_version == 11
    assert path.read_bytes()[:40].hex().encode() in store_bytes(repo)  # the old store's state

    with Store.open(repo) as store:
        assert store.schema_version >= 13
        assert store.query_one("SELECT head FROM agent_ingest_offsets")["head"] == ""
        transcript.prompt("door-after-upgrade")
        transcript.save(path)
        again = ingest_file(store, path)
        assert not again.restarted and again.prompts == 1
        head = store.query_one("SELECT head FROM agent_ingest_offsets")["head"]
        assert head.startswith("512:")
    stored = store_bytes(repo)
    assert path.read_bytes()[:40].hex().encode() not in stored
    assert secret.encode() not in stored and secret.encode().hex().encode() not in stored
