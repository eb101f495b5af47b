"""The two annotation-gotcha bugs as an editor saw them: an annotation vanished from a file that
also had an error-line gotcha, and a new annotation was reported as drifted at once."""

from __future__ import annotations

from pytest_lsp import LanguageClient

from tests.lsp.conftest import execute, open_document
from tests.lsp.test_gotchas import ours, wait_diagnostics, wait_for_listed

SOURCE = (
    "import json\n"
    "\n"
    "# gotcha: items.json is written by the nightly job; never edit it by hand\n"
    "def load(path):\n"
    "    return json.loads(open(path).read())['items']\n"
)


async def test_an_annotation_and_an_error_line_gotcha_show_together(
    client: LanguageClient,
) -> None:
    path = client.folder / "app.py"
    path.write_text(SOURCE)
    for attempt in (1, 2, 3):
        message = (
            "Traceback (most recent call last):\n"
            f'  File "{path}", line 5, in load\n'
            f"KeyError: 'items' (attempt {attempt})"
        )
        result = await execute(client, "engram.error.track", {"message": message})
    error_gotcha = result["gotcha_id"]
    uri = open_document(client, path)

    def both(diagnostics: list) -> bool:
        lines = {d.range.start.line for d in ours(diagnostics)}
        return {2, 4} <= lines

    found = await wait_diagnostics(client, uri, both)
    by_line = {d.range.start.line: d for d in ours(found)}
    assert by_line[4].code == error_gotcha
    assert "nightly job" in by_line[2].message


async def test_a_new_annotation_is_not_reported_as_drifted(client: LanguageClient) -> None:
    path = client.folder / "jobs.py"
    path.write_text("RETRIES = 3  # gotcha: the queue redelivers after 30 s, keep this below 5\n")
    uri = open_document(client, path)
    found = await wait_diagnostics(client, uri, lambda ds: ours(ds))
    gotcha_id = ours(found)[0].code
    await wait_for_listed(client, gotcha_id)
    report = await execute(client, "engram.drift")
    stale = [
        item
        for item in report["drift"]
        if item["kind"] == "stale-citation" and item["details"].get("owner") == gotcha_id
    ]
    assert stale == []
    # Negative control: once the line really changes on disk, drift says so.
    path.write_text("RETRIES = 9  # gotcha: the queue redelivers after 30 s, keep this below 5\n")
    report = await execute(client, "engram.drift")
    assert any(
        item["kind"] == "stale-citation" and item["details"].get("owner") == gotcha_id
        for item in report["drift"]
    )
