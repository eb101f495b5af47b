"""Build tests/core/public_secret_corpus.jsonl from public secret scanners' rule examples.

Run with checkouts of the sources (any Python with PyYAML and `regex`; not part of engram):

    python scripts/build_public_secret_corpus.py \
        --kingfisher ~/src/kingfisher --noseyparker ~/src/noseyparker --gitleaks ~/src/gitleaks

Sources (each line of the output names its source file and commit):
- mongodb/kingfisher `data/rules/*.yml` (Apache-2.0): `examples`, `negative_examples`;
- praetorian-inc/noseyparker `crates/noseyparker/data/default/builtin/rules/*.yml`
  (Apache-2.0): `examples`, `negative_examples`;
- gitleaks/gitleaks `cmd/generate/config/rules/generic.go` (MIT): the generic rule's
  false-positive vectors;
- cases written for engram (its own values, generated here from public formats): secrets
  given as command arguments and in config files, and ordinary strings that only look secret.

A secret is the part of an example the rule captures (its first capturing group, else the
whole match), found by running the rule's own pattern. An example that is only the token is
put in a context an agent shows it in (a prompt, a command, a log line, a JSON file), chosen
without a secret-looking word, so that only its format can give it away.

The kind of a line is its provider (the rule file's name) or, for engram's own cases, the
context. A third of the kinds is held out (`"split": "holdout"`): chosen by a hash of the kind,
fixed before any detector change, and reported separately.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import random
import re
import string
import subprocess
from pathlib import Path

import regex
import yaml

OUT = Path(__file__).resolve().parents[1] / "tests" / "core" / "public_secret_corpus.jsonl"


def split_of(kind: str) -> str:
    return "holdout" if int(hashlib.sha256(kind.encode()).hexdigest(), 16) % 3 == 0 else "tune"


def commit_of(repo: Path) -> str:
    return (
        subprocess.run(
            ["git", "-C", str(repo), "rev-parse", "HEAD"], capture_output=True, text=True
        ).stdout.strip()
        or "unknown"
    )


# Contexts for an example that is the bare token: no word in them names a secret.
BARE_CONTEXTS = (
    ("prompt", "the deploy still fails with {v}, can you see why?"),
    ("command", "./scripts/deploy.sh --region eu-west-1 {v}"),
    ("log", "2026-03-02T10:14:07Z INFO worker started with {v} (pid 4121)"),
    ("json", '{{"service": "billing", "value": "{v}", "retries": 3}}'),
    ("tool-output", "$ cat config/local.txt\n{v}\n"),
)

# Negative examples that are in fact secrets of another form (a real-looking password, a
# token of a different version, a key of another provider): not ordinary, left out.
NOT_ORDINARY = (
    "ded7db27a4558e2ea9bbf0bf36ae0e8521618f366c",
    "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaend",
    "OOzkR1+hF+1ABCsIFDJMEUtqmtnZ1234567890",
    "6RtqHqPc66Y6DYbkydbrrFJTYnRoA7r40ts7LWS2SkINSFsRABxhJQQJ99BFACAAAAALGcqjAAASAZDO3eq",
    "zpczok4kqgnw5prpfy3ehiylbqvgbjfkdiqkejsxqamy7qbkep7q",
    "KTJlDq2AGGGlqG8riKdT7p980AW8RlU5",
    "ABCDDq2AGxGlqG",
    "FHxhQGh77_JAHHIYpZ818UQ0aYjXIdMIxxgeR",
    "fbconnectkey",
    "5pX8Q~MmTI8OMBJFVqMlFR4DE3Spz6Qm",
    "abcdefg12346+FJQCK",
    "H7IKC85R#@4$",
    "open_sesame",
    'password = "123"',
    "super$ecret",
    'Buffer("feast")',
    "#gets0m3",
    "ClearTextPassword",
    "Prestigitariu$",
    "d151c7bc86d545dafe2c1de75e3a174623230a2a",
    "clientID: \\\\'2e62dee7b9895e3eede6",
    "hvs.JGbZZaCkOSgsZ56uhGlTK2zyC1j2mwhy0VLp4",
    "hvb.JGbZZaCkOSgsZ56uhGlTK2zyC1j2mwhy0VLp4",
    "hvr.JGbZZaCkOSgsZ56uhGlTK2zyC1j2mwhy0VLp4",
    "b.AAAAAQJgxDgqsGNorpoOR8hPZ5SU",
    "Z4bTMtngfLeQ18AqVoBBkUAOD1",
    "AQAAUPJ-iQc",
    "BwCASYSBiQc",
    "CQCAbaKBiQc",
    "outlook.office.com/webhook/",
    "D1fficultP%40ssw0rd",
    "NRAL",
    "px-api-",
    "px-dep-",
    "007e65c7-635d-4d54-8294-f360cb8e2e3f",
    "busybox@",
    "00QCjAl4MlV-WPXM-ABCDEFGHIJKL-0HmjFx-vbGu",
    "user:secret@",
    "password=secret",
    "xoxp-",
    "xoxb-",
    "126031192_IgvUabrXbWSihj2ENnA59G1F8",
    "MjuHWoGbzYmJv3ZuHaBvSENfyevu00NQuBc40VM",
    'apiKey:"6fe4476ee5a1832882e326b506d14126"',
    "csrf-token=",
    "newPlausibleSecret",
    "backend_password",
)


# What a rule finds that is not itself a secret (its name says so).
NOT_A_SECRET = regex.compile(
    r"(?i)\b(?:client id|account id|app(?:lication)? id|org(?:anization)? id|tenant id|"
    r"project id|user id|bucket|resource name|domain|username|user name|url|hostname|host|"
    r"recipient|endpoint|email|region|subdomain|public|publishable|site key|identifier)\b"
)
# Example values that stand for a password in documentation: `Password=myPassword`,
# `-p PASSWORD`, `%nothing%`, `smtp_password`.
PLACEHOLDER = regex.compile(
    r"(?i)^(?:[a-z_]*(?:password|passwd|secret|username)[a-z_]*|%[a-z_]+%|\$[a-z_]+|"
    r"x{4,}|\*{4,}|#{4,}|changeme|example)$"
)


HOST = regex.compile(
    r"(?i)^(?:[a-z][a-z0-9+.\-]*://\S*|machine .*|[a-z0-9\-.]+\.(?:com|net|org|io|cloud|local)|[a-z0-9\-]+\.)$"
)


def secret_of(match: regex.Match) -> str:
    """The part of a match that is the secret: a rule with several groups captures a user, a
    host or an id beside it (`mongodb://USER:PASSWORD@HOST`); the secret is the last group
    that is not a host, the whole match when the rule has no group."""
    text = match.string
    # `user:PASSWORD@host`: the group between a colon and an at sign is the password.
    for index, group in enumerate(match.groups(), start=1):
        start, end = match.span(index)
        if group and text[start - 1 : start] == ":" and text[end : end + 1] == "@":
            return group
    groups = [g for g in match.groups() if g and not HOST.match(g)]
    if not groups:
        return match.group(0)
    long_enough = [g for g in groups if len(g) >= 6]
    return long_enough[-1] if long_enough else max(groups, key=len)


def rule_examples(root: Path, repo: str, rules_dir: str) -> tuple[list[dict], list[dict]]:
    secrets, ordinary = [], []
    commit = commit_of(root)
    for path in sorted((root / rules_dir).glob("*.yml")):
        kind = path.stem
        source = f"{repo}@{commit[:12]}:{rules_dir}/{path.name}"
        for rule in yaml.safe_load(path.read_text()).get("rules", []):
            if rule.get("visible") is False:
                continue  # a helper rule (an id, a host) that only qualifies another
            if "identifier" in (rule.get("categories") or []) or NOT_A_SECRET.search(rule["name"]):
                continue  # ids, names, hosts, buckets, ARNs, public keys: not secrets
            pattern = regex.compile(rule["pattern"])
            for example in rule.get("examples") or []:
                match = pattern.search(example)
                if match is None:
                    continue
                secret = secret_of(match)
                if len(secret) < 6 or len(set(secret)) < 4 or PLACEHOLDER.match(secret):
                    continue  # a placeholder, not a value
                text, context = example, "as in the rule"
                if len(example.strip().strip("'\"`")) <= len(secret) + 2:
                    index = int(hashlib.sha256(example.encode()).hexdigest(), 16)
                    context, template = BARE_CONTEXTS[index % len(BARE_CONTEXTS)]
                    text = template.format(v=secret)
                secrets.append(
                    {
                        "kind": kind,
                        "rule": rule["id"],
                        "source": source,
                        "context": context,
                        "text": text,
                        "secret": secret,
                    }
                )
            for example in rule.get("negative_examples") or []:
                if any(marker in example for marker in NOT_ORDINARY):
                    continue
                ordinary.append(
                    {"kind": kind, "rule": rule["id"], "source": source, "text": example}
                )
    return secrets, ordinary


def gitleaks_generic_fps(root: Path) -> list[dict]:
    path = "cmd/generate/config/rules/generic.go"
    source = f"gitleaks/gitleaks@{commit_of(root)[:12]}:{path}"
    code = (root / path).read_text()
    block = code[code.index("fps := []string{") :]
    block = block[: block.index("\n\t}\n")]
    out = []
    for match in re.finditer(r"`([^`]*)`(.?)", block):
        line_start = block.rfind("\n", 0, match.start()) + 1
        text = match.group(1)
        if block[line_start : match.start()].strip() or match.group(2) != ",":
            continue  # commented out, or joined to generated text
        if any(marker in text for marker in NOT_ORDINARY):
            continue
        out.append(
            {"kind": "generic", "rule": "gitleaks:generic-api-key", "source": source, "text": text}
        )
    return out


# ---- engram's own cases: values generated here from public formats ----------------------------

rng = random.Random(20261127)
ALNUM = string.ascii_letters + string.digits


def rand(alphabet: str, n: int) -> str:
    while True:
        value = "".join(rng.choice(alphabet) for _ in range(n))
        if any(c.isdigit() for c in value) or not any(c.isdigit() for c in alphabet):
            return value


def password() -> str:
    # What people choose: words, digits and punctuation people type, incl. ^ $ and backtick.
    word = rng.choice(["Summer", "winter", "Hunter", "dragon", "Kiwi", "Falcon", "mango"])
    return (
        word
        + rng.choice(["^", "$", "!", "#", "`", "@", "%"])
        + rand(string.digits, 4)
        + rng.choice(["x", "Q", "$", "^"])
    )


OWN = "engram (own cases, values generated for this corpus)"


def own_cases() -> tuple[list[dict], list[dict]]:
    secrets: list[dict] = []

    def add(kind: str, context: str, text: str, secret: str) -> None:
        assert secret in text, kind
        secrets.append(
            {
                "kind": kind,
                "rule": kind,
                "source": OWN,
                "context": context,
                "text": text,
                "secret": secret,
            }
        )

    v = password()
    add("cmd-docker-login", "command", f"docker login -u deploy -p {v} registry.example.com", v)
    v = password()
    add("cmd-docker-login", "command", f"docker login --username ci --password '{v}' ghcr.io", v)
    v = rand(ALNUM + "/+", 40)
    add("cmd-aws-configure", "command", f"aws configure set aws_secret_access_key {v}", v)
    v = rand(ALNUM + "/+", 40)
    add(
        "cmd-aws-configure",
        "command",
        f"aws configure set default.aws_secret_access_key {v} --profile prod",
        v,
    )
    v = password()
    add("cmd-psexec", "command", f"PsExec.exe \\\\fileserver01 -u CORP\\admin -p {v} cmd.exe", v)
    v = password()
    add("cmd-psexec", "command", f'psexec \\\\10.0.4.12 -u Administrator -p "{v}" -i ipconfig', v)
    v = password()
    add(
        "cmd-powercli",
        "command",
        f"Connect-VIServer -Server vc01.corp.local -User administrator@vsphere.local -Password '{v}'",
        v,
    )
    v = password()
    add("cmd-powercli", "command", f"Connect-VIServer vcsa.lab -User root -Password {v}", v)
    v = password()
    add(
        "dotnet-networkcredential",
        "code",
        f'var cred = new NetworkCredential("svc_backup", "{v}", "CORP");',
        v,
    )
    v = password()
    add(
        "dotnet-networkcredential",
        "code",
        f'client.Credentials = new System.Net.NetworkCredential("deploy", "{v}");',
        v,
    )
    v = rand(ALNUM, 16)
    add(
        "netrc",
        "file",
        f"$ cat ~/.netrc\nmachine api.heroku.com\n  login me@example.com\n  password {v}\n",
        v,
    )
    v = password()
    add("netrc", "file", f"machine ftp.example.org login anonymous password {v}", v)
    v = rand(ALNUM, 36)
    add("npmrc", "file", f"//registry.example.com/npm/:_authToken={v}\nalways-auth=true", v)
    v = rand(ALNUM + "+/", 32) + "=="
    add("npmrc", "file", f"//nexus.corp.local/repository/npm/:_auth={v}", v)
    v = password()
    add(
        "pypirc",
        "file",
        f"[distutils]\nindex-servers = internal\n\n[internal]\nrepository = https://pypi.corp.local/\nusername = deploy\npassword = {v}\n",
        v,
    )
    v = rand(ALNUM + "+/", 28) + "="
    add(
        "docker-config-json",
        "file",
        f'{{\n  "auths": {{\n    "registry.corp.local": {{\n      "auth": "{v}"\n    }}\n  }}\n}}',
        v,
    )
    v = password()
    add(
        "dotnet-appsettings",
        "file",
        f'<appSettings>\n  <add key="SmtpPassword" value="{v}" />\n</appSettings>',
        v,
    )
    v = rand(ALNUM, 32)
    add("dotnet-appsettings", "file", f'<add key="StripeApiKey" value="{v}"/>', v)
    v = password()
    add(
        "csharp-dictionary",
        "code",
        f'var config = new Dictionary<string, string> {{ {{ "DbPassword", "{v}" }}, {{ "Host", "db01" }} }};',
        v,
    )
    v = rand(ALNUM + "+/", 340) + "="
    add("travis-secure", "file", f'env:\n  global:\n    - secure: "{v}"\n', v)
    v = password()
    add("yaml-password", "file", f"database:\n  host: db.internal\n  password: {v}\n", v)
    v = password()
    add("toml-password", "file", f'[database]\nuser = "app"\npassword = "{v}"\n', v)
    v = password()
    add("env-file", "file", f"DB_HOST=db\nDB_PASSWORD={v}\n", v)
    v = rand(string.digits, 12)
    add("all-digit-api-key", "file", f"WEATHER_API_KEY={v}", v)
    v = password() + rand(ALNUM, 6)
    add(
        "url-password-with-token",
        "command",
        f"git remote add origin https://deploy:{v}ghp_{rand(ALNUM, 36)}@github.com/acme/app.git",
        v,
    )
    v = rand(ALNUM, 10) + "AKIA" + rand(string.ascii_uppercase + string.digits, 16) + rand(ALNUM, 6)
    add(
        "url-password-with-token",
        "command",
        f"pip install --index-url https://ci:{v}@pypi.corp.local/simple app",
        v,
    )
    v = rand(ALNUM + "-_", 43)
    add(
        "connection-string",
        "file",
        f"Server=tcp:sql01.database.windows.net,1433;Database=app;User ID=app;Password={v};Encrypt=True;",
        v,
    )
    v = password()
    add("connection-string", "file", f"Host=db;Port=5432;Username=app;Pwd={v};", v)
    v = rand(ALNUM, 40)
    add(
        "split-secret",
        "tool-output",
        f"Your new token (copy it now):\n  {v[:20]}\n  {v[20:]}\n",
        v[20:],
    )
    v = rand(string.hexdigits.lower()[:16], 40)
    add("split-secret", "tool-output", f"export GITHUB_TOKEN=\\\n  ghp_{v[:36]}", v[:36])

    ordinary = [
        "passwordField.sendKeys(username)",
        "const resetPasswordRoute = '/account/reset-password';",
        "GET /api/v1/users/:id/password-reset 204",
        "  .password-strength-meter > .bar { width: 40%; }",
        "document.querySelector('#api-key-input').value = ''",
        "See https://docs.github.com/en/authentication/keeping-your-account-and-data-secure/creating-a-personal-access-token",
        "https://cloud.google.com/docs/authentication/api-keys#creating_an_api_key",
        "arn:aws:iam::aws:policy/IAMUserChangePassword",
        "arn:aws:secretsmanager:us-east-1:123456789012:secret:prod/db/password-a1B2c3",
        "arn:aws:kms:eu-west-1:111122223333:key/1234abcd-12ab-34cd-56ef-1234567890ab",
        "redis-cli GET session:token:user:4821",
        "HGETALL cache:api_key:tenant-17",
        'hashed_secret": "e5b2e0b6e1c6f0c7a1c3f3d1b1a0f6c9e7d5a4b3",',
        '"hashed_secret": "513e0a36963ae1e8431c041b744679ee578b7c44",\n        "is_verified": false,',
        "cache_key = 9b74c9897bac770ffc029102a200c5de",
        "# sk-learn is the usual misspelling of scikit-learn",
        "from sklearn.model_selection import train_test_split  # sk-learn",
        "commit 8f2d6a1c4b7e9d0f3a5c6b8e1d2f4a7c9b0e3d5f",
        "Merge: 4b825dc 9c1e2a7",
        "request_id=3f1c9a2e-7b4d-4e8f-9a6c-2d5b8e1f0a7c",
        "sha256:4f53cda18c2baa0c0354bb5f9a3ecbe5ed12ab4d8e11ba873c2f11161202b945",
        "Digest: sha256:a3ed95caeb02ffe68cdd9fd84406680ae93d633cb16422d00e8a7c22955b46d4",
        'etag: W/"5e-1m8xKxYHbXl5dP0y8tEdz6QbR2A"',
        "max_password_length = 128",
        "password_reset_token_expiry_hours: 24",
        "if (!apiKeyIsValid(req.headers['x-api-key'])) return res.status(401).end();",
        "def rotate_secret_key(settings): ...",
        "class TokenBucketRateLimiter:",
        "  --auth-type=oauth2 --token-endpoint=https://login.example.com/oauth2/token",
        "Add the key to your keychain: security add-generic-password -a $USER -s engram",
        "kubectl create secret generic db-creds --from-env-file=.env.production",
        "ssh-add ~/.ssh/id_ed25519",
        "gpg --list-secret-keys --keyid-format=long",
        "Key fingerprint = 3AA5 C343 7151 1D3A 0E3C  2F5E 4C7D 8A1B 2E9F 6D4C",
        '"integrity": "sha1-2V4aZ2GBnPKK6Q3ChjD0dHtR5Jg="',
        "uuid: 6ba7b810-9dad-11d1-80b4-00c04fd430c8",
        "token_type_hint=refresh_token",
        "grant_type=client_credentials&scope=read",
        "The password must contain at least 12 characters.",
        "Enter passphrase for key '/home/dev/.ssh/id_ed25519':",
        'Error: secret "db-password" not found in namespace "prod"',
        "selector: 'input[type=password]'",
        "MIME-Version: 1.0\nContent-Type: text/plain; charset=utf-8",
        "api_version: 2023-10-16",
        "tokenizer.json: 100%|██████████| 2.11M/2.11M [00:00<00:00, 9.8MB/s]",
        "pytest -k test_secret_key_rotation -x",
        "The secret key is read from SECRET_KEY in the environment.",
    ]
    # A thinking block's signature, as Claude Code transcripts carry it: public by design.
    signature = "EqQBCkYIBxgCKkA" + rand(ALNUM + "+/", 300) + "GAE="
    ordinary.append(
        f'{{"type": "thinking", "thinking": "Let me check the config.", "signature": "{signature}"}}'
    )
    ordinary.append(f'"signature":"Ev8BCkYICBgC{rand(ALNUM + "+/", 220)}"')
    return secrets, [
        {"kind": "engram-ordinary", "rule": "", "source": OWN, "text": t} for t in ordinary
    ]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--kingfisher", type=Path, required=True)
    parser.add_argument("--noseyparker", type=Path, required=True)
    parser.add_argument("--gitleaks", type=Path, required=True)
    args = parser.parse_args()
    kf_s, kf_o = rule_examples(args.kingfisher, "mongodb/kingfisher", "data/rules")
    np_s, np_o = rule_examples(
        args.noseyparker,
        "praetorian-inc/noseyparker",
        "crates/noseyparker/data/default/builtin/rules",
    )
    own_s, own_o = own_cases()
    gl_o = gitleaks_generic_fps(args.gitleaks)
    seen: set[str] = set()
    lines = []
    for row in np_s + kf_s + own_s:
        if row["text"] in seen:
            continue
        seen.add(row["text"])
        lines.append({"type": "secret", "split": split_of(row["kind"]), **row})
    for row in np_o + kf_o + gl_o + own_o:
        if row["text"] in seen:
            continue
        seen.add(row["text"])
        # Each ordinary string is a kind of its own: held out by its text.
        lines.append({"type": "ordinary", "split": split_of(row["text"]), **row})
    OUT.write_text("".join(json.dumps(line, ensure_ascii=False) + "\n" for line in lines))
    n_s = sum(1 for line in lines if line["type"] == "secret")
    kinds = {line["kind"] for line in lines if line["type"] == "secret"}
    held = {k for k in kinds if split_of(k) == "holdout"}
    print(
        f"{n_s} secrets of {len(kinds)} kinds ({len(held)} kinds held out), "
        f"{len(lines) - n_s} ordinary strings -> {OUT}"
    )


if __name__ == "__main__":
    main()
