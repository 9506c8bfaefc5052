"""The diagnosis catalogue (harness/diagnosis): each rule variant names exactly the bug it models.

Three kinds of evidence:

1. Every variant has a *witness*: a short case on a cheap vocab where it answers something
   else than llama.cpp. A port with exactly that bug (its own output, and where written an
   independent few-line adapter over the harness tokenizer that must agree with it) is
   explained by that variant *first*; llama.cpp's own answer there is not claimed by it.
2. The harness's own broken ports, written independently of the catalogue: every mutant of
   tests/ports/mutants.py and every single-bug mode of tests/ports/faulty_port.py, on a few
   texts that show its bug, is explained (jointly over its divergent cases) by its variant.
3. The catalogue is documented: names unique, a rule with its llama.cpp source for each,
   and the README's table is ``markdown_table()``.
"""

from __future__ import annotations

import argparse
import re
from pathlib import Path

import pytest

from harness.diagnosis import CATALOGUE, Case, explain, markdown_table
from harness.diagnosis.base import FAMILIES, exact
from harness.tokenizer import Tokenizer
from harness.tokenizer.gguf import GGUFValueType as T
from harness.tokenizer.gguf.writer import write_gguf
from tests.support.vocabs import K, bpe, spm

# make test runs this module on one worker: its tokenizers and sessions load once, not on both
pytestmark = pytest.mark.xdist_group("test_diagnosis")

REPO = Path(__file__).resolve().parents[1]
BY_NAME = {v.name: v for v in CATALOGUE}
S = "\u2581"


@pytest.fixture(scope="module")
def toks(tmp_path_factory):
    """``toks(name)``: the harness tokenizer of a pinned vocab, or of a tiny hand-built one:
    ``tiny-bpe`` (tokens a b c ab bc abc, merges 'a b' 'b c': 'abc' merges to ab+c although it
    is a token) and ``tiny-spm`` (ab and bc score alike; bc has the lower id)."""
    from reference.vocabs import vocab_path
    from tests.ports.mutants import mutant_vocab
    cache: dict[str, Tokenizer] = {}
    tmp = tmp_path_factory.mktemp("diagnosis")

    def tiny(name: str):
        if name == "tiny-digits":
            meta = _byte_bpe(["1\u00b2", "1\U00011f50"])
        elif name == "tiny-bpe":
            meta = bpe([b"a", b"b", b"c", b"ab", b"bc", b"abc"], [b"a b", b"b c"], **{K.PRE: (T.STRING, "gpt-2")})
        else:
            tokens = [b"<unk>", b"<s>", b"</s>", S.encode(), b"a", b"b", b"c", b"bc", b"ab"]
            meta = spm(**{K.TOKENS: (T.ARRAY, tokens, T.STRING),
                          K.SCORES: (T.ARRAY, [0.0, 0.0, 0.0, -1.0, -2.0, -2.0, -2.0, -1.5, -1.5], T.FLOAT32),
                          K.TOKEN_TYPE: (T.ARRAY, [2, 3, 3, 1, 1, 1, 1, 1, 1], T.INT32)})
        write_gguf(tmp / f"{name}.gguf", meta)
        return tmp / f"{name}.gguf"

    def get(name: str) -> Tokenizer:
        if name not in cache:
            path = tiny(name) if name.startswith("tiny-") else (
                mutant_vocab("lstrip_ignored") if name == "gpt-2+mask" else vocab_path(name))
            cache[name] = Tokenizer.from_gguf(path)
        return cache[name]
    return get


def _byte_bpe(words: list[str]) -> dict:
    """A GPT-2 byte-level BPE vocab (pre gpt-2) whose merges build each word left to right."""
    from harness.tokenizer.unicode import BYTE_TO_UNICODE, byte_encode
    tokens = [c.encode() for c in BYTE_TO_UNICODE]
    merges = []
    for word in words:
        mapped = byte_encode(word)
        for k in range(2, len(mapped) + 1):
            left, right = mapped[:k - 1], mapped[k - 1]
            merges.append(f"{left} {right}".encode())
            tokens.append(mapped[:k].encode())
    return bpe(list(dict.fromkeys(tokens)), merges, **{K.PRE: (T.STRING, "gpt-2")})


def enc(tok, text, add=False, parse=False):
    return tok.encode(text, add_special=add, parse_special=parse)


