"""Layering rules a refactor must not break (docs/design.md section 1)."""

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
    # Hooks run memory_core as a cold process on every agent tool call (docs/design.md section 7).
    code = (
        "import sys; import memory_core.store, memory_core.events, memory_core.config, memory_core.cli.main;"
        "heavy = [m for m in ('pydantic', 'tomlkit', 'rich', 'zstandard', 'pygls', 'lsprotocol') if m in sys.modules];"
        "print(','.join(heavy))"
    )
    loaded = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout.strip()
    assert loaded == ""


def _module_files() -> dict[str, Path]:
    modules = {}
    for package in ("memory_core", "lsp_server"):
        for path in (ROOT / package).rglob("*.py"):
            parts = list(path.relative_to(ROOT).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts = parts[:-1]
            modules[".".join(parts)] = path
    return modules


def _import_graph() -> dict[str, set[str]]:
    """module -> the engram modules it imports, at the top or inside a function alike (an
    import deferred into a function is still a circle: it only moves the failure)."""
    modules = _module_files()
    graph: dict[str, set[str]] = {}
    for name, path in modules.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        found: set[str] = set()
        tree = ast.parse(path.read_text(encoding="utf-8"))
        # Imports only a type checker runs (`if TYPE_CHECKING:`) never execute.
        typing_only = {
            id(inner)
            for node in ast.walk(tree)
            if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test)
            for inner in ast.walk(node)
        }
        for node in ast.walk(tree):
            if id(node) in typing_only:
                continue
            if isinstance(node, ast.Import):
                found.update(alias.name for alias in node.names if alias.name in modules)
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    prefix = package
                    for _ in range(node.level - 1):
                        prefix = prefix.rpartition(".")[0]
                    base = f"{prefix}.{node.module}" if node.module else prefix
                for alias in node.names:
                    target = f"{base}.{alias.name}"
                    if target in modules:
                        found.add(target)
                    elif base in modules:
                        found.add(base)
        found.discard(name)
        graph[name] = found
    return graph


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan's algorithm)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for target in sorted(graph[node]):
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            component = []
            while True:
                top = stack.pop()
                on_stack.discard(top)
                component.append(top)
                if top == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def test_no_import_circles_among_engram_modules() -> None:
    assert _cycles(_import_graph()) == []


def test_the_cycle_finder_finds_a_circle() -> None:
    # Negative control: the finder is not blind.
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert _cycles(graph) == [["a", "b", "c"]]


def test_the_language_server_never_imports_the_command_line() -> None:
    graph = _import_graph()
    offenders = {
        name: sorted(t for t in targets if t.startswith("memory_core.cli"))
        for name, targets in graph.items()
        if name.startswith("lsp_server")
    }
    assert {k: v for k, v in offenders.items() if v} == {}
