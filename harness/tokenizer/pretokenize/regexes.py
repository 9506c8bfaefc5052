"""The regex list of every pre_type: llm_tokenizer_bpe's constructor (src/llama-vocab.cpp).

Transcribed string for string: llama.cpp picks a hand-written splitter by
*exact string equality* (unicode_regex_split_custom), so a single changed
character would silently switch a regex to the std::regex path.
tests/test_pretokenize.py re-parses the pinned source to prove the table is
exact. Pre types without a ``case`` (CHATGLM3, LLAMA4, PIXTRAL) take the
``default:`` list, as in llama.cpp.

>>> REGEX_EXPRS["GEMMA4"]
('[^\\\\n]+|[\\\\n]+',)
>>> "GEMMA4" in NO_BYTE_ENCODE and "QWEN2" not in NO_BYTE_ENCODE
True
"""

from __future__ import annotations

from harness.tokenizer import pins

# pre types whose constructor sets byte_encode = false (raw UTF-8 merges)
NO_BYTE_ENCODE = frozenset({"GEMMA4", "SARVAM_MOE", "WHITESPACE"})

REGEX_EXPRS: dict[str, tuple[str, ...]] = {}

_RX = (
    '[\\p{P}\\$\\+<=>\\^~\\|]+',
    "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)",
    '\\p{N}+',
    '[0-9][0-9][0-9]',
)
for _t in ('DEFAULT', 'CHATGLM3', 'LLAMA4', 'PIXTRAL'):
    REGEX_EXPRS[_t] = _RX

_RX = (
    ("(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\\r\\n\\p{L}\\p{N}]?\\p"
     '{L}+|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+'),
)
for _t in ('LLAMA3', 'DBRX', 'SMAUG', 'CHATGLM4'):
    REGEX_EXPRS[_t] = _RX

_RX = (
    '[\r\n]',
    ('\\s?[A-Za-zµÀ-ÖØ-öø-ƺƼ-ƿǄ-ʓʕ-ʯͰ-ͳͶͷͻ-ͽͿΆΈ-ΊΌΎ-ΡΣ-ϵϷ-ҁҊ-ԯԱ-ՖႠ-ჅᎠ-Ᏽᏸ-ᏽᲐ-ᲺᲽ-Ჿᴀ-ᴫᵫ-ᵷᵹ-ᶚ'
     'Ḁ-ἕἘ-Ἕἠ-ὅὈ-Ὅὐ-ὗὙὛὝὟ-ώᾀ-ᾴᾶ-ᾼιῂ-ῄῆ-ῌῐ-ΐῖ-Ίῠ-Ῥῲ-ῴῶ-ῼℂℇℊ-ℓℕℙ-ℝℤΩℨK-ℭℯ-ℴℹℼ-ℿⅅ-ⅉⅎↃↄⰀ-ⱻⱾ-ⳤ'
     'Ⳬ-ⳮⳲⳳꙀ-ꙭꚀ-ꚛꜢ-ꝯꝱ-ꞇꞋ-ꞎꭰ-ꮿﬀ-ﬆﬓ-ﬗＡ-Ｚａ-ｚ𐐀-𐑏𐒰-𐓓𐓘-𐓻𐲀-𐲲𐳀-𐳲𑢠-𑣟𞤀-𞥃]+'),
    '\\s?[!-/:-~！-／：-～‘-‟\u3000-。]+',
    '\\s+$',
    '[一-龥ࠀ-一가-\ud7ff]+',
    '\\p{N}+',
)
for _t in ('DEEPSEEK_LLM',):
    REGEX_EXPRS[_t] = _RX

_RX = (
    '[\r\n]',
    '\\s?\\p{L}+',
    '\\s?\\p{P}+',
    '[一-龥ࠀ-一가-\ud7ff]+',
    '\\p{N}',
)
for _t in ('DEEPSEEK_CODER',):
    REGEX_EXPRS[_t] = _RX

_RX = (
    '[\\p{P}\\$\\+<=>\\^~\\|`]+',
    "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)",
    '[0-9][0-9][0-9]',
)
for _t in ('FALCON',):
    REGEX_EXPRS[_t] = _RX

_RX = (
    "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)",
)
for _t in ('MPT', 'GPT2', 'OLMO', 'JAIS', 'TRILLION', 'GRANITE_DOCLING'):
    REGEX_EXPRS[_t] = _RX

_RX = (
    '\\p{N}',
    "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)",
)
for _t in ('STARCODER', 'REFACT', 'COMMAND_R', 'SMOLLM', 'CODESHELL', 'EXAONE', 'MINERVA', 'MELLUM2'):
    REGEX_EXPRS[_t] = _RX

_RX = (
    ("(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\\r\\n\\p{L}\\p{N}]?\\p"
     '{L}+|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+'),
)
for _t in ('STABLELM2', 'QWEN2', 'HUNYUAN', 'GROK_2', 'SOLAR_OPEN'):
    REGEX_EXPRS[_t] = _RX