# name -> (vocab, [(check, input, flags), ...], param, independent adapter (tok, input, a, b) -> output or None).
# A second case pins the variant among its look-alikes (its port answer may be llama.cpp's own).
WITNESSES = {
    # the flag itself ignored: bert-bge's CLS and SEP come without add_special (one cause, not one
    # per class of the text's first character)
    "add_special_always": ("bert-bge", [("encode", "Hello world", (False, False))], None,
                           lambda tok, t, a, p: enc(tok, t, True, p)),
    "add_bos_forced": ("qwen2", [("encode", "Hello world", (True, False))], None,
                       lambda tok, t, a, p: [tok.vocab.bos] + enc(tok, t, a, p)),
    "add_bos_ignored": ("llama-spm", [("encode", "Hello world", (True, False))], None,
                        lambda tok, t, a, p: enc(tok, t, False, p)),
    "add_eos_forced": ("qwen2", [("encode", "Hello world", (True, False))], None,
                       lambda tok, t, a, p: enc(tok, t, a, p) + [tok.vocab.eos]),
    "add_eos_ignored": ("nomic-bert-moe", [("encode", "Hello world", (True, False))], None,
                        lambda tok, t, a, p: enc(tok, t, a, p)[:-1]),
    "no_bos_on_empty": ("llama-spm", [("encode", "", (True, False))], None, lambda tok, t, a, p: []),
    "chat_token_as_bos": ("qwen2", [("encode", "Hello world", (True, False))], (151644, "<|im_start|>"),
                          lambda tok, t, a, p: [151644] + enc(tok, t, a, p)),
    "long_input_chunked": ("qwen2", [("encode", "Hello world " * 30, (False, False))], (256, "chars"),
                           lambda tok, t, a, p: enc(tok, t[:256]) + enc(tok, t[256:])),
    "extra_token_appended": ("qwen2", [("encode", "Hello world", (False, False))], (0, "!"),
                             lambda tok, t, a, p: enc(tok, t, a, p) + [0]),
    "lstrip_ignored": ("gpt-2+mask", [("encode", "a <mask> b", (False, True))], None, None),
    "rstrip_ignored": ("phi-3", [("encode", "a </s> b", (False, True))], None, None),
    "user_defined_as_control": ("qwen2", [("encode", "x[PAD151843]", (False, False))], None, None),
    "user_defined_not_matched": ("qwen2", [("encode", "x[PAD151843]", (False, True))], None, None),
    "specials_never_parsed": ("qwen2", [("encode", "<|im_start|>x", (False, True))], None,
                              lambda tok, t, a, p: enc(tok, t, a, False)),
    "specials_always_parsed": ("llama-spm", [("encode", "<s>Hi</s>", (False, False))], None,
                               lambda tok, t, a, p: enc(tok, t, a, True)),
    "whitespace_js": ("qwen2", [("encode", " \x85a", (False, False))], None, None),
    "whitespace_icu": ("qwen2", [("encode", "  \x0b", (False, False))], None, None),
    "whitespace_python_re": ("qwen2", [("encode", "  \x1c", (False, False))], None, None),
    "whitespace_java_iswhitespace": ("qwen2", [("encode", " \xa0x", (False, False))], None, None),
    "whitespace_java": ("qwen2", [("encode", " \u1680a", (False, False))], None, None),
    "whitespace_go": ("qwen2", [("encode", " \u1680a", (False, False)), ("encode", "  \x0b", (False, False))],
                      None, None),
    "digits_python_re": ("qwen2", [("encode", " ²", (False, False))], None, None),
    # U+00B2 is \p{No}: no platform's \d has it; U+11F50 (KAWI DIGIT ZERO, Unicode 15.0) is \p{Nd} to ICU
    # but unknown to Python 3.11: only a vocab with a token for it tells the two apart
    "digits_nd": ("tiny-digits", [("encode", "1²", (False, False)), ("encode", "1\U00011f50", (False, False))],
                  None, None),
    "digits_ascii": ("qwen2", [("encode", " \u0a66", (False, False))], None, None),
    "unicode_older": ("bert-bge", [("encode", "\u0cf3", (False, False))], "Unicode 14.0.0 (Python 3.11 unicodedata)",
                      None),
    "unicode_newer": ("bert-bge", [("encode", "x\u0897y", (False, False))], "Unicode 16.0.0", None),
    "crlf_folded": ("qwen2", [("encode", "a\r\nb", (False, False))], None,
                    lambda tok, t, a, p: enc(tok, t.replace("\r\n", "\n"), a, p)),
    "curly_apostrophe": ("qwen2", [("encode", "it’s", (False, False))], None,
                         lambda tok, t, a, p: enc(tok, "it's", a, p)),
    "native_digits_ascii": ("qwen2", [("encode", "a٣b", (False, False))], None,
                            lambda tok, t, a, p: enc(tok, "a3b", a, p)),
    "leading_whitespace_stripped": ("gpt-2", [("encode", "\u3000\ta", (False, False))], None,
                                    lambda tok, t, a, p: enc(tok, "a", a, p)),
    "char_read_as_space": ("qwen2", [("encode", "a\x85b", (False, False))], "\x85",
                           lambda tok, t, a, p: enc(tok, "a b", a, p)),
    "char_dropped": ("qwen2", [("encode", "a\u200db", (False, False))], "\u200d",
                     lambda tok, t, a, p: enc(tok, "ab", a, p)),
    "nfc_input": ("qwen2", [("encode", "e\u0301", (False, False))], None, lambda tok, t, a, p: enc(tok, "é", a, p)),
    "nfkc_input": ("qwen2", [("encode", "a²b", (False, False))], None, lambda tok, t, a, p: enc(tok, "a2b", a, p)),
    # candle-core 0.11.1: pre types it does not know get GPT-2's ByteLevel (its regexes, a prefix space)
    "prefix_space_added": ("gpt-2", [("encode", "Hello", (False, False))], None,
                           lambda tok, t, a, p: enc(tok, " " + t, a, p)),
    "pre_type_gpt2_fallback": ("aquila", [("encode", " \n:", (False, False))], None, None),
    "contractions_case_sensitive": ("qwen2", [("encode", "x'Some", (False, False))], None, None),
    "contractions_case_insensitive": ("gpt-2", [("encode", "x'Some", (False, False))], None,
                                      lambda tok, t, a, p: enc(tok, "x") + enc(tok, "'S") + enc(tok, "ome")),
    "digits_single": ("gpt-2", [("encode", "12345", (False, False))], "split first",
                      lambda tok, t, a, p: [i for c in t for i in enc(tok, c)]),
    "digits_groups_of_3": ("gpt-2", [("encode", " 1234", (False, False))], None,
                           lambda tok, t, a, p: enc(tok, " 123") + enc(tok, "4")),
    "digits_unbounded": ("llama-bpe", [("encode", " 1234", (False, False))], None,
                         lambda tok, t, a, p: enc(tok, " ") + [tok.vocab.token_to_id[b"1234"]]
                         if b"1234" in tok.vocab.token_to_id else None),
    "digits_encoded_apart": ("llama-spm", [("encode", "a1b", (False, False))], None,
                             lambda tok, t, a, p: enc(tok, "a") + enc(tok, "1") + enc(tok, "b")),
    # candle, ollama, shimmytok and transformers' conversion: qwen2's '</s>' (NORMAL in the GGUF) is
    # not made CONTROL, while '<|endoftext|>' (CONTROL in the file) is still parsed
    "token_types_not_overridden": ("qwen2", [("encode", "a</s>", (False, True)), ("encode", "a<|endoftext|>", (False, True))],
                                   None, lambda tok, t, a, p: tok.encode(t, add_special=a, parse_special=False)),
    # candle marks command-r's USER_DEFINED tokens special: parsed only with parse_special, and
    # skipped in decode and pieces like control tokens
    "user_defined_typed_control": ("command-r", [("piece", (255015,), (False, False)),
                                                 ("encode", "a<|USER_6_TOKEN|>", (False, False))],
                                   None, lambda tok, ids, s, _: b""),
    # shimmytok 0.8.4: no [CLS]/[SEP] on bert-bge; nomic-bert-moe's charsmap and
    # remove_extra_whitespaces ignored, its U+2581 and UNUSED tokens printed raw; remove_special
    # drops every special (skip_special_tokens); each token's bytes made text alone
    "add_special_ignored": ("bert-bge", [("encode", "a", (True, False))], None, lambda tok, t, a, p: enc(tok, t)),
    "ugm_charsmap_ignored": ("nomic-bert-moe", [("encode", "\u24ea", (False, False))], None, None),
    "ugm_extra_whitespaces_kept": ("nomic-bert-moe", [("encode", "a  b", (False, False))], None, None),
    "whitespace_marker_kept": ("nomic-bert-moe", [("piece", (218068,), (False, False))], None,
                               lambda tok, ids, s, _: tok.vocab.tokens[ids[0]]),
    "unused_rendered": ("nomic-bert-moe", [("piece", (250002,), (False, False))], None,
                        lambda tok, ids, s, _: tok.vocab.tokens[ids[0]]),
    "remove_special_drops_every_special": ("bert-bge", [("decode", (102,), (True, True)), ("decode", (102,), (False, True))],
                                           None, lambda tok, ids, r, u: b""),
    "decode_lossy_per_token": ("gpt-2", [("decode", (142, 114), (False, False))], None,
                               lambda tok, ids, r, u: b"".join(tok.token_to_piece(i).decode("utf-8", "replace").encode()
                                                               for i in ids)),
    # ollama's special list takes CONTROL and USER_DEFINED only: llama-spm's '<unk>' stays text
    "unknown_type_not_matched": ("llama-spm", [("encode", "a<unk>", (False, True)), ("encode", "a<s>", (False, True))],
                                 None, lambda tok, t, a, p: tok.encode(t, add_special=a, parse_special=False)),
    # transformers' conversion: phi-3's [PAD32011] (UNKNOWN) is a plain vocab entry
    "unknown_type_as_normal": ("phi-3", [("piece", (32011,), (False, False)), ("encode", "a[PAD32050]", (False, True))],
                               None, lambda tok, ids, s, _: tok.vocab.tokens[ids[0]]),
    "ignore_merges_missing": ("llama-bpe", [("encode", " Việt", (False, False))], None, None),
    "ignore_merges_forced": ("tiny-bpe", [("encode", "abc", (False, False))], None, lambda tok, t, a, p: [5]),
    # de.kherud:llama 4.2.0 (llama.cpp b4916) on bert-bge: U+0739 (a Syriac mark) kept, so [UNK]
    "wpm_accents_kept": ("bert-bge", [("encode", "\u0739 a", (False, False))], None, None),
    "merges_by_score": ("aquila", [("encode", "thunderstorm", (False, False))], None, None),
    "merges_by_rank": ("tiny-spm", [("encode", "abc", (False, False))], None, lambda tok, t, a, p: [3, 4, 7]),
    "byte_fallback_missing": ("llama-spm", [("encode", "a\x85b", (False, False))], None, None),
    "regex_on_byte_mapped_text": ("qwen2", [("encode", "a\ufeffb", (False, False))], None, None),
    "decode_leading_space_stripped_after_bos": ("llama-spm", [("decode", (1, 15043, 3186), (True, False))], None,
                                                lambda tok, ids, r, u: b"Hello world"),
    "decode_leading_space_kept": ("llama-spm", [("decode", (15043, 3186), (False, False))], None,
                                  lambda tok, ids, r, u: b" Hello world"),
    "decode_strips_leading_space": ("qwen2", [("decode", (23811,), (False, False))], None,
                                    lambda tok, ids, r, u: tok.decode(ids)[1:]),
    "decode_no_clean_spaces": ("gpt-2", [("decode", "x != y and a.b == c ?", (False, False))], None,
                               lambda tok, ids, r, u: b"".join(tok.token_to_piece(i) for i in ids)),
    "decode_clean_spaces_forced": ("qwen2", [("decode", "x , y ?", (False, False))], None,
                                   lambda tok, ids, r, u: b"x, y?"),
    "remove_special_ignored": ("llama-spm", [("decode", (1, 15043, 3186), (True, True))], None,
                               lambda tok, ids, r, u: b"<s> Hello world"),
    "remove_special_forced": ("llama-spm", [("decode", (1, 15043, 3186), (False, True))], None,
                              lambda tok, ids, r, u: b" Hello world"),
    "specials_always_rendered": ("llama-spm", [("decode", (1, 15043, 3186), (False, False))], None,
                                 lambda tok, ids, r, u: b"<s> Hello world"),
    # @huggingface/transformers on deepseek: the converted tokenizer.json lost BOS's CONTROL type
    "specials_as_text": ("deepseek-llm", [("decode", (100000, 15), (True, False))], None,
                         lambda tok, ids, r, u: b"".join(tok.token_to_piece(i, special=True) for i in ids)),
    # @huggingface/transformers: a piece is decode([id]); aquila cleans ' .' to '.'
    "piece_is_decode": ("aquila", [("piece", (1968,), (True, False))], None,
                        lambda tok, ids, s, _: tok.token_to_piece(ids[0]).replace(b" .", b".")),
    "specials_never_rendered": ("llama-spm", [("piece", (1,), (True, False))], None, lambda tok, ids, s, _: b""),
    "byte_token_as_text": ("llama-spm", [("piece", (13,), (False, False))], None, lambda tok, ids, s, _: b"<0x0A>"),
    "byte_token_as_codepoint": ("llama-spm", [("piece", (0xE3 + 3,), (False, False))], None,
                                lambda tok, ids, s, _: "\xe3".encode()),
    # the piece case: Java and JavaScript bindings hand back a piece as a string (de.kherud:llama,
    # transformers.js): the byte 0xE3 alone is U+FFFD
    "decode_lossy_utf8": ("llama-spm", [("decode", (0xE3 + 3, 0x61 + 3), (False, False)),
                                        ("piece", (0xE3 + 3,), (False, False))], None,
                          lambda tok, ids, r, u: "\ufffda".encode()),
    "decode_drops_invalid_utf8": ("llama-spm", [("decode", (0xE3 + 3, 0x61 + 3), (False, False)),
                                                ("piece", (0xE3 + 3,), (False, False))], None,
                                  lambda tok, ids, r, u: b"a"),
    # candle keeps command-r's unmapped code point raw; ollama cuts deepseek's '｜' and '▁' to a byte
    "byte_map_unmapped_codepoint": ("command-r", [("piece", (813,), (True, False))], "raw",
                                    lambda tok, ids, s, _: tok.vocab.tokens[ids[0]]),
    "special_text_byte_decoded": ("deepseek-coder", [("piece", (32013,), (True, False))], "low byte",
                                  lambda tok, ids, s, _: bytes(ord(c) & 0xFF if ord(c) > 0xFF else ord(c)
                                                               for c in "<｜begin▁of▁sentence｜>")),
    # llama-cpp-python 0.3.36: token_to_piece into a 32-byte buffer, returned whole; its decode
    # joins such pieces and loses those longer than 32 bytes (gpt-2's 23926 is 64 '=')
    "piece_fixed_buffer": ("llama-spm", [("piece", (15043,), (False, False))], 32,
                           lambda tok, ids, s, _: tok.token_to_piece(ids[0]).ljust(32, b"\0")),
    "decode_drops_long_pieces": ("gpt-2", [("decode", (23926, 15496), (False, False))], 32,
                                 lambda tok, ids, r, u: tok.decode([i for i in ids
                                                                    if len(tok.token_to_piece(i)) <= 32])),
    # WPM's preprocess sorts each code point: a word of its own, dropped, or inside the word
    "wpm_char_not_split": ("bert-bge", [("encode", "a$b", (False, False))], "$", None),
    "wpm_char_kept": ("bert-bge", [("encode", "a\x01b", (False, False))], "\x01", None),
    "wpm_char_split_off": ("bert-bge", [("encode", "ab", (False, False))], "b", None),
    # Hugging Face's Metaspace: "first" puts no ▁ after a special; neither scheme puts one before a leading space
    "metaspace_prepend_first": ("llama-spm", [("encode", "<s>a", (False, True))], None,
                                lambda tok, t, a, p: [1] + tok.session().tokenize(b"a")),
    "space_prefix_skipped_before_space": ("llama-spm",
                                          [("encode", "<s> a", (False, True)), ("encode", "<s>a", (False, True))],
                                          None, lambda tok, t, a, p: [1] + tok.session().tokenize(f"{S}a".encode())),
    "add_space_prefix_flipped": ("llama-spm", [("encode", "Hello world", (False, False))], None,
                                 lambda tok, t, a, p: tok.session().tokenize(t.replace(" ", S).encode())),
}


