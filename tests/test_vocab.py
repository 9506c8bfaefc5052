"""Vocab.from_gguf replays llama_vocab::impl::load: checked field by field against libllama.

Two kinds of tests:
* every pinned vocab: texts, scores, attrs (after all load-time overrides), EOG set,
  add_bos/add_eos/add_sep and special ids equal what libllama reports;
* tiny hand-built vocabs, one per load rule, with the expected values derived in the
  test -- and, where llama.cpp loads them without aborting, compared with libllama too.
"""

from __future__ import annotations

import re

import pytest

from harness.conformance.needs import require
from tests.support.vocabs import SPM_TOKENS, assert_matches_llama, bpe, load, refused_by_both, spm
from harness.errors import HarnessError, UnsupportedPreTokenizer, VocabError
from harness.tokenizer.gguf import GGUFValueType as T, Keys
from harness.tokenizer.gguf.writer import write_gguf
from harness.tokenizer.pretypes import ALL_PRE_TYPES, PRE_FLAGS, PRE_NAMES, UNSELECTED_PRE_TYPES
from harness.tokenizer.vocab import (BYTE, CONTROL, LSTRIP, NORMAL, RSTRIP, UNKNOWN, UNUSED, USER_DEFINED, Vocab,
                           libstdcxx_sort, unordered_map_order)

K = Keys.Tokenizer
SPECIAL_SLOTS = ("bos", "eos", "eot", "sep", "pad", "mask", "fim_pre", "fim_suf", "fim_mid", "fim_pad",
                 "fim_rep", "fim_sep")


def pinned_names() -> list[str]:
    try:
        from reference.vocabs import names
        return names()
    except Exception:  # no lock file: nothing to parametrize over
        return []


@pytest.mark.reference
@pytest.mark.parametrize("name", pinned_names())
def test_pinned_vocab_matches_libllama(name, inproc):
    from reference.vocabs import vocab_path
    ref = inproc(name)
    assert_matches_llama(Vocab.from_gguf(vocab_path(name)), ref)


# --- the pre-type table against the pinned source -------------------------------------------

def _source(name: str) -> str:
    """src/<name> of the pinned tree: $LLAMA_CPP_DIR, else the one `make fetch` extracted into the cache."""
    from reference import lock
    from reference.build import artifacts
    from reference.sources import make_source

    require(artifacts)  # built means extracted: tree() then only returns its path (no download)
    tree = make_source(lock.load()).tree()
    path = tree / "src" / name
    if not path.is_file():
        raise HarnessError(f"{path} is missing from the pinned llama.cpp tree {tree}")
    return path.read_text(encoding="utf-8")


def test_all_pre_types_match_the_enum():
    enum = re.findall(r"LLAMA_VOCAB_PRE_TYPE_(\w+)\s*=\s*(\d+)", _source("llama-vocab.h"))
    assert [n for n, _ in enum] == list(ALL_PRE_TYPES)
    assert [int(i) for _, i in enum] == list(range(len(ALL_PRE_TYPES)))
    assert UNSELECTED_PRE_TYPES == {"CHATGLM3", "LLAMA4", "PIXTRAL"}


def test_pre_names_and_flags_match_the_if_chain():
    src = _source("llama-vocab.cpp")
    body = src[src.index('} else if (tokenizer_pre == "default")'):src.index("unknown pre-tokenizer type")]
    branches = re.split(r"\}\s*else if\s*\(", body)[1:]
    names, flags = {}, {}
    flag_re = re.compile(r"^\s*(ignore_merges|add_bos|add_sep|clean_spaces|escape_whitespaces|"
                         r"normalizer_opts\.lowercase|special_bos_id)\s*=\s*(\w+);", re.M)
    for br in branches:
        strings = re.findall(r'tokenizer_pre == "([^"]+)"', br)
        pre_type = re.search(r"pre_type = LLAMA_VOCAB_PRE_TYPE_(\w+);", br).group(1)
        f = {}
        for k, val in flag_re.findall(br):
            if k == "special_bos_id":
                f["bos_null"] = True
            else:
                f[k.replace("normalizer_opts.", "")] = val == "true"
        for s in strings:
            names[s], flags[s] = pre_type, f
    assert names == PRE_NAMES
    assert flags == PRE_FLAGS


