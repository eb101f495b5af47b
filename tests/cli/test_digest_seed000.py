"""Seed 000 as the hooks write it: the digest names the agent at work (`engram session state
--agent`), and holds the session's lessons in its own words, never the user's messages."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import yaml  # type: ignore[import-untyped]

from memory_core.agents import digest
from tests.agents_fixtures import hook_payload

SESSION = "7d3e2f1a-bbbb-cccc-dddd-0123456789ab"
PROMPTS = (
    "Please add a retry to the upload client.",
    "No, that's wrong: the retry belongs in src/net/client.py, not in the uploader. "
    "Email me at jane.doe@example.com when it's done. Always run make check before committing.",
    "Please add a retry to the upload client.",
)


def _digests(repo: Path) -> list[Path]:
    return sorted((repo / ".engram" / "exports" / "digests").glob("*.yaml"))


def _front(path: Path) -> dict[str, object]:
    loaded: dict[str, object] = yaml.safe_load(path.read_text().split("---\n")[1])
    return loaded


def test_the_digest_follows_the_agent_and_keeps_no_raw_message(cli, workspace: Path) -> None:  # type: ignore[no-untyped-def]
    repo = workspace
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    # The file the correction names exists (a missing one would be told as needing checking).
    (repo / "src" / "net").mkdir(parents=True)
    (repo / "src" / "net" / "client.py").write_text("def upload():\n    pass\n")

    def hook(event: str, **extra: object) -> None:
        result = cli(
            "hook",
            "claude-code",
            event,
            cwd=repo,
            stdin=hook_payload(event, SESSION, repo, **extra),
        )
        assert result.code == 0 and result.stderr == ""

    hook("SessionStart", source="startup")
    for prompt in PROMPTS:
        hook("UserPromptSubmit", prompt=prompt)
        hook("Stop", stop_hook_active=False, last_assistant_message="Done.")
    # The first Stop wrote a digest: the agent running the session (the control).
    (first,) = _digests(repo)
    assert "**Active Agent:** @claude-code" in first.read_text()

    state = cli("session", "state", SESSION, "--agent", "@qa", "--story", "MIS-7", cwd=repo)
    assert state.code == 0, state.stderr
    hook("PreCompact", trigger="manual", custom_instructions="")
    latest = _digests(repo)[-1]
    assert latest != first
    text = latest.read_text()
    assert _front(latest)["agent_context"] == "@qa implementing Story MIS-7"
    read = digest.read_digest(latest)
    assert read.sections["context_snapshot"]["active_agent"] == "@qa"
    assert read.sections["context_snapshot"]["active_story"] == "MIS-7"

    # The lessons are there, in the digest's words...
    assert read.sections["user_corrections"] == [
        "The retry belongs in src/net/client.py, not in the uploader"
    ]
    assert read.sections["axioms_learned"] == ["Always: run make check before committing"]
    (repeat,) = [p for p in read.sections["patterns_observed"] if "same request" in p]
    assert repeat == "the same request 2 times (prompts 1, 3): add retry upload client"
    # ...and none of the user's messages: not whole, not one sentence of them, no e-mail address.
    history = cli("session", "history", SESSION, "--json", cwd=repo).json()
    assert [t["user_message"] for t in history["turns"]] == list(PROMPTS)  # the store has them
    for prompt in PROMPTS:
        assert prompt not in text
        for sentence in re.findall(r"[^.!?]+[.!?]", prompt):
            if len(sentence.split()) >= 4:
                assert sentence.strip() not in text, sentence
    assert "jane.doe" not in text and "example.com" not in text
