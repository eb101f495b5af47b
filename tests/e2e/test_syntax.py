"""engram's grammars (syntax/) in the engines that use them.

- TextMate: client-vscode/test/grammar.test.js tokenises samples with vscode-textmate and
  vscode-oniguruma (VS Code's own engine) over VS Code's Python, JavaScript and Markdown
  grammars, with engram's injection grammars, and asserts scopes.
- Vim syntax: real Neovim 0.7 and 0.11, headless, the cursor put on an annotation, an id, a
  string that only looks like an annotation, and code after a block comment; the highlight
  group under the cursor is asserted. The control run without engram's syntax shows the
  filetype's own groups at the same places, so the assertions can fail.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from tests.e2e.conftest import (
    CLIENT_DIR,
    E2E_DIR,
    NVIM_DEBIAN,
    NVIM_PIP,
    REPO,
    VSCODE_BUILTIN_EXTENSIONS,
    clean_env,
    require,
    run,
    write_output,
)

pytestmark = pytest.mark.e2e

SAMPLES = {
    "sample.py": 'import os\nx = 1  # gotcha: os.sep differs on Windows, see G-1a2b3c4d\nlabel = "gotcha: not a comment"\n',
    "sample.c": "/* GOTCHA: free it once */ int x;\n// gotcha: see S-0123abcd\n"
    "// GOTCHA(high): the buffer is not NUL-terminated\n/* gotcha(urgent): not a severity */\n",
    "export.md": "# Gotchas\n\n## G-1a2b3c4d: read_csv\n\n- session S-0123abcd, checkpoint C-89abcdef\n- XG-1a2b3c4d\n"
    "- agent session 3f2a9c1e-7b4d-4e8f-9a1b-2c3d4e5f6a7b\n",
}

# (file, line, text to put the cursor on, occurrence, group with engram's syntax, group without)
PROBES = [
    ("sample.py", 2, "gotcha:", 0, "engramGotchaTag", "pythonComment"),
    ("sample.py", 2, "os.sep differs", 0, "engramGotchaAnnotation", "pythonComment"),
    ("sample.py", 2, "G-1a2b3c4d", 0, "engramId", "pythonComment"),
    ("sample.py", 3, "gotcha: not", 0, "pythonString", "pythonString"),
    ("sample.c", 1, "GOTCHA", 0, "engramGotchaTag", "cComment"),
    ("sample.c", 1, "int", 0, "cType", "cType"),
    ("sample.c", 2, "S-0123abcd", 0, "engramId", "cCommentL"),
    # A severity the server reads (gotcha(critical|high|medium|low):) is part of the annotation.
    ("sample.c", 3, "GOTCHA", 0, "engramGotchaTag", "cCommentL"),
    ("sample.c", 3, "high", 0, "engramGotchaSeverity", "cCommentL"),
    ("sample.c", 3, "buffer", 0, "engramGotchaAnnotation", "cCommentL"),
    # An unknown one is not, as for the server.
    ("sample.c", 4, "gotcha", 0, "cComment", "cComment"),
    ("export.md", 3, "G-1a2b3c4d", 0, "engramId", "markdownH2"),
    ("export.md", 5, "C-89abcdef", 0, "engramId", ""),
    # The G of XG-1a2b3c4d: an id glued to a word is not an id.
    ("export.md", 6, "G-1a2b3c4d", 0, "", ""),
    ("export.md", 7, "3f2a9c1e", 0, "engramId", ""),
]


def test_textmate_grammars_tokenise_with_vscode_textmate(tmp_path: Path) -> None:
    require(CLIENT_DIR / "node_modules" / "vscode-textmate", "client-vscode/node_modules (npm ci)")
    require(VSCODE_BUILTIN_EXTENSIONS / "python", "VS Code's built-in grammars (code-server)")
    completed = run(
        ["node", "--test", "test/"],
        cwd=CLIENT_DIR,
        timeout=120,
        env={**clean_env(tmp_path), "ENGRAM_VSCODE_GRAMMARS": str(VSCODE_BUILTIN_EXTENSIONS)},
    )
    assert completed.returncode == 0, completed.stdout[-4000:] + completed.stderr[-2000:]
    assert "# fail 0" in completed.stdout and "# skipped 0" in completed.stdout, completed.stdout[
        -2000:
    ]
    assert "# pass 9" in completed.stdout, completed.stdout[-2000:]


def _probe(nvim: Path, tmp: Path, syntax: bool) -> list[dict[str, object]]:
    positions = []
    for name, line, text, occurrence, _with, _without in PROBES:
        source = SAMPLES[name].splitlines()[line - 1]
        col = -1
        for _ in range(occurrence + 1):
            col = source.index(text, col + 1)
        positions.append({"file": str(tmp / name), "line": line, "col": col + 1})
    result = tmp / f"syntax-{int(syntax)}.json"
    env = clean_env(tmp)
    env.update(
        E2E_REPO=str(REPO),
        E2E_PROBES=json.dumps(positions),
        E2E_SYNTAX="1" if syntax else "0",
        E2E_RESULT=str(result),
    )
    completed = subprocess.run(
        [
            str(nvim),
            "--headless",
            "-u",
            "NONE",
            "-i",
            "NONE",
            "-n",
            "-c",
            f"luafile {E2E_DIR / 'nvim' / 'syntax_probe.lua'}",
        ],
        cwd=tmp,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        stdin=subprocess.DEVNULL,
    )
    assert completed.returncode == 0 and result.exists(), completed.stderr
    return list(json.loads(result.read_text()))


@pytest.mark.parametrize(
    ("nvim", "version"),
    [
        pytest.param(NVIM_DEBIAN, "0.7", id="nvim-0.7"),
        pytest.param(NVIM_PIP, "0.11", id="nvim-0.11"),
    ],
)
def test_neovim_highlight_group_under_cursor(nvim: Path, version: str, tmp_path: Path) -> None:
    require(nvim, "Neovim")
    for name, text in SAMPLES.items():
        (tmp_path / name).write_text(text, encoding="utf-8")
    with_engram = _probe(nvim, tmp_path, syntax=True)
    without = _probe(nvim, tmp_path, syntax=False)
    write_output(f"syntax-neovim-{version}.json", {"with": with_engram, "without": without})
    for probe, got, control in zip(PROBES, with_engram, without, strict=True):
        name, line, text, _occurrence, expected, expected_control = probe
        assert got["group"] == expected, f"{name}:{line} {text!r}: {got}"
        assert control["group"] == expected_control, f"control {name}:{line} {text!r}: {control}"
    # Groups link to standard highlight groups, so every colour scheme shows them.
    tag = with_engram[0]
    assert tag["linked"] == "Todo", tag
