"""Variants of the algorithms: the pre-tokenizer's regex, BPE merging, SPM merging and byte fallback.

Each variant is the exact algorithm session with one rule changed, injected into a
copy of the exact tokenizer (``tok2._session``). A changed regex list runs the way
llama.cpp runs a regex it has no hand-written splitter for (std::regex on the
category-collapsed text: ``harness.tokenizer.pretokenize.split_offsets``), which is
what a port running that regex with a regex engine gets.

>>> from harness.tokenizer.pretokenize import REGEX_EXPRS
>>> _digit_rewrite("+")(REGEX_EXPRS["QWEN2"])[0].count("\\\\p{N}+")
1
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Callable

from harness.tokenizer import Tokenizer
from harness.tokenizer import unicode as U
from harness.tokenizer.algorithms import bpe, spm
from harness.tokenizer.pretokenize import NO_BYTE_ENCODE, REGEX_EXPRS, byte_encodes, split_offsets, split_words

from .base import Variant, cached, titled
from .specials import VocabVariant

__all__ = ["WPM_ACCENTS_KEPT", "PRE_GPT2_FALLBACK", "SessionVariant", "RegexVariant", "SplitSession", "DIGITS_SINGLE", "DIGITS_GROUPS_OF_3",
           "DIGITS_UNBOUNDED", "CONTRACTIONS_CASE_SENSITIVE", "CONTRACTIONS_CASE_INSENSITIVE", "BYTE_MAPPED_REGEX",
           "IGNORE_MERGES_MISSING", "IGNORE_MERGES_FORCED", "MERGES_BY_SCORE", "MERGES_BY_RANK",
           "BYTE_FALLBACK_MISSING", "words_by_lengths"]

BPE_CTOR = "src/llama-vocab.cpp, llm_tokenizer_bpe::llm_tokenizer_bpe"
BPE_SESSION = "src/llama-vocab.cpp, llm_tokenizer_bpe_session::tokenize"
SPM_SESSION = "src/llama-vocab.cpp, llm_tokenizer_spm_session::tokenize"


def words_by_lengths(text: str, lengths) -> list[str]:
    """Cut ``text`` into words of the given code point lengths.

    >>> words_by_lengths("abcde", [2, 0, 3])
    ['ab', '', 'cde']
    """
    out, start = [], 0
    for n in lengths:
        out.append(text[start:start + n])
        start += n
    return out


class SplitSession(bpe.Session):
    """The exact BPE session with another word split: ``split(text) -> words``."""

    def __init__(self, vocab, split: Callable[[str], list[str]]):
        super().__init__(vocab)
        self._split = split

    def tokenize_bpe(self, text: bytes) -> list[int]:
        chars = U.text_from_utf8(text)
        return self._words.flat(self._split(chars)) if chars else []


def _plain_bpe(tok) -> bool:
    v = tok.vocab
    return v.vocab_type == "bpe" and v.model in ("gpt2", "gemma4") and v.pre_type in REGEX_EXPRS


@dataclass(frozen=True, kw_only=True)
class SessionVariant(Variant):
    """The exact tokenizer with ``session(tok) -> session`` in place of its algorithm session."""

    session: Callable = None
    needs: Callable = lambda tok: True
    headline: str = ""

    def applies(self, tok) -> bool:
        return bool(self.needs(tok))

    def build(self, tok):
        t = Tokenizer(tok.vocab)
        t._session = self.session(tok, self.param)
        return t

    def title(self, cases) -> str:
        return titled(self.headline, self.rule)


_PROBES = ("1234567 12 a1 b 22 333 4444", "I'Ma HE'Sb THEY'REc WE'VEd i'de YOU'LLf x'Sg y'Th z'Vei",
           "it's done don't we'll", "a  b\n\n c\t\td  ")


@dataclass(frozen=True, kw_only=True)
class RegexVariant(SessionVariant):
    """The pre type's regex list rewritten: ``rewrite(exprs, param) -> exprs``; ``params`` to try."""

    rewrite: Callable = None
    params: tuple = (None,)

    def _exprs(self, tok, param):
        exprs = REGEX_EXPRS[tok.vocab.pre_type]
        return exprs, tuple(self.rewrite(exprs, param) or exprs)

    def _differs(self, tok, param) -> bool:
        old, new = self._exprs(tok, param)
        return new != old and any(split_offsets(old, p) != split_offsets(new, p) for p in _PROBES)

    def applies(self, tok) -> bool:
        return _plain_bpe(tok) and any(cached(tok, ("regex differs", self.name, p), lambda: self._differs(tok, p))
                                       for p in self.params)

    def candidates(self, tok, cases):
        for p in self.params:
            if cached(tok, ("regex differs", self.name, p), lambda: self._differs(tok, p)):
                yield self.bind(p)

    def build(self, tok):
        exprs = self._exprs(tok, self.param)[1]
        t = Tokenizer(tok.vocab)
        t._session = SplitSession(tok.vocab, lambda text: words_by_lengths(text, split_offsets(exprs, text)))
        return t


