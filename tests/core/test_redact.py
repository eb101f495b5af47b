"""Redaction: real-format secrets are replaced by the label of their kind, ordinary code is not.

The corpora are in `tests/core/secret_corpus.py`; that no secret reaches the store through any
entry point is tested in `test_secrets_every_entry_point.py`.
"""

from __future__ import annotations

import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

from memory_core import redact as redaction
from memory_core.redact import redact, redact_obj
from tests.core.redaction_state import redaction_computed_afresh  # noqa: F401
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


def test_ordinary_code_hashes_ids_and_versions_stay_intact() -> None:
    changed = [text for text in ORDINARY if redact(text) != text]
    assert changed == []


@pytest.mark.parametrize("text", ORDINARY)
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


def test_a_package_coordinate_is_not_an_assignment_but_a_dotted_config_key_is() -> None:
    # `group:artifact` whose group ends in a secret word (gitleaks' own false positive).
    for text in (
        'notes = "Maven - io.jsonwebtoken:jjwt-jackson-0.11.2"',
        'implementation "io.jsonwebtoken:jjwt-api:0.11.5"',
    ):
        assert redact(text) == text
    assert redact("db.password:hunter22") == "db.password:[REDACTED:secret]"
    assert redact("spring.datasource.password: my-pass") == (
        "spring.datasource.password: [REDACTED:secret]"
    )


def test_a_token_prefix_counts_only_at_the_start_of_a_word() -> None:
    key = "sk_test_" + r(ALNUM, 24)
    assert redact(f"key {key}") == "key [REDACTED:stripe-key]"
    # The same letters inside an identifier are not a Stripe key.
    assert redact("task_test_fixturesForRelease2024") == "task_test_fixturesForRelease2024"
    assert redact("ask_live_previewEnabledFlag2024x") == "ask_live_previewEnabledFlag2024x"


def test_a_name_after_a_label_is_not_a_value() -> None:
    # `label: name: value` and `label: name= value`: what follows the first name is a name.
    for text in ("password: client_secret: foo", "password: signing_key= foo"):
        assert redact(text) == text


def test_plural_names_are_secret_names_but_longer_words_are_not() -> None:
    assert redact("secrets: hunter22x") == "secrets: [REDACTED:secret]"
    assert redact("passwords: hunter22x") == "passwords: [REDACTED:secret]"
    assert redact("secretsmanager: regionDefaultName") == "secretsmanager: regionDefaultName"


def test_tokens_in_the_plural_count_tokens_unless_the_value_looks_random() -> None:
    for text in ("tokens: qwertyuiop1", "cache_creation_tokens=creation,", "max_tokens: 4096"):
        assert redact(text) == text
    random_value = r(ALNUM, 24)
    for name in ("tokens", "apiTokens", "ACCESS_TOKENS"):
        assert redact(f"{name}: {random_value}") == f"{name}: [REDACTED:secret]", name


def test_the_entropy_of_a_value() -> None:
    assert redaction.entropy("") == 0.0
    assert redaction.entropy("aaaa") == 0.0
    assert redaction.entropy("abcd") == 2.0
    assert redaction.entropy("aabb") == 1.0


def test_a_weak_name_hides_a_random_value_from_16_characters_on() -> None:
    # Digits spread through it, as a generator spreads them: a value with one number among
    # letters reads as a name (docs/secrets.md, Limits), whichever value the seed gives here.
    value = r(ALNUM, 16)
    while len(re.findall(r"\d+", value)) < 2:
        value = r(ALNUM, 16)
    assert redact(f"signing_key = {value}") == "signing_key = [REDACTED:secret]"
    assert redact(f"signing_key = {value[:15]}") == f"signing_key = {value[:15]}"
    # Sixteen characters that are not random, or words joined, are kept.
    for text in ("sort_key = aaaabbbbccccdddd", "sort_key = created_at_descending"):
        assert redact(text) == text


