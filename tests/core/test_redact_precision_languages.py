"""Redaction by kind: Microsoft's identifiable keys in any context, a password after the word for
password in other languages, and what a detector finds that is no secret (references and
templates, values of low variety, documented examples, digests and files printed by tools).

Keys are made here from microsoft/security-utilities' published formats (MIT); digests and
fingerprints were printed by `ssh-keygen -l`, `sha256sum`, `openssl dgst`, `pip hash` and
`gpg --fingerprint` on this machine; the languages tested are among those not held out
(docs/secrets.md lists the held-out third).
"""

from __future__ import annotations

import base64
import random
import string

import pytest

from memory_core.redact import redact

_B64 = string.ascii_letters + string.digits + "+/"
_ALNUM = string.ascii_letters + string.digits


def _random(alphabet: str, size: int, seed: int) -> str:
    chooser = random.Random(seed)
    return "".join(chooser.choice(alphabet) for _ in range(size))


def _key44(signature: str, seed: int) -> str:
    """A 32-byte identifiable key: 33 characters, the signature, one of A-P, 5, `=`."""
    return _random(_B64, 33, seed) + signature + "C" + _random(_B64, 5, seed + 1) + "="


def _key88(signature: str, seed: int) -> str:
    """A 64-byte identifiable key: 76 characters, the signature, 5, one of AQgw, `==`."""
    return _random(_B64, 76, seed) + signature + _random(_B64, 5, seed + 1) + "Q=="


def _annotated(seed: int) -> str:
    """A common annotated security key: 52 characters, `JQQJ99`, the platform fields."""
    return (
        _random(_ALNUM, 52, seed)
        + "JQQJ99"
        + "x"
        + "C"
        + _random(_ALNUM, 16, seed + 1)
        + "A"
        + _random(_ALNUM, 7, seed + 2)
    )


_MICROSOFT_KEYS = [
    *(_key44(sig, n) for n, sig in enumerate(("+AEh", "+ASb", "+ARm", "AIoT", "AzCa", "AZEG"))),
    *(_key88(sig, 10 + n) for n, sig in enumerate(("+ASt", "ACDb", "+ABa", "+AMC", "APIM"))),
    _annotated(30),
]
# Where an agent shows a key: prose, a log line, glued after `=` or `:`, a JSON value, a
# command's argument. The key may start or end with `+` or `/`: no word boundary holds.
_CONTEXTS = [
    "the portal shows {} under the resource, can you add it?",
    "2026-11-20 10:14:03.221 [INF] Startup: using {} for the queue",
    "AZURE_SERVICE_KEY={}",
    "key:{}",
    '{{"primaryKey": "{}"}}',
    "az keyvault secret set --vault-name kv --name k --value {}",
]


