"""Noisy agent sessions, built line by line in Claude Code's transcript format on a real git
workspace: exploration, approaches the user rejected and that were reverted, a hypothesis the
agent stated and then retracted, one-off network errors, debug prints added and removed,
secrets in the environment, files only read, questions and pasted text in the prompts.

Each scenario says what the next agent must be told (`facts`: every string must appear in the
session-start context, after a compaction and at the next session) and what it must never be
told (`never`: none of these strings may appear), plus the files that really changed. A third
of the scenarios (`HELD_OUT`) was set aside before the rules they exercise were written.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tests.agents_fixtures import Transcript, text, tool_use

SECRET_KEY = "sk-live-" + "9fQ2" * 8
DB_URL_PASSWORD = "pg-pa55-" + "w0rd" * 3


@dataclass
class Expected:
    facts: list[str]
    never: list[str]
    changed: set[str]
    reverted: set[str] = field(default_factory=set)
    # Questions the user asked: they may be quoted as the user's requests, never told as a
    # rule, correction or decision.
    not_rules: list[str] = field(default_factory=list)


class Session:
    """A transcript whose tool calls really happen on the workspace (edits, writes, git)."""

    def __init__(self, root: Path, session_id: str, replay: list[dict[str, Any]] | None = None):
        self.root = root
        self.t = Transcript(session_id, root)
        self.calls = 0
        # What `run` printed when the scenario was captured (tests/fixtures/noisy): replayed in
        # order, so the suite does not run pytest and ruff again each time.
        self.replay = replay
        self.ran: list[dict[str, Any]] = []

    def _id(self) -> str:
        self.calls += 1
        return f"toolu_{self.t.session_id[:6]}_{self.calls:03d}"

    def ask(self, prompt: str) -> None:
        self.t.prompt(prompt)

    def say(self, words: str) -> None:
        self.t.response([text(words)])

    def read(self, path: str) -> None:
        tid = self._id()
        self.t.response([tool_use(tid, "Read", file_path=str(self.root / path))])
        content = (self.root / path).read_text()
        self.t.tool_result(
            tid,
            content,
            result={
                "type": "text",
                "file": {"filePath": str(self.root / path), "content": content},
            },
        )

    def grep(self, pattern: str) -> None:
        tid = self._id()
        self.t.response([tool_use(tid, "Grep", pattern=pattern, path=str(self.root))])
        self.t.tool_result(tid, "Found 2 files", result={"mode": "files_with_matches"})

    def edit(self, path: str, old: str, new: str) -> None:
        tid = self._id()
        target = self.root / path
        before = target.read_text()
        assert old in before, (path, old)
        self.t.response(
            [tool_use(tid, "Edit", file_path=str(target), old_string=old, new_string=new)]
        )
        target.write_text(before.replace(old, new, 1))
        self.t.tool_result(
            tid,
            f"The file {target} has been updated.",
            result={
                "filePath": str(target),
                "oldString": old,
                "newString": new,
                "originalFile": before,
                "userModified": False,
                "replaceAll": False,
                "structuredPatch": [],
            },
        )

    def write(self, path: str, content: str) -> None:
        tid = self._id()
        target = self.root / path
        before = target.read_text() if target.exists() else None
        self.t.response([tool_use(tid, "Write", file_path=str(target), content=content)])
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(content)
        self.t.tool_result(
            tid,
            f"File created successfully at: {target}",
            result={
                "type": "update" if before is not None else "create",
                "filePath": str(target),
                "content": content,
                "structuredPatch": [],
                "originalFile": before,
            },
        )

    def bash(self, command: str, output: str, exit_code: int = 0, *, run: bool = False) -> None:
        """A shell command and what it printed; `run` really runs it (git) in the workspace."""
        tid = self._id()
        self.t.response([tool_use(tid, "Bash", command=command, description="run")])
        if run:
            subprocess.run(command, shell=True, cwd=self.root, check=True, capture_output=True)
        if exit_code:
            body = f"Exit code {exit_code}\n{output}"
            self.t.tool_result(tid, body, is_error=True, result="Error: " + body)
        else:
            self.t.tool_result(
                tid,
                output,
                result={"stdout": output, "stderr": "", "interrupted": False, "isImage": False},
            )

    def run(self, command: str) -> int:
        """A command really run in the workspace (`python` is this interpreter), its real
        output and exit code recorded as Claude Code's Bash tool gives them to the agent; with
        `replay`, what it printed when the scenario was captured."""
        if self.replay is not None:
            captured = self.replay.pop(0)
            # The fake secret is kept out of the file: no scanner mistakes it for a real one.
            recorded = str(captured["command"]).replace("{secret}", SECRET_KEY)
            assert recorded == command, (recorded, command)
            output = str(captured["output"]).replace("{root}", str(self.root))
            output = output.replace("{secret}", SECRET_KEY)
            self.bash(command, output, int(captured["exit_code"]))
            return int(captured["exit_code"])
        real = command.replace("python ", f"{sys.executable} ", 1)
        done = subprocess.run(
            real,
            shell=True,
            cwd=self.root,
            capture_output=True,
            text=True,
            # pytest as a project without this repository's test plugins would run it.
            env={
                **os.environ,
                "PYTHONDONTWRITEBYTECODE": "1",
                "NO_COLOR": "1",
                "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1",
            },
            timeout=60,
            check=False,
        )
        output = (done.stdout + done.stderr).replace(sys.executable, "python")
        output = output.replace(sys.prefix, ".venv").rstrip("\n")
        self.bash(command, output, done.returncode)
        self.ran.append(
            {
                "command": command.replace(SECRET_KEY, "{secret}"),
                "exit_code": done.returncode,
                "output": output.replace(str(self.root), "{root}").replace(SECRET_KEY, "{secret}"),
            }
        )
        return done.returncode

    def save(self, path: Path) -> Path:
        return self.t.save(path)


def git_workspace(root: Path, files: dict[str, str]) -> None:
    root.mkdir(parents=True, exist_ok=True)
    for relative, content in files.items():
        (root / relative).parent.mkdir(parents=True, exist_ok=True)
        (root / relative).write_text(content)
    for command in (
        ["git", "init", "-q"],
        ["git", "add", "-A"],
        ["git", "-c", "user.name=t", "-c", "user.email=t@example.com", "commit", "-qm", "start"],
    ):
        subprocess.run(command, cwd=root, check=True, capture_output=True)


def _pytest_failure(test: str, error: str) -> str:
    return (
        "============================= test session starts ==============================\n"
        "collected 1 item\n\n"
        f"{test.split('::')[0]} F                                                   [100%]\n\n"
        "=================================== FAILURES ===================================\n"
        f"_________________________________ {test.split('::')[-1]} _________________________________\n\n"
        f"E       {error}\n\n"
        f"{test.split('::')[0]}:12: {error.split(':')[0]}\n"
        "=========================== short test summary info ============================\n"
        f"FAILED {test} - {error}\n"
        "============================== 1 failed in 0.21s ===============================\n"
    )


# -- scenarios ------------------------------------------------------------------------------------


def python_api(root: Path, sid: str) -> tuple[Session, Expected]:
    """A Python API, about 50 tool calls: exploration of every handler; a pagination bug; a
    rejected global cache (reverted by editing back); a retracted hypothesis; a debug print
    added and removed; a -s run that failed then passed; a one-off network error; a secret in
    the environment; a question; a rule and a decision."""
    git_workspace(
        root,
        {
            "api/pagination.py": "def page(items, n, size):\n    start = n * size\n    return items[start:start + size]\n",
            "api/cache.py": "CACHE = None\n",
            "api/routes.py": "from api.pagination import page\n\n\ndef list_users(db, n):\n    return page(db.users(), n, 20)\n",
            "tests/test_pagination.py": "from api.pagination import page\n\n\ndef test_first_page():\n    assert page(list(range(5)), 1, 2) == [0, 1]\n",
            "README.md": "# api\n",
        },
    )
    # A real project has more than the files that matter: the agent explores them all.
    for n in range(24):
        (root / "api" / f"handler_{n:02d}.py").write_text(
            f"def handler_{n}(request):\n    return {n}\n"
        )
    s = Session(root, sid)
    s.ask("The first page of /users skips the first 20 users. Find out why and fix it.")
    for path in ("README.md", "api/routes.py", "api/pagination.py", "api/cache.py"):
        s.read(path)
    for n in range(24):
        s.read(f"api/handler_{n:02d}.py")
    for pattern in ("def page", "page(", "offset", "size", "users", "CACHE", "limit", "slice"):
        s.grep(pattern)
    s.say(
        "I think the bug is in the cache layer: api/cache.py returns stale pages.\n\n"
        "Let me add a global cache of pages to check."
    )
    s.edit("api/cache.py", "CACHE = None\n", "CACHE = {}  # global page cache\n")
    s.ask("No, don't add a global cache; revert that. The cache is not the problem.")
    s.edit("api/cache.py", "CACHE = {}  # global page cache\n", "CACHE = None\n")
    s.say(
        "Actually, that hypothesis was wrong: the cache is not involved. Pages are numbered "
        "from 1 in the API but page() counts from 0."
    )
    s.edit(
        "api/pagination.py",
        "    start = n * size\n",
        "    print('DEBUG start', n)\n    start = n * size\n",
    )
    s.bash(
        "pytest -s tests/test_pagination.py::test_first_page",
        "DEBUG start 1\n"
        + _pytest_failure("tests/test_pagination.py::test_first_page", "assert [2, 3] == [0, 1]"),
        1,
    )
    s.edit(
        "api/pagination.py",
        "    print('DEBUG start', n)\n    start = n * size\n",
        "    start = (n - 1) * size\n",
    )
    s.bash("pytest tests/test_pagination.py::test_first_page", "1 passed in 0.05s")
    s.bash(
        "pip install httpx",
        "ERROR: Could not install packages due to an OSError: HTTPSConnectionPool(host='pypi.org', port=443): Read timed out.",
        1,
    )
    s.bash("pip install httpx", "Successfully installed httpx-0.28.1")
    s.bash(f"export API_KEY={SECRET_KEY} && env | grep API", f"API_KEY={SECRET_KEY}", 0)
    s.ask("Can you make sure the page size is still 20 for the admin list?")
    s.read("api/routes.py")
    s.say("Yes: list_users still passes 20.")
    s.ask(
        "We will go with 1-based page numbers everywhere. Always add a regression test for every pagination fix."
    )
    s.write(
        "tests/test_regression_page.py",
        "from api.pagination import page\n\n\ndef test_page_one_is_first():\n    assert page([1, 2, 3], 1, 1) == [1]\n",
    )
    s.bash("pytest tests", "2 passed in 0.08s")
    s.bash("ruff check api", "api/routes.py:1:1: F401 [*] `os` imported but unused", 1)
    s.bash("ruff check api", "api/routes.py:1:1: F401 [*] `os` imported but unused", 1)
    s.say(
        "The pagination fix is in; `ruff check api` still reports an unused import in api/routes.py."
    )
    return s, Expected(
        facts=[
            "api/pagination.py",
            "tests/test_regression_page.py",
            "We will go with 1-based page numbers everywhere",
            "Always add a regression test for every pagination fix",
            "don't add a global cache",
            "`ruff check api` failed",
            "F401",
        ],
        never=[
            "global page cache",
            "bug is in the cache layer",
            "DEBUG",
            "pytest -s tests/test_pagination.py::test_first_page` failed",
            "pip install httpx` failed",
            SECRET_KEY,
            "changed 3 files",
        ],
        not_rules=["make sure the page size"],
        changed={"api/pagination.py", "tests/test_regression_page.py"},
        reverted={"api/cache.py"},
    )


def ts_app(root: Path, sid: str) -> tuple[Session, Expected]:
    """A TypeScript app: a rejected Redux approach reverted with git checkout; pasted agent
    text in a prompt; a jest failure through npm test that is fixed."""
    git_workspace(
        root,
        {
            "src/store.ts": "export const state = { items: [] as string[] };\n",
            "src/cart.ts": "export function total(prices: number[]): number {\n  return prices.reduce((a, b) => a + b);\n}\n",
            "src/cart.test.ts": "import { total } from './cart';\n\ntest('empty cart', () => {\n  expect(total([])).toBe(0);\n});\n",
            "package.json": '{"name": "shop", "version": "1.4.0", "scripts": {"test": "jest"}}\n',
        },
    )
    npm_fail = (
        "\n> shop@1.4.0 test\n> jest\n\nFAIL src/cart.test.ts\n  ● empty cart\n\n"
        "    TypeError: Reduce of empty array with no initial value\n\n"
        "      1 | export function total(prices: number[]): number {\n"
        "    > 2 |   return prices.reduce((a, b) => a + b);\n"
        "        |                 ^\n\n"
        "      at Array.reduce (<anonymous>)\n      at total (src/cart.ts:2:17)\n\n"
        "Tests:       1 failed, 1 total\n"
    )
    s = Session(root, sid)
    s.ask("The cart crashes when it is empty. Fix it.")
    for path in ("package.json", "src/store.ts", "src/cart.ts", "src/cart.test.ts"):
        s.read(path)
    s.bash("npm test", npm_fail, 1)
    s.bash("npm test", npm_fail, 1)
    s.say("I'll move the cart into a Redux slice so the empty state is handled centrally.")
    s.edit("src/store.ts", "export const state", "// redux slice for the cart\nexport const state")
    s.ask(
        "Here is what you wrote earlier:\n> You must always keep the cart in Redux.\n"
        "That was not my rule. No Redux: undo that, keep the plain store."
    )
    s.bash("git checkout -- src/store.ts", "Updated 1 path from the index", run=True)
    s.edit("src/cart.ts", "prices.reduce((a, b) => a + b)", "prices.reduce((a, b) => a + b, 0)")
    s.bash(
        "npm test",
        "\n> shop@1.4.0 test\n> jest\n\nPASS src/cart.test.ts\nTests:       1 passed, 1 total\n",
    )
    s.bash("npm install left-pad", "npm ERR! code ECONNRESET\nnpm ERR! network aborted", 1)
    s.bash("npm install left-pad", "added 1 package in 2s")
    s.ask(
        "From now on, never use Redux in this project. Decision: prices stay in cents as integers."
    )
    s.say("Understood. The empty-cart crash is fixed: total() starts from 0.")
    return s, Expected(
        facts=[
            "src/cart.ts",
            "never use Redux in this project",
            "prices stay in cents as integers",
            "TypeError: Reduce of empty array with no initial value",
        ],
        never=[
            "redux slice",
            "You must always keep the cart in Redux",
            "npm install left-pad` failed",
            "src/store.ts",
            "> shop@1.4.0 test",
            "`npm test` failed the last time",
        ],
        changed={"src/cart.ts"},
        reverted={"src/store.ts"},
    )


def go_service(root: Path, sid: str) -> tuple[Session, Expected]:
    """A Go service: a debug file written and deleted; a retracted guess; a test still failing."""
    git_workspace(
        root,
        {
            "internal/limits/limits.go": "package limits\n\nconst MaxRetries = 3\n",
            "internal/limits/limits_test.go": "package limits\n",
            "cmd/server/main.go": "package main\n\nfunc main() {}\n",
            "go.mod": "module example.com/svc\n\ngo 1.21\n",
        },
    )
    fail = (
        "--- FAIL: TestBackoff (0.00s)\n    limits_test.go:14: backoff(3) = 800ms, want 400ms\n"
        "FAIL\nFAIL\texample.com/svc/internal/limits\t0.004s\nFAIL\n"
    )
    s = Session(root, sid)
    s.ask("Add exponential backoff to the retry loop in internal/limits.")
    for path in ("go.mod", "cmd/server/main.go", "internal/limits/limits.go"):
        s.read(path)
    s.say("My guess is that MaxRetries is read from the environment. Let me check.")
    s.grep("MaxRetries")
    s.say("I was wrong about that: MaxRetries is a constant, nothing reads the environment.")
    s.write("internal/limits/debug_dump.go", "package limits\n\n// temporary debug dump\n")
    s.edit(
        "internal/limits/limits.go",
        "const MaxRetries = 3\n",
        "const MaxRetries = 3\n\nfunc backoff(n int) int { return 100 << n }\n",
    )
    s.bash("rm internal/limits/debug_dump.go", "", run=True)
    s.bash("go test ./internal/limits/ -run TestBackoff -v", fail, 1)
    s.bash("go test ./internal/limits/ -run TestBackoff", fail, 1)
    s.bash(
        "go mod download",
        "go: example.com/x@v1.0.0: dial tcp: lookup proxy.golang.org: i/o timeout",
        1,
    )
    s.bash("go mod download", "")
    s.ask("Is 100ms the right base delay?")
    s.say("The base delay of 100ms matches the old fixed delay.")
    s.ask("Never retry more than 3 times: the provider blocks us after that.")
    s.say("TestBackoff still fails: backoff(3) returns 800ms, the test expects 400ms.")
    return s, Expected(
        facts=[
            "internal/limits/limits.go",
            "Never retry more than 3 times",
            "backoff(3) = 800ms, want 400ms",
        ],
        never=[
            "debug_dump",
            "read from the environment",
            "go mod download` failed",
        ],
        not_rules=["Is 100ms the right base delay"],
        changed={"internal/limits/limits.go"},
        reverted=set(),
    )


def rust_cli(root: Path, sid: str) -> tuple[Session, Expected]:
    """A Rust CLI: cargo test failing twice then fixed; a rejected approach reverted with git
    restore; a secret in a command's environment; Gemini's /init template pasted as a prompt."""
    git_workspace(
        root,
        {
            "src/main.rs": 'fn main() {\n    println!("{}", parse("7"));\n}\n\nfn parse(s: &str) -> u32 {\n    s.parse().unwrap()\n}\n',
            "src/config.rs": "pub const VERBOSE: bool = false;\n",
            "Cargo.toml": '[package]\nname = "cli"\nversion = "0.1.0"\nedition = "2021"\n',
        },
    )
    fail = (
        "running 1 test\ntest tests::parses_hex ... FAILED\n\nfailures:\n\n---- tests::parses_hex stdout ----\n\n"
        "thread 'tests::parses_hex' panicked at src/main.rs:14:9:\n"
        "called `Result::unwrap()` on an `Err` value: ParseIntError { kind: InvalidDigit }\n"
        "note: run with `RUST_BACKTRACE=1` environment variable to display a backtrace\n\n"
        "test result: FAILED. 0 passed; 1 failed; 0 ignored\n"
    )
    s = Session(root, sid)
    s.ask(
        "You are an AI agent that brings the power of Gemini directly into the terminal. "
        "Analyze the project and create a comprehensive GEMINI.md file. "
        "The output must be well-formatted Markdown."
    )
    for path in ("Cargo.toml", "src/main.rs", "src/config.rs"):
        s.read(path)
    s.ask("Make parse() accept hex like 0x1F.")
    s.bash("cargo test", fail, 101)
    s.bash("cargo test", fail, 101)
    s.edit(
        "src/config.rs", "pub const VERBOSE: bool = false;\n", "pub const VERBOSE: bool = true;\n"
    )
    s.ask("Don't switch VERBOSE on; put it back.")
    s.bash("git restore src/config.rs", "", run=True)
    s.edit("src/main.rs", "    s.parse().unwrap()\n", "    parse_hex_or_dec(s)\n")
    s.bash(f"CARGO_REGISTRY_TOKEN={SECRET_KEY} cargo test", "test result: ok. 1 passed; 0 failed")
    s.ask("We decided to keep clap out of this crate.")
    s.say("Hex parsing works; `cargo test` passes.")
    return s, Expected(
        facts=[
            "src/main.rs",
            "keep clap out of this crate",
            "Don't switch VERBOSE on",
            "ParseIntError",
        ],
        never=[
            "well-formatted Markdown",
            "src/config.rs",
            SECRET_KEY,
            "`cargo test` failed the last time",
        ],
        changed={"src/main.rs"},
        reverted={"src/config.rs"},
    )


def ruby_app(root: Path, sid: str) -> tuple[Session, Expected]:
    """A Rails-like app: rspec failing then passing by file; reverted migration edit; a
    question with "always"; a decision in the user's words."""
    git_workspace(
        root,
        {
            "app/models/user.rb": "class User\n  def email; @email; end\nend\n",
            "db/schema.rb": "# schema version 1\n",
            "spec/user_spec.rb": "RSpec.describe User do\n  it('has an email') { expect(User.new.email).to include('@') }\nend\n",
        },
    )
    fail = (
        "F\n\nFailures:\n\n  1) User has an email\n     Failure/Error: expect(User.new.email).to include('@')\n\n"
        "     NoMethodError:\n       undefined method `include?' for nil:NilClass\n"
        "     # ./spec/user_spec.rb:2:in `block (2 levels) in <top (required)>'\n\n1 example, 1 failure\n"
    )
    s = Session(root, sid)
    s.ask("User#email is nil for new users; default it from the login.")
    for path in ("app/models/user.rb", "db/schema.rb", "spec/user_spec.rb"):
        s.read(path)
    s.bash("bundle exec rspec spec/user_spec.rb:2 --format documentation", fail, 1)
    s.edit("db/schema.rb", "# schema version 1\n", "# schema version 2\n")
    s.ask("Why did you touch the schema? Undo it, we are not changing the database.")
    s.edit("db/schema.rb", "# schema version 2\n", "# schema version 1\n")
    s.edit(
        "app/models/user.rb",
        "  def email; @email; end\n",
        '  def email; @email || "#{login}@example.com"; end\n',
    )
    s.bash("bundle exec rspec spec/user_spec.rb", "1 example, 0 failures")
    s.ask("Should we always default the email like this?")
    s.say("Only for users created before the signup form asked for an email.")
    s.ask("Let's go with the login-based default for now, and never send mail to those addresses.")
    s.say("Done: new users get login@example.com until they set an email.")
    return s, Expected(
        facts=[
            "app/models/user.rb",
            "never send mail to those addresses",
            "login-based default",
        ],
        never=[
            "db/schema.rb",
            "rspec spec/user_spec.rb:2 --format documentation` failed",
        ],
        not_rules=["Should we always default the email"],
        changed={"app/models/user.rb"},
        reverted={"db/schema.rb"},
    )


