"""llama.cpp's pre-tokenizer names: ``tokenizer.ggml.pre`` string -> pre_type, and load flags.

Transcribed from ``llama_vocab::impl::load`` (src/llama-vocab.cpp, the
``if (tokenizer_pre == ...)`` chain) and the ``LLAMA_VOCAB_PRE_TYPE_*`` enum in
src/llama-vocab.h at the selected pin (``$PIN``; what changed between pins is
gated by :mod:`harness.tokenizer.pins`). ``tests/test_vocab.py`` re-parses both files from
the pinned tree to prove these tables are complete and exact.

Flags are the *changes* each pre string makes to the BPE defaults
(add_space_prefix=False, escape_whitespaces=False, clean_spaces=True,
add_bos=False, add_sep=False, ignore_merges=False); they depend on the
string, not the enum (``megrez`` is QWEN2 but keeps clean_spaces).

>>> PRE_NAMES["llama-bpe"]
'LLAMA3'
>>> PRE_FLAGS["llama-bpe"]
{'ignore_merges': True, 'add_bos': True}
>>> pre_type_of("no-such-pre")  # doctest: +ELLIPSIS
Traceback (most recent call last):
...
harness.errors.UnsupportedPreTokenizer: unknown tokenizer.ggml.pre 'no-such-pre': ...
"""

from __future__ import annotations

from harness.tokenizer import pins
from harness.errors import UnsupportedPreTokenizer

# LLAMA_VOCAB_PRE_TYPE_* in enum order (index == enum value).
ALL_PRE_TYPES: tuple[str, ...] = (
    "DEFAULT", "LLAMA3", "DEEPSEEK_LLM", "DEEPSEEK_CODER", "FALCON", "MPT", "STARCODER", "GPT2",
    "REFACT", "COMMAND_R", "STABLELM2", "QWEN2", "OLMO", "DBRX", "SMAUG", "PORO", "CHATGLM3",
    "CHATGLM4", "VIKING", "JAIS", "TEKKEN", "SMOLLM", "CODESHELL", "BLOOM", "GPT3_FINNISH",
    "EXAONE", "CHAMELEON", "MINERVA", "DEEPSEEK3_LLM", "GPT4O", "SUPERBPE", "TRILLION",
    "BAILINGMOE", "LLAMA4", "PIXTRAL", "SEED_CODER", "HUNYUAN", "KIMI_K2", "HUNYUAN_DENSE",
    "GROK_2", "GRANITE_DOCLING", "MINIMAX_M2", "AFMOE", "SOLAR_OPEN", "YOUTU", "EXAONE_MOE",
    "QWEN35", "TINY_AYA", "JOYAI_LLM", "JAIS2", "GEMMA4", "SARVAM_MOE", "MINICPM5", "WHITESPACE",
    "GRANITE_EMB_MULTI", "MELLUM2", "LAGUNA",
) + (("HY_V4", "SPARK2_5", "UFAKZEKA") if pins.has("pre_types_hy_v4_spark2_5_ufakzeka") else ())

_CS0 = {"clean_spaces": False}