# --- hand-built vocabs -------------------------------------------------------------------------

# --- hand-built vocabs (builders in tests/support/vocabs.py) ------------------------------------

def test_spm_defaults(tmp_path):
    v = load(tmp_path, spm())
    assert (v.vocab_type, v.pre_type, v.bos, v.eos, v.unk) == ("spm", "DEFAULT", 1, 2, 0)
    assert (v.add_bos, v.add_eos, v.add_space_prefix, v.clean_spaces) == (True, False, True, False)
    assert v.attrs[6] == BYTE and v.attrs[0] == UNKNOWN and v.eog == {2}
    assert v.special_cache == (0, 2, 1)  # lengths 5, 4, 3


def test_missing_token_types_mean_normal_and_scores_default_to_zero(tmp_path):
    v = load(tmp_path, spm(**{K.TOKEN_TYPE: None, K.SCORES: None}))
    assert v.attrs[3] == NORMAL and v.attrs[2] == NORMAL | CONTROL  # </s> is an EOG text
    assert not v.scores.any()


def test_empty_token_text_gets_a_placeholder(tmp_path):
    tokens = list(SPM_TOKENS)
    tokens[4] = b""
    v = load(tmp_path, spm(**{K.TOKENS: (T.ARRAY, tokens, T.STRING)}))
    assert v.tokens[4] == b"[EMPTY_4]" and v.token_to_id[b"[EMPTY_4]"] == 4


def test_duplicate_token_text_is_refused(tmp_path):
    """llama.cpp aborts (GGML_ASSERT) on this, so it is not run against the reference."""
    p = tmp_path / "dup.gguf"
    write_gguf(p, spm(**{K.TOKENS: (T.ARRAY, SPM_TOKENS[:6] + [b"a"], T.STRING)}))
    with pytest.raises(VocabError, match="duplicate token text b'a'"):
        Vocab.from_gguf(p)


def test_special_id_keys(tmp_path):
    v = load(tmp_path, spm(**{K.BOS_ID: (T.UINT32, 3), K.EOS_ID: (T.UINT32, 999),  # out of range: default kept
                              K.FIM_PRE_ID: (T.UINT32, 4), K.PREFIX_ID: (T.UINT32, 5),  # deprecated wins
                              K.SEP_ID: (T.UINT32, 6)}))
    assert (v.bos, v.eos, v.fim_pre, v.sep) == (3, 2, 5, 6)


def test_default_ids_out_of_range_are_disabled(tmp_path):
    v = load(tmp_path, spm(**{K.TOKENS: (T.ARRAY, [b"<unk>", b"x"], T.STRING),
                              K.SCORES: None, K.TOKEN_TYPE: None}))
    assert (v.unk, v.bos, v.eos) == (0, 1, None)


@pytest.mark.parametrize("key,vtype,value,expected", [
    (K.ADD_BOS, T.UINT8, 1, "BOOL"),
    (K.BOS_ID, T.INT32, 1, "UINT32"),
    (K.PRE, T.UINT32, 1, "STRING"),
    (K.ADD_PREFIX, T.INT8, 0, "BOOL"),
])
def test_wrong_key_types_are_refused_naming_key_and_type(tmp_path, key, vtype, value, expected):
    refused_by_both(tmp_path, spm(**{key: (vtype, value)}), match=re.escape(key) + ".*" + expected)


def test_wrong_array_types_are_refused(tmp_path):
    refused_by_both(tmp_path, spm(**{K.SCORES: (T.ARRAY, [0.0] * 7, T.FLOAT64)}), match="FLOAT32")
    refused_by_both(tmp_path, spm(**{K.TOKEN_TYPE: (T.ARRAY, [1] * 7, T.UINT32)}), match="INT32")


def test_short_scores_are_refused(tmp_path):
    refused_by_both(tmp_path, spm(**{K.SCORES: (T.ARRAY, [0.0] * 3, T.FLOAT32)}), match="out of array bounds")


def test_unknown_model_is_refused(tmp_path):
    refused_by_both(tmp_path, spm(**{K.MODEL: (T.STRING, "sentencepiece")}), match="unknown tokenizer model")


