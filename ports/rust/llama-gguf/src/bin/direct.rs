//! llama-gguf-direct: the same JSON-lines requests, answered by calling
//! llama-gguf literally as its README's "Library Usage" does (GgufFile::open,
//! Tokenizer::from_gguf, tokenizer.encode(text, true/false), tokenizer.decode(&ids)),
//! sharing no code with the server. The harness compares its answers with serve's.

use llama_gguf::{gguf::GgufFile, tokenizer::Tokenizer};
use serde_json::{Value, json};
use std::io::{BufRead, Write};

fn main() {
    let path = std::env::args().nth(2).expect("usage: llama-gguf-direct --vocab PATH.gguf");
    let tokenizer = GgufFile::open(&path).map_err(|e| e.to_string()).and_then(|g| Tokenizer::from_gguf(&g).map_err(|e| e.to_string()));
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
            (Err(e), _) => json!({ "error": format!("unsupported: llama-gguf 0.14.0 cannot load this vocab: {e}") }),
            (Ok(t), Some("info")) => json!({ "n_vocab": t.vocab_size }),
            (Ok(t), Some("encode")) if f("parse_special") && text.is_some() => match t.encode(&text.unwrap(), f("add_special")) {
                Ok(ids) => json!({ "ids": ids }),
                Err(e) => json!({ "error": e.to_string() }),
            },
            (Ok(t), Some("decode")) if !f("unparse_special") => match t.decode(&ids) {
                Ok(s) => json!({ "bytes_hex": hex(s) }),
                Err(e) => json!({ "error": e.to_string() }),
            },
            (Ok(t), Some("piece")) if !f("special") => match t.decode(&[r["id"].as_u64().unwrap_or(0) as u32]) {
                Ok(s) => json!({ "bytes_hex": hex(s) }),
                Err(e) => json!({ "error": e.to_string() }),
            },
            (Ok(_), Some("encode")) if text.is_none() => json!({ "error": "unsupported: llama-gguf encodes &str, so invalid UTF-8 cannot be expressed" }),
            (Ok(_), Some("encode")) => json!({ "error": "unsupported: llama-gguf's encode always parses control tokens (no parse_special=false)" }),
            (Ok(_), Some("decode")) => json!({ "error": "unsupported: llama-gguf's decode always drops special and control tokens (no unparse_special=true)" }),
            (Ok(_), Some("piece")) => json!({ "error": "unsupported: llama-gguf's decode always drops special and control tokens (no piece special=true)" }),
            _ => json!({ "error": "bad request" }),
        };
        writeln!(out, "{answer}").unwrap();
        out.flush().unwrap();
    }
}
