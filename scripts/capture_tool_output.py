"""Regenerate tests/fixtures/tool_output/<tool>/<case>.txt: the real output of the tools agents
run, each on a small broken program, wrapped the way an agent sees it.

Nothing in the corpus is hand-written: every case below is a tiny project with one mistake, the
command an agent would type, and the wrapper the agent's shell tool adds around the output
(Claude Code's Bash tool: `Exit code N` as the first line, then stdout and stderr interleaved;
npm, yarn and pnpm add their `> pkg@version script` banners and failure lines themselves; make
adds `make: *** [target] Error 1`). Not run in CI: it needs the tools installed (see the
`needs` of each case; a case whose tool is missing is skipped with a note) and takes minutes.

    .venv/bin/python scripts/capture_tool_output.py [--only TOOL] [--js-modules DIR]

`--js-modules` names a folder whose node_modules has jest, vitest, mocha, typescript, eslint,
@eslint/js, yarn and pnpm (`npm install` them there once). Every case runs in
/tmp/engram-broken/<case>, so the paths in the output are the same on every machine.

The held-out split (tests/fixtures/tool_output/manifest.json, `held_out`) was drawn once, by
`split()` below, before any rule was written from the corpus; re-running keeps it.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
OUT = REPO / "tests" / "fixtures" / "tool_output"
WORK = Path("/tmp/engram-broken")
PYTHON = str(REPO / ".venv" / "bin" / "python")


@dataclass
class Case:
    tool: str  # the folder: jest, pytest, make, ...
    name: str
    command: str  # as the agent typed it (run with bash -c)
    files: dict[str, str]
    needs: tuple[str, ...] = ()
    js: bool = False  # link node_modules in
    env: dict[str, str] = field(default_factory=dict)


PKG_JEST = '{"name": "shop", "version": "1.4.0", "private": true, "scripts": {"test": "jest"}}'
PKG_VITEST = '{"name": "ledger", "version": "0.3.1", "private": true, "type": "module", "scripts": {"test": "vitest run"}}'
PKG_MOCHA = '{"name": "mailer", "version": "2.0.0", "private": true, "scripts": {"test": "mocha"}}'
PKG_NODE = (
    '{"name": "queue", "version": "0.1.0", "private": true, "scripts": {"test": "node --test"}}'
)
PKG_TSC = '{"name": "web", "version": "1.0.0", "private": true, "scripts": {"build": "tsc -p ."}}'
PKG_ESLINT = '{"name": "lintme", "version": "1.0.0", "private": true, "type": "module", "scripts": {"lint": "eslint ."}}'
TSCONFIG = '{"compilerOptions": {"strict": true, "rootDir": "src", "outDir": "dist", "target": "es2020", "module": "commonjs"}, "include": ["src"]}'
ESLINT_CONFIG = """import js from "@eslint/js";
export default [js.configs.recommended, {languageOptions: {globals: {console: "readonly"}}}];
"""
CARGO = '[package]\nname = "{name}"\nversion = "0.1.0"\nedition = "2021"\n'
GOMOD = "module example.com/{name}\n\ngo 1.19\n"
# JUnit 5 with plugin versions pinned to ones a local repository commonly has (run offline).
POM = """<project xmlns="http://maven.apache.org/POM/4.0.0">
  <modelVersion>4.0.0</modelVersion>
  <groupId>com.example</groupId>
  <artifactId>{name}</artifactId>
  <version>1.0</version>
  <properties>
    <maven.compiler.release>17</maven.compiler.release>
    <project.build.sourceEncoding>UTF-8</project.build.sourceEncoding>
  </properties>
  <dependencies>
    <dependency><groupId>org.junit.jupiter</groupId><artifactId>junit-jupiter</artifactId><version>5.10.2</version><scope>test</scope></dependency>
  </dependencies>
  <build><plugins>
    <plugin><artifactId>maven-resources-plugin</artifactId><version>3.3.1</version></plugin>
    <plugin><artifactId>maven-compiler-plugin</artifactId><version>3.13.0</version></plugin>
    <plugin><artifactId>maven-surefire-plugin</artifactId><version>3.2.5</version></plugin>
  </plugins></build>
