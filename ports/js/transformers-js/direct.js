// direct --vocab PATH.gguf: the same JSON-lines requests answered by calling transformers.js
// (@huggingface/transformers 4.3.2) as its documentation shows, on the tokenizer.json that
// Python transformers made from the GGUF (convert.py, run by build.sh), sharing no code with
// serve.js; the harness compares the two programs' answers (adapter check, issue 31).
//   env.localModelPath / env.allowRemoteModels = false   ("Use custom models" / offline setup)
//   AutoTokenizer.from_pretrained(name)
//   tokenizer.encode(text, {add_special_tokens})
//   tokenizer.decode(ids, {skip_special_tokens})
import {spawnSync} from "node:child_process";
import crypto from "node:crypto";
import fs from "node:fs";
import path from "node:path";
import readline from "node:readline";
import {fileURLToPath} from "node:url";
import {AutoTokenizer, env} from "@huggingface/transformers";

const here = path.dirname(fileURLToPath(import.meta.url));
const out = (o) => fs.writeSync(Number(process.env.PORT_OUT_FD ?? 1), JSON.stringify(o) + "\n");
const hex = (s) => Buffer.from(s, "utf8").toString("hex");  // decode gives a JS string

// The converted files: convert.py writes build/tokenizers/<file name>-<sha256[:16]>/ (its
// docstring); build.sh converts every pinned vocab, and a vocab it did not is converted now.
const gguf = path.resolve(process.argv[3]);
const root = path.join(here, "build", "tokenizers");
const name = `${path.basename(gguf)}-${crypto.createHash("sha256").update(fs.readFileSync(gguf)).digest("hex").slice(0, 16)}`;
if (!fs.existsSync(path.join(root, name)))
    spawnSync(path.join(here, ".venv", "bin", "python"), [path.join(here, "convert.py"), root, gguf], {stdio: ["ignore", 2, 2]});

let tokenizer, failed;
const why = path.join(root, name, "unsupported.txt");
if (fs.existsSync(why)) {
    failed = `unsupported: transformers cannot convert the GGUF: ${fs.readFileSync(why, "utf8").trim()}`;
} else {
    try {
        env.localModelPath = root;
        env.allowRemoteModels = false;
        tokenizer = await AutoTokenizer.from_pretrained(name);
    } catch (e) {
        failed = `unsupported: transformers.js cannot load ${path.join(root, name)}: ${e?.message ?? e}`;
    }
}

// A call the package refuses (it throws) is not expressible with it.
function call(f) {
    try {
        return f();
    } catch (e) {
        return {error: `unsupported: transformers.js throws: ${e?.message ?? e}`};
    }
}

function answer(r) {
    if (failed) return {error: failed};
    switch (r.op) {
        case "info":
            return {vocab_size: tokenizer.get_vocab().size};
        case "encode":
            // Every added token in tokenizer.json is matched in the text: no switch turns that off.
            if (!r.parse_special) return {error: "unsupported: tokenizer.encode always matches added tokens"};
            return call(() => ({ids: tokenizer.encode(r.text, {add_special_tokens: r.add_special})}));
        case "decode":
            // skip_special_tokens drops every special token, as llama.cpp renders a control token
            // without unparse_special (as ""); with unparse_special, all are kept, BOS/EOS too.
            if (r.remove_special && r.unparse_special)
                return {error: "unsupported: skip_special_tokens cannot drop BOS/EOS and keep the other special tokens"};
            return call(() => ({bytes_hex: hex(tokenizer.decode(r.ids, {skip_special_tokens: !r.unparse_special}))}));
        case "piece":
            return {error: "unsupported: transformers.js has no call giving one token's piece"};
        default:
            return {error: `unknown op ${JSON.stringify(r.op)}`};
    }
}

for await (const line of readline.createInterface({input: process.stdin, crlfDelay: Infinity})) {
    try {
        out(answer(JSON.parse(line)));
    } catch (e) {
        out({error: `direct raised: ${e?.message ?? e}`});
    }
}
process.exit(0);
