"""engram end to end, on a sample workspace, the way a newcomer would see it.

1. A sample project (a git repository) and `engram init` / `engram status`.
2. A Claude Code session, fed to engram through its real hook entry point
   (`engram hook claude-code EVENT` with the JSON Claude Code sends on stdin): the agent runs the
   tests three times and hits the same TypeError each time, so engram learns a gotcha.
3. A real LSP client starts `engram lsp`, opens the file, and gets the gotcha as a diagnostic
   and a hover.
4. A checkpoint, a bad edit, a rollback that restores the file byte for byte.
5. The session's summary.

Run it with `bash scripts/demo.sh` (which sets everything up first).
"""

from __future__ import annotations

import asyncio
import json
import os
import shlex
import shutil
import subprocess
import sys
import tempfile
import textwrap
import uuid
from pathlib import Path
from typing import Any

from lsprotocol import types
from pygls.lsp.client import LanguageClient

BOLD, DIM, GREEN, RED, RESET = (
    ("\033[1m", "\033[2m", "\033[32m", "\033[31m", "\033[0m") if sys.stdout.isatty() else ("",) * 5
)

BILLING = textwrap.dedent(
    '''\
    """Invoices: when is a payment due?"""

    from datetime import datetime, timedelta


    def is_overdue(issued_at: datetime, days: int = 30) -> bool:
        # issued_at comes from the database, timezone-aware
        return issued_at + timedelta(days=days) < datetime.utcnow()
    '''
)

TEST_BILLING = textwrap.dedent(
    """\
    from datetime import datetime, timezone

    from app.billing import is_overdue


    def test_an_old_invoice_is_overdue():
        assert is_overdue(datetime(2020, 1, 1, tzinfo=timezone.utc))
    """
)


def pytest_failure(run: int) -> str:
    """What `pytest` printed when the agent ran it: the same error, other numbers each time."""
    return textwrap.dedent(
        f"""\
        Exit code 1
        ============================= test session starts ==============================
        collected 1 item

        tests/test_billing.py F                                                  [100%]

        =================================== FAILURES ===================================
        ________________________ test_an_old_invoice_is_overdue ________________________

            def test_an_old_invoice_is_overdue():
        >       assert is_overdue(datetime(2020, 1, 1, tzinfo=timezone.utc))

        tests/test_billing.py:7:
        _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _
        app/billing.py:8: in is_overdue
            return issued_at + timedelta(days=days) < datetime.utcnow()
        E   TypeError: can't compare offset-naive and offset-aware datetimes
        =========================== short test summary info ============================
        FAILED tests/test_billing.py::test_an_old_invoice_is_overdue - TypeError: can't compare offset-naive and offset-aware datetimes
        ============================== 1 failed in 0.{12 + run * 7}s ===============================
        """
    )


def step(title: str) -> None:
    print(f"\n{BOLD}== {title}{RESET}")


def engram(*args: str, cwd: Path, stdin: str | None = None, show: bool = True) -> str:
    """Run the real `engram` command as a user would, echo it and its output."""
    if show:
        print(f"{DIM}$ engram {shlex.join(args)}{RESET}")
    completed = subprocess.run(
        [sys.executable, "-m", "memory_core", *args],
        cwd=cwd,
        input=stdin,
        capture_output=True,
        text=True,
        timeout=120,
    )
    if completed.returncode != 0:
        print(completed.stdout + completed.stderr)
        raise SystemExit(
            f"{RED}demo failed: engram {' '.join(args)} exited {completed.returncode}{RESET}"
        )
    if show and completed.stdout.strip():
        print(textwrap.indent(completed.stdout.rstrip(), "  "))
    return completed.stdout


def hook(event: str, payload: dict[str, Any], cwd: Path) -> None:
    """Run `engram hook claude-code EVENT` with the JSON Claude Code would send on stdin."""
    if "tool_input" in payload:
        gist = f"{payload['tool_name']}: {payload['tool_input'].get('command', '')}"
    elif "prompt" in payload:
        gist = f"prompt: {payload['prompt']}"
    elif "last_assistant_message" in payload:
        gist = f"last message: {payload['last_assistant_message'][:60]}…"
    else:
        gist = f"source: {payload.get('source', '')}"
    print(f"{DIM}$ engram hook claude-code {event} < payload.json   # {gist}{RESET}")
    engram("hook", "claude-code", event, cwd=cwd, stdin=json.dumps(payload), show=False)


