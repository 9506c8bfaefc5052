//! aprender-direct: the same JSON-lines requests, answered by calling aprender
//! literally as its module docs show (LlamaTokenizer::from_gguf_bytes,
//! tokenizer.encode(text), tokenizer.decode(&tokens)), sharing no code with the server.

use aprender::text::llama_tokenizer::LlamaTokenizer;
use serde_json::{json, Value};
use std::io::{BufRead, Write};

fn main() {
    let path = std::env::args().nth(2).expect("usage: aprender-direct --vocab PATH.gguf");
    let gguf_data = std::fs::read(&path).expect("read");
    let tokenizer = LlamaTokenizer::from_gguf_bytes(&gguf_data);
    let hex = |s: String| s.bytes().map(|x| format!("{x:02x}")).collect::<String>();
    let mut out = std::io::stdout().lock();
    for line in std::io::stdin().lock().lines() {
        let r: Value = serde_json::from_str(&line.unwrap()).unwrap_or(Value::Null);
        let f = |k: &str| r[k].as_bool().unwrap_or(false);
        let ids: Vec<u32> = r["ids"].as_array().map(|a| a.iter().filter_map(|v| v.as_u64()).map(|v| v as u32).collect()).unwrap_or_default();
        let text = r["text"].as_str().map(String::from).or_else(|| {
            let h = r["text_hex"].as_str()?;
            let b = (0..h.len()).step_by(2).map(|i| u8::from_str_radix(&h[i..i + 2], 16).ok()).collect::<Option<Vec<u8>>>()?;
            String::from_utf8(b).ok()
        });
        let answer = match (&tokenizer, r["op"].as_str()) {
            (Err(e), _) => json!({ "error": format!("unsupported: aprender 0.72.3 cannot load this vocab: {e}") }),
            (Ok(t), Some("info")) => json!({ "n_vocab": t.vocab_size() }),
            (Ok(t), Some("encode")) if f("parse_special") && text.is_some() => {
                let text = text.unwrap();
                json!({ "ids": if f("add_special") { t.encode_with_bos(&text) } else { t.encode(&text) } })
            }
            (Ok(t), Some("decode")) if f("remove_special") && f("unparse_special") => json!({ "bytes_hex": hex(t.decode(&ids)) }),
            (Ok(_), Some("encode")) if text.is_none() => json!({ "error": "unsupported: aprender encodes &str, so invalid UTF-8 cannot be expressed" }),
            (Ok(_), Some("encode")) => json!({ "error": "unsupported: aprender's encode matches control-token texts like any vocab entry (no parse_special=false)" }),
            (Ok(_), Some("decode")) => json!({ "error": "unsupported: aprender's decode always drops BOS/EOS and renders every other token (only remove_special=true, unparse_special=true)" }),
            (Ok(_), Some("piece")) => json!({ "error": "unsupported: aprender has no token_to_piece" }),
            _ => json!({ "error": "bad request" }),
        };
        writeln!(out, "{answer}").unwrap();
        out.flush().unwrap();
    }
}