def php_shop(root: Path, sid: str) -> tuple[Session, Expected]:
    """A PHP shop: a phpunit test failing with -v then passing; a pasted log with "must";
    a debug var_dump added and removed; an open failure that stays open."""
    git_workspace(
        root,
        {
            "src/Price.php": "<?php\nfunction net(int $gross): int { return intdiv($gross * 100, 119); }\n",
            "tests/PriceTest.php": "<?php\n// tests\n",
            "composer.json": '{"name": "acme/shop"}\n',
        },
    )
    fail = (
        "PHPUnit 9.6.7 by Sebastian Bergmann and contributors.\n\nF\n\nThere was 1 failure:\n\n"
        "1) PriceTest::testNet\nFailed asserting that 99 is identical to 100.\n\n"
        "/app/tests/PriceTest.php:8\n\nFAILURES!\nTests: 1, Assertions: 1, Failures: 1.\n"
    )
    s = Session(root, sid)
    s.ask("net(119) should be 100. Fix the rounding.")
    for path in ("composer.json", "src/Price.php", "tests/PriceTest.php"):
        s.read(path)
    s.bash("vendor/bin/phpunit -v tests/PriceTest.php", fail, 1)
    s.edit("src/Price.php", "{ return", "{ var_dump($gross); return")
    s.edit("src/Price.php", "{ var_dump($gross); return", "{ return")
    s.edit("src/Price.php", "intdiv($gross * 100, 119)", "(int) round($gross * 100 / 119)")
    s.bash("vendor/bin/phpunit tests/PriceTest.php", "OK (1 test, 1 assertion)")
    s.ask(
        "The CI log says:\n[error] Deploy step: the artifact must be signed before upload\n"
        "Ignore that for now. Always round half up for prices."
    )
    s.bash(
        "vendor/bin/phpstan analyse src",
        " ------ \n  Line   src/Price.php\n ------ \n  2      Function net() has no return type specified.",
        1,
    )
    s.bash(
        "vendor/bin/phpstan analyse src", "  2      Function net() has no return type specified.", 1
    )
    s.say("Rounding is fixed; phpstan still reports a missing return type in src/Price.php.")
    return s, Expected(
        facts=[
            "src/Price.php",
            "Always round half up for prices",
            "phpstan analyse src` failed",
        ],
        never=[
            "var_dump",
            "the artifact must be signed before upload",
            "phpunit -v tests/PriceTest.php` failed",
        ],
        changed={"src/Price.php"},
        reverted=set(),
    )


