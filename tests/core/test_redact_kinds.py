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

import pytest

from memory_core.redact import redact
from tests.core.redaction_state import redaction_computed_afresh  # noqa: F401

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


# Passwords given to commands, where each tool's documentation (man page or --help) puts them.
# What a user sees: the password gone, the command still readable.
PW = "Zq7!vR%2mLx"


@pytest.mark.parametrize(
    ("command", "expected"),
    [
        (
            f'ldapsearch -x -H ldap://dc01 -D "cn=admin" -w {PW} -b dc=corp',
            'ldapsearch -x -H ldap://dc01 -D "cn=admin" -w [REDACTED:password] -b dc=corp',
        ),
        (
            f"ldappasswd -x -D cn=me -s {PW} uid=bob",
            "ldappasswd -x -D cn=me -s [REDACTED:password] uid=bob",
        ),
        (f"redis-cli -h cache -a '{PW}' INFO", "redis-cli -h cache -a '[REDACTED:password]' INFO"),
        (
            f"sqlcmd -S sql01 -U sa -P {PW} -Q 'SELECT 1'",
            "sqlcmd -S sql01 -U sa -P [REDACTED:password] -Q 'SELECT 1'",
        ),
        (
            f"ipmitool -I lanplus -H bmc -U root -P {PW} power status",
            "ipmitool -I lanplus -H bmc -U root -P [REDACTED:password] power status",
        ),
        (f"zip -P {PW} out.zip a.txt", "zip -P [REDACTED:password] out.zip a.txt"),
        (f"plink -ssh admin@host -pw {PW}", "plink -ssh admin@host -pw [REDACTED:password]"),
        (
            f"mongosh --host db -u admin -p {PW}",
            "mongosh --host db -u admin -p [REDACTED:password]",
        ),
        (
            f"az login -u me@contoso.com -p '{PW}'",
            "az login -u me@contoso.com -p '[REDACTED:password]'",
        ),
        (
            f"cf login -a api.sys -u admin -p {PW}",
            "cf login -a api.sys -u admin -p [REDACTED:password]",
        ),
        (f"7z a -p{PW} backup.7z dir", "7z a -p[REDACTED:password] backup.7z dir"),
        (f"xfreerdp /v:host /u:admin /p:{PW}", "xfreerdp /v:host /u:admin /p:[REDACTED:password]"),
        (
            f"cmdkey /add:srv /user:me /pass:{PW}",
            "cmdkey /add:srv /user:me /pass:[REDACTED:password]",
        ),
        (f"openssl enc -aes256 -k {PW} -in a", "openssl enc -aes256 -k [REDACTED:password] -in a"),
        (
            f"smbclient //fs01/share -U deploy%{PW}",
            "smbclient //fs01/share -U deploy%[REDACTED:password]",
        ),
        (
            f"lftp -u deploy,{PW} ftp.example.com",
            "lftp -u deploy,[REDACTED:password] ftp.example.com",
        ),
        (
            f"java -jar jenkins-cli.jar -auth admin:{PW} who-am-i",
            "java -jar jenkins-cli.jar -auth admin:[REDACTED:password] who-am-i",
        ),
        (f"net user svc_backup {PW} /add", "net user svc_backup [REDACTED:password] /add"),
        (
            f"net use \\\\srv\\share {PW} /user:corp\\me",
            "net use \\\\srv\\share [REDACTED:password] /user:corp\\me",
        ),
        (
            f"rabbitmqctl add_user deploy '{PW}'",
            "rabbitmqctl add_user deploy '[REDACTED:password]'",
        ),
        (
            f"htpasswd -bc /etc/nginx/.htpasswd admin {PW}",
            "htpasswd -bc /etc/nginx/.htpasswd admin [REDACTED:password]",
        ),
        (f"htpasswd -nbB admin {PW}", "htpasswd -nbB admin [REDACTED:password]"),
        (
            f"mysqladmin -u root password '{PW}'",
            "mysqladmin -u root password '[REDACTED:password]'",
        ),
        (
            f"mysqldump -uroot -p'{PW}' --all-databases",
            "mysqldump -uroot -p[REDACTED:password] --all-databases",
        ),
        ("vault login s.Xk29aLmQp0rT7vWz", "vault login [REDACTED:password]"),
        (f"sqlplus scott/{PW}@orcl", "sqlplus scott/[REDACTED:password]@orcl"),
        (
            f"echo '{PW}' | docker login -u me --password-stdin",
            "echo '[REDACTED:password]' | docker login -u me --password-stdin",
        ),
        (
            f"echo {PW} | gh auth login --with-token",
            "echo [REDACTED:password] | gh auth login --with-token",
        ),
        (f"echo 'bob:{PW}' | chpasswd", "echo '[REDACTED:password]' | chpasswd"),
        (
            f'$pw = ConvertTo-SecureString "{PW}" -AsPlainText -Force',
            '$pw = ConvertTo-SecureString "[REDACTED:password]" -AsPlainText -Force',
        ),
        (f"REDISCLI_AUTH={PW} redis-cli", "REDISCLI_AUTH=[REDACTED:password] redis-cli"),
        (
            f"keytool -importkeystore -srcstorepass {PW} -deststorepass {PW}",
            "keytool -importkeystore -srcstorepass [REDACTED:secret] -deststorepass [REDACTED:secret]",
        ),
        (
            f"openssl pkcs12 -export -passout pass:{PW} -out a.p12",
            "openssl pkcs12 -export -passout [REDACTED:secret] -out a.p12",
        ),
        (
            f"wget --http-password={PW} https://x",
            "wget --http-password=[REDACTED:secret] https://x",
        ),
        (f"curl --proxy-user me:{PW} https://x", "curl --proxy-user [REDACTED:password] https://x"),
        (f"curl --tlspassword {PW} https://x", "curl --tlspassword [REDACTED:secret] https://x"),
        (f"deploy --password \\\n    {PW}", "deploy --password \\\n    [REDACTED:secret]"),
        (
            f"url=jdbc:mysql://db/app?user=me&userpass={PW}",
            "url=jdbc:mysql://db/app?user=me&userpass=[REDACTED:password]",
        ),
        (
            f"my sudo password is {PW} if it asks",
            "my sudo password is [REDACTED:password] if it asks",
        ),
    ],
)
def test_a_password_given_to_a_command_is_hidden_where_its_documentation_puts_it(
    command: str, expected: str
) -> None:
    assert redact(command) == expected


