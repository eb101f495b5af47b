"""engram's hooks in Codex CLI's own files, in-process: `config.toml` written the way the user
already keeps their hooks (an array of tables or an inline array), every other key, comment and
trust entry kept, and the file put back as it was by uninstall."""

from __future__ import annotations

import json
import stat
import sys
import tomllib
from pathlib import Path

import pytest

from memory_core.agents import codex_install, install
from memory_core.agents.hooks import INSTALLED_EVENTS
from memory_core.errors import UsageError

EVENTS = INSTALLED_EVENTS["codex"]

USER_CONFIG = """# my Codex settings
model = "gpt-5.5-codex"  # the one I like

[hooks]
# tells me when a turn ends
[[hooks.Stop]]
hooks = [{ type = "command", command = "notify-send done" }]  # keep me

[hooks.state."/home/me/.codex/config.toml:stop:0:0"]
trusted_hash = "sha256:0f3c"

[projects."/home/me/work"]
trust_level = "trusted"
"""

INLINE_CONFIG = """model = "o3"
[hooks]
Stop = [{ hooks = [{ type = "command", command = "say done" }] }]
"""


@pytest.fixture(autouse=True)
def engram_on_path(monkeypatch: pytest.MonkeyPatch) -> None:
    """This installation's `engram` first on PATH, so the hooks name plain `engram`."""
    monkeypatch.setenv("PATH", str(Path(sys.executable).parent))


@pytest.fixture
def codex_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = tmp_path / "codex-home"
    home.mkdir()
    monkeypatch.setenv("CODEX_HOME", str(home))
    return home


def _commands(parsed: dict, event: str) -> list[str]:
    return [h["command"] for group in parsed["hooks"].get(event, []) for h in group["hooks"]]


def test_a_user_install_joins_the_users_hooks_in_codex_home_and_uninstall_restores_the_file(
    workspace: Path, codex_home: Path
) -> None:
    config = codex_home / "config.toml"
    config.write_text(USER_CONFIG)
    result = install.install("codex", root=workspace, user=True)
    assert result["settings"] == str(config) and result["changed"] is True
    assert result["note"] == codex_install.TRUST_NOTE
    assert not (codex_home / "hooks.json").exists()
    assert not (workspace / ".codex").exists()
    text = config.read_text()
    for kept in ("# my Codex settings", "# the one I like", "# tells me when a turn ends"):
        assert kept in text
    assert "# keep me" in text
    parsed = tomllib.loads(text)
    assert parsed["model"] == "gpt-5.5-codex"
    assert parsed["projects"] == {"/home/me/work": {"trust_level": "trusted"}}
    # Codex's trust of the user's own hook is kept, and engram writes no trust of its own.
    assert parsed["hooks"]["state"] == {
        "/home/me/.codex/config.toml:stop:0:0": {"trusted_hash": "sha256:0f3c"}
    }
    assert _commands(parsed, "Stop") == ["notify-send done", "engram hook codex Stop"]
    for event in EVENTS:
        assert _commands(parsed, event)[-1] == f"engram hook codex {event}"
    assert parsed["hooks"]["PreToolUse"][0]["matcher"] == "apply_patch"
    assert "matcher" not in parsed["hooks"]["SessionStart"][0]
    assert parsed["hooks"]["PreCompact"][0]["hooks"][0] == {
        "type": "command",
        "command": "engram hook codex PreCompact",
        "timeout": 60,
    }
    assert install.install("codex", root=workspace, user=True)["changed"] is False
    assert config.read_text() == text
    removed = install.uninstall("codex", root=workspace, user=True)
    assert removed["removed"] == len(EVENTS)
    assert config.read_text() == USER_CONFIG
    assert install.uninstall("codex", root=workspace, user=True)["removed"] == 0
    assert config.read_text() == USER_CONFIG


def test_hooks_kept_as_an_inline_array_get_engrams_group_inline_too(workspace: Path) -> None:
    config = workspace / ".codex" / "config.toml"
    config.parent.mkdir()
    config.write_text(INLINE_CONFIG)
    assert install.install("codex", root=workspace)["settings"] == str(config)
    text = config.read_text()
    # Still one inline array: no `[[hooks.Stop]]` table appended after it.
    assert "[[hooks.Stop]]" not in text
    parsed = tomllib.loads(text)
    assert _commands(parsed, "Stop") == ["say done", "engram hook codex Stop"]
    assert parsed["model"] == "o3"
    assert install.install("codex", root=workspace)["changed"] is False
    assert install.uninstall("codex", root=workspace)["removed"] == len(EVENTS)
    parsed = tomllib.loads(config.read_text())
    assert parsed["hooks"] == {"Stop": [{"hooks": [{"type": "command", "command": "say done"}]}]}


