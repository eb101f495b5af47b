"""Redaction: real-format secrets are replaced by the label of their kind, ordinary code is not.

The corpora are in `tests/core/secret_corpus.py`; that no secret reaches the store through any
entry point is tested in `test_secrets_every_entry_point.py`.
"""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest

from memory_core import redact as redaction
from memory_core.redact import redact, redact_obj
from tests.core.secret_corpus import ORDINARY, Secret, r, secrets

SECRETS = secrets()
ALNUM = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"


def test_the_corpora_are_large_and_varied() -> None:
    assert len(SECRETS) >= 100
    assert len({s.kind for s in SECRETS}) >= 60
    assert len(ORDINARY) >= 50
    # Every token detector has at least one secret of its format in the corpus.
    labels = {s.label for s in SECRETS}
    missing = [name for name, _g, _p in redaction._TOKEN_DETECTORS if name not in labels]
    assert missing == []


@pytest.mark.parametrize("case", SECRETS, ids=[s.kind for s in SECRETS])
def test_each_secret_is_replaced_by_the_label_of_its_kind(case: Secret) -> None:
    out = redact(case.text)
    assert case.secret not in out
    assert f"[REDACTED:{case.label}]" in out, out


@pytest.mark.parametrize("case", SECRETS, ids=[s.kind for s in SECRETS])
def test_each_secret_is_found_inside_a_large_text_too(case: Secret) -> None:
    # Above WINDOWED_ABOVE characters the context detectors read windows around their guards
    # and the token detectors read the token runs: the result must be the same.
    filler = "def handler(event):\n    return process(event)  # ordinary code\n" * 120
    text = filler + case.text + "\n" + filler
    assert len(text) > redaction.WINDOWED_ABOVE
    out = redact(text)
    assert case.secret not in out
    if not case.kind.startswith("truncated"):  # a cut-off key block is hidden to the end
        assert out == filler + redact(case.text) + "\n" + filler


# One ordinary string out of the corpus is changed, and it is this one: a Maven coordinate
# whose group name ends in "token" reads as `jsonwebtoken: <value>` (gitleaks lists it among
# its own false positives). Any other change is a regression.
KNOWN_CHANGED = {'notes            = "Maven - io.jsonwebtoken:jjwt-jackson-0.11.2"'}


def test_ordinary_code_hashes_ids_and_versions_stay_intact() -> None:
    changed = {text for text in ORDINARY if redact(text) != text}
    assert changed == KNOWN_CHANGED
    assert len(changed) <= len(ORDINARY) // 50


@pytest.mark.parametrize("text", sorted(set(ORDINARY) - KNOWN_CHANGED))
def test_ordinary_string_is_unchanged(text: str) -> None:
    assert redact(text) == text


def test_the_issue_examples_of_mangled_code_are_left_alone() -> None:
    for text in (
        "token_budget=budget",
        "UPDATE t SET input_tokens = input_tokens + ?",
        '"jsonwebtoken": "^9.0.0"',
        'secret_name = "prod/db/credentials"',
    ):
        assert redact(text) == text


def test_a_twilio_api_key_is_reported_as_one() -> None:
    key = "SK" + r("0123456789abcdef", 32)
    assert redact(f"TWILIO_KEY_SID {key}") == "TWILIO_KEY_SID [REDACTED:twilio-key]"


def test_camel_case_and_other_case_styles_of_secret_names() -> None:
    value = r(ALNUM, 24)
    for name in (
        "secretKey",
        "apiToken",
        "clientSecret",
        "DB_PASSWORD",
        "db-password",
        "authToken",
    ):
        out = redact(f"{name}: {value}")
        assert out == f"{name}: [REDACTED:secret]", name
    # A strong word inside a longer lowercase word is not a name of a secret.
    for text in (f"secretary: {value}", f"tokenizer = {value}"):
        assert redact(text) == text


def test_a_truncated_private_key_is_hidden_to_the_end_of_the_text() -> None:
    body = "\n".join(r(ALNUM + "+/", 64) for _ in range(5))
    text = "pasted key:\n-----BEGIN RSA " + "PRIVATE KEY-----\n" + body
    out = redact(text)
    assert out == "pasted key:\n[REDACTED:private-key]"
    # The same key inside a large text (where context detectors read only windows).
    large = "x = 1\n" * 1000 + text
    out = redact(large)
    assert all(line not in out for line in body.splitlines())


@pytest.mark.parametrize(
    ("url", "password"),
    [
        ("postgres://u:pw1@db.internal/app", "pw1"),
        ("redis://:ab12@cache:6379/0", "ab12"),
        ("amqp://guest:x@rabbit//", "x"),
        ("https://deploy:Zq8vT1mXw9LpR4sK@git.example.com/repo.git", "Zq8vT1mXw9LpR4sK"),
    ],
)
def test_a_password_in_a_url_is_hidden_whatever_its_length(url: str, password: str) -> None:
    out = redact(f"connect to {url} now")
    assert f":{password}@" not in out
    assert ":[REDACTED:password]@" in out