@pytest.mark.parametrize(
    "text",
    [
        # The same letters mean something else for other tools, or no password is given.
        "ssh -p 2222 deploy@host",
        "redis-cli -p 6379 -h cache PING",
        "sqlcmd -S sql01 -E -p -Q 'SELECT 1'",
        "ldapsearch -x -s sub -b dc=corp '(uid=bob)'",
        "zip -r out.zip src",
        "net user bob /add /domain",
        "net user",
        "vault login -method=github",
        "echo $GH_TOKEN | gh auth login --with-token",
        'echo "$PASS" | docker login -u me --password-stdin',
        "mysql --no-password -u root",
        "deploy --password-file /run/secrets/db",
        "openssl pkcs12 -export -passout env:P12_PASS -out a.p12",
        "the password is stored in vault",
        "Your password is Required",
        "  --token\n      Use the given token",
        "htpasswd -c /etc/nginx/.htpasswd admin",
        "deploy --ask-password db.example.com",
        "openssl req -new -passin arg -out req.pem",
        "7z x archive.7z -o/tmp/out",
    ],
)
def test_commands_without_a_password_stay_as_they_are(text: str) -> None:
    assert redact(text) == text


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        # The name in another field of the same entry.
        (
            '{"key": "db_password", "value": "Tr0ub4dor3"}',
            '{"key": "db_password", "value": "[REDACTED:secret]"}',
        ),
        (
            '{"name": "API_TOKEN", "value": "x9Kq2mP4"}',
            '{"name": "API_TOKEN", "value": "[REDACTED:secret]"}',
        ),
        (
            "<key>smtp.password</key>\n<value>Tr0ub4dor3</value>",
            "<key>smtp.password</key>\n<value>[REDACTED:secret]</value>",
        ),
        ("- key: password\n  value: Tr0ub4dor3", "- key: password\n  value: [REDACTED:secret]"),
        # The name on the line before: a list under a password's name.
        (
            'passwords:\n  - Tr0ub4dor3\n  - "hunter22"\n',
            'passwords:\n  - [REDACTED:secret]\n  - "[REDACTED:secret]"\n',
        ),
        (
            '"admin_passwords": [\n  "Tr0ub4dor3",\n  "hunter22"\n]',
            '"admin_passwords": [\n  "[REDACTED:secret]",\n  "[REDACTED:secret]"\n]',
        ),
        # A value split into string pieces under a secret's name.
        (
            'API_KEY = (\n    "FnQS2M+AB4YLg4xF"\n    "NA4dG2SMjpRhF/rH"\n)',
            'API_KEY = (\n    "[REDACTED:secret]"\n    "[REDACTED:secret]"\n)',
        ),
        # Other syntaxes of a name and its value.
        ("$config['db_password'] = 'Tr0ub4dor3';", "$config['db_password'] = '[REDACTED:secret]';"),
        ('define("DB_PASSWORD", "Tr0ub4dor3");', 'define("DB_PASSWORD", "[REDACTED:secret]");'),
        ("ENV DRONE_TOKEN Tr0ub4dor3x", "ENV DRONE_TOKEN [REDACTED:secret]"),
        ("admin:$apr1$l0cpzs5a$vQK3lmgMGvcXcRP8bxyz12", "admin:[REDACTED:password-hash]"),
        (
            "<master>{vki9JTFmEYlTlCZixjz0jr5QxEXlZfWg}</master>",
            "<master>[REDACTED:password]</master>",
        ),
    ],
)
def test_a_secret_named_in_another_field_or_on_the_line_before_is_hidden(
    text: str, expected: str
) -> None:
    assert redact(text) == expected


@pytest.mark.parametrize(
    "text",
    [
        '{"key": "username", "value": "deploy"}',
        '{"name": "DB_PASSWORD", "value": "${DB_PASSWORD}"}',
        "secrets:\n  - db_root_password\n  - server-certificate\n",
        "tokens:\n  - lexer\n  - parser\n",
        "password_rules:\n  min_length: 12\n",
        "MACOS_P12_FILE=$SECRETS_DIR/cert.p12",
        'greeting = (\n    "Hello there, "\n    "how are you"\n)',
    ],
)
def test_names_and_values_that_are_not_secrets_stay(text: str) -> None:
    assert redact(text) == text


def test_a_key_wrapped_at_a_lines_width_is_joined_but_the_next_line_of_code_is_not() -> None:
    # The first line ends with a whole token by itself (`sk-ant-` and 23 characters).
    head = "INFO worker: configured the upstream connection with key sk-ant-api03-4zbE9YjbDdah0fek"
    # The next line reads as generated characters: the rest of the key.
    assert redact(f"{head}\nnmHmFOpfgMZGW1KNP3Z1Qwh4 ok") == (
        "INFO worker: configured the upstream connection with key [REDACTED:anthropic-key]"
        "\n[REDACTED:anthropic-key] ok"
    )
    # The next line is code: it stays.
    assert redact(f"{head}\ndef handler(): pass") == (
        "INFO worker: configured the upstream connection with key [REDACTED:anthropic-key]"
        "\ndef handler(): pass"
    )


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        # 70 % of one character is a placeholder even under a secret's name.
        ('password: "aaaaaaa1b2"', 'password: "aaaaaaa1b2"'),
        # The second half of a key printed in two halves may be as short as four characters.
        (
            "Your new key (copy it now):\n  k7Qm2xW9pL4vT8nR3bY6\n  hZcD\n",
            "Your new key (copy it now):\n  [REDACTED:secret]\n  [REDACTED:secret]\n",
        ),
        # A quoted value with a bracket in a name/value pair is a literal, not a call.
        (
            '{"key": "db_password", "value": "Tr0ub(4dor"}',
            '{"key": "db_password", "value": "[REDACTED:secret]"}',
        ),
        # Pieces under a weak name (`key`) are hidden when, joined, they look random.
        (
            'signing_key = (\n    "k7Qm2xW9pL4vT8nR"\n    "3bY6hZcDfGjKsMqV"\n)',
            'signing_key = (\n    "[REDACTED:secret]"\n    "[REDACTED:secret]"\n)',
        ),
        # An unquoted name with spaces around `=` is a variable; a value before `@host` is an
        # address's user, not a key after a provider's name.
        ("self.token = next_char", "self.token = next_char"),
        (
            "adafruit k7qm2xw9pl4vt8nr3by6hzcd@example.com",
            "adafruit k7qm2xw9pl4vt8nr3by6hzcd@example.com",
        ),
    ],
)
def test_the_edges_of_what_counts_as_a_secret(text: str, expected: str) -> None:
    assert redact(text) == expected


