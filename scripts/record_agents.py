"""Run the real Gemini CLI and Codex CLI against a local scripted model and keep what they wrote.

Used by `scripts/record-agents.sh` (which installs the agents from npm first); never by the test
suite. For each agent it makes a scratch home and a small git project, installs engram's hooks
with `engram hooks install <agent> --user`, runs three prompts in one session (`gemini -p`, then
`--resume latest`; `codex exec`, then `codex exec resume --last`) against
`scripts/fake_model_server.py`, and then keeps, under `tests/fixtures/recorded/<agent>-<version>/`:

- the chat file or rollout exactly as the agent wrote it (the scratch paths replaced by fixed
  ones, see `redact`);
- `hooks.jsonl`: every hook call the agent made, in order: the event, the payload as the agent
  sent it, how many lines its transcript had at that moment, and what engram answered;
- `figures.json`: what engram recorded from the hooks alone, then after `engram ingest` of the
  same session (the two must be equal), and the Claude Code SessionStart that followed in the
  same project.

    python3 scripts/record_agents.py --agents /tmp/agents --out tests/fixtures/recorded
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
ROOT = Path("/tmp/engram-record")  # fixed, so recorded paths are the same on every machine
PROMPTS = [
    "Create hello.py that prints hello",
    "Run the checks. Always run python3 with -X dev in this project.",
    "Add a greeting function to hello.py",
]

SHIM = """#!{python}
import json, subprocess, sys
from pathlib import Path
data = sys.stdin.buffer.read()
try:
    payload = json.loads(data or b"{{}}")
except ValueError:
    payload = {{}}
transcript = payload.get("transcript_path") if isinstance(payload, dict) else None
lines = None
if isinstance(transcript, str) and Path(transcript).is_file():
    lines = Path(transcript).read_bytes().count(b"\\n")
run = subprocess.run([{engram!r}, *sys.argv[1:]], input=data, capture_output=True)
with open({log!r}, "a", encoding="utf-8") as out:
    out.write(json.dumps({{"argv": sys.argv[1:], "payload": payload, "transcript_lines": lines,
                          "stdout": run.stdout.decode("utf-8", "replace")}}) + "\\n")
