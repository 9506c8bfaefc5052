//! candle-port: the conformance harness's JSON-lines protocol over candle's
//! GGUF tokenizer: `candle_core::quantized::tokenizer::TokenizerFromGguf`,
//! which builds a Hugging Face `tokenizers::Tokenizer` (byte-level BPE) from
//! a GGUF file's metadata, as candle's quantized model examples do.
//!
//!     candle-port --vocab ggml-vocab-qwen2.gguf < requests.jsonl
//!
//! See README.md for how each llama.cpp flag maps onto the `tokenizers` API.

use candle_core::quantized::{gguf_file, tokenizer::TokenizerFromGguf};
use serde_json::{json, Value};
use std::io::{self, BufRead, Write};
use std::panic::{self, AssertUnwindSafe};
use tokenizers::Tokenizer;

/// Keep in step with the `=` versions in Cargo.toml.
const LIBRARY: &str = "candle-core 0.11.1 (tokenizers 0.23.2)";

type Answer = Result<Value, String>;

/// The tokenizer twice: `tokenizers` has no per-call "parse special" flag,
/// only the tokenizer-wide `set_encode_special_tokens(true)`, which makes
/// encode treat special tokens' texts as plain text.
struct Loaded {
    parsing: Tokenizer,
    literal: Tokenizer,
}

/// candle's errors carry a backtrace after the first line: keep the message.
fn first_line(e: impl std::fmt::Display) -> String {
    e.to_string().lines().next().unwrap_or_default().to_string()
}

fn load(path: &str) -> Result<Loaded, String> {
    let mut file = std::fs::File::open(path).map_err(|e| format!("{path}: {e}"))?;
    let content = gguf_file::Content::read(&mut file).map_err(first_line)?;
    let parsing = Tokenizer::from_gguf(&content).map_err(first_line)?;
    let mut literal = parsing.clone();
    literal.set_encode_special_tokens(true);
    Ok(Loaded { parsing, literal })
}

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

fn encode(t: &Loaded, req: &Value) -> Answer {
    let text = match (req.get("text"), req.get("text_hex")) {
        (Some(Value::String(s)), None) => s.clone(),
        (None, Some(Value::String(h))) => String::from_utf8(unhex(h)?).map_err(|_| {
            "unsupported: tokenizers encodes &str, so invalid UTF-8 cannot be expressed".to_string()
        })?,
        _ => {
            return Err(
                "encode needs exactly one of 'text' (a string) or 'text_hex' (hex bytes)".into(),
            )
        }
    };
    let tok = if flag(req, "parse_special")? {
        &t.parsing
    } else {
        &t.literal
    };
    // add_special_tokens runs the post-processor candle built from
    // tokenizer.ggml.add_bos_token / add_eos_token.
    let enc = tok
        .encode(text, flag(req, "add_special")?)
        .map_err(|e| e.to_string())?;
    Ok(json!({ "ids": enc.get_ids() }))
}

/// `decode(ids, skip_special_tokens)` returns a String, built lossily: bytes
/// that are not UTF-8 come back as U+FFFD, and we pass that on as it is.
fn decode_bytes(t: &Loaded, ids: &[u32], skip_special_tokens: bool) -> Answer {
    let text = t
        .parsing
        .decode(ids, skip_special_tokens)
        .map_err(|e| e.to_string())?;
    Ok(json!({ "bytes_hex": hex(text.as_bytes()) }))
}

fn decode(t: &Loaded, req: &Value) -> Answer {
    // skip_special_tokens=true drops every special token: llama.cpp's
    // unparse_special=false (and remove_special then changes nothing more).
    // Keeping other specials while removing only BOS/EOS has no counterpart.
    match (flag(req, "remove_special")?, flag(req, "unparse_special")?) {
        (false, true) => decode_bytes(t, &ids_of(req)?, false),
        (_, false) => decode_bytes(t, &ids_of(req)?, true),
        (true, true) => Err(
            "unsupported: tokenizers cannot drop BOS/EOS while rendering other special tokens"
                .into(),
        ),
    }
}

fn piece(t: &Loaded, req: &Value) -> Answer {
    let id = req
        .get("id")
        .and_then(Value::as_u64)
        .and_then(|n| u32::try_from(n).ok())
        .ok_or("piece needs an integer 'id'")?;
    // One token decoded alone, as a streaming loop does; id_to_token would
    // give the byte-level vocab entry ("Ġhello"), not its bytes.
    decode_bytes(t, &[id], !flag(req, "special")?)
}

struct Port {
    /// The loaded tokenizer, or why candle refused the vocab: then every
    /// request, info included, is answered "unsupported: <why>".
    tok: Result<Loaded, String>,
}

impl Port {
    fn dispatch(&self, req: &Value) -> Answer {
        let t = self
            .tok
            .as_ref()
            .map_err(|why| format!("unsupported: {LIBRARY} cannot load this vocab: {why}"))?;
        match req.get("op").and_then(Value::as_str) {
            Some("info") => Ok(json!({
                "n_vocab": t.parsing.get_vocab_size(true), "batch": true, "unsupported": [],
                "library": LIBRARY, "llama_cpp": null, // pure Rust: no llama.cpp inside
            })),
            Some("encode") => encode(t, req),
            Some("decode") => decode(t, req),
            Some("piece") => piece(t, req),
            other => Err(format!(
                "unknown op {other:?}; expected one of: batch, decode, encode, info, piece"
            )),
        }
    }

    /// One answer object for one request; a panic inside the library becomes an error answer.
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
                json!({ "error": format!("panicked: {msg}") })
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

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let vocab = match args.as_slice() {
        [_, flag, path] if flag == "--vocab" => path.clone(),
        _ => {
            eprintln!("usage: candle-port --vocab PATH.gguf");
            std::process::exit(2);
        }
    };
    let tok = load(&vocab);
    if let Err(why) = &tok {
        eprintln!("candle-port: {LIBRARY} cannot load {vocab}: {why}");
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
                eprintln!("candle-port: reading stdin: {e}");
                std::process::exit(1);
            }
        }
        let reply = port.line(&buf);
        if writeln!(out, "{reply}").and_then(|_| out.flush()).is_err() {
            break; // the harness closed the pipe
        }
    }
}
