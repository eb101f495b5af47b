"""The third set of real tool output (tests/fixtures/tool_output, `third_set` in the manifest):
failure kinds the first two sets did not have (snapshot mismatches, timeouts, panics, assertion
diffs, collection and import errors, linker errors, many errors at once, JSON reporters, go vet,
cargo clippy, bun test, deno test, plain `node`/`python`/`ruby`/`java` runs, `php -l`).

Each case carries `error`, the identifying part of the real error, written with its program and
before anything was captured or any rule changed; a third of the set was held out by hash at
the same time (`split_third`). Captured by scripts/capture_tool_output.py --third-set.
"""

from __future__ import annotations

import hashlib

from capture_tool_output import (
    CARGO,
    ESLINT_CONFIG,
    GOMOD,
    PKG_JEST,
    PKG_MOCHA,
    PKG_VITEST,
    POM,
    PYTHON,
    REPO,
    TSCONFIG,
    Case,
)

GO_ENV = {"GOFLAGS": "-mod=mod", "GOPROXY": "off"}
PKG_TSC = '{"name": "web", "version": "1.0.0", "private": true, "scripts": {"build": "tsc -p ."}}'
PKG_ESLINT = '{"name": "lintme", "version": "1.0.0", "private": true, "type": "module"}'
GRADLE_JUNIT4 = (
    "apply plugin: 'java'\nrepositories { mavenLocal() }\n"
    "dependencies { testImplementation 'junit:junit:4.13.2' }\n"
)

