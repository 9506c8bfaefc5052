// Command ollama-chat is the ollama port's chat program: it answers the
// conformance harness's `chat` op (harness/protocol/chat.py) the way ollama
// renders a chat for a model imported from a GGUF (README "## Chat"):
//
//   - `ollama create` from a GGUF keeps its chat template only through
//     template.Named(tokenizer.chat_template): the nearest of ollama's own Go
//     templates (Levenshtein distance < 100), else no template layer, and the
//     model runs with template.DefaultTemplate ("{{ .Prompt }}")
//     (server/model.go detectChatTemplate, server/images.go GetModel);
//
//   - /v1/chat/completions turns the OpenAI request into an api.ChatRequest
//     with openai.FromChatRequest (reasoning_effort "none" -> Think false);
//
//   - chatPrompt renders with Template.Execute(template.Values{Messages, Tools,
//     Think, ThinkLevel, IsThinkSet}) (server/prompt.go renderPrompt);
//
//   - the runner tokenizes the prompt with its model's Encode(prompt, true)
//     (runner/ollamarunner/runner.go inputs), the tokenizer serve uses.
//
//     ollama-chat --vocab ggml-vocab-qwen2.gguf < requests.jsonl
package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"unicode/utf8"

	fsggml "github.com/ollama/ollama/fs/ggml"
	"github.com/ollama/ollama/model"
	_ "github.com/ollama/ollama/model/models"
	"github.com/ollama/ollama/openai"
	"github.com/ollama/ollama/template"
	"github.com/ollama/ollama/tokenizer"
)

const notHere = "unsupported: the chat program answers chat only (serve answers the tokenizer ops)"

type request struct {
	Op                  string            `json:"op"`
	Template            *string           `json:"template"`
	Messages            json.RawMessage   `json:"messages"`
	Tools               json.RawMessage   `json:"tools"`
	AddGenerationPrompt bool              `json:"add_generation_prompt"`
	Kwargs              map[string]any    `json:"kwargs"`
	Builtin             bool              `json:"builtin"`
	Requests            []json.RawMessage `json:"requests"`
}

type answer map[string]any

type server struct {
	tok         tokenizer.Tokenizer
	loadErr     error
	ggufTmpl    string // tokenizer.chat_template
	nTokens     int    // tokenizer.ggml.tokens' length
	namedCache  map[string]*template.Template
	namedChosen map[string]string
}

// modelTemplate is the template an imported model runs with: template.Named's
// choice parsed (images.go reads the layer with template.Parse), else the default.
func (s *server) modelTemplate(jinja string) (*template.Template, string, error) {
	if t, ok := s.namedCache[jinja]; ok {
		return t, s.namedChosen[jinja], nil
	}
	t, name := template.DefaultTemplate, "DefaultTemplate ({{ .Prompt }}): template.Named found no match"
	if jinja != "" {
		if n, err := template.Named(jinja); err == nil {
			parsed, err := template.Parse(string(n.Bytes)) // the .gotmpl (n.Template is the Jinja it matches)
			if err != nil {
				return nil, "", fmt.Errorf("template.Parse(%s): %w", n.Name, err)
			}
			t, name = parsed, n.Name
		}
	}
	s.namedCache[jinja], s.namedChosen[jinja] = t, name
	return t, name, nil
}