sys.stdout.buffer.write(run.stdout)
sys.exit(0)
"""


def run(argv: list[str], *, env: dict[str, str], cwd: Path, timeout: int = 180) -> str:
    done = subprocess.run(argv, env=env, cwd=cwd, capture_output=True, text=True, timeout=timeout)
    if done.returncode != 0:
        sys.stderr.write(done.stdout + done.stderr)
        raise SystemExit(f"{argv[0]} exited {done.returncode}")
    return done.stdout


def start_server(work: Path) -> tuple[subprocess.Popen[bytes], str]:
    port_file = work / "port"
    port_file.unlink(missing_ok=True)  # a port left by an earlier run is no server now
    server = subprocess.Popen(
        [
            sys.executable,
            str(REPO / "scripts" / "fake_model_server.py"),
            "--port-file",
            str(port_file),
            "--log",
            str(work / "requests.jsonl"),
        ]
    )
    for _ in range(100):
        if port_file.exists() and port_file.read_text().strip():
            return server, port_file.read_text().strip()
        time.sleep(0.05)
    server.kill()
    raise SystemExit("the fake model server did not start")


def new_project(name: str) -> tuple[Path, Path, Path]:
    base = ROOT / name
    shutil.rmtree(base, ignore_errors=True)
    home, project = base / "home", base / "project"
    home.mkdir(parents=True)
    project.mkdir()
    subprocess.run(["git", "init", "-q"], cwd=project, check=True)
    shim = base / "engram-hook"
    shim.write_text(
        SHIM.format(
            python=sys.executable,
            engram=str(REPO / ".venv" / "bin" / "engram"),
            log=str(base / "hooks.jsonl"),
        )
    )
    shim.chmod(0o755)
    return base, home, project


def base_env(home: Path) -> dict[str, str]:
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(home),
        "LANG": "C.UTF-8",
        "TERM": "dumb",
        "NO_COLOR": "1",
    }
    return env


def install_hooks(agent: str, env: dict[str, str], project: Path, shim: Path) -> None:
    engram = str(REPO / ".venv" / "bin" / "engram")
    run([engram, "hooks", "install", agent, "--user"], env=env, cwd=project)
    # The commands name this engram; send them through the shim that keeps each call.
    for settings in [
        Path(env["HOME"]) / ".gemini" / "settings.json",
        Path(env.get("CODEX_HOME", "/nonexistent")) / "hooks.json",
    ]:
        if settings.exists():
            settings.write_text(settings.read_text().replace(engram, str(shim)))


def engram_figures(env: dict[str, str], project: Path, session: str) -> dict[str, Any]:
    engram = str(REPO / ".venv" / "bin" / "engram")
    out = run([engram, "session", "metrics", session, "--json"], env=env, cwd=project)
    metrics = json.loads(out)
    return {key: metrics.get(key) for key in sorted(metrics)}


def claude_session_start(env: dict[str, str], project: Path) -> str:
    engram = str(REPO / ".venv" / "bin" / "engram")
    payload = {
        "session_id": "00000000-0000-4000-8000-00000000c1a0",
        "transcript_path": str(project / "no-transcript-yet.jsonl"),
        "cwd": str(project),
        "hook_event_name": "SessionStart",
        "source": "startup",
    }
    done = subprocess.run(
        [engram, "hook", "claude-code", "SessionStart"],
        input=json.dumps(payload),
        env=env,
        cwd=project,
        capture_output=True,
        text=True,
        timeout=60,
    )
    return done.stdout


def record_gemini(agents: Path, folder: str, url: str) -> tuple[Path, list[Path], str]:
    base, home, project = new_project(folder)
    gemini_dir = home / ".gemini"
    gemini_dir.mkdir()
    (gemini_dir / "settings.json").write_text(
        json.dumps(
            {
                "security": {"auth": {"selectedType": "gemini-api-key"}},
                "privacy": {"usageStatisticsEnabled": False},
                "general": {"disableAutoUpdate": True, "disableUpdateNag": True},
            }
        )
    )
    (gemini_dir / "trustedFolders.json").write_text(json.dumps({str(project): "TRUST_FOLDER"}))
    env = base_env(home) | {"GEMINI_API_KEY": "fake-key", "GOOGLE_GEMINI_BASE_URL": url}
    install_hooks("gemini", env, project, base / "engram-hook")
    gemini = str(agents / folder / "node_modules" / ".bin" / "gemini")
    version = run([gemini, "--version"], env=env, cwd=project).strip()
    for index, prompt in enumerate(PROMPTS):
        resume = ["--resume", "latest"] if index else []
        run([gemini, *resume, "--yolo", "-p", prompt], env=env, cwd=project)
    # `--resume` starts a new file for the session (named by the minute it resumed in) that
    # gets the header and nothing else: the conversation goes on in the first one. Both kept.
    chats = sorted((gemini_dir / "tmp").glob("*/chats/session-*.jsonl"))
    if not chats:
        raise SystemExit("Gemini CLI wrote no chat")
    return base, chats, version


def _screen(session: str) -> str:
    done = subprocess.run(
        ["tmux", "capture-pane", "-t", session, "-p"], capture_output=True, text=True
    )
    return done.stdout


def _wait_for(session: str, text: str, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if text in _screen(session):
            return
        time.sleep(0.5)
    raise SystemExit(f"the agent never showed {text!r}:\n{_screen(session)}")


def _type(session: str, *keys: str) -> None:
    for key in keys:
        subprocess.run(["tmux", "send-keys", "-t", session, key], check=True)
        # Keys sent faster are taken as a paste, where Enter is a new line, not a submit.
        time.sleep(1.5)


def record_gemini_interactive(agents: Path, folder: str, url: str) -> tuple[Path, list[Path], str]:
    """What only the interactive Gemini CLI does, typed into it through tmux: a call the user
    declines, calls allowed for the session, `/compress`, `/quit`."""
    base, home, project = new_project(f"{folder}-interactive")
    gemini_dir = home / ".gemini"
    gemini_dir.mkdir()
    (gemini_dir / "settings.json").write_text(
        json.dumps(
            {
                "security": {"auth": {"selectedType": "gemini-api-key"}},
                "privacy": {"usageStatisticsEnabled": False},
                "general": {"disableAutoUpdate": True, "disableUpdateNag": True},
            }
        )
    )
    (gemini_dir / "trustedFolders.json").write_text(json.dumps({str(project): "TRUST_FOLDER"}))
    env = base_env(home) | {"GEMINI_API_KEY": "fake-key", "GOOGLE_GEMINI_BASE_URL": url}
    install_hooks("gemini", env, project, base / "engram-hook")
    gemini = str(agents / folder / "node_modules" / ".bin" / "gemini")
    version = run([gemini, "--version"], env=env, cwd=project).strip()
    session = "engram-record-gemini"
    subprocess.run(["tmux", "kill-session", "-t", session], capture_output=True)
    # tmux's own TERM (a terminal the TUI can draw on), the rest as for the other runs.
    exports = " ".join(f"{k}={shlex.quote(v)}" for k, v in env.items() if k != "TERM")
    subprocess.run(
        [
            "tmux",
            "new-session",
            "-d",
            "-s",
            session,
            "-x",
            "160",
            "-y",
            "50",
            f"cd {shlex.quote(str(project))} && env {exports} {shlex.quote(gemini)}",
        ],
        check=True,
    )
    try:
        _wait_for(session, "Type your message")
        time.sleep(5)  # past "Initializing...": a prompt typed then is only queued
        _type(session, PROMPTS[0], "Enter")
        _wait_for(session, "Apply this change?")
        _type(session, "Escape")  # "No, suggest changes (esc)": the write is declined
        _wait_for(session, "Request cancelled.")
        time.sleep(4)  # keys typed while the hooks run are lost
        _type(session, PROMPTS[1], "Enter")
        _wait_for(session, "Allow execution of")
        _type(session, "Down", "Enter")  # "Allow for this session"
        _wait_for(session, "The checks fail")
        time.sleep(4)
        _type(session, "/compress", "Enter")
        _wait_for(session, "Chat history compressed")
        time.sleep(4)
        _type(session, "Just answer: what is left to do", "Enter")
        _wait_for(session, "Nothing to change")
        time.sleep(3)  # the AfterAgent hook
        _type(session, "/quit", "Enter")
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and "To resume this session" not in _screen(session):
            time.sleep(0.5)
        time.sleep(3)  # the SessionEnd hook
    finally:
        subprocess.run(["tmux", "kill-session", "-t", session], capture_output=True)
    chats = sorted((gemini_dir / "tmp").glob("*/chats/session-*.jsonl"))
    if not chats:
        raise SystemExit("Gemini CLI wrote no chat")
    return base, chats, f"{version}-interactive"


def record_codex_interactive(agents: Path, folder: str, url: str) -> tuple[Path, list[Path], str]:
    """Codex's terminal UI, typed into through tmux: a turn of failing commands, `/compact`
    (PreCompact and PostCompact hooks), a last prompt, `/quit`."""
    base, home, project = new_project(f"{folder}-interactive")
    codex_home = home / ".codex"
    codex_home.mkdir()
    codex = str(agents / folder / "node_modules" / ".bin" / "codex")
    env = base_env(home) | {"CODEX_HOME": str(codex_home), "FAKE_MODEL_KEY": "fake-key"}
    version = run([codex, "--version"], env=env, cwd=project).split()[-1]
    (codex_home / "config.toml").write_text(
        'model = "gpt-5.3-codex"\nmodel_provider = "fake"\n\n[model_providers.fake]\n'
        f'name = "fake"\nbase_url = "{url}/v1"\nwire_api = "responses"\n'
        'env_key = "FAKE_MODEL_KEY"\n\n[features]\ncodex_hooks = true\n'
    )
    install_hooks("codex", env, project, base / "engram-hook")
    session = "engram-record-codex"
    subprocess.run(["tmux", "kill-session", "-t", session], capture_output=True)
    exports = " ".join(f"{k}={shlex.quote(v)}" for k, v in env.items() if k != "TERM")
    subprocess.run(
        [
            "tmux",
            "new-session",
            "-d",
            "-s",
            session,
            "-x",
            "160",
            "-y",
            "50",
            f"cd {shlex.quote(str(project))} && env {exports} {shlex.quote(codex)}",
        ],
        check=True,
    )
    try:
        _wait_for(session, "Do you trust the contents of this directory?")
        _type(session, "Enter")  # "Yes, continue"
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and "OpenAI Codex" not in _screen(session):
            if "Choose how you'd like Codex to proceed" in _screen(session):
                _type(session, "Down", "Enter")  # a new model on offer: "Use existing model"
            time.sleep(0.5)
        _wait_for(session, "OpenAI Codex")
        time.sleep(3)
        _type(session, PROMPTS[1], "Enter")
        _wait_for(session, "The checks fail")
        time.sleep(3)
        _type(session, "/compact", "Enter")
        _wait_for(session, "Context compacted")
        time.sleep(3)
        _type(session, "Just answer: what is left to do", "Enter")
        _wait_for(session, "Nothing to change")
        time.sleep(3)
        _type(session, "/quit", "Enter")
        time.sleep(3)
    finally:
        subprocess.run(["tmux", "kill-session", "-t", session], capture_output=True)
    rollouts = sorted((codex_home / "sessions").rglob("rollout-*.jsonl"))
    if len(rollouts) != 1:
        raise SystemExit(f"expected one Codex rollout, found {rollouts}")
    return base, rollouts, f"{version}-interactive"


def record_codex(agents: Path, folder: str, url: str) -> tuple[Path, list[Path], str]:
    base, home, project = new_project(folder)
    codex_home = home / ".codex"
    codex_home.mkdir()
    codex = str(agents / folder / "node_modules" / ".bin" / "codex")
    env = base_env(home) | {"CODEX_HOME": str(codex_home), "FAKE_MODEL_KEY": "fake-key"}
    version = run([codex, "--version"], env=env, cwd=project).split()[-1]
    release = tuple(int(x) for x in version.split(".")[:2])
    modern = release >= (0, 130)
    has_hooks = release >= (0, 114)  # the `codex_hooks` feature
    # A model the release knows (its bundled catalogue), so it offers that model's tools.
    model = "gpt-5.5" if modern else "gpt-5.3-codex" if has_hooks else "gpt-5.2-codex"
    (codex_home / "config.toml").write_text(
        f'model = "{model}"\nmodel_provider = "fake"\n\n'
        "[model_providers.fake]\n"
        'name = "fake"\n'
        f'base_url = "{url}/v1"\n'
        'wire_api = "responses"\n'
        'env_key = "FAKE_MODEL_KEY"\n\n'
        + (f"[features]\n{'hooks' if modern else 'codex_hooks'} = true\n" if has_hooks else "")
    )
    if has_hooks:
        install_hooks("codex", env, project, base / "engram-hook")
    # Hooks run only once trusted (`/hooks`, interactive); a scratch run has no one to ask.
    trust = ["--dangerously-bypass-hook-trust"] if modern else []
    flags = ["--skip-git-repo-check", "--dangerously-bypass-approvals-and-sandbox", *trust]
    for index, prompt in enumerate(PROMPTS):
        argv = (
            [codex, "exec", "resume", "--last", *flags, prompt]
            if index
            else [
                codex,
                "exec",
                *flags,
                prompt,
            ]
        )
        run(argv, env=env, cwd=project)
    rollouts = sorted((codex_home / "sessions").rglob("rollout-*.jsonl"))
    if len(rollouts) != 1:
        raise SystemExit(f"expected one Codex rollout, found {rollouts}")
    return base, rollouts, version


def redact(text: str, base: Path) -> str:
    """Scratch paths become fixed ones; nothing else of this machine is in these files."""
    return text.replace(str(base), "/home/dev")


def keep(
    agent: str, version: str, base: Path, transcripts: list[Path], out: Path, ingest: str
) -> None:
    env = base_env(base / "home")
    if agent == "codex":
        env["CODEX_HOME"] = str(base / "home" / ".codex")
    project = base / "project"
    first = json.loads(transcripts[0].read_text().splitlines()[0])
    session = first.get("sessionId") or first.get("payload", {}).get("id")
    hooked = (base / "hooks.jsonl").exists()
    from_hooks = engram_figures(env, project, session) if hooked else {}
    engram = str(REPO / ".venv" / "bin" / "engram")
    run([engram, "ingest", ingest, *map(str, transcripts)], env=env, cwd=project)
    after_ingest = engram_figures(env, project, session)
    start = claude_session_start(env, project)
    target = out / f"{agent}-{version}"
    shutil.rmtree(target, ignore_errors=True)
    target.mkdir(parents=True)
    for transcript in transcripts:
        (target / transcript.name).write_text(redact(transcript.read_text(), base))
    hooks = base / "hooks.jsonl"
    if hooks.exists():
        (target / "hooks.jsonl").write_text(redact(hooks.read_text(), base))
    figures = {
        "agent": agent,
        "version": version,
        "session": session,
        "from_hooks": from_hooks,
        "after_ingest": after_ingest,
        "claude_code_session_start": json.loads(start) if start.strip() else None,
    }
    (target / "figures.json").write_text(redact(json.dumps(figures, indent=2), base) + "\n")
    # The ingest may read lines written after the last hook (Codex's task_complete): the
    # session's end, and so its duration, can move; nothing may be counted again.
    moved = {"duration_seconds"}
    same = not hooked or {k: v for k, v in from_hooks.items() if k not in moved} == {
        k: v for k, v in after_ingest.items() if k not in moved
    }
    print(f"{agent} {version}: hooks then ingest {'agree' if same else 'DISAGREE'} -> {target}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--agents", type=Path, required=True, help="the npm prefix folders' parent")
    parser.add_argument("--out", type=Path, default=REPO / "tests" / "fixtures" / "recorded")
    parser.add_argument("--gemini", nargs="*", default=["gemini-0.44.0", "gemini-0.61.0"])
    parser.add_argument("--gemini-interactive", nargs="*", default=["gemini-0.61.0"])
    parser.add_argument("--codex-interactive", nargs="*", default=["codex-0.125.0"])
    parser.add_argument(
        "--codex", nargs="*", default=["codex-0.98.0", "codex-0.125.0", "codex-0.171.0"]
    )
    options = parser.parse_args()
    ROOT.mkdir(parents=True, exist_ok=True)
    server, port = start_server(ROOT)
    url = f"http://127.0.0.1:{port}"
    try:
        for folder in options.gemini:
            base, chat, version = record_gemini(options.agents, folder, url)
            keep("gemini", version, base, chat, options.out, "gemini")
        for folder in options.gemini_interactive:
            base, chat, version = record_gemini_interactive(options.agents, folder, url)
            keep("gemini", version, base, chat, options.out, "gemini")
        for folder in options.codex_interactive:
            base, rollout, version = record_codex_interactive(options.agents, folder, url)
            keep("codex", version, base, rollout, options.out, "codex")
        for folder in options.codex:
            base, rollout, version = record_codex(options.agents, folder, url)
            keep("codex", version, base, rollout, options.out, "codex")
    finally:
        server.terminate()
        server.wait()
    return 0


if __name__ == "__main__":
    sys.exit(main())
