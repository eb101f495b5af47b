"""A corpus of fake secrets, one per kind engram must redact, for the redaction tests.

Every value is made up and assembled at run time (so scanners do not flag this file). Each
entry is (kind, text as it would appear, the secret part that must never be stored).
"""

from __future__ import annotations

import base64
import json
import random
import string

_rng = random.Random(20261122)


def _rand(alphabet: str, n: int) -> str:
    return "".join(_rng.choice(alphabet) for _ in range(n))


ALNUM = string.ascii_letters + string.digits
UPPER_NUM = string.ascii_uppercase + string.digits
HEX = "0123456789abcdef"
B64 = ALNUM + "+/"
URLSAFE = ALNUM + "_-"


def _jwt() -> str:
    def part(obj: dict[str, object]) -> str:
        return base64.urlsafe_b64encode(json.dumps(obj).encode()).decode().rstrip("=")

    return (
        part({"alg": "HS256", "typ": "JWT"})
        + "."
        + part({"sub": "1234567890", "name": "x"})
        + "."
        + _rand(URLSAFE, 43)
    )


def corpus() -> list[tuple[str, str, str]]:
    aws_id = "AKIA" + _rand(UPPER_NUM, 16)
    aws_secret = _rand(B64, 40)
    pem_body = "\n".join(_rand(B64, 64) for _ in range(6))
    pem = (
        "-----BEGIN RSA " + "PRIVATE KEY-----\n" + pem_body + "\n-----END RSA " + "PRIVATE KEY-----"
    )
    ssh_body = "\n".join(_rand(B64, 70) for _ in range(4))
    ssh = (
        "-----BEGIN OPENSSH "
        + "PRIVATE KEY-----\n"
        + ssh_body
        + "\n-----END OPENSSH "
        + "PRIVATE KEY-----"
    )
    entries = [
        ("aws-access-key", f"export AWS_ACCESS_KEY_ID={aws_id}", aws_id),
        ("aws-secret-key", f"aws_secret_access_key = {aws_secret}", aws_secret),
        ("github-pat", "token is " + "ghp_" + (gh := _rand(ALNUM, 36)), gh),
        ("github-fine-grained", "github_pat_" + (ghf := _rand(ALNUM + "_", 70)), ghf),
        ("gitlab-token", "glpat-" + (gl := _rand(URLSAFE, 20)), gl),
        (
            "slack-bot-token",
            "SLACK=" + "xoxb-" + (sl := _rand(string.digits, 12) + "-" + _rand(ALNUM, 24)),
            sl,
        ),
        (
            "slack-webhook",
            "post to https://hooks.slack.com/services/T"
            + (sw := _rand(UPPER_NUM, 8) + "/B" + _rand(UPPER_NUM, 8) + "/" + _rand(ALNUM, 24)),
            sw,
        ),
        ("stripe-live-key", "stripe key " + "sk_live_" + (st := _rand(ALNUM, 24)), st),
        ("google-api-key", "maps key AIza" + (gk := _rand(URLSAFE, 35)), gk),
        ("google-oauth-token", "Got ya29." + (go := _rand(URLSAFE, 60)), go),
        ("openai-key", "OPENAI_API_KEY=sk-proj-" + (oa := _rand(URLSAFE, 48)), oa),
        ("anthropic-key", "use sk-ant-api03-" + (an := _rand(URLSAFE, 80)), an),
        ("rsa-private-key", "key file:\n" + pem, pem_body.splitlines()[2]),
        ("openssh-private-key", ssh, ssh_body.splitlines()[1]),
        ("jwt", "Authorization cookie " + (jwt := _jwt()), jwt.split(".")[2]),
        (
            "url-password",
            "DATABASE_URL=postgres://admin:"
            + (pw := "Tr0ub4dor" + _rand(ALNUM, 8))
            + "@db.internal:5432/app",
            pw,
        ),
        ("bearer-header", "curl -H 'Authorization: Bearer " + (bt := _rand(URLSAFE, 40)) + "'", bt),
        (
            "password-assignment",
            'config: password = "' + (pa := "hunter" + _rand(string.digits, 4) + "!x") + '"',
            pa,
        ),
        ("high-entropy-secret-name", "client_secret: " + (cs := _rand(ALNUM, 32)), cs),
        ("high-entropy-weak-name", "signing_key=" + (sk := _rand(ALNUM + "+/", 40)), sk),
        ("huggingface-token", "HF hf_" + (hf := _rand(string.ascii_letters, 34)), hf),
        ("npm-token", "//registry.npmjs.org/:_authToken=npm_" + (npm := _rand(ALNUM, 36)), npm),
        ("pypi-token", "password = pypi-AgEIcHlwaS5vcmc" + (pypi := _rand(URLSAFE, 60)), pypi),
        ("sendgrid-key", "SG." + (sg := _rand(URLSAFE, 22) + "." + _rand(URLSAFE, 43)), sg),
        ("digitalocean-token", "dop_v1_" + (do := _rand(HEX, 64)), do),
        (
            "azure-storage-key",
            "DefaultEndpointsProtocol=https;AccountName=x;AccountKey="
            + (az := _rand(B64, 86) + "==")
            + ";",
            az[:40],
        ),
        ("json-secret-field", json.dumps({"api_token": (jt := _rand(ALNUM, 12))}), jt),
    ]
    return entries
