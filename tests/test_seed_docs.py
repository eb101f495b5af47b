"""The seed pages (docs/seeds/) name, for every requirement that works, the test that shows
it: each named test must exist, so a renamed or deleted test cannot leave a claim unbacked."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
# `core/test_x.py::test_name`, and `::test_other` continuing with the file named before it.
REFERENCE = re.compile(r"`(?:(?P<file>[\w/]+\.py))?(?:::(?P<test>\w+))?`")


def _cited(page: Path) -> list[tuple[str, str | None]]:
    cited = []
    for line in page.read_text(encoding="utf-8").splitlines():
        current: str | None = None
        for match in REFERENCE.finditer(line):
            if match.group("file") and "/" in match.group("file"):
                current = match.group("file")
                cited.append((current, match.group("test")))
            elif match.group("test") and current is not None:
                cited.append((current, match.group("test")))
    return cited


def test_every_test_a_seed_page_cites_exists() -> None:
    pages = sorted((ROOT / "docs" / "seeds").glob("*.md"))
    assert len(pages) == 5
    missing = []
    total = 0
    for page in pages:
        cited = _cited(page)
        assert cited, f"{page.name} cites no test"
        for file, test in cited:
            total += 1
            path = ROOT / "tests" / file
            if not path.is_file():
                missing.append(f"{page.name}: {file}")
            elif test and not re.search(rf"^(async )?def {test}\(", path.read_text(), re.M):
                missing.append(f"{page.name}: {file}::{test}")
    assert missing == []
    assert total > 80


def test_every_requirement_row_says_it_works_and_names_a_test() -> None:
    for page in sorted((ROOT / "docs" / "seeds").glob("*.md")):
        text = page.read_text(encoding="utf-8")
        section = text.split("## Where engram follows it", 1)[1]
        table = section[section.index("\n|") + 1 :].split("\n\n", 1)[0]  # the first table
        rows = [line for line in table.splitlines() if line.startswith("| ")][1:]
        assert rows, page.name
        for row in rows:
            last = re.split(r"(?<!\\)\|", row.strip())[-2]
            assert last.strip().startswith("works: `"), f"{page.name}: {row[:60]}"
