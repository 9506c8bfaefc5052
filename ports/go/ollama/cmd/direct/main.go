// Command ollama-direct is the ollama port's direct program (README
// "## Adapter check"): it answers the harness's encode, decode and piece
// requests by calling ollama's tokenizer literally as ollama itself does,
// sharing no code with serve (main.go), so the harness can compare the two.
//
//   - llm/server.go loads the tokenizer with model.NewTextProcessor(modelPath)
//     (the model/models import registers the architectures);
//
//   - runner/ollamarunner/runner.go tokenizes with Encode(part, i == 0) and
//     renders each generated token with Decode([]int32{token}).
//
//     ollama-direct --vocab ggml-vocab-qwen2.gguf < requests.jsonl
package main

import (
	"bufio"
	"encoding/hex"
	"encoding/json"
	"flag"
	"fmt"
	"os"

	"github.com/ollama/ollama/model"
	_ "github.com/ollama/ollama/model/models"
	"github.com/ollama/ollama/tokenizer"
)

type request struct {
	Op             string  `json:"op"`
	Text           *string `json:"text"`
	TextHex        *string `json:"text_hex"`
	AddSpecial     bool    `json:"add_special"`
	ParseSpecial   bool    `json:"parse_special"`
	IDs            []int32 `json:"ids"`
	RemoveSpecial  bool    `json:"remove_special"`
	UnparseSpecial bool    `json:"unparse_special"`
	ID             int32   `json:"id"`
	Special        bool    `json:"special"`
}

type answer map[string]any

func hexOf(text string, err error) answer {
	if err != nil {
		return answer{"error": err.Error()}
	}
	return answer{"bytes_hex": hex.EncodeToString([]byte(text))}
}

func handle(tok tokenizer.Tokenizer, loadErr error, line []byte) (a answer) {
	defer func() { // a panic inside ollama (e.g. an id outside the vocabulary) is one error answer
		if p := recover(); p != nil {
			a = answer{"error": fmt.Sprintf("ollama panicked: %v", p)}
		}
	}()
	var r request
	if err := json.Unmarshal(line, &r); err != nil {
		return answer{"error": err.Error()}
	}
	if loadErr != nil {
		return answer{"error": "unsupported: model.NewTextProcessor: " + loadErr.Error()}
	}
	switch {
	case r.Op == "info":
		return answer{"n_vocab": len(tok.Vocabulary().Values)}
	case r.Op == "encode" && r.ParseSpecial:
		text := ""
		if r.Text != nil {
			text = *r.Text
		} else if r.TextHex != nil {
			b, err := hex.DecodeString(*r.TextHex)
			if err != nil {
				return answer{"error": err.Error()}
			}
			text = string(b)
		}
		ids, err := tok.Encode(text, r.AddSpecial)
		if err != nil {
			return answer{"error": err.Error()}
		}
		return answer{"ids": append([]int32{}, ids...)} // [] rather than null when empty
	case r.Op == "decode" && !r.RemoveSpecial && r.UnparseSpecial:
		return hexOf(tok.Decode(r.IDs))
	}
	return answer{"error": "unsupported: not expressible with Encode(text, addSpecial) / Decode(ids)"}
}

func main() {
	vocab := flag.String("vocab", "", "the .gguf file")
	flag.Parse()
	tok, loadErr := model.NewTextProcessor(*vocab)
	in := bufio.NewReaderSize(os.Stdin, 1<<20)
	out := bufio.NewWriter(os.Stdout)
	enc := json.NewEncoder(out)
	enc.SetEscapeHTML(false)
	for {
		line, err := in.ReadBytes('\n')
		if len(line) > 0 {
			enc.Encode(handle(tok, loadErr, line))
			out.Flush()
		}
		if err != nil {
			return
		}
	}
}
