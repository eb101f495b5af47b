"""Build the precision set: real public text that reads as random and holds no secret.

    .venv/bin/python scripts/build_precision_set.py [--out DIR] [--mirrors DIR]

Writes every file under `DIR` (default `.cache/precision-set/`, not committed) and a
`manifest.jsonl` naming each file's source, license and split. `scripts/measure_redaction.py
--precision-set` redacts every file and counts the lines and strings redaction changes: none
should change, as nothing in the set is a secret.

**The split is fixed before any rule is written**: a file is held out when the first byte of the
SHA-256 of its name in the set (`<source>/<path>`) is divisible by 3 (about a third of the files;
a view of a file, `<name>#text`, goes with it). The rule depends on nothing but the name, so a
rebuild on another machine holds out the same files where the same sources are found (npm's
logs and cache differ from machine to machine).

Public repositories are read from bare clones under `--mirrors` (default `/work/.mirror`, one
`<owner>+<name>/repo` each, as `git clone --bare` makes them); a missing one is skipped.

The sources, all public, all found on a Debian machine with Python, Node and Go, or fetched from
public repositories (the files are recreated, not committed, as their licenses differ):

| source | license | what it is |
|---|---|---|
| `/usr/share/ca-certificates/mozilla/*.crt` | MPL-2.0 (Mozilla's CA list) | PEM certificates, and `openssl x509 -text` of each: hex moduli, signatures, key ids |
| certifi's `cacert.pem` (pip's vendored copy) | MPL-2.0 | the comment lines: issuer, serial, MD5/SHA1/SHA256 fingerprints |
| `.dist-info/RECORD` of installed Python packages | each package's | `path,sha256=<base64url>,size` lines |
| `client-vscode/package-lock.json` and its installed `node_modules` (`npm ci --offline`) | MIT and others | `integrity` sha512 lines, source maps' `mappings`, minified JS and CSS with data URIs |
| npm's cache index (`~/.npm/_cacache/index-v5`) | npm's metadata | SHA-1 keys, `integrity` fields, registry URLs |
| Go's `go.sum` files (`/usr/share/go-*/src`, spf13/cobra) | BSD-3-Clause, Apache-2.0 | `h1:` hashes in base64 |
| BurntSushi/ripgrep `Cargo.lock`; python-poetry/poetry `poetry.lock` | MIT/Unlicense; MIT | hex checksums, hashes |
| ripgrep's signed tags and commits (`git cat-file -p`), and `git log` of the fetched repositories | MIT/Unlicense, Apache-2.0, MIT, BSD-3-Clause | PGP signature blocks, commit ids |
| `/etc/apt/trusted.gpg.d/*.asc`, `/usr/share/keyrings/*.gpg` (`gpg --export --armor`) | public keys of the Debian archive | armored PGP public keys |
| `/var/lib/apt/lists/*InRelease` and `Packages` | Debian archive metadata | clear-signed releases: MD5/SHA256 lines, a PGP signature; package records with `SHA256:` |
| `/var/lib/dpkg/info/*.md5sums` | Debian | md5 and path lines |
| google-gemini/gemini-cli `.github/` workflows and actions, its `package-lock.json` | Apache-2.0 | actions pinned to commit ids, `integrity` lines |
| docker-library/official-images `library/*` | Apache-2.0 | image tags and `GitCommit:` ids |
| cli/cli `go.sum` and its merge commits signed by GitHub | MIT | `h1:` hashes, PGP signatures |
| cert-manager/cert-manager files holding certificates and no private key | Apache-2.0 | PEM certificates in Go tests, YAML and docs |
| npm's debug logs (`~/.npm/_logs`), `pip install --dry-run --report`, `pip download -v` and `pip hash` | the tools' output | registry URLs, sha256 and sha512 hashes |
| theupdateframework/python-tuf's metadata (no file naming a private key); sigstore/cosign's `go.sum`, public keys, certificates, signatures, workflows and merges (no file holding a private key) | Apache-2.0 | added after the rules, measured once before any line was looked at (`--source fresh_repositories`) |
| in-toto/in-toto's and sigstore/sigstore-python's test assets (no file naming a private key) | Apache-2.0 | added after the signature entry rule, measured once before any line was looked at (`--source fresh_test_assets`) |
| jpadilla/pyjwt's and smallstep/certificates' test keys, certificates, JWKs and configurations (no private key, private JWK member or encrypted key) | MIT, Apache-2.0 | added after the DER signature rule, measured once before any line was looked at (`--source fresh_key_material`) |
| playwright-core's bundled JS, `yarn.lock` files of `node_modules`, Go's `vendor/modules.txt` | Apache-2.0, MIT, BSD-3-Clause | minified code, hashes |
| Jupyter notebooks with image outputs (jupyter/notebook, jakevdp/PythonDataScienceHandbook) | BSD-3-Clause; MIT (code) | base64 PNG outputs in JSON |
| SVG with embedded images (jupyter/notebook, docker-library/docs) | BSD-3-Clause; per logo | base64 in `href` |
| made here from the real material above | | Kubernetes `caBundle` and kubeconfig `certificate-authority-data` of a real CA certificate, SAML metadata with its `X509Certificate`, JWKS documents of public keys made with `cryptography` and a real certificate as `x5c`, OpenSSH public keys and `known_hosts` lines made by `ssh-keygen`, OCI manifests with the digests of real files |

Each file is cut to its first 64 KiB (a text an agent reads, not a whole archive).
"""