def _alternatives(expr: str) -> list[str]:
    """Top-level alternatives of a regex (outside groups and classes)."""
    out, depth, inside, start, i = [], 0, False, 0, 0
    while i < len(expr):
        c = expr[i]
        if c == "\\":
            i += 2
            continue
        if inside:
            inside = c != "]"
        elif c == "[":
            inside = True
        elif c == "(":
            depth += 1
        elif c == ")":
            depth -= 1
        elif c == "|" and depth == 0:
            out.append(expr[start:i])
            start = i + 1
        i += 1
    return out + [expr[start:]]


_DIGIT_ALT = re.compile(r"( \?)?\\p\{N\}(\+|\{1,3\}|\{1\})?")


def _digit_rewrite(quantifier: str):
    """Every top-level digit alternative (``\\p{N}``, `` ?\\p{N}+``, ``\\p{N}{1,3}``) with ``quantifier``."""
    def rewrite(exprs, _=None):
        out = []
        for expr in exprs:
            alts = _alternatives(expr)
            alts = [(m.group(1) or "") + "\\p{N}" + quantifier if (m := _DIGIT_ALT.fullmatch(a)) else a
                    for a in alts]
            out.append("|".join(alts))
        return tuple(out)
    return rewrite


def _digits_single(exprs, mode):
    return ("\\p{N}",) + tuple(exprs) if mode == "split first" else _digit_rewrite("")(exprs)


_DIGIT_RULE = f"the pre type's regex list decides digit runs: \\p{{N}}, \\p{{N}}{{1,3}} or ' ?\\p{{N}}+' ({BPE_CTOR})"
DIGITS_SINGLE = RegexVariant(
    name="digits_single", models="digits split one by one (\\p{N}) where the pre type groups them",
    rule=_DIGIT_RULE, checks=("encode",), shipped_by="known-port-bugs 3 (digit grouping: falcon, aquila '7777')",
    rewrite=_digits_single, params=("split first", "in place"), headline="digits split one by one")
DIGITS_GROUPS_OF_3 = RegexVariant(
    name="digits_groups_of_3", models="digits grouped by three (\\p{N}{1,3}) where the pre type does not",
    rule=_DIGIT_RULE, checks=("encode",), shipped_by="known-port-bugs 3 (digit grouping)",
    rewrite=_digit_rewrite("{1,3}"), headline="digits grouped by three")
DIGITS_UNBOUNDED = RegexVariant(
    name="digits_unbounded", models="a digit run kept whole (\\p{N}+) where the pre type cuts it",
    rule=_DIGIT_RULE, checks=("encode",), shipped_by="known-port-bugs 3 (digit grouping)",
    rewrite=_digit_rewrite("+"), headline="digit runs kept whole")

_CI = "(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])"
_CS = "(?:'s|'t|'re|'ve|'m|'ll|'d)"
_CI2 = "'(?:[sSdDmMtT]|[lL][lL]|[vV][eE]|[rR][eE])"
_GPT2 = "'s|'t|'re|'ve|'m|'ll|'d|"
CONTRACTIONS_CASE_SENSITIVE = RegexVariant(
    name="contractions_case_sensitive", models="contractions ('s 't 're ...) matched case-sensitively",
    rule=f"this pre type matches contractions in any case: '[sS]|'[tT]|... ({BPE_CTOR}; "
         "src/unicode.cpp, unicode_regex_split_custom_llama3/qwen2: unicode_tolower)",
    checks=("encode",), shipped_by="known-port-bugs 7 (contraction case: \"'RE\")",
    rewrite=lambda ex, _: tuple(e.replace(_CI, _CS).replace(_CI2, "'(?:[sdmt]|ll|ve|re)") for e in ex),
    headline="upper-case contractions ('S 'RE ...) not matched")
