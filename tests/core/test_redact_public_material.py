"""Public data that reads as random stays as it is, told by what it is; the secrets that look like
it are still redacted next to it.

Real material (tests/fixtures/public_material/README.md gives sources and licenses): Let's
Encrypt's ISRG Root X1 and ACCV's root as Mozilla's CA list ships them, a PGP-signed tag of
ripgrep, a signature entry of python-tuf's test metadata and a DSSE envelope of sigstore-python's
test assets (both Apache-2.0). Lines of a
Python wheel's RECORD, a Debian `*.md5sums` file, an apt `Packages` record, npm's cache index, a
notebook's prose and a site's verification tag are copied from files of this machine's packages
(one line each, facts rather than works). Keys and JWKs are made here with
`cryptography`, so that the look-alike private material is no one's.
"""

from __future__ import annotations

import base64
from pathlib import Path

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec

from memory_core.redact import redact

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "public_material"
CERTIFICATE = (FIXTURES / "isrg-root-x1.pem").read_text()
ANOTHER_CERTIFICATE = (FIXTURES / "accvraiz1.pem").read_text()
SIGNED_TAG = (FIXTURES / "ripgrep-tag-grep-0.3.1.txt").read_text()
# A generated-looking value, as a key of no known format is: it must go wherever it stands.
RANDOM_KEY = "Zq8vT1mK3pW9xR2nB7cL4fJ6hD0sY5gA"


# A private key made here, for the look-alikes that must still be redacted.
PRIVATE_KEY = (
    ec.generate_private_key(ec.SECP256R1())
    .private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )
    .decode()
)


def _lines(pem: str) -> list[str]:
    return [line for line in pem.splitlines() if line and not line.startswith("-----")]


def test_a_certificate_stays_whole_and_the_key_after_it_in_a_chain_file_does_not() -> None:
    assert redact(CERTIFICATE) == CERTIFICATE
    chain = CERTIFICATE + PRIVATE_KEY
    redacted = redact(chain)
    assert redacted.startswith(CERTIFICATE)
    assert all(line not in redacted for line in _lines(PRIVATE_KEY))


def test_a_certificate_cut_before_its_begin_line_stays() -> None:
    # A tool's output or a file read from its middle: the block's shape says what it is.
    middle = "\n".join(CERTIFICATE.splitlines()[8:]) + "\n"
    assert redact(middle) == middle


def test_a_signed_tag_and_a_commit_signature_stay() -> None:
    assert redact(SIGNED_TAG) == SIGNED_TAG
    signature = SIGNED_TAG[SIGNED_TAG.index("-----BEGIN") :].rstrip("\n").split("\n")
    commit = (
        "tree 9d7b6eb09a471cdf1eac981b5800f126a7dff92e\n"
        "author Andrew Gallant <jamslam@gmail.com> 1701139014 -0500\n"
        "gpgsig " + "\n ".join(signature) + "\n\nRelease grep 0.3.1\n"
    )
    assert redact(commit) == commit


def test_a_secret_after_a_public_block_ends_or_inside_it_on_a_line_of_its_own_is_redacted() -> None:
    after_end = f"{SIGNED_TAG}API_KEY={RANDOM_KEY}\n"
    assert RANDOM_KEY not in redact(after_end)
    unfinished = "-----BEGIN PGP SIGNATURE-----\n\niQFGBAABCAAwFiEELYER4UE\n"
    text = f"{unfinished}export SERVICE_TOKEN={RANDOM_KEY}\n"
    assert RANDOM_KEY not in redact(text)


def test_a_private_key_block_is_no_public_block() -> None:
    body = "\n".join(_lines(PRIVATE_KEY))
    for label in ("PRIVATE KEY", "EC PRIVATE KEY", "ENCRYPTED PRIVATE KEY"):
        block = f"-----BEGIN {label}-----\n{body}\n-----END {label}-----\n"
        assert all(line not in redact(block) for line in _lines(PRIVATE_KEY))


def test_a_certificate_in_base64_stays_and_a_private_key_in_base64_does_not() -> None:
    bundle = base64.b64encode(ANOTHER_CERTIFICATE.encode()).decode()
    key_data = base64.b64encode(PRIVATE_KEY.encode()).decode()
    webhook = f"  clientConfig:\n    caBundle: {bundle}\n"
    assert redact(webhook) == webhook
    kubeconfig = (
        f"    certificate-authority-data: {bundle}\n"
        f"users:\n- name: dev\n  user:\n    client-key-data: {key_data}\n"
    )
    redacted = redact(kubeconfig)
    assert bundle in redacted
    assert key_data not in redacted


# python-tuf's `tests/generated_data/ed25519_metadata/snapshot_with_ed25519.json` (Apache-2.0).
TUF_SIGNATURES = """{
 "signatures": [
  {
   "keyid": "3458204ed467519c19a5316eb278b5608472a1bbf15850ebfb462d5315e4f86d",
   "sig": "bab356be0a82b85b9529aa4625cbd7b8e03b71d1a0fb5d3242f6e8377f102bcf60cc1b8c2a566fd5618c5f5ee3fc07745e84920d26e5514ad455868d7899ae03"
  }
 ],
"""