</project>
"""
JUNIT5_IMPORTS = "import static org.junit.jupiter.api.Assertions.assertEquals;\nimport org.junit.jupiter.api.Test;\n"

CASES: list[Case] = [
    # -- jest --------------------------------------------------------------------------------
    Case(
        "jest",
        "npm_test_typeerror",
        "npm test",
        {
            "package.json": PKG_JEST,
            "cart.js": "function total(cart) {\n  return cart.items.reduce((sum, item) => sum + item.price, 0);\n}\nmodule.exports = { total };\n",
            "cart.test.js": "const { total } = require('./cart');\n\ntest('total of an empty cart is 0', () => {\n  expect(total({})).toBe(0);\n});\n",
        },
        js=True,
    ),
    Case(
        "jest",
        "npx_assertion",
        "npx jest price.test.js",
        {
            "package.json": PKG_JEST,
            "price.js": "exports.withTax = (net) => net * 1.2;\n",
            "price.test.js": "const { withTax } = require('./price');\n\ntest('adds 19 percent VAT', () => {\n  expect(withTax(100)).toBe(119);\n});\n",
        },
        js=True,
    ),
    Case(
        "jest",
        "yarn_module_not_found",
        "yarn test",
        {
            "package.json": PKG_JEST,
            "app.test.js": "const config = require('./config/database');\n\ntest('has a host', () => {\n  expect(config.host).toBeDefined();\n});\n",
        },
        js=True,
    ),
    Case(
        "jest",
        "npm_test_async_rejection",
        "npm test -- --silent",
        {
            "package.json": PKG_JEST,
            "users.js": "exports.load = async (id) => { throw new Error(`user ${id} not found in table accounts_v2`); };\n",
            "users.test.js": "const { load } = require('./users');\n\ntest('loads user 42', async () => {\n  const user = await load(42);\n  expect(user.id).toBe(42);\n});\n",
        },
        js=True,
    ),
    # -- vitest ------------------------------------------------------------------------------
    Case(
        "vitest",
        "pnpm_test_assertion",
        "pnpm test",
        {
            "package.json": PKG_VITEST,
            "sum.js": "export const sum = (a, b) => a - b;\n",
            "sum.test.js": "import { expect, test } from 'vitest';\nimport { sum } from './sum.js';\n\ntest('adds', () => {\n  expect(sum(2, 3)).toBe(5);\n});\n",
        },
        js=True,
    ),
    Case(
        "vitest",
        "npx_reference_error",
        "npx vitest run",
        {
            "package.json": PKG_VITEST,
            "report.test.js": "import { expect, test } from 'vitest';\n\ntest('formats the report', () => {\n  expect(formatReport([])).toBe('');\n});\n",
        },
        js=True,
    ),
    Case(
        "vitest",
        "npm_test_import_missing",
        "npm test",
        {
            "package.json": PKG_VITEST,
            "invoice.test.js": "import { expect, test } from 'vitest';\nimport { invoice } from './src/invoice-builder.js';\n\ntest('builds', () => {\n  expect(invoice()).toBeTruthy();\n});\n",
        },
        js=True,
    ),
    # -- mocha -------------------------------------------------------------------------------
    Case(
        "mocha",
        "npm_test_assertion",
        "npm test",
        {
            "package.json": PKG_MOCHA,
            "test/slug.test.js": "const assert = require('node:assert');\nconst slug = (s) => s.toLowerCase();\n\ndescribe('slug', () => {\n  it('replaces spaces', () => {\n    assert.strictEqual(slug('Hello World'), 'hello-world');\n  });\n});\n",
        },
        js=True,
    ),
    Case(
        "mocha",
        "npx_typeerror",
        "npx mocha",
        {
            "package.json": PKG_MOCHA,
            "test/send.test.js": "const transport = null;\n\ndescribe('send', () => {\n  it('sends one mail', () => {\n    transport.sendMail({ to: 'a@example.com' });\n  });\n});\n",
        },
        js=True,
    ),
    Case(
        "mocha",
        "yarn_missing_module",
        "yarn test",
        {
            "package.json": PKG_MOCHA,
            "test/smtp.test.js": "const smtp = require('../lib/smtp-pool');\n\ndescribe('pool', () => {\n  it('opens', () => smtp.open());\n});\n",
        },
        js=True,
    ),
    # -- node's test runner ------------------------------------------------------------------
    Case(
        "node_test",
        "assertion",
        "node --test",
        {
            "test/queue.test.js": "const test = require('node:test');\nconst assert = require('node:assert');\n\ntest('dequeues in order', () => {\n  const q = [3, 1, 2];\n  assert.deepStrictEqual(q.sort(), [1, 2, 4]);\n});\n",
        },
    ),
    Case(
        "node_test",
        "thrown_error",
        "node --test test/",
        {
            "test/retry.test.js": "const test = require('node:test');\n\nfunction connect() {\n  throw new Error('ECONNREFUSED 127.0.0.1:6379 (redis queue \"jobs:high\")');\n}\n\ntest('connects', () => {\n  connect();\n});\n",
        },
    ),
    Case(
        "node_test",
        "npm_test_rangeerror",
        "npm test",
        {
            "package.json": PKG_NODE,
            "test/pad.test.js": "const test = require('node:test');\n\ntest('pads', () => {\n  'x'.repeat(-1);\n});\n",
        },
    ),
    # -- pytest ------------------------------------------------------------------------------
    Case(
        "pytest",
        "assertion",
        f"{PYTHON} -m pytest -p no:cacheprovider -q tests/test_discount.py",
        {
            "discount.py": "def discount(total):\n    return total * 0.9 if total > 100 else total\n",
            "tests/test_discount.py": "from discount import discount\n\n\ndef test_discount_at_the_threshold():\n    assert discount(100) == 90\n",
            "conftest.py": "",
        },
    ),
    Case(
        "pytest",
        "fixture_not_found",
        f"{PYTHON} -m pytest -p no:cacheprovider tests/test_orders.py",
        {
            "tests/test_orders.py": "def test_order_total(db_session):\n    assert db_session is not None\n",
        },
    ),
    Case(
        "pytest",
        "keyerror",
        f"{PYTHON} -m pytest -p no:cacheprovider -x tests",
        {
            "settings.py": "import os\n\n\ndef database_url():\n    return os.environ['ENGRAM_DATABASE_URL']\n",
            "tests/test_settings.py": "from settings import database_url\n\n\ndef test_database_url():\n    assert database_url().startswith('postgres')\n",
            "conftest.py": "",
        },
        env={"ENGRAM_DATABASE_URL": ""},
    ),
    Case(
        "pytest",
        "sqlite_no_such_table",
        f"{PYTHON} -m pytest -p no:cacheprovider tests/test_repo.py -s",
        {
            "repo.py": "import sqlite3\n\n\ndef count_sessions(path):\n    with sqlite3.connect(path) as db:\n        return db.execute('SELECT COUNT(*) FROM engram_sessions').fetchone()[0]\n",
            "tests/test_repo.py": "from repo import count_sessions\n\n\ndef test_count(tmp_path):\n    print('debug: db at', tmp_path)\n    assert count_sessions(tmp_path / 'x.db') == 0\n",
            "conftest.py": "",
        },
    ),
    Case(
        "pytest",
        "postgres_missing_database",
        f"{PYTHON} -m pytest -p no:cacheprovider -q tests/test_db.py",
        {
            "tests/test_db.py": "import psycopg2\n\n\ndef test_connects():\n    psycopg2.connect(host='127.0.0.1', port=5433, user='engram', password='engram', dbname='engram_test')\n",
        },
        # A PostgreSQL server listening on 127.0.0.1:5433 without that database, and Debian's
        # python3-psycopg2 (on PYTHONPATH).
        needs=("pg_ctlcluster",),
        env={"PYTHONPATH": "/usr/lib/python3/dist-packages"},
    ),
    # -- unittest ----------------------------------------------------------------------------
    Case(
        "unittest",
        "assertion",
        f"{PYTHON} -m unittest test_money",
        {
            "test_money.py": "import unittest\n\n\ndef cents(amount):\n    return int(amount * 100)\n\n\nclass CentsTest(unittest.TestCase):\n    def test_rounding(self):\n        self.assertEqual(cents(0.29), 29)\n\n\nif __name__ == '__main__':\n    unittest.main()\n",
        },
    ),
    Case(
        "unittest",
        "import_error",
        f"{PYTHON} -m unittest discover -s tests -t .",
        {
            "tests/__init__.py": "",
            "tests/test_mailer.py": "import unittest\n\nfrom mailer.templates import render_welcome\n\n\nclass T(unittest.TestCase):\n    def test_it(self):\n        render_welcome()\n",
        },
    ),
    Case(
        "unittest",
        "attribute_error",
        f"{PYTHON} -m unittest -v test_parser.py",
        {
            "test_parser.py": "import unittest\nimport json\n\n\nclass ParserTest(unittest.TestCase):\n    def test_reads_version(self):\n        config = json.loads('{\"version\": 2}')\n        self.assertEqual(config.version, 2)\n",
        },
    ),
    # -- mypy --------------------------------------------------------------------------------
    Case(
        "mypy",
        "arg_type",
        f"{PYTHON} -m mypy --no-incremental app.py",
        {
            "app.py": "def port(value: int) -> int:\n    return value\n\n\nport('8080')\n",
        },
    ),
    Case(
        "mypy",
        "attr_defined",
        f"{PYTHON} -m mypy --no-incremental --strict service.py",
        {
            "service.py": "class Store:\n    def get(self, key: str) -> str:\n        return key\n\n\ndef fetch(store: Store) -> str:\n    return store.fetch_one('sessions')\n",
        },
    ),
    Case(
        "mypy",
        "import_not_found",
        f"{PYTHON} -m mypy --no-incremental worker.py",
        {
            "worker.py": "import celery_tasks_internal\n\nprint(celery_tasks_internal)\n",
        },
    ),
    # -- ruff --------------------------------------------------------------------------------
    Case(
        "ruff",
        "undefined_name",
        f"{REPO}/.venv/bin/ruff check --no-cache --isolated views.py",
        {
            "views.py": "def render(request):\n    return template.render(request)\n",
        },
    ),
    Case(
        "ruff",
        "concise_unused_variable",
        f"{REPO}/.venv/bin/ruff check --no-cache --isolated --output-format concise jobs.py",
        {
            "jobs.py": "def run():\n    result = 1\n    return None\n",
        },
    ),
    Case(
        "ruff",
        "syntax_error",
        f"{REPO}/.venv/bin/ruff check --no-cache --isolated models.py",
        {
            "models.py": "class User:\n    def name(self)\n        return 'x'\n",
        },
    ),
    # -- tsc ---------------------------------------------------------------------------------
    Case(
        "tsc",
        "type_mismatch",
        "npx tsc -p .",
        {
            "package.json": PKG_TSC,
            "tsconfig.json": TSCONFIG,
            "src/config.ts": "export const port: number = process.env.PORT ?? '3000';\ndeclare const process: { env: Record<string, string | undefined> };\n",
        },
        js=True,
    ),
    Case(
        "tsc",
        "cannot_find_module",
        "npx tsc --noEmit -p .",
        {
            "package.json": PKG_TSC,
            "tsconfig.json": TSCONFIG,
            "src/index.ts": "import { createClient } from './lib/http-client';\n\nexport const client = createClient();\n",
        },
        js=True,
    ),
    Case(
        "tsc",
        "npm_run_build_property",
        "npm run build",
        {
            "package.json": PKG_TSC,
            "tsconfig.json": TSCONFIG,
            "src/user.ts": "interface User { id: number; name: string }\n\nexport function label(user: User): string {\n  return user.fullName.toUpperCase();\n}\n",
        },
        js=True,
    ),
    # -- eslint ------------------------------------------------------------------------------
    Case(
        "eslint",
        "no_undef",
        "npx eslint src",
        {
            "package.json": PKG_ESLINT,
            "eslint.config.js": ESLINT_CONFIG,
            "src/app.js": "export function start() {\n  return fetchSettings();\n}\n",
        },
        js=True,
    ),
    Case(
        "eslint",
        "npm_run_lint_unused",
        "npm run lint",
        {
            "package.json": PKG_ESLINT,
            "eslint.config.js": ESLINT_CONFIG,
            "src/cache.js": "export function get(key) {\n  const ttlSeconds = 60;\n  return key;\n}\n",
        },
        js=True,
    ),
    Case(
        "eslint",
        "parsing_error",
        "npx eslint .",
        {
            "package.json": PKG_ESLINT,
            "eslint.config.js": ESLINT_CONFIG,
            "src/router.js": "export const routes = {\n  home: '/',\n  about: '/about'\n  contact: '/contact',\n};\n",
        },
        js=True,
    ),
    # -- go ----------------------------------------------------------------------------------
    Case(
        "go_test",
        "failing_test",
        "go test ./...",
        {
            "go.mod": GOMOD.format(name="billing"),
            "billing.go": "package billing\n\nfunc Fee(amount int) int { return amount / 10 }\n",
            "billing_test.go": 'package billing\n\nimport "testing"\n\nfunc TestFee(t *testing.T) {\n\tif got := Fee(250); got != 26 {\n\t\tt.Errorf("Fee(250) = %d, want 26", got)\n\t}\n}\n',
        },
        needs=("go",),
        env={"GOFLAGS": "-mod=mod", "GOPROXY": "off"},
    ),
    Case(
        "go_test",
        "panic_nil_map",
        "go test -run TestRegister .",
        {
            "go.mod": GOMOD.format(name="registry"),
            "registry.go": "package registry\n\nvar handlers map[string]func()\n\nfunc Register(name string, h func()) { handlers[name] = h }\n",
            "registry_test.go": 'package registry\n\nimport "testing"\n\nfunc TestRegister(t *testing.T) {\n\tRegister("ping", func() {})\n}\n',
        },
        needs=("go",),
        env={"GOFLAGS": "-mod=mod", "GOPROXY": "off"},
    ),
    Case(
        "go_test",
        "build_failure_in_test",
        "go test ./...",
        {
            "go.mod": GOMOD.format(name="auth"),
            "auth.go": 'package auth\n\nfunc Check(token string) bool { return token != "" }\n',
            "auth_test.go": 'package auth\n\nimport "testing"\n\nfunc TestCheck(t *testing.T) {\n\tif !CheckToken("x") {\n\t\tt.Fatal("no")\n\t}\n}\n',
        },
        needs=("go",),
        env={"GOFLAGS": "-mod=mod", "GOPROXY": "off"},
    ),
    Case(
        "go_build",
        "unused_import",
        "go build ./...",
        {
            "go.mod": GOMOD.format(name="server"),
            "main.go": 'package main\n\nimport (\n\t"fmt"\n\t"os"\n)\n\nfunc main() {\n\tfmt.Println("up")\n}\n',
        },
        needs=("go",),
        env={"GOFLAGS": "-mod=mod", "GOPROXY": "off"},
    ),
    Case(
        "go_build",
        "type_mismatch",
        "go build -o /dev/null .",
        {
            "go.mod": GOMOD.format(name="limits"),
            "main.go": 'package main\n\nimport "fmt"\n\nfunc main() {\n\tvar limit int = "3"\n\tfmt.Println(limit)\n}\n',
        },
        needs=("go",),
        env={"GOFLAGS": "-mod=mod", "GOPROXY": "off"},
    ),
    # -- cargo -------------------------------------------------------------------------------
    Case(
        "cargo_test",
        "assert_eq",
        "cargo test --quiet --offline",
        {
            "Cargo.toml": CARGO.format(name="rounding"),
            "src/lib.rs": "pub fn round_up(n: u32, to: u32) -> u32 { n / to * to }\n\n#[cfg(test)]\nmod tests {\n    #[test]\n    fn rounds_up() {\n        assert_eq!(super::round_up(7, 5), 10);\n    }\n}\n",
        },
        needs=("cargo",),
    ),
    Case(
        "cargo_test",
        "unwrap_none",
        "cargo test --offline",
        {
            "Cargo.toml": CARGO.format(name="lookup"),
            "src/lib.rs": 'use std::collections::HashMap;\n\npub fn region(code: &str) -> String {\n    let map: HashMap<&str, &str> = HashMap::from([("de", "EU")]);\n    map.get(code).expect("unknown country code in REGIONS table").to_string()\n}\n\n#[cfg(test)]\nmod tests {\n    #[test]\n    fn france() {\n        assert_eq!(super::region("fr"), "EU");\n    }\n}\n',
        },
        needs=("cargo",),
    ),
    Case(
        "cargo_build",
        "mismatched_types",
        "cargo build --offline",
        {
            "Cargo.toml": CARGO.format(name="retry"),
            "src/main.rs": 'fn attempts() -> u32 {\n    "3"\n}\n\nfn main() {\n    println!("{}", attempts());\n}\n',
        },
        needs=("cargo",),
    ),
    Case(
        "cargo_build",
        "unresolved_import",
        "cargo build --quiet --offline",
        {
            "Cargo.toml": CARGO.format(name="relay"),
            "src/main.rs": "use crate::transport::Socket;\n\nfn main() {\n    let _s: Option<Socket> = None;\n}\n",
        },
        needs=("cargo",),
    ),
    # -- ruby --------------------------------------------------------------------------------
    Case(
        "rspec",
        "expectation",
        "rspec spec/cart_spec.rb",
        {
            "spec/cart_spec.rb": "def total(items) = items.sum { |i| i[:price] }\n\nRSpec.describe 'cart' do\n  it 'applies the coupon' do\n    expect(total([{ price: 10 }, { price: 5 }])).to eq(12)\n  end\nend\n",
        },
        needs=("rspec",),
    ),
    Case(
        "rspec",
        "no_method_error",
        "rspec --no-color spec",
        {
            "spec/user_spec.rb": "class User\n  def initialize(name) = @name = name\nend\n\nRSpec.describe User do\n  it 'has an email' do\n    expect(User.new('ada').email).to include('@')\n  end\nend\n",
        },
        needs=("rspec",),
    ),
    Case(
        "rspec",
        "load_error",
        "rspec spec/mailer_spec.rb",
        {
            "spec/mailer_spec.rb": "require_relative '../lib/mailer/smtp_settings'\n\nRSpec.describe 'mailer' do\n  it('sends') { expect(1).to eq(1) }\nend\n",
        },
        needs=("rspec",),
    ),
    Case(
        "minitest",
        "assert_equal",
        "ruby -Ilib -Itest test/test_slug.rb",
        {
            "test/test_slug.rb": "require 'minitest/autorun'\n\ndef slug(s) = s.downcase\n\nclass SlugTest < Minitest::Test\n  def test_spaces\n    assert_equal 'hello-world', slug('Hello World')\n  end\nend\n",
        },
        needs=("ruby",),
    ),
    Case(
        "minitest",
        "name_error",
        "ruby test/test_invoice.rb",
        {
            "test/test_invoice.rb": "require 'minitest/autorun'\n\nclass InvoiceTest < Minitest::Test\n  def test_total\n    assert_equal 3, InvoiceCalculator.new.total\n  end\nend\n",
        },
        needs=("ruby",),
    ),
    Case(
        "minitest",
        "rake_test",
        "rake test",
        {
            "Rakefile": "require 'rake/testtask'\nRake::TestTask.new { |t| t.pattern = 'test/test_*.rb' }\n",
            "test/test_ttl.rb": "require 'minitest/autorun'\n\nclass TtlTest < Minitest::Test\n  def test_ttl\n    cache = {}\n    assert_equal 60, cache.fetch(:ttl_seconds)\n  end\nend\n",
        },
        needs=("rake",),
    ),
    # -- phpunit -----------------------------------------------------------------------------
    Case(
        "phpunit",
        "assert_same",
        "phpunit tests",
        {
            "tests/PriceTest.php": "<?php\nuse PHPUnit\\Framework\\TestCase;\n\nfinal class PriceTest extends TestCase\n{\n    public function testNetPrice(): void\n    {\n        $this->assertSame(100, (int) round(119 / 1.2));\n    }\n}\n",
        },
        needs=("phpunit",),
    ),
    Case(
        "phpunit",
        "undefined_function",
        "phpunit tests/MailerTest.php",
        {
            "tests/MailerTest.php": "<?php\nuse PHPUnit\\Framework\\TestCase;\n\nfinal class MailerTest extends TestCase\n{\n    public function testSend(): void\n    {\n        $this->assertTrue(send_welcome_mail('ada@example.com'));\n    }\n}\n",
        },
        needs=("phpunit",),
    ),
    Case(
        "phpunit",
        "type_error",
        "phpunit --colors=never tests",
        {
            "tests/ConfigTest.php": "<?php\nuse PHPUnit\\Framework\\TestCase;\n\nfunction port(int $value): int { return $value; }\n\nfinal class ConfigTest extends TestCase\n{\n    public function testPort(): void\n    {\n        $this->assertSame(8080, port('eighty'));\n    }\n}\n",
        },
        needs=("phpunit",),
    ),
    # -- JUnit through maven and gradle ------------------------------------------------------
    Case(
        "maven",
        "assertion",
        "mvn -o -q -B test",
        {
            "pom.xml": POM.format(name="billing"),
            "src/main/java/com/example/Fee.java": "package com.example;\n\npublic class Fee {\n    public static int of(int amount) { return amount / 10; }\n}\n",
            "src/test/java/com/example/FeeTest.java": "package com.example;\n\n"
            + JUNIT5_IMPORTS
            + "\npublic class FeeTest {\n    @Test\n    public void roundsUp() {\n        assertEquals(26, Fee.of(250));\n    }\n}\n",
        },
        needs=("mvn",),
    ),
    Case(
        "maven",
        "compile_error",
        "mvn -o test",
        {
            "pom.xml": POM.format(name="inventory"),
            "src/main/java/com/example/Stock.java": "package com.example;\n\npublic class Stock {\n    public int count() { return warehouseCount; }\n}\n",
        },
        needs=("mvn",),
    ),
    Case(
        "maven",
        "null_pointer",
        "mvn -o -B test",
        {
            "pom.xml": POM.format(name="profiles"),
            "src/main/java/com/example/Profile.java": 'package com.example;\n\nimport java.util.Map;\n\npublic class Profile {\n    public static int age(Map<String, Integer> fields) { return fields.get("age"); }\n}\n',
            "src/test/java/com/example/ProfileTest.java": "package com.example;\n\n"
            + JUNIT5_IMPORTS
            + "import java.util.Map;\n\npublic class ProfileTest {\n    @Test\n    public void missingAge() {\n        assertEquals(0, Profile.age(Map.of()));\n    }\n}\n",
        },
        needs=("mvn",),
    ),
    Case(
        "gradle",
        "assertion",
        "gradle test --offline",
        {
            "build.gradle": "apply plugin: 'java'\nrepositories { mavenLocal() }\ndependencies { testImplementation 'junit:junit:4.13.2' }\n"
            "test { testLogging { events 'failed'; exceptionFormat 'full' } }\n",
            "settings.gradle": "rootProject.name = 'billing'\n",
            "src/main/java/com/example/Fee.java": "package com.example;\n\npublic class Fee {\n    public static int of(int amount) { return amount / 10; }\n}\n",
            "src/test/java/com/example/FeeTest.java": "package com.example;\n\nimport static org.junit.Assert.assertEquals;\nimport org.junit.Test;\n\npublic class FeeTest {\n    @Test\n    public void roundsUp() {\n        assertEquals(26, Fee.of(250));\n    }\n}\n",
        },
        needs=("gradle",),
    ),
    Case(
        "gradle",
        "compile_error",
        "gradle build --offline",
        {
            "build.gradle": "apply plugin: 'java'\n",
            "settings.gradle": "rootProject.name = 'inventory'\n",
            "src/main/java/com/example/Stock.java": "package com.example;\n\npublic class Stock {\n    public int count() { return warehouseCount; }\n}\n",
        },
        needs=("gradle",),
    ),
    # -- make --------------------------------------------------------------------------------
    Case(
        "make",
        "gcc_error",
        "make",
        {
            "Makefile": "app: main.c\n\tcc -Wall -o app main.c\n",
            "main.c": '#include <stdio.h>\n\nint main(void) {\n    printf("%d\\n", retries);\n    return 0;\n}\n',
        },
        needs=("cc",),
    ),
    Case(
        "make",
        "make_test_pytest",
        "make test",
        {
            "Makefile": f"test:\n\t{PYTHON} -m pytest -p no:cacheprovider -q tests\n",
            "tests/test_env.py": "import os\n\n\ndef test_env():\n    assert os.environ['STRIPE_WEBHOOK_SECRET_NAME'] == 'x'\n",
            "conftest.py": "",
        },
    ),
    Case(
        "make",
        "no_rule",
        "make -C . dist",
        {
            "Makefile": "dist: build/bundle.js\n\tcp build/bundle.js dist/\n",
        },
    ),
]


# -- a second held-out set: captured after the rules were written, and never tuned on --------
FRESH_CASES: list[Case] = [
    Case(
        "jest",
        "fresh_to_equal",
        "npx jest",
        {
            "package.json": PKG_JEST,
            "user.test.js": "test('builds a user', () => {\n  expect({ name: 'ada', role: 'user' }).toEqual({ name: 'ada', role: 'admin' });\n});\n",
        },
        js=True,
    ),
    Case(
        "jest",
        "fresh_suite_syntax_error",
        "npm test",
        {
            "package.json": PKG_JEST,
            "parse.js": "module.exports = function parse(s) {\n  return s.split(',')\n}}\n",
            "parse.test.js": "const parse = require('./parse');\n\ntest('splits', () => {\n  expect(parse('a,b')).toEqual(['a', 'b']);\n});\n",
        },
        js=True,
    ),
    Case(
        "vitest",
        "fresh_async_throw",
        "npx vitest run",
        {
            "package.json": PKG_VITEST,
            "fetch.test.js": "import { test } from 'vitest';\n\nasync function load() {\n  throw new Error('quota exceeded for bucket invoices-eu');\n}\n\ntest('loads', async () => {\n  await load();\n});\n",
        },
        js=True,
    ),
    Case(
        "mocha",
        "fresh_assert_ok",
        "npx mocha",
        {
            "package.json": PKG_MOCHA,
            "test/flags.test.js": "const assert = require('node:assert');\n\ndescribe('flags', () => {\n  it('enables beta', () => {\n    const flags = { beta: false };\n    assert.ok(flags.beta, 'feature flag beta_checkout is off');\n  });\n});\n",
        },
        js=True,
    ),
    Case(
        "node_test",
        "fresh_equal",
        "node --test test/",
        {
            "test/count.test.js": "const test = require('node:test');\nconst assert = require('node:assert');\n\ntest('counts words', () => {\n  assert.strictEqual('a b c'.split(' ').length, 4);\n});\n",
        },
    ),
    Case(
        "pytest",
        "fresh_value_error",
        f"{PYTHON} -m pytest -p no:cacheprovider -q tests/test_parse.py",
        {
            "parse.py": "def port(text):\n    return int(text)\n",
            "tests/test_parse.py": "from parse import port\n\n\ndef test_port():\n    assert port('80a') == 80\n",
            "conftest.py": "",
        },
    ),
    Case(
        "pytest",
        "fresh_conftest_import",
        f"{PYTHON} -m pytest -p no:cacheprovider tests",
        {
            "tests/conftest.py": "import factory_boy_models\n",
            "tests/test_a.py": "def test_a():\n    assert True\n",
        },
    ),
    Case(
        "unittest",
        "fresh_assert_in",
        f"{PYTHON} -m unittest test_roles",
        {
            "test_roles.py": "import unittest\n\n\nclass RolesTest(unittest.TestCase):\n    def test_admin(self):\n        self.assertIn('admin', ['user', 'guest'])\n",
        },
    ),
    Case(
        "mypy",
        "fresh_missing_return",
        f"{PYTHON} -m mypy --no-incremental calc.py",
        {
            "calc.py": "def sign(x: int) -> int:\n    if x > 0:\n        return 1\n    elif x < 0:\n        return -1\n",
        },
    ),
    Case(
        "ruff",
        "fresh_none_comparison",
        f"{REPO}/.venv/bin/ruff check --no-cache --isolated --select E711 checks.py",
        {
            "checks.py": "def empty(value):\n    return value == None\n",
        },
    ),
    Case(
        "tsc",
        "fresh_argument_type",
        "npx tsc --noEmit -p .",
        {
            "package.json": PKG_TSC,
            "tsconfig.json": TSCONFIG,
            "src/retry.ts": "function retry(times: number): number { return times; }\n\nexport const n = retry('three');\n",
        },
        js=True,
    ),
    Case(
        "eslint",
        "fresh_unreachable",
        "npx eslint src",
        {
            "package.json": PKG_ESLINT,
            "eslint.config.js": ESLINT_CONFIG,
            "src/exit.js": "export function stop() {\n  return 1;\n  console.log('stopped');\n}\n",
        },
        js=True,
    ),
    Case(
        "go_build",
        "fresh_missing_return",
        "go vet ./... && go build ./...",
        {
            "go.mod": GOMOD.format(name="pick"),
            "pick.go": "package pick\n\nfunc First(xs []int) int {\n\tfor _, x := range xs {\n\t\treturn x\n\t}\n}\n",
        },
        needs=("go",),
        env={"GOFLAGS": "-mod=mod", "GOPROXY": "off"},
    ),
    Case(
        "go_test",
        "fresh_fatalf",
        "go test ./...",
        {
            "go.mod": GOMOD.format(name="codec"),
            "codec.go": 'package codec\n\nimport "strconv"\n\nfunc Decode(s string) (int, error) { return strconv.Atoi(s) }\n',
            "codec_test.go": 'package codec\n\nimport "testing"\n\nfunc TestDecode(t *testing.T) {\n\tif _, err := Decode("0x1f"); err != nil {\n\t\tt.Fatalf("Decode(0x1f): %v", err)\n\t}\n}\n',
        },
        needs=("go",),
        env={"GOFLAGS": "-mod=mod", "GOPROXY": "off"},
    ),
    Case(
        "cargo_build",
        "fresh_no_method",
        "cargo build --offline",
        {
            "Cargo.toml": CARGO.format(name="words"),
            "src/main.rs": 'fn main() {\n    let n = "a b".word_count();\n    println!("{n}");\n}\n',
        },
        needs=("cargo",),
    ),
    Case(
        "cargo_test",
        "fresh_assert",
        "cargo test --offline",
        {
            "Cargo.toml": CARGO.format(name="limits"),
            "src/lib.rs": 'pub fn limit() -> u32 { 3 }\n\n#[cfg(test)]\nmod tests {\n    #[test]\n    fn limit_is_at_least_five() {\n        assert!(super::limit() >= 5, "retry limit too low for the EU gateway");\n    }\n}\n',
        },
        needs=("cargo",),
    ),
    Case(
        "rspec",
        "fresh_raise_error",
        "rspec spec/parser_spec.rb",
        {
            "spec/parser_spec.rb": "def parse(s) = Integer(s, exception: false)\n\nRSpec.describe 'parse' do\n  it 'rejects junk' do\n    expect { parse('x') }.to raise_error(ArgumentError)\n  end\nend\n",
        },
        needs=("rspec",),
    ),
    Case(
        "minitest",
        "fresh_assert_nil",
        "ruby test/test_session.rb",
        {
            "test/test_session.rb": "require 'minitest/autorun'\n\nclass SessionTest < Minitest::Test\n  def test_logout_clears_token\n    session = { token: 'abc123' }\n    assert_nil session[:token]\n  end\nend\n",
        },
        needs=("ruby",),
    ),
    Case(
        "phpunit",
        "fresh_assert_count",
        "phpunit tests",
        {
            "tests/CartTest.php": "<?php\nuse PHPUnit\\Framework\\TestCase;\n\nfinal class CartTest extends TestCase\n{\n    public function testItems(): void\n    {\n        $this->assertCount(3, ['apple', 'pear']);\n    }\n}\n",
        },
        needs=("phpunit",),
    ),
    Case(
        "maven",
        "fresh_assert_true",
        "mvn -o -q -B test",
        {
            "pom.xml": POM.format(name="flags"),
            "src/test/java/com/example/FlagTest.java": 'package com.example;\n\nimport static org.junit.jupiter.api.Assertions.assertTrue;\nimport org.junit.jupiter.api.Test;\n\npublic class FlagTest {\n    @Test\n    public void betaIsOn() {\n        assertTrue(false, "flag beta_checkout must be on in staging");\n    }\n}\n',
        },
        needs=("mvn",),
    ),
    Case(
        "gradle",
        "fresh_exception",
        "gradle test --offline",
        {
            "build.gradle": "apply plugin: 'java'\nrepositories { mavenLocal() }\ndependencies { testImplementation 'junit:junit:4.13.2' }\n"
            "test { testLogging { events 'failed'; exceptionFormat 'full' } }\n",
            "settings.gradle": "rootProject.name = 'orders'\n",
            "src/test/java/com/example/OrderTest.java": 'package com.example;\n\nimport org.junit.Test;\n\npublic class OrderTest {\n    @Test\n    public void parsesQuantity() {\n        Integer.parseInt("twelve");\n    }\n}\n',
        },
        needs=("gradle",),
    ),
    Case(
        "make",
        "fresh_go_build",
        "make build",
        {
            "Makefile": "build:\n\tgo build ./...\n",
            "go.mod": GOMOD.format(name="tool"),
            "main.go": "package main\n\nfunc main() {\n\tprintln(undefinedThing)\n}\n",
        },
        needs=("go",),
        env={"GOFLAGS": "-mod=mod", "GOPROXY": "off"},
    ),
]


# Tools split as one family, so every family has a held-out case: go test and go build, cargo
# test and cargo build, JUnit under maven and gradle.
FAMILIES = {
    "go_test": "go",
    "go_build": "go",
    "cargo_test": "cargo",
    "cargo_build": "cargo",
    "maven": "junit",
    "gradle": "junit",
}


def split(cases: list[Case]) -> set[str]:
    """The held-out cases: a third of the first corpus, and every case of the second."""
    return _split_first(cases) | {f"{c.tool}/{c.name}" for c in cases if c in FRESH_CASES}


def _split_first(cases: list[Case]) -> set[str]:
    """The held-out third: within each family of tools, the cases whose hash comes last in the
    family's cases ordered by hash, a third of them rounded (at least one where there are two)."""
    held: set[str] = set()
    by_family: dict[str, list[str]] = {}
    for case in cases:
        if case in FRESH_CASES:
            continue
        family = FAMILIES.get(case.tool, case.tool)
        by_family.setdefault(family, []).append(f"{case.tool}/{case.name}")
    for keys in by_family.values():
        ordered = sorted(keys, key=lambda k: hashlib.sha256(k.encode()).hexdigest())
        count = max(1, round(len(ordered) / 3)) if len(ordered) >= 2 else 0
        held.update(ordered[len(ordered) - count :])
    return held