def test_an_old_engram_entry_is_replaced_where_it_was_and_the_users_groups_keep_their_order(
    workspace: Path,
) -> None:
    config = workspace / ".codex" / "config.toml"
    config.parent.mkdir()
    config.write_text(
        "[[hooks.Stop]]\n"
        'hooks = [{ type = "command", command = "first" }]\n'
        "[[hooks.Stop]]\n"
        'hooks = [{ type = "command", command = "/old/bin/engram hook codex Stop" }]\n'
        "[[hooks.Stop]]\n"
        'hooks = [{ type = "command", command = "third" }]\n'
    )
    install.install("codex", root=workspace)
    parsed = tomllib.loads(config.read_text())
    assert _commands(parsed, "Stop") == ["first", "third", "engram hook codex Stop"]
    install.uninstall("codex", root=workspace)
    parsed = tomllib.loads(config.read_text())
    assert _commands(parsed, "Stop") == ["first", "third"]


def test_a_group_the_user_shares_with_engram_keeps_the_users_handler(workspace: Path) -> None:
    config = workspace / ".codex" / "config.toml"
    config.parent.mkdir()
    shared = (
        "[[hooks.Stop]]\n"
        "hooks = [\n"
        '  { type = "command", command = "engram hook codex Stop" },\n'
        '  { type = "command", command = "./after.sh" },\n'
        "]\n"
    )
    config.write_text(shared)
    removed = codex_install.remove_toml_hooks(config, install.is_engram_handler)
    assert removed == 1
    parsed = tomllib.loads(config.read_text())
    assert parsed["hooks"]["Stop"] == [{"hooks": [{"type": "command", "command": "./after.sh"}]}]


def test_uninstall_drops_the_hooks_table_it_alone_filled(workspace: Path) -> None:
    config = workspace / ".codex" / "config.toml"
    config.parent.mkdir()
    config.write_text('model = "o3"\n[[hooks.Stop]]\nhooks = [{ command = "./x" }]\n')
    install.install("codex", root=workspace)
    # Take the user's own hook out by hand: only engram's are left in [hooks].
    parsed_text = config.read_text().replace('hooks = [{ command = "./x" }]', "hooks = []", 1)
    config.write_text(parsed_text)
    removed = codex_install.remove_toml_hooks(config, install.is_engram_handler)
    assert removed == len(EVENTS)
    parsed = tomllib.loads(config.read_text())
    # The user's emptied group is theirs: it stays, and so does [hooks] with it.
    assert parsed == {"model": "o3", "hooks": {"Stop": [{"hooks": []}]}}
    only_ours = workspace / "only-ours.toml"
    codex_install.write_toml_hooks(
        only_ours,
        {"Stop": install.hook_group("codex", "Stop", "engram hook codex Stop")},
        install.is_engram_handler,
    )
    assert codex_install.remove_toml_hooks(only_ours, install.is_engram_handler) == 1
    assert tomllib.loads(only_ours.read_text()) == {}


def test_hooks_json_is_used_unless_config_toml_holds_hook_events(workspace: Path) -> None:
    layer = workspace / ".codex"
    layer.mkdir()
    toml = layer / "config.toml"
    assert codex_install.toml_has_hooks(toml) is False  # no file
    for text in (
        'model = "o3"\n',
        "hooks = 3\n",
        '[hooks.state."x"]\ntrusted_hash = "sha256:1"\n',
        '[hooks]\nStop = "not a list"\n',
    ):
        toml.write_text(text)
        assert codex_install.toml_has_hooks(toml) is False, text
        assert install.settings_path("codex", user=False, root=workspace) == layer / "hooks.json"
    toml.write_text('[hooks]\nStop = [{ hooks = [{ command = "./x" }] }]\n')
    assert codex_install.toml_has_hooks(toml) is True
    assert install.settings_path("codex", user=False, root=workspace) == toml


def test_a_layer_with_only_trust_state_gets_hooks_json_and_the_toml_is_untouched(
    workspace: Path,
) -> None:
    layer = workspace / ".codex"
    layer.mkdir()
    toml = layer / "config.toml"
    state_only = '[hooks.state."a"]\ntrusted_hash = "sha256:1"\n'
    toml.write_text(state_only)
    result = install.install("codex", root=workspace)
    assert result["settings"] == str(layer / "hooks.json")
    assert toml.read_text() == state_only
    data = json.loads((layer / "hooks.json").read_text())
    assert set(data["hooks"]) == set(EVENTS)
    # Uninstall looks in both files of the layer and leaves the trust state alone.
    assert install.uninstall("codex", root=workspace)["removed"] == len(EVENTS)
    assert toml.read_text() == state_only


