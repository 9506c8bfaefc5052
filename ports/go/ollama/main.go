// Command ollama-port serves ollama's Go tokenizer over the conformance
// harness's JSON-lines protocol (README "The port protocol").
//
// It loads the vocab exactly as ollama's server does for its own engine
// (llm/server.go): model.NewTextProcessor(path), which reads the GGUF
// metadata, picks the model registered for general.architecture and returns
// that model's tokenizer (BytePairEncoding, SentencePiece or WordPiece, with
// the pre-tokenizer regexes the model hard-codes). It then calls only the
// methods ollama's runner calls: Encode(text, addSpecial) and Decode(ids).
//
//	ollama-port --vocab ggml-vocab-qwen2.gguf < requests.jsonl
package main

import (
	"bufio"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"runtime/debug"
	"unicode/utf8"

	fsggml "github.com/ollama/ollama/fs/ggml"
	"github.com/ollama/ollama/model"
	_ "github.com/ollama/ollama/model/models" // registers every architecture ollama's engine runs
	"github.com/ollama/ollama/tokenizer"
)

const module = "github.com/ollama/ollama"

// unsupported lists the flag values ollama's API cannot express:
//   - Encode always splits the vocab's CONTROL and USER_DEFINED texts out as
//     special tokens (chat templates rely on it), so parse_special=false has
//     no counterpart.
//   - Decode(ids) renders every token's text, specials included: that is
//     llama.cpp's remove_special=false, unparse_special=true.
//   - There is no token_to_piece: Decode([]int32{id}) is a detokenize of one
//     token (WordPiece's clean-up removes the space of " !"), and a piece
//     answered with it would credit the adapter's choice to ollama.
var unsupported = []string{"parse_special=false", "remove_special=true", "unparse_special=false", "piece"}

// request holds every field of every op; absent booleans are false.
type request struct {
	Op             string            `json:"op"`
	Text           *string           `json:"text"`
	TextHex        *string           `json:"text_hex"`
	AddSpecial     bool              `json:"add_special"`
	ParseSpecial   bool              `json:"parse_special"`
	IDs            []int32           `json:"ids"`
	RemoveSpecial  bool              `json:"remove_special"`
	UnparseSpecial bool              `json:"unparse_special"`
	ID             *int32            `json:"id"`
	Special        bool              `json:"special"`
	Requests       []json.RawMessage `json:"requests"`
}

type answer map[string]any

type server struct {
	tok     tokenizer.Tokenizer
	loadErr error // set when ollama cannot load the vocab: every answer is "unsupported"
}

// libraryVersion reads ollama's version from the build info, so it always
// matches go.mod rather than a string someone forgot to update.
func libraryVersion() string {
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, dep := range bi.Deps {
			if dep.Path == module {
				return module + " " + dep.Version
			}
		}
	}
	return module + " (unknown version)"
}

func (s *server) info() answer {
	return answer{
		"n_vocab":     len(s.tok.Vocabulary().Values),
		"batch":       true,
		"unsupported": unsupported,
		"library":     libraryVersion(),
		// The tokenizer is pure Go. (ollama also vendors llama.cpp, but only
		// uses it for architectures NewTextProcessor refuses: those vocabs
		// answer "unsupported" here.)
		"llama_cpp": nil,
	}
}

func (s *server) encode(r *request) (answer, error) {
	if (r.Text == nil) == (r.TextHex == nil) {
		return nil, errors.New("encode needs exactly one of 'text' (a string) or 'text_hex' (hex bytes)")
	}
	if !r.ParseSpecial {
		return answer{"error": "unsupported: ollama's Encode always parses special tokens"}, nil
	}
	text := ""
	if r.Text != nil {
		text = *r.Text
	} else {
		raw, err := hex.DecodeString(*r.TextHex)
		if err != nil {
			return nil, fmt.Errorf("'text_hex' must be a hex string: %v", err)
		}
		text = string(raw) // a Go string holds any bytes, as ollama would receive them
	}
	ids, err := s.tok.Encode(text, r.AddSpecial)
	if err != nil {
		return nil, err
	}
	if ids == nil {
		ids = []int32{} // JSON [] rather than null for an empty result
	}
	return answer{"ids": ids}, nil
}

func (s *server) decode(ids []int32) (answer, error) {
	// Ids outside the vocabulary go to ollama as they are: WordPiece answers
	// "invalid token id", the others panic (handle turns that into an error).
	text, err := s.tok.Decode(ids)
	if err != nil {
		return nil, err
	}
	// ollama returns a Go string, which is a byte string: no UTF-8 repair happens here.
	return answer{"bytes_hex": hex.EncodeToString([]byte(text))}, nil
}

