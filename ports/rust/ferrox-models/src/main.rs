//! ferrox-models-port: the conformance harness's JSON-lines protocol over the
//! GGUF tokenizers of the `ferrox-models` crate (the Ferrox inference engine).
//!
//! ferrox-models has one tokenizer type per `tokenizer.ggml.model` and no single
//! entry point; the port picks one exactly as the engine's own server does
//! (ferrox-server 0.25.0, `model.rs`, `tokenizer_from_gguf`), encodes with
//! `encode(text, SpecialTokens)`, adds BOS the way the engine's `generate` does
//! (`prepend_bos(&mut ids, should_add_bos_token(file).then(bos_token_id))`) and
//! decodes with `decode_bytes`. See README.md for how each llama.cpp flag maps.
//!
//!     ferrox-models-port --vocab ggml-vocab-llama-spm.gguf < requests.jsonl

use ferrox_gguf::GgufFile;
use ferrox_models::tokenizer::{
    prepend_bos, should_add_bos_token, GgufBpeTokenizer, GgufPlamo2Tokenizer, GgufSpmTokenizer,
    GgufUnigramTokenizer, SpecialTokens,
};
use serde_json::{json, Value};
use std::io::{self, BufRead, Write};
use std::panic::{self, AssertUnwindSafe};

/// Keep in step with the `=` version in Cargo.toml (the crate has no version constant).
const LIBRARY: &str = "ferrox-models 0.25.0";

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

/// The tokenizer ferrox-server's `tokenizer_from_gguf` builds for this vocab.
enum Tok {
    Bpe(Box<GgufBpeTokenizer>),
    Spm(GgufSpmTokenizer),
    Unigram(GgufUnigramTokenizer),
    Plamo2(Box<GgufPlamo2Tokenizer>),
}

/// One call on whichever tokenizer it is (every one has the same three methods).
macro_rules! each {
    ($tok:expr, $t:ident => $call:expr) => {
        match $tok {
            Tok::Bpe($t) => $call,
            Tok::Spm($t) => $call,
            Tok::Unigram($t) => $call,
            Tok::Plamo2($t) => $call,
        }
    };
}

struct Loaded {
    tok: Tok,
    /// The BOS id the engine prepends, or None where should_add_bos_token says no.
    bos: Option<u32>,
}

fn encode(l: &Loaded, req: &Value) -> Answer {
    let text = match (req.get("text"), req.get("text_hex")) {
        (Some(Value::String(s)), None) => s.clone(),
        (None, Some(Value::String(h))) => String::from_utf8(unhex(h)?)
            // The API takes &str: raw non-UTF-8 bytes cannot be passed at all.
            .map_err(|_| {
                "unsupported: ferrox-models encodes &str, so invalid UTF-8 cannot be expressed"
                    .to_string()
            })?,
        _ => {
            return Err(
                "encode needs exactly one of 'text' (a string) or 'text_hex' (hex bytes)".into(),
            );
        }
    };
    // SpecialTokens is llama.cpp's parse_special, one to one (its docs say so).
    let specials = if flag(req, "parse_special")? {
        SpecialTokens::Parse
    } else {
        SpecialTokens::AsText
    };
    let mut ids = each!(&l.tok, t => t.encode(&text, specials));
    // add_special: the engine's generate() adds BOS this way, and nothing else.
    if flag(req, "add_special")? {
        prepend_bos(&mut ids, l.bos);
    }
    Ok(json!({ "ids": ids }))
}

fn decode(l: &Loaded, req: &Value) -> Answer {
    // decode_bytes renders every id's text, special ones included, and drops
    // none: llama.cpp's remove_special=false, unparse_special=true, only.
    if flag(req, "remove_special")? || !flag(req, "unparse_special")? {
        return Err(UNSUPPORTED_DECODE.into());
    }
    let ids = ids_of(req)?;
    Ok(json!({ "bytes_hex": hex(&each!(&l.tok, t => t.decode_bytes(&ids))) }))
}