def test_every_assignment_of_a_text_is_looked_at() -> None:
    # A name without a value, then a secret: the second is still found.
    assert redact("token: x\npassword = hunter22x") == "token: x\npassword = [REDACTED:secret]"
    # A strong name followed by a separator and more words.
    for name in ("token_value", "password_prod", "secrets_prod"):
        assert redact(f"{name}: hunter22x") == f"{name}: [REDACTED:secret]", name
    # A padded value whose letters spell secret words is still a value.
    assert redact("DB_PASSWORD=super-secret-token==") == "DB_PASSWORD=[REDACTED:secret]"


def test_text_whose_lowercase_is_longer_is_redacted_at_the_right_place() -> None:
    # `İ`.lower() is two characters: offsets in the lowercased text would be off by three.
    assert (
        redact("İİİ password = hunter22x and more") == "İİİ password = [REDACTED:secret] and more"
    )


def test_placeholder_tokens_after_an_authorization_scheme_are_kept() -> None:
    for text in ("Bearer xxxxxxxxxxxxxxxxxxxxxxxx", "Token aaaaaaaaaaaaaaaaaaaaaa"):
        assert redact(text) == text


def test_several_secrets_far_apart_in_a_large_text_are_all_found() -> None:
    passwords = [r(ALNUM, 14) for _ in range(3)]
    filler = "value = compute(item)  # ordinary code\n" * 200
    text = filler.join(f"postgres://app:{pw}@db/app\n" for pw in passwords)
    assert len(text) > redaction.WINDOWED_ABOVE
    out = redact(text)
    assert [pw for pw in passwords if pw in out] == []


def test_a_long_private_key_in_a_large_text_is_hidden_whole() -> None:
    # A 4096-bit RSA key block is longer than a context detector's window.
    body = "\n".join(r(ALNUM + "+/", 64) for _ in range(50))
    block = "-----BEGIN RSA " + "PRIVATE KEY-----\n" + body + "\n-----END RSA " + "PRIVATE KEY-----"
    assert len(block) > redaction.WINDOW_AFTER
    text = "x = 1\n" * 1000 + block + "\ny = 2\n"
    assert redact(text) == "x = 1\n" * 1000 + "[REDACTED:private-key]\ny = 2\n"


def test_overlapping_finds_are_merged_under_the_longer_ones_label() -> None:
    # Two detectors' spans overlapping: no character of either survives.
    assert redaction._apply("abcdefghij", [(0, 4, "[A]"), (2, 9, "[B]")]) == "[B]j"
    assert redaction._apply("abcdefghij", [(1, 3, "[A]"), (1, 3, "[B]")]) == "a[A]defghij"


def test_a_secret_name_inside_a_redacted_value_does_not_stop_the_search() -> None:
    key = r(ALNUM, 20)
    text = f"password=my_token_1234; api_key={key}"
    assert redact(text) == "password=[REDACTED:secret]; api_key=[REDACTED:secret]"


def test_a_number_under_a_secret_name_followed_by_a_bracket_is_a_number() -> None:
    assert redact("policy(password_age=7776000)") == "policy(password_age=7776000)"


def test_adjacent_finds_keep_both_labels() -> None:
    assert redaction._apply("abcdef", [(0, 3, "[A]"), (3, 6, "[B]")]) == "[A][B]"


def test_a_bearer_token_without_digits_is_still_a_token() -> None:
    token = r("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ", 40)
    assert redact(f"Authorization: Bearer {token}") == "Authorization: Bearer [REDACTED:token]"


def test_a_value_naming_a_weak_secret_variable_is_a_reference() -> None:
    for text in ("token = signing_key", "password = cache_key", "secret = hmac_salt"):
        assert redact(text) == text


def test_the_weak_name_entropy_threshold_is_inclusive() -> None:
    # Eight characters once and four twice: exactly 3.5 bits per character.
    value = "aIbJcKdLeIfJgKhL"
    assert redaction.entropy(value) == 3.5
    assert redact(f"signing_key = {value}") == "signing_key = [REDACTED:secret]"


