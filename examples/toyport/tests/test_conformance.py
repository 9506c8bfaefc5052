"""toyport against the pinned llama.cpp, through the llama-conformance pytest plugin.

Installing ``llama-tokenizer-conformance`` registers the plugin (``pytest11``): nothing
to import for the fixture; ``conformance`` and the strategies come from
``harness.pytest_plugin``.
"""

from hypothesis import given, settings

import toyport
from harness.pytest_plugin import conformance, cjk, whitespace


# Golden (every .inp/.out case of the pin) and differential (Hypothesis text, every
# (add_special, parse_special) combination) tests, collected under the name `tokenize`.
@conformance(vocabs=["qwen2", "bert-bge"])
def tokenize(text, add_special, parse_special, vocab):
    return toyport.tokenize(vocab, text, add_special, parse_special)


def test_the_fixture_is_llama_cpp_in_process(llama_reference):
    ref = llama_reference("qwen2")
    assert ref.encode("Hello world", False, False) == [9707, 1879]


# no deadline: the first example loads the vocab (toyport's and llama.cpp's), 0.4 s on a 2-core machine
@settings(deadline=None)
@given(cjk)
def test_cjk_like_llama_cpp(llama_reference, text):
    from reference.vocabs import vocab_path

    want = llama_reference("qwen2").encode(text, True, False)
    assert toyport.tokenize(vocab_path("qwen2"), text) == want


@settings(deadline=None)
@given(whitespace)
def test_whitespace_like_llama_cpp(llama_reference, text):
    from reference.vocabs import vocab_path

    want = llama_reference("bert-bge").encode(text, False, False)
    assert toyport.tokenize(vocab_path("bert-bge"), text, False, False) == want