fn piece(l: &Loaded, req: &Value) -> Answer {
    let id = req
        .get("id")
        .and_then(Value::as_u64)
        .and_then(|n| u32::try_from(n).ok())
        .ok_or("piece needs an integer 'id'")?;
    if !flag(req, "special")? {
        return Err(UNSUPPORTED_PIECE.into());
    }
    // The engine's per-token streaming call: decode_bytes of one id.
    Ok(json!({ "bytes_hex": hex(&each!(&l.tok, t => t.decode_bytes(&[id]))) }))
}

const UNSUPPORTED_DECODE: &str = "unsupported: ferrox-models' decode_bytes renders every token, \
     special ones included, and drops none (only remove_special=false, unparse_special=true)";
const UNSUPPORTED_PIECE: &str = "unsupported: ferrox-models' decode_bytes renders special \
     tokens as their text (only special=true)";

struct Port {
    /// The loaded tokenizer, or why the crate refused the vocab: then every
    /// request, info included, is answered "unsupported: <why>".
    tok: Result<Loaded, String>,
}

impl Port {
    fn dispatch(&self, req: &Value) -> Answer {
        let tok = self
            .tok
            .as_ref()
            .map_err(|why| format!("unsupported: {LIBRARY} cannot load this vocab: {why}"))?;
        match req.get("op").and_then(Value::as_str) {
            Some("info") => Ok(json!({
                "n_vocab": each!(&tok.tok, t => t.vocab_size()), "batch": true,
                "unsupported": ["remove_special=true", "unparse_special=false", "special=false"],
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
                json!({ "error": format!("ferrox-models panicked: {msg}") })
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

fn load(path: &str) -> Result<Loaded, String> {
    // Loading can panic on a hostile file: that is a load failure too.
    match panic::catch_unwind(|| {
        let file = GgufFile::open(path).map_err(|e| e.to_string())?;
        // ferrox-server 0.25.0's tokenizer_from_gguf, arm for arm; it refuses
        // every other tokenizer.ggml.model (bert, rwkv, none, ...).
        let tok = match file.metadata_str("tokenizer.ggml.model") {
            Some("gpt2" | "gemma4") => Tok::Bpe(Box::new(GgufBpeTokenizer::from_gguf(&file).map_err(|e| e.to_string())?)),
            Some("llama") => Tok::Spm(GgufSpmTokenizer::from_gguf(&file).map_err(|e| e.to_string())?),
            Some("t5") => Tok::Unigram(GgufUnigramTokenizer::from_gguf(&file).map_err(|e| e.to_string())?),
            Some("plamo2") => Tok::Plamo2(Box::new(GgufPlamo2Tokenizer::from_gguf(&file).map_err(|e| e.to_string())?)),
            other => {
                return Err(format!(
                    "tokenizer.ggml.model = {other:?}: ferrox's server refuses it \
                     (supported: llama, gpt2, gemma4, t5, plamo2)"
                ))
            }
        };
        // ferrox-server's loaders: BOS only where should_add_bos_token says so.
        let bos = if should_add_bos_token(&file) {
            file.metadata_u64("tokenizer.ggml.bos_token_id").map(|v| v as u32)
        } else {
            None
        };
        Ok(Loaded { tok, bos })
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
            eprintln!("usage: ferrox-models-port --vocab PATH.gguf");
            std::process::exit(2);
        }
    };
    let tok = load(&vocab);
    if let Err(why) = &tok {
        eprintln!("ferrox-models-port: {LIBRARY} cannot load {vocab}: {why}");
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
                eprintln!("ferrox-models-port: reading stdin: {e}");
                std::process::exit(1);
            }
        }
        let reply = port.line(&buf);
        if writeln!(out, "{reply}").and_then(|_| out.flush()).is_err() {
            break; // the harness closed the pipe
        }
    }
}
