"""The scoreboard of real tokenizer ports against llama.cpp (``make scoreboard``).

- :mod:`.protocol`: the JSON-lines port protocol served over any backend;
- :mod:`.server`: the shared command line of the port servers (guards stdout);
- :mod:`.hf`: Hugging Face transformers' GGUF conversion as a port;
- :mod:`.llama_cpp_python`: llama-cpp-python's ``Llama(vocab_only=True)`` as a port;
- :mod:`.client`: probe a port (``unsupported`` vs loaded) and talk to it;
- :mod:`.sample` / :mod:`.shrink`: agreement on corpus chunks, and ddmin shrinking;
- :mod:`.results`: cells built from the conformance report (its schema is there);
- :mod:`.render`: ``scoreboard.md``, ``.html``, ``.json``;
- :mod:`.run`: ``python -m harness.scoreboard``.

The port servers import their libraries only when run, so this package
imports without transformers, torch or llama-cpp-python installed.

>>> from harness.scoreboard.protocol import UNSUPPORTED
>>> UNSUPPORTED
'unsupported: '
"""
