// A JavaScript port with a bug no catalogue entry models: before a text goes to the tokenizer, a
// run of whitespace at its start is tidied into one space (text.replace(/^\s+/, " "), JavaScript's
// \s). Everything else is the harness tokenizer, whose server this wraps:
//
//     node tests/ports/js/leading_ws.js --vocab V     (PYTHON names the interpreter; default python3)
//
// It speaks the protocol of `python -m harness serve` (JSON lines, batches included).
"use strict";
const { spawn } = require("child_process");
const readline = require("readline");

const server = spawn(process.env.PYTHON || "python3", ["-m", "harness", "serve", ...process.argv.slice(2)],
                     { stdio: ["pipe", "pipe", "inherit"] });
readline.createInterface({ input: server.stdout }).on("line", (line) => process.stdout.write(line + "\n"));

function tidy(req) {
  if (req.op === "encode" && typeof req.text === "string") req.text = req.text.replace(/^\s+/, " ");
  if (req.op === "batch" && Array.isArray(req.requests)) req.requests.forEach(tidy);
  return req;
}

readline.createInterface({ input: process.stdin })
  .on("line", (line) => {
    let req;
    try { req = JSON.parse(line); } catch (e) { server.stdin.write(line + "\n"); return; }
    server.stdin.write(JSON.stringify(tidy(req)) + "\n");
  })
  .on("close", () => server.stdin.end());
server.on("exit", (code) => process.exit(code || 0));