def test_add_flag_overrides(tmp_path):
    v = load(tmp_path, spm(**{K.ADD_BOS: (T.BOOL, False), K.ADD_EOS: (T.BOOL, True),
                              K.ADD_SEP: (T.BOOL, True), K.ADD_PREFIX: (T.BOOL, False),
                              K.REMOVE_EXTRA_WS: (T.BOOL, True)}))
    assert (v.add_bos, v.add_eos, v.add_sep, v.add_space_prefix, v.remove_extra_whitespaces) == \
        (False, True, True, False, True)


def test_bpe_without_pre_is_default_and_unknown_pre_is_refused(tmp_path):
    toks = [b"a", b"b", b"ab", b"c"]
    assert load(tmp_path, bpe(toks)).pre_type == "DEFAULT"
    refused_by_both(tmp_path, bpe(toks, **{K.PRE: (T.STRING, "no-such-pre")}), exc=UnsupportedPreTokenizer)


def test_bpe_defaults_and_pre_flags(tmp_path):
    toks = [b"a", b"b", b"ab"] + [b"t%d" % i for i in range(12)]
    v = load(tmp_path, bpe(toks, **{K.PRE: (T.STRING, "llama-bpe")}))
    assert (v.pre_type, v.ignore_merges, v.add_bos, v.clean_spaces, v.bos, v.eos) == \
        ("LLAMA3", True, True, True, 11, 11)
    v = load(tmp_path, bpe(toks, **{K.PRE: (T.STRING, "glm4")}))
    assert (v.pre_type, v.bos, v.eos) == ("CHATGLM4", None, 11)  # CHATGLM4 clears the default BOS
    v = load(tmp_path, bpe(toks, **{K.PRE: (T.STRING, "megrez")}))
    assert (v.pre_type, v.clean_spaces) == ("QWEN2", True)


def test_merges_split_at_first_space_after_position_one(tmp_path):
    merges = [b"a b", b"  b", b"ab", b"a b", b"x y z"]
    v = load(tmp_path, bpe([b"a", b"b", b"ab", b" ", b"x"], merges), compare=False)
    assert v.merge_ranks == {(b"a", b"b"): 0, (b" ", b"b"): 1, (b"", b""): 2, (b"x", b"y z"): 4}


def test_missing_merges(tmp_path):
    refused_by_both(tmp_path, bpe([b"a"], **{K.MERGES: None}), match="merges")
    v = load(tmp_path, bpe([b"a", b"b"], **{K.MERGES: None, K.PRE: (T.STRING, "kimi-k2")}))
    assert v.pre_type == "KIMI_K2" and v.merge_ranks == {}


def test_gemma4_model_forces_its_pre_type_and_bos(tmp_path):
    toks = [b"<pad>", b"<eos>", b"<bos>", b"a"]
    v = load(tmp_path, bpe(toks, **{K.MODEL: (T.STRING, "gemma4"), K.PRE: (T.STRING, "qwen2"),
                                    K.ADD_BOS: (T.BOOL, False), K.BOS_ID: (T.UINT32, 2)}))
    assert (v.pre_type, v.add_bos, v.escape_whitespaces, v.clean_spaces, v.eos) == \
        ("GEMMA4", True, True, True, None)
    assert v.eog == {1}  # <eos> is an EOG text


def test_text_rules_unused_eog_and_forced_user_defined(tmp_path):
    toks = [b"<unk>", b"<s>", b"</s>", b"<unused0>", b"<|im_end|>", b"<|channel|>", b"<|return|>",
            b"<|call|>", b"<|end|>", b"x\0unused", b"<|file_sep|>"]
    types = [2, 3, 3, 3, 1, 3, 1, 1, 3, 3, 1]
    v = load(tmp_path, spm(**{K.TOKENS: (T.ARRAY, toks, T.STRING), K.SCORES: None,
                              K.TOKEN_TYPE: (T.ARRAY, types, T.INT32)}))
    assert v.attrs[3] == CONTROL | UNUSED                 # CONTROL whose text contains "unused"
    assert v.attrs[9] == CONTROL                          # strstr stops at the NUL
    assert v.attrs[4] == NORMAL | CONTROL and v.eot == 4  # EOT by text, forced CONTROL
    assert v.attrs[5] == USER_DEFINED                     # gpt-oss <|channel|>
    assert v.attrs[8] == USER_DEFINED and 8 not in v.eog  # <|end|> dropped: <|return|> + <|call|>
    assert v.fim_sep == 10 and 10 in v.eog and v.attrs[10] == NORMAL | CONTROL


