// transformers.js (@huggingface/transformers) behind the llama.cpp conformance harness's JSON-lines protocol.
//
// Run: `serve --vocab ggml-vocab-qwen2.gguf`, then one request per stdin line:
//   {"op":"encode","text":"Hello","add_special":false,"parse_special":true} -> {"ids":[9707]}
// transformers.js reads tokenizer.json, not GGUF. Users get one from a GGUF with Python
// transformers (AutoTokenizer.from_pretrained(dir, gguf_file=...).save_pretrained(out)):
// convert.py does exactly that, once per vocab, into build/tokenizers/. Then the adapter
// calls transformers.js's public tokenizer API, as its users do:
//   tokenizer.encode(text, {add_special_tokens})      added tokens are always matched
//   tokenizer.decode(ids, {skip_special_tokens})      clean-up left at the converted default
import {spawnSync} from "node:child_process";
import crypto from "node:crypto";
import fs from "node:fs";
import path from "node:path";
import process from "node:process";
import {fileURLToPath} from "node:url";
import {AutoTokenizer, env} from "@huggingface/transformers";

const HERE = path.dirname(fileURLToPath(import.meta.url));
const LIBRARY = "@huggingface/transformers 4.3.2 (tokenizer.json from transformers 5.24.0)";
// transformers.js has no parse_special switch at call time: every added token is matched; and
// no call gives one token's piece (decode([id]) runs the decoders, e.g. SPM's leading-space
// strip, over a lone token: a detokenize, not token_to_piece).
const UNSUPPORTED = ["parse_special=false", "piece"];
const MAX_LINE = 64 << 20;
const OUT_FD = process.env.PORT_OUT_FD ? Number(process.env.PORT_OUT_FD) : 1;

class Unsupported extends Error {}

/**
 * The converted tokenizer directory of a vocab, build/tokenizers/<name>-<sha256[:16]>
 * (convert.py's name), converting it now if build.sh did not. A first conversion takes
 * 10-60 s: build.sh converts the repository's pinned vocabs ahead for that reason.
 */
function converted(vocabPath) {
    const root = path.join(HERE, "build", "tokenizers");
    const sha = crypto.createHash("sha256").update(fs.readFileSync(vocabPath)).digest("hex");
    const dir = path.join(root, `${path.basename(vocabPath)}-${sha.slice(0, 16)}`);
    if (!fs.existsSync(dir)) {
        const python = path.join(HERE, ".venv", "bin", "python");
        const run = spawnSync(python, [path.join(HERE, "convert.py"), root, vocabPath], {stdio: ["ignore", 2, 2]});
        if (run.status !== 0 || !fs.existsSync(dir))
            throw new Error(`convert.py failed (exit ${run.status ?? run.signal}${run.error ? ": " + run.error.message : ""})`);
    }
    return dir;
}

async function load(vocabPath) {
    let dir;
    try {
        dir = converted(vocabPath);
    } catch (e) {
        return {fatal: `cannot convert ${vocabPath}: ${e.message}`};  // an adapter failure, not "unsupported"
    }
    const why = path.join(dir, "unsupported.txt");
    if (fs.existsSync(why)) return {error: `transformers cannot convert the GGUF: ${fs.readFileSync(why, "utf8").trim()}`};
    try {
        env.allowRemoteModels = false;  // offline: only the converted files
        env.localModelPath = path.dirname(dir);
        const tokenizer = await AutoTokenizer.from_pretrained(path.basename(dir));
        return {tokenizer, nVocab: tokenizer.get_vocab().size};
    } catch (e) {
        return {error: `transformers.js cannot load the converted tokenizer: ${e?.message ?? e}`};
    }
}

function flag(req, name) {
    if (typeof req[name] !== "boolean") throw new Error(`'${name}' must be true or false`);
    return req[name];
}

/** decode(ids, remove_special, unparse_special) -> skip_special_tokens, or Unsupported. */
function skipSpecial(remove, unparse) {
    // llama.cpp renders control tokens as "" without unparse_special, and remove_special drops
    // only a leading BOS / trailing EOS. skip_special_tokens drops every special token: it
    // stands for unparse_special=false, and cannot keep control texts while dropping BOS.
    if (remove && unparse) throw new Unsupported("skip_special_tokens cannot drop BOS/EOS and keep other special tokens");
    return !unparse;
}

function utf8Hex(s) {
    return Buffer.from(s, "utf8").toString("hex");  // decode returns a string: invalid UTF-8 is already U+FFFD
}