def test_code_and_prose_around_secret_names_are_not_secrets() -> None:
    # An unquoted name after ` = ` is a variable; a plain word followed by more words is prose.
    for text in (
        "self.token = nextchar",
        "self.token = currentTokenValue",
        "pwd: expected bytes, got str",
    ):
        assert redact(text) == text
    # ... but a literal is a literal: quoted, in a .env line, at the end of a YAML line, or
    # random letters.
    for text, expected in (
        ('self.token = "nextchar"', 'self.token = "[REDACTED:secret]"'),
        ("DB_PASSWORD=hunter", "DB_PASSWORD=[REDACTED:secret]"),
        ("password: sekrit", "password: [REDACTED:secret]"),
        ("token = qwhxkzjvbnmrtplkwe", "token = [REDACTED:secret]"),
    ):
        assert redact(text) == expected, text


def test_long_camel_case_names_with_short_words_are_names() -> None:
    # 16+ letters with high entropy, but words of a name (`Id` is one).
    word = "parseTokenIdFromHeader"
    assert len(word) >= 16 and redaction.entropy(word) >= 3.5
    assert redact(f"self.token = {word}") == f"self.token = {word}"


def test_code_or_prose_does_not_stop_the_search_for_the_next_assignment() -> None:
    for first in ("self.token = nextchar", "implementation io.jsonwebtoken:jjwt-api:0.11.5"):
        assert (
            redact(f"{first}\npassword = 'hunter22x'") == f"{first}\npassword = '[REDACTED:secret]'"
        )


def test_a_sentence_goes_on_after_a_one_letter_word() -> None:
    assert redact("pwd: expected a bytes-like object") == "pwd: expected a bytes-like object"


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
    # A strong word inside a longer lowercase word is not a name of a secret (a value short
    # enough not to look generated by itself, which any name would lose).
    for text in ("secretary: hunter22x", "tokenizer = 'hunter22x'"):
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


def test_importing_redaction_compiles_nothing_until_a_text_needs_it() -> None:
    # Hooks redact in a cold process with a 100 ms budget: the ~100 patterns are compiled on
    # first use, and a text without a token run, a guard or an assignment compiles almost
    # none of them. (The cold-start time itself is measured by tests/bench/bench_redact.py.)
    code = (
        "import memory_core.redact as r; before = len(r._COMPILED); "
        "r.redact('just words, nothing secret here'); print(before, len(r._COMPILED))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout.split()
    assert [int(n) for n in out] == [0, 1]


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


def test_every_secret_in_one_large_text_is_found_as_it_is_alone() -> None:
    # One large text holding every secret: the assignments are read after the other detectors'
    # replacements, from the secret words found before them (moved, not searched again); what
    # comes out must be what each secret gives alone.
    filler = "\ndef handler(event):\n    return process(event)  # ordinary code\n" * 40
    cases = [case for case in SECRETS if not case.kind.startswith("truncated")]
    text = filler.join(case.text for case in cases) + filler + "Σ ok"
    out = redact(text)
    assert out == filler.join(redact(case.text) for case in cases) + filler + "Σ ok"
    assert not [case.kind for case in cases if case.secret in out]
    # The same with the text lowercased character by character (no final sigma): the path
    # that patches the lowered text instead of lowering the output again.
    text = text.replace("Σ", "")
    assert redact(text) == out.replace("Σ", "")


@pytest.mark.parametrize(
    "name",
    [
        "password", "passwd", "pwd", "passphrase", "private_key", "privatekey", "secret",
        "salt", "sig", "session_token", "sessiontoken", "token", "api_key", "api-key",
        "apikey", "access_key", "auth", "client_secret", "clientsecret", "creds",
        "credentials", "cookie", "key", "dsn", "hmac", "db_password", "MY_API_KEY",
    ],
)  # fmt: skip
def test_an_assignment_in_a_large_text_is_found_as_in_a_short_one(name: str) -> None:
    # In a large text assignments are tried only where a secret name can start: every name
    # the short-text regex knows must be one of those places.
    line = f'{name} = "q7Zk2Lp9Xw4Rt8Vb"'
    assert "q7Zk2Lp9Xw4Rt8Vb" not in redact(line)
    filler = "def handler(event):\n    return process(event)  # ordinary code\n" * 120
    assert redact(filler + line + "\n" + filler) == filler + redact(line) + "\n" + filler
