"""Texts that broke real ports (shared/docs/known-port-bugs.md), each with the bug it caught.

Plain data: the suite's known check (suite/test_known.py) and the pytest plugin's
``@conformance`` tests both run every text on every vocab and flag combination.

>>> ("->", 'qwen2: missing pre -> GPT-2 fallback') in KNOWN_TEXTS
True
"""

KNOWN_TEXTS = [
    ("", 'SPM (llama-spm): "" -> [BOS] with add_special; BOS defaults'),
    ("->", 'qwen2: missing pre -> GPT-2 fallback'),
    (" Việt", 'llama3: ignore_merges'),
    ("'RE", 'llama3/qwen2: contraction case'),
    ("'Rex", 'qwen2: (?i:\'re) takes "\'Re"; a case-sensitive port keeps "\'Rex"'),
    ("7777", 'qwen2/llama3: digit grouping ("What is 7777 + 3333?")'),
    ("a\xa0\xa0\x00b", 'gpt-2 family: NBSP is whitespace (whitespace set)'),
    ("\xa0aC", 'tekken-style case split with NBSP'),
    ("¼-a", 'deepseek: Unicode category tables'),
    ("a 〇b", 'category tables: U+3007 is a number'),
    ("\x1f-a", 'category tables: U+001F is not whitespace'),
    ("\ufeff//", 'BOM is not whitespace'),
    ("\n\n", 'qwen2: newline runs ([271])'),
    ("\r\n", 'CRLF grapheme'),
    ("किसानों", 'Hindi combining marks (grapheme seeding)'),
    ("brutalist", 'BPE merge order by rank'),
    ("thunderstorm", 'llama-spm: SPM bigram ties'),
    ("<s>G", 'llama-spm: space after special token'),
    ("a </s> b", 'phi-3: rstrip/lstrip'),
    (" <mask>", "nomic-bert-moe, jina-v2: <mask> LSTRIP ('one <mask>', shortened)"),
    ("a <mask> b", 'nomic-bert-moe: <mask> LSTRIP'),
    (".<|im_end|>", 'qwen2: parse_special and special registration'),
    ("[toxicity=0]", 'gemma2: USER_DEFINED in raw text'),
    ("Führer", 'deepseek-coder: added-token priority'),
    ("Der süße Bär", 'SPM byte fallback'),
    ("Kantō", 'bert: WordPiece accent stripping'),
    ("!!!!!!", 't5/UGM: charsmap and whitespace'),
    ("x != y and a.b == c", 'decode clean_up_tokenization_spaces'),
    ("\u3000", 'byte tokens leaking into decoded text (<0xE3>...)'),
    ("x ~é ~~", "deepseek-v3: '~' is neither P nor S"),
]
