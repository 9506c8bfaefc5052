"""The harness's own chat renderer: Jinja2 made to render chat templates as llama.cpp does.

:func:`harness.chat.render.render` is llama-server's ``common_chat_templates_apply`` in
Python over :mod:`harness.chat.engine` (Jinja2 with llama.cpp's semantics); the harness port
(``harness/tokenizer/serve.py``) answers the protocol's ``chat`` op with it and the harness
tokenizer. :mod:`harness.chat.builtin` is llama.cpp's built-in formats (src/llama-chat.cpp, the
``--no-jinja`` route, ``builtin=true``), :mod:`harness.chat.detect` the choice of one for a template.
README, "The harness renderer", lists each Jinja2-vs-llama.cpp difference.
"""