func (s *server) chat(r *request) (answer, error) {
	if r.Builtin {
		return answer{"error": "unsupported: builtin: ollama renders its own Go templates, not llama.cpp's built-in formats"}, nil
	}
	// The messages as ollama's OpenAI API reads them: what it cannot read (tool call arguments
	// as an object, not the API's JSON string) is a request it refuses, so unsupported here.
	var messages []openai.Message
	if err := json.Unmarshal(r.Messages, &messages); err != nil {
		return answer{"error": "unsupported: messages ollama's OpenAI chat API cannot read (" + err.Error() +
			"): it takes the OpenAI format, tool call arguments as a JSON string"}, nil
	}
	body := map[string]any{"model": "port", "messages": messages}
	if len(r.Tools) > 0 && string(r.Tools) != "null" {
		body["tools"] = r.Tools
	}
	for k, v := range r.Kwargs {
		if k == "enable_thinking" && v == false {
			body["reasoning_effort"] = "none" // the OpenAI API's way to turn thinking off
			continue
		}
		return answer{"error": fmt.Sprintf("unsupported: template kwarg %q: ollama's templates see only Messages, Tools, Think", k)}, nil
	}
	// ollama's templates end open for the model after the last message: a generation
	// prompt after a user/tool message, the assistant's text continued after an assistant one.
	lastAssistant := len(messages) > 0 && messages[len(messages)-1].Role == "assistant"
	if r.AddGenerationPrompt == lastAssistant {
		return answer{"error": "unsupported: add_generation_prompt: ollama's templates decide it from the last message's role"}, nil
	}
	raw, err := json.Marshal(body)
	if err != nil {
		return nil, err
	}
	var oreq openai.ChatCompletionRequest
	if err := json.Unmarshal(raw, &oreq); err != nil {
		return nil, fmt.Errorf("openai.ChatCompletionRequest: %w", err)
	}
	creq, err := openai.FromChatRequest(oreq)
	if err != nil {
		return answer{"raised": "openai.FromChatRequest: " + err.Error()}, nil
	}
	jinja := s.ggufTmpl
	if r.Template != nil {
		jinja = *r.Template
	}
	tmpl, _, err := s.modelTemplate(jinja)
	if err != nil {
		return nil, err
	}
	values := template.Values{Messages: creq.Messages, Tools: creq.Tools, IsThinkSet: creq.Think != nil}
	if creq.Think != nil {
		values.Think, values.ThinkLevel = creq.Think.Bool(), creq.Think.String()
	}
	var b bytes.Buffer
	if err := tmpl.Execute(&b, values); err != nil {
		return answer{"raised": "Template.Execute: " + err.Error()}, nil
	}
	a := answer{"text_hex": fmt.Sprintf("%x", b.Bytes())}
	if utf8.Valid(b.Bytes()) {
		a = answer{"text": b.String()}
	}
	// No ids where ollama's Go engine refuses the architecture: ollama tokenizes those
	// with its bundled llama.cpp runner, which this pure-Go program does not have.
	if s.tok != nil {
		ids, err := s.tok.Encode(b.String(), true)
		if err != nil {
			return nil, err
		}
		if ids == nil {
			ids = []int32{}
		}
		a["ids"] = ids
	}
	return a, nil
}

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
	nVocab := s.nTokens
	if s.tok != nil {
		nVocab = len(s.tok.Vocabulary().Values)
	}
	var err error
	switch r.Op {
	case "info":
		_, name, _ := s.modelTemplate(s.ggufTmpl)
		a = answer{"n_vocab": nVocab, "batch": true, "library": "github.com/ollama/ollama v0.17.4 template", "template": name}
	case "chat":
		a, err = s.chat(&r)
	case "encode", "decode", "piece":
		return answer{"error": notHere}
	case "batch":
		responses := make([]answer, len(r.Requests))
		for i, sub := range r.Requests {
			responses[i] = s.handle(sub)
		}
		a = answer{"responses": responses}
	default:
		return answer{"error": fmt.Sprintf("unknown op %q; expected one of: batch, chat, info", r.Op)}
	}
	if err != nil {
		return answer{"error": err.Error()}
	}
	return a
}

func (s *server) serve(in io.Reader, out io.Writer) error {
	reader := bufio.NewReaderSize(in, 1<<20)
	writer := bufio.NewWriter(out)
	enc := json.NewEncoder(writer)
	enc.SetEscapeHTML(false)
	for {
		line, err := reader.ReadBytes('\n')
		if len(bytes.TrimSpace(line)) > 0 {
			var a answer
			if !utf8.Valid(line) {
				a = answer{"error": "request line is not UTF-8; send JSON in UTF-8"}
			} else {
				a = s.handle(line)
			}
			if err := enc.Encode(a); err != nil {
				return err
			}
			if err := writer.Flush(); err != nil {
				return err
			}
		} else if len(line) > 0 {
			enc.Encode(answer{"error": "empty request line; send one JSON object per line"})
			writer.Flush()
		}
		if err == io.EOF {
			return nil
		} else if err != nil {
			return err
		}
	}
}

// chatTemplate reads tokenizer.chat_template and the token count (info's n_vocab
// when ollama's Go engine refuses the vocab) from the GGUF.
func chatTemplate(path string) (string, int, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", 0, err
	}
	defer f.Close()
	meta, err := fsggml.Decode(f, -1)
	if err != nil {
		return "", 0, err
	}
	return meta.KV().ChatTemplate(), len(meta.KV().Strings("tokenizer.ggml.tokens")), nil
}

func main() {
	vocab := flag.String("vocab", "", "path of the .gguf file to load")
	flag.Parse()
	if *vocab == "" {
		fmt.Fprintln(os.Stderr, "usage: ollama-chat --vocab PATH.gguf")
		os.Exit(2)
	}
	slog.SetDefault(slog.New(slog.NewTextHandler(os.Stderr, nil)))
	s := &server{namedCache: map[string]*template.Template{}, namedChosen: map[string]string{}}
	var err error
	if s.tok, err = model.NewTextProcessor(*vocab); err != nil {
		s.tok = nil
		slog.Warn("ollama's Go engine refuses this vocab: the chat answers carry no ids", "vocab", *vocab, "error", err)
	}
	if s.ggufTmpl, s.nTokens, err = chatTemplate(*vocab); err != nil {
		s.loadErr = errors.New("cannot read the GGUF's metadata: " + err.Error())
	}
	if err := s.serve(os.Stdin, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "ollama-chat:", err)
		os.Exit(1)
	}
}
