"""Secrets found by the structure of what holds them, not by examples of them.

Three classes, each with several forms made here from the formats' published specifications
and the look-alikes that must stay as they are:
- escaped text (a notebook's JSON, JSON inside JSON, a log line, a URL-encoded form, HTML
  entities, a shell's `\\'`): the rules are run on the text unescaped;
- key files by their structure (JSON Web Keys' private members, minisign and signify secret
  keys, a Solana keypair array, OpenVPN's `auth-user-pass`, armored blocks labelled private,
  secret or encrypted, onion services' keys, key stores in base64);
- the English words for a secret borrowed by prompts in other languages, with a copula before
  a generated-looking value.

Every value is made here (random bytes from a fixed seed, or typed for the test)."""

from __future__ import annotations

import base64
import json
import random

import pytest

from memory_core.redact import redact
from tests.core.redaction_state import redaction_computed_afresh  # noqa: F401

_RNG = random.Random(29)


def _b64url(size: int) -> str:
    return base64.urlsafe_b64encode(_RNG.randbytes(size)).decode().rstrip("=")


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def _hidden(text: str, secret: str) -> bool:
    out = redact(text)
    return secret not in out and "[REDACTED:" in out


# --- Escaped text ------------------------------------------------------------------------------

PASSWORD = "Gh7$kq2LmN9x"
TOKEN = "f250f7f4-0084-4109-b94a-45dfc8f8e41a"


def _notebook(source_line: str) -> str:
    cell = {"cell_type": "code", "source": ["import os\n", source_line]}
    return json.dumps({"cells": [cell]}, indent=1)


@pytest.mark.parametrize(
    ("text", "secret"),
    [
        # A Jupyter notebook's cell as its JSON stores it.
        (_notebook(f'os.environ["SCW_SECRET_KEY"] = "{TOKEN}"\n'), TOKEN),
        (_notebook(f'db = connect(password="{PASSWORD}")\n'), PASSWORD),
        # JSON holding JSON as a string, and that again inside a log's JSON.
        (json.dumps({"body": json.dumps({"db": {"password": PASSWORD}})}), PASSWORD),
        (json.dumps({"log": json.dumps({"body": json.dumps({"password": PASSWORD})})}), PASSWORD),
        # A request body URL-encoded in a log, with `@` and `=` in the password.
        ("POST /login form=user%3Dbob%26password%3Dp%40ssW0rd%3Dx9%21", "p%40ssW0rd"),
        # HTML entities in an attribute (a template, an XML config).
        (
            '<div data-cfg="{&quot;api_token&quot;: &quot;Zq8kLp2vN4wR7tY1&quot;}">',
            "Zq8kLp2vN4wR7tY1",
        ),
        # A shell's escaped single quotes.
        ("sh -c 'export API_TOKEN=\\'Gh7kq2LmN9xRt5vB\\''", "Gh7kq2LmN9xRt5vB"),
        # A command's quoted password in a JSON log (no operator next to the quotes).
        (json.dumps({"cmd": f'mysql -u root -p"{PASSWORD}" shop'}), PASSWORD),
        (json.dumps({"cmd": f'curl -u admin:"{PASSWORD}" https://x'}), PASSWORD),
    ],
)
def test_a_secret_in_escaped_text_is_hidden(text: str, secret: str) -> None:
    assert _hidden(text, secret), redact(text)


@pytest.mark.parametrize(
    "text",
    [
        'print("Hello \\"world\\"")',
        _notebook('os.environ["HOME"] = "/home/ada"\n'),
        _notebook('print(os.environ["API_TOKEN"])\n'),
        json.dumps({"body": json.dumps({"password": "${DB_PASSWORD}"})}),
        json.dumps({"usage": json.dumps({"input_tokens": 1234, "output_tokens": 56})}),
        "GET /search?q=a%3Db%26c%3Dd&lang=en",
        '<a title="&quot;Forgot your password?&quot;" href="/reset">',
    ],
)
def test_escaped_text_without_a_secret_is_kept(text: str) -> None:
    assert redact(text) == text


# --- Key files by their structure ---------------------------------------------------------------