def test_a_url_password_far_after_the_start_of_a_long_scheme_is_found_in_a_large_text() -> None:
    # The context window must reach back over the scheme: `postgresql+asyncpg` is 18
    # characters before the `://` the detector looks for.
    password = r(ALNUM, 12)
    line = f"DATABASE_URL=postgresql+asyncpg://app:{password}@db/app"
    large = "print('ordinary code')\n" * 300 + line + "\n" + "print('more')\n" * 300
    assert len(large) > redaction.WINDOWED_ABOVE
    assert password not in redact(large)
    assert password not in redact(line)


def test_curl_credentials_on_the_same_and_on_a_continuation_line() -> None:
    password = r(ALNUM, 14)
    for text in (
        f"curl --cacert ca.crt -u elastic:{password} https://localhost:9200",
        f"curl -X POST https://api.example.com/v1/deploy \\\n  -d '{{}}' \\\n  --user 'ci:{password}'",
        f'curl -u ":{password}" https://localhost:9200',
    ):
        out = redact(text)
        assert password not in out, text
        assert "[REDACTED:password]" in out
    # A user without a password prompts for it: nothing to hide.
    assert (
        redact('curl -u "$USER" https://api.example.com')
        == 'curl -u "$USER" https://api.example.com'
    )


def test_values_ending_in_base64_padding_and_dotted_values_are_secrets() -> None:
    padded = r(ALNUM + "+/", 42) + "=="
    assert redact(f'api_token = "{padded}"') == 'api_token = "[REDACTED:secret]"'
    assert redact("DB_PASSWORD=hunter2.hunter2") == "DB_PASSWORD=[REDACTED:secret]"
    # ... but a name after a label, and a dotted reference, are not values.
    assert redact("password: client_secret= foo") == "password: client_secret= foo"
    assert redact("password = settings.DB_PASSWORD") == "password = settings.DB_PASSWORD"


def test_a_low_entropy_value_under_a_weak_name_is_kept_but_a_random_one_is_not() -> None:
    assert redact("cache_key = user_profile_v2") == "cache_key = user_profile_v2"
    assert redact("cache_key = Zq8vT1mXw9LpR4sKd2Jh7Gc") == "cache_key = [REDACTED:secret]"


def test_ids_under_key_like_names_are_not_secrets() -> None:
    session = "5f2c1d4e-aaaa-bbbb-cccc-123456789abc"
    value = {
        "session_id": session,
        "cache_key_id": "Zq8vT1mXw9LpR4sKd2Jh7Gc",
        "request_sig_path": "/tmp/x",
    }
    assert redact_obj(value) == value
    text = f"session_id={session} cache_key_id: Zq8vT1mXw9LpR4sKd2Jh7Gc"
    assert redact(text) == text
    # A strong name keeps even a UUID-shaped value secret (some APIs use UUIDs as keys).
    assert redact(f"api_key = {session}") == "api_key = [REDACTED:secret]"


def test_redact_obj_hides_values_under_secret_names_and_keeps_structure() -> None:
    value = {
        "env": {"DB_PASSWORD": "plainword", "HOME": "/home/x", "secretKey": "hunter22"},
        "args": ["--token=" + "a" * 8 + "Zx91"],
        "deps": {"jsonwebtoken": "^9.0.0"},
        "n": 3,
    }
    out = redact_obj(value)
    assert out["env"] == {
        "DB_PASSWORD": "[REDACTED:secret]",
        "HOME": "/home/x",
        "secretKey": "[REDACTED:secret]",
    }
    assert out["args"] == ["--token=[REDACTED:secret]"]
    assert out["deps"] == {"jsonwebtoken": "^9.0.0"}
    assert out["n"] == 3


def test_redaction_is_cheap_to_import_in_a_cold_process() -> None:
    code = (
        "import time; t = time.perf_counter(); import memory_core.redact as r; "
        "r.redact('x = 1'); print(time.perf_counter() - t)"
    )
    runs = [
        float(
            subprocess.run(
                [sys.executable, "-c", code], capture_output=True, text=True, check=True
            ).stdout
        )
        for _ in range(3)
    ]
    assert min(runs) < 0.05, runs


def test_a_large_text_with_every_kind_of_secret_loses_them_all() -> None:
    # A worst case for the guards: half a megabyte of code with every kind of secret in it,
    # so every detector runs. The speed itself is measured by tests/bench (bench_redact).
    sample = (Path(__file__).parents[2] / "memory_core" / "lifecycle.py").read_text() * 20
    sample += "\n".join(s.text for s in SECRETS)
    start = time.perf_counter()
    out = redact(sample)
    elapsed = time.perf_counter() - start
    assert [s.kind for s in SECRETS if s.secret in out] == []
    # Not a speed budget: a guard against a pattern that backtracks catastrophically.
    assert elapsed < 5, elapsed
