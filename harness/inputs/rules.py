"""Texts that cross the tokenizer rules llama.cpp changes between pins.

pin-diff (``make pin-diff``) encodes these, with the golden texts and corpus chunks,
on two pins' llama.cpp: fragments around ``~`` (its ``\\p{S}`` class moved),
contractions, digits, whitespace, scripts, emoji and special-token texts.

>>> rule_texts(2, 0) == rule_texts(2, 0)
True
"""

from __future__ import annotations

import random

_FRAGMENTS = ("~", "~~", " ~", "a~b", "~/path", "x ~= y", "it's", "I'M", "we'll", "They'RE", "l'été",
              "O'Neil", "don’t", "12", "1234567", "٣٤٥", "½", " ", "  ", "\t", "\n", "\r\n", "\n\n",
              "\u00a0", "\u3000", "Hello", " world", "camelCase", "HTTPServer", "你好世界", "カタカナ",
              "ひらがな", "한국어", "Привет", "ภาษาไทย", "नमस्ते", "مرحبا", "🦙", "👍🏽", "🇺🇸", "e\u0301",
              "$100", "^_^", "<tag>", "{\"a\": [1, 2]}", "`q`", "|p|", "+=", "->", "...", "!!", "?!", "—",
              "<s>", "</s>", "<|endoftext|>", "<|im_start|>", "[CLS]", "<unk>", "<mask>", "Yağmur'da",
              "İstanbul'a", "x²", "ǅ", "Ⅻ", "\u200d", "\x00", "ß", "ﬁ")


def rule_texts(n: int, seed: int) -> list[str]:
    """``n`` seeded texts joined from fragments that cross the changed rules.

    """
    rng = random.Random(seed)
    return ["".join(rng.choice(_FRAGMENTS) for _ in range(rng.randint(1, 12))) for _ in range(n)]
