"""Secret redaction: every text engram stores or exports passes through `redact`.

A detector is a name and a regex; a match is replaced by `[REDACTED:<name>]`, which keeps the
text readable and shows that something was there. Detectors run in order, most specific first,
so an Anthropic key is reported as one and not as a generic token.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

Replacement = Callable[[re.Match[str]], str]


def _label(name: str) -> str:
    return f"[REDACTED:{name}]"


def _keep_prefix(name: str) -> Replacement:
    # For `key = value` and URL detectors: keep what names the secret, hide only the value.
    def replace(match: re.Match[str]) -> str:
        return match.group("keep") + _label(name)

    return replace


_DETECTORS: list[tuple[str, re.Pattern[str], Replacement | None]] = [
    (
        "private-key",
        re.compile(
            r"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----.*?"
            r"(?:-----END (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----|\Z)",
            re.DOTALL,
        ),
        None,
    ),
    ("anthropic-key", re.compile(r"\bsk-ant-[A-Za-z0-9_\-]{20,}"), None),
    ("openai-key", re.compile(r"\bsk-(?:proj-|svcacct-|admin-)?[A-Za-z0-9_\-]{20,}"), None),
    ("aws-access-key", re.compile(r"\b(?:AKIA|ASIA|ABIA|ACCA)[A-Z0-9]{16}\b"), None),
    ("github-token", re.compile(r"\b(?:gh[pousr]_[A-Za-z0-9]{36,}|github_pat_[A-Za-z0-9_]{22,})"), None),
    ("gitlab-token", re.compile(r"\bglpat-[A-Za-z0-9_\-]{20,}"), None),
    ("slack-token", re.compile(r"\bxox[abposr]-[A-Za-z0-9\-]{10,}"), None),
    ("stripe-key", re.compile(r"\b(?:sk|rk|pk)_(?:live|test)_[A-Za-z0-9]{16,}"), None),
    ("google-api-key", re.compile(r"\bAIza[0-9A-Za-z_\-]{35}"), None),
    ("jwt", re.compile(r"\beyJ[A-Za-z0-9_\-]{8,}\.eyJ[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{8,}"), None),
    (
        "url-password",
        re.compile(r"(?P<keep>\b[a-zA-Z][a-zA-Z0-9+.\-]*://[^\s:/@]+:)[^\s@/]+(?=@)"),
        _keep_prefix("password"),
    ),
    ("bearer-token", re.compile(r"(?P<keep>\b[Bb]earer\s+)[A-Za-z0-9_\-.=+/]{16,}"), _keep_prefix("token")),
    (
        "secret-assignment",
        re.compile(
            r"""(?P<keep>\b[A-Za-z0-9_\-]*(?:password|passwd|secret|token|api[_\-]?key|access[_\-]?key|private[_\-]?key|auth)[A-Za-z0-9_\-]*["']?\s*[:=]\s*["']?)"""
            r"""(?!\[REDACTED)[^\s"',;]{8,}""",
            re.IGNORECASE,
        ),
        _keep_prefix("secret"),
    ),
]


def redact(text: str) -> str:
    """`text` with every detected secret replaced by a `[REDACTED:kind]` label."""
    if not text:
        return text
    for name, pattern, replacement in _DETECTORS:
        text = pattern.sub(replacement or _label(name), text)
    return text


def redact_obj(value: Any) -> Any:
    """Redact every string inside a JSON-like value (dicts, lists, scalars)."""
    if isinstance(value, str):
        return redact(value)
    if isinstance(value, dict):
        return {key: redact_obj(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [redact_obj(item) for item in value]
    return value