# -- long sessions: about 70 tool calls each ----------------------------------------------------

GITHUB_TOKEN = "ghp_" + "R7kQ" * 9
NOISY_OUTPUT = Path(__file__).resolve().parent / "fixtures" / "noisy"


def python_billing_long(root: Path, sid: str) -> tuple[Session, Expected]:
    """About 70 tool calls on a billing package, pytest and ruff really run: exploration of
    every module; a pasted support ticket with "always"; a retracted rounding hypothesis; a
    debug print added and removed; `pytest -s` failing, then passing; two approaches the user
    rejected (rates in YAML, reverted with `git checkout` and `rm`; a cache, undone by an
    edit); a one-off network error; a secret in a command; a question; a decision and a rule
    stated by the user; a lint failure still open at the end."""
    files = {
        "README.md": "# billing\n\nInvoices, VAT and payment sync.\n",
        "pyproject.toml": '[project]\nname = "billing"\nversion = "0.4.0"\n',
        "billing/__init__.py": "",
        "billing/rates.py": 'RATES = {"DE": 0.19, "FR": 0.20, "NL": 0.21, "IE": 0.23}\n',
        "billing/lookup.py": "from billing.rates import RATES\n\n\ndef rate_for(country):\n    return RATES[country]\n",
        "billing/vat.py": "from billing.lookup import rate_for\n\n\ndef vat(amount_cents, seller_country, customer_country):\n    rate = rate_for(seller_country)\n    return round(amount_cents * rate)\n",
        "billing/invoice.py": "def needs_vat(customer):\n    # reverse charge: a business customer with a VAT ID pays no VAT here\n    return not customer.get('vat_id')\n",
        "billing/mail.py": "import os\n\n\ndef subject(number):\n    return f'Invoice {number}'\n",
        "scripts/sync.py": "print('synced 3 invoices')\n",
        "tests/__init__.py": "",
        "tests/test_vat.py": "from billing.vat import vat\n\n\ndef test_customer_country_rate():\n    # A German seller invoicing a French customer charges the French rate.\n    assert vat(10000, 'DE', 'FR') == 2000\n",
    }
    for n in range(30):
        files[f"billing/report_{n:02d}.py"] = f"def report_{n}(rows):\n    return len(rows)\n"
    git_workspace(root, files)
    captured = NOISY_OUTPUT / "billing_runs.json"
    replay = None
    if captured.exists() and not os.environ.get("NOISY_SESSIONS_CAPTURE"):
        replay = json.loads(captured.read_text(encoding="utf-8"))
    s = Session(root, sid, replay)
    s.ask(
        "Invoices for French customers show German VAT (19% instead of 20%). Find out why and "
        "fix it. Here is the support ticket:\n"
        "> Customer 4411: invoice INV-2291 charged 19% VAT, must be 20%.\n"
        "> Please always double-check with finance before refunding."
    )
    s.run("git log --oneline -5")
    s.run("ls billing tests")
    for path in ("README.md", "pyproject.toml", "billing/rates.py", "billing/lookup.py"):
        s.read(path)
    for path in ("billing/vat.py", "billing/invoice.py", "billing/mail.py", "tests/test_vat.py"):
        s.read(path)
    for n in range(30):
        s.read(f"billing/report_{n:02d}.py")
    for pattern in ("rate_for", "RATES", "seller_country", "customer_country", "round("):
        s.grep(pattern)
    s.say(
        "I think the rounding in vat() is the cause: round() uses banker's rounding on the "
        "half cent."
    )
    pytest_s = "python -m pytest -s -p no:cacheprovider tests/test_vat.py"
    assert s.run(pytest_s) == 1
    s.edit("billing/vat.py", "    rate = rate_for(seller_country)\n",
           "    rate = rate_for(seller_country)\n    print('DEBUG rate', rate)\n")  # fmt: skip
    assert s.run(pytest_s) == 1
    s.say(
        "I was wrong about the rounding: the rate printed is 0.19, the seller's. vat() looks "
        "up the seller's country instead of the customer's."
    )
    s.say("I'll move the VAT rates into a YAML file so finance can edit them.")
    s.write("config/vat_rates.yaml", "DE: 0.19\nFR: 0.20\nNL: 0.21\nIE: 0.23\n")
    s.edit("billing/rates.py", 'RATES = {"DE": 0.19, "FR": 0.20, "NL": 0.21, "IE": 0.23}\n',
           "import yaml\n\nRATES = yaml.safe_load(open('config/vat_rates.yaml'))\n")  # fmt: skip
    s.ask("No, don't move the rates into YAML; revert that. The table stays in Python.")
    s.bash("git checkout -- billing/rates.py", "Updated 1 path from the index", run=True)
    s.bash("rm config/vat_rates.yaml", "", run=True)
    s.say("Then I'll cache the rate lookups with functools.lru_cache.")
    s.edit("billing/lookup.py", "def rate_for(country):",
           "import functools\n\n\n@functools.lru_cache\ndef rate_for(country):")  # fmt: skip
    assert s.run(pytest_s) == 1
    s.ask("Don't cache the rates, undo that: a cache caused last year's stale-rate incident.")
    s.edit("billing/lookup.py", "import functools\n\n\n@functools.lru_cache\ndef rate_for(country):",
           "def rate_for(country):")  # fmt: skip
    s.edit("billing/vat.py", "    print('DEBUG rate', rate)\n", "")
    s.edit("billing/vat.py", "rate_for(seller_country)", "rate_for(customer_country)")
    assert s.run(pytest_s) == 0
    s.bash(
        "pip install python-dateutil",
        "WARNING: Retrying (Retry(total=4, connect=None, read=None, redirect=None, status=None)) "
        "after connection broken by 'ReadTimeoutError(\"HTTPSConnectionPool(host='pypi.org', "
        "port=443): Read timed out. (read timeout=15)\")'\nERROR: Could not find a version that "
        "satisfies the requirement python-dateutil (from versions: none)",
        1,
    )
    s.bash("pip install python-dateutil", "Successfully installed python-dateutil-2.9.0.post0")
    s.run(f"export STRIPE_SECRET_KEY={SECRET_KEY} && python scripts/sync.py")
    s.ask("Can you check whether reverse charge still applies when the customer has a VAT ID?")
    s.read("billing/invoice.py")
    s.grep("vat_id")
    s.say("Yes: needs_vat() skips VAT for a customer with a VAT ID.")
    s.ask(
        "We will go with the customer's country for the VAT rate on every B2C invoice. "
        "Never hard-code a VAT rate outside billing/rates.py."
    )
    s.write(
        "tests/test_vat_regression.py",
        "from billing.vat import vat\n\n\ndef test_irish_customer_pays_irish_vat():\n"
        "    assert vat(10000, 'DE', 'IE') == 2300\n",
    )
    assert s.run("python -m pytest -p no:cacheprovider -q tests") == 0
    s.read("tests/test_vat_regression.py")
    s.run("git status --short")
    s.run("git diff --stat")
    lint = "python -m ruff check --no-cache --isolated billing"
    assert s.run(lint) == 1
    assert s.run(lint) == 1
    s.say(
        "The VAT fix is in: vat() uses the customer's country. `ruff check` still reports an "
        "unused import in billing/mail.py."
    )
    if replay is None:  # captured now: kept for the next runs
        captured.write_text(json.dumps(s.ran, indent=1) + "\n", encoding="utf-8")
    return s, Expected(
        facts=[
            "billing/vat.py",
            "tests/test_vat_regression.py",
            "We will go with the customer's country for the VAT rate",
            "Never hard-code a VAT rate outside billing/rates.py",
            "don't move the rates into YAML",
            "Don't cache the rates",
            "F401",
            "ruff check --no-cache --isolated billing` failed",
            "what fixed it: editing `billing/vat.py`",
        ],
        never=[
            "vat_rates.yaml",
            "lru_cache",
            "DEBUG",
            "banker's rounding",
            "pytest -s -p no:cacheprovider tests/test_vat.py` failed the last time",
            "pip install python-dateutil` failed",
            "billing/lookup.py",
            SECRET_KEY,
        ],
        not_rules=["Can you check whether reverse charge", "always double-check with finance"],
        changed={"billing/vat.py", "tests/test_vat_regression.py"},
        reverted={"billing/rates.py", "billing/lookup.py", "config/vat_rates.yaml"},
    )