# Corpus D's families (2026-11-27, evening), written from each tool's documentation: the
# synopsis of `cqlsh --help`, mosquitto_pub(1), ssh-keygen(1), `dotnet nuget add source`,
# skopeo(1) `--creds`, `poetry config`, htpasswd(1), PostgreSQL's password file, wpa_supplicant.conf(5),
# the JDBC, PDO, mysqli, requests, aiohttp, reqwest and Net::SMTP APIs, go-sql-driver's DSN.
# A password of symbols (`$` first, a backtick, `;`, `|`), and one of digits only.
SYMBOLS = "$v+a~k`Us;C|k2"
DIGITS = "0345026942"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (f"cqlsh db1 9042 -u admin -p '{PW}'", "cqlsh db1 9042 -u admin -p '[REDACTED:password]'"),
        (
            f"mosquitto_pub -h mq -p 1883 -u svc -P {PW} -t t -m 1",
            "mosquitto_pub -h mq -p 1883 -u svc -P [REDACTED:password] -t t -m 1",
        ),
        (
            f"ssh-keygen -t ed25519 -N '{PW}' -f ~/.ssh/k",
            "ssh-keygen -t ed25519 -N '[REDACTED:password]' -f ~/.ssh/k",
        ),
        (
            f"ssh-keygen -p -P {PW} -N {PW} -f k",
            "ssh-keygen -p -P [REDACTED:password] -N [REDACTED:password] -f k",
        ),
        (
            f"dotnet nuget add source https://n/v3/index.json -n corp -u me -p {PW}",
            "dotnet nuget add source https://n/v3/index.json -n corp -u me -p [REDACTED:password]",
        ),
        (
            f"skopeo copy --src-creds me:'{SYMBOLS}' docker://a dir:/tmp/a",
            "skopeo copy --src-creds me:'[REDACTED:password]' docker://a dir:/tmp/a",
        ),
        (
            f"podman pull --creds=me:{PW} quay.io/x/y",
            "podman pull --creds=me:[REDACTED:password] quay.io/x/y",
        ),
        (
            f"poetry config http-basic.corp me '{PW}'",
            "poetry config http-basic.corp me '[REDACTED:password]'",
        ),
        (
            "poetry config pypi-token.pypi pypi-AgEIcHlwaS5vcmc2x",
            "poetry config pypi-token.pypi [REDACTED:password]",
        ),
        (
            f"htpasswd -b -c /etc/nginx/.htpasswd me '{PW}'",
            "htpasswd -b -c /etc/nginx/.htpasswd me '[REDACTED:password]'",
        ),
        (
            f"htpasswd -B -C 10 -b f me {PW}",
            "htpasswd -B -C 10 -b f me [REDACTED:password]",
        ),
        (f"htpasswd -n -b me {PW}", "htpasswd -n -b me [REDACTED:password]"),
        (
            f"NET USE Z: \\\\srv\\share {PW} /USER:corp\\me",
            "NET USE Z: \\\\srv\\share [REDACTED:password] /USER:corp\\me",
        ),
        (f"schtasks /Create /RU me /RP {PW}", "schtasks /Create /RU me /RP [REDACTED:password]"),
        (f"sqlplus ci-bot/'{PW}'@//db:1521/X", "sqlplus ci-bot/'[REDACTED:password]'@//db:1521/X"),
        (f"sqlplus SCOTT/{PW}@orcl", "sqlplus SCOTT/[REDACTED:password]@orcl"),
        # A number where the documentation puts the password is the password.
        (f"docker login -u me -p {DIGITS} r.io", "docker login -u me -p [REDACTED:password] r.io"),
        (f"7z a -p'{DIGITS}' s.7z d", "7z a -p'[REDACTED:password]' s.7z d"),
        (
            f"mongodump -u me --password '{DIGITS}' --db x",
            "mongodump -u me --password '[REDACTED:secret]' --db x",
        ),
        (
            f"mysqldump --password='{SYMBOLS}' shop",
            "mysqldump --password='[REDACTED:secret]' shop",
        ),
        (f"RESTIC_PASSWORD='{SYMBOLS}' restic snapshots", None),
        (f"terraform apply -var 'db_password={DIGITS[:8]}'", None),
        # Files.
        ("db.corp:5432:*:svc:Xu7buftp6cJf", "db.corp:5432:*:svc:[REDACTED:password]"),
        ("*:*:*:svc:Xu7buftp6cJf", "*:*:*:svc:[REDACTED:password]"),
        (
            f'network={{\n    ssid="Home"\n    psk="{PW}"\n}}',
            'network={\n    ssid="Home"\n    psk="[REDACTED:password]"\n}',
        ),
        (f"spring.mail.password={DIGITS[:8]}", "spring.mail.password=[REDACTED:secret]"),
        # Code: the argument the API takes the password in.
        (
            f'DriverManager.getConnection(url, "app", "{PW}");',
            'DriverManager.getConnection(url, "app", "[REDACTED:password]");',
        ),
        (
            f"$pdo = new PDO($dsn, 'app', '{PW}');",
            "$pdo = new PDO($dsn, 'app', '[REDACTED:password]');",
        ),
        (
            f"$db = new mysqli('h', 'app', '{PW}', 'shop');",
            "$db = new mysqli('h', 'app', '[REDACTED:password]', 'shop');",
        ),
        (
            f'requests.get(url, auth=("me", "{PW}"))',
            'requests.get(url, auth=("me", "[REDACTED:password]"))',
        ),
        (f'HTTPBasicAuth("me", "{PW}")', 'HTTPBasicAuth("me", "[REDACTED:password]")'),
        (
            f'client.get(u).basic_auth("me", Some("{PW}"))',
            'client.get(u).basic_auth("me", Some("[REDACTED:password]"))',
        ),
        (
            f"Net::SMTP.start('smtp', 587, 'localhost', 'me', '{PW}', :login)",
            "Net::SMTP.start('smtp', 587, 'localhost', 'me', '[REDACTED:password]', :login)",
        ),
        (
            f'sql.Open("mysql", "app:{PW}@tcp(db:3306)/shop")',
            'sql.Open("mysql", "app:[REDACTED:password]@tcp(db:3306)/shop")',
        ),
        (f"https://me:P@ss{DIGITS}@host/x", "https://me:[REDACTED:password]@host/x"),
        # What tools print: a value alone on the line after its label, a command's output.
        (
            f"Your new password:\n{DIGITS}\nKeep it.",
            "Your new password:\n[REDACTED:secret]\nKeep it.",
        ),
        (f"smtp:\n  password: >-\n    {PW}", "smtp:\n  password: >-\n    [REDACTED:secret]"),
        (f"$ op read op://Private/db/password\n{DIGITS}", None),
        (f"$ gh auth token\ngho_{'x1' * 18}", None),
        (
            "AWS Secret Access Key [None]: NtsHI1UjL9OFL5K+CPQPdYfI5n8bnXA71w6akFn3",
            "AWS Secret Access Key [None]: [REDACTED:aws-secret-key]",
        ),
        (
            f"    Security key           : Present\n    Key Content            : {PW}",
            "    Security key           : Present\n    Key Content            : [REDACTED:password]",
        ),
        (
            f"Key         Value\n---         -----\npassword    {SYMBOLS}\nusername    deploy",
            "Key         Value\n---         -----\npassword    [REDACTED:secret]\nusername    deploy",
        ),
        (f"log in as bob with password {PW[:-1]}9 and check out", None),
        (f"mon mot de passe est {PW[:-1]}9, note-le", None),
        # Quoted, a value runs to its closing quote: a backtick, `$` or `;` inside it.
        (f"password: '{SYMBOLS}'", "password: '[REDACTED:secret]'"),
        ('MARIADB_ROOT_PASSWORD: "x`cJ`W6z"', 'MARIADB_ROOT_PASSWORD: "[REDACTED:secret]"'),
    ],
)
def test_corpus_d_families_are_hidden_by_kind(text: str, expected: str | None) -> None:
    out = redact(text)
    if expected is not None:
        assert out == expected
    for secret in (PW, SYMBOLS, DIGITS, DIGITS[:8], f"{PW[:-1]}9", "x1" * 18):
        assert secret not in out, (text, out)


