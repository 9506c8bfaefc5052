module llama-conformance/ports/go/ollama

go 1.24.1

require github.com/ollama/ollama v0.17.4

require (
	github.com/dlclark/regexp2 v1.11.4 // indirect
	github.com/emirpasic/gods/v2 v2.0.0-alpha // indirect
	golang.org/x/image v0.22.0 // indirect
	golang.org/x/sync v0.17.0 // indirect
)
