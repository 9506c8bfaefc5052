//! llama-cpp-2-port: the conformance harness's JSON-lines protocol over the
//! `llama-cpp-2` crate, safe Rust bindings to llama.cpp. Its tokenizer IS
//! llama.cpp's (the copy llama-cpp-sys-2 bundles), so every flag maps 1:1:
//! `LlamaVocab::tokenize`, `detokenize` and `token_to_piece` call
//! llama_tokenize, llama_detokenize and llama_token_to_piece. What this port
//! measures is the wrapper and the bundled llama.cpp's drift from the pin.
//!
//!     llama-cpp-2-port --vocab ggml-vocab-qwen2.gguf < requests.jsonl

use llama_cpp_2::llama_backend::LlamaBackend;
use llama_cpp_2::model::{params::LlamaModelParams, LlamaModel};
use llama_cpp_2::token::LlamaToken;
use llama_cpp_2::vocab::LlamaVocab;
use serde_json::{json, Value};
use std::fs::File;
use std::io::{self, BufRead, Write};
use std::os::fd::FromRawFd;
use std::panic::{self, AssertUnwindSafe};

/// Keep in step with the `=` versions in Cargo.toml.
const LIBRARY: &str = "llama-cpp-2 0.1.160 (llama-cpp-sys-2 0.1.161)";
/// What llama-cpp-sys-2 0.1.161 bundles: see port.json for how we know.
const LLAMA_CPP: &str =
    "unnamed commit after 0c1e570 (ggml 0.26.0), bundled by llama-cpp-sys-2 0.1.161";

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

/// llama.cpp requires ids in range (an out-of-range id throws inside C++,
/// which aborts the process across the FFI boundary), so check them here.
fn token(vocab: &LlamaVocab, v: &Value) -> Result<LlamaToken, String> {
    let n = vocab.n_tokens();
    match v.as_i64() {
        Some(id) if (0..i64::from(n)).contains(&id) => Ok(LlamaToken(id as i32)),
        _ => Err(format!("id {v} out of range [0, {n})")),
    }
}

fn encode(vocab: &LlamaVocab, req: &Value) -> Answer {
    // tokenize takes bytes, so raw (even invalid UTF-8) text passes through as is.
    let text = match (req.get("text"), req.get("text_hex")) {
        (Some(Value::String(s)), None) => s.as_bytes().to_vec(),
        (None, Some(Value::String(h))) => unhex(h)?,
        _ => {
            return Err(
                "encode needs exactly one of 'text' (a string) or 'text_hex' (hex bytes)".into(),
            )
        }
    };
    let ids = vocab.tokenize(
        &text,
        flag(req, "add_special")?,
        flag(req, "parse_special")?,
    );
    Ok(json!({ "ids": ids.iter().map(|t| t.0).collect::<Vec<_>>() }))
}

fn decode(vocab: &LlamaVocab, req: &Value) -> Answer {
    let list = req
        .get("ids")
        .and_then(Value::as_array)
        .ok_or("'ids' must be a list of integers")?;
    let ids = list
        .iter()
        .map(|v| token(vocab, v))
        .collect::<Result<Vec<_>, _>>()?;
    let bytes = vocab.detokenize(
        &ids,
        flag(req, "remove_special")?,
        flag(req, "unparse_special")?,
    );
    Ok(json!({ "bytes_hex": hex(&bytes) }))
}

fn piece(vocab: &LlamaVocab, req: &Value) -> Answer {
    let id = token(vocab, req.get("id").unwrap_or(&Value::Null))?;
    // lstrip None: llama_token_to_piece's lstrip=0, as the protocol's piece op means.
    let bytes = vocab.token_to_piece(id, flag(req, "special")?, None);
    Ok(json!({ "bytes_hex": hex(&bytes) }))
}

struct Port {
    /// The model loaded vocab-only, or why llama.cpp refused it: then every
    /// request, info included, is answered "unsupported: <why>".
    model: Result<LlamaModel, String>,
}

impl Port {
    fn dispatch(&self, req: &Value) -> Answer {
        let model = self
            .model
            .as_ref()
            .map_err(|why| format!("unsupported: {LIBRARY} cannot load this vocab: {why}"))?;
        let vocab = model.vocab();
        match req.get("op").and_then(Value::as_str) {
            Some("info") => Ok(json!({
                "n_vocab": vocab.n_tokens(), "batch": true, "unsupported": [],
                "library": LIBRARY, "llama_cpp": LLAMA_CPP,
            })),
            Some("encode") => encode(&vocab, req),
            Some("decode") => decode(&vocab, req),
            Some("piece") => piece(&vocab, req),
            other => Err(format!(
                "unknown op {other:?}; expected one of: batch, decode, encode, info, piece"
            )),
        }
    }

    /// One answer object for one request; a panic in the wrapper becomes an error answer.
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
                json!({ "error": format!("llama-cpp-2 panicked: {msg}") })
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

/// Keep fd 1 for the protocol alone: llama.cpp and ggml are C code that may
/// print, so point fd 1 at stderr and answer on a private copy of stdout.
fn protocol_stdout() -> File {
    // SAFETY: plain fd syscalls at start-up, before any other thread exists.
    unsafe {
        let fd = libc::dup(1);
        if fd < 0 || libc::dup2(2, 1) < 0 {
            eprintln!(
                "llama-cpp-2-port: cannot move stdout aside: {}",
                io::Error::last_os_error()
            );
            std::process::exit(1);
        }
        File::from_raw_fd(fd)
    }
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let path = match args.as_slice() {
        [_, flag, path] if flag == "--vocab" => path.clone(),
        _ => {
            eprintln!("usage: llama-cpp-2-port --vocab PATH.gguf");
            std::process::exit(2);
        }
    };
    let mut out = io::LineWriter::new(protocol_stdout());
    // llama.cpp's own log (on stderr) says why a load failed; the binding only returns NULL.
    let backend = LlamaBackend::init().expect("llama backend initialises once");
    let params = LlamaModelParams::default().with_vocab_only(true);
    let model = LlamaModel::load_from_file(&backend, &path, &params)
        .map_err(|e| format!("{e} (llama.cpp's reason is in its log on stderr)"));
    if let Err(why) = &model {
        eprintln!("llama-cpp-2-port: {LIBRARY} cannot load {path}: {why}");
    }
    let port = Port { model };
    let stdin = io::stdin();
    let mut input = stdin.lock();
    let mut buf = Vec::new();
    loop {
        buf.clear();
        match input.read_until(b'\n', &mut buf) {
            Ok(0) => break,
            Ok(_) => {}
            Err(e) => {
                eprintln!("llama-cpp-2-port: reading stdin: {e}");
                std::process::exit(1);
            }
        }
        let reply = port.line(&buf);
        if writeln!(out, "{reply}").and_then(|_| out.flush()).is_err() {
            break; // the harness closed the pipe
        }
    }
}