RSA_PRIVATE_JWK = {
    "kty": "RSA",
    "kid": "2026-11-28",
    "n": _b64url(256),
    "e": "AQAB",
    "d": _b64url(256),
    "p": _b64url(128),
    "q": _b64url(128),
    "dp": _b64url(128),
    "dq": _b64url(128),
    "qi": _b64url(128),
}
EC_PRIVATE_JWK = {"kty": "EC", "crv": "P-256", "x": _b64url(32), "y": _b64url(32), "d": _b64url(32)}
OKP_PRIVATE_JWK = {"kty": "OKP", "crv": "Ed25519", "x": _b64url(32), "d": _b64url(32)}
OCT_JWK = {"kty": "oct", "alg": "HS256", "k": _b64url(32)}


@pytest.mark.parametrize(
    ("jwk", "members"),
    [
        (RSA_PRIVATE_JWK, ("d", "p", "q", "dp", "dq", "qi")),
        (EC_PRIVATE_JWK, ("d",)),
        (OKP_PRIVATE_JWK, ("d",)),
        (OCT_JWK, ("k",)),
    ],
)
def test_a_json_web_keys_private_members_are_hidden(
    jwk: dict[str, str], members: tuple[str]
) -> None:
    for text in (json.dumps(jwk), json.dumps({"keys": [jwk]}, indent=2)):
        out = redact(text)
        for member in members:
            assert jwk[member] not in out, member


def test_a_public_json_web_key_set_is_kept() -> None:
    public = [
        {key: RSA_PRIVATE_JWK[key] for key in ("kty", "kid", "n", "e")},
        {key: EC_PRIVATE_JWK[key] for key in ("kty", "crv", "x", "y")},
        {key: OKP_PRIVATE_JWK[key] for key in ("kty", "crv", "x")},
    ]
    text = json.dumps({"keys": public}, indent=2)
    assert redact(text) == text
    # The public half of a private key stays readable too.
    assert OKP_PRIVATE_JWK["x"] in redact(json.dumps(OKP_PRIVATE_JWK))


def _minisign_secret(encrypted: bool) -> str:
    # minisign's secret key file: `Ed`, the KDF (`Sc` scrypt or none), `B2`, salt, limits, the
    # encrypted key id, key and checksum (158 bytes).
    head = b"EdScB2" if encrypted else b"Ed\0\0B2"
    return _b64(head + _RNG.randbytes(152))


def _signify_secret() -> str:
    # signify's: `Ed`, `BK` (bcrypt_pbkdf), rounds, salt, checksum, key id, key (104 bytes).
    return _b64(b"EdBK" + _RNG.randbytes(100))


MINISIGN_PUBLIC = _b64(b"Ed" + _RNG.randbytes(40))


@pytest.mark.parametrize(
    ("text", "secret"),
    [
        (f"untrusted comment: minisign encrypted secret key\n{_minisign_secret(True)}\n", None),
        (f"$ cat ~/.minisign/minisign.key\n{_minisign_secret(False)}", None),
        (f"untrusted comment: signify secret key\n{_signify_secret()}\n", None),
        (f"untrusted comment: my release key, private\n{_b64(_RNG.randbytes(90))}\n", None),
    ],
)
def test_signing_tools_secret_keys_are_hidden(text: str, secret: str | None) -> None:
    body = text.rstrip("\n").rsplit("\n", 1)[1]
    assert _hidden(text, body), redact(text)


@pytest.mark.parametrize(
    "text",
    [
        f"untrusted comment: minisign public key 7A3C\n{MINISIGN_PUBLIC}\n",
        f"minisign -Vm release.tar.gz -P {MINISIGN_PUBLIC}",
        f"untrusted comment: signify public key\n{_b64(b'Ed' + _RNG.randbytes(40))}\n",
    ],
)
def test_signing_tools_public_keys_are_kept(text: str) -> None:
    assert redact(text) == text


def test_a_solana_keypair_array_is_hidden() -> None:
    keypair = list(_RNG.randbytes(64))
    for text in (
        f"$ cat ~/.config/solana/id.json\n{json.dumps(keypair)}",
        f"const secret = Uint8Array.from({json.dumps(keypair)});",
    ):
        out = redact(text)
        assert json.dumps(keypair)[1:-1] not in out and "[REDACTED:private-key]" in out


@pytest.mark.parametrize(
    "numbers",
    [list(range(64)), [0] * 64, [_RNG.randrange(4) for _ in range(64)], list(_RNG.randbytes(32))],
)
def test_a_list_of_numbers_that_is_no_keypair_is_kept(numbers: list[int]) -> None:
    text = f"counts = {json.dumps(numbers)}"
    assert redact(text) == text


