// node-llama-cpp chat rendering: the port's chat program, `chat --vocab V`.
//
// Answers the protocol's `chat` op (harness/protocol/chat.py) the way a LlamaChatSession
// renders a conversation (node-llama-cpp 3.21.1, docs "Chat Wrapper" and "External Chat State"):
//   wrapper = resolveChatWrapper(model)            the session's default chatWrapper: "auto"
//             (the request's template: resolveChatWrapper(model, {type: "jinjaTemplate", ...}))
//   state   = wrapper.generateContextState({chatHistory, availableFunctions})
//   ids     = state.contextText.tokenize(model.tokenizer)
// The request's OpenAI messages become node-llama-cpp's ChatHistoryItem list (README.md,
// "## Chat", lists each rule). The tokenizer ops are serve's; this program answers chat only.
import fs from "node:fs";
import process from "node:process";
import {getLlama, LlamaLogLevel, LlamaText, SpecialToken, SpecialTokensText, resolveChatWrapper} from "node-llama-cpp";

const LIBRARY = "node-llama-cpp 3.21.1 resolveChatWrapper + generateContextState";
const MAX_LINE = 64 << 20;
const OUT_FD = process.env.PORT_OUT_FD ? Number(process.env.PORT_OUT_FD) : 1;
const NOT_HERE = "the chat program answers chat only (serve answers the tokenizer ops)";

class Unsupported extends Error {}

async function load(vocabPath) {
    try {
        const llama = await getLlama({
            gpu: false, build: "never", skipDownload: true, progressLogs: false, logLevel: LlamaLogLevel.warn,
            logger(level, message) { process.stderr.write(`[${level}] ${message}\n`); },
        });
        const model = await llama.loadModel({modelPath: vocabPath, vocabOnly: true});
        return {model, nVocab: [...model.iterateAllTokens()].length};
    } catch (e) {
        return {error: String(e?.message ?? e)};
    }
}

/** OpenAI messages -> node-llama-cpp's ChatHistoryItem[] (the shapes LlamaChatSession keeps). */
function chatHistory(messages, addGenerationPrompt) {
    const history = [], pending = new Map();
    for (const m of messages) {
        if (typeof m.content !== "string") throw new Unsupported(`a ${m.role} message whose content is not a string`);
        if (m.role === "system") history.push({type: "system", text: m.content});
        else if (m.role === "user") history.push({type: "user", text: m.content});
        else if (m.role === "assistant") {
            const response = m.content !== "" ? [m.content] : [];
            for (const call of m.tool_calls ?? []) {
                // params are the parsed arguments: the OpenAI API's JSON string parsed, an object as given
                const args = call.function.arguments;
                const params = typeof args === "string" ? JSON.parse(args) : args;
                const item = {type: "functionCall", name: call.function.name, params, result: undefined};
                pending.set(call.id, item);
                response.push(item);
            }
            history.push({type: "model", response});
        } else if (m.role === "tool") {
            // A function call's result lives in its ChatModelFunctionCall item (the handler's return value).
            const item = pending.get(m.tool_call_id);
            if (!item) throw new Unsupported("a tool message without the assistant tool call it answers");
            item.result = m.content;
            pending.delete(m.tool_call_id);
        } else throw new Unsupported(`role ${JSON.stringify(m.role)}: node-llama-cpp's chat history has system, user and model items only`);
    }
    if (addGenerationPrompt) history.push({type: "model", response: []});  // as LlamaChatSession.prompt does
    else if (history.at(-1)?.type !== "model")
        throw new Unsupported("add_generation_prompt=false after a non-assistant message: node-llama-cpp always renders for the model's response");
    return history;
}

/** The prompt's text: LlamaText's strings as they are, each SpecialToken (BOS, EOS, NL) as its token's text. */
function promptText(model, contextText) {
    return contextText.values.map((v) => {
        if (typeof v === "string") return v;
        if (v instanceof SpecialTokensText) return v.value;
        if (v instanceof SpecialToken) return model.detokenize(LlamaText(v).tokenize(model.tokenizer), true);
        throw new Error(`unexpected LlamaText value ${JSON.stringify(v)}`);
    }).join("");
}

function chat(state, req) {
    const {model} = state;
    if (req.builtin === true) throw new Unsupported("builtin: node-llama-cpp has its own chat wrappers, not llama.cpp's built-in formats");
    if (!Array.isArray(req.messages)) throw new Error("'messages' must be a list of message objects");
    const kwargs = req.kwargs ?? {};
    const jinjaTemplate = Object.keys(kwargs).length ? {additionalRenderParameters: kwargs} : {};
    const wrapper = req.template != null
        ? resolveChatWrapper(model, {type: "jinjaTemplate", customWrapperSettings: {jinjaTemplate: {...jinjaTemplate, template: req.template}}})
        : resolveChatWrapper(model, {customWrapperSettings: {jinjaTemplate}});
    if (Object.keys(kwargs).length && wrapper.wrapperName !== "JinjaTemplate")
        throw new Unsupported(`template kwargs: the resolved ${wrapper.wrapperName} wrapper takes no template variables`);
    const history = chatHistory(req.messages, req.add_generation_prompt === true);
    const availableFunctions = req.tools == null ? undefined : Object.fromEntries(req.tools.map((t) =>
        [t.function.name, {description: t.function.description, params: t.function.parameters}]));
    let contextText;
    try {
        ({contextText} = wrapper.generateContextState({chatHistory: history, availableFunctions}));
    } catch (e) {
        return {raised: `${e?.name ?? "Error"}: ${e?.message ?? e}`};
    }
    return {text: promptText(model, contextText), ids: Array.from(contextText.tokenize(model.tokenizer), Number)};
}

function handle(state, req, topLevel) {
    if (req === null || typeof req !== "object" || Array.isArray(req))
        throw new Error(`a request must be a JSON object, got ${JSON.stringify(req)}`);
    if (state.error) throw new Unsupported(`node-llama-cpp cannot load the vocab: ${state.error}`);
    switch (req.op) {
        case "info":
            return {n_vocab: state.nVocab, batch: true, library: LIBRARY};
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
    const state = await load(args[1]);
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
    process.exit(0);  // the loaded binding keeps the event loop alive
}

main();