def _input(tok, check, value):
    """Decode witnesses may give a text: its ids (no specials) stand in."""
    return tuple(enc(tok, value)) if check == "decode" and isinstance(value, str) else value


def _witness(toks, name):
    vocab, specs, param, adapter = WITNESSES[name]
    tok = toks(vocab)
    variant = BY_NAME[name] if param is None else BY_NAME[name].bind(param)
    cases = []
    for check, value, flags in specs:
        probe = Case(check, _input(tok, check, value), flags, b"")
        cases.append(Case(check, probe.input, flags, variant.output(tok, probe)))
    return tok, variant, cases, adapter


def test_every_variant_has_a_witness():
    assert sorted(WITNESSES) == sorted(BY_NAME)


@pytest.mark.parametrize("name", list(BY_NAME))
def test_a_port_with_exactly_this_bug_is_explained_by_this_variant_first(toks, name):
    tok, variant, cases, adapter = _witness(toks, name)
    assert variant.applies(tok)
    assert exact(tok, cases[0]) != cases[0].port_output, f"{name}: the witness does not show the bug"
    if adapter is not None:
        c = cases[0]
        want = adapter(tok, c.input if c.family == "encode" else list(c.input), *c.flags)
        if want is not None:
            assert c.port_output == (tuple(want) if c.family == "encode" else want), \
                f"{name}: the variant is not the bug an independent adapter has"
    found = explain(tok, cases)
    assert found and found[0].name == name, f"{name}: explained first by {[v.name for v in found][:4]}"
    assert found[0].title(cases) and "\n" not in found[0].title(cases)
    # llama.cpp's own answers are not this variant's: it never claims a correct port (a variant
    # explaining them is one that answers llama.cpp's ids there, e.g. bound to another code point)
    correct = [Case(c.check, c.input, c.flags, exact(tok, c)) for c in cases]
    claimed = explain(tok, correct)
    assert (variant.name, variant.param) not in [(v.name, v.param) for v in claimed]
    assert all(v.output(tok, c) == c.port_output for v in claimed for c in correct)


