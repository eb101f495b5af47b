"""Results as people read them (memory_core.views, drift.markdown): what every editor shows."""

from __future__ import annotations

from memory_core import drift, views


def test_drift_names_the_files_and_the_lines() -> None:
    items = [
        drift.DriftItem(
            "overlap",
            "high",
            "lines 3-5 of app.py changed by you (in the editor) and by the agent",
            "app.py",
            (3, 5),
        ).as_dict(),
        drift.DriftItem(
            "workspace",
            "low",
            "2 file(s) changed since snapshot SN-1",
            details={
                "files": [
                    {"path": "db.py", "changes": 2, "actors": "agent,external"},
                    {"path": "api.py", "changes": 1, "actors": "editor"},
                ]
            },
        ).as_dict(),
    ]
    text = drift.markdown(items)
    assert "## High (1)" in text and text.index("## High") < text.index("## Low")
    assert "- **app.py** lines 3-5: lines 3-5 of app.py changed by you" in text
    assert "  - db.py: 2 change(s) by the agent, another program" in text
    assert "  - api.py: 1 change(s) by you (in the editor)" in text
    assert drift.markdown([]).endswith("No drift: nothing changed under you.\n")


def test_gotchas_are_grouped_by_the_file_that_anchors_them() -> None:
    listed = [
        {
            "id": "G-1",
            "title": "set_index drops the column",
            "severity": "medium",
            "status": "confirmed",
            "anchors": [{"path": "app.py", "line": 7}],
            "source": {"occurrences": 3},
            "workaround": "pass drop=False",
        },
        {"id": "G-2", "title": "UTC exports", "severity": "high", "status": "confirmed"},
    ]
    text = views.gotchas(listed)
    assert text.index("## app.py") < text.index("## Anywhere in the project")
    assert "- **set_index drops the column** `G-1` (medium, confirmed, seen 3 times)" in text
    assert "  - Workaround: pass drop=False" in text


def test_status_says_the_session_quota_in_bytes() -> None:
    text = views.status(
        {
            "root": "/w",
            "store": "/w/.engram",
            "size_bytes": 4096,
            "schema_version": 6,
            "counts": {"gotchas": 2, "checkpoints": 1},
            "limits": {"session_quota_bytes": 7654321, "retention": []},
        }
    )
    assert "- Session quota: 7,654,321 bytes per session" in text
    assert "| Gotchas | 2 |" in text
