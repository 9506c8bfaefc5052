"""GGUF metadata key names and value types, spelled exactly as llama.cpp spells them.

Mirrors gguf-py's ``Keys`` namespace (and llama.cpp's ``src/llama-arch.cpp``
``LLM_KV_NAMES``) so callers never type a key string by hand.

>>> Keys.Tokenizer.MODEL
'tokenizer.ggml.model'
>>> Keys.Tokenizer.SEP_ID      # llama.cpp's historical misspelling is the real key
'tokenizer.ggml.seperator_token_id'
>>> GGUFValueType.STRING.value
8
"""

from __future__ import annotations

from enum import IntEnum


class GGUFValueType(IntEnum):
    """The ``gguf_type`` enum: the type tag stored before every metadata value."""

    UINT8 = 0
    INT8 = 1
    UINT16 = 2
    INT16 = 3
    UINT32 = 4
    INT32 = 5
    FLOAT32 = 6
    BOOL = 7
    STRING = 8
    ARRAY = 9
    UINT64 = 10
    INT64 = 11
    FLOAT64 = 12


# numpy dtype strings (little-endian) of the fixed-size types; BOOL is one byte.
FIXED_DTYPES: dict[GGUFValueType, str] = {
    GGUFValueType.UINT8: "<u1", GGUFValueType.INT8: "<i1",
    GGUFValueType.UINT16: "<u2", GGUFValueType.INT16: "<i2",
    GGUFValueType.UINT32: "<u4", GGUFValueType.INT32: "<i4",
    GGUFValueType.FLOAT32: "<f4", GGUFValueType.BOOL: "<u1",
    GGUFValueType.UINT64: "<u8", GGUFValueType.INT64: "<i8",
    GGUFValueType.FLOAT64: "<f8",
}

GGUF_MAGIC = b"GGUF"
GGUF_DEFAULT_ALIGNMENT = 32


class Keys:
    """Namespaced key names, as in gguf-py (``Keys.Tokenizer.MERGES``)."""

    class General:
        ARCHITECTURE = "general.architecture"
        NAME = "general.name"
        ALIGNMENT = "general.alignment"

    class Tokenizer:
        MODEL = "tokenizer.ggml.model"
        PRE = "tokenizer.ggml.pre"
        LIST = "tokenizer.ggml.tokens"
        TOKENS = LIST
        TOKEN_TYPE = "tokenizer.ggml.token_type"
        TOKEN_TYPE_COUNT = "tokenizer.ggml.token_type_count"
        SCORES = "tokenizer.ggml.scores"
        MERGES = "tokenizer.ggml.merges"
        BOS_ID = "tokenizer.ggml.bos_token_id"
        EOS_ID = "tokenizer.ggml.eos_token_id"
        EOT_ID = "tokenizer.ggml.eot_token_id"
        EOM_ID = "tokenizer.ggml.eom_token_id"
        UNK_ID = "tokenizer.ggml.unknown_token_id"
        SEP_ID = "tokenizer.ggml.seperator_token_id"  # sic: llama.cpp's key
        PAD_ID = "tokenizer.ggml.padding_token_id"
        CLS_ID = "tokenizer.ggml.cls_token_id"  # written by converters, never read by llama.cpp
        MASK_ID = "tokenizer.ggml.mask_token_id"
        ADD_BOS = "tokenizer.ggml.add_bos_token"
        ADD_EOS = "tokenizer.ggml.add_eos_token"
        ADD_SEP = "tokenizer.ggml.add_sep_token"
        ADD_PREFIX = "tokenizer.ggml.add_space_prefix"
        REMOVE_EXTRA_WS = "tokenizer.ggml.remove_extra_whitespaces"
        PRECOMPILED_CHARSMAP = "tokenizer.ggml.precompiled_charsmap"
        HF_JSON = "tokenizer.huggingface.json"
        RWKV = "tokenizer.rwkv.world"
        CHAT_TEMPLATE = "tokenizer.chat_template"
        NORMALIZER_LOWERCASE = "tokenizer.ggml.normalizer.lowercase"
        NORMALIZER_STRIP_ACCENTS = "tokenizer.ggml.normalizer.strip_accents"
        FIM_PRE_ID = "tokenizer.ggml.fim_pre_token_id"
        FIM_SUF_ID = "tokenizer.ggml.fim_suf_token_id"
        FIM_MID_ID = "tokenizer.ggml.fim_mid_token_id"
        FIM_PAD_ID = "tokenizer.ggml.fim_pad_token_id"
        FIM_REP_ID = "tokenizer.ggml.fim_rep_token_id"
        FIM_SEP_ID = "tokenizer.ggml.fim_sep_token_id"
        SUPPRESS_TOKENS = "tokenizer.ggml.suppress_tokens"
        # deprecated spellings of the FIM ids; llama.cpp reads them last, so they win
        PREFIX_ID = "tokenizer.ggml.prefix_token_id"
        SUFFIX_ID = "tokenizer.ggml.suffix_token_id"
        MIDDLE_ID = "tokenizer.ggml.middle_token_id"