from __future__ import annotations

import argparse
import base64
import glob
import hashlib
import json
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_OUT = ROOT / ".cache" / "precision-set"
# Where public repositories' bare clones are looked for (`--mirrors`).
MIRRORS = [Path("/work/.mirror")]
LIMIT = 64 * 1024
PER_SOURCE = 40


def split_of(name: str) -> str:
    """The fixed rule: a third of the names, by their hash, is held out. What follows `#` in a
    name is a view of the same file (`openssl x509 -text` of a certificate) and goes with it."""
    key = name.split("#", 1)[0]
    return "holdout" if hashlib.sha256(key.encode()).digest()[0] % 3 == 0 else "tune"


def _cut(text: str) -> str:
    if len(text) <= LIMIT:
        return text
    cut = text[:LIMIT]
    return cut[: cut.rfind("\n") + 1] or cut


def _run(*args: str, cwd: Path | None = None) -> str:
    try:
        done = subprocess.run(
            args, capture_output=True, encoding="utf-8", errors="replace", timeout=120, cwd=cwd
        )
    except (OSError, subprocess.TimeoutExpired):
        return ""
    return done.stdout if done.returncode == 0 else ""


def _repo(name: str) -> Path | None:
    git_dir = MIRRORS[0] / name.replace("/", "+") / "repo"
    return git_dir if git_dir.is_dir() else None


def _git(repo: Path, *args: str) -> str:
    return _run("git", "--git-dir", str(repo), *args)


