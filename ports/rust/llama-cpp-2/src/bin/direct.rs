//! direct: the same JSON-lines requests, answered by calling llama-cpp-2
//! 0.1.160 literally as its docs show (LlamaBackend::init,
//! LlamaModel::load_from_file with LlamaModelParams::with_vocab_only(true),
//! model.vocab(), then LlamaVocab::tokenize / detokenize / token_to_piece),
//! sharing no code with the server. The harness compares its answers with
//! serve's: the adapter must add nothing.

use llama_cpp_2::llama_backend::LlamaBackend;
use llama_cpp_2::model::{params::LlamaModelParams, LlamaModel};
use llama_cpp_2::token::LlamaToken;
use serde_json::{json, Value};
use std::io::{BufRead, Write};

fn main() {
    let path = std::env::args().nth(2).expect("usage: direct --vocab PATH.gguf");
    let mut backend = LlamaBackend::init().expect("llama backend");
    backend.void_logs(); // llama.cpp's log: off, so nothing but answers is printed
    let params = LlamaModelParams::default().with_vocab_only(true);
    let model = LlamaModel::load_from_file(&backend, &path, &params);
    let hex = |b: Vec<u8>| b.iter().map(|x| format!("{x:02x}")).collect::<String>();
    std::panic::set_hook(Box::new(|_| {})); // a panic is answered below, not printed
    let mut out = std::io::stdout().lock();
    for line in std::io::stdin().lock().lines() {
        let r: Value = serde_json::from_str(&line.unwrap()).unwrap_or(Value::Null);
        let f = |k: &str| r[k].as_bool().unwrap_or(false);
        let ids: Vec<LlamaToken> = r["ids"].as_array().map(|a| a.iter().filter_map(|v| v.as_i64()).map(|v| LlamaToken(v as i32)).collect()).unwrap_or_default();
        let text: Option<Vec<u8>> = r["text"].as_str().map(|s| s.as_bytes().to_vec()).or_else(|| {
            let h = r["text_hex"].as_str()?;
            (0..h.len()).step_by(2).map(|i| u8::from_str_radix(h.get(i..i + 2)?, 16).ok()).collect()
        });
        let call = || match (&model, r["op"].as_str()) {
            (Err(e), _) => json!({ "error": format!("unsupported: llama-cpp-2 0.1.160 cannot load this vocab: {e}") }),
            (Ok(m), Some("info")) => json!({ "n_vocab": m.vocab().n_tokens() }),
            (Ok(m), Some("encode")) => json!({ "ids": m.vocab().tokenize(&text.clone().unwrap_or_default(), f("add_special"), f("parse_special")).iter().map(|t| t.0).collect::<Vec<_>>() }),
            (Ok(m), Some("decode")) => json!({ "bytes_hex": hex(m.vocab().detokenize(&ids, f("remove_special"), f("unparse_special"))) }),
            (Ok(m), Some("piece")) => json!({ "bytes_hex": hex(m.vocab().token_to_piece(LlamaToken(r["id"].as_i64().unwrap_or(0) as i32), f("special"), None)) }),
            _ => json!({ "error": "bad request" }),
        };
        // The crate's own panics (a Rust panic, not llama.cpp) become an answer, as serve's do.
        let answer = std::panic::catch_unwind(std::panic::AssertUnwindSafe(call)).unwrap_or_else(|p| {
            let msg = p.downcast_ref::<String>().cloned().or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string())).unwrap_or_default();
            json!({ "error": format!("llama-cpp-2 panicked: {msg}") })
        });
        writeln!(out, "{answer}").unwrap();
        out.flush().unwrap();
    }
}