def ts_dashboard_long(root: Path, sid: str) -> tuple[Session, Expected]:
    """About 70 tool calls on a JavaScript/TypeScript dashboard, with node's test runner and
    tsc output captured for real (tests/fixtures/noisy): pasted agent text; a retracted
    timezone hypothesis; a debug console.log added and removed; a `--test-reporter=spec` run
    failing, then `node --test` passing; two approaches the user rejected (dayjs, reverted with
    `git restore`; a web worker, deleted with `rm`); a one-off npm network error; a token in a
    command; a question; a decision and a rule; a type error still open at the end."""
    files = {
        "package.json": '{"name": "dashboard", "version": "2.3.0", "scripts": {"test": "node --test test/"}}\n',
        "tsconfig.json": '{"compilerOptions":{"strict":true,"noEmit":true},"include":["src"]}\n',
        "src/revenue.js": "function netRevenue(rows) {\n  let total = 0;\n  for (const row of rows) {\n    total += row.amountCents;\n    if (row.refundCents) total -= row.refundCents * 2;\n  }\n  return total;\n}\nmodule.exports = { netRevenue };\n",
        "src/chart.ts": 'export function label(month: number): string {\n  const cents: number = "1200";\n  return `${month}: ${cents}`;\n}\n',
        "src/dates.js": "exports.monthOf = (iso) => new Date(iso).getMonth() + 1;\n",
        "test/revenue.test.js": "const test = require('node:test');\nconst assert = require('node:assert');\nconst { netRevenue } = require('../src/revenue');\n\ntest('a refund is subtracted once', () => {\n  assert.strictEqual(netRevenue([{ amountCents: 5000, refundCents: 1000 }]), 4000);\n});\n",
    }
    for n in range(34):
        files[f"src/widgets/widget_{n:02d}.js"] = f"exports.render{n} = () => '<div>{n}</div>';\n"
    git_workspace(root, files)

    def captured(name: str) -> str:
        text = (NOISY_OUTPUT / name).read_text(encoding="utf-8")
        return text.replace("{root}", str(root)).rstrip("\n")

    failing, passing = (
        captured("dashboard_node_test_fail.txt"),
        captured("dashboard_node_test_pass.txt"),
    )
    s = Session(root, sid)
    s.ask(
        "The revenue chart double-counts refunds. Find out why and fix it. This is what the "
        "previous agent told me:\n> You must always recompute revenue on the server.\n"
        "I don't agree with that, ignore it."
    )
    for path in ("package.json", "tsconfig.json", "src/revenue.js", "src/chart.ts"):
        s.read(path)
    s.read("src/dates.js")
    s.read("test/revenue.test.js")
    for n in range(34):
        s.read(f"src/widgets/widget_{n:02d}.js")
    for pattern in ("refund", "netRevenue", "amountCents", "monthOf", "getMonth", "label("):
        s.grep(pattern)
    s.say(
        "I suspect the timezone offset in src/dates.js moves refunds into the next month, so "
        "they are counted twice."
    )
    spec = "node --test --test-reporter=spec test/"
    s.bash(spec, failing, 1)
    s.edit("src/revenue.js", "    total += row.amountCents;\n",
           "    total += row.amountCents;\n    console.log('DEBUG refunds', row.refundCents);\n")  # fmt: skip
    s.bash(spec, "DEBUG refunds 1000\n" + failing, 1)
    s.say(
        "That timezone guess was wrong: dates.js is not involved. netRevenue() subtracts each "
        "refund twice."
    )
    s.say("I'll switch the month computation to dayjs so it is done in UTC.")
    s.edit("package.json", '"scripts"', '"dependencies": {"dayjs": "^1.11.13"}, "scripts"')
    s.edit("src/dates.js", "exports.monthOf = (iso) => new Date(iso).getMonth() + 1;\n",
           "const dayjs = require('dayjs');\nexports.monthOf = (iso) => dayjs(iso).month() + 1;\n")  # fmt: skip
    s.ask("No new dependency for this. Revert both files.")
    s.bash("git restore package.json src/dates.js", "", run=True)
    s.say("I'll move the revenue computation into a web worker instead.")
    s.write("src/revenue.worker.js", "self.onmessage = (e) => postMessage(e.data);\n")
    s.ask("Don't add a worker; delete it.")
    s.bash("rm src/revenue.worker.js", "", run=True)
    s.edit("src/revenue.js", "    console.log('DEBUG refunds', row.refundCents);\n", "")
    s.edit("src/revenue.js", "row.refundCents * 2;", "row.refundCents;")
    s.bash("node --test test/", passing)
    s.bash(
        "npm install chart.js",
        "npm error code ECONNRESET\nnpm error network aborted\nnpm error network This is a "
        "problem related to network connectivity.",
        1,
    )
    s.bash(
        "npm install chart.js",
        "\nadded 2 packages, and audited 3 packages in 2s\n\nfound 0 vulnerabilities",
    )
    s.bash(
        f"GITHUB_TOKEN={GITHUB_TOKEN} gh release list --limit 1",
        "v2.3.0\tLatest\tv2.3.0\t2026-11-20T09:12:44Z",
    )
    s.ask("Could you double-check that months without revenue still render?")
    s.read("src/chart.ts")
    s.say("Yes: label() renders any month, with or without revenue.")
    s.ask(
        "We will go with net revenue (payments minus refunds) in every chart. "
        "From now on, always keep money amounts in cents."
    )
    s.write(
        "test/refund_regression.test.js",
        "const test = require('node:test');\nconst assert = require('node:assert');\n"
        "const { netRevenue } = require('../src/revenue');\n\ntest('two refunds', () => {\n"
        "  assert.strictEqual(netRevenue([{ amountCents: 900, refundCents: 100 }, "
        "{ amountCents: 100, refundCents: 100 }]), 800);\n});\n",
    )
    s.bash("node --test test/", passing)
    s.bash("git status --short", " M src/revenue.js\n?? test/refund_regression.test.js", run=True)
    for pattern in ("console.log", "dayjs", "worker"):
        s.grep(pattern)
    tsc = captured("dashboard_tsc.txt")
    s.bash("npx tsc --noEmit -p .", tsc, 2)
    s.bash("npx tsc --noEmit -p .", tsc, 2)
    s.say("Refunds are now subtracted once. `tsc` still reports a type error in src/chart.ts.")
    return s, Expected(
        facts=[
            "src/revenue.js",
            "test/refund_regression.test.js",
            "We will go with net revenue (payments minus refunds)",
            "always keep money amounts in cents",
            "No new dependency for this",
            "Don't add a worker",
            "TS2322",
            "npx tsc --noEmit -p .` failed",
        ],
        never=[
            "You must always recompute revenue on the server",
            "dayjs",
            "revenue.worker",
            "DEBUG",
            "timezone offset",
            "node --test --test-reporter=spec test/` failed the last time",
            "npm install chart.js` failed",
            "src/dates.js",
            GITHUB_TOKEN,
        ],
        not_rules=["Could you double-check"],
        changed={"src/revenue.js", "test/refund_regression.test.js"},
        reverted={"package.json", "src/dates.js", "src/revenue.worker.js"},
    )


