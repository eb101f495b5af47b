"""Layering rules a refactor must not break (DESIGN section 1)."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
FORBIDDEN_IN_CORE = ("pygls", "lsprotocol", "lsp_server")


def imported_modules(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
    return names


def test_memory_core_never_imports_the_lsp_stack() -> None:
    offenders = {
        str(path.relative_to(ROOT)): sorted(
            m for m in imported_modules(path) if m.split(".")[0] in FORBIDDEN_IN_CORE
        )
        for path in (ROOT / "memory_core").rglob("*.py")
    }
    assert {k: v for k, v in offenders.items() if v} == {}


def test_the_core_write_path_imports_no_heavy_library() -> None:
    # Hooks run memory_core as a cold process on every agent tool call (DESIGN section 7).
    code = (
        "import sys; import memory_core.store, memory_core.events, memory_core.config, memory_core.cli.main;"
        "heavy = [m for m in ('pydantic', 'tomlkit', 'rich', 'zstandard', 'pygls', 'lsprotocol') if m in sys.modules];"
        "print(','.join(heavy))"
    )
    loaded = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout.strip()
    assert loaded == ""