@pytest.mark.parametrize(
    ("text", "said"),
    [
        ("[hooks\nmodel = ", "is not valid TOML"),
        ("hooks = 3\n[x]\n", "[hooks] is not a table"),
        ('[hooks]\nStop = "notify"\n', "hooks.Stop is not a list"),
    ],
)
def test_a_config_engram_cannot_merge_into_is_refused_and_left_byte_for_byte(
    workspace: Path, text: str, said: str
) -> None:
    toml = workspace / "config.toml"
    toml.write_text(text)
    group = {"Stop": install.hook_group("codex", "Stop", "engram hook codex Stop")}
    with pytest.raises(UsageError) as raised:
        codex_install.write_toml_hooks(toml, group, install.is_engram_handler)
    assert said in str(raised.value) and str(toml) in str(raised.value)
    assert "left untouched" in str(raised.value)
    assert toml.read_text() == text
    assert [p.name for p in workspace.iterdir()] == ["config.toml"]


def test_broken_toml_says_how_to_go_on_and_uninstall_refuses_it_too(workspace: Path) -> None:
    toml = workspace / "config.toml"
    toml.write_text("[hooks\n")
    with pytest.raises(UsageError) as raised:
        codex_install.remove_toml_hooks(toml, install.is_engram_handler)
    assert raised.value.hint == "fix the file, then run this again"
    assert toml.read_text() == "[hooks\n"


def test_an_unreadable_config_is_a_clear_error(workspace: Path) -> None:
    toml = workspace / "config.toml"
    toml.mkdir()  # reading a folder fails the way an unreadable file does
    with pytest.raises(UsageError) as raised:
        codex_install.toml_has_hooks(toml)
    assert str(raised.value).startswith(f"cannot read {toml}: ")
    assert "Is a directory" in str(raised.value)


def test_nothing_to_remove_leaves_the_file_alone(workspace: Path) -> None:
    toml = workspace / "config.toml"
    assert codex_install.remove_toml_hooks(toml, install.is_engram_handler) == 0
    assert not toml.exists()
    for text in (
        'model = "o3"\n',
        "hooks = 3\n",
        '[hooks]\nStop = [{ hooks = [{ command = "x" }] }]\n',
    ):
        toml.write_text(text)
        toml.chmod(0o600)
        before = toml.stat().st_mtime_ns
        assert codex_install.remove_toml_hooks(toml, install.is_engram_handler) == 0
        assert toml.read_text() == text and toml.stat().st_mtime_ns == before


@pytest.mark.parametrize("mode", [0o600, 0o640])
def test_the_configs_mode_is_kept(workspace: Path, mode: int) -> None:
    toml = workspace / ".codex" / "config.toml"
    toml.parent.mkdir()
    toml.write_text(INLINE_CONFIG)
    toml.chmod(mode)
    install.install("codex", root=workspace)
    assert stat.S_IMODE(toml.stat().st_mode) == mode
    install.uninstall("codex", root=workspace)
    assert stat.S_IMODE(toml.stat().st_mode) == mode
    assert sorted(p.name for p in toml.parent.iterdir()) == ["config.toml"]


def test_a_new_config_is_created_readable_with_its_folders(tmp_path: Path) -> None:
    toml = tmp_path / "new" / "layer" / "config.toml"
    group = {"SessionStart": install.hook_group("codex", "SessionStart", "engram hook codex x")}
    assert codex_install.write_toml_hooks(toml, group, install.is_engram_handler) is True
    assert stat.S_IMODE(toml.stat().st_mode) == 0o644
    assert tomllib.loads(toml.read_text()) == {
        "hooks": {
            "SessionStart": [
                {"hooks": [{"type": "command", "command": "engram hook codex x", "timeout": 30}]}
            ]
        }
    }
    assert codex_install.write_toml_hooks(toml, group, install.is_engram_handler) is False


def test_the_user_layer_is_codex_home_and_the_project_layer_is_dot_codex(
    workspace: Path, codex_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert codex_install.layer_dir(user=True, root=workspace) == codex_home
    assert codex_install.layer_dir(user=False, root=workspace) == workspace / ".codex"
    monkeypatch.delenv("CODEX_HOME")
    assert codex_install.layer_dir(user=True, root=workspace) == Path.home() / ".codex"


def test_every_engram_entry_of_an_event_is_counted_and_a_group_without_hooks_is_kept(
    workspace: Path,
) -> None:
    config = workspace / "config.toml"
    config.write_text(
        "[[hooks.Stop]]\n"
        'matcher = "half written by hand"\n'
        "[[hooks.Stop]]\n"
        'hooks = [{ command = "/old/bin/engram hook codex Stop" }]\n'
        "[[hooks.Stop]]\n"
        'hooks = [{ command = "engram hook codex Stop" }, { command = "./mine" }]\n'
    )
    assert codex_install.remove_toml_hooks(config, install.is_engram_handler) == 2
    assert tomllib.loads(config.read_text())["hooks"]["Stop"] == [
        {"matcher": "half written by hand"},
        {"hooks": [{"command": "./mine"}]},
    ]