@pytest.mark.parametrize(
    "text",
    [
        "client\nremote vpn.example.com 1194\n<auth-user-pass>\ndana\nmeadow-7Falcon-lantern\n"
        "</auth-user-pass>\n",
        "# /etc/openvpn/client/auth.txt (auth-user-pass)\ndana\nmeadow-7Falcon-lantern",
        "==> /etc/openvpn/creds.txt <== (auth-user-pass)\ndana\nmeadow-7Falcon-lantern\n\n",
    ],
)
def test_an_openvpn_auth_user_pass_password_is_hidden(text: str) -> None:
    assert _hidden(text, "meadow-7Falcon-lantern"), redact(text)
    assert "dana" in redact(text)


@pytest.mark.parametrize(
    "text",
    [
        "client\ndev tun\nauth-user-pass\nremote vpn.example.com 1194\n",
        "client\nauth-user-pass /etc/openvpn/creds.txt\nauth-nocache\npersist-key\n",
        "# prompts for them (auth-user-pass)\nauth-nocache\n",
    ],
)
def test_an_auth_user_pass_directive_without_its_file_is_kept(text: str) -> None:
    assert redact(text) == text


def _armored(label: str, dashes: str = "-----", header: str = "") -> str:
    body = "\n".join(_b64(_RNG.randbytes(48)) for _ in range(4))
    space = " " if len(dashes) == 4 else ""
    return f"{dashes}{space}BEGIN {label}{space}{dashes}\n{header}{body}\n{dashes}{space}END {label}{space}{dashes}\n"


@pytest.mark.parametrize(
    "block",
    [
        _armored("SSH2 ENCRYPTED PRIVATE KEY", "----", 'Comment: "rsa-key-20261128"\n'),
        _armored("AGE ENCRYPTED FILE"),
        _armored("ENCRYPTED PRIVATE KEY"),
        _armored("MYTOOL SECRET KEY"),
    ],
)
def test_an_armored_block_labelled_private_secret_or_encrypted_is_hidden(block: str) -> None:
    line = block.splitlines()[-2]
    assert _hidden(block, line), redact(block)


@pytest.mark.parametrize(
    "text",
    [
        # RFC 4716's public key file: an ed25519 key in SSH's wire format.
        '---- BEGIN SSH2 PUBLIC KEY ----\nComment: "ed25519-key-20261128"\n'
        + _b64(b"\0\0\0\x0bssh-ed25519\0\0\0\x20" + _RNG.randbytes(32))
        + "\n---- END SSH2 PUBLIC KEY ----\n",
        "Paste the -----BEGIN AGE ENCRYPTED FILE----- line and the rest into the field.",
    ],
)
def test_an_armored_public_key_or_a_label_named_in_prose_is_kept(text: str) -> None:
    assert redact(text) == text


@pytest.mark.parametrize(
    ("text", "secret"),
    [
        (
            "250-ServiceID=abcdefghijklmnop\n250-PrivateKey=ED25519-V3:"
            + _b64(_RNG.randbytes(64))
            + "\n250 OK",
            None,
        ),
        (
            "DEST REPLY PUB=abc PRIV="
            + _b64(_RNG.randbytes(400)).replace("+", "-").replace("/", "~"),
            None,
        ),
    ],
)
def test_onion_service_keys_are_hidden(text: str, secret: str | None) -> None:
    key = text.split("=", 2)[-1].split(":", 1)[-1].split("\n")[0]
    assert _hidden(text, key), redact(text)


def test_an_onion_services_creation_command_is_kept() -> None:
    text = "ADD_ONION NEW:ED25519-V3 Flags=DiscardPK Port=80,127.0.0.1:8080"
    assert redact(text) == text


def _pkcs12() -> bytes:
    from cryptography.hazmat.primitives.asymmetric import ed25519
    from cryptography.hazmat.primitives.serialization import BestAvailableEncryption, pkcs12

    key = ed25519.Ed25519PrivateKey.generate()
    return pkcs12.serialize_key_and_certificates(
        b"k", key, None, None, BestAvailableEncryption(b"x")
    )