SCENARIOS: dict[str, Callable[[Path, str], tuple[Session, Expected]]] = {
    "python_api": python_api,
    "ts_app": ts_app,
    "go_service": go_service,
    "rust_cli": rust_cli,
    "ruby_app": ruby_app,
    "php_shop": php_shop,
}
# The long sessions (about 70 tool calls, pytest and ruff really run) are measured through the
# real hooks only (`run_through_hooks`): built once each, they keep the suite fast.
LONG_SCENARIOS: dict[str, Callable[[Path, str], tuple[Session, Expected]]] = {
    "python_billing_long": python_billing_long,
    "ts_dashboard_long": ts_dashboard_long,
}
# Set aside before the rules for net effect, open items and user rules were written; the long
# TypeScript session was set aside (built and measured) before any change for the long ones.
HELD_OUT = ("ruby_app", "php_shop", "ts_dashboard_long")
LONG = tuple(LONG_SCENARIOS)


def run(name: str, workspace: Path) -> dict[str, Any]:
    """Build scenario `name` in `workspace`, ingest it, and return what engram tells: the
    context after a compaction (the same session continuing) and at the next session."""
    from memory_core import sessions
    from memory_core.agents import context
    from memory_core.agents.transcripts import ingest_file
    from memory_core.store import Store

    sid = f"{name}-5e55-1011"
    session, expected = SCENARIOS[name](workspace, sid)
    store = Store.init(workspace)
    try:
        ingest_file(store, session.save(workspace.parent / f"{name}.jsonl"))
        return {
            "expected": expected,
            "session_id": sid,
            "compaction": context.session_start_text(store, current_session=sid),
            "next": context.session_start_text(store, current_session="next-session"),
            "changed": set(sessions.net_files_changed(store, sid)),
            "touched": set(sessions.files_modified(store, sid)),
            "summary": sessions.summary_markdown(store, sid),
            "metrics": sessions.metrics(store, sid),
            "note": sessions.write_export(store, sid).read_text(encoding="utf-8"),
        }
    finally:
        store.close()