_RX = (
    ' ?[^(\\s|.,!?…。，、।۔،)]+',
)
for _t in ('PORO', 'BLOOM', 'GPT3_FINNISH'):
    REGEX_EXPRS[_t] = _RX

_RX = (
    ' ?[^(\\s|.,!?…。，、।۔،)]+',
    '\\p{N}',
)
for _t in ('VIKING',):
    REGEX_EXPRS[_t] = _RX

_RX = (
    ('[^\\r\\n\\p{L}\\p{N}]?((?=[\\p{L}])([^a-z]))*((?=[\\p{L}])([^A-Z]))+|[^\\r\\n\\p{L}'
     '\\p{N}]?((?=[\\p{L}])([^a-z]))+((?=[\\p{L}])([^A-Z]))*|\\p{N}| ?[^\\s\\p{L}\\p{N}]+'
     '[\\r\\n/]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+'),
)
for _t in ('TEKKEN',):
    REGEX_EXPRS[_t] = _RX

_RX = (
    '<sentinel:[0-9]+>',
    '(IMGIMG)((A|B|C|D|E|F|G|H|I){1,4})Z',
    '([\\t\\n]|    |  )',
    '\\p{N}',
    '[\\p{P}!-/:-@\\[-`{-~]',
    "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)",
)
for _t in ('CHAMELEON',):
    REGEX_EXPRS[_t] = _RX

_RX = (
    '\\p{N}{1,3}',
    '[一-龥\u3040-ゟ゠-ヿ]+',
    ('[!"#$%&\'()*+,\\-./:;<=>?@\\[\\\\\\]^_`{|}~][A-Za-z]+|[^\r\n\\p{L}\\p{P}\\p{S}]?[\\'
     'p{L}\\p{M}]+| ?[\\p{P}\\p{S}]+[\r\n]*|\\s*[\r\n]+|\\s+(?!\\S)|\\s+'),
)
for _t in ('DEEPSEEK3_LLM', 'HUNYUAN_DENSE', 'JOYAI_LLM') + (
        ('HY_V4',) if pins.has("pre_types_hy_v4_spark2_5_ufakzeka") else ()):
    REGEX_EXPRS[_t] = _RX

if pins.has("pre_types_hy_v4_spark2_5_ufakzeka"):
    REGEX_EXPRS['SPARK2_5'] = (
        '\\p{N}{1,3}',
        '[一-龥\u3040-ゟ゠-ヿ]+',
        ('[!"#$%&\'()*+,\\-./:;<=>?@\\[\\\\\\]^_`{|}~][A-Za-z]+|[^\r\n\\p{L}\\p{P}\\p{S}]?[\\'
         'p{L}\\p{M}]+| ?[\\p{P}\\p{S}]+|[\r\n]|\\s+(?!\\S)|\\s+'),
        '\\p{N}',
    )
    # Qwen2's pattern without the English contraction group (Turkish apostrophe suffixes stay attached)
    REGEX_EXPRS['UFAKZEKA'] = (
        '[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+',
    )

_RX = (
    ("[^\\r\\n\\p{L}\\p{N}]?((?=[\\p{L}])([^a-z]))*((?=[\\p{L}])([^A-Z]))+(?:'[sS]|'[tT]|"
     "'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])?|[^\\r\\n\\p{L}\\p{N}]?((?=[\\p{L}])([^a"
     "-z]))+((?=[\\p{L}])([^A-Z]))*(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[d"
     'D])?|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n/]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+'),
)
for _t in ('GPT4O', 'MINIMAX_M2'):
    REGEX_EXPRS[_t] = _RX

_RX = (
    '\\p{N}+',
    '(?=(\\d{3})+(?!\\d))',
)
for _t in ('SUPERBPE',):
    REGEX_EXPRS[_t] = _RX

_RX = (
    ("'(?:[sSdDmMtT]|[lL][lL]|[vV][eE]|[rR][eE])|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| ?["
     '^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]|\\s+(?!\\S)|\\s+'),
)
for _t in ('BAILINGMOE',):
    REGEX_EXPRS[_t] = _RX

_RX = (
    ("(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\\r\\n\\p{L}\\p{N}]?\\p"
     '{L}+|\\p{N}{1}| ?[^\\s\\p{L}\\p{N}\\r\\n]+|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+'),
)
for _t in ('SEED_CODER',):
    REGEX_EXPRS[_t] = _RX

_RX = (
    '\\p{Han}+',
)
for _t in ('KIMI_K2',):
    REGEX_EXPRS[_t] = _RX