def _spread(items: list[str], count: int = PER_SOURCE) -> list[str]:
    """`count` items spread evenly through a sorted list (a fixed choice, not a sample)."""
    items = sorted(items)
    if len(items) <= count:
        return items
    return [items[i * len(items) // count] for i in range(count)]


Entry = tuple[str, str, str]  # name in the set, license, text


def ca_certificates() -> Iterator[Entry]:
    for path in _spread(glob.glob("/usr/share/ca-certificates/mozilla/*.crt"), 60):
        stem = Path(path).name
        text = Path(path).read_text(errors="replace")
        yield f"ca-certificates/{stem}", "MPL-2.0", text
        dump = _run("openssl", "x509", "-in", path, "-noout", "-text")
        if dump:
            yield f"ca-certificates/{stem}#text", "MPL-2.0", dump
        fingerprints = "".join(
            _run(
                "openssl",
                "x509",
                "-in",
                path,
                "-noout",
                "-subject",
                "-serial",
                "-fingerprint",
                f"-{digest}",
            )
            for digest in ("sha1", "sha256")
        )
        if fingerprints:
            yield f"ca-certificates/{stem}#fingerprints", "MPL-2.0", fingerprints


def certifi_comments() -> Iterator[Entry]:
    paths = sorted(
        glob.glob(
            "/root/.pyenv/versions/3.13*/lib/python3.13/site-packages/pip/_vendor/certifi/cacert.pem"
        )
    )
    paths += sorted(glob.glob(str(ROOT / ".venv/lib/python3*/site-packages/certifi/cacert.pem")))
    if not paths:
        return
    lines = [line for line in Path(paths[0]).read_text().splitlines(True) if line.startswith("#")]
    for part in range(0, len(lines), 200):
        yield (
            f"certifi/cacert-comments-{part // 200:02d}.txt",
            "MPL-2.0",
            "".join(lines[part : part + 200]),
        )


def dist_info_records() -> Iterator[Entry]:
    found = glob.glob(str(ROOT / ".venv/lib/python3*/site-packages/*.dist-info/RECORD"))
    found += glob.glob(
        "/root/.pyenv/versions/3.13*/lib/python3.13/site-packages/*.dist-info/RECORD"
    )
    seen: set[str] = set()
    for path in _spread(found, 60):
        package = Path(path).parent.name
        if package in seen:
            continue
        seen.add(package)
        yield f"dist-info/{package}/RECORD", "the package's", Path(path).read_text(errors="replace")


def _node_modules() -> Path | None:
    target = ROOT / ".cache" / "precision-node"
    modules = target / "node_modules"
    if modules.is_dir():
        return modules
    target.mkdir(parents=True, exist_ok=True)
    for name in ("package.json", "package-lock.json"):
        shutil.copy(ROOT / "client-vscode" / name, target / name)
    for mode in (("--offline",), ()):
        subprocess.run(
            ("npm", "ci", "--ignore-scripts", "--no-audit", "--no-fund", *mode),
            cwd=target,
            capture_output=True,
            timeout=600,
            check=False,
        )
        if modules.is_dir():
            return modules
    return None


def npm_material() -> Iterator[Entry]:
    lock = (ROOT / "client-vscode" / "package-lock.json").read_text()
    lines = lock.splitlines(True)
    for part in range(0, len(lines), 400):
        yield (
            f"npm-lock/package-lock-{part // 400:02d}.json",
            "MIT (engram)",
            "".join(lines[part : part + 400]),
        )
    modules = _node_modules()
    if modules is None:
        return
    maps = [str(p) for p in modules.rglob("*.js.map")]
    for path in _spread(maps):
        yield (
            f"source-maps/{Path(path).relative_to(modules)}",
            "the package's",
            Path(path).read_text(errors="replace"),
        )
    minified = [str(p) for p in modules.rglob("*.min.js")] + [
        str(p) for p in modules.rglob("*.min.css")
    ]
    for path in _spread(minified, 20):
        yield (
            f"minified/{Path(path).relative_to(modules)}",
            "the package's",
            Path(path).read_text(errors="replace"),
        )
    data_uris = _run(
        "grep", "-rlE", "data:(image|font|application)/[a-z0-9.+-]+;base64,", str(modules)
    )
    for path in _spread(data_uris.split(), 20):
        text = Path(path).read_text(errors="replace")
        at = text.find(";base64,")
        # The part around the first data URI: a bundle is megabytes.
        start = max(0, text.rfind("\n", 0, max(0, at - 2000)) + 1)
        yield (
            f"data-uris/{Path(path).relative_to(modules)}",
            "the package's",
            text[start : start + 16384],
        )


def npm_cache_index() -> Iterator[Entry]:
    index = Path.home() / ".npm" / "_cacache" / "index-v5"
    files = [str(p) for p in index.rglob("*") if p.is_file()]
    for path in _spread(files, 40):
        relative = Path(path).relative_to(index)
        yield (
            f"npm-cache-index/{relative}",
            "npm's metadata",
            Path(path).read_text(errors="replace"),
        )


def lock_files() -> Iterator[Entry]:
    for path in sorted(
        glob.glob("/usr/share/go-*/src/go.sum") + glob.glob("/usr/share/go-*/src/cmd/go.sum")
    ):
        yield f"go-sum{path}", "BSD-3-Clause", Path(path).read_text()
    for repo_name, path, license_name in (
        ("spf13/cobra", "go.sum", "Apache-2.0"),
        ("BurntSushi/ripgrep", "Cargo.lock", "MIT OR Unlicense"),
        ("python-poetry/poetry", "poetry.lock", "MIT"),
    ):
        repo = _repo(repo_name)
        if repo is None:
            continue
        lines = _git(repo, "show", f"HEAD:{path}").splitlines(True)
        for part in range(0, len(lines), 300):
            yield (
                f"locks/{repo_name}/{path}-{part // 300:02d}",
                license_name,
                "".join(lines[part : part + 300]),
            )


def git_objects() -> Iterator[Entry]:
    repo = _repo("BurntSushi/ripgrep")
    if repo is not None:
        tags = _git(
            repo, "for-each-ref", "--format=%(objecttype) %(refname:short)", "refs/tags"
        ).split("\n")
        annotated = [line.split()[1] for line in tags if line.startswith("tag ")]
        for tag in _spread(annotated, 30):
            body = _git(repo, "cat-file", "-p", f"refs/tags/{tag}")
            if "BEGIN PGP SIGNATURE" in body:
                yield f"signed-tags/ripgrep/{tag}", "MIT OR Unlicense", body
        commits = _git(repo, "log", "--format=%H", "-n", "3000").split()
        signed = [c for c in commits[::25] if "gpgsig" in _git(repo, "cat-file", "-p", c)]
        for commit in signed[:30]:
            yield (
                f"signed-commits/ripgrep/{commit}",
                "MIT OR Unlicense",
                _git(repo, "cat-file", "-p", commit),
            )
    for repo_name, license_name in (
        ("BurntSushi/ripgrep", "MIT OR Unlicense"),
        ("spf13/cobra", "Apache-2.0"),
        ("python-poetry/poetry", "MIT"),
        ("jupyter/notebook", "BSD-3-Clause"),
    ):
        repo = _repo(repo_name)
        if repo is None:
            continue
        for skip in range(0, 2000, 400):
            log = _git(repo, "log", "--format=fuller", "--stat", f"--skip={skip}", "-n", "40")
            yield f"git-log/{repo_name}/{skip}", license_name, log
        log = _git(repo, "log", "--oneline", "--decorate", "-n", "400")
        yield f"git-log-oneline/{repo_name}", license_name, log


def pgp_material() -> Iterator[Entry]:
    for path in sorted(
        glob.glob("/etc/apt/trusted.gpg.d/*.asc")
        + glob.glob("/usr/share/postgresql-common/pgdg/*.asc")
    ):
        yield f"pgp-public-keys{path}", "public key", Path(path).read_text()
    with tempfile.TemporaryDirectory() as home:
        for path in sorted(glob.glob("/usr/share/keyrings/*.gpg")):
            armored = _run(
                "gpg",
                "--homedir",
                home,
                "--no-default-keyring",
                "--keyring",
                path,
                "--export",
                "--armor",
            )
            if armored:
                yield f"pgp-exported{path}.asc", "public key", armored
            listing = _run(
                "gpg",
                "--homedir",
                home,
                "--no-default-keyring",
                "--keyring",
                path,
                "--list-keys",
                "--with-subkey-fingerprints",
            )
            if listing:
                yield f"pgp-listing{path}.txt", "public key", listing


def apt_lists() -> Iterator[Entry]:
    for path in sorted(glob.glob("/var/lib/apt/lists/*InRelease")):
        yield (
            f"apt-inrelease/{Path(path).name}",
            "Debian archive metadata",
            Path(path).read_text(errors="replace"),
        )
    for path in sorted(glob.glob("/var/lib/apt/lists/*Packages.lz4")):
        packages = _run("lz4cat", path)
        records = packages.split("\n\n")
        for index in range(0, min(len(records), 2000), 200):
            yield (
                f"apt-packages/{Path(path).name}-{index // 200:02d}",
                "Debian archive metadata",
                "\n\n".join(records[index : index + 40]),
            )
    for path in _spread(glob.glob("/var/lib/dpkg/info/*.md5sums"), 40):
        yield f"dpkg-md5sums/{Path(path).name}", "Debian", Path(path).read_text(errors="replace")


def notebooks_and_svg() -> Iterator[Entry]:
    for repo_name, license_name, patterns in (
        ("jupyter/notebook", "BSD-3-Clause", ("*.ipynb", "*.svg")),
        ("jakevdp/PythonDataScienceHandbook", "MIT (code)", ("*.ipynb",)),
        ("docker-library/docs", "per logo", ("*.svg",)),
    ):
        repo = _repo(repo_name)
        if repo is None:
            continue
        for pattern in patterns:
            paths = _git(
                repo, "grep", "-l", "-E", "image/png|;base64,", "HEAD", "--", pattern
            ).split()
            for head_path in _spread(paths, 25):
                path = head_path.split(":", 1)[1]
                yield (
                    f"embedded-images/{repo_name}/{path}",
                    license_name,
                    _git(repo, "show", head_path),
                )


def made_from_real_material() -> Iterator[Entry]:
    certificates = sorted(glob.glob("/usr/share/ca-certificates/mozilla/*.crt"))
    if not certificates:
        return
    chosen = [certificates[i * len(certificates) // 12] for i in range(12)]
    for index, path in enumerate(chosen):
        pem = Path(path).read_text()
        bundle = base64.b64encode(pem.encode()).decode()
        body = "".join(line for line in pem.splitlines() if line and not line.startswith("-----"))
        yield (
            f"kubernetes/webhook-{index:02d}.yaml",
            "MPL-2.0 certificate",
            "apiVersion: admissionregistration.k8s.io/v1\nkind: ValidatingWebhookConfiguration\n"
            "metadata:\n  name: policy.example.com\nwebhooks:\n- name: policy.example.com\n"
            f"  clientConfig:\n    service:\n      name: policy\n      namespace: default\n    caBundle: {bundle}\n"
            '  admissionReviewVersions: ["v1"]\n  sideEffects: None\n',
        )
        yield (
            f"kubeconfig/config-{index:02d}",
            "MPL-2.0 certificate",
            "apiVersion: v1\nkind: Config\nclusters:\n- cluster:\n"
            f"    certificate-authority-data: {bundle}\n    server: https://10.0.0.{index + 1}:6443\n"
            "  name: prod\ncontexts:\n- context:\n    cluster: prod\n    user: dev\n  name: prod\n"
            "current-context: prod\nusers:\n- name: dev\n  user:\n    exec:\n      command: aws\n",
        )
        yield (
            f"saml/metadata-{index:02d}.xml",
            "MPL-2.0 certificate",
            '<EntityDescriptor xmlns="urn:oasis:names:tc:SAML:2.0:metadata" entityID="https://idp.example.org">\n'
            '  <IDPSSODescriptor protocolSupportEnumeration="urn:oasis:names:tc:SAML:2.0:protocol">\n'
            '    <KeyDescriptor use="signing">\n      <ds:KeyInfo xmlns:ds="http://www.w3.org/2000/09/xmldsig#">\n'
            f"        <ds:X509Data>\n          <ds:X509Certificate>{body}</ds:X509Certificate>\n"
            "        </ds:X509Data>\n      </ds:KeyInfo>\n    </KeyDescriptor>\n  </IDPSSODescriptor>\n</EntityDescriptor>\n",
        )
    yield from _jwks(chosen)
    yield from _ssh_public_keys()
    yield from _oci_manifests()


def _jwks(certificates: list[str]) -> Iterator[Entry]:
    try:
        from cryptography.hazmat.primitives import serialization
        from cryptography.hazmat.primitives.asymmetric import ec, rsa
        from cryptography.x509 import load_pem_x509_certificate
    except ImportError:
        return

    def b64url(number: int) -> str:
        raw = number.to_bytes((number.bit_length() + 7) // 8, "big")
        return base64.urlsafe_b64encode(raw).rstrip(b"=").decode()

    for index in range(8):
        keys: list[dict[str, object]] = []
        for k in range(2):
            rsa_key = rsa.generate_private_key(public_exponent=65537, key_size=2048).public_key()
            numbers = rsa_key.public_numbers()
            der = rsa_key.public_bytes(
                serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo
            )
            keys.append(
                {
                    "kty": "RSA",
                    "use": "sig",
                    "alg": "RS256",
                    "kid": hashlib.sha1(der).hexdigest()
                    if k
                    else base64.urlsafe_b64encode(hashlib.sha256(der).digest())
                    .rstrip(b"=")
                    .decode(),
                    "n": b64url(numbers.n),
                    "e": b64url(numbers.e),
                }
            )
        ec_key = ec.generate_private_key(ec.SECP256R1()).public_key().public_numbers()
        keys.append(
            {
                "kty": "EC",
                "crv": "P-256",
                "kid": f"key-{index}",
                "x": b64url(ec_key.x),
                "y": b64url(ec_key.y),
                "use": "sig",
            }
        )
        pem = Path(certificates[index % len(certificates)]).read_bytes()
        cert = load_pem_x509_certificate(pem)
        der = cert.public_bytes(serialization.Encoding.DER)
        keys[0]["x5c"] = [base64.b64encode(der).decode()]
        keys[0]["x5t"] = base64.urlsafe_b64encode(hashlib.sha1(der).digest()).rstrip(b"=").decode()
        text = json.dumps({"keys": keys}, indent=2 if index % 2 else None)
        yield f"jwks/jwks-{index:02d}.json", "made here (public keys)", text + "\n"


def _ssh_public_keys() -> Iterator[Entry]:
    with tempfile.TemporaryDirectory() as work:
        lines = []
        for index, kind in enumerate(("ed25519", "rsa", "ecdsa", "ed25519", "rsa", "ecdsa")):
            key = Path(work) / f"k{index}"
            _run(
                "ssh-keygen",
                "-q",
                "-t",
                kind,
                "-N",
                "",
                "-C",
                f"dev{index}@build-{index}",
                "-f",
                str(key),
            )
            if not key.with_suffix(".pub").exists():
                continue
            public = key.with_suffix(".pub").read_text()
            yield f"ssh/id_{kind}_{index}.pub", "made here (public key)", public
            fields = public.split()
            lines.append(f"host{index}.example.org,10.1.0.{index} {fields[0]} {fields[1]}\n")
            lines.append(_run("ssh-keygen", "-l", "-f", str(key.with_suffix(".pub"))))
            lines.append(_run("ssh-keygen", "-l", "-E", "md5", "-f", str(key.with_suffix(".pub"))))
            lines.append(_run("ssh-keygen", "-lv", "-f", str(key.with_suffix(".pub"))))
        yield "ssh/known_hosts_and_fingerprints", "made here (public keys)", "".join(lines)


def _oci_manifests() -> Iterator[Entry]:
    files = sorted(glob.glob("/usr/bin/*"))[:400:20]
    for index in range(0, len(files), 4):
        layers = []
        for path in files[index : index + 4]:
            try:
                data = Path(path).read_bytes()
            except OSError:
                continue
            layers.append(
                {
                    "mediaType": "application/vnd.oci.image.layer.v1.tar+gzip",
                    "digest": "sha256:" + hashlib.sha256(data).hexdigest(),
                    "size": len(data),
                }
            )
        config = hashlib.sha256(json.dumps(layers).encode()).hexdigest()
        manifest = {
            "schemaVersion": 2,
            "mediaType": "application/vnd.oci.image.manifest.v1+json",
            "config": {
                "mediaType": "application/vnd.oci.image.config.v1+json",
                "digest": f"sha256:{config}",
                "size": 1469,
            },
            "layers": layers,
        }
        yield (
            f"oci/manifest-{index // 4:02d}.json",
            "made here (digests of Debian files)",
            json.dumps(manifest, indent=3) + "\n",
        )
        yield (
            f"oci/pull-{index // 4:02d}.log",
            "made here (digests of Debian files)",
            "".join(f"{str(layer['digest'])[7:19]}: Pull complete\n" for layer in layers)
            + f"Digest: sha256:{config}\nStatus: Downloaded newer image for python:3.13-slim\n",
        )


def workflows_and_bundles() -> Iterator[Entry]:
    repo = _repo("google-gemini/gemini-cli")
    if repo is not None:
        files = _git(repo, "ls-tree", "-r", "--name-only", "HEAD").split("\n")
        actions = [f for f in files if f.startswith(".github/") and f.endswith((".yml", ".yaml"))]
        for path in _spread(actions, 30):
            yield f"workflows/gemini-cli/{path}", "Apache-2.0", _git(repo, "show", f"HEAD:{path}")
        lines = _git(repo, "show", "HEAD:package-lock.json").splitlines(True)[:4000]
        for part in range(0, len(lines), 400):
            chunk = "".join(lines[part : part + 400])
            yield f"npm-lock/gemini-cli/package-lock-{part // 400:02d}.json", "Apache-2.0", chunk
    modules = ROOT / ".cache" / "precision-node" / "node_modules"
    for lock in sorted(modules.rglob("yarn.lock")):
        yield f"yarn-lock/{lock.relative_to(modules)}", "the package's", lock.read_text()
    bundles = [str(p) for p in (modules / "playwright-core" / "lib").rglob("*.js")]
    for path in _spread(bundles, 20):
        text = Path(path).read_text(errors="replace")[:16384]
        yield f"bundles/{Path(path).relative_to(modules)}", "Apache-2.0", text
    for path in sorted(glob.glob("/usr/share/go-*/src/**/vendor/modules.txt", recursive=True)):
        yield f"go-vendor{path}", "BSD-3-Clause", Path(path).read_text()


def more_repositories() -> Iterator[Entry]:
    repo = _repo("docker-library/official-images")
    if repo is not None:
        names = _git(repo, "ls-tree", "--name-only", "HEAD:library").split()
        for name in _spread(names, 40):
            yield (
                f"official-images/{name}",
                "Apache-2.0",
                _git(repo, "show", f"HEAD:library/{name}"),
            )
    repo = _repo("cli/cli")
    if repo is not None:
        lines = _git(repo, "show", "HEAD:go.sum").splitlines(True)
        for part in range(0, len(lines), 300):
            yield (
                f"locks/cli/cli/go.sum-{part // 300:02d}",
                "MIT",
                "".join(lines[part : part + 300]),
            )
        merges = _git(repo, "log", "--merges", "--format=%H", "-n", "2000").split()
        for commit in merges[::100]:
            yield f"signed-commits/cli/{commit}", "MIT", _git(repo, "cat-file", "-p", commit)
    repo = _repo("cert-manager/cert-manager")
    if repo is not None:
        # Files holding certificates and no private key (test keys are secrets by their shape).
        with_certificates = set(_git(repo, "grep", "-l", "BEGIN CERTIFICATE", "HEAD").split())
        with_keys = set(_git(repo, "grep", "-l", "PRIVATE KEY", "HEAD").split())
        for head_path in _spread(sorted(with_certificates - with_keys), 30):
            path = head_path.split(":", 1)[1]
            yield f"cert-manager/{path}", "Apache-2.0", _git(repo, "show", head_path)


def tool_logs() -> Iterator[Entry]:
    """What package managers print: npm's debug logs, pip's installation report."""
    for path in _spread(glob.glob(str(Path.home() / ".npm" / "_logs" / "*.log")), 10):
        yield f"npm-logs/{Path(path).name}", "npm's output", Path(path).read_text(errors="replace")
    with tempfile.TemporaryDirectory() as work:
        report = Path(work) / "report.json"
        packages = ("six", "attrs", "cattrs", "lsprotocol", "pygls")
        _run(
            sys.executable,
            "-m",
            "pip",
            "install",
            "--dry-run",
            "--no-deps",
            "--ignore-installed",
            "--quiet",
            "--report",
            str(report),
            *packages,
        )
        if report.exists():
            yield "pip-report/report.json", "pip's output", report.read_text()
        for package in packages[:3]:
            log = _run(
                sys.executable, "-m", "pip", "download", "--no-deps", "-v", "-d", work, package
            )
            hashes = _run(sys.executable, "-m", "pip", "hash", *glob.glob(f"{work}/{package}-*"))
            yield f"pip-download/{package}.log", "pip's output", log + hashes


def fresh_repositories() -> Iterator[Entry]:
    """Added after the rules were written, and measured once before any was looked at: TUF
    metadata (hex signatures and key ids, public keys) and cosign's sums, keys and workflows."""
    repo = _repo("theupdateframework/python-tuf")
    if repo is not None:
        documents = _git(repo, "ls-tree", "-r", "--name-only", "HEAD").split("\n")
        private = set(_git(repo, "grep", "-il", "private", "HEAD").split())
        metadata = [p for p in documents if p.endswith(".json") and f"HEAD:{p}" not in private]
        for path in _spread(metadata, 40):
            yield f"fresh/python-tuf/{path}", "Apache-2.0", _git(repo, "show", f"HEAD:{path}")
    repo = _repo("sigstore/cosign")
    if repo is not None:
        lines = _git(repo, "show", "HEAD:go.sum").splitlines(True)[:3000]
        for part in range(0, len(lines), 300):
            yield (
                f"fresh/cosign/go.sum-{part // 300:02d}",
                "Apache-2.0",
                "".join(lines[part : part + 300]),
            )
        files = _git(repo, "ls-tree", "-r", "--name-only", "HEAD").split("\n")
        private = set(_git(repo, "grep", "-l", "PRIVATE KEY", "HEAD").split())
        chosen = [
            p
            for p in files
            if (p.endswith((".pub", ".pem", ".crt", ".sig")) or p.startswith(".github/workflows/"))
            and f"HEAD:{p}" not in private
        ]
        for path in _spread(chosen, 30):
            yield f"fresh/cosign/{path}", "Apache-2.0", _git(repo, "show", f"HEAD:{path}")
        merges = _git(repo, "log", "--merges", "--format=%H", "-n", "1000").split()
        for commit in merges[::100]:
            yield (
                f"fresh/cosign-commits/{commit}",
                "Apache-2.0",
                _git(repo, "cat-file", "-p", commit),
            )


def fresh_test_assets() -> Iterator[Entry]:
    """Added after the signature entry rule, and measured once before any was looked at:
    in-toto's and sigstore-python's test assets (layouts and links with signatures and key ids,
    Sigstore bundles, certificates, public keys, detached signatures), no file naming a
    private key."""
    for repo_name in ("in-toto/in-toto", "sigstore/sigstore-python"):
        repo = _repo(repo_name)
        if repo is None:
            continue
        files = _git(repo, "ls-tree", "-r", "--name-only", "HEAD").split("\n")
        private = set(_git(repo, "grep", "-il", "private", "HEAD").split())
        assets = [
            p
            for p in files
            if p.startswith("test")
            and not p.endswith((".py", ".whl", ".gz"))
            and f"HEAD:{p}" not in private
        ]
        for path in _spread(assets, 60):
            yield (
                f"fresh-assets/{repo_name}/{path}",
                "Apache-2.0",
                _git(repo, "show", f"HEAD:{path}"),
            )


def fresh_key_material() -> Iterator[Entry]:
    """Added after the DER signature rule, and measured once before any was looked at: pyjwt's
    and smallstep/certificates' test keys, certificates, JWKs and configurations, no file
    holding a private key, a JWK's private member or an encrypted key."""
    for repo_name, license_name in (
        ("jpadilla/pyjwt", "MIT"),
        ("smallstep/certificates", "Apache-2.0"),
    ):
        repo = _repo(repo_name)
        if repo is None:
            continue
        files = _git(repo, "ls-tree", "-r", "--name-only", "HEAD").split("\n")
        private = set(
            _git(
                repo, "grep", "-l", "-E", 'PRIVATE|"d"|"k"|encrypted_?[kK]ey|"password"', "HEAD"
            ).split()
        )
        material = [
            p
            for p in files
            if ("test" in p.lower())
            and not p.endswith((".py", ".go", ".key", ".priv", ".md", ".mod", ".sum"))
            and f"HEAD:{p}" not in private
            and "priv" not in p.lower()
        ]
        for path in _spread(material, 60):
            yield f"fresh-keys/{repo_name}/{path}", license_name, _git(repo, "show", f"HEAD:{path}")


SOURCES = (
    ca_certificates,
    certifi_comments,
    dist_info_records,
    npm_material,
    npm_cache_index,
    lock_files,
    git_objects,
    pgp_material,
    apt_lists,
    notebooks_and_svg,
    made_from_real_material,
    workflows_and_bundles,
    more_repositories,
    tool_logs,
    fresh_repositories,
    fresh_test_assets,
    fresh_key_material,
)


def build(out: Path) -> list[dict[str, str | int]]:
    if out.exists():
        shutil.rmtree(out)
    (out / "files").mkdir(parents=True)
    manifest: list[dict[str, str | int]] = []
    for source in SOURCES:
        for name, license_name, text in source():
            text = _cut(text)
            if not text.strip() or "\x00" in text:
                continue  # empty, or a binary file (an executable holding a data URI)
            target = out / "files" / name.lstrip("/")
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(text)
            manifest.append(
                {
                    "name": name,
                    "source": source.__name__,
                    "license": license_name,
                    "split": split_of(name),
                    "lines": text.count("\n") + (not text.endswith("\n")),
                    "bytes": len(text.encode()),
                }
            )
    with (out / "manifest.jsonl").open("w") as handle:
        for row in manifest:
            handle.write(json.dumps(row) + "\n")
    return manifest


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    parser.add_argument("--mirrors", type=Path, default=MIRRORS[0])
    args = parser.parse_args()
    MIRRORS[0] = args.mirrors
    manifest = build(args.out)
    for split in ("tune", "holdout"):
        rows = [row for row in manifest if row["split"] == split]
        size = sum(int(row["bytes"]) for row in rows)
        lines = sum(int(row["lines"]) for row in rows)
        print(f"{split}: {len(rows)} files, {lines} lines, {size / 1e6:.2f} MB")
    print(f"written to {args.out}", file=sys.stderr)


if __name__ == "__main__":
    main()