@pytest.mark.parametrize(
    "store",
    [_pkcs12(), bytes.fromhex("feedfeed00000002") + _RNG.randbytes(600)],
)
def test_a_key_store_in_base64_is_hidden_one_line_or_wrapped(store: bytes) -> None:
    encoded = _b64(store)
    wrapped = "\n".join(encoded[i : i + 64] for i in range(0, len(encoded), 64))
    for text in (f"KEYSTORE_B64={encoded}", f"$ base64 -w 64 release.p12\n{wrapped}\n"):
        out = redact(text)
        assert all(line not in out for line in wrapped.splitlines()[:-1]), out


# --- Words borrowed from English in other languages' prompts ------------------------------------


@pytest.mark.parametrize(
    ("text", "secret"),
    [
        ("mi token de la API es OdtUlQUvo8F_CGdJ, ¿por qué me devuelve 401?", "OdtUlQUvo8F_CGdJ"),
        ("le token est ghx81Kd9aQ2mPz, merci", "ghx81Kd9aQ2mPz"),
        ("Der Token lautet: Zk2m9Qp1Lx8v", "Zk2m9Qp1Lx8v"),
        ("o secret do webhook é a8Kd92mQx1Pz7", "a8Kd92mQx1Pz7"),
        ("API token'ı: a8Kd92mQx1Pz olarak ayarlandı", "a8Kd92mQx1Pz"),
    ],
)
def test_a_borrowed_secret_word_before_a_value_is_read(text: str, secret: str) -> None:
    assert _hidden(text, secret), redact(text)


@pytest.mark.parametrize(
    "text",
    [
        "the token is valid for 1h",
        "The secret is base64-encoded before it is stored",
        "el token es inválido, ¿por qué?",
        "the token is stored in vault",
        "secret = keypair[:32]",
        "You can reference a secret value referred to as SECRET_VALUE_REF2 in the template",
        "the password is set to x86_64-linux-gnu by the installer",
    ],
)
def test_a_borrowed_secret_word_without_a_value_is_kept(text: str) -> None:
    assert redact(text) == text


# --- Names whose parts say credential, in any syntax --------------------------------------------

NAMED = "hunter2hunter2"


@pytest.mark.parametrize(
    "text",
    [
        f'"pass": "{NAMED}"',  # JSON
        f"'pass' => '{NAMED}',",  # a PHP array
        f"$config['db']['pass'] = '{NAMED}';",
        f'<connection user="app" pass="{NAMED}"/>',  # an XML attribute
        f'local cfg = {{ user = "app", pass = "{NAMED}" }}',  # a Lua table
        f'let pass = "{NAMED}"; in pass',  # Nix
        f"export MYSQL_ROOT_PW={NAMED}",  # `*_PW`
        f"DB_HASLO={NAMED}",  # Polish `hasło`, as a name writes it
        f'losenord_db: "{NAMED}"',  # Swedish `lösenord`
        f'config.mot_de_passe = "{NAMED}"',  # French `mot de passe`
        f"jelszo = {NAMED}",  # Hungarian `jelszó`
    ],
)
def test_a_value_under_a_name_whose_parts_say_password_is_hidden(text: str) -> None:
    assert _hidden(text, NAMED), redact(text)


@pytest.mark.parametrize(
    "text",
    [
        "--- PASS: TestLogin (0.00s)",
        '{"status": "pass", "duration": 12}',
        '"pass": "fail"',
        "if ok:\n    pass  # nothing to do",
        "the losenord field is required",
        "mot_de_passe: ${MDP}",
        "upward = compute(x)",
    ],
)
def test_a_short_password_word_without_a_password_value_is_kept(text: str) -> None:
    assert redact(text) == text


@pytest.mark.parametrize(
    "text",
    [
        'variable "db_password" {\n  type      = string\n  sensitive = true\n'
        '  default   = "Zq8kLp2v!x9"\n}',
        'parser.add_argument("--token", default="Zq8kLp2v!x9")',
        '@click.option("--password", default="Zq8kLp2v!x9", help="the admin password")',
    ],
)
def test_the_default_of_a_declared_secret_input_is_hidden(text: str) -> None:
    assert _hidden(text, "Zq8kLp2v!x9"), redact(text)


@pytest.mark.parametrize(
    "text",
    [
        'variable "db_password" {\n  type = string\n}\nvariable "region" {\n'
        '  default = "eu-west-1a"\n}',
        'parser.add_argument("--token-file", default="~/.config/app/token2")',
        'variable "db_password" { default = "${var.x}" }',
        'parser.add_argument("--password", default=None)',
    ],
)
def test_a_default_that_is_no_secret_is_kept(text: str) -> None:
    assert redact(text) == text


