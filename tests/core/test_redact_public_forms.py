"""Forms that are not secrets are left alone, and their near misses are still redacted.

Public data that reads as random, when what it decodes to says it is public (a line of a
certificate, of an OpenPGP public key, a bech32 public key), and the placeholders that docs
write for a key of a known format (its prefix and an ellipsis)."""

from __future__ import annotations

import base64

import pytest

from memory_core import redact as redaction
from memory_core.redact import redact
from tests.core.redaction_state import redaction_computed_afresh  # noqa: F401

# Lines of a self-signed certificate made here with openssl (P-256, `/C=DE/O=Example Org`).
CERTIFICATE_NAME_LINE = "OjELMAkGA1UEBhMCREUxFDASBgNVBAoMC0V4YW1wbGUgT3JnMRUwEwYDVQQDDAxl"
CERTIFICATE_VALIDITY_LINE = "eGFtcGxlLnRlc3QwHhcNMjYxMTI4MDExNTE1WhcNMjYxMjI4MDExNTE1WjA6MQsw"
# The first line of its private key (PKCS#8), cut before its first `/`.
PRIVATE_KEY_LINE = "MIGHAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBG0wawIBAQQg0clC"
# The first line of an ed25519 OpenPGP public key exported by gpg, and of the secret key.
PGP_PUBLIC_LINE = "mDMEaworJRYJKwYBBAHaRw8BAQdANT9b+D0Ko6S2yc95elanit44NqE9Q7w7"
PGP_SECRET_LINE = "lFgEaworJRYJKwYBBAHaRw8BAQdANT9b+D0Ko6S2yc95elanit44NqE9Q7w7"
# NIP-19's own examples.
NOSTR_PUBLIC_KEY = "npub10elfcs4fr0l0r8af98jlmgdh9c8tcxjvz9qkw038js35mp4dma8qzvjptg"
NOSTR_SECRET_KEY = "nsec1vl029mgpspedva04g90vltkh6fvh240zqtv9k0t9af8935ke9laqsnlfe5"


@pytest.mark.parametrize(
    "line", [CERTIFICATE_NAME_LINE, CERTIFICATE_VALIDITY_LINE, PGP_PUBLIC_LINE, NOSTR_PUBLIC_KEY]
)
def test_public_encodings_are_kept(line: str) -> None:
    text = f"paste this into the config: {line}"
    assert redact(text) == text


def test_a_bech32_public_key_with_a_broken_checksum_is_still_redacted() -> None:
    broken = NOSTR_PUBLIC_KEY[:-1] + ("q" if NOSTR_PUBLIC_KEY[-1] != "q" else "p")
    assert broken not in redact(f"follow me: {broken}")


@pytest.mark.parametrize("secret", [NOSTR_SECRET_KEY, PRIVATE_KEY_LINE])
def test_the_secret_halves_are_still_redacted(secret: str) -> None:
    assert secret not in redact(f"paste this into the config: {secret}")


def test_an_openpgp_secret_key_packet_is_not_taken_for_a_public_one() -> None:
    assert redaction._public_encoding(PGP_PUBLIC_LINE)
    assert not redaction._public_encoding(PGP_SECRET_LINE)


def test_a_private_key_holding_certificate_bytes_is_not_public() -> None:
    # A private key's DER (version first) followed by a certificate's name attribute: a key
    # container in one line, still secret.
    der = b"\x30\x81\x87\x02\x01\x00" + bytes(range(40)) + b"\x06\x03\x55\x04\x06\x13\x02DE"
    assert not redaction._public_encoding(base64.b64encode(der).decode())
    certificate = b"\x30\x82\x01\xc8\x30\x82\x01\x6f" + bytes(range(40)) + b"\x06\x03\x55\x04"
    assert redaction._public_encoding(base64.b64encode(certificate).decode())


@pytest.mark.parametrize(
    "line",
    [
        "STRIPE_WEBHOOK_SECRET=whsec_...",
        "STRIPE_SECRET_KEY=sk_live_...",
        'GITHUB_TOKEN="ghp_..."',
        "SLACK_BOT_TOKEN=xoxb-\u2026",
    ],
)
def test_a_prefix_and_an_ellipsis_is_a_placeholder(line: str) -> None:
    assert redact(line) == line


@pytest.mark.parametrize(
    ("line", "secret"),
    [
        ("STRIPE_SECRET_KEY=sk_live_4eC39HqLyjWDarjtT1zdp7dc...", "4eC39HqLyjWDarjtT1zdp7dc"),
        ("DB_PASSWORD=hunter2_...", "hunter2"),
    ],
)
def test_a_cut_key_before_an_ellipsis_is_still_redacted(line: str, secret: str) -> None:
    assert secret not in redact(line)


def test_an_attribute_path_after_the_word_token_is_code() -> None:
    code = (
        "    self.auth_token = auth_token\n"
        "    self.auth_username = auth_username\n"
        "    self.auth_password = auth_password\n"
    )
    assert redact(code) == code


@pytest.mark.parametrize(
    ("line", "secret"),
    [
        ("Authorization: Basic dXNlcm5hbWU6cGFzc3dvcmQx", "dXNlcm5hbWU6cGFzc3dvcmQx"),
        ("Authorization: Token Zx8qLmP4.vNw2RtY7sKd9", "Zx8qLmP4.vNw2RtY7sKd9"),
    ],
)
def test_a_scheme_and_its_credential_are_still_redacted(line: str, secret: str) -> None:
    assert secret not in redact(line)


def test_an_auth_methods_parameters_are_not_a_login_token() -> None:
    line = 'vault login -method=userpass username=ops password="$(pass show ops/vault)"'
    assert redact(line) == line


@pytest.mark.parametrize(
    ("line", "secret"),
    [
        ("vault login -method=userpass username=ops password=Hunt3r2xyz", "Hunt3r2xyz"),
        ("vault login hvs.CAESIJlU9ULsZq2nT4vW1zV3Q8H", "CAESIJlU9ULsZq2nT4vW1zV3Q8H"),
    ],
)
def test_a_login_password_and_token_are_still_redacted(line: str, secret: str) -> None:
    assert secret not in redact(line)


def test_a_sentry_dsn_with_its_public_key_alone_is_kept() -> None:
    line = 'Sentry.init({ dsn: "https://4c1d5e0b7a2d4c3e8b6a1f0e9d8c7b6a@o12345.ingest.sentry.io/678" });'
    assert redact(line) == line


def test_a_legacy_sentry_dsn_with_its_secret_is_still_redacted() -> None:
    secret = "9f1c5e0b7a2d4c3e8b6a1f0e9d8c7b6a"
    line = f"SENTRY_DSN=https://4c1d5e0b7a2d4c3e8b6a1f0e9d8c7b6a:{secret}@sentry.example.com/12"
    assert secret not in redact(line)
