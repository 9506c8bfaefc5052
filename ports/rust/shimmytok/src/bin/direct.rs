//! direct: the same JSON-lines requests, answered by calling shimmytok 0.8.4
//! literally as its README and docs.rs examples show (Tokenizer::from_gguf_file,
//! encode_with_options(EncodeOptions::with_parse_special), decode_with_options
//! (DecodeOptions::new), decode_single), sharing no code with the server.
//! The harness compares its answers with serve's: the adapter must add nothing.

use serde_json::{json, Value};
use shimmytok::{DecodeOptions, EncodeOptions, Tokenizer};
use std::io::{BufRead, Write};

fn main() {
    let path = std::env::args().nth(2).expect("usage: direct --vocab PATH.gguf");
    let tok = Tokenizer::from_gguf_file(&path);
    let hex = |s: String| s.bytes().map(|x| format!("{x:02x}")).collect::<String>();
    std::panic::set_hook(Box::new(|_| {})); // a panic is answered below, not printed
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
        let call = || match (&tok, r["op"].as_str()) {
            (Err(e), _) => json!({ "error": format!("unsupported: shimmytok 0.8.4 cannot load this vocab: {e}") }),
            (Ok(t), Some("info")) => json!({ "n_vocab": t.vocab_size() }),
            (Ok(t), Some("encode")) => match &text {
                Some(s) => match t.encode_with_options(s, &EncodeOptions::with_parse_special(f("add_special"), f("parse_special"))) {
                    Ok(ids) => json!({ "ids": ids }),
                    Err(e) => json!({ "error": e.to_string() }),
                },
                None => json!({ "error": "unsupported: shimmytok encodes &str, so invalid UTF-8 cannot be expressed" }),
            },
            // DecodeOptions::new(skip_special_tokens, lstrip, include_special_text)
            (Ok(t), Some("decode")) => match t.decode_with_options(&ids, &DecodeOptions::new(f("remove_special"), false, f("unparse_special"))) {
                Ok(s) => json!({ "bytes_hex": hex(s) }),
                Err(e) => json!({ "error": e.to_string() }),
            },
            (Ok(t), Some("piece")) => match t.decode_single(r["id"].as_u64().unwrap_or(0) as u32, !f("special")) {
                Ok(s) => json!({ "bytes_hex": hex(s) }),
                Err(e) => json!({ "error": e.to_string() }),
            },
            _ => json!({ "error": "bad request" }),
        };
        let answer = std::panic::catch_unwind(std::panic::AssertUnwindSafe(call)).unwrap_or_else(|p| {
            let msg = p.downcast_ref::<String>().cloned().or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string())).unwrap_or_default();
            json!({ "error": format!("shimmytok panicked: {msg}") })
        });
        writeln!(out, "{answer}").unwrap();
        out.flush().unwrap();
    }
}