def test_tool_response_drops_s_from_eog(tmp_path):
    toks = [b"<unk>", b"<s>", b"</s>", b"<|tool_response>", b"<eos>"]
    v = load(tmp_path, spm(**{K.TOKENS: (T.ARRAY, toks, T.STRING), K.SCORES: None, K.TOKEN_TYPE: None,
                              K.EOS_ID: (T.UINT32, 4)}))
    assert 2 not in v.eog and v.attrs[2] == NORMAL and v.eog == {3, 4}


def test_phi3_name_sets_rstrip(tmp_path):
    toks = [b"<unk>", b"<s>", b"</s>", b"<|endoftext|>", b"<|user|>", b"a"]
    v = load(tmp_path, spm(**{K.TOKENS: (T.ARRAY, toks, T.STRING), K.SCORES: None,
                              K.TOKEN_TYPE: (T.ARRAY, [2, 3, 3, 3, 4, 1], T.INT32),
                              Keys.General.NAME: (T.STRING, "My PHI-3 mini")}))
    assert [bool(a & RSTRIP) for a in v.attrs] == [False, False, True, False, True, False]
    refused_by_both(tmp_path, spm(**{Keys.General.NAME: (T.STRING, "phi3")}), match="<|endoftext|>"[:2])


def test_mask_lstrip_rules(tmp_path):
    toks = [b"<unk>", b"<s>", b"</s>", b"<mask>", b"[MASK]"]
    base = {K.TOKENS: (T.ARRAY, toks, T.STRING), K.SCORES: None, K.TOKEN_TYPE: (T.ARRAY, [2, 3, 3, 3, 3], T.INT32)}
    v = load(tmp_path, spm(**base, **{Keys.General.ARCHITECTURE: (T.STRING, "nomic-bert-moe")}), compare=False)
    assert v.attrs[3] & LSTRIP and not v.attrs[4] & LSTRIP
    v = load(tmp_path, spm(**base, **{Keys.General.NAME: (T.STRING, "Modern-BERT base")}))
    assert v.attrs[4] & LSTRIP and not v.attrs[3] & LSTRIP


def test_normalizer_options(tmp_path):
    v = load(tmp_path, spm(**{K.NORMALIZER_LOWERCASE: (T.BOOL, False)}), compare=False)
    assert (v.lowercase, v.strip_accents) == (False, False)
    v = load(tmp_path, spm(**{K.NORMALIZER_STRIP_ACCENTS: (T.BOOL, False)}), compare=False)
    assert (v.lowercase, v.strip_accents) == (True, False)


def test_t5_charsmap_bounds(tmp_path):
    t5 = {K.MODEL: (T.STRING, "t5")}
    refused_by_both(tmp_path, spm(**t5, **{K.PRECOMPILED_CHARSMAP: (T.ARRAY, [1, 0], T.UINT8)}), match="too small")
    refused_by_both(tmp_path, spm(**t5, **{K.PRECOMPILED_CHARSMAP: (T.ARRAY, [4, 0, 0, 0, 1, 2, 3, 4], T.UINT8)}),
                    match="out of array bounds")
    # Not compared with llama.cpp: its load also tokenizes "\n" (to find the linefeed id),
    # and this 1-node XCDA array makes that lookup throw "Index out of array bounds in XCDA".
    v = load(tmp_path, spm(**t5, **{K.PRECOMPILED_CHARSMAP: (T.ARRAY, [4, 0, 0, 0, 1, 2, 3, 4, 0], T.UINT8)}),
             compare=False)
    assert (v.vocab_type, v.bos, v.eos, v.add_eos, v.precompiled_charsmap[:4]) == ("ugm", None, 1, True, b"\4\0\0\0")


# --- the libstdc++ emulations ---------------------------------------------------------------