def make_workspace() -> Path:
    root = Path(tempfile.mkdtemp(prefix="engram-demo-")) / "shop"
    (root / "app").mkdir(parents=True)
    (root / "tests").mkdir()
    (root / "app" / "__init__.py").write_text("")
    (root / "app" / "billing.py").write_text(BILLING)
    (root / "tests" / "test_billing.py").write_text(TEST_BILLING)
    git = ["git", "-c", "user.name=demo", "-c", "user.email=demo@example.com"]
    subprocess.run([*git, "init", "-q", "-b", "main"], cwd=root, check=True)
    subprocess.run([*git, "add", "-A"], cwd=root, check=True)
    subprocess.run([*git, "commit", "-q", "-m", "billing"], cwd=root, check=True)
    return root


def agent_session(root: Path) -> str:
    session_id = str(uuid.uuid4())
    base = {
        "session_id": session_id,
        "cwd": str(root),
        "transcript_path": str(root / ".no-transcript.jsonl"),
    }
    hook("SessionStart", {**base, "hook_event_name": "SessionStart", "source": "startup"}, root)
    hook(
        "UserPromptSubmit",
        {**base, "hook_event_name": "UserPromptSubmit", "prompt": "Fix the failing billing test"},
        root,
    )
    for run in range(3):
        hook(
            "PostToolUseFailure",
            {
                **base,
                "hook_event_name": "PostToolUseFailure",
                "tool_name": "Bash",
                "tool_input": {
                    "command": "pytest -q tests/test_billing.py",
                    "description": "Run the tests",
                },
                "tool_use_id": f"toolu_demo{run}",
                "error": pytest_failure(run),
            },
            root,
        )
    hook(
        "Stop",
        {
            **base,
            "hook_event_name": "Stop",
            "stop_hook_active": False,
            "last_assistant_message": "The test fails because a naive utcnow() is compared with an aware datetime. "
            "Decision: always use datetime.now(timezone.utc). Open item: audit other utcnow() calls.",
        },
        root,
    )
    return session_id


async def editor_view(root: Path) -> None:
    """Start `engram lsp` as an editor does and show what the editor shows."""
    client = LanguageClient("engram-demo", "1")
    refreshed = asyncio.Event()

    @client.feature(types.CLIENT_REGISTER_CAPABILITY)
    def _register(params: types.RegistrationParams) -> None:
        return None

    @client.feature(types.WORKSPACE_CONFIGURATION)
    def _configuration(params: types.ConfigurationParams) -> list[Any]:
        return [{} for _ in params.items]

    @client.feature(types.WINDOW_WORK_DONE_PROGRESS_CREATE)
    def _progress(params: types.WorkDoneProgressCreateParams) -> None:
        return None

    @client.feature(types.WORKSPACE_DIAGNOSTIC_REFRESH)
    def _refresh(params: None) -> None:
        refreshed.set()

    @client.feature(types.WORKSPACE_CODE_LENS_REFRESH)
    def _lens_refresh(params: None) -> None:
        return None

    print(f"{DIM}(a real LSP client starts `engram lsp` over stdio, like VS Code or Neovim){RESET}")
    await client.start_io(sys.executable, "-m", "memory_core", "lsp")
    await client.initialize_async(
        types.InitializeParams(
            capabilities=types.ClientCapabilities(
                text_document=types.TextDocumentClientCapabilities(
                    diagnostic=types.DiagnosticClientCapabilities(),
                    hover=types.HoverClientCapabilities(content_format=[types.MarkupKind.Markdown]),
                ),
                workspace=types.WorkspaceClientCapabilities(
                    diagnostics=types.DiagnosticWorkspaceClientCapabilities(refresh_support=True)
                ),
            ),
            workspace_folders=[types.WorkspaceFolder(uri=root.as_uri(), name=root.name)],
        )
    )
    client.initialized(types.InitializedParams())
    path = root / "app" / "billing.py"
    uri = path.as_uri()
    client.text_document_did_open(
        types.DidOpenTextDocumentParams(
            text_document=types.TextDocumentItem(
                uri=uri, language_id="python", version=1, text=path.read_text()
            )
        )
    )

    async def show() -> str:
        gotchas: list[types.Diagnostic] = []
        for _ in range(100):  # the gotcha index loads off the event loop; the server refreshes
            report = await client.text_document_diagnostic_async(
                types.DocumentDiagnosticParams(text_document=types.TextDocumentIdentifier(uri=uri))
            )
            gotchas = [d for d in report.items if d.source == "engram" and d.code != "drift"]
            if gotchas:
                break
            await asyncio.sleep(0.05)
        if not gotchas:
            raise SystemExit(f"{RED}demo failed: no engram diagnostic in app/billing.py{RESET}")
        lines = path.read_text().splitlines()
        for diagnostic in gotchas:
            start = diagnostic.range.start
            severity = (
                types.DiagnosticSeverity(diagnostic.severity).name if diagnostic.severity else "?"
            )
            print(
                f"  {GREEN}diagnostic{RESET} app/billing.py:{start.line + 1}:{start.character + 1} "
                f"{severity} [{diagnostic.code}] {diagnostic.message.splitlines()[0]}"
            )
            print(f"  {DIM}{start.line + 1:>4} | {lines[start.line]}{RESET}")
        first = gotchas[0].range.start
        hover = await client.text_document_hover_async(
            types.HoverParams(text_document=types.TextDocumentIdentifier(uri=uri), position=first)
        )
        if hover is None:
            raise SystemExit(f"{RED}demo failed: no hover on the gotcha{RESET}")
        value = (
            hover.contents.value
            if isinstance(hover.contents, types.MarkupContent)
            else str(hover.contents)
        )
        print(f"  {GREEN}hover{RESET} at line {first.line + 1}:")
        print(textwrap.indent(value.strip(), "    │ ", lambda line: True))
        return str(gotchas[0].code)

    gotcha_id = await show()

    async def pulled_severity() -> int | None:
        report = await client.text_document_diagnostic_async(
            types.DocumentDiagnosticParams(text_document=types.TextDocumentIdentifier(uri=uri))
        )
        return next((d.severity for d in report.items if d.code == gotcha_id), None)

    first_severity = await pulled_severity()

    print(f"\n  {DIM}(a person confirms it from a terminal; the editor updates by itself){RESET}")
    refreshed.clear()
    engram(
        "gotcha",
        "confirm",
        gotcha_id,
        "--severity",
        "high",
        "--workaround",
        "Use datetime.now(timezone.utc): datetime.utcnow() returns a naive datetime.",
        cwd=root,
    )
    # A refresh asks the client to pull again; one may come for another reason first (the
    # server completing what its stdio front answered while it loaded), so, as an editor does,
    # every refresh is answered with a pull until the confirmed gotcha shows.
    loop = asyncio.get_running_loop()
    deadline = loop.time() + 10
    while (await pulled_severity()) == first_severity:
        await asyncio.wait_for(refreshed.wait(), timeout=max(0.1, deadline - loop.time()))
        refreshed.clear()
    await show()
    await client.shutdown_async(None)
    client.exit(None)
    await client.stop()