# (pre strings, pre_type, flag changes) in the order of llama.cpp's if-chain.
_CHAIN: tuple[tuple[tuple[str, ...], str, dict[str, bool]], ...] = (
    (("default",), "DEFAULT", {}),
    (("minicpm5",), "MINICPM5", {"ignore_merges": True}),
    (("llama3", "llama-v3", "llama-bpe", "falcon3", "falcon-h1", "pixtral", "midm-2.0", "lfm2",
      "jina-v5-nano"), "LLAMA3", {"ignore_merges": True, "add_bos": True}),
    (("deepseek-llm",), "DEEPSEEK_LLM", _CS0),
    (("deepseek-coder",), "DEEPSEEK_CODER", _CS0),
    (("deepseek-v3",), "DEEPSEEK3_LLM", _CS0),
    (("youtu",), "YOUTU", {"clean_spaces": False, "ignore_merges": True}),
    (("falcon",), "FALCON", {}),
    (("mpt",), "MPT", {}),
    (("starcoder",), "STARCODER", {}),
    (("gpt-2", "phi-2", "jina-es", "jina-de", "gigachat", "jina-v2-es", "jina-v2-de", "a.x-4.0",
      "mellum", "modern-bert"), "GPT2", {}),
    (("jais-2",), "JAIS2", {}),
    (("gemma4", "granite-embed-multi-311m"), "GEMMA4", {"escape_whitespaces": True}),
    (("sarvam-moe",), "SARVAM_MOE", {"escape_whitespaces": True, "clean_spaces": False}),
    (("jina-v1-en", "jina-v2-code", "roberta-bpe"), "GPT2", {"add_sep": True}),
    (("whitespace",), "WHITESPACE", {"lowercase": False}),
    (("refact",), "REFACT", {}),
    (("command-r",), "COMMAND_R", _CS0),
    (("qwen2", "deepseek-r1-qwen", "kormo", "f2llmv2"), "QWEN2", _CS0),
    (("qwen35",), "QWEN35", _CS0),
    (("stablelm2",), "STABLELM2", {}),
    (("olmo",), "OLMO", {}),
    (("dbrx",), "DBRX", {}),
    (("smaug-bpe",), "SMAUG", {}),
    (("poro-chat",), "PORO", _CS0),
    *(((("chatglm-bpe",), "CHATGLM4", {"bos_null": True}),  # harness.tokenizer.pins: glm4_ignore_merges
        (("glm4", "glm5"), "CHATGLM4", {"bos_null": True, "ignore_merges": True}))
      if pins.has("glm4_ignore_merges") else
      ((("glm4", "chatglm-bpe"), "CHATGLM4", {"bos_null": True}),)),
    (("viking",), "VIKING", _CS0),
    (("jais",), "JAIS", {}),
    (("tekken",), "TEKKEN", {"clean_spaces": False, "ignore_merges": True, "add_bos": True}),
    (("smollm",), "SMOLLM", _CS0),
    (("codeshell",), "CODESHELL", {}),
    (("bloom",), "BLOOM", {}),
    (("gpt3-finnish",), "GPT3_FINNISH", {}),
    (("exaone",), "EXAONE", {}),
    (("exaone4",), "GPT2", {}),
    (("exaone-moe",), "EXAONE_MOE", {}),
    (("chameleon",), "CHAMELEON", {"add_bos": True, "clean_spaces": False}),
    (("minerva-7b",), "MINERVA", {}),
    (("megrez",), "QWEN2", {}),
    (("gpt-4o", "llama4", "kanana2", "talkie"), "GPT4O", _CS0),
    (("granite-embed-multi-97m",), "GRANITE_EMB_MULTI", {"clean_spaces": False, "ignore_merges": True}),
    (("tiny_aya", "cohere2moe"), "TINY_AYA", _CS0),
    (("superbpe",), "SUPERBPE", _CS0),
    (("trillion",), "TRILLION", _CS0),
    (("granite-docling",), "GRANITE_DOCLING", _CS0),
    (("bailingmoe", "bailingmoe2", "llada-moe"), "BAILINGMOE", _CS0),
    (("seed-coder",), "SEED_CODER", _CS0),
    (("hunyuan",), "HUNYUAN", _CS0),
    (("hunyuan-dense",), "HUNYUAN_DENSE", _CS0),
    (("joyai-llm",), "JOYAI_LLM", _CS0),
    (("kimi-k2",), "KIMI_K2", _CS0),
    (("grok-2",), "GROK_2", _CS0),
    (("afmoe",), "AFMOE", _CS0),
    (("laguna",), "LAGUNA", _CS0),
    (("minimax-m2",), "MINIMAX_M2", _CS0),
    (("solar-open",), "SOLAR_OPEN", _CS0),
    (("mellum2",), "MELLUM2", {}),
    *(((("spark2_5",), "SPARK2_5", _CS0), (("hy_v4",), "HY_V4", _CS0), (("ufakzeka",), "UFAKZEKA", _CS0))
      if pins.has("pre_types_hy_v4_spark2_5_ufakzeka") else ()),  # harness.tokenizer.pins
)

# pre string -> pre_type name. A missing tokenizer.ggml.pre means DEFAULT (with a warning).
PRE_NAMES: dict[str, str] = {s: t for names, t, _ in _CHAIN for s in names}

# pre string -> flag changes relative to the BPE defaults. Keys: ignore_merges, add_bos,
# add_sep, clean_spaces, escape_whitespaces, lowercase (normalizer), bos_null (special_bos_id=NULL).
PRE_FLAGS: dict[str, dict[str, bool]] = {s: dict(f) for names, _, f in _CHAIN for s in names}

# Enum values that no pre string selects at the pin.
UNSELECTED_PRE_TYPES: frozenset[str] = frozenset(ALL_PRE_TYPES) - frozenset(PRE_NAMES.values())


def pre_type_of(pre: str | None) -> str:
    """Map a raw ``tokenizer.ggml.pre`` to its pre_type as llama.cpp does (BPE vocabs only).

    ``None``/empty -> ``'DEFAULT'`` (llama.cpp warns); an unknown name raises
    :class:`UnsupportedPreTokenizer` -- never a silent fallback.

    >>> pre_type_of(None), pre_type_of("qwen2"), pre_type_of("megrez")
    ('DEFAULT', 'QWEN2', 'QWEN2')
    """
    if not pre:
        return "DEFAULT"
    try:
        return PRE_NAMES[pre]
    except KeyError:
        raise UnsupportedPreTokenizer(pre, list(PRE_NAMES)) from None


def pre_type_id(pre_type: str) -> int:
    """The numeric ``LLAMA_VOCAB_PRE_TYPE_*`` value of a pre_type name.

    >>> pre_type_id("GEMMA4")
    50
    """
    return ALL_PRE_TYPES.index(pre_type)


