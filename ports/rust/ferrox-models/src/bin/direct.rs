//! ferrox-models-direct: the same JSON-lines requests, answered by calling
//! ferrox-models literally as the engine's own code does (GgufFile::open,
//! Gguf*Tokenizer::from_gguf by tokenizer.ggml.model, encode(text, SpecialTokens),
//! prepend_bos, decode_bytes), sharing no code with the server.

use ferrox_gguf::GgufFile;
use ferrox_models::tokenizer::*;
use serde_json::{json, Value};
use std::io::{BufRead, Write};

fn main() {
    let path = std::env::args().nth(2).expect("usage: ferrox-models-direct --vocab PATH.gguf");
    let file = GgufFile::open(&path).expect("open");
    let e = |e: TokenizerLoadError| e.to_string();
    type Enc = Box<dyn Fn(&str, SpecialTokens) -> Vec<u32>>;
    type Dec = Box<dyn Fn(&[u32]) -> Vec<u8>>;
    let tok: Result<(Enc, Dec, usize), String> = match file.metadata_str("tokenizer.ggml.model") {
        Some("gpt2" | "gemma4") => GgufBpeTokenizer::from_gguf(&file).map_err(e).map(|t| { let a = std::rc::Rc::new(t); let c = a.clone(); let n = a.vocab_size(); (Box::new(move |s: &str, p| a.encode(s, p)) as Enc, Box::new(move |i: &[u32]| c.decode_bytes(i)) as Dec, n) }),
        Some("llama") => GgufSpmTokenizer::from_gguf(&file).map_err(e).map(|t| { let a = std::rc::Rc::new(t); let c = a.clone(); let n = a.vocab_size(); (Box::new(move |s: &str, p| a.encode(s, p)) as Enc, Box::new(move |i: &[u32]| c.decode_bytes(i)) as Dec, n) }),
        Some("t5") => GgufUnigramTokenizer::from_gguf(&file).map_err(e).map(|t| { let a = std::rc::Rc::new(t); let c = a.clone(); let n = a.vocab_size(); (Box::new(move |s: &str, p| a.encode(s, p)) as Enc, Box::new(move |i: &[u32]| c.decode_bytes(i)) as Dec, n) }),
        Some("plamo2") => GgufPlamo2Tokenizer::from_gguf(&file).map_err(e).map(|t| { let a = std::rc::Rc::new(t); let c = a.clone(); let n = a.vocab_size(); (Box::new(move |s: &str, p| a.encode(s, p)) as Enc, Box::new(move |i: &[u32]| c.decode_bytes(i)) as Dec, n) }),
        other => Err(format!("tokenizer.ggml.model = {other:?}: ferrox's server refuses it (supported: llama, gpt2, gemma4, t5, plamo2)")),
    };
    let bos = should_add_bos_token(&file).then(|| file.metadata_u64("tokenizer.ggml.bos_token_id").map(|v| v as u32)).flatten();
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
            (Err(e), _) => json!({ "error": format!("unsupported: ferrox-models 0.25.0 cannot load this vocab: {e}") }),
            (Ok((_, _, n)), Some("info")) => json!({ "n_vocab": n }),
            (Ok((enc, _, _)), Some("encode")) if text.is_some() => {
                let mut ids = enc(&text.unwrap(), if f("parse_special") { SpecialTokens::Parse } else { SpecialTokens::AsText });
                if f("add_special") { prepend_bos(&mut ids, bos); }
                json!({ "ids": ids })
            }
            (Ok((_, dec, _)), Some("decode")) if !f("remove_special") && f("unparse_special") => json!({ "bytes_hex": hex(dec(&ids)) }),
            (Ok((_, dec, _)), Some("piece")) if f("special") => json!({ "bytes_hex": hex(dec(&[r["id"].as_u64().unwrap_or(0) as u32])) }),
            (Ok(_), Some("encode")) => json!({ "error": "unsupported: ferrox-models encodes &str, so invalid UTF-8 cannot be expressed" }),
            (Ok(_), Some("decode")) => json!({ "error": "unsupported: ferrox-models' decode_bytes renders every token, special ones included, and drops none (only remove_special=false, unparse_special=true)" }),
            (Ok(_), Some("piece")) => json!({ "error": "unsupported: ferrox-models' decode_bytes renders special tokens as their text (only special=true)" }),
            _ => json!({ "error": "bad request" }),
        };
        writeln!(out, "{answer}").unwrap();
        out.flush().unwrap();
    }
}
