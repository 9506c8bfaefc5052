"""The scoreboard of real tokenizer ports against llama.cpp (``make scoreboard``).

The Python port servers answer through the one server loop,
:func:`harness.protocol.server.run_adapter` (it guards stdout and serves a vocab the
library cannot load as unsupported).

- :mod:`.hf`: Hugging Face transformers' GGUF conversion as a port;
- :mod:`.llama_cpp_python`: llama-cpp-python's ``Llama(vocab_only=True)`` as a port;
- :mod:`.client`: probe a port (``unsupported`` vs loaded) and talk to it;
- :mod:`.sample`: agreement on corpus chunks (shrunk by the engine's one shrinker);
- :mod:`.results`: cells built from the conformance report (its schema is there);
- :mod:`harness.reports.scoreboard` (the reports room): the cells, and
  ``scoreboard.md``, ``.html``, ``.json``;
- :mod:`.run`: ``python -m harness.scoreboard``.

The port servers import their libraries only when run, so this package
imports without transformers, torch or llama-cpp-python installed.

>>> from harness.protocol.server import UNSUPPORTED
>>> UNSUPPORTED
'unsupported: '
"""