def test_a_signature_entry_naming_its_key_stays_and_a_signing_secret_beside_it_does_not() -> None:
    assert redact(TUF_SIGNATURES) == TUF_SIGNATURES
    secret = TUF_SIGNATURES.replace('"sig"', '"sig_secret"')
    assert "bab356be0a82b85b" not in redact(secret)
    # Without a key's id, a `sig` could be anything: it is read as before.
    alone = '{"sig": "' + RANDOM_KEY + '"}'
    assert RANDOM_KEY not in redact(alone)


# sigstore/sigstore-python's `test/assets/a.dsse.staging-rekor-v2.txt.sigstore.json` (Apache-2.0):
# a DSSE envelope, its payload an in-toto statement, its signature ECDSA in DER.
DSSE_ENVELOPE = """  "dsseEnvelope": {
    "payload": "eyJfdHlwZSI6Imh0dHBzOi8vaW4tdG90by5pby9TdGF0ZW1lbnQvdjEiLCJzdWJqZWN0IjpbeyJuYW1lIjoiYS50eHQiLCJkaWdlc3QiOnsic2hhMjU2IjoiYTBjZmM3MTI3MWQ2ZTI3OGU1N2NkMzMyZmY5NTdjM2Y3MDQzZmRkYTM1NGM0Y2JiMTkwYTMwZDU2ZWZhMDFiZiJ9fV0sInByZWRpY2F0ZVR5cGUiOiJodHRwczovL3Nsc2EuZGV2L3Byb3ZlbmFuY2UvdjEiLCJwcmVkaWNhdGUiOnsiYnVpbGREZWZpbml0aW9uIjp7ImJ1aWxkVHlwZSI6Imh0dHBzOi8vZ2l0aHViLmNvbS9zaWdzdG9yZS1jb25mb3JtYW5jZS9yZWtvcjItZHNzZS1oYXNoZWRyZWtvcmQtcmVnZW4ifSwicnVuRGV0YWlscyI6eyJidWlsZGVyIjp7ImlkIjoiaHR0cHM6Ly9naXRodWIuY29tL3NpZ3N0b3JlLWNvbmZvcm1hbmNlL3Jla29yMi1kc3NlLWhhc2hlZHJla29yZC1yZWdlbiJ9fX19",
    "payloadType": "application/vnd.in-toto+json",
    "signatures": [
      {
        "sig": "MEUCIQCQQ11nsoTaO52/MC48g07mjATdxD86ywdu3NxJUjH7yAIgWGc+MR3eIAoWu8JE1QM2YDslpoFAzMVWpN115fCKuqg="
      }
    ]
  }
"""


def test_an_attestation_its_signature_and_a_key_s_details_stay() -> None:
    assert redact(DSSE_ENVELOPE) == DSSE_ENVELOPE
    details = '          "keyDetails": "PKIX_ECDSA_P256_SHA_256",'
    assert redact(details) == details


def test_base64_of_other_json_or_a_random_value_under_a_signature_s_name_is_still_redacted() -> (
    None
):
    # A service account's JSON in base64 is a credential; so is a random value of a DER
    # signature's length that is not one.
    account = base64.b64encode(b'{"type": "service_account", "private_key_id": "k"}').decode()
    assert account not in redact(f"GOOGLE_CREDENTIALS={account}")
    random_value = base64.b64encode(bytes(range(40, 111))).decode()
    assert random_value not in redact(f'SIGNING_SECRET="{random_value}"')


def test_a_public_key_stays_under_any_name_and_its_private_key_does_not() -> None:
    key = ec.generate_private_key(ec.SECP256R1())
    spki = key.public_key().public_bytes(
        serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo
    )
    pkcs8 = key.private_bytes(
        serialization.Encoding.DER,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )
    ssh = key.public_key().public_bytes(
        serialization.Encoding.OpenSSH, serialization.PublicFormat.OpenSSH
    )
    public, private = base64.b64encode(spki).decode(), base64.b64encode(pkcs8).decode()
    blob = ssh.decode().split()[1]
    text = f"jwt:\n  signing_key: {public}\n  private_key: {private}\nauthorized: {blob}\n"
    redacted = redact(text)
    assert public in redacted
    assert blob in redacted
    assert private not in redacted