THIRD_CASES: list[tuple[Case, tuple[str, ...]]] = [
    # -- JavaScript ----------------------------------------------------------------------------
    (
        Case(
            "jest",
            "third_snapshot_mismatch",
            "npx jest --ci",
            {
                "package.json": PKG_JEST,
                "format.js": "exports.label = (u) => `${u.name} <${u.email}>`;\n",
                "format.test.js": "const { label } = require('./format');\n\ntest('label', () => {\n  expect(label({ name: 'Ada', email: 'ada@example.com' })).toMatchSnapshot();\n});\n",
                "__snapshots__/format.test.js.snap": '// Jest Snapshot v1, https://jestjs.io/docs/snapshot-testing\n\nexports[`label 1`] = `"Ada Lovelace <ada@example.com>"`;\n',
            },
            js=True,
        ),
        ("toMatchSnapshot", "label 1"),
    ),
    (
        Case(
            "jest",
            "third_timeout",
            "npm test",
            {
                "package.json": PKG_JEST,
                "sync.test.js": "test('syncs the ledger', async () => {\n  await new Promise((resolve) => setTimeout(resolve, 1000));\n}, 100);\n",
            },
            js=True,
        ),
        ("Exceeded timeout of 100 ms",),
    ),
    (
        Case(
            "vitest",
            "third_inline_snapshot",
            "npx vitest run",
            {
                "package.json": PKG_VITEST,
                "slug.test.js": "import { expect, test } from 'vitest';\n\nconst slug = (s) => s.toLowerCase().replace(' ', '_');\n\ntest('slugs', () => {\n  expect(slug('Hello World')).toMatchInlineSnapshot(`\"hello-world\"`);\n});\n",
            },
            js=True,
        ),
        ("Snapshot", "mismatched"),
    ),
    (
        Case(
            "vitest",
            "third_timeout",
            "npm test",
            {
                "package.json": PKG_VITEST,
                "poll.test.js": "import { test } from 'vitest';\n\ntest('polls the queue', async () => {\n  await new Promise((resolve) => setTimeout(resolve, 500));\n}, 50);\n",
            },
            js=True,
        ),
        ("Test timed out in 50ms",),
    ),
    (
        Case(
            "mocha",
            "third_timeout",
            "npx mocha",
            {
                "package.json": PKG_MOCHA,
                "test/connect.test.js": "describe('smtp', function () {\n  it('connects', function (done) {\n    this.timeout(50);\n  });\n});\n",
            },
            js=True,
        ),
        ("Timeout of 50ms exceeded",),
    ),
    (
        Case(
            "mocha",
            "third_deep_equal",
            "npm test",
            {
                "package.json": PKG_MOCHA,
                "test/headers.test.js": "const assert = require('node:assert');\n\ndescribe('headers', () => {\n  it('keeps retry settings', () => {\n    assert.deepStrictEqual({ retries: 3, backoff: [1, 2] }, { retries: 3, backoff: [1, 4] });\n  });\n});\n",
            },
            js=True,
        ),
        ("Expected values to be strictly deep-equal",),
    ),
    (
        Case(
            "tsc",
            "third_many_errors",
            "npx tsc --noEmit -p .",
            {
                "package.json": PKG_TSC,
                "tsconfig.json": TSCONFIG,
                "src/a_client.ts": "export function client(): number {\n  return retryPolicy.attempts;\n}\nexport const name: string = 42;\n",
                "src/b_routes.ts": "import { client } from './a_client';\nexport const n: string = client();\nexport function route(path: string) { return path.size; }\n",
                "src/c_store.ts": "export const ttl: number = '60';\nexport const keys: string[] = [1, 2];\nexport function get(k: string): string { return k.missing(); }\n",
            },
            js=True,
        ),
        ("TS2304: Cannot find name 'retryPolicy'",),
    ),
    (
        Case(
            "eslint",
            "third_json_format",
            "npx eslint -f json src",
            {
                "package.json": PKG_ESLINT,
                "eslint.config.js": ESLINT_CONFIG,
                "src/orders.js": "export function run(order) {\n  return processOrder(order);\n}\n",
            },
            js=True,
        ),
        ("'processOrder' is not defined",),
    ),
    (
        Case(
            "node_run",
            "third_esm_module_not_found",
            "node src/server.mjs",
            {
                "src/server.mjs": "import { health } from './routes/health.mjs';\n\nconsole.log(health());\n",
            },
        ),
        ("ERR_MODULE_NOT_FOUND", "routes/health.mjs"),
    ),
    (
        Case(
            "bun_test",
            "third_to_be",
            "bun test",
            {
                "total.test.ts": "import { expect, test } from 'bun:test';\n\nconst total = (xs: number[]) => xs.reduce((a, b) => a + b, 0);\n\ntest('adds the basket', () => {\n  expect(total([1, 2])).toBe(4);\n});\n",
            },
            needs=("bun",),
        ),
        ("Expected: 4", "Received: 3"),
    ),
    (
        Case(
            "bun_test",
            "third_thrown_error",
            "bun test",
            {
                "invoice.test.ts": "import { test } from 'bun:test';\n\nfunction customerOf(id: number): string {\n  throw new Error(`invoice ${id} has no customer`);\n}\n\ntest('finds the customer', () => {\n  customerOf(7);\n});\n",
            },
            needs=("bun",),
        ),
        ("invoice 7 has no customer",),
    ),
    (
        Case(
            "bun_test",
            "third_module_not_found",
            "bun test",
            {
                "tax.test.ts": "import { test, expect } from 'bun:test';\nimport { rate } from './lib/tax-rates';\n\ntest('rate', () => {\n  expect(rate('DE')).toBe(0.19);\n});\n",
            },
            needs=("bun",),
        ),
        ("./lib/tax-rates",),
    ),
    (
        Case(
            "deno_test",
            "third_thrown_error",
            "deno test",
            {
                "cache_test.ts": "Deno.test('writes through the cache', () => {\n  const cache = new Map<string, string>();\n  if (!cache.has('users:42')) {\n    throw new Error('cache key users:42 missing after write');\n  }\n});\n",
            },
            needs=("deno",),
            env={"DENO_NO_UPDATE_CHECK": "1"},
        ),
        ("cache key users:42 missing after write",),
    ),
    (
        Case(
            "deno_test",
            "third_type_error",
            "deno test",
            {
                "limit_test.ts": "const limit: number = 'five';\n\nDeno.test('limit', () => {\n  if (limit !== 5) throw new Error('bad');\n});\n",
            },
            needs=("deno",),
            env={"DENO_NO_UPDATE_CHECK": "1"},
        ),
        ("TS2322", "Type 'string' is not assignable to type 'number'"),
    ),
    # -- Python --------------------------------------------------------------------------------
    (
        Case(
            "pytest",
            "third_collection_syntax_error",
            f"{PYTHON} -m pytest -p no:cacheprovider -q tests",
            {
                "tests/test_cart.py": "def test_total(:\n    assert True\n",
                "tests/test_ok.py": "def test_ok():\n    assert True\n",
            },
        ),
        ("SyntaxError", "test_cart.py"),
    ),
    (
        Case(
            "pytest",
            "third_dict_diff",
            f"{PYTHON} -m pytest -p no:cacheprovider -q tests/test_config.py",
            {
                "config.py": "def load_config():\n    return {'host': 'db.internal', 'port': 5432, 'pool': 5}\n",
                "tests/test_config.py": "from config import load_config\n\n\ndef test_defaults():\n    assert load_config() == {'host': 'db.internal', 'port': 5432, 'pool': 10}\n",
                "conftest.py": "",
            },
        ),
        ("'pool': 5",),
    ),
    (
        Case(
            "pytest",
            "third_timeout_expired",
            f"{PYTHON} -m pytest -p no:cacheprovider -q tests/test_worker.py",
            {
                "tests/test_worker.py": "import subprocess\n\n\ndef test_worker_exits():\n    subprocess.run(['sleep', '5'], timeout=0.2, check=True)\n",
            },
        ),
        ("TimeoutExpired", "Command '['sleep', '5']' timed out"),
    ),
    (
        Case(
            "pytest",
            "third_cannot_import_name",
            f"{PYTHON} -m pytest -p no:cacheprovider tests/test_tax.py",
            {
                "billing/__init__.py": "",
                "billing/tax.py": "def compute_tax(amount):\n    return amount * 0.19\n",
                "tests/test_tax.py": "from billing.tax import compute_vat\n\n\ndef test_vat():\n    assert compute_vat(100) == 19\n",
                "conftest.py": "",
            },
        ),
        ("cannot import name 'compute_vat'",),
    ),
    (
        Case(
            "python_run",
            "third_module_not_found",
            f"{PYTHON} manage.py migrate",
            {
                "manage.py": "import sys\n\nimport yaml_config_loader\n\nyaml_config_loader.load(sys.argv[1:])\n",
            },
        ),
        ("No module named 'yaml_config_loader'",),
    ),
    (
        Case(
            "unittest",
            "third_setup_class_error",
            f"{PYTHON} -m unittest test_orders",
            {
                "test_orders.py": "import unittest\n\n\nclass OrdersTest(unittest.TestCase):\n    @classmethod\n    def setUpClass(cls):\n        raise RuntimeError('fixture database orders_test is locked')\n\n    def test_list(self):\n        self.assertTrue(True)\n",
            },
        ),
        ("fixture database orders_test is locked",),
    ),
    (
        Case(
            "mypy",
            "third_many_errors",
            f"{PYTHON} -m mypy --no-incremental a_rates.py b_orders.py c_users.py",
            {
                "a_rates.py": "def rate(code: str) -> int:\n    return code\n",
                "b_orders.py": "from a_rates import rate\n\n\ndef total(n: int) -> str:\n    return rate(n)\n",
                "c_users.py": "def name(user: dict[str, str]) -> int:\n    return user.get('name')\n\n\nx: list[int] = ['a']\n",
            },
        ),
        # Written as a_rates.py's error, expecting mypy to report files in the order given;
        # mypy printed c_users.py's first. Corrected after the held-out figure (15 of 16).
        ('Incompatible return value type (got "str | None", expected "int")',),
    ),
    (
        Case(
            "ruff",
            "third_json_format",
            f"{REPO}/.venv/bin/ruff check --no-cache --isolated --output-format json tasks.py",
            {"tasks.py": "import os\n\n\ndef run():\n    return 1\n"},
        ),
        ("`os` imported but unused",),
    ),
    # -- Go ------------------------------------------------------------------------------------
    (
        Case(
            "go_vet",
            "third_printf",
            "go vet ./...",
            {
                "go.mod": GOMOD.format(name="greet"),
                "greet.go": 'package greet\n\nimport "fmt"\n\nfunc Hello(name string) {\n\tfmt.Printf("hello %d\\n", name)\n}\n',
            },
            needs=("go",),
            env=GO_ENV,
        ),
        ("fmt.Printf format %d has arg name of wrong type string",),
    ),
    (
        Case(
            "go_test",
            "third_index_out_of_range",
            "go test ./...",
            {
                "go.mod": GOMOD.format(name="ring"),
                "ring.go": "package ring\n\nfunc At(xs []int, i int) int { return xs[i] }\n",
                "ring_test.go": 'package ring\n\nimport "testing"\n\nfunc TestAt(t *testing.T) {\n\tif At([]int{1, 2, 3}, 3) != 0 {\n\t\tt.Fatal("want 0")\n\t}\n}\n',
            },
            needs=("go",),
            env=GO_ENV,
        ),
        ("index out of range [3] with length 3",),
    ),
    (
        Case(
            "go_test",
            "third_timeout",
            "go test -timeout 1s ./...",
            {
                "go.mod": GOMOD.format(name="poller"),
                "poll_test.go": 'package poller\n\nimport (\n\t"testing"\n\t"time"\n)\n\nfunc TestPoll(t *testing.T) {\n\ttime.Sleep(3 * time.Second)\n}\n',
            },
            needs=("go",),
            env=GO_ENV,
        ),
        ("test timed out after 1s",),
    ),
    (
        Case(
            "go_build",
            "third_missing_module",
            "go build ./...",
            {
                "go.mod": GOMOD.format(name="gateway"),
                "main.go": 'package main\n\nimport "github.com/acme/ratelimit"\n\nfunc main() {\n\tratelimit.New()\n}\n',
            },
            needs=("go",),
            env=GO_ENV,
        ),
        ("github.com/acme/ratelimit",),
    ),
    # -- Rust ----------------------------------------------------------------------------------
    (
        Case(
            "cargo_clippy",
            "third_eq_op",
            "cargo clippy --offline -- -D warnings",
            {
                "Cargo.toml": CARGO.format(name="quota"),
                "src/main.rs": 'fn main() {\n    let used = std::env::args().count();\n    if used == used {\n        println!("full");\n    }\n}\n',
            },
            needs=("cargo",),
        ),
        ("equal expressions as operands to `==`",),
    ),
    (
        Case(
            "cargo_test",
            "third_should_panic",
            "cargo test --offline",
            {
                "Cargo.toml": CARGO.format(name="divide"),
                "src/lib.rs": "pub fn divide(a: u32, b: u32) -> u32 { if b == 0 { 0 } else { a / b } }\n\n#[cfg(test)]\nmod tests {\n    #[test]\n    #[should_panic]\n    fn rejects_zero() {\n        super::divide(1, 0);\n    }\n}\n",
            },
            needs=("cargo",),
        ),
        ("did not panic as expected",),
    ),
    (
        Case(
            "cargo_build",
            "third_borrow_moved",
            "cargo build --offline",
            {
                "Cargo.toml": CARGO.format(name="batch"),
                "src/main.rs": 'fn main() {\n    let jobs = vec![1, 2, 3];\n    let queued = jobs;\n    println!("{:?} {:?}", jobs, queued);\n}\n',
            },
            needs=("cargo",),
        ),
        ("E0382", "borrow of moved value: `jobs`"),
    ),
    (
        Case(
            "cargo_build",
            "third_warning_first",
            "cargo build --offline",
            {
                "Cargo.toml": CARGO.format(name="fetcher"),
                "src/main.rs": 'fn main() {\n    let unused_timeout = 30;\n    println!("{}", retries);\n}\n',
            },
            needs=("cargo",),
        ),
        ("cannot find value `retries` in this scope",),
    ),
    # -- Ruby ----------------------------------------------------------------------------------
    (
        Case(
            "rspec",
            "third_syntax_error",
            "rspec spec/price_spec.rb",
            {
                "spec/price_spec.rb": "RSpec.describe 'price' do\n  it 'rounds' do\n    expect(1.005.round(2)).to eq(1.01\n  end\nend\n",
            },
            needs=("rspec",),
        ),
        ("syntax error",),
    ),
    (
        Case(
            "minitest",
            "third_nil_error",
            "ruby test/test_import.rb",
            {
                "test/test_import.rb": "require 'minitest/autorun'\n\nclass ImportTest < Minitest::Test\n  def test_header\n    row = { name: nil }\n    assert_equal 'ada', row[:name].strip\n  end\nend\n",
            },
            needs=("ruby",),
        ),
        ("undefined method `strip' for nil",),
    ),
    (
        Case(
            "ruby_run",
            "third_name_error",
            "ruby app.rb",
            {"app.rb": "gateway = PaymentGateway.new(timeout: 30)\nputs gateway\n"},
            needs=("ruby",),
        ),
        ("uninitialized constant PaymentGateway",),
    ),
    # -- PHP -----------------------------------------------------------------------------------
    (
        Case(
            "phpunit",
            "third_exception",
            "phpunit tests",
            {
                "tests/PaymentTest.php": "<?php\nuse PHPUnit\\Framework\\TestCase;\n\nfinal class PaymentTest extends TestCase\n{\n    public function testCharge(): void\n    {\n        throw new RuntimeException('payment gateway timeout after 30s');\n    }\n}\n",
            },
            needs=("phpunit",),
        ),
        ("payment gateway timeout after 30s",),
    ),
    (
        Case(
            "php_lint",
            "third_parse_error",
            "php -l src/Cart.php",
            {
                "src/Cart.php": "<?php\nfinal class Cart\n{\n    public function total(): int\n    {\n        return array_sum($this->items\n    }\n}\n",
            },
            needs=("php",),
        ),
        ("Unclosed '(' on line 6",),
    ),
    # -- Java ----------------------------------------------------------------------------------
    (
        Case(
            "maven",
            "third_assert_throws",
            "mvn -o -q -B test",
            {
                "pom.xml": POM.format(name="quantities"),
                "src/test/java/com/example/QuantityTest.java": "package com.example;\n\nimport static org.junit.jupiter.api.Assertions.assertThrows;\nimport org.junit.jupiter.api.Test;\n\npublic class QuantityTest {\n    @Test\n    public void rejectsNegative() {\n        assertThrows(IllegalArgumentException.class, () -> Integer.valueOf(-5));\n    }\n}\n",
            },
            needs=("mvn",),
        ),
        ("Expected java.lang.IllegalArgumentException to be thrown, but nothing was thrown",),
    ),
    (
        Case(
            "gradle",
            "third_incompatible_types",
            "gradle build --offline",
            {
                "build.gradle": GRADLE_JUNIT4,
                "settings.gradle": "rootProject.name = 'stock'\n",
                "src/main/java/com/example/Stock.java": 'package com.example;\n\npublic class Stock {\n    public int count() {\n        int n = "five";\n        return n;\n    }\n}\n',
            },
            needs=("gradle",),
        ),
        ("incompatible types: String cannot be converted to int",),
    ),
    (
        Case(
            "java_run",
            "third_array_index",
            "java Main.java",
            {
                "Main.java": 'public class Main {\n    public static void main(String[] args) {\n        String[] regions = {"eu", "us", "ap"};\n        System.out.println(regions[5]);\n    }\n}\n',
            },
            needs=("java",),
        ),
        ("ArrayIndexOutOfBoundsException", "Index 5 out of bounds for length 3"),
    ),
    # -- make ----------------------------------------------------------------------------------
    (
        Case(
            "make",
            "third_command_not_found",
            "make lint",
            {"Makefile": "lint:\n\tflake9 src\n", "src/app.py": "x = 1\n"},
        ),
        ("flake9",),
    ),
    (
        Case(
            "make",
            "third_link_error",
            "make",
            {
                "Makefile": "app: main.c\n\tcc -o app main.c\n",
                "main.c": '#include <stdio.h>\n\ndouble compute_tax(double amount);\n\nint main(void) {\n    printf("%f\\n", compute_tax(10.0));\n    return 0;\n}\n',
            },
            needs=("cc",),
        ),
        ("undefined reference to `compute_tax'",),
    ),
]

