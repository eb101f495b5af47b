"""Secret redaction: every text engram stores or exports passes through `redact`.

A detector is a name, a regex and the literal fragments one of its matches must contain; a
match is replaced by `[REDACTED:<name>]`, which keeps the text readable and shows that
something was there. Detectors run in order, most specific first, so an Anthropic key is
reported as one and not as a generic token.

Why our own regexes and not a detector library: hooks redact in a cold process with a 100 ms
budget, and the libraries we looked at cost tens of milliseconds to import (plugin
discovery) for the same set of formats. The literal guards keep a pass over text with no
secret at a few substring checks per detector, so transcript ingest stays fast.

Covered: private key blocks (PEM, OpenSSH, PGP), AWS access keys and secret keys, GitHub,
GitLab, Slack (tokens and webhooks), Stripe, Google (API keys, OAuth tokens and client
secrets), OpenAI, Anthropic, Hugging Face, npm, PyPI, SendGrid, Twilio, Mailgun,
DigitalOcean, Shopify, Telegram, Azure storage keys, JWTs, Authorization headers (Bearer and
Basic), passwords in URLs, database DSNs, and values assigned to secret-looking names
(any value for names like password/secret/token; high-entropy values for weaker names like
key/salt/signature).
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from typing import Any

Replacement = Callable[[re.Match[str]], str]


def _label(name: str) -> str:
    return f"[REDACTED:{name}]"


def _keep_prefix(name: str) -> Replacement:
    # For `key = value`, header and URL detectors: keep what names the secret, hide the value.
    def replace(match: re.Match[str]) -> str:
        return match.group("keep") + _label(name)

    return replace


def entropy(value: str) -> float:
    """Shannon entropy in bits per character."""
    if not value:
        return 0.0
    counts: dict[str, int] = {}
    for char in value:
        counts[char] = counts.get(char, 0) + 1
    size = len(value)
    return -sum(n / size * math.log2(n / size) for n in counts.values())


# Names whose value is a secret whatever it looks like (a password may be a plain word).
_STRONG_NAME = (
    r"passw(?:or)?d|passphrase|pwd|secret|token|api[_\-]?key|apikey|access[_\-]?key|"
    r"private[_\-]?key|client[_\-]?secret|credentials?|auth[_\-]?token|session[_\-]?token"
)
# Names whose value is a secret only when it looks random (a `key` may be a dict key).
_WEAK_NAME = r"key|auth|salt|signature|cookie|dsn|sig|hmac"
_STRONG = (_STRONG_NAME, re.IGNORECASE)
_WEAK = (rf"(?:^|[_\-.]|\b)(?:{_WEAK_NAME})(?:$|[_\-.]|\b)", re.IGNORECASE)

# Values that are references to a secret, not the secret: ${VAR}, $VAR, %(x)s, <placeholder>,
# os.environ[...], settings.PASSWORD, get_token(), already redacted text; and plain numbers
# (`input_tokens: 123456` is a count, not a token).
_REFERENCE = (
    r"^(?:\$\{?[A-Za-z_]|%\(|<[^>]*>?$|\{\{|\[REDACTED|\*+$|x+$|[0-9][0-9_,.]*$|"
    r"[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)+$|.*[(\[]|"
    r"(?:none|null|true|false|undefined|changeme|example|required|optional|str|string|bytes|int)$)",
    re.IGNORECASE,
)


# `name = value` pairs are found in two steps: a case-sensitive regex over the lowercased text
# finds a secret-looking word followed by an assignment operator (a case-insensitive
# alternation tried at every position was 20 times slower), then the value is read from the
# original text at the same offset. The match starts at the word itself (`password` in
# `db_password = ...`), which is all the decision needs.
_ASSIGNMENT_LOWER = (
    r"(?:" + _STRONG_NAME.lower() + "|" + _WEAK_NAME + r")[a-z0-9_\-]*[\"']?\s*(?::=|=>|[:=])",
    0,
)
_ASSIGNMENT = (
    r"(?P<name>(?:" + _STRONG_NAME + "|" + _WEAK_NAME + r")[A-Za-z0-9_\-]*)"
    r"[\"']?\s*(?::=|=>|[:=])",
    re.IGNORECASE,
)
_VALUE = (r"\s*[\"'`]?(?P<value>[^\s\"'`,;]{6,})", 0)


_COMPILED: dict[str | tuple[str, int], re.Pattern[str]] = {}


def _rx(spec: str | tuple[str, int]) -> re.Pattern[str]:
    # Compiled on first use and kept: compiling every detector at import cost a cold hook
    # ~10 ms, and most texts never need most detectors.
    pattern = _COMPILED.get(spec)
    if pattern is None:
        pattern = re.compile(spec) if isinstance(spec, str) else re.compile(*spec)
        _COMPILED[spec] = pattern
    return pattern


# Names that say what a value is when that is not a secret (`cache_key_id`, `sig_path`).
_NOT_SECRET_SUFFIXES = ("id", "ids", "uuid", "name", "path", "file", "dir", "count", "size", "type")
_UUID = (r"^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$", 0)


def _weak_secret(name: str, value: str) -> bool:
    """A value under a weak name (key, salt, signature...) is secret when it looks random."""
    last = re.split(r"[_\-.]", name.lower().strip("\"'` :=>"))[-1]
    if last in _NOT_SECRET_SUFFIXES or _rx(_UUID).match(value):
        return False
    return len(value) >= 16 and entropy(value) >= 3.5


def _is_secret_value(name: str, value: str) -> bool:
    # `label: client_secret: VALUE`: what follows the first name is another name, not a value.
    if value.endswith((":", "=")) or _rx(_REFERENCE).match(value):
        return False
    if _strong_name(name):
        return True
    return _rx(_WEAK).search(name) is not None and _weak_secret(name, value)


def _strong_name(name: str) -> bool:
    """Whether `name` holds a strong secret word as a whole part: `DB_PASSWORD`, `apiToken`,
    `client-secret`, `tokens`, but not `tokenizer` or `secretary`."""
    for match in _rx(_STRONG).finditer(name):
        after = name[match.end() :]
        if after[:1].lower() == "s" and (len(after) == 1 or not after[1:2].isalpha()):
            after = after[1:]
        if not after or not after[0].isalpha() or after[0].isupper():
            return True
    return False


def _redact_assignments(text: str, lowered: str) -> str:
    # str.lower() can change the length of some non-ASCII text; then offsets would not line
    # up, and the (slower) case-insensitive regex runs on the original instead.
    same_offsets = len(lowered) == len(text)
    matches = (
        _rx(_ASSIGNMENT_LOWER).finditer(lowered)
        if same_offsets
        else _rx(_ASSIGNMENT).finditer(text)
    )
    pieces: list[str] = []
    last = 0
    for match in matches:
        if match.start() < last:
            continue
        value = _rx(_VALUE).match(text, match.end())
        if value is None or not _is_secret_value(
            text[match.start() : match.end()], value.group("value")
        ):
            continue
        pieces.append(text[last : value.start("value")])
        pieces.append(_label("secret"))
        last = value.end("value")
    if not pieces:
        return text
    pieces.append(text[last:])
    return "".join(pieces)


# (name, guards, pattern, replacement or None for the label): a detector runs only when one of
# its guards occurs in the text (case-insensitive guards are checked against lowercased text).
_Detector = tuple[str, tuple[str, ...], bool, str | tuple[str, int], Replacement | None]


# GitLab's token kinds: personal, deploy, pipeline trigger, runner, CI job, incoming mail,
# agent, OAuth app, feature flag, SCIM, and the legacy runner registration token.
_GITLAB_PREFIXES = (
    "glpat-",
    "gldt-",
    "glptt-",
    "glrt-",
    "glcbt-",
    "glimt-",
    "glagent-",
    "gloas-",
    "glffct-",
    "glsoat-",
    "GR1348941",
)


def _prefixed(*prefixes: str) -> str:
    """Literal prefixes, each required to start a word, for the start of a pattern.

    The boundary is a lookbehind placed after the literal, so the pattern still starts with a
    literal and the regex engine can jump between occurrences of it instead of trying every
    position of the text (a leading `\\b` made each detector scan the whole text slowly).
    """
    parts = [f"{re.escape(p)}(?<![A-Za-z0-9_]{re.escape(p)})" for p in prefixes]
    return "(?:" + "|".join(parts) + ")"


def _random_token(match: re.Match[str]) -> str:
    # `Basic` and `Token` are ordinary words: redact what follows only when it looks random.
    value = match.group(0)[len(match.group("keep")) :]
    if entropy(value) < 3.0 and not any(ch.isdigit() for ch in value):
        return match.group(0)
    return match.group("keep") + _label("token")


_DETECTORS: list[_Detector] = [
    (
        "private-key",
        ("PRIVATE KEY",),
        False,
        (
            r"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----.*?"
            r"(?:-----END (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----|\Z)",
            re.DOTALL,
        ),
        None,
    ),
    ("anthropic-key", ("sk-ant-",), False, _prefixed("sk-ant-") + r"[A-Za-z0-9_\-]{20,}", None),
    (
        "openai-key",
        ("sk-",),
        False,
        _prefixed("sk-") + r"(?:proj-|svcacct-|admin-|None-)?[A-Za-z0-9_\-]{20,}",
        None,
    ),
    (
        "aws-access-key",
        ("AKIA", "ASIA", "ABIA", "ACCA", "A3T"),
        False,
        _prefixed("AKIA", "ASIA", "ABIA", "ACCA", "A3T") + r"[A-Z0-9]{16,17}(?![A-Za-z0-9])",
        None,
    ),
    (
        "aws-secret-key",
        ("aws", "secretaccesskey", "secret_access_key"),
        True,
        (
            r"(?P<keep>(?:aws[A-Za-z0-9_\-.]{0,30}(?:secret|sk)[A-Za-z0-9_\-]*|"
            r"SecretAccessKey|secret_access_key)[\"']?\s*(?::=|=>|[:=])\s*[\"']?)"
            r"[A-Za-z0-9/+]{40}(?![A-Za-z0-9/+])",
            re.IGNORECASE,
        ),
        _keep_prefix("aws-secret-key"),
    ),
    (
        "github-token",
        ("ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_"),
        False,
        r"(?:"
        + _prefixed("ghp_", "gho_", "ghu_", "ghs_", "ghr_")
        + r"[A-Za-z0-9]{36,}|"
        + _prefixed("github_pat_")
        + r"[A-Za-z0-9_]{22,})",
        None,
    ),
    (
        "gitlab-token",
        _GITLAB_PREFIXES,
        False,
        _prefixed(*_GITLAB_PREFIXES) + r"[A-Za-z0-9_\-]{20,}",
        None,
    ),
    (
        "slack-webhook",
        ("hooks.slack.com",),
        False,
        r"https://hooks\.slack\.com/(?:services|workflows)/[A-Za-z0-9_/\-]{20,}",
        None,
    ),
    (
        "slack-token",
        ("xox", "xapp-"),
        False,
        r"(?:"
        + _prefixed("xoxa-", "xoxb-", "xoxp-", "xoxo-", "xoxs-", "xoxr-", "xoxe-")
        + r"[A-Za-z0-9\-]{10,}|"
        + _prefixed("xapp-")
        + r"\d-[A-Za-z0-9\-]{10,})",
        None,
    ),
    (
        "stripe-key",
        ("_live_", "_test_", "whsec_"),
        False,
        r"(?:"
        + _prefixed("sk_live_", "rk_live_", "pk_live_", "sk_test_", "rk_test_", "pk_test_")
        + r"[A-Za-z0-9]{16,}|"
        + _prefixed("whsec_")
        + r"[A-Za-z0-9]{24,})",
        None,
    ),
    ("google-api-key", ("AIza",), False, _prefixed("AIza") + r"[0-9A-Za-z_\-]{35}", None),
    (
        "google-oauth",
        ("ya29.", "GOCSPX-", "1//0"),
        False,
        r"(?:"
        + _prefixed("ya29.", "GOCSPX-")
        + r"[0-9A-Za-z_\-]{20,}|"
        + _prefixed("1//0")
        + r"[0-9A-Za-z_\-]{30,})",
        None,
    ),
    ("huggingface-token", ("hf_",), False, _prefixed("hf_") + r"[A-Za-z0-9]{30,}", None),
    ("npm-token", ("npm_",), False, _prefixed("npm_") + r"[A-Za-z0-9]{36}(?![A-Za-z0-9])", None),
    ("pypi-token", ("pypi-",), False, _prefixed("pypi-") + r"[A-Za-z0-9_\-]{50,}", None),
    (
        "sendgrid-key",
        ("SG.",),
        False,
        _prefixed("SG.") + r"[A-Za-z0-9_\-]{16,32}\.[A-Za-z0-9_\-]{30,64}",
        None,
    ),
    ("twilio-key", ("SK",), False, _prefixed("SK") + r"[0-9a-fA-F]{32}(?![A-Za-z0-9])", None),
    ("mailgun-key", ("key-",), False, _prefixed("key-") + r"[0-9a-f]{32}(?![A-Za-z0-9])", None),
    (
        "digitalocean-token",
        ("dop_v1_", "doo_v1_", "dor_v1_"),
        False,
        _prefixed("dop_v1_", "doo_v1_", "dor_v1_") + r"[a-f0-9]{64}(?![A-Za-z0-9])",
        None,
    ),
    (
        "shopify-token",
        ("shpat_", "shpss_", "shpca_", "shppa_"),
        False,
        _prefixed("shpat_", "shpss_", "shpca_", "shppa_") + r"[a-fA-F0-9]{32}(?![A-Za-z0-9])",
        None,
    ),
    (
        "telegram-bot-token",
        (":AA",),
        False,
        r"(?<![0-9])\d{8,10}:AA[A-Za-z0-9_\-]{33}(?![A-Za-z0-9_\-])",
        None,
    ),
    (
        "azure-storage-key",
        ("accountkey=", "sharedaccesssignature="),
        True,
        (r"(?P<keep>(?:AccountKey|SharedAccessSignature)=)[A-Za-z0-9+/=%]{20,}", re.IGNORECASE),
        _keep_prefix("azure-key"),
    ),
    (
        "jwt",
        ("eyJ",),
        False,
        _prefixed("eyJ") + r"[A-Za-z0-9_\-]{8,}\.eyJ[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{8,}",
        None,
    ),
    (
        "url-password",
        ("://",),
        False,
        r"(?P<keep>[a-zA-Z][a-zA-Z0-9+.\-]*://[^\s:/@]+:)[^\s@/]+(?=@)",
        _keep_prefix("password"),
    ),
    (
        "authorization-header",
        ("bearer ", "basic ", "token "),
        True,
        r"(?P<keep>(?:Bearer|bearer|BEARER|Basic|basic|Token|token)\s+)[A-Za-z0-9_\-.=+/~]{16,}",
        _random_token,
    ),
]


# Texts longer than this are not scanned whole by a detector: only windows around each
# occurrence of its guard are (a match starts at most WINDOW_BEFORE characters before the guard
# and is at most WINDOW_AFTER long), so a large text with a few hits costs a few substring
# searches instead of one slow regex pass per detector.
WINDOWED_ABOVE = 4096
WINDOW_BEFORE = 80
WINDOW_AFTER = 2048


def redact(text: str) -> str:
    """`text` with every detected secret replaced by a `[REDACTED:kind]` label."""
    if not text:
        return text
    lowered: str | None = None
    for name, guards, fold, spec, replacement in _DETECTORS:
        if fold:
            if lowered is None:
                lowered = text.lower()
            haystack = lowered
        else:
            haystack = text
        for guard in guards:
            if guard in haystack:
                break
        else:
            continue
        pattern = _rx(spec)
        repl = replacement or _label(name)
        if len(text) > WINDOWED_ABOVE and name != "private-key" and len(haystack) == len(text):
            new_text = _windowed_sub(pattern, repl, text, haystack, guards)
        else:
            new_text = pattern.sub(repl, text)
        if new_text != text:
            text = new_text
            lowered = None
    return _redact_assignments(text, text.lower() if lowered is None else lowered)


def _windowed_sub(
    pattern: re.Pattern[str],
    repl: str | Replacement,
    text: str,
    haystack: str,
    guards: tuple[str, ...],
) -> str:
    windows: list[tuple[int, int]] = []
    for guard in guards:
        at = haystack.find(guard)
        while at != -1:
            windows.append(
                (max(0, at - WINDOW_BEFORE), min(len(text), at + len(guard) + WINDOW_AFTER))
            )
            at = haystack.find(guard, at + 1)
    if not windows:
        return text
    windows.sort()
    merged = [windows[0]]
    for start, end in windows[1:]:
        if start <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(merged[-1][1], end))
        else:
            merged.append((start, end))
    pieces: list[str] = []
    last = 0
    for start, end in merged:
        for match in pattern.finditer(text, max(start, last), end):
            pieces.append(text[last : match.start()])
            pieces.append(repl(match) if callable(repl) else repl)
            last = match.end()
    if not pieces:
        return text
    pieces.append(text[last:])
    return "".join(pieces)


def _secret_key(key: str) -> bool:
    return _strong_name(key)


def redact_obj(value: Any) -> Any:
    """Redact every string inside a JSON-like value (dicts, lists, scalars).

    A string under a secret-looking key (`{"password": "hunter22"}`, `{"API_TOKEN": ...}`) is
    replaced whole, since nothing in the value itself says it is secret; under a weaker name
    (`key`, `salt`) only a random-looking value is.
    """
    if isinstance(value, str):
        return redact(value)
    if isinstance(value, dict):
        out = {}
        for key, item in value.items():
            if (
                isinstance(key, str)
                and isinstance(item, str)
                and item
                and not _rx(_REFERENCE).match(item)
                and (_secret_key(key) or (_rx(_WEAK).search(key) and _weak_secret(key, item)))
            ):
                out[key] = _label("secret")
                continue
            out[key] = redact_obj(item)
        return out
    if isinstance(value, list | tuple):
        return [redact_obj(item) for item in value]
    return value
