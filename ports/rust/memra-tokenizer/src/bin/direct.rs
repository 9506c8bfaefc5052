//! memra-tokenizer-direct: the same JSON-lines requests, answered by calling
//! memra-tokenizer literally as its tok-check example does (GgufFile::open,
//! Tokenizer::from_gguf, then encode/decode), sharing no code with the server.
//! The harness compares its answers with serve's: the adapter must add nothing.

use memra_gguf::GgufFile;
use memra_tokenizer::Tokenizer;
use serde_json::{Value, json};
use std::io::{BufRead, Write};

fn main() {
    let path = std::env::args().nth(2).expect("usage: memra-tokenizer-direct --vocab PATH.gguf");
    let tok = GgufFile::open(&path).map_err(|e| e.to_string()).and_then(|g| Tokenizer::from_gguf(&g));
    let hex = |b: Vec<u8>| b.iter().map(|x| format!("{x:02x}")).collect::<String>();
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
        let answer = match (&tok, r["op"].as_str()) {
            (Err(e), _) => json!({ "error": format!("unsupported: memra-tokenizer 0.122.0 cannot load this vocab: {e}") }),
            (Ok(t), Some("info")) => json!({ "n_vocab": t.vocab_size() }),
            (Ok(t), Some("encode")) => match text {
                Some(s) => json!({ "ids": t.encode_special(&s, f("add_special"), f("parse_special")) }),
                None => json!({ "error": "unsupported: memra-tokenizer encodes &str, so invalid UTF-8 cannot be expressed" }),
            },
            (Ok(_), Some("decode")) if f("remove_special") && f("unparse_special") => json!({ "error": "unsupported: memra-tokenizer's decode has no remove_special: it cannot drop BOS/EOS while rendering other special tokens" }),
            (Ok(t), Some("decode")) => json!({ "bytes_hex": hex(t.decode_bytes_special(&ids, f("unparse_special"))) }),
            (Ok(t), Some("piece")) => json!({ "bytes_hex": hex(t.decode_bytes_special(&[r["id"].as_u64().unwrap_or(0) as u32], f("special"))) }),
            _ => json!({ "error": "bad request" }),
        };
        writeln!(out, "{answer}").unwrap();
        out.flush().unwrap();
    }
}
