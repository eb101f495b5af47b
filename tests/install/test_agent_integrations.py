"""engram's Claude Code plugin and Gemini CLI extension (integrations/).

The plugin is checked by Claude Code itself (`claude plugin validate --strict`, installed by
scripts/setup-editors.sh), with a negative control that breaks a hook. Its hooks are run the
way Claude Code runs them, and its runner never breaks the agent when engram is missing.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from memory_core.agents.hooks import INSTALLED_EVENTS
from tests.conftest import git
from tests.e2e.conftest import EDITORS_CACHE, require

REPO = Path(__file__).resolve().parents[2]
PLUGIN = REPO / "integrations" / "claude-code"
EXTENSION = REPO / "integrations" / "gemini"
AGENT_CLIS = EDITORS_CACHE / "agent-clis" / "node_modules" / ".bin"
CLAUDE = AGENT_CLIS / "claude"
GEMINI = AGENT_CLIS / "gemini"
VENV_BIN = Path(sys.executable).parent


def validate(path: Path, home: Path) -> subprocess.CompletedProcess[str]:
    require(CLAUDE, "Claude Code's CLI")
    home.mkdir(exist_ok=True)
    return subprocess.run(
        [str(CLAUDE), "plugin", "validate", "--strict", str(path)],
        env={**os.environ, "HOME": str(home)},
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_the_generated_files_are_up_to_date() -> None:
    done = subprocess.run(
        [sys.executable, str(REPO / "scripts" / "sync_integrations.py"), "--check"],
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stderr


def test_claude_code_accepts_the_plugin_and_the_marketplace(tmp_path: Path) -> None:
    plugin = validate(PLUGIN, tmp_path / "home")
    assert plugin.returncode == 0, plugin.stdout + plugin.stderr
    assert "Validating hooks" in plugin.stdout or "passed" in plugin.stdout
    marketplace = validate(REPO, tmp_path / "home")
    assert marketplace.returncode == 0, marketplace.stdout + marketplace.stderr


def test_negative_control_claude_code_refuses_a_broken_hook(tmp_path: Path) -> None:
    broken = tmp_path / "plugin"
    shutil.copytree(PLUGIN, broken)
    hooks_file = broken / "hooks" / "hooks.json"
    data = json.loads(hooks_file.read_text())
    data["hooks"]["SessionStart"][0]["hooks"][0]["type"] = "shell"
    hooks_file.write_text(json.dumps(data))
    refused = validate(broken, tmp_path / "home")
    assert refused.returncode != 0
    assert "hooks.SessionStart" in refused.stdout + refused.stderr


def test_every_installed_event_is_in_the_plugin_and_the_extension() -> None:
    claude = json.loads((PLUGIN / "hooks" / "hooks.json").read_text())["hooks"]
    gemini = json.loads((EXTENSION / "hooks" / "hooks.json").read_text())["hooks"]
    assert set(claude) == set(INSTALLED_EVENTS["claude-code"])
    assert set(gemini) == set(INSTALLED_EVENTS["gemini"])
    manifest = json.loads((EXTENSION / "gemini-extension.json").read_text())
    assert manifest["name"] == "engram" and (EXTENSION / manifest["contextFileName"]).exists()
    assert manifest["mcpServers"]["engram"]["args"] == ["mcp"]
    # Nothing machine-specific in what is shipped.
    for path in [*PLUGIN.rglob("*.json"), *EXTENSION.rglob("*.json")]:
        assert "/root" not in path.read_text() and ".venv" not in path.read_text(), path


def gemini_validate(path: Path, home: Path) -> subprocess.CompletedProcess[str]:
    require(GEMINI, "Gemini CLI")
    home.mkdir(exist_ok=True)
    return subprocess.run(
        [str(GEMINI), "extensions", "validate", str(path)],
        env={**os.environ, "HOME": str(home)},
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_gemini_cli_accepts_the_extension_and_refuses_a_broken_one(tmp_path: Path) -> None:
    accepted = gemini_validate(EXTENSION, tmp_path / "home")
    assert accepted.returncode == 0, accepted.stdout + accepted.stderr
    assert "successfully validated" in accepted.stdout + accepted.stderr
    broken = tmp_path / "extension"
    shutil.copytree(EXTENSION, broken)
    manifest = json.loads((broken / "gemini-extension.json").read_text())
    del manifest["version"]
    (broken / "gemini-extension.json").write_text(json.dumps(manifest))
    refused = gemini_validate(broken, tmp_path / "home")
    assert refused.returncode != 0 and "version" in refused.stdout + refused.stderr


def plugin_hook_command(event: str) -> str:
    hooks = json.loads((PLUGIN / "hooks" / "hooks.json").read_text())["hooks"]
    return str(hooks[event][0]["hooks"][0]["command"])


def test_a_plugin_hook_runs_as_claude_code_runs_it(tmp_path: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()
    git(project, "init", "-q")
    payload = {
        "session_id": "S-plugin",
        "cwd": str(project),
        "hook_event_name": "UserPromptSubmit",
        "prompt": "add a health check endpoint",
        "transcript_path": str(tmp_path / "none.jsonl"),
    }
    env = {
        "PATH": f"{VENV_BIN}{os.pathsep}/usr/bin:/bin",
        "HOME": str(tmp_path),
        "CLAUDE_PLUGIN_ROOT": str(PLUGIN),
        "CLAUDE_PROJECT_DIR": str(project),
        "ENGRAM_NO_RESIDENT": "1",  # no resident server left behind (docs/resident.md)
        "ENGRAM_NO_HOOK_FORK": "1",  # a hook records before it exits (docs/resident.md)
    }
    done = subprocess.run(
        ["bash", "-c", plugin_hook_command("UserPromptSubmit")],
        input=json.dumps(payload),
        capture_output=True,
        text=True,
        cwd=project,
        env=env,
        timeout=60,
    )
    assert (done.returncode, done.stderr) == (0, "")
    listed = subprocess.run(
        [str(VENV_BIN / "engram"), "session", "list", "--json"],
        capture_output=True,
        text=True,
        cwd=project,
        env=env,
    )
    assert "S-plugin" in listed.stdout, listed.stdout + listed.stderr


def test_without_engram_installed_a_hook_exits_0_and_says_why(tmp_path: Path) -> None:
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "CLAUDE_PLUGIN_ROOT": str(PLUGIN)}
    if any(shutil.which(tool, path=env["PATH"]) for tool in ("engram", "uvx", "pipx")):
        pytest.skip("an engram, uvx or pipx is installed system-wide here")
    done = subprocess.run(
        ["bash", "-c", plugin_hook_command("PostToolUse")],
        input="{}",
        capture_output=True,
        text=True,
        env=env,
        timeout=30,
    )
    assert done.returncode == 0
    assert "pipx install engram-lsp" in done.stderr
    mcp = subprocess.run(
        [str(PLUGIN / "bin" / "engram-run"), "mcp"], capture_output=True, text=True, env=env
    )
    assert mcp.returncode == 127 and "not installed" in mcp.stderr


async def test_the_plugin_has_the_session_summarize_command_the_installer_writes(
    tmp_path: Path,
) -> None:
    """Seed 002's `/session-summarize`: the plugin ships the command `engram hooks install
    claude-code` writes, naming the tools as Claude Code names a plugin's MCP server's tools
    (`mcp__plugin_<plugin>_<server>__<tool>`), and every tool it allows is one the plugin's own
    MCP server serves."""
    from mcp import Client
    from mcp.client.stdio import StdioServerParameters

    from memory_core.agents import commands

    shipped = (PLUGIN / "commands" / "session-summarize.md").read_text()
    installed = commands.shipped()["session-summarize.md"]
    front = shipped.split("---\n")[1]
    (allowed,) = [line for line in front.splitlines() if line.startswith("allowed-tools:")]
    tools = [name.strip() for name in allowed.removeprefix("allowed-tools:").split(",")]
    plugin_name = json.loads((PLUGIN / ".claude-plugin" / "plugin.json").read_text())["name"]
    servers = json.loads((PLUGIN / ".mcp.json").read_text())["mcpServers"]
    (server_name,) = servers
    prefix = f"mcp__plugin_{plugin_name}_{server_name}__"
    assert tools and all(name.startswith(prefix) for name in tools)
    # The installer's command word for word, but for the tool names and where the server is.
    assert (
        shipped.replace(prefix, "mcp__engram__").replace(
            "(the `engram` MCP server this plugin starts)",
            "(the `engram` MCP server: `claude mcp add engram -- engram mcp`)",
        )
        == installed
    )
    # The plugin's server, started as Claude Code starts it, serves every allowed tool.
    project = tmp_path / "project"
    project.mkdir()
    git(project, "init", "-q")
    server = servers[server_name]
    params = StdioServerParameters(
        command=server["command"].replace("${CLAUDE_PLUGIN_ROOT}", str(PLUGIN)),
        args=server["args"],
        cwd=str(project),
        env={"PATH": f"{VENV_BIN}{os.pathsep}/usr/bin:/bin", "HOME": str(tmp_path)},
    )
    async with Client(params) as client:
        served = {tool.name for tool in (await client.list_tools()).tools}
    assert {name.removeprefix(prefix) for name in tools} <= served
    assert {name.removeprefix(prefix) for name in tools} == {
        "projecthub_session_list",
        "projecthub_session_transcript",
        "projecthub_session_update_summary",
    }
