//! aprender-port: the conformance harness's JSON-lines protocol over aprender's
//! GGUF tokenizer, `aprender::text::llama_tokenizer::LlamaTokenizer`.
//!
//! It calls the crate the way its module docs show:
//! `LlamaTokenizer::from_gguf_bytes(&gguf_data)`, `encode(text)` (or
//! `encode_with_bos(text)`), `decode(&tokens)`; `n_vocab` is `vocab_size()`.
//! See README.md for how each llama.cpp flag maps, and which it cannot express.
//!
//!     aprender-port --vocab ggml-vocab-llama-spm.gguf < requests.jsonl

use aprender::text::llama_tokenizer::LlamaTokenizer as Tokenizer;
use serde_json::{json, Value};
use std::io::{self, BufRead, Write};
use std::panic::{self, AssertUnwindSafe};

/// Keep in step with the `=` version in Cargo.toml (the crate has no version constant).
const LIBRARY: &str = "aprender 0.72.3";

type Answer = Result<Value, String>;

fn flag(req: &Value, name: &str) -> Result<bool, String> {
    match req.get(name) {
        None => Ok(false),
        Some(Value::Bool(b)) => Ok(*b),
        Some(v) => Err(format!("'{name}' must be true or false, got {v}")),
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn unhex(s: &str) -> Result<Vec<u8>, String> {
    if s.len() % 2 != 0 || !s.is_ascii() {
        return Err(format!("'text_hex' must be a hex string, got {s:?}"));
    }
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).map_err(|e| format!("'text_hex': {e}")))
        .collect()
}

fn ids_of(req: &Value) -> Result<Vec<u32>, String> {
    let list = req
        .get("ids")
        .and_then(Value::as_array)
        .ok_or("'ids' must be a list of integers")?;
    list.iter()
        .map(|v| {
            v.as_u64()
                .and_then(|n| u32::try_from(n).ok())
                .ok_or(format!("bad id {v}"))
        })
        .collect()
}

fn encode(tok: &Tokenizer, req: &Value) -> Answer {
    let text = match (req.get("text"), req.get("text_hex")) {
        (Some(Value::String(s)), None) => s.clone(),
        (None, Some(Value::String(h))) => String::from_utf8(unhex(h)?)
            // The API takes &str: raw non-UTF-8 bytes cannot be passed at all.
            .map_err(|_| {
                "unsupported: aprender encodes &str, so invalid UTF-8 cannot be expressed"
                    .to_string()
            })?,
        _ => {
            return Err(
                "encode needs exactly one of 'text' (a string) or 'text_hex' (hex bytes)".into(),
            );
        }
    };
    let add_special = flag(req, "add_special")?;
    // encode matches every vocab entry, control tokens' texts included.
    if !flag(req, "parse_special")? {
        return Err(UNSUPPORTED_PARSE.into());
    }
    // The two documented calls: encode (no BOS) and encode_with_bos.
    let ids = if add_special { tok.encode_with_bos(&text) } else { tok.encode(&text) };
    Ok(json!({ "ids": ids }))
}

fn decode(tok: &Tokenizer, req: &Value) -> Answer {
    // decode drops every BOS and EOS id and renders all other tokens' text:
    // llama.cpp's remove_special=true with unparse_special=true, only.
    if !flag(req, "remove_special")? || !flag(req, "unparse_special")? {
        return Err(UNSUPPORTED_DECODE.into());
    }
    // The crate returns a String (from_utf8_lossy): a partial UTF-8 character
    // comes back as U+FFFD, and we pass that on as the bytes it is.
    Ok(json!({ "bytes_hex": hex(tok.decode(&ids_of(req)?).as_bytes()) }))
}

fn piece(_tok: &Tokenizer, _req: &Value) -> Answer {
    // aprender has no token-to-piece call: decode(&[id]) would be a detokenize of one token
    // (SentencePiece's leading-space strip), which the crate does not offer as a piece.
    Err(UNSUPPORTED_PIECE.into())
}

const UNSUPPORTED_PARSE: &str =
    "unsupported: aprender's encode matches control-token texts like any vocab entry (no parse_special=false)";
const UNSUPPORTED_DECODE: &str = "unsupported: aprender's decode always drops BOS/EOS and renders \
     every other token (only remove_special=true, unparse_special=true)";