function handle(state, req, topLevel) {
    if (req === null || typeof req !== "object" || Array.isArray(req))
        throw new Error(`a request must be a JSON object, got ${JSON.stringify(req)}`);
    if (state.fatal) throw new Error(state.fatal);
    if (state.error) throw new Unsupported(state.error);
    const {tokenizer} = state;
    switch (req.op) {
        case "info":
            // No n_vocab: the harness takes a count unlike llama.cpp's for a wrong file and stops,
            // but the converter may add tokens (llama-bpe gets <|endoftext|> as id 128256, one past
            // the GGUF's 128256): the README reports that, and every other check still runs.
            return {batch: true, unsupported: UNSUPPORTED, library: LIBRARY, llama_cpp: null, vocab_size: state.nVocab};
        case "encode": {
            const add = flag(req, "add_special");
            if (!flag(req, "parse_special")) throw new Unsupported("transformers.js always matches added tokens");
            let text = req.text;
            if (typeof req.text_hex === "string") {
                try {
                    text = new TextDecoder("utf-8", {fatal: true, ignoreBOM: true}).decode(Buffer.from(req.text_hex, "hex"));
                } catch {
                    throw new Unsupported("tokenizer.encode takes a string; invalid UTF-8 has none");
                }
            }
            if (typeof text !== "string") throw new Error("encode needs 'text' (a string) or 'text_hex'");
            return {ids: tokenizer.encode(text, {add_special_tokens: add})};
        }
        case "decode": {
            const skip = skipSpecial(flag(req, "remove_special"), flag(req, "unparse_special"));
            if (!Array.isArray(req.ids) || !req.ids.every(Number.isInteger)) throw new Error("'ids' must be a list of integers");
            try {
                return {bytes_hex: utf8Hex(tokenizer.decode(req.ids, {skip_special_tokens: skip}))};
            } catch (e) {  // decode([]) throws "token_ids must be a non-empty array": a refusal, not an answer
                if (req.ids.length === 0) throw new Unsupported(`tokenizer.decode([]) throws: ${e?.message ?? e}`);
                throw e;
            }
        }
        case "piece":
            throw new Unsupported("transformers.js has no call giving one token's piece");
        case "batch":
            if (!topLevel || !Array.isArray(req.requests)) throw new Error("'batch' needs a top-level 'requests' list");
            return {responses: req.requests.map((r) => answer(() => handle(state, r, false)))};
        default:
            throw new Error(`unknown op ${JSON.stringify(req.op)}: use info, encode, decode, piece or batch`);
    }
}

function answer(compute) {
    try {
        return compute();
    } catch (e) {
        return {error: e instanceof Unsupported ? `unsupported: ${e.message}` : String(e?.message ?? e)};
    }
}

function answerLine(state, bytes, tooLong) {
    return answer(() => {
        if (tooLong) throw new Error(`request line over ${MAX_LINE} bytes`);
        let text;
        try {
            text = new TextDecoder("utf-8", {fatal: true}).decode(bytes);
        } catch {
            throw new Error("request line is not UTF-8: send JSON text (raw bytes as text_hex)");
        }
        if (text.trim() === "") throw new Error("empty request line: send one JSON object per line");
        return handle(state, JSON.parse(text), true);
    });
}

async function main() {
    const args = process.argv.slice(2);
    if (args.length !== 2 || args[0] !== "--vocab") {
        process.stderr.write("usage: serve --vocab PATH.gguf\n");
        process.exit(2);
    }
    const state = await load(path.resolve(args[1]));
    // Lines are split on bytes (not decoded first), so a bad line cannot shift the next one.
    let pending = [], size = 0;
    const reply = (tooLong) => {
        fs.writeSync(OUT_FD, JSON.stringify(answerLine(state, tooLong ? null : Buffer.concat(pending), tooLong)) + "\n");
        pending = [], size = 0;
    };
    for await (const chunk of process.stdin) {
        let start = 0;
        for (let nl; (nl = chunk.indexOf(10, start)) !== -1; start = nl + 1) {
            pending.push(chunk.subarray(start, nl));
            reply(size + (nl - start) > MAX_LINE);
        }
        if (size <= MAX_LINE) pending.push(chunk.subarray(start));  // over the limit: stop keeping it
        size += chunk.length - start;
    }
    if (size > 0) reply(size > MAX_LINE);
    process.exit(0);
}

main();