def main() -> int:
    step("1. A sample project, and engram's store in it")
    root = make_workspace()
    print(f"  sample workspace: {root}")
    engram("init", cwd=root)
    engram("status", cwd=root)

    step(
        "2. A Claude Code session, recorded through engram's hooks: the same test failure three times"
    )
    session_id = agent_session(root)
    engram("gotcha", "list", "--all", cwd=root)

    step("3. The editor's view: the learned gotcha as a diagnostic and a hover, then confirmed")
    asyncio.run(editor_view(root))

    step("4. A checkpoint, a bad edit, and a rollback")
    created = json.loads(
        engram("checkpoint", "create", "before the fix", "--json", cwd=root, show=False)
    )
    checkpoint_id = created["id"]
    print(f'{DIM}$ engram checkpoint create "before the fix"{RESET}\n  checkpoint {checkpoint_id}')
    billing = root / "app" / "billing.py"
    original = billing.read_bytes()
    billing.write_text(BILLING.replace("datetime.utcnow()", "datetime.now()  # still naive!"))
    (root / "app" / "scratch.py").write_text("# an experiment the agent left behind\n")
    print(f"{DIM}(app/billing.py edited badly, app/scratch.py added){RESET}")
    engram("checkpoint", "diff", checkpoint_id, cwd=root)
    engram("rollback", checkpoint_id, "--yes", cwd=root)
    restored = billing.read_bytes() == original and not (root / "app" / "scratch.py").exists()
    if not restored:
        raise SystemExit(f"{RED}demo failed: the rollback did not restore the workspace{RESET}")
    print(
        f"  {GREEN}app/billing.py is byte-for-byte what it was, and app/scratch.py is gone{RESET}"
    )

    step("5. The session's summary")
    engram("session", "summary", session_id, cwd=root)

    print(
        f"\n{BOLD}Done.{RESET} The sample workspace is kept at {root} (its store: {root / '.engram'})."
    )
    if os.environ.get("ENGRAM_DEMO_CLEANUP"):
        shutil.rmtree(root.parent)
    return 0


if __name__ == "__main__":
    sys.exit(main())
