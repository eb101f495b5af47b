"""Claude Code transcripts built line by line from the documented format (shared/notes/claude-code.md).

`Transcript` writes what Claude Code writes: the common envelope on every line, one content
block per assistant line with the response's `usage` repeated (a partial output count on the
early lines, the final one on the last), tool results with `toolUseResult`, meta lines, command
echoes, compaction (boundary + model-written summary), inline sidechains, and the line types a
parser must skip. `realistic_session` is the scenario most agent tests assert exact counts on.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

# Secrets embedded in the scenario; none may reach the store's bytes or any export.
ANTHROPIC_KEY = "sk-ant-api03-" + "Zx8" * 12 + "AbCdEfGh"
GITHUB_TOKEN = "ghp_" + "a1B2c3D4e5" * 4
DB_PASSWORD = "hunter2-s3cr3t-pw"
SECRETS = (ANTHROPIC_KEY, GITHUB_TOKEN, DB_PASSWORD)

FAILING_COMMAND = "pytest tests/test_login.py"
FAILURE_OUTPUT = (
    "FAILED tests/test_login.py::test_login - AssertionError: expected status 200, got 500\n"
    "1 failed, 4 passed in 0.12s"
)
WORKING_COMMAND = "pytest tests/test_login.py --no-cov"
CORRECTION = (
    "No, don't touch auth.py: the bug is in the session cookie. Always run the tests with --no-cov."
)


@dataclass
class Transcript:
    session_id: str
    cwd: Path
    branch: str = "main"
    version: str = "2.1.39"
    # Real transcripts (2.1.14 to 2.1.39) carry `stop_reason: null` on every line, the last line
    # of a response included; only some older builds wrote "tool_use"/"end_turn" there.
    writes_stop_reason: bool = False
    # Yesterday: recent enough that retention (90 days by default) keeps what the tests ingest.
    start: datetime = field(
        default_factory=lambda: (datetime.now(UTC) - timedelta(days=1)).replace(
            minute=0, second=0, microsecond=0
        )
    )
    lines: list[str] = field(default_factory=list)
    _clock: int = 0
    _uuid: int = 0
    _last: str | None = None
    _message: int = 0

    # -- envelope -------------------------------------------------------------------------

    def ts(self) -> str:
        self._clock += 2
        moment = self.start + timedelta(seconds=self._clock)
        return moment.strftime("%Y-%m-%dT%H:%M:%S.000Z")

    def next_uuid(self, prefix: str = "l") -> str:
        self._uuid += 1
        return f"{prefix}-{self.session_id[:4]}-{self._uuid:05d}"

    def envelope(
        self,
        kind: str,
        *,
        sidechain: bool = False,
        agent_id: str | None = None,
        parent: Any = "last",
    ) -> dict[str, Any]:
        uuid = self.next_uuid()
        line: dict[str, Any] = {
            "parentUuid": self._last if parent == "last" else parent,
            "isSidechain": sidechain,
            "userType": "external",
            "cwd": str(self.cwd),
            "sessionId": self.session_id,
            "version": self.version,
            "gitBranch": self.branch,
            "type": kind,
            "uuid": uuid,
            "timestamp": self.ts(),
            "someFutureField": {"added": "in a newer release"},
        }
        if agent_id:
            line["agentId"] = agent_id
        if not sidechain:
            self._last = uuid
        return line

    def write(self, line: dict[str, Any]) -> None:
        text = json.dumps(line, ensure_ascii=False)
        try:
            text.encode("utf-8")
        except UnicodeEncodeError:
            text = json.dumps(line)  # a lone surrogate: Claude Code writes it as a \uXXXX escape
        self.lines.append(text)

    # -- lines ----------------------------------------------------------------------------

    def prompt(self, text: str, **extra: Any) -> str:
        line = self.envelope("user")
        line["message"] = {"role": "user", "content": text}
        line.update(extra)
        self.write(line)
        return str(line["uuid"])

    def meta(self, text: str) -> None:
        line = self.envelope("user")
        line["isMeta"] = True
        line["message"] = {"role": "user", "content": text}
        self.write(line)

    def response(
        self,
        blocks: list[dict[str, Any]],
        *,
        stop_reason: str | None = None,
        input_tokens: int = 12,
        output_tokens: int = 50,
        cache_creation: int = 300,
        cache_read: int = 9000,
        sidechain: bool = False,
        agent_id: str | None = None,
        model: str = "claude-sonnet-4-6",
        message_id: str | None = None,
    ) -> str:
        """One API response, one line per content block; early lines carry a partial output count."""
        self._message += 1
        message_id = message_id or f"msg_{self.session_id[:4]}_{self._message:03d}"
        for index, block in enumerate(blocks):
            last = index == len(blocks) - 1
            line = self.envelope("assistant", sidechain=sidechain, agent_id=agent_id)
            line["requestId"] = f"req_{message_id}"
            line["message"] = {
                "id": message_id,
                "type": "message",
                "role": "assistant",
                "model": model,
                "content": [block],
                "stop_reason": stop_reason if last and self.writes_stop_reason else None,
                "stop_sequence": None,
                "usage": {
                    "input_tokens": input_tokens,
                    "cache_creation_input_tokens": cache_creation,
                    "cache_read_input_tokens": cache_read,
                    "output_tokens": output_tokens if last else 1,
                    "service_tier": "standard",
                },
            }
            self.write(line)
        return message_id

    def tool_result(
        self,
        tool_use_id: str,
        content: str,
        *,
        is_error: bool = False,
        result: Any = None,
        sidechain: bool = False,
        agent_id: str | None = None,
    ) -> None:
        line = self.envelope("user", sidechain=sidechain, agent_id=agent_id)
        block: dict[str, Any] = {
            "tool_use_id": tool_use_id,
            "type": "tool_result",
            "content": content,
        }
        if is_error:
            block["is_error"] = True
        line["message"] = {"role": "user", "content": [block]}
        line["toolUseResult"] = result
        self.write(line)

    def compaction(self, trigger: str = "auto", pre_tokens: int = 155000) -> None:
        if trigger == "manual":
            self.meta(
                "<local-command-caveat>Caveat: The messages below were generated by the user while running local commands.</local-command-caveat>"
            )
            self.prompt(
                "<command-name>/compact</command-name>\n<command-message>compact</command-message>\n<command-args></command-args>"
            )
        boundary = self.envelope("system", parent=None)
        boundary.update(
            {
                "subtype": "compact_boundary",
                "content": "Conversation compacted",
                "level": "info",
                "logicalParentUuid": self._last,
                "compactMetadata": {"trigger": trigger, "preTokens": pre_tokens},
            }
        )
        self.write(boundary)
        summary = self.envelope("user")
        summary["isCompactSummary"] = True
        summary["isVisibleInTranscriptOnly"] = True
        summary["message"] = {
            "role": "user",
            "content": "This session is being continued from a previous conversation that ran out of context. "
            "Summary: the login test fails because of the session cookie.",
        }
        self.write(summary)

    def noise(self) -> None:
        """Lines that are not conversation: a parser must skip them all."""
        self.write({"type": "summary", "summary": "Fix login test", "leafUuid": self._last})
        self.write(
            {
                "type": "file-history-snapshot",
                "messageId": self._last,
                "snapshot": {"trackedFileBackups": {}},
                "isSnapshotUpdate": False,
            }
        )
        progress = self.envelope("progress", parent=self._last)
        progress["data"] = {"type": "bash_progress", "output": "running"}
        self.write(progress)
        self.write(
            {
                "type": "queue-operation",
                "operation": "enqueue",
                "content": "later",
                "sessionId": self.session_id,
            }
        )
        self.write({"type": "ai-title", "title": "Login fix", "sessionId": self.session_id})
        self.prompt("[Request interrupted by user for tool use]")
        self.prompt("<bash-input>ls</bash-input>")

    def save(self, path: Path) -> Path:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("\n".join(self.lines) + "\n", encoding="utf-8")
        return path


def tool_use(tool_id: str, name: str, **tool_input: Any) -> dict[str, Any]:
    return {"type": "tool_use", "id": tool_id, "name": name, "input": tool_input}


def text(value: str) -> dict[str, Any]:
    return {"type": "text", "text": value}


def thinking() -> dict[str, Any]:
    return {"type": "thinking", "thinking": "", "signature": "EqQBCkYIBxgCKkA"}


@dataclass
class Expected:
    prompts: int
    turns: int
    main_messages: int
    sidechain_messages: int
    tool_calls: dict[str, int]
    failures: int
    modified_files: list[str]
    input_tokens: int
    output_tokens: int
    turn_tokens: list[tuple[int, int]]


def realistic_session(
    root: Path, session_id: str = "5f2c1d4e-aaaa-bbbb-cccc-123456789abc"
) -> tuple[Transcript, Expected]:
    """Three turns: a failing test retried 3 times, a user correction with a rule, a subagent,
    an auto compaction, and secrets in a prompt and a command."""
    (root / "src").mkdir(exist_ok=True)
    auth_before = "def login(user):\n    return check(user)\n"
    (root / "src" / "auth.py").write_text(
        auth_before.replace("check(user)", "check(user, strict=True)")
    )
    session_before = "COOKIE = 'sid'\nSECURE = False\n"
    t = Transcript(session_id, root)
    t.noise()

    # Turn 1: investigate, edit, and a command that fails three times.
    t.prompt("The login test fails, please fix it")
    t.response(
        [
            thinking(),
            text("Let me look at the auth code."),
            tool_use("toolu_read1", "Read", file_path=str(root / "src/auth.py")),
        ],
        stop_reason="tool_use",
        input_tokens=10,
        output_tokens=40,
    )
    t.tool_result(
        "toolu_read1",
        "1\tdef login(user):",
        result={
            "type": "text",
            "file": {
                "filePath": str(root / "src/auth.py"),
                "content": auth_before,
                "numLines": 2,
                "startLine": 1,
                "totalLines": 2,
            },
        },
    )
    t.response(
        [tool_use("toolu_grep1", "Grep", pattern="def check", path=str(root))],
        stop_reason="tool_use",
        input_tokens=11,
        output_tokens=20,
    )
    t.tool_result(
        "toolu_grep1",
        "src/auth.py",
        result={"mode": "files_with_matches", "filenames": ["src/auth.py"], "numFiles": 1},
    )
    t.response(
        [
            tool_use(
                "toolu_edit1",
                "Edit",
                file_path=str(root / "src/auth.py"),
                old_string="check(user)",
                new_string="check(user, strict=True)",
            )
        ],
        stop_reason="tool_use",
        input_tokens=12,
        output_tokens=30,
    )
    t.tool_result(
        "toolu_edit1",
        "The file src/auth.py has been updated.",
        result={
            "filePath": str(root / "src/auth.py"),
            "oldString": "check(user)",
            "newString": "check(user, strict=True)",
            "originalFile": auth_before,
            "userModified": False,
            "replaceAll": False,
            "structuredPatch": [
                {
                    "oldStart": 2,
                    "oldLines": 1,
                    "newStart": 2,
                    "newLines": 1,
                    "lines": ["-    return check(user)", "+    return check(user, strict=True)"],
                }
            ],
        },
    )
    for attempt in range(1, 4):
        t.response(
            [
                tool_use(
                    f"toolu_bash_fail{attempt}",
                    "Bash",
                    command=FAILING_COMMAND,
                    description="Run the login test",
                )
            ],
            stop_reason="tool_use",
            input_tokens=13,
            output_tokens=25,
        )
        t.tool_result(
            f"toolu_bash_fail{attempt}",
            f"Exit code 1\n{FAILURE_OUTPUT}",
            is_error=True,
            result=f"Error: Exit code 1\n{FAILURE_OUTPUT}",
        )
    t.response(
        [text("The test still fails after my change.")],
        stop_reason="end_turn",
        input_tokens=14,
        output_tokens=60,
    )

    # Turn 2: the user corrects the agent and states a rule; a subagent runs inline (sidechain).
    t.prompt(CORRECTION)
    t.response(
        [
            tool_use(
                "toolu_multi1",
                "MultiEdit",
                file_path=str(root / "src/session.py"),
                edits=[
                    {
                        "old_string": "SECURE = False",
                        "new_string": "SECURE = True",
                        "replace_all": False,
                    }
                ],
            )
        ],
        stop_reason="tool_use",
        input_tokens=15,
        output_tokens=35,
    )
    t.tool_result(
        "toolu_multi1",
        "Applied 1 edit to src/session.py",
        result={
            "filePath": str(root / "src/session.py"),
            "edits": [
                {
                    "old_string": "SECURE = False",
                    "new_string": "SECURE = True",
                    "replace_all": False,
                }
            ],
            "originalFileContents": session_before,
            "userModified": False,
            "structuredPatch": [
                {
                    "oldStart": 2,
                    "oldLines": 1,
                    "newStart": 2,
                    "newLines": 1,
                    "lines": ["-SECURE = False", "+SECURE = True"],
                }
            ],
        },
    )
    t.response(
        [
            tool_use(
                "toolu_write1",
                "Write",
                file_path=str(root / "src/cookie.py"),
                content="NAME = 'sid'\n",
            )
        ],
        stop_reason="tool_use",
        input_tokens=16,
        output_tokens=45,
    )
    t.tool_result(
        "toolu_write1",
        "File created successfully at: src/cookie.py",
        result={
            "type": "create",
            "filePath": str(root / "src/cookie.py"),
            "content": "NAME = 'sid'\n",
            "structuredPatch": [],
            "originalFile": None,
        },
    )
    t.response(
        [tool_use("toolu_bash_ok1", "Bash", command=WORKING_COMMAND)],
        stop_reason="tool_use",
        input_tokens=17,
        output_tokens=22,
    )
    t.tool_result(
        "toolu_bash_ok1",
        "5 passed in 0.10s",
        result={
            "stdout": "5 passed in 0.10s",
            "stderr": "",
            "interrupted": False,
            "isImage": False,
        },
    )
    t.response(
        [
            tool_use(
                "toolu_agent1",
                "Agent",
                prompt="Find other cookie users",
                description="search",
                subagent_type="Explore",
            )
        ],
        stop_reason="tool_use",
        input_tokens=18,
        output_tokens=33,
    )
    agent = "a7dd4f3b8ec5e486c"
    side = t.envelope("user", sidechain=True, agent_id=agent, parent=None)
    side["message"] = {"role": "user", "content": "Find other cookie users"}
    t.write(side)
    t.response(
        [tool_use("toolu_side_grep", "Grep", pattern="COOKIE")],
        stop_reason="tool_use",
        sidechain=True,
        agent_id=agent,
        model="claude-haiku-4-5",
        input_tokens=100,
        output_tokens=15,
        cache_creation=0,
        cache_read=0,
    )
    t.tool_result(
        "toolu_side_grep",
        "src/session.py",
        sidechain=True,
        agent_id=agent,
        result={"mode": "files_with_matches", "filenames": ["src/session.py"], "numFiles": 1},
    )
    t.response(
        [text("Only src/session.py uses it.")],
        stop_reason="end_turn",
        sidechain=True,
        agent_id=agent,
        model="claude-haiku-4-5",
        input_tokens=101,
        output_tokens=12,
        cache_creation=0,
        cache_read=0,
    )
    t.tool_result(
        "toolu_agent1",
        "Only src/session.py uses it.",
        result={
            "status": "completed",
            "agentId": agent,
            "content": [{"type": "text", "text": "Only src/session.py uses it."}],
            "totalTokens": 228,
        },
    )
    t.response(
        [text("Fixed: the cookie is secure now and the test passes.")],
        stop_reason="end_turn",
        input_tokens=19,
        output_tokens=70,
    )

    t.compaction("auto")

    # Turn 3: secrets in the prompt and in a command.
    t.prompt(
        f"Deploy to staging with key {ANTHROPIC_KEY}; the database is postgres://admin:{DB_PASSWORD}@db.local/app"
    )
    t.response(
        [
            tool_use(
                "toolu_bash_ok2",
                "Bash",
                command=f'curl -H "Authorization: Bearer {GITHUB_TOKEN}" https://api.github.com/user',
            )
        ],
        stop_reason="tool_use",
        input_tokens=20,
        output_tokens=28,
    )
    t.tool_result(
        "toolu_bash_ok2",
        '{"login": "me"}',
        result={"stdout": '{"login": "me"}', "stderr": "", "interrupted": False, "isImage": False},
    )
    t.response([text("Deployed.")], stop_reason="end_turn", input_tokens=21, output_tokens=9)

    turn1 = (10 + 11 + 12 + 13 * 3 + 14, 40 + 20 + 30 + 25 * 3 + 60)
    turn2 = (15 + 16 + 17 + 18 + 19, 35 + 45 + 22 + 33 + 70)
    turn3 = (20 + 21, 28 + 9)
    expected = Expected(
        prompts=3,
        turns=3,
        main_messages=14,
        sidechain_messages=2,
        tool_calls={
            "Read": 1,
            "Grep": 2,
            "Edit": 1,
            "Bash": 5,
            "MultiEdit": 1,
            "Write": 1,
            "Agent": 1,
        },
        failures=3,
        modified_files=["src/auth.py", "src/cookie.py", "src/session.py"],
        input_tokens=turn1[0] + turn2[0] + turn3[0],
        output_tokens=turn1[1] + turn2[1] + turn3[1],
        turn_tokens=[turn1, turn2, turn3],
    )
    return t, expected


def hook_payload(
    event: str, session_id: str, cwd: Path, transcript: Path | None = None, **extra: Any
) -> str:
    data: dict[str, Any] = {
        "session_id": session_id,
        "transcript_path": str(transcript) if transcript else f"/nonexistent/{session_id}.jsonl",
        "cwd": str(cwd),
        "hook_event_name": event,
        "permission_mode": "default",
        "a_field_from_the_future": [1, 2, 3],
    }
    data.update(extra)
    return json.dumps(data)


# -- the oracle -------------------------------------------------------------------------------


def reference_figures(paths: list[Path]) -> dict[str, dict[str, Any]]:
    """Per session id, what a transcript holds, counted straight from the format.

    Written from the published format and ccusage's rules, not from engram's code: usage is
    de-duplicated per `message.id` keeping the copy with the largest total (a main-chain copy
    beats a sidechain replay), `<synthetic>` messages carry no usage, a human prompt is a user
    line that is not a sidechain, meta, compaction summary, tool result, command echo or
    interrupt; a tool call failed when its result says `is_error`.
    """
    usage: dict[str, tuple[str, bool, dict[str, int]]] = {}
    out: dict[str, dict[str, Any]] = {}

    def session(sid: str) -> dict[str, Any]:
        return out.setdefault(
            sid,
            {"prompts": 0, "tool_calls": 0, "failed": 0, "first": None, "last": None},
        )

    for path in paths:
        for raw in path.read_text(encoding="utf-8").splitlines():
            try:
                line = json.loads(raw)
            except ValueError:
                continue
            if not isinstance(line, dict) or line.get("type") not in (
                "user",
                "assistant",
                "system",
            ):
                continue
            sid = line.get("sessionId")
            if not isinstance(sid, str):
                continue
            figures = session(sid)
            stamp = line.get("timestamp")
            if isinstance(stamp, str):
                figures["first"] = min(filter(None, [figures["first"], stamp]))
                figures["last"] = max(filter(None, [figures["last"], stamp]))
            side = line.get("isSidechain") is True
            message = line.get("message") or {}
            if line["type"] == "assistant":
                if message.get("model") == "<synthetic>":
                    continue
                for block in message.get("content") or []:
                    if block.get("type") == "tool_use":
                        figures["tool_calls"] += 1
                u = message.get("usage") or {}
                counts = {
                    "input_tokens": u.get("input_tokens", 0),
                    "output_tokens": u.get("output_tokens", 0),
                    "cache_creation_tokens": u.get("cache_creation_input_tokens", 0),
                    "cache_read_tokens": u.get("cache_read_input_tokens", 0),
                }
                key = message.get("id") or line.get("uuid")
                held = usage.get(key)
                if (
                    held is None
                    or (held[1] and not side)
                    or (held[1] == side and sum(counts.values()) > sum(held[2].values()))
                ):
                    usage[key] = (sid, side, counts)
            elif line["type"] == "user":
                content = message.get("content")
                if isinstance(content, list):
                    for block in content:
                        if (
                            isinstance(block, dict)
                            and block.get("type") == "tool_result"
                            and block.get("is_error") is True
                        ):
                            figures["failed"] += 1
                    if any(isinstance(b, dict) and b.get("type") == "tool_result" for b in content):
                        continue
                    content = " ".join(b.get("text", "") for b in content if isinstance(b, dict))
                text_ = str(content or "").lstrip()
                if (
                    side
                    or line.get("isMeta")
                    or line.get("isCompactSummary")
                    or not text_
                    or text_.startswith(
                        ("<command-", "<local-command", "<bash-", "<task-notification")
                    )
                    or text_.startswith("[Request interrupted")
                ):
                    continue
                figures["prompts"] += 1
    for sid, side, counts in usage.values():
        figures = session(sid)
        part = figures.setdefault("subagents" if side else "main", {"messages": 0})
        part["messages"] += 1
        for kind, value in counts.items():
            part[kind] = part.get(kind, 0) + value
    for figures in out.values():
        for part in ("main", "subagents"):
            figures.setdefault(part, {"messages": 0})
            for kind in (
                "input_tokens",
                "output_tokens",
                "cache_creation_tokens",
                "cache_read_tokens",
            ):
                figures[part].setdefault(kind, 0)
    return out


# -- a session shaped like the real ones (Claude Code 2.1.x) ----------------------------------

NPM_BUILD_FAILURE = (
    "> app@1.0.0 build\n> tsc -p .\n\n"
    "src/index.ts(3,13): error TS2304: Cannot find name 'missingThing'.\n"
    "npm error Lifecycle script `build` failed with error:\n"
    "npm error code 2\n"
)
# The text Claude Code 2.1.143 gives the agent for a call a PreToolUse hook denied
# (anthropics/claude-code#59643).
HOOK_BLOCK = "Hook PreToolUse:Bash denied this tool"


def real_shaped_session(
    workspace: Path,
    transcript_cwd: Path,
    folder: Path,
    session_id: str = "7d0c2a9e-1111-4222-8333-444455556666",
    start: datetime | None = None,
) -> list[Path]:
    """A session as Claude Code 2.1.x writes it, into `folder`: `<id>.jsonl` and
    `<id>/subagents/agent-*.jsonl` (a task agent and the compaction agent `agent-acompact-*`).

    `stop_reason` is null on every line; responses are split over lines with a growing
    output count; an auto compaction in the middle of an answer, after which the agent goes on
    with no new prompt; meta and local-command lines; an interrupt; a `<synthetic>` message;
    a task notification; failures phrased without `Exit code` (npm), blocked by a hook, and a
    failing command that later succeeds; an edit under `transcript_cwd` (which need not be the
    workspace) and one outside every project. The subagent files are dated inside the session
    but may be read first.
    """
    t = Transcript(session_id, transcript_cwd)
    if start is not None:
        t.start = start
    t.meta(
        "<local-command-caveat>Caveat: The messages below were generated by the user while running local commands. DO NOT respond to these messages or otherwise consider them in your response unless the user explicitly asks you to.</local-command-caveat>"
    )
    t.prompt(
        "<command-name>/model</command-name>\n<command-message>model</command-message>\n<command-args></command-args>"
    )
    t.prompt("<local-command-stdout>Set model to opus</local-command-stdout>")
    # Turn 1: a build that fails without "Exit code" in its text, then an edit and a success.
    t.prompt("Make the build pass")
    t.response(
        [
            thinking(),
            text("Running the build."),
            tool_use("toolu_b1", "Bash", command="npm run build"),
        ],
        input_tokens=3,
        output_tokens=180,
        cache_creation=5200,
        cache_read=14000,
    )
    t.tool_result(
        "toolu_b1", NPM_BUILD_FAILURE, is_error=True, result="Error: " + NPM_BUILD_FAILURE
    )
    t.response(
        [
            tool_use(
                "toolu_e1",
                "Edit",
                file_path=str(transcript_cwd / "src/index.ts"),
                old_string="missingThing",
                new_string="42",
            )
        ],
        input_tokens=1,
        output_tokens=95,
        cache_creation=700,
        cache_read=19200,
    )
    t.tool_result(
        "toolu_e1",
        "The file has been updated.",
        result={
            "filePath": str(transcript_cwd / "src/index.ts"),
            "oldString": "missingThing",
            "newString": "42",
            "originalFile": "const a = missingThing;\n",
            "structuredPatch": [
                {
                    "oldStart": 1,
                    "oldLines": 1,
                    "newStart": 1,
                    "newLines": 1,
                    "lines": ["-const a = missingThing;", "+const a = 42;"],
                }
            ],
            "userModified": False,
            "replaceAll": False,
        },
    )
    t.response(
        [tool_use("toolu_b2", "Bash", command="npm run build")],
        input_tokens=1,
        output_tokens=40,
        cache_creation=300,
        cache_read=19900,
    )
    t.tool_result(
        "toolu_b2",
        "> app@1.0.0 build\n> tsc -p .",
        result={
            "stdout": "> app@1.0.0 build\n> tsc -p .",
            "stderr": "",
            "interrupted": False,
            "isImage": False,
        },
    )
    # A hook blocks a call; the agent writes a plan outside the project.
    t.response(
        [tool_use("toolu_rm", "Bash", command="rm -rf /tmp/build-cache")],
        input_tokens=1,
        output_tokens=30,
        cache_creation=100,
        cache_read=20100,
    )
    t.tool_result("toolu_rm", HOOK_BLOCK, is_error=True, result="Error: " + HOOK_BLOCK)
    plan = Path.home() / ".claude" / "plans" / "build-plan.md"
    t.response(
        [tool_use("toolu_plan", "Write", file_path=str(plan), content="# Plan\n")],
        input_tokens=1,
        output_tokens=60,
        cache_creation=90,
        cache_read=20300,
    )
    t.tool_result(
        "toolu_plan",
        f"File created successfully at: {plan}",
        result={
            "type": "create",
            "filePath": str(plan),
            "content": "# Plan\n",
            "structuredPatch": [],
            "originalFile": None,
        },
    )
    # A task agent (its lines are in subagents/agent-<id>.jsonl).
    t.response(
        [
            tool_use(
                "toolu_task",
                "Task",
                description="find callers",
                prompt="Find callers of main",
                subagent_type="Explore",
            )
        ],
        input_tokens=1,
        output_tokens=75,
        cache_creation=400,
        cache_read=20500,
    )
    sub = Transcript(session_id, transcript_cwd, start=t.start)
    sub._clock = t._clock  # the subagent runs while the parent waits
    sub._message = 100  # its own API responses: their ids differ from the parent's
    agent = "a3f9c1d2e4b5a6978"
    first = sub.envelope("user", sidechain=True, agent_id=agent, parent=None)
    first["message"] = {"role": "user", "content": "Find callers of main"}
    sub.write(first)
    sub.response(
        [tool_use("toolu_sg", "Grep", pattern="main(")],
        sidechain=True,
        agent_id=agent,
        model="claude-haiku-4-5",
        input_tokens=8,
        output_tokens=33,
        cache_creation=2100,
        cache_read=0,
    )
    sub.tool_result(
        "toolu_sg",
        "src/index.ts",
        sidechain=True,
        agent_id=agent,
        result={"mode": "files_with_matches", "filenames": ["src/index.ts"], "numFiles": 1},
    )
    sub.response(
        [text("One caller: src/index.ts.")],
        sidechain=True,
        agent_id=agent,
        model="claude-haiku-4-5",
        input_tokens=9,
        output_tokens=21,
        cache_creation=0,
        cache_read=2100,
    )
    t._clock = sub._clock
    t.tool_result(
        "toolu_task",
        "One caller: src/index.ts.",
        result={
            "status": "completed",
            "agentId": agent,
            "content": [{"type": "text", "text": "One caller: src/index.ts."}],
            "totalTokens": 2163,
            "totalToolUseCount": 1,
        },
    )
    # Auto compaction in the middle of the answer (the compaction agent has its own file) ...
    compactor = Transcript(session_id, transcript_cwd, start=t.start)
    compactor._clock = t._clock
    compactor._message = 200
    cagent = "acompact-5e6f7a8b9c"
    cfirst = compactor.envelope("user", sidechain=True, agent_id=cagent, parent=None)
    cfirst["message"] = {"role": "user", "content": "Summarize the conversation so far."}
    compactor.write(cfirst)
    compactor.response(
        [text("Summary: build fixed; callers found.")],
        sidechain=True,
        agent_id=cagent,
        input_tokens=12,
        output_tokens=410,
        cache_creation=0,
        cache_read=21000,
    )
    t._clock = compactor._clock
    t.compaction("auto", pre_tokens=167000)
    # ... and the agent goes on with no new prompt: these belong to turn 1 and the session.
    t.response(
        [text("Build passes now."), tool_use("toolu_t1", "Bash", command="npm test")],
        input_tokens=2,
        output_tokens=66,
        cache_creation=6000,
        cache_read=3000,
    )
    t.tool_result(
        "toolu_t1",
        "Exit code 1\nFAIL src/index.test.ts",
        is_error=True,
        result="Error: Exit code 1\nFAIL src/index.test.ts",
    )
    t.response(
        [text("The test still fails; it expects the old constant.")],
        input_tokens=1,
        output_tokens=25,
        cache_creation=80,
        cache_read=9000,
    )
    # A synthetic message (no API call, no usage), then the user interrupts.
    synthetic = t.envelope("assistant")
    synthetic["message"] = {
        "id": "synthetic-1",
        "type": "message",
        "role": "assistant",
        "model": "<synthetic>",
        "content": [text("API Error: overloaded")],
        "stop_reason": "stop_sequence",
        "stop_sequence": "",
        "usage": {
            "input_tokens": 0,
            "output_tokens": 0,
            "cache_creation_input_tokens": 0,
            "cache_read_input_tokens": 0,
        },
    }
    synthetic["isApiErrorMessage"] = True
    t.write(synthetic)
    t.prompt("[Request interrupted by user]")
    # Turn 2: a task notification arrives, the user asks again; the test passes; a reply ends it.
    note = t.envelope("user")
    note["message"] = {
        "role": "user",
        "content": "<task-notification><task-id>b1</task-id><status>completed</status></task-notification>",
    }
    note["origin"] = {"kind": "task-notification"}
    t.write(note)
    t.prompt("No, don't change the build script. Always run npm test after a build.")
    t.response(
        [text("Understood.")], input_tokens=1, output_tokens=5, cache_creation=0, cache_read=9100
    )
    t.prompt("Update the test to the new constant and run it")
    t.response(
        [tool_use("toolu_t2", "Bash", command="npm test")],
        input_tokens=1,
        output_tokens=22,
        cache_creation=150,
        cache_read=9200,
    )
    t.tool_result(
        "toolu_t2",
        "PASS src/index.test.ts",
        result={
            "stdout": "PASS src/index.test.ts",
            "stderr": "",
            "interrupted": False,
            "isImage": False,
        },
    )
    t.response(
        [text("All done: the build and the tests pass.")],
        input_tokens=1,
        output_tokens=14,
        cache_creation=40,
        cache_read=9400,
    )
    main = t.save(folder / f"{session_id}.jsonl")
    subdir = folder / session_id / "subagents"
    return [
        main,
        sub.save(subdir / f"agent-{agent}.jsonl"),
        compactor.save(subdir / f"agent-{cagent}.jsonl"),
    ]


# -- Gemini CLI recorded chats ----------------------------------------------------------------


def gemini_shell_output(command: str, output: str, exit_code: int) -> str:
    """What Gemini CLI's run_shell_command hands the model (its llmContent report)."""
    return (
        f"Command: {command}\nDirectory: (root)\nOutput: {output}\nError: (none)\n"
        f"Exit Code: {exit_code}\nSignal: (none)\nBackground PIDs: (none)\nProcess Group PGID: 4242"
    )