@pytest.mark.parametrize(
    "text",
    [
        # The same tools' other flags, and the synopsis's placeholders.
        "cqlsh db1 9042 -u admin",
        "mosquitto_sub -h mq -p 1883 -t sensors/#",
        "ssh-keygen -t ed25519 -N '' -f ~/.ssh/k",
        "ssh-keygen -t rsa -b 4096 -C me@example.com -f k",
        "ssh-keygen -p [-P old_passphrase] [-N new_passphrase] [-f keyfile]",
        "dotnet run -p src/App/App.csproj",
        "dotnet nuget add source https://n/v3/index.json -n corp",
        "skopeo copy --src-creds me docker://a dir:/tmp/a",
        "skopeo inspect --creds $REGISTRY_CREDS docker://a",
        "poetry config virtualenvs.in-project true",
        "htpasswd -c /etc/nginx/.htpasswd me",
        "htpasswd -D /etc/nginx/.htpasswd me",
        "net use Z: \\\\srv\\share * /user:corp\\me",
        "docker login -u me -p $REGISTRY_PASSWORD r.io",
        "sshpass -p '%DB_PASSWORD%' ssh me@db uptime",
        "pg_dump --dbname='postgresql://me:%DB_PASSWORD%@db:5432/app'",
        '"password": "%API_TOKEN%"',
        "machine github.com login me password ****************",
        '"password": "&lt;YOURPASSWORD&gt;"',
        # Lines that only look like the files and outputs above.
        "12:30:00:12:34",
        "2026-11-27 20:51:03:123:456 started",
        "auth=(user, password), timeout=10",
        "DriverManager.getConnection(url, user, password);",
        'sql.Open("mysql", dsn)',
        "password:\n  required",
        "token:\n  - name",
        "Key         Value\n---         -----\nusername    deploy\ntoken_ttl   768h",
        "github.com/hashicorp/golang-lru v0.5.4 h1:YDjusn29QI/Das2iO9M0BHnIbxPeyuCHsjMW+lJfyTc=",
        'IAMUserChangePassword = "arn:aws:iam::aws:policy/IAMUserChangePassword"',
        "password_min_length = 12345678",
        "the password must be at least 8 characters, with password managers welcome",
    ],
)
def test_next_to_corpus_d_families_what_is_no_password_stays(text: str) -> None:
    assert redact(text) == text