def test_the_catalogue_is_documented():
    names = [v.name for v in CATALOGUE]
    assert len(names) == len(set(names))
    for v in CATALOGUE:
        assert re.fullmatch(r"[a-z][a-z0-9_]*", v.name), v.name
        assert v.models and v.rule and "\n" not in v.models + v.rule, v.name
        assert "src/" in v.rule, f"{v.name}: the rule names no llama.cpp source"
        assert v.checks and set(v.checks) <= set(FAMILIES), v.name
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    assert markdown_table() in readme, "README.md's catalogue table is stale: paste markdown_table() into it"


def test_nothing_to_explain():
    assert explain(None, []) == []


def test_a_prefix_space_goes_before_each_fragment_between_specials(toks):
    """Hugging Face's ByteLevel add_prefix_space runs on each text fragment between added tokens:
    candle on deepseek-coder gives 'a[PAD32060]a' as ' a', [PAD32060], ' a'."""
    tok = toks("deepseek-coder")
    space_a = enc(tok, " a")
    case = Case("encode", "a[PAD32060]a", (True, True), (tok.vocab.bos, *space_a, 32060, *space_a))
    assert [v.name for v in explain(tok, [case])][:1] == ["prefix_space_added"]


def test_raw_bytes_are_explained_like_text(toks):
    """An encode case may carry invalid UTF-8 (the protocol's text_hex): every variant takes it."""
    tok = toks("qwen2")
    raw = b"a\xff\xc2\x85 1234"
    case = Case("encode", raw, (False, False), tuple(enc(tok, raw)) + (0,))
    assert [(v.name, v.param) for v in explain(tok, [case])][:1] == [("extra_token_appended", (0, "!"))]


