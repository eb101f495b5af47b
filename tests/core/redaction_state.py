"""Each redaction test computes its redactions afresh.

`redact` remembers each text's answer for the life of the process, and mutation testing runs
every mutant in a process forked from one that has already redacted the tests' texts: without
this, a mutant's code would never run, the remembered answer of the unmutated code coming back
instead, and a broken detector would pass every test. Imported (as an autouse fixture) by the
redaction test files.
"""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest

from memory_core import redact as redaction


def forget_redactions() -> None:
    """Forget every remembered answer and the provider names loaded on first use."""
    redaction._remembered.clear()
    redaction._remembered_chars = 0
    # (mutation testing's copy of the module may wrap the function: then it has no cache)
    cache_clear = getattr(redaction._provider_names, "cache_clear", None)
    if cache_clear is not None:
        cache_clear()


@pytest.fixture(autouse=True)
def redaction_computed_afresh() -> Iterator[None]:
    # Only under mutation testing (mutmut names the mutant it runs): unmutated, a remembered
    # answer is the answer, and recomputing every text costs the suite seconds for nothing.
    if os.environ.get("MUTANT_UNDER_TEST"):
        forget_redactions()
    yield
