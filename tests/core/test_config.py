"""Layered settings: defaults < pyproject < config.toml < editor < flags; bad values reported."""

from __future__ import annotations

from pathlib import Path

import pytest

from memory_core import config
from memory_core.errors import UsageError


def test_defaults_apply_with_no_files(workspace: Path) -> None:
    settings = config.load(workspace)
    assert settings["gotchas.threshold"] == 3
    assert settings.problems == []


def test_each_layer_overrides_the_one_below(workspace: Path) -> None:
    (workspace / "pyproject.toml").write_text(
        "[tool.engram.gotchas]\nthreshold = 4\nwindow_hours = 12\n[tool.engram.drift]\nwindow_minutes = 5\n"
    )
    (workspace / ".engram").mkdir()
    (workspace / ".engram" / "config.toml").write_text(
        "[gotchas]\nthreshold = 5\nwindow_hours = 6\n"
    )
    settings = config.load(
        workspace,
        editor={"gotchas": {"threshold": 6}},
        overrides={"gotchas.threshold": 7},
    )
    assert settings["gotchas.threshold"] == 7
    assert settings["gotchas.window_hours"] == 6.0
    assert settings["drift.window_minutes"] == 5.0
    assert settings.problems == []


def test_editor_settings_may_be_flat_dotted_keys(workspace: Path) -> None:
    settings = config.load(
        workspace, editor={"gotchas.threshold": 9, "server": {"command": ["engram", "lsp"]}}
    )
    assert settings["gotchas.threshold"] == 9
    assert settings.problems == []  # client-side settings are not the server's business


@pytest.mark.parametrize(
    ("value", "complaint"),
    [
        ("three", "expected a number"),
        (True, "expected a number"),
        (2.5, "whole number"),
        (0, "at least 1"),
    ],
)
def test_a_bad_value_is_reported_and_its_default_used(
    workspace: Path, value: object, complaint: str
) -> None:
    settings = config.load(workspace, editor={"gotchas": {"threshold": value}})
    assert settings["gotchas.threshold"] == 3
    assert len(settings.problems) == 1
    assert complaint in settings.problems[0] and "gotchas.threshold" in settings.problems[0]


def test_an_unreadable_config_file_is_reported_not_fatal(workspace: Path) -> None:
    (workspace / ".engram").mkdir()
    (workspace / ".engram" / "config.toml").write_text("[gotchas\nthreshold = ")
    settings = config.load(workspace)
    assert settings["gotchas.threshold"] == 3
    assert "cannot read" in settings.problems[0]


def test_unknown_settings_are_reported(workspace: Path) -> None:
    settings = config.load(workspace, editor={"gotchas": {"treshold": 2}})
    assert settings.problems == ["editor settings: unknown setting 'gotchas.treshold' ignored"]


def test_set_value_keeps_comments_and_layout(workspace: Path) -> None:
    (workspace / ".engram").mkdir()
    path = workspace / ".engram" / "config.toml"
    path.write_text(
        "# Our team's engram settings\n\n[gotchas]\n# three strikes\nthreshold = 3  # keep\n"
    )
    config.set_value(workspace, "gotchas.threshold", 4)
    config.set_value(workspace, "drift.window_minutes", 15)
    text = path.read_text()
    assert "# Our team's engram settings" in text
    assert "# three strikes" in text
    assert "threshold = 4  # keep" in text
    assert config.load(workspace)["drift.window_minutes"] == 15.0


def test_set_value_refuses_unknown_keys_and_bad_values(workspace: Path) -> None:
    with pytest.raises(UsageError, match="unknown setting"):
        config.set_value(workspace, "no.such", 1)
    with pytest.raises(UsageError, match="expected a number"):
        config.set_value(workspace, "gotchas.threshold", "many")