CONTRACTIONS_CASE_INSENSITIVE = RegexVariant(
    name="contractions_case_insensitive",
    models="contractions matched in any case where the pre type is lower-case only",
    rule=f"this pre type matches only lower-case contractions: 's|'t|'re|... ({BPE_CTOR}; "
         "src/unicode.cpp, unicode_regex_split_custom_gpt2)",
    checks=("encode",), shipped_by="known-port-bugs 7 (contraction case)",
    rewrite=lambda ex, _: tuple(_CI + "|" + e[len(_GPT2):] if e.startswith(_GPT2) else e for e in ex),
    headline="upper-case contractions ('S 'RE ...) matched")


class ByteMappedSession(bpe.Session):
    """The regex runs on the GPT-2 byte-mapped text (Ġ for space ...), not on the raw code points."""

    def tokenize_bpe(self, text: bytes) -> list[int]:
        mapped = "".join(U.BYTE_TO_UNICODE[b] for b in text)
        return [i for w in split_words(self.pre_type, mapped) for i in self.word_ids(w.encode("utf-8"))]


BYTE_MAPPED_REGEX = SessionVariant(
    name="regex_on_byte_mapped_text", models="the pre-tokenizer regex runs on byte-level-mapped text (GPT-2 "
                                             "bytes_to_unicode), not on the raw text",
    rule="splits the raw code points first, then byte-encodes each word (src/unicode.cpp, unicode_regex_split: "
         "unicode_byte_encoding_process after the split)",
    checks=("encode",), session=lambda tok, p: ByteMappedSession(tok.vocab),
    needs=lambda tok: _plain_bpe(tok) and tok.vocab.pre_type not in NO_BYTE_ENCODE,
    headline="the regex split runs on byte-mapped text")


IGNORE_MERGES_MISSING = VocabVariant(
    name="ignore_merges_missing", models="ignore_merges not honoured: a word that is a token is still merged",
    rule=f"with ignore_merges (LLAMA3 and others), a word that is itself a token is that token ({BPE_SESSION})",
    checks=("encode",), shipped_by="known-port-bugs 1 (ignore_merges: llama3 ' Việt'); transformers on llama-bpe",
    changes=lambda v: {"ignore_merges": False}, needs=lambda tok: tok.vocab.ignore_merges,
    headline="ignore_merges not honoured (whole-word tokens merged from pieces)")
IGNORE_MERGES_FORCED = VocabVariant(
    name="ignore_merges_forced", models="a word that is a token taken whole although the pre type merges it",
    rule=f"without ignore_merges, every word is merged pair by pair from its bytes ({BPE_SESSION})",
    checks=("encode",), shipped_by="known-port-bugs 1 (ignore_merges)",
    changes=lambda v: {"ignore_merges": True}, needs=lambda tok: _plain_bpe(tok) and not tok.vocab.ignore_merges,
    headline="words that are tokens taken whole (ignore_merges where the pre type has none)")


PRE_GPT2_FALLBACK = VocabVariant(
    name="pre_type_gpt2_fallback", models="the pre type's regexes replaced by GPT-2's (a pre type the port does "
                                          "not know falls back to GPT-2 instead of failing)",
    rule="each pre type splits with its own regexes; an unknown pre type is an error, never GPT-2 "
         "(src/llama-vocab.cpp, llm_tokenizer_bpe; llama_vocab::impl::load: unknown pre-tokenizer type)",
    checks=("encode",), shipped_by="candle-core 0.11.1 (TokenizerFromGguf: GPT-2 ByteLevel for pre types it "
                                   "does not know)",
    changes=lambda v: {"pre_type": "GPT2"},
    needs=lambda tok: _plain_bpe(tok) and tok.vocab.pre_type != "GPT2" and byte_encodes(tok.vocab.pre_type),
    same_session=False, headline="the pre-tokenizer falls back to GPT-2's regexes")