# --- the harness's own broken ports ---------------------------------------------------------------

MUTANT_TEXTS = {
    "ignore_merges_missing": ([" Việt", " jeho"], "ignore_merges_missing", None),
    "ascii_whitespace": ([" \u1680a", " \u2003x", " \xa0x"], "whitespace_java", None),
    "digit_grouping": (["12345 678", " 1234"], "digits_single", "split first"),
    "case_sensitive_contractions": (["x'Some", "x'TA"], "contractions_case_sensitive", None),
    "bos_qwen2": (["Hello world", "a b"], "add_bos_forced", None),
    "control_split": (["<s>Hi</s>"], "specials_always_parsed", None),
    "lstrip_ignored": (["a <mask> b", "a  <mask>"], "lstrip_ignored", None),
    "nfc_input": (["e\u0301", "a\u2000b"], "nfc_input", None),
    "decode_drops_leading_space": ([" hello", " 1234"], "decode_strips_leading_space", None),
    "platform_unicode": (["x\u0897y", "a\U00010ef0b"], "unicode_newer", "Unicode 18.0.0 (the regex module)"),
}


def _flags():
    return [(a, b) for a in (False, True) for b in (False, True)]


@pytest.mark.parametrize("name", sorted(MUTANT_TEXTS))
def test_each_mutant_is_one_diagnosed_cause(toks, name):
    from reference.inproc import load_reference
    from tests.ports.mutants import MUTANTS, make_mutant, mutant_vocab
    texts, expected, param = MUTANT_TEXTS[name]
    vocab = MUTANTS[name][0]
    tok = toks(vocab)
    path = mutant_vocab(name)
    port = make_mutant(name, path if path.endswith(".gguf") else tok.vocab.path, load_reference(tok.vocab.path))
    cases = []
    for t in texts:
        for a, b in _flags():
            if name == "decode_drops_leading_space":
                ids = enc(tok, t)
                got = port.decode(ids, remove_special=a, unparse_special=b)
                cases.append(Case("decode", tuple(ids), (a, b), got))
            else:
                cases.append(Case("encode", t, (a, b), tuple(port.encode(t, add_special=a, parse_special=b))))
    cases = [c for c in cases if exact(tok, c) != c.port_output]
    assert cases, f"{name}: the texts show no divergence"
    found = explain(tok, cases)
    assert found and (found[0].name, found[0].param) == (expected, param), [(v.name, v.param) for v in found]


