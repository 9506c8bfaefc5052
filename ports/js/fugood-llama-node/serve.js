// @fugood/llama.node behind the llama.cpp conformance harness's JSON-lines protocol.
//
// Run: `serve --vocab ggml-vocab-qwen2.gguf`, then one request per stdin line:
//   {"op":"encode","text":"Hello","add_special":false,"parse_special":true} -> {"ids":[9707]}
// The adapter calls only the package's public API, as its README shows:
//   loadModel({model, vocab_only: true})  -> a context on the vocab alone (LlamaModelOptions.vocab_only)
//   context.tokenize(text)                -> llama.rn's tokenize: common_tokenize(ctx, text, add_special=false, parse_special=true)
//   context.detokenize(ids)               -> tokens_to_str: common_token_to_piece(ctx, id) (special=true) concatenated,
//                                            returned as a JS string
// Every other flag value is unsupported (README.md has the table).
import fs from "node:fs";
import process from "node:process";
import {loadModel} from "@fugood/llama.node";

const LIBRARY = "@fugood/llama.node 1.7.15";
// lib/version.js: BUILD_NUMBER 10257, BUILD_COMMIT 22dc605c4; the addon's strings say 22dc605-dirty.
const LLAMA_CPP = "b10257 (22dc605c4, with llama.rn's patches)";
const UNSUPPORTED = ["add_special=true", "parse_special=false", "remove_special=true", "unparse_special=false",
    "special=false"];
const MAX_LINE = 64 << 20;
const OUT_FD = process.env.PORT_OUT_FD ? Number(process.env.PORT_OUT_FD) : 1;

class Unsupported extends Error {}

async function load(vocabPath) {
    try {
        return {context: await loadModel({model: vocabPath, vocab_only: true})};
    } catch (e) {
        return {error: String(e?.message ?? e)};
    }
}

function flag(req, name) {
    if (typeof req[name] !== "boolean") throw new Error(`'${name}' must be true or false`);
    return req[name];
}

function ids(req) {
    if (!Array.isArray(req.ids) || !req.ids.every((i) => Number.isInteger(i) && i >= 0))
        throw new Error("'ids' must be a list of token ids");
    return req.ids;
}

/** One request object -> its answer object (throws for a bad request). */
async function handle(state, req, topLevel) {
    if (req === null || typeof req !== "object" || Array.isArray(req))
        throw new Error(`a request must be a JSON object, got ${JSON.stringify(req)}`);
    if (state.error) throw new Unsupported(`${LIBRARY} cannot load the vocab: ${state.error}`);
    const {context} = state;
    switch (req.op) {
        case "info":  // no n_vocab: the package reports no vocabulary size
            return {batch: true, unsupported: UNSUPPORTED, library: LIBRARY, llama_cpp: LLAMA_CPP};
        case "encode": {
            if (flag(req, "add_special")) throw new Unsupported("context.tokenize never adds BOS/EOS");
            if (!flag(req, "parse_special")) throw new Unsupported("context.tokenize always parses special tokens");
            let text = req.text;
            if (typeof req.text_hex === "string") {
                try {  // tokenize takes a JS string: raw bytes must be valid UTF-8
                    text = new TextDecoder("utf-8", {fatal: true, ignoreBOM: true}).decode(Buffer.from(req.text_hex, "hex"));
                } catch {
                    throw new Unsupported("context.tokenize takes a string; invalid UTF-8 has none");
                }
            }
            if (typeof text !== "string") throw new Error("encode needs 'text' (a string) or 'text_hex'");
            return {ids: Array.from((await context.tokenize(text)).tokens)};
        }
        case "decode": {
            if (flag(req, "remove_special")) throw new Unsupported("context.detokenize never removes BOS/EOS");
            if (!flag(req, "unparse_special")) throw new Unsupported("context.detokenize always renders special tokens");
            // detokenize returns a JS string: invalid UTF-8 became U+FFFD inside the library.
            return {bytes_hex: Buffer.from(await context.detokenize(ids(req)), "utf8").toString("hex")};
        }
        case "piece": {
            if (!Number.isInteger(req.id) || req.id < 0) throw new Error("'id' must be a token id");
            if (!flag(req, "special")) throw new Unsupported("context.detokenize always renders special tokens");
            // detokenize of one id is common_token_to_piece(ctx, id): llama_token_to_piece(special=true)
            return {bytes_hex: Buffer.from(await context.detokenize([req.id]), "utf8").toString("hex")};
        }
        case "batch": {
            if (!topLevel || !Array.isArray(req.requests)) throw new Error("'batch' needs a top-level 'requests' list");
            const responses = [];
            for (const r of req.requests) responses.push(await answer(() => handle(state, r, false)));
            return {responses};
        }
        default:
            throw new Error(`unknown op ${JSON.stringify(req.op)}: use info, encode, decode, piece or batch`);
    }
}

async function answer(compute) {
    try {
        return await compute();
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
    const state = await load(args[1]);
    // Lines are split on bytes (not decoded first), so a bad line cannot shift the next one.
    let pending = [], size = 0;
    const reply = async (tooLong) => {
        const res = await answerLine(state, tooLong ? null : Buffer.concat(pending), tooLong);
        fs.writeSync(OUT_FD, JSON.stringify(res) + "\n");
        pending = [], size = 0;
    };
    for await (const chunk of process.stdin) {
        let start = 0;
        for (let nl; (nl = chunk.indexOf(10, start)) !== -1; start = nl + 1) {
            pending.push(chunk.subarray(start, nl));
            await reply(size + (nl - start) > MAX_LINE);
        }
        if (size <= MAX_LINE) pending.push(chunk.subarray(start));  // over the limit: stop keeping it
        size += chunk.length - start;
    }
    if (size > 0) await reply(size > MAX_LINE);
    process.exit(0);  // the loaded addon keeps the event loop alive
}

main();