_RX = (
    '\\p{AFMoE_digits}',
    ('[一-鿿㐀-䶿豈-\ufaff\u3040-ゟ゠-ヿ･-ﾟ⼀-\u2fdfเ-\u0e7f\u0e80-\u0effក-\u17ffက-႟ꩠ-ꩿꧠ-\ua9ff가-\ud7af'
     'ᄀ-ᇿ]+'),
    ('[!"#$%&\'()*+,\\-./:;<=>?@\\[\\\\\\]^_`{|}~][A-Za-z]+|[^\\r\\n\\p{L}\\p{P}\\p{S}]?['
     '\\p{L}\\p{M}]+| ?[\\p{P}\\p{S}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+'),
)
for _t in ('AFMOE',):
    REGEX_EXPRS[_t] = _RX

_RX = (
    '[가-힣ㄱ-ㆎ]+|[！…“”‘’—：；，、-〿︰-﹏]+|[ㄅ-ㄯ]+|[一-龥\u3040-ゟ゠-ヿ]+',
    ('[^\\r\\n\\p{L}\\p{N}]?[\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}]*[\\p{Ll}\\p{Lm}\\p{Lo}\\'
     "p{M}]+(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])?|[^\\r\\n\\p{L}\\p{"
     "N}]?[\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}]+[\\p{Ll}\\p{Lm}\\p{Lo}\\p{M}]*(?:'[sS]|'[t"
     "T]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])?|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n/"
     ']*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+'),
)
for _t in ('YOUTU',):
    REGEX_EXPRS[_t] = _RX

_RX = (
    ("(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\\r\\n\\p{L}\\p{N}]?(?:"
     '\\p{L}\\p{M}*(?: \\p{L}\\p{M}*)*)+|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n/]?|\\s*[\\r\\'
     'n]|\\s+(?!\\S)|\\s+'),
)
for _t in ('EXAONE_MOE',):
    REGEX_EXPRS[_t] = _RX

_RX = (
    ("(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\\r\\n\\p{L}\\p{N}]?[\\"
     'p{L}\\p{M}]+|\\p{N}| ?[^\\s\\p{L}\\p{M}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|'
     '\\s+'),
)
for _t in ('QWEN35',):
    REGEX_EXPRS[_t] = _RX

_RX = (
    '\\d{1,3}(?=(?:\\d{3})*\\b)',
    ('[^\\r\\n\\p{L}\\p{N}]?[\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}]*[\\p{Ll}\\p{Lm}\\p{Lo}\\'
     "p{M}]+(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])?|[^\\r\\n\\p{L}\\p{"
     "N}]?[\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}]+[\\p{Ll}\\p{Lm}\\p{Lo}\\p{M}]*(?:'[sS]|'[t"
     "T]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])?|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\"
     'r\\n/]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+'),
)
for _t in ('TINY_AYA',):
    REGEX_EXPRS[_t] = _RX

_RX = (
    ("(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\\r\\n\\p{L}\\p{N}]?\\p"
     '{L}+|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s{512}(?!\\S)|\\s{2'
     '56}(?!\\S)|\\s{128}(?!\\S)|\\s{64}(?!\\S)|\\s{32}(?!\\S)|\\s{16}(?!\\S)|\\s{8}(?!\\'
     'S)|\\s{4}(?!\\S)|\\s{1,2}(?!\\S)|\\s{1}'),
)
for _t in ('JAIS2',):
    REGEX_EXPRS[_t] = _RX

_RX = (
    '[^\\n]+|[\\n]+',
)
for _t in ('GEMMA4', 'SARVAM_MOE'):
    REGEX_EXPRS[_t] = _RX

_RX = (
    '\\p{N}{1,3}',
    ("(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\\r\\n\\p{L}\\p{N}]?\\p"
     '{L}+|\\p{N}+| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+'),
)
for _t in ('MINICPM5',):
    REGEX_EXPRS[_t] = _RX

_RX = (
    '\\S+',
)
for _t in ('WHITESPACE',):
    REGEX_EXPRS[_t] = _RX

_RX = (
    ('[^\\r\\n\\p{L}\\p{N}]?((?=[\\p{L}\\p{M}])([^a-z]))*((?=[\\p{L}\\p{M}])([^A-Z]))+(?:'
     "'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])?|[^\\r\\n\\p{L}\\p{N}]?((?=["
     "\\p{L}\\p{M}])([^a-z]))+((?=[\\p{L}\\p{M}])([^A-Z]))*(?:'[sS]|'[tT]|'[rR][eE]|'[vV]"
     "[eE]|'[mM]|'[lL][lL]|'[dD])?|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n/]*|\\s*[\\r\\"
     'n]+|\\s+(?!\\S)|\\s+'),
)
for _t in ('GRANITE_EMB_MULTI',):
    REGEX_EXPRS[_t] = _RX

_RX = (
    '[^\\n]+|[\\n]+',
    ("(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\\r\\n\\p{L}\\p{N}]?\\p"
     '{L}+|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+'),
)
for _t in ('LAGUNA',):
    REGEX_EXPRS[_t] = _RX
del _t, _RX