def test_a_jwks_public_members_stay_and_a_key_beside_them_does_not() -> None:
    numbers = ec.generate_private_key(ec.SECP256R1()).public_key().public_numbers()

    def b64url(number: int) -> str:
        return base64.urlsafe_b64encode(number.to_bytes(32, "big")).rstrip(b"=").decode()

    jwks = (
        '{"keys": [{"kty": "EC", "crv": "P-256", "use": "sig", '
        '"kid": "Pf01LuHu_tNTllWTMvSXv1bVwtps07iPgBdLRInyzGY", '
        f'"x": "{b64url(numbers.x)}", "y": "{b64url(numbers.y)}"}}]}}'
    )
    assert redact(jwks) == jwks
    # ISRG Root X1's RSA modulus: 683 characters of base64url, where a detector may find a
    # piece inside.
    modulus = x509.load_pem_x509_certificate(CERTIFICATE.encode()).public_key().public_numbers().n  # type: ignore[union-attr]
    encoded = base64.urlsafe_b64encode(modulus.to_bytes(512, "big")).rstrip(b"=").decode()
    rsa_jwk = f'{{"keys": [{{"kty": "RSA", "e": "AQAB", "n": "{encoded}", "use": "sig"}}]}}'
    assert redact(rsa_jwk) == rsa_jwk
    # pyjwt's test key sets write the key type first, then the modulus and a certificate chain:
    # the thumbprint after them is thousands of characters from `kty`.
    chain = "".join(_lines(CERTIFICATE))
    with_chain = (
        f'{{"keys":[{{"kty":"RSA","n":"{encoded}","e":"AQAB","x5c":["{chain}"],'
        '"x5t":"FaWinuPZQiDMljn3x9DMAuepBYQ"}]}'
    )
    assert redact(with_chain) == with_chain
    assert RANDOM_KEY not in redact(jwks[:-2] + f', "api_key": "{RANDOM_KEY}"}}]}}')


@pytest.mark.parametrize(
    "line",
    [
        # `md5sum`'s and `sha256sum`'s listing (`/var/lib/dpkg/info/adduser.md5sums`).
        "0091c90861f50e7be138d37764779d22  usr/share/doc/adduser/NEWS.Debian.gz\n"
        "30b17d2e2e9c784208f01d130f196864  usr/share/doc/adduser/README.gz\n"
        "a4537699e4951748913a3d3e212be34e  usr/share/doc/adduser/TODO\n"
        "30bb154dfdc69a2c0ff31ec465681b39  usr/share/doc/adduser/changelog.gz\n",
        # A wheel's RECORD, where `Pwd-` inside the base64url digest read as a name.
        "pydantic/_internal/_docs_extraction.py,"
        "sha256=V8_-TfG1oUHpEThCvNtZjJaPwd-zVodn4EqkAGv17hY,4708",
        # apt's `Packages`: a secret word in a package's file name.
        "Filename: pool/updates/main/m/mariadb/"
        "mariadb-plugin-cracklib-password-check_10.11.19-0+deb12u1_amd64.deb",
        "9eea46ee2ea2318336963e5901548f6a  usr/share/doc/gir1.2-secret-1/changelog.Debian.gz",
        # npm's cache index: a bare `key` naming a cache entry.
        '{"key":"pacote:tarball:fastq@1.20.3","integrity":"sha512-XKv5nnLs6nLF71NgiKJLIZFLkPyIEu'
        'OselLG7ujZnGrRfQK8HpvY+WqKhAJUAdLomwVHErVS4LfxFlPq0/FTAw==","size":10427}',
        # A site's ownership tag, published in its pages.
        '<meta name="google-site-verification" content="Apib7-x98H0j5cPqHWwSMm6dNU4GmODRoqxLiDzdx9I">',
        # A notebook's prose: `basic` before words joined by a hyphen.
        "The most basic three-dimensional plot is a line or collection of scatter plots",
        # A bundle's Fetch call (playwright-core's report.js): the credentials mode.
        "e.crossOrigin===`use-credentials`?t.credentials=`include`:t.credentials=`same-origin`",
        'fetch(url, {credentials: "include"})',
        # Go in cert-manager's tests: a literal's address, a package's constant, a message.
        "\t\t\t\t\t\tc.Spec.PrivateKey = &cmapi.CertificatePrivateKey{",
        "\ttestACMEAuthorizationPending := &acmeapi.Authorization{",
        "\t\t\tprivateKeyEncoding := cmapi.PKCS1",
        '\t\tt.Errorf("SafeDecodePrivateKey: wanted %s but got %v", expPrivateKeyError, err)',
    ],
)
def test_public_lines_of_real_files_stay(line: str) -> None:
    assert redact(line) == line


@pytest.mark.parametrize(
    "text",
    [
        f"api_secret: a4537699e4951748913a3d3e212be34e  # {RANDOM_KEY}",
        f"mariadb-password-{RANDOM_KEY}",
        f'{{"key":"{RANDOM_KEY}"}}',
        f"Authorization: Basic {base64.b64encode(b'deploy:' + RANDOM_KEY.encode()).decode()}",
        '<meta name="google-site-verification" content="AIzaSyD-9tSrke72PouQMnMX-a7eZSW0jkFMBWY">',
        f"API_TOKEN := xK9vLm2.{RANDOM_KEY}",
        f"SECRET_KEY=xK9.{RANDOM_KEY}",
    ],
)
def test_secrets_shaped_like_that_public_material_are_still_redacted(text: str) -> None:
    assert redact(text) != text