def gemini_chat(
    root: Path, path: Path, session_id: str = "3b7e9f10-aaaa-4bbb-8ccc-ddddeeeeffff"
) -> Path:
    """A chat as gemini-cli's ChatRecordingService writes it (JSONL upsert log): metadata, a
    message rewritten as its tool calls finish and its tokens arrive, a rewind, a `$set`, an
    info line, a shell command failing with `Exit Code: 1` (status success), a cancelled call,
    an edit, and a final reply."""
    start = datetime.now(UTC) - timedelta(days=1)

    def at(seconds: int) -> str:
        return (start + timedelta(seconds=seconds)).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"

    def shell(
        call_id: str, command: str, output: str, code: int, status: str, t: int
    ) -> dict[str, Any]:
        return {
            "id": call_id,
            "name": "run_shell_command",
            "args": {"command": command},
            "result": [
                {
                    "functionResponse": {
                        "id": call_id,
                        "name": "run_shell_command",
                        "response": {"output": gemini_shell_output(command, output, code)},
                    }
                }
            ],
            "status": status,
            "timestamp": at(t),
        }

    tokens1 = {
        "input": 8200,
        "output": 120,
        "cached": 6000,
        "thoughts": 40,
        "tool": 0,
        "total": 8360,
    }
    tokens2 = {
        "input": 9100,
        "output": 60,
        "cached": 8000,
        "thoughts": 0,
        "tool": 15,
        "total": 9175,
    }
    tokens3 = {"input": 9400, "output": 30, "cached": 9000, "thoughts": 10, "total": 9440}
    edit = {
        "id": "call-edit",
        "name": "replace",
        "args": {
            "file_path": str(root / "src/app.py"),
            "old_string": "x = 1",
            "new_string": "x = 2",
        },
        "result": [
            {
                "functionResponse": {
                    "id": "call-edit",
                    "name": "replace",
                    "response": {"output": "Successfully modified file"},
                }
            }
        ],
        "status": "success",
        "timestamp": at(30),
    }
    records: list[dict[str, Any]] = [
        {
            "sessionId": session_id,
            "projectHash": "9f86d081884c7d659a2feaa0c55ad015",
            "startTime": at(0),
            "lastUpdated": at(0),
            "kind": "main",
            "directories": [str(root)],
        },
        {"id": "m-info", "timestamp": at(1), "type": "info", "content": "Logged in with Google."},
        {"id": "m-u1", "timestamp": at(2), "type": "user", "content": [{"text": "Run the tests"}]},
        # The response as first written (the call still running, no tokens yet) ...
        {
            "id": "m-g1",
            "timestamp": at(3),
            "type": "gemini",
            "content": "",
            "model": "gemini-2.5-pro",
            "thoughts": [],
            "toolCalls": [{**shell("call-t1", "npm test", "", 0, "executing", 3), "result": None}],
        },
        # ... rewritten when it finished (it failed: Exit Code 1, status success) ...
        {
            "id": "m-g1",
            "timestamp": at(3),
            "type": "gemini",
            "content": "",
            "model": "gemini-2.5-pro",
            "thoughts": [],
            "toolCalls": [shell("call-t1", "npm test", "1 failing", 1, "success", 3)],
        },
        # ... and again with its tokens.
        {
            "id": "m-g1",
            "timestamp": at(3),
            "type": "gemini",
            "content": "",
            "model": "gemini-2.5-pro",
            "thoughts": [],
            "tokens": tokens1,
            "toolCalls": [shell("call-t1", "npm test", "1 failing", 1, "success", 3)],
        },
        # An exchange the user rewound: never counted.
        {"id": "m-u-rew", "timestamp": at(10), "type": "user", "content": "delete everything"},
        {
            "id": "m-g-rew",
            "timestamp": at(11),
            "type": "gemini",
            "content": "Deleting.",
            "model": "gemini-2.5-pro",
            "tokens": {"input": 50000, "output": 5000, "cached": 0, "total": 55000},
        },
        {"$rewindTo": "m-u-rew"},
        {"$set": {"summary": "Fix the failing test", "lastUpdated": at(12)}},
        {
            "id": "m-u2",
            "timestamp": at(20),
            "type": "user",
            "content": "Fix it, then run them again",
        },
        {
            "id": "m-g2",
            "timestamp": at(30),
            "type": "gemini",
            "content": "Fixing the constant.",
            "model": "gemini-2.5-pro",
            "tokens": tokens2,
            "toolCalls": [
                edit,
                {**shell("call-cancel", "rm -rf build", "", 0, "cancelled", 31), "result": None},
            ],
        },
        {
            "id": "m-g3",
            "timestamp": at(40),
            "type": "gemini",
            "content": "",
            "model": "gemini-2.5-pro",
            "toolCalls": [shell("call-t2", "npm test", "all passing", 0, "success", 40)],
        },
        {
            "id": "m-g4",
            "timestamp": at(50),
            "type": "gemini",
            "content": "The tests pass now.",
            "model": "gemini-2.5-pro",
            "tokens": tokens3,
        },
        {"id": "m-slash", "timestamp": at(55), "type": "user", "content": "/stats"},
    ]
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return path
