"""Settings at their edges (issue 31): each bound on both sides, each type's refusals with the
words a user reads, which files are read at all, writing and removing one value."""

from __future__ import annotations

from pathlib import Path

import pytest

from memory_core import config
from memory_core.errors import UsageError


def _problems_of(layer: dict[str, object]) -> tuple[config.Settings, list[str]]:
    settings = config.Settings()
    config.apply_layer(settings, layer, "test")
    return settings, settings.problems


def test_a_minimum_is_allowed_and_just_under_it_is_refused() -> None:
    settings, problems = _problems_of({"gotchas.threshold": 1, "gotchas.window_hours": 0.01})
    assert problems == []
    assert (settings["gotchas.threshold"], settings["gotchas.window_hours"]) == (1, 0.01)
    settings, problems = _problems_of({"gotchas.threshold": 0})
    assert problems == [
        "test: setting 'gotchas.threshold' must be at least 1, got 0; using the default 3"
    ]
    assert settings["gotchas.threshold"] == 3
    _, problems = _problems_of({"gotchas.window_hours": 0.009})
    assert problems == [
        "test: setting 'gotchas.window_hours' must be at least 0.01, got 0.009; "
        "using the default 24.0"
    ]


def test_numbers_are_converted_to_the_settings_type() -> None:
    settings, problems = _problems_of({"gotchas.threshold": 4.0, "gotchas.window_hours": 2})
    assert problems == []
    assert settings["gotchas.threshold"] == 4 and isinstance(settings["gotchas.threshold"], int)
    assert isinstance(settings["gotchas.window_hours"], float)
    _, problems = _problems_of({"gotchas.threshold": 4.5})
    assert problems == [
        "test: setting 'gotchas.threshold' expected a whole number, got 4.5; using the default 3"
    ]


@pytest.mark.parametrize(
    ("key", "value", "complaint"),
    [
        ("gotchas.threshold", "3", "expected a number, got str '3'"),
        ("gotchas.threshold", False, "expected a number, got bool False"),
        ("log.level", 3, "expected text, got int 3"),
        ("log.level", "loud", "must be one of debug, info, warning, error, got 'loud'"),
        ("watch.exclude", "*.log", "expected a list of strings, got '*.log'"),
        ("watch.exclude", ["*.log", 3], "expected a list of strings, got ['*.log', 3]"),
    ],
)
def test_each_type_refuses_with_what_was_given(key: str, value: object, complaint: str) -> None:
    settings, problems = _problems_of({key: value})
    assert problems == [
        f"test: setting {key!r} {complaint}; using the default {config.SETTINGS[key].default!r}"
    ]
    assert settings[key] == config.SETTINGS[key].default


def test_a_true_or_false_setting_refuses_anything_else() -> None:
    flags = [key for key, s in config.SETTINGS.items() if s.type is bool]
    assert flags, "a boolean setting exists"
    key = flags[0]
    settings, problems = _problems_of({key: not config.SETTINGS[key].default})
    assert problems == [] and settings[key] is (not config.SETTINGS[key].default)
    _, problems = _problems_of({key: 1})
    assert problems == [
        f"test: setting {key!r} expected true or false; using the default "
        f"{config.SETTINGS[key].default!r}"
    ]


def test_a_list_is_copied_and_choices_accepted() -> None:
    given = ["*.log"]
    settings, problems = _problems_of({"watch.exclude": given, "log.level": "debug"})
    assert problems == [] and settings["log.level"] == "debug"
    given.append("later")
    assert settings["watch.exclude"] == ["*.log"]


def test_an_empty_value_leaves_the_layer_below_and_client_keys_are_not_reported() -> None:
    settings = config.Settings()
    config.apply_layer(settings, {"gotchas": {"threshold": 5}}, "a")
    config.apply_layer(settings, {"gotchas.threshold": None, "trace": {"server": "verbose"}}, "b")
    assert settings["gotchas.threshold"] == 5 and settings.problems == []
    config.apply_layer(settings, {"gotchas": {"nope": 1}, "tracer": 1}, "c")
    assert settings.problems == [
        "c: unknown setting 'gotchas.nope' ignored",
        "c: unknown setting 'tracer' ignored",
    ]


