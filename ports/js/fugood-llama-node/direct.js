// direct --vocab PATH.gguf: the same JSON-lines requests answered by calling @fugood/llama.node
// literally as its README does (loadModel, context.tokenize, context.detokenize), sharing no
// code with serve.js; the harness compares the two answers to show the adapter adds nothing.
import readline from "node:readline";
import fs from "node:fs";
import {loadModel} from "@fugood/llama.node";

const context = await loadModel({model: process.argv[3], vocab_only: true});
const out = (o) => fs.writeSync(Number(process.env.PORT_OUT_FD ?? 1), JSON.stringify(o) + "\n");
const hex = (s) => Buffer.from(s, "utf8").toString("hex");
for await (const line of readline.createInterface({input: process.stdin, crlfDelay: Infinity})) {
    try {
        const r = JSON.parse(line);
        if (r.op === "info") out({});
        else if (r.op === "encode" && !r.add_special && r.parse_special)
            out({ids: Array.from((await context.tokenize(r.text)).tokens)});
        else if (r.op === "decode" && !r.remove_special && r.unparse_special) out({bytes_hex: hex(await context.detokenize(r.ids))});
        else if (r.op === "piece" && r.special) out({bytes_hex: hex(await context.detokenize([r.id]))});
        else out({error: "unsupported: not expressible with tokenize(text) / detokenize(tokens)"});
    } catch (e) {
        out({error: String(e?.message ?? e)});
    }
}
process.exit(0);