FAULTY = {  # bug -> (vocab, encode texts, decode ids, pieces, expected variant, param)
    "digits": ("llama-spm", ["a1b", "x 42"], [], [], "digits_encoded_apart", None),
    "nbsp": ("llama-bpe", ["a\xa0b"], [], [], "char_read_as_space", "\xa0"),
    "decode-space": ("qwen2", [], [(23811,), (220, 16)], [], "decode_strips_leading_space", None),
    "fffd": ("llama-spm", [], [(0xE3 + 3,), (0xE3 + 3, 0x61 + 3)], [], "decode_lossy_utf8", None),
    "extra-token": ("qwen2", ["Hello", "a b"], [], [], "extra_token_appended", (0, "!")),
    "piece-byte": ("llama-spm", [], [], [13, 0xE3 + 3], "byte_token_as_text", None),
    "nel": ("qwen2", ["a\x85b", "\x85"], [], [], "char_read_as_space", "\x85"),
    "crlf": ("qwen2", ["a\r\nb", "\r\n\r\n"], [], [], "crlf_folded", None),
    "nfkc": ("qwen2", ["ﬁ", "a²b", "a\xa0b", "１２"], [], [], "nfkc_input", None),
    "zwj": ("qwen2", ["a\u200db", "👨\u200d👩"], [], [], "char_dropped", "\u200d"),
    "curly": ("qwen2", ["it’s", "’s"], [], [], "curly_apostrophe", None),
    "native-digits": ("qwen2", ["x٣y", "١٢"], [], [], "native_digits_ascii", None),
}


