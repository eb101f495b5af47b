"""Command-line arguments of any bytes or size: one-line errors, valid JSON under `--json`,
never an internal error; and a full disk named as such. Through `run_cli` (docs/testing.md)."""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from memory_core.store import Store
from tests.conftest import run_cli

NOT_UTF8 = os.fsdecode(b"caf\xe9")  # what Python makes of the bytes a shell passes


@pytest.mark.parametrize(
    "args",
    [
        ["gotcha", "show", NOT_UTF8],
        ["memory", "add", NOT_UTF8],
        ["checkpoint", "create", NOT_UTF8],
        ["--workspace", NOT_UTF8, "status"],
    ],
)
def test_an_argument_that_is_not_utf8_is_a_one_line_usage_error(
    store: Store, args: list[str]
) -> None:
    plain = run_cli(*args, cwd=store.root)
    assert plain.code == 2 and plain.stdout == ""
    assert plain.stderr.count("\n") == 1 and "not valid UTF-8" in plain.stderr
    as_json = run_cli(*args, "--json", cwd=store.root)
    assert as_json.code == 2 and as_json.stderr == ""
    error = json.loads(as_json.stdout)
    assert error["code"] == "MEM_E004" and "caf\\udce9" in error["error"]


def test_a_huge_argument_gives_a_short_one_line_error(store: Store) -> None:
    huge = "x" * 100_000
    plain = run_cli("gotcha", "show", huge, cwd=store.root)
    assert plain.code == 1 and plain.stderr.count("\n") == 1 and len(plain.stderr) < 1000
    as_json = run_cli("gotcha", "show", huge, "--json", cwd=store.root)
    error = json.loads(as_json.stdout)
    assert error["code"] == "MEM_E005" and "characters cut" in error["error"]
    assert len(as_json.stdout) < 1000


def test_a_number_too_large_for_the_store_is_a_usage_error(store: Store) -> None:
    done = run_cli("evolution", "--limit", "9" * 30, "--json", cwd=store.root)
    error = json.loads(done.stdout)
    assert done.code == 2 and error["code"] == "MEM_E004" and "too large" in error["error"]


def test_importing_a_folder_is_a_usage_error(store: Store) -> None:
    for name in ("", "."):
        done = run_cli("session", "import", name, "--json", cwd=store.root)
        error = json.loads(done.stdout)
        assert done.code == 2 and error["code"] == "MEM_E004", error
        assert "cannot read" in error["error"]


@pytest.fixture
def full_disk(tmp_path: Path) -> Iterator[Path]:
    """A 1 MB file system (tmpfs) holding a project with a store, filled to the last block."""
    mount = tmp_path / "small"
    mount.mkdir()
    mounted = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", str(mount)],
        capture_output=True,
        check=False,
    )
    if mounted.returncode != 0:
        pytest.skip("cannot mount a small file system here (needs root)")
    try:
        root = mount / "project"
        root.mkdir()
        Store.init(root).close()
        with open(mount / "filler", "wb", buffering=0) as filler, pytest.raises(OSError):
            while True:
                filler.write(b"\0" * 4096)
        yield root
    finally:
        subprocess.run(["umount", "-l", str(mount)], check=False)


def test_a_full_disk_is_named(full_disk: Path) -> None:
    done = run_cli("memory", "add", "a fact " + "y" * 50_000, "--json", cwd=full_disk)
    error = json.loads(done.stdout)
    assert done.code == 1 and "the disk is full" in error["error"], error
    assert "free some disk space" in error["hint"]
