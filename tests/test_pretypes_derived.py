"""Every pre_type that some ``tokenizer.ggml.pre`` string selects, against the reference.

Only a few pre types have a pinned vocab, so for each selected pre_type we
copy gpt-2's vocab with ``tokenizer.ggml.pre`` rewritten to one string that
selects it (written into tmp_path) and compare our ids with llama.cpp's on a
fixed, varied set of texts. A pre string whose load flags differ from its type's
first string (``glm4``'s ignore_merges from 0c1e570 on) is checked too. The types
and strings are those of the selected pin (``PIN``; harness/tokenizer/pins.py). The merges are gpt-2's, so the ids differ between
pre types exactly where their splits differ.

WHITESPACE on a gpt2 model keeps whitespace gaps as words; a gap holding a
space and another char aborts llama.cpp (GGML_ASSERT in find_bpe_rank). Such
texts are not sent to the reference: we check that we raise LlamaAbort.
"""

from __future__ import annotations

import pytest

from harness.tokenizer.algorithms.bpe import LlamaAbort
from harness.tokenizer import pins
from harness.tokenizer.pretypes import ALL_PRE_TYPES, PRE_FLAGS, PRE_NAMES

from harness.conformance.needs import require

TEXTS: list[bytes] = [s.encode() if isinstance(s, str) else s for s in [
    "Hello World! camelCase HTTPServer iPhone ПриВет мир",
    "I'm you're WE'LL they'd it's O'NEIL 'quoted' '",
    "1234567 12 3.14159 ١٢٣ ½ Ⅻ 2024-01-01 9999999999",
    "  two spaces\tand tab\n\nnewlines\r\n\r\n  end  ",
    "你好，世界！中文分词 テスト カタカナ 한국어 텍스트 〇",
    "emoji 🦙👍🏽 🇺🇸 ❤️",
    "x ~é ~~ a~b $100 ^_^ <tag> {json: [1,2]} `q` |p|",
    "a ~~b ~/x ~= Yağmur'da İstanbul'a l'été 2024~",
    "नमस्ते दुनिया  ไทย ภาษา  العربية \u0301x",
    "\u3000\xa0\u2002mixed\u2028spaces\x85\x1c",
    "code: def f(x):\n    return x**2  # comment\n",
    "IMGIMGABZ <sentinel:12> http://example.com/path?q=1",
    "a" * 60 + " " + "1" * 25 + " " + "Ab" * 20,
    "single",
    b"bad \xff bytes \xe6\xad \xc0\x80",
]]


def _first_string_per_type() -> dict[str, str]:
    first: dict[str, str] = {}
    for pre, pre_type in PRE_NAMES.items():
        first.setdefault(pre_type, pre)
    return first


def _strings_with_their_own_flags() -> list[str]:
    """Pre strings whose flags differ from their type's first string (its own load branch)."""
    seen, out = set(), []
    for pre, pre_type in PRE_NAMES.items():
        key = (pre_type, tuple(sorted(PRE_FLAGS[pre].items())))
        if key not in seen:
            seen.add(key)
            if _FIRST[pre_type] != pre:
                out.append(pre)
    return out


_FIRST = _first_string_per_type()
SELECTED = [t for t in ALL_PRE_TYPES if t in _FIRST]
OWN_FLAGS = _strings_with_their_own_flags()


def _check_pre_string(tmp_path, pre: str) -> None:
    from harness.tokenizer.gguf import GGUFValueType as T
    from harness.tokenizer.gguf.writer import rewrite_metadata
    from harness.tokenizer import Tokenizer
    from reference.inproc import InProcessReference
    from reference.vocabs import vocab_path

    path = tmp_path / f"gpt2-pre-{pre}.gguf"
    rewrite_metadata(require(vocab_path, "gpt-2"), path, {"tokenizer.ggml.pre": (T.STRING, pre)})
    tok = Tokenizer.from_gguf(path)
    assert tok.vocab.pre_type == PRE_NAMES[pre]
    ref = require(InProcessReference.load, path)
    bad, compared = [], 0
    for text in TEXTS:
        try:
            ours = tok.encode(text)
        except LlamaAbort:
            continue  # llama.cpp would abort the process here (see module docstring)
        compared += 1
        theirs = ref.encode(text, add_special=False, parse_special=False)
        if ours != theirs:
            bad.append(f"{text!r}:\n  ours      {ours}\n  llama.cpp {theirs}")
    assert compared >= len(TEXTS) // 2, f"pre {pre!r}: only {compared} texts could be compared"
    assert not bad, f"pre {pre!r} ({PRE_NAMES[pre]}): {len(bad)} of {len(TEXTS)} texts differ:\n" + "\n".join(bad)


@pytest.mark.reference
@pytest.mark.parametrize("pre_type", SELECTED)
def test_pre_type_agrees_with_reference(tmp_path, pre_type):
    _check_pre_string(tmp_path, _FIRST[pre_type])


@pytest.mark.reference
@pytest.mark.parametrize("pre", OWN_FLAGS)
def test_pre_string_with_its_own_flags_agrees_with_reference(tmp_path, pre):
    _check_pre_string(tmp_path, pre)


@pytest.mark.reference
@pytest.mark.slow
@pytest.mark.parametrize("pre", sorted(PRE_NAMES))
def test_every_pre_string_agrees_with_reference(tmp_path, pre):
    _check_pre_string(tmp_path, pre)


def test_selected_pre_types():
    new = pins.has("pre_types_hy_v4_spark2_5_ufakzeka")
    assert len(SELECTED) == (57 if new else 54) and {"CHATGLM3", "LLAMA4", "PIXTRAL"}.isdisjoint(SELECTED)
    assert {"HY_V4", "SPARK2_5", "UFAKZEKA"} <= set(SELECTED) if new else not {"HY_V4"} & set(SELECTED)
    assert ("glm4" in OWN_FLAGS) == pins.has("glm4_ignore_merges")


def test_which_texts_whitespace_pre_refuses():
    """On a gpt2 model, WHITESPACE refuses exactly the texts with a whitespace gap like '  ' or ' \\n'."""
    from harness.tokenizer.algorithms.bpe import Session
    from types import SimpleNamespace
    v = SimpleNamespace(vocab_type="bpe", model="gpt2", pre_type="WHITESPACE", path="<tiny>",
                        token_to_id={b"a": 0}, merge_ranks={}, ignore_merges=False, lowercase=False,
                        escape_whitespaces=False)
    refused = []
    for text in TEXTS:
        try:
            Session(v).tokenize(text)
        except LlamaAbort:
            refused.append(TEXTS.index(text))
    # "  two spaces", "दुनिया  ไทย", "\n    return"; text 8's gap (U+3000 NBSP U+2002) has no ' '
    assert refused == [3, 8, 10]
