//! direct: the same JSON-lines requests, answered by calling candle-core 0.11.1
//! literally as its quantized examples do (gguf_file::Content::read, then
//! tokenizers::Tokenizer::from_gguf via candle's TokenizerFromGguf) and the
//! resulting tokenizers::Tokenizer through its documented calls (encode,
//! decode, set_encode_special_tokens), sharing no code with the server.
//! The harness compares its answers with serve's: the adapter must add nothing.

use candle_core::quantized::{gguf_file, tokenizer::TokenizerFromGguf};
use serde_json::{json, Value};
use std::io::{BufRead, Write};
use tokenizers::Tokenizer;

fn main() {
    let path = std::env::args().nth(2).expect("usage: direct --vocab PATH.gguf");
    let mut tok = std::fs::File::open(&path)
        .map_err(|e| e.to_string())
        .and_then(|mut f| gguf_file::Content::read(&mut f).map_err(|e| e.to_string()))
        .and_then(|ct| Tokenizer::from_gguf(&ct).map_err(|e| e.to_string()));
    let hex = |s: String| s.bytes().map(|x| format!("{x:02x}")).collect::<String>();
    let mut out = std::io::stdout().lock();
    for line in std::io::stdin().lock().lines() {
        let r: Value = serde_json::from_str(&line.unwrap()).unwrap_or(Value::Null);
        let f = |k: &str| r[k].as_bool().unwrap_or(false);
        let ids: Vec<u32> = r["ids"].as_array().map(|a| a.iter().filter_map(|v| v.as_u64()).map(|v| v as u32).collect()).unwrap_or_default();
        let text = r["text"].as_str().map(String::from).or_else(|| {
            let h = r["text_hex"].as_str()?;
            let b = (0..h.len()).step_by(2).map(|i| u8::from_str_radix(h.get(i..i + 2)?, 16).ok()).collect::<Option<Vec<u8>>>()?;
            String::from_utf8(b).ok()
        });
        let answer = match (&mut tok, r["op"].as_str()) {
            (Err(e), _) => json!({ "error": format!("unsupported: candle-core 0.11.1 cannot load this vocab: {}", e.lines().next().unwrap_or_default()) }),
            (Ok(t), Some("info")) => json!({ "n_vocab": t.get_vocab_size(true) }),
            (Ok(t), Some("encode")) => match text {
                Some(s) => {
                    // tokenizers' switch: true = special tokens' texts are encoded as plain text.
                    t.set_encode_special_tokens(!f("parse_special"));
                    match t.encode(s, f("add_special")) {
                        Ok(enc) => json!({ "ids": enc.get_ids() }),
                        Err(e) => json!({ "error": e.to_string() }),
                    }
                }
                None => json!({ "error": "unsupported: tokenizers encodes &str, so invalid UTF-8 cannot be expressed" }),
            },
            // decode(ids, skip_special_tokens): one flag, which drops every special token.
            (Ok(_), Some("decode")) if f("remove_special") && f("unparse_special") => json!({ "error": "unsupported: tokenizers' decode cannot drop only BOS/EOS while rendering other special tokens" }),
            (Ok(t), Some("decode")) => match t.decode(&ids, !f("unparse_special")) {
                Ok(s) => json!({ "bytes_hex": hex(s) }),
                Err(e) => json!({ "error": e.to_string() }),
            },
            (Ok(t), Some("piece")) => match t.decode(&[r["id"].as_u64().unwrap_or(0) as u32], !f("special")) {
                Ok(s) => json!({ "bytes_hex": hex(s) }),
                Err(e) => json!({ "error": e.to_string() }),
            },
            _ => json!({ "error": "bad request" }),
        };
        writeln!(out, "{answer}").unwrap();
        out.flush().unwrap();
    }
}