def _pem_private_key() -> str:
    from cryptography.hazmat.primitives.asymmetric import ed25519
    from cryptography.hazmat.primitives.serialization import (
        Encoding,
        NoEncryption,
        PrivateFormat,
    )

    key = ed25519.Ed25519PrivateKey.generate()
    return key.private_bytes(Encoding.PEM, PrivateFormat.PKCS8, NoEncryption()).decode()


def test_a_private_key_block_in_base64_is_hidden() -> None:
    encoded = _b64(_pem_private_key().encode())
    for text in (
        f"users:\n- name: admin\n  user:\n    client-key-data: {encoded}\n",
        f"echo {encoded} | base64 -d > key.pem",
    ):
        out = redact(text)
        assert encoded[14:] not in out and "[REDACTED:private-key]" in out, out


def test_a_certificate_block_in_base64_is_kept() -> None:
    certificate = "-----BEGIN CERTIFICATE-----\nMIIBxTCCAWugAwIBAgIU\n-----END CERTIFICATE-----\n"
    text = f"    client-certificate-data: {_b64(certificate.encode())}"
    assert redact(text) == text


@pytest.mark.parametrize(
    "text",
    [
        'mnemonic: "legal winner thank year wave sausage worth useful legal winner thank yellow"',
        "my seed phrase is abandon ability able about above absent absorb abstract absurd abuse "
        "access accident",
        "RECOVERY_PHRASE=zoo zoo zoo zoo zoo zoo zoo zoo zoo zoo zoo wrong zoo zoo zoo zoo zoo zoo "
        "zoo zoo zoo zoo zoo vote",
    ],
)
def test_a_seed_phrase_under_its_name_is_hidden(text: str) -> None:
    out = redact(text)
    assert "[REDACTED:secret]" in out and "accident" not in out and "yellow" not in out, out


@pytest.mark.parametrize(
    "text",
    [
        "The mnemonic is a list of words from a fixed list of 2048 words chosen by the wallet",
        "Write down your seed phrase and keep it offline.",
        "mnemonic: legal winner thank year wave",
    ],
)
def test_prose_about_a_seed_phrase_is_kept(text: str) -> None:
    assert redact(text) == text


@pytest.mark.parametrize(
    "text",
    [
        'props.setProperty("mail.smtp.password", "Zq8kLp2v!x9");',
        'os.Setenv("API_TOKEN", "Zq8kLp2v!x9")',
        "set -gx GITHUB_TOKEN Zq8kLp2v!x9",  # fish
        "setx API_TOKEN Zq8kLp2v!x9",  # Windows
        "setenv DB_PASSWORD 'Zq8kLp2v!x9'",  # csh
    ],
)
def test_a_secret_set_by_its_name_and_value_as_arguments_is_hidden(text: str) -> None:
    assert _hidden(text, "Zq8kLp2v!x9"), redact(text)


@pytest.mark.parametrize(
    "text",
    [
        'config.set("password", "${PW}")',
        't("password", "Password")',
        'i18n("forgot_password", "Forgot your password?")',
        "set -gx GITHUB_TOKEN $(gh auth token)",
        "set -x PAGER less",
        "setx PATH C:\\tools\\bin2",
    ],
)
def test_a_setter_without_a_secret_value_is_kept(text: str) -> None:
    assert redact(text) == text


@pytest.mark.parametrize(
    ("text", "secret"),
    [
        ("DB_PASSWORD ?= Zq8kLp2v!x9", "Zq8kLp2v!x9"),  # Make
        ("@token ||= 'Zq8kLp2vN4wR7tY1'", "Zq8kLp2vN4wR7tY1"),  # Ruby
        ("password: !!str 0123456789", "0123456789"),  # a YAML tag saying its type
    ],
)
def test_other_assignment_syntaxes_are_read(text: str, secret: str) -> None:
    assert _hidden(text, secret), redact(text)


@pytest.mark.parametrize(
    "text",
    [
        "password: !secret db_password",  # Home Assistant's secrets.yaml reference
        "password: !vault |",  # Ansible Vault's block follows
        "DbPassword: !Ref DbPasswordParam",
        "CFLAGS ?= -O2 -Wall",
    ],
)
def test_a_yaml_tag_fetching_the_value_elsewhere_is_kept(text: str) -> None:
    assert redact(text) == text