# --- text-based special-token rules applied during load (llama_vocab::impl::load) ----------
# Auto-detection lists: a slot still NULL after the GGUF keys takes the first token (in
# token_to_id iteration order) whose text is in its list, and that token is forced CONTROL.
AUTO_SPECIAL_TEXTS: dict[str, tuple[bytes, ...]] = {
    "eot": tuple(s.encode() for s in (
        "<|eot_id|>", "<|im_end|>", "<|end|>", "<end_of_turn>", "<|endoftext|>", "<|end_of_text|>",
        "<EOT>", "_<EOT>", "[EOT]", "<｜end▁of▁sentence｜>", "<end_of_utterance>")),
    "eom": (b"<|eom_id|>",),
    "fim_pre": tuple(s.encode() for s in (
        "<|fim_prefix|>", "<fim-prefix>", "<fim_prefix>", "<｜fim▁begin｜>", "<PRE>", "▁<PRE>",
        "<|code_prefix|>", "<|prefix|>")),
    "fim_suf": tuple(s.encode() for s in (
        "<|fim_suffix|>", "<fim-suffix>", "<fim_suffix>", "<｜fim▁hole｜>", "<SUF>", "▁<SUF>",
        "<|code_suffix|>", "<|suffix|>")),
    "fim_mid": tuple(s.encode() for s in (
        "<|fim_middle|>", "<fim-middle>", "<fim_middle>", "<｜fim▁end｜>", "<MID>", "▁<MID>",
        "<|code_middle|>", "<|middle|>")),
    "fim_pad": (b"<|fim_pad|>", b"<fim-pad>", b"<fim_pad>", b"<PAD>", b"[PAD]"),
    "fim_rep": (b"<|fim_repo|>", b"<|repo_name|>", b"<fim-repo>", b"<REPO>", b"<reponame>"),
    "fim_sep": (b"<|file_sep|>",),
}

# Every token with one of these texts is end-of-generation and forced CONTROL.
EOG_TEXTS: frozenset[bytes] = frozenset(s.encode() for s in (
    "<|eot_id|>", "<|im_end|>", "<|end|>", "<|return|>", "<|call|>", "<|flush|>", "<|calls|>",
    "<end_of_turn>", "<|endoftext|>", "</s>", "<|eom_id|>", "<EOT>", "_<EOT>", "[EOT]", "[EOS]",
    "<|end_of_text|>", "<end_of_utterance>", "<eos>", "<turn|>", "<|tool_response>",
    "<｜end▁of▁sentence｜>", "[e~["))

# gpt-oss hack: these always render, their attr is *replaced* by USER_DEFINED.
FORCED_USER_DEFINED_TEXTS: frozenset[bytes] = frozenset(
    (b"<|channel|>", b"<|message|>", b"<|start|>", b"<|constrain|>"))


# general.architecture values a vocab-only llama.cpp load accepts: LLM_ARCH_NAMES
# (src/llama-arch.cpp) that llama_model_mapping (src/llama-model.cpp) implements, minus "clip"
# ("CLIP cannot be used as main model"). "gptj" is named but unimplemented: llama.cpp aborts.
ARCHITECTURES: frozenset[str] = frozenset("""
afmoe apertus arcee arctic arwkv7 baichuan bailingmoe bailingmoe2 bert bitnet bloom chameleon chatglm
codeshell cogvlm cohere2 cohere2moe command-r dbrx deci deepseek deepseek2 deepseek2-ocr deepseek32
deepseek4 dflash dots1 dream eagle3 ernie4_5 ernie4_5-moe eurobert exaone exaone-moe exaone4 falcon
falcon-h1 gemma gemma-embedding gemma2 gemma3 gemma3n gemma4 gemma4-assistant glm-dsa glm4 glm4moe
gpt-oss gpt2 gptneox granite granitehybrid granitemoe graniteswitch grok grovemoe hunyuan-dense
hunyuan-moe hunyuan_vl hy_v3 internlm2 jais jais2 jamba jina-bert-v2 jina-bert-v3 kimi-k3 kimi-linear
laguna lfm2 lfm2moe llada llada-moe llama llama-embed llama4 maincoder mamba mamba2 mellum mimo2
minicpm minicpm3 minimax-01 minimax-m2 minimax-m3 mistral3 mistral4 modern-bert mpt muse-glimmer
nanbeige nemotron nemotron_h nemotron_h_moe neo-bert nomic-bert nomic-bert-moe olmo olmo2 olmoe
openelm orion paddleocr pangu-embedded phi2 phi3 phimoe plamo plamo2 plamo3 plm pockettts qwen qwen2
qwen2moe qwen2vl qwen3 qwen35 qwen35moe qwen3moe qwen3next qwen3tts qwen3vl qwen3vlmoe refact rnd1
rwkv6 rwkv6qwen2 rwkv7 seed_oss smallthinker smollm3 stablelm starcoder starcoder2 step35 t5
t5encoder talkie wavtokenizer-dec xverse
""".split()) | (frozenset("bailingmoe3 dots3note glm5-next granite_swa hrm_text hy_v4 maple qwen4exp spark2_5".split())
                 if pins.has("architectures_0c1e570") else frozenset())
