// Tokenises sample files with vscode-textmate + vscode-oniguruma, the engine VS Code itself
// uses, with VS Code's own Python, JavaScript and Markdown grammars (from the code-server
// install: ENGRAM_VSCODE_GRAMMARS or the editors cache) and engram's injection grammars from
// syntax/, and asserts the scopes of the tokens a person would see highlighted.
// Run: node --test test/   (tests/e2e/test_syntax.py runs it under pytest)
const assert = require("node:assert/strict");
const fs = require("node:fs");
const os = require("node:os");
const path = require("node:path");
const { test } = require("node:test");

const vsctm = require("vscode-textmate");
const oniguruma = require("vscode-oniguruma");

const SYNTAX = path.resolve(__dirname, "..", "..", "syntax");
const BUILTIN =
  process.env.ENGRAM_VSCODE_GRAMMARS ??
  path.join(
    process.env.ENGRAM_EDITORS_CACHE ?? path.join(process.env.XDG_CACHE_HOME ?? path.join(os.homedir(), ".cache"), "engram-editors"),
    "code-server/node_modules/code-server/lib/vscode/extensions",
  );

const GRAMMARS = {
  "source.python": path.join(BUILTIN, "python/syntaxes/MagicPython.tmLanguage.json"),
  "source.js": path.join(BUILTIN, "javascript/syntaxes/JavaScript.tmLanguage.json"),
  "text.html.markdown": path.join(BUILTIN, "markdown-basics/syntaxes/markdown.tmLanguage.json"),
  "text.html.basic": path.join(BUILTIN, "html/syntaxes/html.tmLanguage.json"),
  "engram.annotations.injection": path.join(SYNTAX, "engram-annotations.tmLanguage.json"),
  "engram.ids.injection": path.join(SYNTAX, "engram-ids.tmLanguage.json"),
};
// As package.json's "injectTo" says.
const INJECTIONS = {
  "source.python": ["engram.annotations.injection"],
  "source.js": ["engram.annotations.injection"],
  "text.html.markdown": ["engram.annotations.injection", "engram.ids.injection"],
};

const missing = Object.values(GRAMMARS).filter((file) => !fs.existsSync(file));
const skip = missing.length ? `grammars not installed (${missing[0]}): run scripts/setup-editors.sh` : false;

let registry;
function getRegistry() {
  if (registry) {
    return registry;
  }
  const wasm = fs.readFileSync(require.resolve("vscode-oniguruma/release/onig.wasm")).buffer;
  const onigLib = oniguruma.loadWASM(wasm).then(() => ({
    createOnigScanner: (patterns) => new oniguruma.OnigScanner(patterns),
    createOnigString: (text) => new oniguruma.OnigString(text),
  }));
  registry = new vsctm.Registry({
    onigLib,
    loadGrammar: async (scopeName) => {
      const file = GRAMMARS[scopeName];
      if (!file) {
        return null; // Languages embedded in Markdown fences that these tests do not need.
      }
      return vsctm.parseRawGrammar(fs.readFileSync(file, "utf8"), file);
    },
    getInjections: (scopeName) => INJECTIONS[scopeName],
  });
  return registry;
}

/** Every token of `text` as {text, scopes, line}. */
async function tokenize(scopeName, text) {
  const grammar = await getRegistry().loadGrammar(scopeName);
  assert.ok(grammar, `grammar ${scopeName} did not load`);
  let state = vsctm.INITIAL;
  const tokens = [];
  text.split("\n").forEach((line, index) => {
    const result = grammar.tokenizeLine(line, state);
    for (const token of result.tokens) {
      tokens.push({ text: line.slice(token.startIndex, token.endIndex), scopes: token.scopes, line: index + 1 });
    }
    state = result.ruleStack;
  });
  return tokens;
}

function scopesOf(tokens, text, nth = 0) {
  const found = tokens.filter((token) => token.text === text);
  assert.ok(found.length > nth, `no token ${JSON.stringify(text)} in ${JSON.stringify(tokens.map((t) => t.text))}`);
  return found[nth].scopes;
}