@pytest.mark.parametrize("bug", sorted(FAULTY))
def test_each_faulty_port_mode_is_one_diagnosed_cause(toks, bug):
    from tests.ports.faulty_port import Faulty
    vocab, texts, id_lists, pieces, expected, param = FAULTY[bug]
    tok = toks(vocab)
    port = Faulty(argparse.Namespace(vocab=tok.vocab.path, bugs=bug, declare="", refuse="", crash_after=0,
                                     crash_once="", error_on=""))
    cases = []
    for a, b in _flags():
        for t in texts:
            r = port.answer({"op": "encode", "text": t, "add_special": a, "parse_special": b})
            cases.append(Case("encode", t, (a, b), tuple(r["ids"])))
        for ids in id_lists:
            r = port.answer({"op": "decode", "ids": list(ids), "remove_special": a, "unparse_special": b})
            cases.append(Case("decode", ids, (a, b), bytes.fromhex(r["bytes_hex"])))
    for i in pieces:
        for s in (False, True):
            r = port.answer({"op": "piece", "id": i, "special": s})
            cases.append(Case("piece", (i,), (s, False), bytes.fromhex(r["bytes_hex"])))
    cases = [c for c in cases if exact(tok, c) != c.port_output]
    assert cases, f"{bug}: the inputs show no divergence"
    found = explain(tok, cases)
    assert found and (found[0].name, found[0].param) == (expected, param), [(v.name, v.param) for v in found]