def wrap(exit_code: int, output: str) -> str:
    """What Claude Code's Bash tool gives the agent for a command that failed."""
    return f"Exit code {exit_code}\n{output}" if exit_code else output


def run(case: Case, js_modules: Path | None) -> tuple[int, str] | None:
    for program in case.needs:
        if shutil.which(program) is None:
            print(f"{case.tool}/{case.name}: {program} is not installed, skipped")
            return None
    folder = WORK / f"{case.tool}-{case.name}"
    shutil.rmtree(folder, ignore_errors=True)
    for relative, text in case.files.items():
        target = folder / relative
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text, encoding="utf-8")
    # A small environment of its own: reproducible, and nothing of this machine's environment
    # (pytest prints os.environ when a key is missing from it) ends up in the corpus.
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": os.environ.get("HOME", "/root"),
        "LANG": "C.UTF-8",
        "TERM": "dumb",
        "NO_COLOR": "1",
        "FORCE_COLOR": "0",
        "CI": "1",
        **case.env,
    }
    if case.js:
        if js_modules is None:
            print(f"{case.tool}/{case.name}: no --js-modules, skipped")
            return None
        (folder / "node_modules").symlink_to(js_modules / "node_modules")
        env["PATH"] = f"{js_modules / 'node_modules' / '.bin'}:{env['PATH']}"
    if "pytest" in case.name or case.tool == "pytest":
        env.setdefault("PYTHONDONTWRITEBYTECODE", "1")
    done = subprocess.run(
        ["bash", "-c", case.command],
        cwd=folder,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        errors="replace",
        timeout=600,
        check=False,
    )
    return done.returncode, done.stdout


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--only", help="capture the cases of one tool folder")
    parser.add_argument("--js-modules", type=Path, help="a folder with node_modules")
    parser.add_argument(
        "--second-set", action="store_true", help="capture only the second held-out set"
    )
    parser.add_argument(
        "--third-set", action="store_true", help="capture only the third set (a third held out)"
    )
    args = parser.parse_args()
    manifest_path = OUT / "manifest.json"
    manifest = json.loads(manifest_path.read_text()) if manifest_path.exists() else {"cases": {}}
    from tool_output_third_set import THIRD_CASES, split_third

    third = {f"{case.tool}/{case.name}": error for case, error in THIRD_CASES}
    # The quoted .NET cases (no SDK here) take part in the third set's split as well.
    third_keys = list(third) + [k for k, e in manifest["cases"].items() if e.get("quoted")]
    everything = CASES + FRESH_CASES + [case for case, _ in THIRD_CASES]
    held = split(CASES + FRESH_CASES) | split_third(third_keys)
    for case in everything:
        key = f"{case.tool}/{case.name}"
        if args.only and case.tool != args.only:
            continue
        if args.second_set and case not in FRESH_CASES:
            continue
        if args.third_set and key not in third:
            continue
        result = run(case, args.js_modules)
        if result is None:
            continue
        code, output = result
        target = OUT / case.tool / f"{case.name}.txt"
        target.parent.mkdir(parents=True, exist_ok=True)
        # The repository's own path (make echoes the command) is machine-specific.
        target.write_text(wrap(code, output.replace(str(REPO), "<repo>")), encoding="utf-8")
        entry = manifest["cases"].get(key, {})
        entry.update({"command": case.command.replace(str(REPO), "<repo>"), "exit_code": code})
        entry["held_out"] = key in held
        if case in FRESH_CASES:
            entry["second_set"] = True
        if key in third:
            entry["third_set"] = True
            entry["error"] = list(third[key])
        manifest["cases"][key] = entry
        print(f"{key}: exit {code}{' (held out)' if key in held else ''}")
    manifest["cases"] = dict(sorted(manifest["cases"].items()))
    manifest_path.write_text(json.dumps(manifest, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