function tokensWith(tokens, scope) {
  return tokens.filter((token) => token.scopes.some((s) => s.startsWith(scope)));
}

test("a Python # gotcha: comment: keyword, separator and text scoped, inside the comment", { skip }, async () => {
  const tokens = await tokenize(
    "source.python",
    "import pandas as pd\nframe = pd.read_csv(path)  # gotcha: read_csv drops leading zeros, pass dtype=str\n",
  );
  const keyword = scopesOf(tokens, "gotcha");
  assert.ok(keyword.includes("keyword.other.gotcha.engram"), keyword.join(" "));
  assert.ok(keyword.some((s) => s.startsWith("comment.line.number-sign")), "the annotation stays a comment");
  assert.ok(scopesOf(tokens, ":").includes("punctuation.separator.gotcha.engram"));
  const text = tokensWith(tokens, "markup.bold.gotcha-text.engram").map((t) => t.text).join("");
  assert.equal(text, "read_csv drops leading zeros, pass dtype=str");
  // The code before the comment is untouched.
  assert.ok(!scopesOf(tokens, "read_csv").some((s) => s.includes("engram")));
});

test("GOTCHA: in a JavaScript line comment, with a gotcha id scoped inside the text", { skip }, async () => {
  const tokens = await tokenize("source.js", "// GOTCHA: fetch() never rejects on 404, see G-1a2b3c4d\nfetch(url);\n");
  assert.ok(scopesOf(tokens, "GOTCHA").includes("keyword.other.gotcha.engram"));
  const id = scopesOf(tokens, "G-1a2b3c4d");
  assert.ok(id.includes("constant.other.reference.gotcha.engram"), id.join(" "));
  assert.ok(id.includes("meta.annotation.gotcha.engram"));
  // The next line is code again.
  assert.ok(!tokens.filter((t) => t.line === 2).some((t) => t.scopes.some((s) => s.includes("engram"))));
});

test("a block comment's annotation ends at */ and the code after it is code", { skip }, async () => {
  const tokens = await tokenize("source.js", "/* gotcha: close the stream */ stream.close();\n");
  assert.ok(scopesOf(tokens, "gotcha").includes("keyword.other.gotcha.engram"));
  const text = tokensWith(tokens, "markup.bold.gotcha-text.engram").map((t) => t.text).join("");
  assert.equal(text.trim(), "close the stream");
  const end = tokens.find((t) => t.text.includes("*/"));
  assert.ok(end && !end.scopes.includes("meta.annotation.gotcha.engram"));
  assert.ok(!tokens.filter((t) => t.text.includes("close()") || t.text === "close").some((t) => t.scopes.some((s) => s.includes("engram"))));
});

test("GOTCHA(high): and every severity the server reads: keyword, severity and text scoped", { skip }, async () => {
  // memory_core/gotchas/scan.py ANNOTATION: gotcha, an optional (critical|high|medium|low), a colon.
  const lines = [
    "# GOTCHA(high): the cache key ignores the locale",
    "x = 1  # gotcha(critical): never log the token",
    "# Gotcha (medium): retries double the latency",
    "# gotcha(low) : a typo in the docs",
  ];
  const tokens = await tokenize("source.python", lines.join("\n") + "\n");
  const severities = tokens.filter((t) => t.scopes.includes("constant.language.severity.gotcha.engram"));
  assert.deepEqual(severities.map((t) => t.text), ["high", "critical", "medium", "low"]);
  for (const severity of severities) {
    assert.ok(severity.scopes.includes("meta.annotation.gotcha.engram"));
    assert.ok(severity.scopes.some((s) => s.startsWith("comment.line.number-sign")), "still a comment");
  }
  const keywords = tokensWith(tokens, "keyword.other.gotcha.engram").map((t) => t.text);
  assert.deepEqual(keywords, ["GOTCHA", "gotcha", "Gotcha", "gotcha"]);
  for (const line of [1, 2, 3, 4]) {
    const text = tokens
      .filter((t) => t.line === line && t.scopes.includes("markup.bold.gotcha-text.engram"))
      .map((t) => t.text)
      .join("");
    assert.equal(text, lines[line - 1].split(":").slice(1).join(":").trim(), `line ${line}`);
  }
  assert.ok(scopesOf(tokens, "(").includes("punctuation.definition.severity.begin.gotcha.engram"));
});

