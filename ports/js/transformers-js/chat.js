// transformers.js (@huggingface/transformers) chat rendering: the port's chat program, `chat --vocab V`.
//
// Answers the protocol's `chat` op (harness/protocol/chat.py) the way transformers.js users
// render a conversation (tokenization_utils.js, PreTrainedTokenizer.apply_chat_template,
// @huggingface/jinja):
//   text: tokenizer.apply_chat_template(messages, {chat_template, tools, add_generation_prompt,
//                                                   tokenize: false, ...kwargs})
//   ids:  tokenizer.apply_chat_template(messages, {... the same, tokenize: true,
//                                                   return_tensor: false, return_dict: false})
//         (the package tokenizes the prompt with add_special_tokens: false)
// The tokenizer is serve.js's: the GGUF converted to tokenizer.json by Python transformers
// (convert.py, build/tokenizers/). The converter writes the GGUF's template to
// chat_template.jinja, which AutoTokenizer does not read (it reads tokenizer_config.json's
// chat_template only): when the tokenizer has none, the file's text is passed as the
// documented `chat_template` option. `builtin` is unsupported. The tokenizer ops are serve's.
import {spawnSync} from "node:child_process";
import crypto from "node:crypto";
import fs from "node:fs";
import path from "node:path";
import process from "node:process";
import {fileURLToPath} from "node:url";
import {AutoTokenizer, env} from "@huggingface/transformers";

const HERE = path.dirname(fileURLToPath(import.meta.url));
const MAX_LINE = 64 << 20;
const OUT_FD = process.env.PORT_OUT_FD ? Number(process.env.PORT_OUT_FD) : 1;
const NOT_HERE = "the chat program answers chat only (serve answers the tokenizer ops)";

class Unsupported extends Error {}

/** serve.js's converted(): build/tokenizers/<name>-<sha256[:16]>, converting now if needed. */
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
        return {fatal: `cannot convert ${vocabPath}: ${e.message}`};
    }
    const why = path.join(dir, "unsupported.txt");
    if (fs.existsSync(why)) return {error: `transformers cannot convert the GGUF: ${fs.readFileSync(why, "utf8").trim()}`};
    try {
        env.allowRemoteModels = false;
        env.localModelPath = path.dirname(dir);
        const tokenizer = await AutoTokenizer.from_pretrained(path.basename(dir));
        const file = path.join(dir, "chat_template.jinja");
        const fileTemplate = fs.existsSync(file) ? fs.readFileSync(file, "utf8") : null;
        return {tokenizer, fileTemplate, nVocab: tokenizer.get_vocab().size};
    } catch (e) {
        return {error: `transformers.js cannot load the converted tokenizer: ${e?.message ?? e}`};
    }
}

function chat(state, req) {
    const {tokenizer} = state;
    if (req.builtin === true) throw new Unsupported("builtin: transformers.js renders chat templates with @huggingface/jinja only");
    if (!Array.isArray(req.messages)) throw new Error("'messages' must be a list of message objects");
    const kwargs = req.kwargs ?? {};
    if (typeof kwargs !== "object" || Array.isArray(kwargs)) throw new Error("'kwargs' must be an object");
    // The request's template, else the tokenizer's own, else the converter's chat_template.jinja.
    const chat_template = req.template ?? tokenizer.chat_template ?? state.fileTemplate;
    if (chat_template == null) throw new Unsupported("the converted tokenizer has no chat template");
    const options = {chat_template, tools: req.tools ?? null, add_generation_prompt: req.add_generation_prompt === true, ...kwargs};
    let text, ids;
    try {
        text = tokenizer.apply_chat_template(req.messages, {...options, tokenize: false});
        ids = tokenizer.apply_chat_template(req.messages, {...options, tokenize: true, return_tensor: false, return_dict: false});
    } catch (e) {
        return {raised: `${e?.name ?? "Error"}: ${e?.message ?? e}`};
    }
    return {text, ids: Array.from(ids, Number)};
}

function handle(state, req, topLevel) {
    if (req === null || typeof req !== "object" || Array.isArray(req))
        throw new Error(`a request must be a JSON object, got ${JSON.stringify(req)}`);
    if (state.fatal) throw new Error(state.fatal);
    if (state.error) throw new Unsupported(state.error);
    switch (req.op) {
        case "info":
            return {n_vocab: state.nVocab, batch: true, library: "@huggingface/transformers 4.3.2 apply_chat_template"};
        case "chat":
            return chat(state, req);
        case "encode": case "decode": case "piece":
            throw new Unsupported(NOT_HERE);
        case "batch":
            if (!topLevel || !Array.isArray(req.requests)) throw new Error("'batch' needs a top-level 'requests' list");
            return {responses: req.requests.map((r) => answer(() => handle(state, r, false)))};
        default:
            throw new Error(`unknown op ${JSON.stringify(req.op)}: use info, chat or batch`);
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
            throw new Error("request line is not UTF-8: send JSON text");
        }
        if (text.trim() === "") throw new Error("empty request line: send one JSON object per line");
        return handle(state, JSON.parse(text), true);
    });
}

async function main() {
    const args = process.argv.slice(2);
    if (args.length !== 2 || args[0] !== "--vocab") {
        process.stderr.write("usage: chat --vocab PATH.gguf\n");
        process.exit(2);
    }
    const state = await load(path.resolve(args[1]));
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
        if (size <= MAX_LINE) pending.push(chunk.subarray(start));
        size += chunk.length - start;
    }
    if (size > 0) reply(size > MAX_LINE);
    process.exit(0);
}

main();