def test_sort_matches_llama_order_properties():
    """Longest first; equal lengths in libstdc++'s introsort order (checked end to end in
    test_tokenizer_spine against llama.cpp)."""
    lengths = [3, 1, 3, 2, 3] * 20
    out = libstdcxx_sort(list(range(len(lengths))), lengths)
    assert sorted(out) == list(range(len(lengths)))
    assert [lengths[i] for i in out] == sorted(lengths, reverse=True)
    # at most 16 elements: plain insertion sort, which is stable
    assert libstdcxx_sort([0, 1, 2, 3], [1, 2, 1, 2]) == [1, 3, 0, 2]


def test_unordered_map_order_small():
    # 3 keys, 13 buckets: each bucket new, pushed to the front -> reverse insertion order
    # unless two keys share a bucket; the rank dict is a permutation either way
    order = unordered_map_order([b"a", b"b", b"c"], {0, 1, 2})
    assert sorted(order.values()) == [0, 1, 2]


def test_hybriddna_kmer_marker_is_stripped_after_oov(tmp_path):
    m = b"\xee\x80\x80"
    toks = [b"a", b"b", b"AAAAAA" + m, b"<oov>", b"ACGTAC" + m, m, b"CCCCCC" + m + m]
    v = load(tmp_path, bpe(toks, **{K.MODEL: (T.STRING, "hybriddna")}))
    assert v.tokens[2] == b"AAAAAA" + m          # before <oov>: untouched
    assert v.tokens[4] == b"ACGTAC" and v.tokens[5] == m and v.tokens[6] == b"CCCCCC" + m
    assert v.token_to_id[b"ACGTAC" + m] == 4       # lookups keep the marker


def test_no_vocab_model(tmp_path):
    v = load(tmp_path, {Keys.General.ARCHITECTURE: (T.STRING, "llama"), K.MODEL: (T.STRING, "none"),
                        "llama.vocab_size": (T.UINT32, 3)}, compare=False)
    assert (v.vocab_type, v.n_vocab, v.bos, v.eos, v.special_cache) == ("none", 3, None, None, ())


def test_architectures_match_the_source():
    from harness.tokenizer.pretypes import ARCHITECTURES
    arch_src = _source("llama-arch.cpp")
    block = arch_src[arch_src.index("LLM_ARCH_NAMES = {"):]
    names = dict(re.findall(r'\{\s*(LLM_ARCH_\w+),\s*"([^"]+)"\s*\}', block[:block.index("};")]))
    model_src = _source("llama-model.cpp")
    mapping = model_src[model_src.index("static llama_model * llama_model_mapping"):]
    implemented = set(re.findall(r"case (LLM_ARCH_\w+):", mapping[:mapping.index("\n}\n")]))
    assert ARCHITECTURES == {n for k, n in names.items() if k in implemented and k != "LLM_ARCH_CLIP"}


@pytest.mark.parametrize("arch", [None, "frobnitz", "clip"])
def test_unknown_architecture_is_refused(tmp_path, arch):
    meta = spm(**{Keys.General.ARCHITECTURE: None if arch is None else (T.STRING, arch)})
    refused_by_both(tmp_path, meta, match="general.architecture")


def test_array_of_arrays_anywhere_is_refused(tmp_path):
    """Our GGUF reader accepts nested arrays (as gguf-py does); llama.cpp's does not."""
    refused_by_both(tmp_path, spm(**{"x.nested": (T.ARRAY, [(T.UINT8, [1])], T.ARRAY)}), match="array of arrays")


def test_gguf_v2_vocab_loads(tmp_path):
    p = tmp_path / "v2.gguf"
    write_gguf(p, spm(), version=2)
    from reference.inproc import InProcessReference
    assert_matches_llama(Vocab.from_gguf(p), require(lambda: InProcessReference(p)))


def test_merge_ranks_are_built_on_first_use():
    """Loading a BPE vocab leaves the 150k-entry rank table for the first merge to build;
    decoding and pieces never build it."""
    from harness.tokenizer import Tokenizer
    from reference.vocabs import vocab_path
    from harness.conformance.needs import require
    tok = Tokenizer.from_gguf(require(vocab_path, "qwen2"))
    assert not tok.vocab.merge_ranks.built          # load (and its '\n' probe) did not need them
    tok.decode([9707, 1879])
    assert not tok.vocab.merge_ranks.built
    assert tok.encode("Hello world") == [9707, 1879]
    assert tok.vocab.merge_ranks.built and len(tok.vocab.merge_ranks) == 151387