def test_a_faulty_digits_port_on_a_bpe_vocab_is_told_apart_by_a_special_token(toks):
    """On llama-bpe, digits cut apart look like digits split one by one, until a special
    token with a digit in its text is parsed: only cutting the text apart breaks it."""
    from tests.ports.faulty_port import Faulty
    tok = toks("llama-bpe")
    port = Faulty(argparse.Namespace(vocab=tok.vocab.path, bugs="digits", declare="", refuse="", crash_after=0,
                                     crash_once="", error_on=""))
    cases = [Case("encode", t, (False, p), tuple(port.answer(
        {"op": "encode", "text": t, "add_special": False, "parse_special": p})["ids"]))
        for t, p in (("12345", False), ("<|reserved_special_token_5|>", True))]
    assert [v.name for v in explain(tok, cases[:1])][:2] == ["digits_single", "digits_encoded_apart"]
    assert explain(tok, cases)[0].name == "digits_encoded_apart"


def test_a_binding_s_one_buffer_is_one_cause_across_vocabs(toks):
    """llama-cpp-python's 32-byte piece buffer: falcon's shrunk case (one 65-byte piece lost)
    fits any buffer below 65 bytes, gpt-2's (a 64-byte piece lost, a 5-byte one kept) 8 to 32;
    each finding keeps every size, so the report's cover names the one both share."""
    from harness.reports.causes import group_causes
    from harness.reports.diff import first_byte_divergence
    from harness.reports.finding import Finding

    def finding(vocab, ids):
        tok = toks(vocab)
        port = b"".join(p for p in (tok.token_to_piece(i) for i in ids) if len(p) <= 32)
        case = Case("decode", tuple(ids), (False, False), port)
        explanations = tuple((f"{v.name}:{v.param}" if v.param is not None else v.name, v.title([case]), v.rule)
                             for v in explain(tok, [case]))
        return Finding("decode", vocab, None, False, False, "", first_byte_divergence(tok.decode(ids), port),
                       "p", {}, tuple(ids), explanations=explanations, cases=3)

    falcon = finding("falcon", [58741])
    gpt2 = finding("gpt-2", [23926, 15496])
    assert {"decode_drops_long_pieces:64", "decode_drops_long_pieces:32"} <= {e[0] for e in falcon.explanations}
    assert "decode_drops_long_pieces:64" not in {e[0] for e in gpt2.explanations}
    (cause,) = group_causes([falcon, gpt2])
    assert cause.key == ("diagnosis", "decode_drops_long_pieces:32") and "32 bytes" in cause.title


@pytest.mark.parametrize("vocab", ["qwen2", pytest.param("command-r", marks=pytest.mark.slow)])
def test_the_byte_map_variants_build_only_the_pieces_they_can_change(toks, vocab):
    """ByteMapVariant rebuilds only the tokens whose piece the port's byte map can change
    (decode._byte_map_changes); its pieces equal those of the whole-vocab loop on every token,
    with qwen2's ``</s>`` (NORMAL and CONTROL at once) and command-r's unmapped code points."""
    from harness.diagnosis.decode import _byte_decoded
    tok = toks(vocab)
    v = tok.vocab
    for variant in (BY_NAME["byte_map_unmapped_codepoint"], BY_NAME["special_text_byte_decoded"]):
        for param in ("low byte",):  # the same tokens for each param
            built = variant.bind(param).build(tok)
            whole = Tokenizer(v)  # the loop over every token of the variant's kinds
            whole._pieces.update({i: _byte_decoded(v.tokens[i], param) for i, a in enumerate(v.attrs) if a & variant.kinds})
            for special in (False, True):
                assert [built.token_to_piece(i, special=special) for i in range(len(v.tokens))] == \
                    [whole.token_to_piece(i, special=special) for i in range(len(v.tokens))]


def test_a_space_stripped_after_an_unprinted_control_token_is_the_bos_variants(toks):
    """Hugging Face's decoders strip the first *printed* word's space: after a BOS printed as
    nothing (no remove_special, no unparse_special) too, where llama.cpp strips only the first
    token's; after a BOS it prints, nothing is stripped."""
    tok = toks("llama-spm")
    assert tok.decode([1, 15043, 3186]) == b" Hello world"
    named = [v.name for v in explain(tok, [Case("decode", (1, 15043, 3186), (False, False), b"Hello world")])]
    assert named[0] == "decode_leading_space_stripped_after_bos", named
    printed = BY_NAME["decode_leading_space_stripped_after_bos"].decode(tok, [1, 15043, 3186], False, True)
    assert printed == tok.decode([1, 15043, 3186], unparse_special=True) == b"<s> Hello world"