const UNSUPPORTED_PIECE: &str = "unsupported: aprender has no token_to_piece";

struct Port {
    /// The loaded tokenizer, or why the crate refused the vocab: then every
    /// request, info included, is answered "unsupported: <why>".
    tok: Result<Tokenizer, String>,
}

impl Port {
    fn dispatch(&self, req: &Value) -> Answer {
        let tok = self
            .tok
            .as_ref()
            .map_err(|why| format!("unsupported: {LIBRARY} cannot load this vocab: {why}"))?;
        match req.get("op").and_then(Value::as_str) {
            Some("info") => Ok(json!({
                "n_vocab": tok.vocab_size(), "batch": true,
                "unsupported": ["parse_special=false", "remove_special=false", "unparse_special=false", "piece"],
                "library": LIBRARY, "llama_cpp": null, // pure Rust: no llama.cpp inside
            })),
            Some("encode") => encode(tok, req),
            Some("decode") => decode(tok, req),
            Some("piece") => piece(tok, req),
            other => Err(format!(
                "unknown op {other:?}; expected one of: batch, decode, encode, info, piece"
            )),
        }
    }

    /// One answer object for one request; a panic inside the crate becomes an error answer.
    fn answer(&self, req: &Value) -> Value {
        match panic::catch_unwind(AssertUnwindSafe(|| self.dispatch(req))) {
            Ok(Ok(v)) => v,
            Ok(Err(e)) => json!({ "error": e }),
            Err(p) => {
                let msg = p
                    .downcast_ref::<String>()
                    .cloned()
                    .or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()))
                    .unwrap_or_default();
                json!({ "error": format!("aprender panicked: {msg}") })
            }
        }
    }

    /// One request line (bytes) to one answer; a batch answers each of its requests in order.
    fn line(&self, line: &[u8]) -> Value {
        let Ok(text) = std::str::from_utf8(line) else {
            return json!({ "error": "request line is not UTF-8; send JSON in UTF-8" });
        };
        if text.trim().is_empty() {
            return json!({ "error": "empty request line; send one JSON object per line" });
        }
        let req: Value = match serde_json::from_str(text) {
            Ok(v) => v,
            Err(e) => return json!({ "error": format!("bad JSON: {e}") }),
        };
        if req.get("op").and_then(Value::as_str) != Some("batch") {
            return self.answer(&req);
        }
        match req.get("requests").and_then(Value::as_array) {
            Some(reqs) => {
                json!({ "responses": reqs.iter().map(|r| self.answer(r)).collect::<Vec<_>>() })
            }
            None => json!({ "error": "'requests' must be a list of requests" }),
        }
    }
}

fn load(path: &str) -> Result<Tokenizer, String> {
    // Loading can panic on a hostile file: that is a load failure too.
    match panic::catch_unwind(|| {
        let gguf_data = std::fs::read(path).map_err(|e| e.to_string())?;
        Tokenizer::from_gguf_bytes(&gguf_data).map_err(|e| e.to_string())
    }) {
        Ok(r) => r,
        Err(_) => Err("the crate panicked while loading (message on stderr)".into()),
    }
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let vocab = match args.as_slice() {
        [_, flag, path] if flag == "--vocab" => path.clone(),
        _ => {
            eprintln!("usage: aprender-port --vocab PATH.gguf");
            std::process::exit(2);
        }
    };
    let tok = load(&vocab);
    if let Err(why) = &tok {
        eprintln!("aprender-port: {LIBRARY} cannot load {vocab}: {why}");
    }
    // A panic's message goes to stderr by the default hook: stdout stays protocol-only.
    let port = Port { tok };
    let (stdin, stdout) = (io::stdin(), io::stdout());
    let (mut input, mut out) = (stdin.lock(), stdout.lock());
    let mut buf = Vec::new();
    loop {
        buf.clear();
        match input.read_until(b'\n', &mut buf) {
            Ok(0) => break,
            Ok(_) => {}
            Err(e) => {
                eprintln!("aprender-port: reading stdin: {e}");
                std::process::exit(1);
            }
        }
        let reply = port.line(&buf);
        if writeln!(out, "{reply}").and_then(|_| out.flush()).is_err() {
            break; // the harness closed the pipe
        }
    }
}