def test_a_generated_word_behind_a_providers_prefix_of_up_to_twelve_letters_is_hidden() -> None:
    # `acmeprovider_<key>`: a provider's prefix segment is up to 12 characters, each hidden with
    # its key as a short one is; longer, the word before the key is a name (docs/secrets.md).
    hidden = 0
    for _ in range(ROUNDS // 2):
        value = key(ALNUM, 24)
        short = redact(f"deploy log: acme_{value} done")
        for segment in ("acmeprovide", "acmeprovider"):
            out = redact(f"deploy log: {segment}_{value} done")
            assert (out == "deploy log: [REDACTED:secret] done") == (value not in short), segment
        hidden += value not in short
    assert hidden >= ROUNDS // 2 * 0.9  # most generated keys read as generated


@pytest.mark.parametrize(
    "text",
    [
        # A secret's name in a tag, a .NET setting, a Dockerfile: the value decides.
        "<passphrase>optional; leave empty if not used.</passphrase>",
        '<add key="SmtpPassword" value="${SMTP_PASSWORD}" />',
        "ENV DB_PASSWORD $DB_PASSWORD",
        'define("DB_PASSWORD", getenv("DB_PASSWORD"));',
        # A secret word inside an ARN quoted or assigned: the name of a resource.
        '{"SecretId": "arn:aws:secretsmanager:us-east-1:123456789012:secret:prod/db/pw-a1B2c3"}',
        "SECRET_ARN=arn:aws:secretsmanager:us-east-1:123456789012:secret:prod/db/pw-a1B2c3",
    ],
)
def test_a_secrets_name_with_no_secret_value_stays(text: str) -> None:
    assert redact(text) == text


def test_a_key_wrapped_at_a_line_of_exactly_sixty_characters_is_hidden_in_both_pieces() -> None:
    # A terminal or a tool wraps at 60 columns or more: the line holding the first piece is
    # exactly that long.
    for _ in range(ROUNDS // 4):
        secret = "sk-ant-api03-" + gen(ALNUM, 40)
        for width in (60, 61, 80):
            head = "INFO upstream configured with ".ljust(width - 25, ".")
            text = f"{head}{secret[:25]}\n{secret[25:]} and retries 3"
            assert len(text.split("\n")[0]) == width
            out = redact(text)
            for piece in (secret[:25], secret[25:]):
                assert piece not in out, (width, out)


def test_a_key_after_a_providers_name_is_hidden_to_its_last_character() -> None:
    for _ in range(ROUNDS // 4):
        value = key(LOWER_NUM, 32)
        # Separators after it are not part of it; the key's own last character is.
        assert redact(f"adafruit {value}-") == "adafruit [REDACTED:secret]-"
        assert redact(f"adafruit {value}__") == "adafruit [REDACTED:secret]__"
        # After one `/` it is still a value; in a path (another `/` before) it is a file name.
        assert redact(f"adafruit /{value}") == "adafruit /[REDACTED:secret]"
        path = f"adafruit files: /srv/adafruit/{value}"
        assert redact(path) == path


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        # ssh-keygen's passphrase, with another command after it on the line or the next line.
        (
            f"ssh-keygen -t ed25519 -N '{PW}' -f k && ls ~/.ssh",
            "ssh-keygen -t ed25519 -N '[REDACTED:password]' -f k && ls ~/.ssh",
        ),
        (
            f"ssh-keygen -t ed25519 -N {PW} -f k\necho done",
            "ssh-keygen -t ed25519 -N [REDACTED:password] -f k\necho done",
        ),
        # A quoted word after a password flag is the password; unquoted, prose about the flag.
        ("deploy --password 'Swordfish' db", "deploy --password '[REDACTED:secret]' db"),
        ("deploy --password 'swordfish' db", "deploy --password '[REDACTED:secret]' db"),
        # A key after a provider's name with words after it.
        ("adafruit 9aeq2mbrq7gurhws4niwunsrlnokgqbx done", "adafruit [REDACTED:secret] done"),
        # A 32-hex key after a provider's name (a shorter hex value is an id).
        (
            "adafruit = '0f9e8d7c6b5a49382716f5e4d3c2b1a0'",
            "adafruit = '[REDACTED:secret]'",
        ),
        # A text whose lowercase is longer, with a token replaced first: the assignment after
        # it is still found.
        (
            "İİİ ghp_" + "aB3dE5gH7jK9mN1pQ3sT5vW7yZ9bC1dE3fG5" + " then password = hunter22x",
            "İİİ [REDACTED:github-token] then password = [REDACTED:secret]",
        ),
    ],
)
def test_edges_of_the_context_rules(text: str, expected: str) -> None:
    assert redact(text) == expected


@pytest.mark.parametrize(
    "text",
    [
        "usage: docker login [-u user] [-p ...] [server]",
        "openssl pkcs12 -passin arg, -passout arg",
        "adafruit uses MLKEM768X25519PublicKey for the handshake",
        # A class name after a provider's name, a hash named inside a call.
        "const digest = { hash: Buffer.from('Zq8vT1mK4pW9xR2nL7cB5yH3fJ6dG0sA', 'base64') }",
    ],
)
def test_edges_of_the_context_rules_that_stay(text: str) -> None:
    assert redact(text) == text


def test_an_uppercase_hex_digest_stays() -> None:
    # PowerShell's Get-FileHash prints digests in capitals.
    for _ in range(ROUNDS // 4):
        digest = gen("0123456789ABCDEF", 64)
        line = f"SHA256    {digest}       C:\\dist\\app.zip"
        assert redact(line) == line
        assert redact(f"{digest}  app.zip") == f"{digest}  app.zip"


def test_context_secrets_are_found_anywhere_in_a_large_text() -> None:
    filler = "The deploy went fine and the logs are quiet. " * 120  # above 4 KiB
    for text in (
        f"postgres://app:hunter22@db/app {filler}",
        f"{filler} BUNDLE_ENTERPRISE__CONTRIBSYS__COM=cafebabe:deadbeef {filler}",
        f"{filler} curl -u deploy:{PW} https://x {filler}",
    ):
        out = redact(text)
        for secret in ("hunter22", "cafebabe:deadbeef", "deadbeef", PW):
            assert secret not in out
        assert out.count("The deploy went fine") == text.count("The deploy went fine")


def test_the_edges_of_a_random_value_under_a_weak_name() -> None:
    # Eight characters each used twice: entropy of exactly 3 bits, the least a random value has.
    assert redact("signing_key = q7x2m9k4q7x2m9k4") == "signing_key = [REDACTED:secret]"
    # A path under a weak name is where the key is, not the key; base64 of words is test data.
    for text in (
        "tls_key = /etc/ssl/private/server01.key",
        "VGhpcyBpcyB0aGUgd2F5IHdlIGRvIGl0IGV2ZXJ5IGRheSEh",
        "fixture: dGhlIHF1aWNrIGJyb3duIGZveCBqdW1wcyBvdmVyIGl0",
        # Under 12 characters after a secret word, a value is too short to tell from a word.
        "bitbar TOKEN a8Kq2Zm9xQ",
    ):
        assert redact(text) == text


def test_a_public_value_named_on_its_line_stays_when_more_lines_follow() -> None:
    for _ in range(ROUNDS // 4):
        value = key(ALNUM, 40)
        for text in (f"pubkey {value}\nnext line", f"first line\nfingerprint {value}\nlast"):
            assert redact(text) == text


# ---------------------------------------------------------------------------------------------
# Secrets given by their context, by kind of context (docs/secrets.md, "Context kinds"): each
# kind with a case of real tool syntax that is a secret, and a near miss that stays. The values
# are made up here, not taken from the corpora.
# ---------------------------------------------------------------------------------------------

CONTEXT_KINDS = [
    # a password flag after a user flag, any command
    (
        "rabbitmqadmin -H mq.local -u ops -p 'Kq7!vT2m' list vhosts",
        "rabbitmqadmin -H mq.local -u ops -p '[REDACTED:password]' list vhosts",
        "docker run -u 1000:1000 -p 8080:80 nginx",
    ),
    # ... not mysql's prompting -p, a port, a process id
    (
        "hdbsql -n hana:30015 -u SYSTEM -p Hana2024x",
        "hdbsql -n hana:30015 -u SYSTEM -p [REDACTED:password]",
        "mysql -u root -p shop < dump.sql",
    ),
    # ... pids
    (
        "vsql -h vertica -U dbadmin -w Vp4ss!2021",
        "vsql -h vertica -U dbadmin -w [REDACTED:password]",
        "top -u bob -p 4321",
    ),
    # user:password after a credential flag
    (
        "etcdctl --user root:Et3d-R00t! endpoint health",
        "etcdctl --user root:[REDACTED:password] endpoint health",
        "docker exec -u www-data:www-data app php artisan migrate",
    ),
    # ... httpie, a host and port stays
    (
        "http -a admin:Ht7p-Pw99 GET https://api.example.com/me",
        "http -a admin:[REDACTED:password] GET https://api.example.com/me",
        "ssh -a backup:2222",
    ),
    # ... lftp's user,password with the password quoted
    (
        "lftp -u deploy,'Lf7p~Pw!' sftp://files.example.com",
        "lftp -u deploy,'[REDACTED:password]' sftp://files.example.com",
        "sudo aa-update-browser -u abstraction1,abstraction2 profile",
    ),
    # S3-compatible alias
    (
        "mc alias set store https://s3.example.com AKIAEXAMPLE 'Mn9/Secret+Key77'",
        "mc alias set store https://s3.example.com AKIAEXAMPLE '[REDACTED:password]'",
        "mc alias set store https://s3.example.com ACCESS_KEY SECRET_KEY",
    ),
    # SQL IDENTIFIED BY
    (
        "CREATE USER 'app'@'%' IDENTIFIED BY 'Sq1-Pw#2025';",
        "CREATE USER 'app'@'%' IDENTIFIED BY '[REDACTED:password]';",
        "ALTER USER app WITH PASSWORD :new_password;",
    ),
    # SQL PASSWORD literal, CONNECT ... USING
    (
        "CREATE ROLE reporter LOGIN PASSWORD 'R3port-Pw9';",
        "CREATE ROLE reporter LOGIN PASSWORD '[REDACTED:password]';",
        'cursor.execute("CREATE ROLE %s LOGIN PASSWORD %s", (name, pw))',
    ),
    # db2 connect
    (
        "db2 connect to SALES user db2inst1 using Db2-Pw-77",
        "db2 connect to SALES user db2inst1 using [REDACTED:password]",
        "db2 connect to SALES user db2inst1",
    ),
    # a value set under a secret's name
    (
        'dotnet user-secrets set "Smtp:Password" "Sm7p-Pw-2025"',
        'dotnet user-secrets set "Smtp:Password" "[REDACTED:password]"',
        'dotnet user-secrets set "Smtp:Host" "smtp.example.com"',
    ),
    # ... npm's auth token
    (
        "npm config set //npm.example.com/:_authToken 0a1b2c3d-4e5f-6789-abcd-ef0123456789",
        "npm config set //npm.example.com/:_authToken [REDACTED:password]",
        "npm config set registry https://registry.npmjs.org/",
    ),
    # composer http-basic, bundle config
    (
        "composer config --global http-basic.repo.example.com ci 'C0mp0ser#Pw'",
        "composer config --global http-basic.repo.example.com ci '[REDACTED:password]'",
        "composer config --global repo.packagist composer https://packagist.org",
    ),
    # bundle config host user:password
    (
        "bundle config set --global gems.example.com ci:Bund1e-Pw-9",
        "bundle config set --global gems.example.com ci:[REDACTED:password]",
        "bundle config set --local path vendor/bundle",
    ),
    # kubectl --from-literal
    (
        "kubectl create secret generic db --from-literal=pw=Q9w8E7r6t5",
        "kubectl create secret generic db --from-literal=pw=[REDACTED:password]",
        "kubectl create secret generic db --from-literal=password=<password>",
    ),
    # secret-storing commands
    (
        "gh secret set DEPLOY_TOKEN --body 'Gh-S3cret-77'",
        "gh secret set DEPLOY_TOKEN --body '[REDACTED:password]'",
        "gh secret set DEPLOY_TOKEN < token.txt",
    ),
    # ... positional
    (
        "neo4j-admin dbms set-initial-password N30j-Init-99",
        "neo4j-admin dbms set-initial-password [REDACTED:password]",
        "neo4j-admin dbms set-initial-password --help",
    ),
    # a password piped to a program that keeps it
    (
        "echo -n 'Lu7s-Pass-99' | cryptsetup luksOpen /dev/sdb1 vault -d -",
        "echo -n '[REDACTED:password]' | cryptsetup luksOpen /dev/sdb1 vault -d -",
        "echo 'hello world' | grep password",
    ),
    # ... encfs -S
    (
        "echo 'Enc-Fs-Pw-42' | encfs -S ~/.crypt ~/private",
        "echo '[REDACTED:password]' | encfs -S ~/.crypt ~/private",
        "echo $ENCFS_PASSWORD | encfs -S ~/.crypt ~/private",
    ),
    # a secret written into a file of secrets
    (
        "echo 'AKIAX:Zx9Yw8Vu7Ts6Rq5' > ~/.passwd-s3fs",
        "echo '[REDACTED:password]' > ~/.passwd-s3fs",
        "echo 'done' > build.log",
    ),
    # a file of secrets printed
    (
        "$ cat /etc/openvpn/client/auth.txt\nvpnuser\nOv9n-Pass-77",
        "$ cat /etc/openvpn/client/auth.txt\nvpnuser\n[REDACTED:password]",
        "$ cat /etc/passwd\nroot:x:0:0:root:/root:/bin/bash",
    ),
    # ... user:password lines
    (
        "$ sudo cat /etc/rsyncd.secrets\nbackup:Rsy9c-Pw!",
        "$ sudo cat /etc/rsyncd.secrets\n[REDACTED:password]",
        "$ cat notes.txt\nbackup:Rsy9c-Pw!",
    ),
    # credential lines of config files (no =)
    (
        "account work\nhost smtp.example.com\nuser me@example.com\npassword Msm7p-Pw!\nfrom me@example.com",
        "account work\nhost smtp.example.com\nuser me@example.com\npassword [REDACTED:password]\nfrom me@example.com",
        "password required",
    ),
    # ... Redis, OpenLDAP
    (
        "requirepass R3dis-C0nf-9\nbindpw Ld4p-Bind-9",
        "requirepass [REDACTED:password]\nbindpw [REDACTED:password]",
        "passwd alice2",
    ),
    # ... all-digit password after =
    ("remotepass = 48213379065", "remotepass = [REDACTED:secret]", "kpasswd\t\t464/tcp"),
    # fetchmail's user ... password
    (
        'poll imap.example.com proto IMAP user "me" there with password "F3tch-M4il"',
        'poll imap.example.com proto IMAP user "me" there with password "[REDACTED:password]"',
        "user admin password required",
    ),
    # ipsec.secrets
    (
        '203.0.113.5 198.51.100.7 : PSK "Ips3c-Pr3shared!"',
        '203.0.113.5 198.51.100.7 : PSK "[REDACTED:password]"',
        "the PSK is configured in ipsec.secrets",
    ),
    # an XML element named by an attribute
    (
        '<property name="hibernate.connection.password">Hb9-Pw!x</property>',
        '<property name="hibernate.connection.password">[REDACTED:secret]</property>',
        '<property name="hibernate.connection.url">jdbc:mysql://db/app</property>',
    ),
    # ... Spring's value attribute
    (
        '<property name="password" value="Spr1ng-Db-Pw"/>',
        '<property name="password" value="[REDACTED:secret]"/>',
        '<property name="username" value="app"/>',
    ),
    # a name and its value on the next line
    (
        '{\n  "database": {\n    "password":\n      "Js0n-Spl1t-Pw"\n  }\n}',
        '{\n  "database": {\n    "password":\n      "[REDACTED:secret]"\n  }\n}',
        '{\n  "database": {\n    "host":\n      "db.example.com"\n  }\n}',
    ),
    # a JSON object's value by its sibling fields
    (
        '{\n  "keyName": "key1",\n  "permissions": "FULL",\n  "value": "q8Zr3mK1vT7wP4nX9bL2cJ6hF0dS5gA8eU1yW3iO7tR="\n}',
        '{\n  "keyName": "key1",\n  "permissions": "FULL",\n  "value": "[REDACTED:secret]"\n}',
        '{\n  "keyName": "key1",\n  "permissions": "FULL",\n  "value": "primary"\n}',
    ),
    # ... SSM SecureString
    (
        '{"Parameter": {"Name": "/prod/api/url", "Type": "SecureString", "Value": "Ssm-Param-Pw7"}}',
        '{"Parameter": {"Name": "/prod/api/url", "Type": "SecureString", "Value": "[REDACTED:secret]"}}',
        '{"Parameter": {"Name": "/prod/api/url", "Type": "String", "Value": "https://api.example.com"}}',
    ),
    # a Kubernetes Secret's data
    (
        "apiVersion: v1\nkind: Secret\nmetadata:\n  name: app\nstringData:\n  config: K8s-Str1ng-Data\n",
        "apiVersion: v1\nkind: Secret\nmetadata:\n  name: app\nstringData:\n  config: [REDACTED:secret]\n",
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: app\ndata:\n  config: K8s-Str1ng-Data\n",
    ),
    # labels that name a secret although they end in ID
    (
        "AccessorID:       6f1e2d3c-4b5a-4978-8a9b-0c1d2e3f4a5b\nSecretID:         1a2b3c4d-5e6f-4a7b-8c9d-0e1f2a3b4c5d",
        "AccessorID:       6f1e2d3c-4b5a-4978-8a9b-0c1d2e3f4a5b\nSecretID:         [REDACTED:secret]",
        "secret_id = get_secret_id()",
    ),
    # a bordered table's row
    (
        "| Field  | Value            |\n| secret | 9c8b7a6f5e4d3c2b |",
        "| Field  | Value            |\n| secret | [REDACTED:secret] |",
        "| password | string |",
    ),
    # basic authorisation built in code
    (
        "headers: { Authorization: 'Basic ' + btoa('svc:B4sic-Pw!9') }",
        "headers: { Authorization: 'Basic ' + btoa('svc:[REDACTED:password]') }",
        "btoa('hello:world')",
    ),
    # library calls by their signature
    (
        "server.login('me@example.com', 'Smtp-L0gin-9')",
        "server.login('me@example.com', '[REDACTED:password]')",
        "server.login(user, password)",
    ),
    # ... setters named for a secret; a prompt's message stays
    (
        'dataSource.setPassword("Jdbc-DS-Pw9");',
        'dataSource.setPassword("[REDACTED:password]");',
        "questionary.password('Your password?').ask()",
    ),
    # ... Go
    (
        'req.SetBasicAuth("svc", "G0-Basic-Pw")',
        'req.SetBasicAuth("svc", "[REDACTED:password]")',
        "fn.bind(this, 'submit')",
    ),
    # a user and password side by side in an object
    (
        "auth: { user: 'me', pass: 'Nm-Pass-9x' }",
        "auth: { user: 'me', pass: '[REDACTED:secret]' }",
        "auth: { user: 'me', pass: process.env.SMTP_PASS }",
    ),
    # Redis AUTH at its prompt
    (
        "127.0.0.1:6379> AUTH R3dis-Pr0mpt-9",
        "127.0.0.1:6379> AUTH [REDACTED:password]",
        "127.0.0.1:6379> GET session",
    ),
    # net-snmp's -A/-X; the documented community stays
    (
        "snmpwalk -v3 -l authPriv -u mon -a SHA -A Auth-Pass-99 -x AES -X Priv-Pass-77 10.0.0.1",
        "snmpwalk -v3 -l authPriv -u mon -a SHA -A [REDACTED:password] -x AES -X [REDACTED:password] 10.0.0.1",
        "snmpwalk -v2c -c public 10.0.0.1",
    ),
    # RAR's -hp
    (
        "rar a -hpHdr-Pw-55 backup.rar docs/",
        "rar a -hp[REDACTED:password] backup.rar docs/",
        "rar a -hp backup.rar docs/",
    ),
    # a flag whose name joins words with . or _
    (
        "arangosh --server.username root --server.password 'Ar4ngo-Pw!'",
        "arangosh --server.username root --server.password '[REDACTED:secret]'",
        "arangosh --server.password-file /run/secrets/arango",
    ),
    # what a command printed when asked for a secret
    (
        "$ kubectl get secret db -o jsonpath='{.data.password}' | base64 -d\nKu8e-Dec0ded-Pw",
        "$ kubectl get secret db -o jsonpath='{.data.password}' | base64 -d\n[REDACTED:secret]",
        "$ kubectl get secrets\ndb-credentials",
    ),
    # ... a key generator
    (
        "$ openssl rand -hex 16\n3b1f9e0c7a5d4e2f8a6c4b2e0d9f7a5c",
        "$ openssl rand -hex 16\n[REDACTED:secret]",
        "$ openssl version\nOpenSSL 3.0.13",
    ),
    # a key block other than PRIVATE KEY
    (
        "-----BEGIN OpenVPN Static key V1-----\n6acef03f62675b4b1bbd03e53b187727\n-----END OpenVPN Static key V1-----",
        "[REDACTED:private-key]",
        "the block starts with `-----BEGIN OpenVPN Static key V1-----` and ends with its END line",
    ),
    # Impacket's target
    (
        "impacket-secretsdump corp.local/administrator:Imp4ck3t-Pw@10.0.0.10",
        "impacket-secretsdump corp.local/administrator:[REDACTED:password]@10.0.0.10",
        "impacket-secretsdump -k -no-pass corp.local/administrator@dc01.corp.local",
    ),
    # postfix relay credentials
    (
        "[smtp.example.com]:587 me@example.com:Sasl-Pw-99",
        "[smtp.example.com]:587 me@example.com:[REDACTED:password]",
        "[smtp.example.com]:587",
    ),
    # Terraform's sensitive output, named by its parent key
    (
        '{\n  "db_password": {\n    "sensitive": true,\n    "type": "string",\n    "value": "Tf-0ut-Pw-42"\n  }\n}',
        '{\n  "db_password": {\n    "sensitive": true,\n    "type": "string",\n    "value": "[REDACTED:secret]"\n  }\n}',
        '{\n  "db_host": {\n    "sensitive": false,\n    "type": "string",\n    "value": "db.example.com"\n  }\n}',
    ),
    # openssl passwd's argument
    (
        "openssl passwd -6 -salt xyz 'Hash-Me-Pw9'",
        "openssl passwd -6 -salt xyz '[REDACTED:password]'",
        "openssl passwd -help",
    ),
    # MariaDB's glued -p
    (
        "mariadb -u root -p'M4ria-Pw-66' -e 'SHOW DATABASES'",
        "mariadb -u root -p[REDACTED:password] -e 'SHOW DATABASES'",
        "mariadb -u root -p shop",
    ),
    # PgBouncer's userlist
    ('"app" "Pgb0uncer-Us3r-Pw"', '"app" "[REDACTED:password]"', '"app" "readonly"'),
    # mount's option list
    (
        "mount -t cifs //nas/share /mnt -o user=bob,pass=Cifs-Pass-5",
        "mount -t cifs //nas/share /mnt -o user=bob,pass=[REDACTED:password]",
        "mount -o remount,rw /",
    ),
    # a password sent at a prompt
    (
        'child.expect("Password:")\nchild.sendline("Pexp-Pw-99")',
        'child.expect("Password:")\nchild.sendline("[REDACTED:password]")',
        'child.expect("Username:")\nchild.sendline("deploy")',
    ),
    # a here-string to a program reading a secret
    (
        "gpg --batch --passphrase-fd 0 -c notes.txt <<< 'Gpg-Fd-Pw-5'",
        "gpg --batch --passphrase-fd 0 -c notes.txt <<< '[REDACTED:password]'",
        "grep -c error <<< 'Gpg-Fd-Pw-5'",
    ),
    # Oracle's unquoted IDENTIFIED BY; prose's 'identified by' stays
    (
        "CREATE USER scott IDENTIFIED BY tiger99;",
        "CREATE USER scott IDENTIFIED BY [REDACTED:password];",
        "Hosts are identified by their host keys",
    ),
    # ApacheBench's -A user:password; ss's -A list stays
    (
        "ab -A bob:Pa55word9 -n 100 http://localhost/",
        "ab -A bob:[REDACTED:password] -n 100 http://localhost/",
        "ss -a -A 'all,!tcp'",
    ),
    # a secret's name after config set; kubectl's subcommand and a synopsis's example stay
    (
        "git config --global github.token 9f8e7d6c5b4a39281706f5e4d3c2b1a0",
        "git config --global github.token [REDACTED:password]",
        "kubectl config set-credentials cluster-admin --client-key=~/.kube/admin.key",
    ),
    # --from-literal's value; a synopsis's example value stays
    (
        "kubectl create secret generic api --from-literal=token=Tk9-Lit-77x",
        "kubectl create secret generic api --from-literal=token=[REDACTED:password]",
        "kubectl create secret generic NAME [--from-literal=key1=value1]",
    ),
    # a credential line with '='; code naming a variable stays
    ("remotepass = Rem0te!Pw", "remotepass = [REDACTED:secret]", "key_password=self.key_password,"),
    # a cloud secret store's value; a plain parameter's value stays
    (
        "aws ssm put-parameter --name /prod/db --type SecureString --value 'Qx7-vT2pLm9w'",
        "aws ssm put-parameter --name /prod/db --type SecureString --value '[REDACTED:password]'",
        "aws ssm put-parameter --name /app/region --type String --value eu-west-1",
    ),
    (
        "az keyvault secret set --vault-name kv --name db --value 'Qx7-vT2pLm9w'",
        "az keyvault secret set --vault-name kv --name db --value '[REDACTED:password]'",
        'az keyvault secret set --vault-name kv --name db --value "$DB_PASS"',
    ),
    # libcurl's credential options; a variable given to them stays
    (
        'curl_easy_setopt(curl, CURLOPT_USERPWD, "deploy:Qx7-vT2pLm9w");',
        'curl_easy_setopt(curl, CURLOPT_USERPWD, "deploy:[REDACTED:password]");',
        "curl_easy_setopt(curl, CURLOPT_USERPWD, userpwd);",
    ),
    (
        "curl_setopt($ch, CURLOPT_PROXYPASSWORD, 'Qx7-vT2pLm9w');",
        "curl_setopt($ch, CURLOPT_PROXYPASSWORD, '[REDACTED:password]');",
        "curl_setopt($ch, CURLOPT_PROXYUSERNAME, 'deploy');",
    ),
    # Groovy's Sql.newInstance(url, user, password, driver); a call without a password stays
    (
        "Sql.newInstance('jdbc:mysql://db/app', 'app', 'Qx7vT2pLm9w', 'org.Driver')",
        "Sql.newInstance('jdbc:mysql://db/app', 'app', '[REDACTED:password]', 'org.Driver')",
        "Sql.newInstance(dataSource)",
    ),
    # a declaration with its type before the value (Zig, Rust, Python, TypeScript, Kotlin);
    # a typed default that is no literal stays
    (
        'const api_key: []const u8 = "Qx7vT2pLm9wKd4Rz";',
        'const api_key: []const u8 = "[REDACTED:secret]";',
        "password: Optional[str] = None",
    ),
    (
        'const API_TOKEN: &\'static str = "Qx7vT2pLm9wKd4Rz";',
        'const API_TOKEN: &\'static str = "[REDACTED:secret]";',
        'token: str = Field(default="")',
    ),
    # a literal compared with a password, the literal first; a comparison of names stays
    (
        'if "f62e5bcda4fae4f8" == password {',
        'if "[REDACTED:password]" == password {',
        'if "password" == key {',
    ),
    # `Bearer:` with a colon; a message about a missing token stays
    (
        'bearer = "Bearer: 2lkjdfoiuwer092834kjdwf09"',
        'bearer = "Bearer: [REDACTED:token]"',
        'log.info("Bearer: token missing for user")',
    ),
    # Basic authorization with a plain user:password; base64 is read by the header rule
    (
        'headers.append("Authorization", `Basic deploy:Qx7vT2pLm9w`);',
        'headers.append("Authorization", `Basic deploy:[REDACTED:password]`);',
        "the Authorization header: Basic, then user:password in base64",
    ),
    # a secret manager printing one value with --plain; its table without --plain is no value
    (
        "$ doppler secrets get DB_PASSWORD --plain\ncobalt-meadow-ember-ribbon-walnut",
        "$ doppler secrets get DB_PASSWORD --plain\n[REDACTED:password]",
        "$ doppler secrets get --help\nUsage: doppler secrets get [secrets] [flags]",
    ),
    (
        "$ security find-generic-password -s github -w\nQx7vT2pLm9w",
        "$ security find-generic-password -s github -w\n[REDACTED:password]",
        "$ security find-generic-password -s github\nkeychain: login.keychain-db",
    ),
    # Bitwarden's access token; a version and a UUID alone stay
    (
        "BWS_ACCESS_TOKEN=0.74fd61a9-4a12-4670-ba77-5a04ca16208e.ucKPuIojyuKpeSnUxtlLfUMOBcQZcE"
        ":77UPiLW0/IPEoP07jJ+dni==",
        "BWS_ACCESS_TOKEN=[REDACTED:bitwarden-access-token]",
        "release 0.74fd61a9-4a12-4670-ba77-5a04ca16208e.tar.gz",
    ),
    # a passphrase of words after the word for password and its copula; words without it stay
    (
        "het wachtwoord van de testomgeving is falcon-orbit-ember-canyon, kun je kijken?",
        "het wachtwoord van de testomgeving is [REDACTED:password], kun je kijken?",
        "het wachtwoord voor single-sign-on-test-omgeving werkt niet",
    ),
    # a URL password in base64 with an unencoded `/`; a port and a path before `@` stay
    (
        'psql "postgresql://migrator:TCUTtmZNAqE1R/+w4C12f33aEXpTPOqs@db:5432/app"',
        'psql "postgresql://migrator:[REDACTED:password]@db:5432/app"',
        "git+ssh://github.com:Org2/SomeRepo3Name@v1.0",
    ),
    # the word for password, articles and a long value in another language; a reset link stays
    (
        "voici le mot de passe de la base de recette : H-jvvcH6XhUbnaGYSrx, merci",
        "voici le mot de passe de la base de recette : [REDACTED:password], merci",
        "le mot de passe de la base de recette a été changé par admin2",
    ),
    (
        f"Das Passwort für den Server lautet st.{'a1b2c3d4' * 10}, bitte",
        "Das Passwort für den Server lautet [REDACTED:password], bitte",
        "Das Passwort für den Server wurde gestern von user123 geändert",
    ),
]


@pytest.mark.parametrize(
    ("text", "expected"), [(text, expected) for text, expected, _ in CONTEXT_KINDS]
)
def test_a_secret_given_by_its_context_is_hidden(text: str, expected: str) -> None:
    assert redact(text) == expected


@pytest.mark.parametrize("text", [near_miss for _, _, near_miss in CONTEXT_KINDS])
def test_the_near_miss_of_a_context_kind_stays(text: str) -> None:
    assert redact(text) == text
