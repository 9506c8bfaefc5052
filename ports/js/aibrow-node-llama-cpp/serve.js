// @aibrow/node-llama-cpp (AIBrow's fork of node-llama-cpp) behind the llama.cpp conformance harness's JSON-lines protocol.
//
// Run: `serve --vocab ggml-vocab-qwen2.gguf`, then one request per stdin line:
//   {"op":"encode","text":"Hello","add_special":false,"parse_special":true} -> {"ids":[9707]}
// The adapter calls only the fork's public tokenizer API (node-llama-cpp's), as its users do:
//   model.tokenize(text, specialTokens)   -> llama.cpp tokenize, add_special=false, parse_special=specialTokens
//   model.detokenize(ids, specialTokens)  -> llama_detokenize, remove_special=false, unparse_special=specialTokens
// It has no add_special, no remove_special and no per-token piece call: those are unsupported.
import fs from "node:fs";
import process from "node:process";
import {getLlama, LlamaLogLevel, LlamaVocabularyType} from "@aibrow/node-llama-cpp";

const LIBRARY = "@aibrow/node-llama-cpp 1.7.0";
// The llama.cpp its prebuilt @aibrow/node-llama-cpp-linux-x64 binaries were built from:
// llama/binariesGithubRelease.json and bins/linux-x64/_nlcBuildMetadata.json say b5869; llama-addon.node's build info says 965a918.
const LLAMA_CPP = "b5869 (965a918)";
const UNSUPPORTED = ["add_special=true", "remove_special=true", "piece"];
const MAX_LINE = 64 << 20;
// `serve` hands us the real stdout as fd 3 and points fd 1 at stderr, so nothing the
// library or llama.cpp prints can land between two answers.
const OUT_FD = process.env.PORT_OUT_FD ? Number(process.env.PORT_OUT_FD) : 1;

class Unsupported extends Error {}

/** Loads the vocab only (no weights), with the prebuilt CPU binary and never a build or download. */
async function load(vocabPath) {
    const errors = [];
    try {
        const llama = await getLlama({
            gpu: false, build: "never", skipDownload: true, progressLogs: false,
            logLevel: LlamaLogLevel.warn,
            logger(level, message) {  // llama.cpp's log, to stderr (the default logger prints to stdout)
                process.stderr.write(`[${level}] ${message}\n`);
                if (level === LlamaLogLevel.error || level === LlamaLogLevel.fatal) errors.push(message.trim());
            },
        });
        const model = await llama.loadModel({modelPath: vocabPath, vocabOnly: true});
        // iterateAllTokens yields nothing where the fork does not know the vocabulary type
        // (b5869's UGM: "Unknown vocabulary type: 4"): then the package gives no size, and info none.
        const known = model.vocabularyType !== LlamaVocabularyType.none;
        return {model, nVocab: known ? [...model.iterateAllTokens()].length : null};
    } catch (e) {
        return {error: [String(e?.message ?? e), ...errors].join("; ")};
    }
}

function flag(req, name) {
    if (typeof req[name] !== "boolean") throw new Error(`'${name}' must be true or false`);
    return req[name];
}

/** One request object -> its answer object (throws for a bad request). */
function handle(state, req, topLevel) {
    if (req === null || typeof req !== "object" || Array.isArray(req))
        throw new Error(`a request must be a JSON object, got ${JSON.stringify(req)}`);
    if (state.error) throw new Unsupported(`${LIBRARY} cannot load the vocab: ${state.error}`);
    const {model} = state;
    switch (req.op) {
        case "info":
            return {...(state.nVocab === null ? {} : {n_vocab: state.nVocab}), batch: true, unsupported: UNSUPPORTED,
                library: LIBRARY, llama_cpp: LLAMA_CPP};
        case "encode": {
            if (flag(req, "add_special")) throw new Unsupported("model.tokenize never adds BOS/EOS");
            const parse = flag(req, "parse_special");
            let text = req.text;
            if (typeof req.text_hex === "string") {
                try {  // tokenize takes a JS string: raw bytes must be valid UTF-8
                    text = new TextDecoder("utf-8", {fatal: true, ignoreBOM: true}).decode(Buffer.from(req.text_hex, "hex"));
                } catch {
                    throw new Unsupported("model.tokenize takes a string; invalid UTF-8 has none");
                }
            }
            if (typeof text !== "string") throw new Error("encode needs 'text' (a string) or 'text_hex'");
            return {ids: model.tokenize(text, parse)};
        }
        case "decode": {
            if (flag(req, "remove_special")) throw new Unsupported("model.detokenize never removes BOS/EOS");
            const unparse = flag(req, "unparse_special");
            const ids = req.ids;
            if (!Array.isArray(ids) || !ids.every((i) => Number.isInteger(i) && i >= 0 && (state.nVocab === null || i < state.nVocab)))
                throw new Error(`'ids' must be a list of token ids in [0, ${state.nVocab ?? "n_vocab"})`);
            // detokenize returns a JS string: invalid UTF-8 became U+FFFD inside the library.
            return {bytes_hex: Buffer.from(model.detokenize(ids, unparse), "utf8").toString("hex")};
        }
        case "piece":
            throw new Unsupported("node-llama-cpp has no public token-to-piece call");
        case "batch":
            if (!topLevel || !Array.isArray(req.requests)) throw new Error("'batch' needs a top-level 'requests' list");
            return {responses: req.requests.map((r) => answer(state, () => handle(state, r, false)))};
        default:
            throw new Error(`unknown op ${JSON.stringify(req.op)}: use info, encode, decode or batch`);
    }
}

function answer(state, compute) {
    try {
        return compute();
    } catch (e) {
        return {error: e instanceof Unsupported ? `unsupported: ${e.message}` : String(e?.message ?? e)};
    }
}

function answerLine(state, bytes, tooLong) {
    return answer(state, () => {
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
    process.exit(0);  // the loaded binding keeps the event loop alive
}

main();
