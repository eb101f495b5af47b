"""Every error engram can raise has a stable code, and docs/errors.md documents it."""

from __future__ import annotations

import importlib
import pkgutil
import re
from pathlib import Path

import memory_core
from memory_core import errors

DOC = Path(__file__).resolve().parents[2] / "docs" / "errors.md"


def _all_error_classes() -> set[type[errors.EngramError]]:
    for module in pkgutil.walk_packages(memory_core.__path__, "memory_core."):
        if module.name.endswith("__main__"):
            continue
        importlib.import_module(module.name)
    found: set[type[errors.EngramError]] = set()
    stack: list[type[errors.EngramError]] = [errors.EngramError]
    while stack:
        cls = stack.pop()
        found.add(cls)
        stack.extend(cls.__subclasses__())
    return found


def test_every_error_code_is_documented_with_its_exit_code() -> None:
    doc = DOC.read_text(encoding="utf-8")
    table = {
        match.group(1): int(match.group(2))
        for match in re.finditer(r"^\| (MEM_E\d{3}) \| [^|]+ \| (\d) \|", doc, re.MULTILINE)
    }
    classes = _all_error_classes()
    assert len(classes) > 4
    for cls in classes:
        assert re.fullmatch(r"MEM_E\d{3}", cls.code), cls
        assert cls.code in table, f"{cls.__module__}.{cls.__name__}: {cls.code} not documented"
        assert table[cls.code] == cls.exit_code, cls


def test_the_seed_codes_keep_their_meaning() -> None:
    assert errors.QuotaExceededError.code == "MEM_E001"
    assert errors.StoreError.code == "MEM_E003"
    assert errors.UsageError.code == "MEM_E004"
    assert errors.NotFoundError.code == "MEM_E005"
