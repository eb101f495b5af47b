"""Detection by kind (issue 29): a provider's name near a key-shaped value, keys glued to a
word, URL users that are keys, `0x` private keys, and what must stay as it is next to them.

Values are generated here, a few hundred of each (`ROUNDS`): a test that passes on one value may
pass by luck of its seed (a tail that happens not to look generated, a hex id that happens to
hold no letter). The known-format corpus (`secret_corpus.py`) carries one case of each new kind
through every entry point.
"""

from __future__ import annotations

import random
import re
import string

from memory_core.redact import redact

_rng = random.Random(29)
HEX = "0123456789abcdef"
LOWER_NUM = string.ascii_lowercase + string.digits
ALNUM = string.ascii_letters + string.digits
# How many generated values each test checks: enough that a rule holding for a share of values
# only fails here (the tailscale label held for 18 % of tails), few enough to stay fast.
ROUNDS = 200


def gen(alphabet: str, n: int) -> str:
    while True:
        value = "".join(_rng.choice(alphabet) for _ in range(n))
        if any(c.isdigit() for c in value) and any(c.isalpha() for c in value):
            return value


def key(alphabet: str, n: int) -> str:
    """A generated key with its digits spread through it (two numbers or more): one number among
    letters reads as a name with a number (`release20240315build`), which a provider's name
    before it does not make a key (docs/secrets.md, what is not detected)."""
    while True:
        value = gen(alphabet, n)
        if len(re.findall(r"\d+", value)) >= 2:
            return value


def test_a_key_after_a_providers_name_is_hidden_in_the_shapes_rule_sets_describe() -> None:
    for _ in range(ROUNDS):
        value = key(LOWER_NUM, 32)
        for text in (
            f"adafruit = '{value}'",  # gitleaks: name, operator, quote
            f"ADAFRUIT_IO {value}",
            f"codecov\nTOKEN\n{value}",  # kingfisher: name, a secret word, line breaks
            f"hiveageACCESS-{value}",  # name glued to a capitalised secret word
        ):
            out = redact(text)
            assert value not in out, text
            assert "[REDACTED:secret]" in out


def test_near_a_providers_name_ids_digests_and_names_stay() -> None:
    for _ in range(ROUNDS):
        sha = gen(HEX, 40)
        uuid = f"{gen(HEX, 8)}-{gen(HEX, 4)}-{gen(HEX, 4)}-{gen(HEX, 4)}-{gen(HEX, 12)}"
        for text in (
            f"stripe: fix webhook retries, commit {sha}",  # a digest word between
            f"heroku request id {uuid}",  # an id word
            f"datadog trace {gen(HEX, 32)}",
            f'"AWS::AppSync::Api": "{gen(HEX, 16)}"',  # a short hex id under a name
            "algolia index: products_2024_11_27_backup",  # words and numbers joined
            f"mapbox docs: https://docs.mapbox.com/api/{gen(LOWER_NUM, 20)}",  # a path
            f"asana-sdk-{gen(HEX, 8)}.tgz#{sha}",  # a lockfile's checksum
        ):
            assert redact(text) == text, text


def test_a_uuid_is_a_key_only_when_the_provider_names_it_or_a_secret_word_comes_with_it() -> None:
    for _ in range(ROUNDS):
        uuid = f"{gen(HEX, 8)}-{gen(HEX, 4)}-{gen(HEX, 4)}-{gen(HEX, 4)}-{gen(HEX, 12)}"
        assert uuid not in redact(f"heroku: {uuid}")
        assert uuid not in redact(f"opsgenie ACCESS {uuid}")
        assert redact(f"heroku app {uuid} restarted") == f"heroku app {uuid} restarted"


def test_a_distinctive_prefix_is_found_glued_to_the_word_before_it() -> None:
    for _ in range(ROUNDS):
        tail = gen(ALNUM, 12) + "-" + gen(ALNUM, 24)
        assert "[REDACTED:tailscale-key]" in redact(f"0tskey-api-{tail}")
        sendgrid = "SG." + gen(ALNUM, 22) + "." + gen(ALNUM, 43)
        assert sendgrid not in redact(f"somewhere{sendgrid}")
        # A short prefix still needs its word boundary: `task-` holds `sk-`.
        text = "task-" + gen(ALNUM, 24)
        assert "openai" not in redact(text)


def test_a_url_user_that_is_a_key_is_hidden_with_the_password_and_a_name_is_kept() -> None:
    for _ in range(ROUNDS):
        user, pw = gen(HEX, 8), gen(HEX, 8)
        out = redact(f"https://{user}:{pw}@gems.contribsys.com/")
        assert user not in out and pw not in out
    assert redact("postgres://app:hunter22@db/app") == "postgres://app:[REDACTED:password]@db/app"


def test_an_0x_key_is_hidden_near_a_key_word_and_a_hash_stays() -> None:
    for _ in range(ROUNDS):
        value = "0x" + gen(HEX, 64)
        assert value not in redact(f"PRIVATE KEY for the deployer: {value}")
        assert value not in redact(f"oops {value}\ndo not send money to this wallet")
        for text in (
            f"tx {value} confirmed in block 19000000",
            f"storage slot {value} holds the implementation (see private notes)",
            f"emitted {value}",
        ):
            assert redact(text) == text, text


def test_a_url_encoded_tail_of_a_bearer_token_is_hidden_with_it() -> None:
    for _ in range(ROUNDS):
        token = "A" * 22 + gen(ALNUM, 50) + "%3D" + gen(ALNUM, 30)
        out = redact(f"curl -H 'Authorization: Bearer {token}' https://api.x.com/2/tweets")
        assert token[-30:] not in out
        assert token[22:60] not in out


def test_a_telegram_token_needs_a_digit_in_its_body() -> None:
    for _ in range(ROUNDS):
        token = "123456789:A" + gen(ALNUM, 34)
        assert token not in redact(f"bot = Bot('{token}')")
        text = "line 12345:AbstractSingletonProxyFactoryBeanXy"
        assert redact(text) == text


def test_an_alphabet_under_a_key_name_stays_but_not_under_a_providers_key_name() -> None:
    alphabet = string.ascii_uppercase + string.ascii_lowercase + string.digits
    for text in (
        f'const keyStr = "{alphabet}"',
        f'const validKeyChars = "{string.digits}abcdefghijklmnopqrstuvwxyz_-."',
    ):
        assert redact(text) == text, text
    assert alphabet not in redact(f"sparkpost_key = {alphabet}")
    # After a strong word an alphabet is hidden as before: a password is whatever it is.
    assert alphabet not in redact(f'password = "{alphabet}"')