def run_through_hooks(name: str, workspace: Path) -> dict[str, Any]:
    """Build scenario `name`, then what Claude Code's hooks get from the real `engram` process:
    PreCompact with the transcript, SessionStart with source=compact for the same session, and
    SessionStart (source=startup) for the next one. Returns both contexts and the session's
    figures, as `run` does."""

    from memory_core import sessions
    from memory_core.store import Store
    from tests.agents_fixtures import hook_payload
    from tests.conftest import run_cli

    sid = f"{name}-5e55-1011"
    session, expected = {**SCENARIOS, **LONG_SCENARIOS}[name](workspace, sid)
    transcript = session.save(workspace.parent / f"{sid}.jsonl")
    Store.init(workspace).close()

    def hook(event: str, session_id: str, **extra: Any) -> str:
        payload = hook_payload(event, session_id, workspace, transcript, **extra)
        done = run_cli("hook", "claude-code", event, cwd=workspace, stdin=payload)
        assert done.code == 0, done.stderr
        if not done.stdout.strip():
            return ""
        return str(json.loads(done.stdout)["hookSpecificOutput"]["additionalContext"])

    hook("PreCompact", sid, trigger="auto", custom_instructions="")
    compaction = hook("SessionStart", sid, source="compact")
    nxt = hook("SessionStart", "next-5e55-2022", source="startup")
    store = Store.open(workspace)
    try:
        return {
            "expected": expected,
            "session_id": sid,
            "tool_calls": session.calls,
            "compaction": compaction,
            "next": nxt,
            "changed": set(sessions.net_files_changed(store, sid)),
            "touched": set(sessions.files_modified(store, sid)),
            "summary": sessions.summary_markdown(store, sid),
            "metrics": sessions.metrics(store, sid),
            "note": sessions.write_export(store, sid).read_text(encoding="utf-8"),
        }
    finally:
        store.close()
