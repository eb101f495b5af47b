"""What the server's watchers leave out: git's ignore rules, nested `.gitignore` files included."""

from __future__ import annotations

from pathlib import Path

from lsp_server.features.evolution import Ignore


def test_nested_gitignores_info_exclude_and_settings_decide_as_in_git(workspace: Path) -> None:
    (workspace / ".gitignore").write_text("*.log\n")
    (workspace / "sub").mkdir()
    (workspace / "sub" / ".gitignore").write_text("gen/\n!keep.log\n")
    (workspace / ".git" / "info").mkdir(parents=True)
    (workspace / ".git" / "info" / "exclude").write_text("secret.txt\n")
    ignore = Ignore(workspace, ["tmp/"])
    verdicts = {
        rel: ignore.ignored(rel)
        for rel in (
            "app.log",
            "sub/keep.log",
            "sub/other.log",
            "sub/gen/x.py",
            "secret.txt",
            "tmp/x.py",
            "src/a.py",
        )
    }
    assert verdicts == {
        "app.log": True,
        "sub/keep.log": False,  # the deeper .gitignore re-includes it
        "sub/other.log": True,
        "sub/gen/x.py": True,  # ignored by sub/.gitignore only
        "secret.txt": True,
        "tmp/x.py": True,
        "src/a.py": False,
    }
