"""Bundle engram's language server and the Python libraries it imports into the extension.

With the bundle, the extension needs nothing but a Python 3.11+ on the machine: it starts
`python -m lsp_server` with PYTHONPATH set to `bundled/libs/common` (engram and every pure-Python
dependency) plus `bundled/libs/cpXY` (the dependencies with compiled parts, built for that
CPython version), the way Microsoft's Python tool extensions (black, isort, mypy) bring theirs.

Versions come from requirements/dev.lock, so the bundle holds exactly what the tests ran with.
Compiled parts are taken for Linux x86_64 (manylinux, glibc) and CPython 3.11 to 3.13; on any
other platform the extension uses an `engram` on PATH (see docs/vscode.md).

Run by `npm run package` (the bundle-server script); needs pip and the package index.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

CLIENT = Path(__file__).resolve().parents[1]
REPO = CLIENT.parent
LIBS = CLIENT / "bundled" / "libs"
LOCK = REPO / "requirements" / "dev.lock"

# What `engram lsp` imports (pygls and the protocol types; the core's stores, ignore rules,
# compression, regexes with timeouts, YAML digests, TOML settings, the file watcher, the
# transcripts' JSON decoder), with their own dependencies. The MCP SDK (and pydantic under it)
# are for `engram mcp` only: left out.
PURE = [
    "pygls", "lsprotocol", "cattrs", "attrs", "typing-extensions", "exceptiongroup",
    "pathspec", "tomlkit", "rich", "markdown-it-py", "mdurl", "pygments",
    "anyio", "idna", "sniffio",
]
COMPILED = ["zstandard", "regex", "pyyaml", "watchfiles", "orjson"]
PYTHONS = ["3.11", "3.12", "3.13"]
PLATFORMS = ["manylinux_2_17_x86_64", "manylinux2014_x86_64", "manylinux_2_28_x86_64"]


def locked_versions() -> dict[str, str]:
    pins = {}
    for line in LOCK.read_text(encoding="utf-8").splitlines():
        match = re.match(r"^([A-Za-z0-9_.\-]+)==([^\s;\\]+)", line)
        if match:
            pins[match.group(1).lower().replace("_", "-")] = match.group(2)
    return pins


def pip(*args: str) -> None:
    command = [sys.executable, "-m", "pip", "--disable-pip-version-check", "-q", *args]
    subprocess.run(command, check=True)


def requirement(name: str, pins: dict[str, str]) -> str:
    version = pins.get(name)
    # A dependency of a dependency that this Python does not need (exceptiongroup on 3.11+)
    # may be missing from the lock: take any version pip picks for it.
    return f"{name}=={version}" if version else name


def main() -> int:
    pins = locked_versions()
    shutil.rmtree(LIBS, ignore_errors=True)
    common = LIBS / "common"
    common.mkdir(parents=True)
    with tempfile.TemporaryDirectory() as tmp:
        pip("wheel", "--no-deps", "--wheel-dir", tmp, str(REPO))
        # setuptools builds in the source tree: leave the checkout as it was.
        shutil.rmtree(REPO / "build", ignore_errors=True)
        wheels = list(Path(tmp).glob("engram_lsp-*.whl"))
        if len(wheels) != 1:
            print(f"bundle_server: expected one engram wheel, got {wheels}", file=sys.stderr)
            return 1
        pip("install", "--no-deps", "--no-compile", "--target", str(common), str(wheels[0]))
    present = [name for name in PURE if name in pins]
    pip(
        "install", "--no-deps", "--no-compile", "--only-binary=:all:", "--implementation", "py",
        "--python-version", PYTHONS[0], "--target", str(common),
        *(requirement(name, pins) for name in present),
    )
    for version in PYTHONS:
        tag = "cp" + version.replace(".", "")
        platform_args = [arg for p in PLATFORMS for arg in ("--platform", p)]
        pip(
            "install", "--no-deps", "--no-compile", "--only-binary=:all:", "--implementation", "cp",
            "--python-version", version, "--abi", tag, "--abi", "abi3", *platform_args,
            "--target", str(LIBS / tag), *(requirement(name, pins) for name in COMPILED),
        )
    # Console scripts pip writes point at this machine's interpreter: useless in a VSIX.
    for scripts in LIBS.glob("*/bin"):
        shutil.rmtree(scripts, ignore_errors=True)
    for module in LIBS.glob("cp*/zstandard/_cffi.*"):
        module.unlink()  # zstandard's second backend, used only when asked for by name
    for binary in LIBS.rglob("*.so"):
        # Wheels ship their extension modules with symbol tables: 3x the size, no use at runtime.
        subprocess.run(["strip", "--strip-unneeded", str(binary)], check=False)
    for cache in LIBS.rglob("__pycache__"):
        shutil.rmtree(cache, ignore_errors=True)
    compiled = [p for p in common.rglob("*") if p.suffix in {".so", ".pyd", ".dylib"}]
    if compiled:
        # A new dependency with compiled parts must go to COMPILED, or the bundle breaks on
        # every Python but this one.
        print(f"bundle_server: compiled files in the pure part: {compiled[:3]}", file=sys.stderr)
        return 1
    size = sum(p.stat().st_size for p in LIBS.rglob("*") if p.is_file())
    print(f"bundle_server: {LIBS.relative_to(CLIENT)} holds {size / 1e6:.1f} MB", file=sys.stderr)
    return 0


if __name__ == "__main__":
    os.chdir(CLIENT)
    sys.exit(main())