test("an unknown severity is no annotation, as for the server", { skip }, async () => {
  const tokens = await tokenize("source.python", "# gotcha(urgent): not a severity the server knows\n");
  assert.deepEqual(tokensWith(tokens, "keyword.other.gotcha.engram"), []);
  assert.deepEqual(tokensWith(tokens, "meta.annotation.gotcha.engram"), []);
});

test("gotcha: inside a string or in code is not an annotation", { skip }, async () => {
  const tokens = await tokenize("source.python", 'label = "gotcha: not a comment"\ngotcha = 1\nx = "G-1a2b3c4d"\n');
  assert.deepEqual(tokensWith(tokens, "keyword.other.gotcha.engram"), []);
  assert.deepEqual(tokensWith(tokens, "constant.other.reference"), []);
});

test("a word ending in gotcha (nogotcha:) is not an annotation", { skip }, async () => {
  const tokens = await tokenize("source.python", "# nogotcha: plain words\n");
  assert.deepEqual(tokensWith(tokens, "keyword.other.gotcha.engram"), []);
});

test("engram ids in a Markdown export: each kind has its scope, lookalikes have none", { skip }, async () => {
  const markdown = [
    "# Gotchas",
    "",
    "## G-1a2b3c4d: read_csv drops leading zeros",
    "",
    "- seen in session S-0123abcd, fixed after checkpoint C-89abcdef",
    "- memory M-deadbeef; deleted as D-00ff00ff",
    "- agent session 3f2a9c1e-7b4d-4e8f-9a1b-2c3d4e5f6a7b",
    "- not ids: XG-1a2b3c4d, G-1a2b3c4dz, G-12345, g-1a2b3c4d",
    "",
  ].join("\n");
  const tokens = await tokenize("text.html.markdown", markdown);
  const expectations = {
    "G-1a2b3c4d": "constant.other.reference.gotcha.engram",
    "S-0123abcd": "constant.other.reference.session.engram",
    "C-89abcdef": "constant.other.reference.checkpoint.engram",
    "M-deadbeef": "constant.other.reference.memory.engram",
    "D-00ff00ff": "constant.other.reference.deletion.engram",
    "3f2a9c1e-7b4d-4e8f-9a1b-2c3d4e5f6a7b": "constant.other.reference.session.engram",
  };
  for (const [id, scope] of Object.entries(expectations)) {
    assert.ok(scopesOf(tokens, id).includes(scope), `${id}: ${scopesOf(tokens, id).join(" ")}`);
  }
  // The id in the heading keeps the heading's scope too.
  assert.ok(scopesOf(tokens, "G-1a2b3c4d").some((s) => s.startsWith("markup.heading")));
  const lookalikes = tokens.filter((t) => t.line === 8);
  assert.deepEqual(lookalikes.filter((t) => t.scopes.some((s) => s.startsWith("constant.other.reference"))), []);
});

test("an HTML comment in Markdown can carry a gotcha annotation", { skip }, async () => {
  const tokens = await tokenize("text.html.markdown", "Intro.\n\n<!-- gotcha: the table renders only on GitHub -->\n");
  assert.ok(scopesOf(tokens, "gotcha").includes("keyword.other.gotcha.engram"));
  const text = tokensWith(tokens, "markup.bold.gotcha-text.engram").map((t) => t.text).join("");
  assert.equal(text.trim(), "the table renders only on GitHub");
});