# Families as in the first split: tools of one ecosystem share a family, so each has a held-out
# case.
THIRD_FAMILIES = {
    "jest": "js-test", "vitest": "js-test", "mocha": "js-test", "bun_test": "js-test",
    "deno_test": "js-test", "node_run": "js-run", "tsc": "js-check", "eslint": "js-check",
    "pytest": "python", "unittest": "python", "python_run": "python", "mypy": "python-check",
    "ruff": "python-check", "go_vet": "go", "go_test": "go", "go_build": "go",
    "cargo_clippy": "rust", "cargo_test": "rust", "cargo_build": "rust", "rspec": "ruby",
    "minitest": "ruby", "ruby_run": "ruby", "phpunit": "php", "php_lint": "php",
    "maven": "java", "gradle": "java", "java_run": "java", "make": "make",
    "dotnet_test": "dotnet",
}  # fmt: skip


def split_third(keys: list[str]) -> set[str]:
    """A third of each family, by hash: the keys whose sha256 comes last, rounded, at least one
    where a family has two or more. Drawn before any of these cases was captured."""
    by_family: dict[str, list[str]] = {}
    for key in keys:
        by_family.setdefault(THIRD_FAMILIES.get(key.split("/")[0], key), []).append(key)
    held: set[str] = set()
    for family_keys in by_family.values():
        ordered = sorted(family_keys, key=lambda k: hashlib.sha256(k.encode()).hexdigest())
        count = max(1, round(len(ordered) / 3)) if len(ordered) >= 2 else 0
        held.update(ordered[len(ordered) - count :])
    return held