@pytest.mark.parametrize("key", _MICROSOFT_KEYS)
def test_a_microsoft_identifiable_key_is_caught_in_every_context(key: str) -> None:
    for context in _CONTEXTS:
        text = context.format(key)
        out = redact(text)
        assert key not in out and key[: len(key) // 2] not in out, text


def test_a_microsoft_signature_in_the_wrong_place_is_no_key() -> None:
    # The signature 10 characters early, a character after it outside A-P, a longer base64
    # run around a well-formed key: none is the format.
    early = _random(_B64, 23, 1) + "+AEh" + "C" + _random(_B64, 15, 2) + "="
    wrong_class = _random(_B64, 33, 3) + "+AEh" + "z" + _random(_B64, 5, 4) + "="
    for body in (early, wrong_class):
        text = f"checksum list: {body} end"
        assert "azure-key" not in redact(text)
    longer = "QUJD" * 30 + _key44("+ASb", 5)
    assert "azure-key" not in redact(f"blob {longer} end")


def test_a_64_byte_key_in_base64_is_caught_alone_but_not_as_a_printed_digest() -> None:
    key = _random(_B64, 86, 7) + "=="
    assert key not in redact(f"2026-11-20 [INF] using {key} for storage")
    assert key not in redact(f"AZURE_STORAGE_ACCOUNT={key}")
    # Microsoft's published alphabet for it has `\` too: a JSON file escapes `/` as `\/`.
    escaped = _random(_B64, 40, 8) + "\\/" + _random(_B64, 44, 9) + "=="
    assert escaped[:40] not in redact(f'{{"storage": "{escaped}"}}')
    # SHA-512 in base64, as `openssl dgst -sha512 -binary | base64` printed it here, after its
    # command, and as npm writes it after `sha512-`.
    digest = (
        "58IrmUxZ2c8rSOVJseJGZmNgRZMNPafBrLKZ0cO3+TH5Sq5B7dosKyB6NuEPi8uNRSI+VIePWzFufOO2vAGWKQ=="
    )
    for text in (
        f"$ openssl dgst -sha512 -binary f.txt | base64\n{digest}",
        f'"integrity": "sha512-{digest}"',
    ):
        assert redact(text) == text


# Prompts in languages that are not held out, each with the word its programs' translations
# use (memory_core/secret_words.py) and the language's own way to introduce the value.
_PROMPTS = [
    ("de", "Das Passwort für den Testserver lautet {}, bitte eintragen."),
    ("fr", "Le mot de passe de la base est {} — mets-le dans le fichier."),
    ("es", "La contraseña del usuario admin es {} y no la cambies."),
    ("pt_BR", "A senha do banco é {}, configura o deploy com ela."),
    ("pl", "Hasło do serwera: {} (nie zmieniaj go)."),
    ("cs", "Heslo k databázi je {}."),
    ("tr", "Veritabanı parolası {} olarak ayarlandı."),
    ("sv", "Lösenordet till VPN:en är {}."),
    ("hu", "A jelszó: {}"),
    ("ko", "서버 암호는 {} 입니다."),
    ("el", "Ο κωδικός πρόσβασης είναι {}."),
    ("th", "รหัสผ่านของระบบคือ {} นะครับ"),
]
_PASSWORDS = ["Quokka-Lantern-Fig42", "r7!Tq2vLm9", "20481937465", "Hx9#kPw2zQ"]


@pytest.mark.parametrize(("language", "prompt"), _PROMPTS)
def test_a_password_after_the_word_for_password_in_other_languages(
    language: str, prompt: str
) -> None:
    for password in _PASSWORDS:
        out = redact(prompt.format(password))
        assert password not in out, (language, out)
        assert "[REDACTED:password]" in out


def test_the_word_for_password_without_a_password_after_it_changes_nothing() -> None:
    for text in (
        "Das Passwort ist zu kurz, bitte ein längeres wählen.",
        "Le mot de passe est dans /etc/app/config.yml, pas ici.",
        "La contraseña es ${DB_PASSWORD}, viene del entorno.",
        "A senha expira em 2026-12-01, troca antes.",
        "Heslo najdeš v souboru settings.py na serveru.",
        # A word that only follows a few others is not introduced as the password.
        "Passwort-Reset für user123 angefordert.",
        # Names with a number, formats and escapes in messages are no passwords.
        "Bitte das Passwort für die PKCS#12-Datei eingeben.",
        "Benutzername oder Passwort ist zu lang für SOCKSv5.",
        "请输入密码以解密 PKCS#12 文件。",
        "Geben Sie das Passwort ein,%0Aum den Schlüssel zu schützen.",
        "서버 암호는 <password> 입니다.",
        # A Latin-script word inside another word is not that word.
        "secretary: hunter22x",
        "Kunjungi sandiego2024 untuk info.",
    ):
        assert redact(text) == text, text


# What documentation writes where a secret goes, each next to a real-looking one that is
# redacted (the negative control: the rule is about the placeholder, not the context).
_PLACEHOLDERS = [
    (
        "curl -u admin:<password> https://localhost:9200/_cat/indices",
        "curl -u admin:Zr8-kQ2!vLp https://localhost:9200/_cat/indices",
    ),
    (
        'mongodump --uri="mongodb+srv://backup:<db_password>@cluster0.ab1cd.mongodb.net/shop"',
        'mongodump --uri="mongodb+srv://backup:Tq7vL2mZp9@cluster0.ab1cd.mongodb.net/shop"',
    ),
    (
        'dsn = "postgresql://{user}:{password}@{host}/{db}".format(**cfg)',
        'dsn = "postgresql://app:Wk3pQz7LmN@db.internal/app"',
    ),
    ("api_key: your-api-key-here", "api_key: 9f3Kq2LmZ8vT1xR7"),
    (
        "cursor.execute('UPDATE users SET password = :password WHERE id = :id')",
        "cursor.execute(\"UPDATE users SET password = 'Zr8kQ2vLp3' WHERE id = 1\")",
    ),
    ("mysql://USERNAME:PASSWORD@db.internal/app", "mysql://deploy:Hx9kPw2zQ4@db.internal/app"),
    ("curl --user user:pass https://x.test", "curl --user user:Hx9kPw2zQ4 https://x.test"),
    (
        'curl -X POST --user "{client_id}:{client_secret}" https://x.test',
        'curl -X POST --user "{acd3c08b}:{ZqL5kVrX1n8tA2}" https://x.test',
    ),
    ('secret = "asdfasdfasdfasdfasdfasdf"', 'secret = "asdfQ8rmZ2xk7LwVbN4pTy"'),
    (
        "aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
        "aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCY7Hq2Lm9Zk",
    ),
    ("password = 'test1234'", "password = 'tEst-9Kq2Lm'"),
    (
        '--set auth.token="XXXXXXXXXX_PUT_YOUR_TOKEN_HERE_XXXXXXXXXX"',
        '--set auth.token="Zr8kQ2vLp3Hx9kPw2zQ4Tq7vL2mZp9Wk3pQz7LmN"',
    ),
    ('format_password = "prefix_{hardcoded}"', 'format_password = "prefix_Zr8kQ2vLp3Hx9"'),
]


@pytest.mark.parametrize(("placeholder", "secret"), _PLACEHOLDERS)
def test_a_placeholder_stays_and_a_secret_in_its_place_does_not(
    placeholder: str, secret: str
) -> None:
    assert redact(placeholder) == placeholder
    assert redact(secret) != secret


# Printed here by `ssh-keygen -l`, `sha256sum`, `openssl dgst`, `pip hash`, `gpg --fingerprint`
# and a tartufo-style exclusion list, and a PNG's base64 (a real file's first bytes).
_PNG = base64.b64encode(
    bytes.fromhex("89504e470d0a1a0a0000000d4948445200000030000000300806000000") + bytes(range(48))
).decode()
_PRINTED = [
    "256 SHA256:G6+RrxjNfERCEtLYmiKUeVvx4CUJMblaK++ByO1scvQ me@host (ED25519)",
    "256 MD5:47:0d:e5:bc:90:f0:17:eb:36:6f:a3:25:52:85:47:fa me@host (ED25519)",
    "5891b5b522d5df086d0ff0b110fbd9d21bb4fc7163af34d08286a2e846f6be03  f.txt",
    "SHA2-256(f.txt)= 5891b5b522d5df086d0ff0b110fbd9d21bb4fc7163af34d08286a2e846f6be03",
    "six==1.16.0 --hash=sha256:1e61c37477a1626458e36f7b1d82aa5c9b094fa4802892072e49de9c60c4c926",
    "      A708 29D8 FB08 4AF7 BE13  55D8 ABBF 7373 8A34 0549",
    'exclude-signatures = [\n  "1e61c37477a1626458e36f7b1d82aa5c9b094fa4802892072e49de9c60c4c926",\n]',
    f"data:image/png;base64,{_PNG}",
    f'logo_key = "{_PNG}"',
]


@pytest.mark.parametrize("text", _PRINTED)
def test_digests_fingerprints_and_files_printed_by_tools_stay(text: str) -> None:
    assert redact(text) == text


def test_the_same_values_under_a_secret_name_are_still_redacted() -> None:
    # The negative control of the digest rules: the context makes them public, not the value.
    assert "1e61c374" not in redact(
        'api_secret = "1e61c37477a1626458e36f7b1d82aa5c9b094fa4802892072e49de9c60c4c926"'
    )
    random_base64 = _random(_B64, len(_PNG) - 2, 11) + "=="
    assert random_base64 not in redact(f'logo_key = "{random_base64}"')


def test_a_provider_prefix_followed_by_words_is_a_name_not_a_key() -> None:
    # Objective-C and C selectors and documentation's stand-ins with a token's prefix.
    for text in (
        "- (id)hf_requiredCharacteristicTypesForDisplayMetadata;",
        "The docs write it as xoxb-xoxb-my-bot-token in every example.",
        "<ConsumerSecret>foobar</ConsumerSecret>",
    ):
        assert redact(text) == text
    generated = "hf_" + _random(string.ascii_letters, 34, 21)
    assert generated not in redact(f"- (id){generated};")
    assert "xoxb-" not in redact("The docs write it as xoxb-2048193746-7730284716-kq2LmZ8vT1xR7Wp")


def test_the_languages_docs_list_are_the_words_table() -> None:
    from pathlib import Path

    from memory_core.secret_words import WORDS

    docs = Path(__file__).resolve().parents[2].joinpath("docs", "secrets.md").read_text()
    listed = docs.split("Languages (locale names of the catalogues): ", 1)[1].split(".", 1)[0]
    assert listed.split() == sorted(WORDS)
    for kinds in WORDS.values():
        for words in kinds.values():
            assert all(word == word.lower() and len(word) >= 2 for word in words)