// handle answers one parsed request; a panic inside ollama becomes an error answer.
func (s *server) handle(raw []byte) (out answer) {
	defer func() {
		if p := recover(); p != nil {
			out = answer{"error": fmt.Sprintf("ollama panicked: %v", p)}
		}
	}()
	var r request
	if err := json.Unmarshal(raw, &r); err != nil {
		return answer{"error": "bad request: " + err.Error()}
	}
	if s.loadErr != nil {
		return answer{"error": "unsupported: " + s.loadErr.Error()}
	}
	var a answer
	var err error
	switch r.Op {
	case "info":
		a = s.info()
	case "encode":
		a, err = s.encode(&r)
	case "decode":
		if r.RemoveSpecial || !r.UnparseSpecial {
			return answer{"error": "unsupported: ollama's Decode keeps and renders every special token"}
		}
		a, err = s.decode(r.IDs)
	case "piece":
		return answer{"error": "unsupported: ollama's tokenizer has no token_to_piece"}
	case "batch":
		responses := make([]answer, len(r.Requests))
		for i, sub := range r.Requests {
			responses[i] = s.handle(sub)
		}
		a = answer{"responses": responses}
	default:
		return answer{"error": fmt.Sprintf("unknown op %q; expected one of: batch, decode, encode, info, piece", r.Op)}
	}
	if err != nil {
		return answer{"error": err.Error()}
	}
	return a
}

// serve reads one request per line and writes exactly one answer line per
// request, flushed, so answers never shift against requests.
func (s *server) serve(in io.Reader, out io.Writer) error {
	reader := bufio.NewReaderSize(in, 1<<20)
	writer := bufio.NewWriter(out)
	enc := json.NewEncoder(writer)
	enc.SetEscapeHTML(false)
	for {
		line, err := reader.ReadBytes('\n')
		if len(line) > 0 {
			var a answer
			if len(trimSpace(line)) == 0 {
				a = answer{"error": "empty request line; send one JSON object per line"}
			} else if !utf8.Valid(line) {
				a = answer{"error": "request line is not UTF-8; send JSON in UTF-8"}
			} else {
				a = s.handle(line)
			}
			if err := enc.Encode(a); err != nil { // Encode appends the newline
				return err
			}
			if err := writer.Flush(); err != nil {
				return err
			}
		}
		if err == io.EOF {
			return nil
		} else if err != nil {
			return err
		}
	}
}

// describe names the GGUF keys that decide whether ollama's engine takes a
// vocab, so an "unsupported" answer says why (ollama's own error does not).
func describe(path string) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	meta, err := fsggml.Decode(f, 0) // 0: skip array values, only the scalar keys are needed
	if err != nil {
		return ""
	}
	kv := meta.KV()
	return fmt.Sprintf(" (general.architecture=%q, tokenizer.ggml.model=%q, tokenizer.ggml.pre=%q;"+
		" ollama runs such models on its bundled llama.cpp instead)",
		kv.Architecture(), kv.String("tokenizer.ggml.model"), kv.String("tokenizer.ggml.pre"))
}

func trimSpace(b []byte) []byte {
	for len(b) > 0 && (b[0] == ' ' || b[0] == '\t' || b[0] == '\r' || b[0] == '\n') {
		b = b[1:]
	}
	for len(b) > 0 && (b[len(b)-1] == ' ' || b[len(b)-1] == '\t' || b[len(b)-1] == '\r' || b[len(b)-1] == '\n') {
		b = b[:len(b)-1]
	}
	return b
}

func main() {
	vocab := flag.String("vocab", "", "path of the .gguf file to load")
	flag.Parse()
	if *vocab == "" {
		fmt.Fprintln(os.Stderr, "usage: ollama-port --vocab PATH.gguf")
		os.Exit(2)
	}
	// ollama logs through slog; keep it on stderr so stdout carries only answers.
	slog.SetDefault(slog.New(slog.NewTextHandler(os.Stderr, nil)))

	s := &server{}
	s.tok, s.loadErr = model.NewTextProcessor(*vocab)
	if s.loadErr != nil {
		s.loadErr = fmt.Errorf("%s model.NewTextProcessor: %w%s", libraryVersion(), s.loadErr, describe(*vocab))
		slog.Warn("ollama cannot load this vocab", "vocab", *vocab, "error", s.loadErr)
	}
	if err := s.serve(os.Stdin, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "ollama-port:", err)
		os.Exit(1)
	}
}
