// direct --vocab PATH.gguf: the same JSON-lines requests answered by calling node-llama-cpp
// 3.21.1 as its documentation shows (getLlama, llama.loadModel({modelPath, vocabOnly}),
// model.tokenize(text, specialTokens), model.detokenize(tokens, specialTokens)), sharing no
// code with serve.js; the harness compares the two programs' answers (adapter check, issue 31).
import fs from "node:fs";
import readline from "node:readline";
import {getLlama} from "node-llama-cpp";

const out = (o) => fs.writeSync(Number(process.env.PORT_OUT_FD ?? 1), JSON.stringify(o) + "\n");
const hex = (s) => Buffer.from(s, "utf8").toString("hex");  // detokenize gives a JS string

let model, failed;
try {
    const llama = await getLlama({gpu: false, build: "never"});  // the prebuilt CPU binary only
    model = await llama.loadModel({modelPath: process.argv[3], vocabOnly: true});
} catch (e) {
    failed = `unsupported: node-llama-cpp cannot load the vocab: ${e?.message ?? e}`;
}

function answer(r) {
    if (failed) return {error: failed};
    switch (r.op) {
        case "info":  // the GGUF's token list, as node-llama-cpp's GGUF reader gives it
            return {n_vocab: model.fileInfo.metadata.tokenizer.ggml.tokens.length};
        case "encode":
            if (r.add_special) return {error: "unsupported: model.tokenize has no way to add BOS/EOS"};
            return {ids: model.tokenize(r.text, r.parse_special)};
        case "decode":
            if (r.remove_special) return {error: "unsupported: model.detokenize has no way to remove BOS/EOS"};
            return {bytes_hex: hex(model.detokenize(r.ids, r.unparse_special))};
        case "piece":
            return {error: "unsupported: node-llama-cpp has no call giving one token's piece"};
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
process.exit(0);  // the loaded binding keeps the event loop alive
