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

import subprocess
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

    def __init__(self, root: Path, session_id: str) -> None:
        self.root = root
        self.t = Transcript(session_id, root)
        self.calls = 0

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


SCENARIOS: dict[str, Callable[[Path, str], tuple[Session, Expected]]] = {
    "python_api": python_api,
    "ts_app": ts_app,
    "go_service": go_service,
    "rust_cli": rust_cli,
    "ruby_app": ruby_app,
    "php_shop": php_shop,
}
# Set aside before the rules for net effect, open items and user rules were written.
HELD_OUT = ("ruby_app", "php_shop")


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
