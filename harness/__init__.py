"""The harness: a Python port of llama.cpp's tokenizer and the conformance engine."""
