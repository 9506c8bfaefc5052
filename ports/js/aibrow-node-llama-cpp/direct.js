// direct --vocab PATH.gguf: the same JSON-lines requests answered by calling @aibrow/node-llama-cpp
// as node-llama-cpp's docs show (getLlama, llama.loadModel, model.tokenize, model.detokenize),
// sharing no code with serve.js; the harness compares the two answers.
import readline from "node:readline";
import fs from "node:fs";
import {getLlama} from "@aibrow/node-llama-cpp";

const llama = await getLlama({gpu: false, build: "never", skipDownload: true,
    logger: (level, message) => process.stderr.write(message + "\n")});
const model = await llama.loadModel({modelPath: process.argv[3], vocabOnly: true});
const out = (o) => fs.writeSync(Number(process.env.PORT_OUT_FD ?? 1), JSON.stringify(o) + "\n");
for await (const line of readline.createInterface({input: process.stdin, crlfDelay: Infinity})) {
    try {
        const r = JSON.parse(line);
        if (r.op === "info") out({});
        else if (r.op === "encode" && !r.add_special) out({ids: model.tokenize(r.text, r.parse_special)});
        else if (r.op === "decode" && !r.remove_special)
            out({bytes_hex: Buffer.from(model.detokenize(r.ids, r.unparse_special), "utf8").toString("hex")});
        else out({error: "unsupported: not expressible with model.tokenize / model.detokenize"});
    } catch (e) {
        out({error: String(e?.message ?? e)});
    }
}
process.exit(0);
