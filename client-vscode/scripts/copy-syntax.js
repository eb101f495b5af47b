// Copies the grammars kept at the repository root (syntax/) into out/syntax so that they ship
// inside the .vsix (vsce packages only what lies under the extension's folder).
const fs = require("fs");
const path = require("path");

const source = path.resolve(__dirname, "..", "..", "syntax");
const target = path.resolve(__dirname, "..", "out", "syntax");
// vsce writes the package into build/ but does not create it.
fs.mkdirSync(path.resolve(__dirname, "..", "build"), { recursive: true });
fs.mkdirSync(target, { recursive: true });
for (const name of fs.readdirSync(source)) {
  if (name.endsWith(".tmLanguage.json")) {
    fs.copyFileSync(path.join(source, name), path.join(target, name));
  }
}

// The extension ships under the repository's license; vsce wants the file beside package.json.
fs.copyFileSync(path.resolve(__dirname, "..", "..", "LICENSE"), path.resolve(__dirname, "..", "LICENSE"));