def test_a_list_setting_given_as_a_table_is_not_flattened() -> None:
    assert config._flatten({"watch": {"exclude": ["a"]}, "x": {"y": {"z": 1}}}) == {
        "watch.exclude": ["a"],
        "x.y.z": 1,
    }


def test_a_pyproject_without_an_engram_table_is_not_read(workspace: Path) -> None:
    # Invalid TOML: it would be reported if it were parsed.
    (workspace / "pyproject.toml").write_text("[project\nname = 'x'\n")
    assert config.load(workspace).problems == []
    (workspace / "pyproject.toml").write_text("[project\nname = 'engram-like'\n")
    (problem,) = config.load(workspace).problems
    assert problem.startswith(f"{workspace / 'pyproject.toml'}: cannot read (")
    assert problem.endswith("); its settings are ignored")


def test_engram_named_in_a_pyproject_without_a_tool_table_changes_nothing(
    workspace: Path,
) -> None:
    (workspace / "pyproject.toml").write_text('[project]\nname = "engram-plugin"\n')
    assert config.load(workspace) == config.Settings()
    (workspace / "pyproject.toml").write_text('tool = "engram"\n')
    assert config.load(workspace) == config.Settings()


def test_an_empty_config_file_and_a_config_that_is_not_utf8(workspace: Path) -> None:
    (workspace / ".engram").mkdir()
    path = workspace / ".engram" / "config.toml"
    path.write_text("  \n")
    assert config.load(workspace).problems == []
    path.write_bytes(b"[gotchas]\nthreshold = '\xff'\n")
    (problem,) = config.load(workspace).problems
    assert problem.startswith(f"{path}: cannot read (")


def test_set_then_remove_a_value_brings_back_the_default(workspace: Path) -> None:
    (workspace / ".engram").mkdir()
    config.set_value(workspace, "snapshots.max_count", 12)
    config.set_value(workspace, "gotchas.threshold", 4)
    assert config.load(workspace)["snapshots.max_count"] == 12
    config.remove_value(workspace, "snapshots.max_count")
    loaded = config.load(workspace)
    assert loaded["snapshots.max_count"] == 50 and loaded["gotchas.threshold"] == 4
    config.remove_value(workspace, "snapshots.max_count")  # already gone: nothing to do
    config.remove_value(workspace, "never.set")
    assert config.load(workspace)["gotchas.threshold"] == 4
    mode = (workspace / ".engram" / "config.toml").stat().st_mode & 0o777
    assert mode == 0o600


def test_remove_without_a_config_file_creates_none(workspace: Path) -> None:
    config.remove_value(workspace, "gotchas.threshold")
    assert not (workspace / ".engram" / "config.toml").exists()


def test_set_value_says_what_is_wrong(workspace: Path) -> None:
    with pytest.raises(UsageError, match="unknown setting 'nope'") as caught:
        config.set_value(workspace, "nope", 1)
    assert caught.value.hint == "see `engram status --json` for the list"
    with pytest.raises(UsageError) as refused:
        config.set_value(workspace, "gotchas.threshold", 0)
    assert refused.value.message == "setting 'gotchas.threshold' must be at least 1, got 0"


def test_settings_compare_by_their_values_and_problems() -> None:
    assert config.Settings() == config.Settings()
    assert config.Settings() != config.Settings(problems=["x"])
    assert config.Settings().__eq__("x") is NotImplemented
    assert config.Settings().as_dict()["gotchas.threshold"] == 3
    assert "gotchas.threshold" in repr(config.Settings())
    assert (
        repr(config.SETTINGS["gotchas.threshold"]) == "Setting('gotchas.threshold', int, default=3)"
    )


def test_a_known_setting_after_an_unknown_one_still_applies_and_deep_client_keys_pass() -> None:
    settings, problems = _problems_of(
        {"aaa": 1, "gotchas": {"threshold": 6}, "trace": {"server": {"verbose": True}}}
    )
    assert settings["gotchas.threshold"] == 6
    assert problems == ["test: unknown setting 'aaa' ignored"]


def test_a_bad_value_in_pyproject_names_its_table(workspace: Path) -> None:
    (workspace / "pyproject.toml").write_text("[tool.engram.gotchas]\nthreshold = 0\n")
    assert config.load(workspace).problems == [
        "pyproject.toml [tool.engram]: setting 'gotchas.threshold' must be at least 1, got 0; "
        "using the default 3"
    ]
