"""The fixed benchmark corpus: the same bytes on every machine.

A seeded generator (our own xorshift, so no library's RNG change can move a
byte) mixes the families real prompts contain: prose, source code, CJK,
Cyrillic, Arabic, Indic, emoji ZWJ sequences, digit runs, whitespace runs and
special-token texts. ``CORPUS_SHA256`` pins the result; a test regenerates it.

>>> text = corpus(4096)
>>> len(text.encode()) >= 4096
True
"""

from __future__ import annotations

import hashlib

CORPUS_BYTES = 3 * 1024 * 1024
CORPUS_SHA256 = "c9fb1bb347fd9e7be6a68afa77e82f2f35522eb9e02085410fddf59f074542ed"

_WORDS = ("the of and to in is was for that with as on by at from his her it an were are which this "
          "be or has had not but its they their who been more one new first after also two time "
          "tokenizer model llama vocabulary merge rank piece byte unicode whitespace digit "
          "Hello World It's don't we'll they're I've she'd You'RE CAN'T").split()
_CODE = (
    "def encode(self, text: str) -> list[int]:\n    return [self.rank[b] for b in text.encode()]\n",
    "for (int i = 0; i < n; ++i) {\n\tif (a[i] != b[i]) { return -1; }\n}\n",
    "const x = await fetch(`/api/v1/items?id=${id}&q=${encodeURIComponent(q)}`);\n",
    "SELECT id, name FROM users WHERE age >= 18 AND name LIKE '%ann%';\r\n",
    "    x != y and a.b == c  # comment with  two  spaces\n",
    "<div class=\"a\">&nbsp;&lt;tag&gt;</div>\n",
)
_SCRIPTS = (
    "汉字的统计与分词是一个有趣的问题我想在苹果工作", "日本語のテキストとカタカナ、ひらがな。",
    "한국어 텍스트와 자모 각 조합", "Привет, как дела? Съешь же ещё этих мягких булок.",
    "مرحبا بالعالم، هذا نص عربي مع تشكيل: بِسْمِ اللَّهِ", "नमस्ते दुनिया, किसानों के लिए हिंदी पाठ।",
    "தமிழ் உரை", "ภาษาไทยไม่มีช่องว่างระหว่างคำ", "ភាសាខ្មែរ", "Ελληνικά κείμενα με τόνους",
    "עברית עם ניקוד", "Ｆｕｌｌｗｉｄｔｈ ｱｲｳ ﾊﾝｶｸ", "Việt Nam, Führer, Kantō, lǜshi, Résumé",
)
_EMOJI = ("👍🏽", "👨‍👩‍👧‍👦", "🏳️‍🌈", "🇺🇸🇯🇵", "❤️", "😶‍🌫️", "🦙", "🧑🏿‍💻", "✅", "🚀")
_SPACES = (" ", "  ", "\t", "\n", "\n\n", "\r\n", "\u00a0", "\u3000", "\u2009", "\u0085", "\u2028", "   \n  ")
_SPECIALS = ("<s>", "</s>", "<|endoftext|>", "<|im_start|>", "<|im_end|>", "[CLS]", "[SEP]", "<mask>",
             "<|begin_of_text|>", "<bos>", "<unk>")


class _Rng:
    """xorshift64*: tiny, fast, and fixed forever."""

    def __init__(self, seed: int):
        self.state = seed or 1

    def below(self, n: int) -> int:
        x = self.state
        x ^= (x >> 12) & 0xFFFFFFFFFFFFFFFF
        x ^= (x << 25) & 0xFFFFFFFFFFFFFFFF
        x ^= (x >> 27) & 0xFFFFFFFFFFFFFFFF
        self.state = x
        return ((x * 0x2545F4914F6CDD1D) & 0xFFFFFFFFFFFFFFFF) % n

    def pick(self, seq):
        return seq[self.below(len(seq))]


def _piece(rng: _Rng) -> str:
    kind = rng.below(10)
    if kind < 4:
        return " ".join(rng.pick(_WORDS) for _ in range(3 + rng.below(12))) + rng.pick((". ", ", ", "! ", "? ", "\n"))
    if kind == 4:
        return rng.pick(_CODE)
    if kind == 5:
        return rng.pick(_SCRIPTS) + rng.pick(_SPACES)
    if kind == 6:
        return "".join(rng.pick(_EMOJI) for _ in range(1 + rng.below(4))) + " "
    if kind == 7:
        return "".join(str(rng.below(10)) for _ in range(1 + rng.below(24))) + rng.pick(_SPACES)
    if kind == 8:
        return "".join(rng.pick(_SPACES) for _ in range(1 + rng.below(6)))
    return rng.pick(_SPECIALS)


def corpus(size: int = CORPUS_BYTES, seed: int = 20261130) -> str:
    """At least ``size`` UTF-8 bytes of mixed text, cut at a piece boundary."""
    rng, parts, n = _Rng(seed), [], 0
    while n < size:
        p = _piece(rng)
        parts.append(p)
        n += len(p.encode())
    return "".join(parts)


def chunks(text: str, target: int = 4096) -> list[str]:
    """Split at newlines into chunks of about ``target`` bytes (both sides get the same chunks)."""
    out, cur, n = [], [], 0
    for line in text.splitlines(keepends=True):
        cur.append(line)
        n += len(line.encode())
        if n >= target:
            out.append("".join(cur))
            cur, n = [], 0
    if cur:
        out.append("".join(cur))
    return out


def sha256(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()