WPM_ACCENTS_KEPT = VocabVariant(
    name="wpm_accents_kept", models="WPM strip_accents ignored: no NFD, accent marks kept inside words "
                                    "(llama.cpp builds before its normalizer options did this)",
    rule="with strip_accents (BERT's default: as lowercase), WPM normalises to NFD and drops accent marks "
         "(src/llama-vocab.cpp, llm_tokenizer_wpm_session::preprocess)",
    checks=("encode",), shipped_by="de.kherud:llama 4.2.0 (llama.cpp b4916) on bert-bge",
    changes=lambda v: {"strip_accents": False},
    needs=lambda tok: tok.vocab.vocab_type == "wpm" and tok.vocab.strip_accents,
    points=lambda tok: _accented(),
    headline="WPM keeps accent marks (strip_accents ignored)")


def _accented(n: int = 6) -> tuple[int, ...]:
    """Up to ``n`` code points NFD takes apart (a letter and its accents), spread over the
    Latin, Greek and Cyrillic blocks, lowercase and uppercase: a port that keeps accents
    misses them all, one with another defect on one uppercase letter does not.

    >>> "".join(map(chr, _accented()))
    'àōȕÀĽȄ'
    """
    cps = [c for c in range(0xC0, 0x500) if U.NFD_FIRST[c] != c]
    out = []
    for case in ([c for c in cps if U.to_lower(c) == c], [c for c in cps if U.to_lower(c) != c]):
        out += case[::max(1, len(case) // (n // 2))][:n // 2]
    return tuple(out)


class _ScoreRanks:
    """A ``ranks`` mapping for merge_word that orders pairs by the merged token's score (SPM's way)."""

    def __init__(self, vocab):
        self.t2i, self.scores = vocab.token_to_id, [float(s) for s in vocab.scores]

    def get(self, pair):
        tid = self.t2i.get(pair[0] + pair[1])
        return None if tid is None else -self.scores[tid]


class ScoreSession(bpe.Session):
    def ranks(self):
        if not hasattr(self, "_score_ranks"):
            self._score_ranks = _ScoreRanks(self.vocab)
        return self._score_ranks

    def cut_pattern(self):
        return None


MERGES_BY_SCORE = SessionVariant(
    name="merges_by_score", models="BPE words merged by token score (SPM's queue), not by merge rank",
    rule=f"a BPE vocab merges by tokenizer.ggml.merges rank, lowest first ({BPE_SESSION})",
    checks=("encode",), shipped_by="known-port-bugs 27 (wrong scheme selection: gemma4 has merges and scores)",
    session=lambda tok, p: ScoreSession(tok.vocab),
    needs=lambda tok: _plain_bpe(tok) and len(set(tok.vocab.scores.tolist())) > 1,
    headline="BPE merges ordered by score")


class RankSession(spm.Session):
    """SPM with merges ranked like a BPE conversion (transformers: score, then vocab order)."""

    def __init__(self, vocab):
        super().__init__(vocab)
        scores = [float(s) for s in vocab.scores]
        self._neg_score = {t: (-scores[i], i) for t, i in self._token_to_id.items()}


class NoByteFallbackSession(spm.Session):
    """SPM that emits UNK for a symbol with no token, instead of its <0xXX> byte tokens."""

    def __init__(self, vocab):
        super().__init__(vocab)
        self._unk = vocab.unk

    def _resegment(self, piece, out):
        tid = self._token_to_id.get(piece)
        out.append(tid if tid is not None else self._unk)


MERGES_BY_RANK = SessionVariant(
    name="merges_by_rank", models="SPM merged as a BPE conversion: pairs ranked by score, ties by token id",
    rule=f"SPM merges the best-scoring adjacent pair, ties to the leftmost ({SPM_SESSION})",
    checks=("encode",), shipped_by="known-port-bugs 10 (SPM bigram ties: 'thunderstorm'); transformers",
    session=lambda tok, p: RankSession(tok.vocab), needs=lambda tok: tok.vocab.vocab_type == "spm",
    headline="SPM merges ranked like BPE (score ties by id)")
BYTE_FALLBACK_MISSING = SessionVariant(
    name="byte_fallback_missing", models="a character with no token becomes UNK instead of its <0xXX> byte tokens",
    rule=f"a symbol with no token is emitted as its bytes' <0xXX> tokens ({SPM_SESSION}: resegment, byte_to_token)",
    checks=("encode",), shipped_by="known-port-bugs 18 (byte fallback: 'Der süße Bär')",
    session=lambda tok, p: NoByteFallbackSession(tok.vocab),
    needs=lambda tok: tok.vocab.vocab_type == "spm" and tok.vocab.unk is not None,
    headline="characters without a token become UNK (no byte fallback)")
