// Runs a Python script with the repository's .venv interpreter when there is one (it has pip and
// the project's lock installed), else the first python3 on PATH.
const { spawnSync } = require("child_process");
const fs = require("fs");
const path = require("path");

const venv = path.resolve(__dirname, "..", "..", ".venv", "bin", "python");
const python = fs.existsSync(venv) ? venv : "python3";
const result = spawnSync(python, process.argv.slice(2), { stdio: "inherit" });
process.exit(result.status ?? 1);
