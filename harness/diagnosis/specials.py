"""Variants of the special-token rules: partition, BOS/EOS, extra tokens, the space prefix.

llama.cpp's rules at the pin (src/llama-vocab.cpp):
- ``tokenizer_st_partition`` cuts special texts out of the raw text, longest first:
  CONTROL/UNKNOWN only with parse_special, USER_DEFINED always, and LSTRIP/RSTRIP
  eat the C-isspace bytes next to the token;
- ``llama_vocab::impl::tokenize`` adds BOS (CLS for WPM) when add_special and the
  vocab's add_bos, EOS (SEP) likewise, even around an empty text;
- SPM/UGM prepend one space to the first fragment (and after each special) when
  add_space_prefix.

>>> ADD_BOS_FORCED.name, SPECIALS_NEVER_PARSED.checks
('add_bos_forced', ('encode',))
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Callable

from harness.tokenizer import Tokenizer
from harness.tokenizer.vocab import CONTROL, LSTRIP, NORMAL, RSTRIP, UNKNOWN, USER_DEFINED

from .base import Variant, encode_exact, specials_around, titled

__all__ = ["SpecialsVariant", "VocabVariant", "PartitionVariant", "TokenParamVariant", "SPECIALS_NEVER_PARSED",
           "SPECIALS_ALWAYS_PARSED", "LSTRIP_IGNORED", "RSTRIP_IGNORED", "USER_DEFINED_NOT_MATCHED",
           "USER_DEFINED_AS_CONTROL", "ADD_BOS_IGNORED", "ADD_BOS_FORCED", "ADD_SPECIAL_ALWAYS", "ADD_EOS_IGNORED", "ADD_EOS_FORCED",
           "NO_SPECIALS_ON_EMPTY", "CHAT_TOKEN_AS_BOS", "EXTRA_TOKEN", "SPACE_PREFIX_FLIPPED", "TYPES_NOT_OVERRIDDEN",
           "UNKNOWN_NOT_MATCHED", "UNKNOWN_AS_NORMAL", "USER_DEFINED_TYPED_CONTROL",
           "ADD_SPECIAL_IGNORED", "UGM_CHARSMAP_IGNORED", "UGM_EXTRA_WHITESPACES_KEPT"]

PARTITION = "src/llama-vocab.cpp, llama_vocab::impl::tokenizer_st_partition"
LOAD = "src/llama-vocab.cpp, llama_vocab::impl::load"
TOKENIZE = "src/llama-vocab.cpp, llama_vocab::impl::tokenize"
_TYPES_WITH_BOS = ("spm", "bpe", "ugm", "wpm")


def _has_attr(tok, bits: int) -> bool:
    v = tok.vocab
    return any(v.attrs[i] & bits for i in v.special_cache)


@dataclass(frozen=True, kw_only=True)
class SpecialsVariant(Variant):
    """llama.cpp's own ids, changed by ``change(tok, text, add, parse) -> ids``."""

    change: Callable
    needs: Callable = lambda tok: True
    headline: str = ""
    # ``undo(tok, ids, text, add, parse) -> ids | None``: a port's answer with this bug's own
    # tokens taken off again, None where they are not there. It lets a case with this bug and
    # another one at once (the other diagnosed from what is left) go to known causes.
    undo: Callable | None = None
    # A variant about what add_special puts around the text (BOS, EOS, CLS, SEP): its claim
    # is the ids at the ends of an answer (Variant.edges), not the text's tokens between them
    about_edges: bool = False

    def edges(self, tok) -> frozenset[int] | None:
        if not self.about_edges:
            return None
        v = tok.vocab
        return frozenset(i for i in (v.bos, v.eos, *self._edge_params()) if i is not None)

    def _edge_params(self) -> tuple:
        return ()

    def applies(self, tok) -> bool:
        return tok.vocab.vocab_type in _TYPES_WITH_BOS and bool(self.needs(tok))

    def encode(self, tok, text, add, parse):
        return self.change(tok, text, add, parse)

    def title(self, cases) -> str:
        return titled(self.headline, self.rule)


SPECIALS_NEVER_PARSED = SpecialsVariant(
    name="specials_never_parsed", models="parse_special ignored: control tokens never split out of the text",
    rule=f"with parse_special, CONTROL tokens' texts become their ids ({PARTITION})",
    checks=("encode",), shipped_by="known-port-bugs 14 (parse_special and special registration)",
    change=lambda tok, t, a, p: encode_exact(tok, t, a, False), needs=lambda tok: _has_attr(tok, CONTROL | UNKNOWN),
    headline="special-token texts never parsed (parse_special ignored)")
SPECIALS_ALWAYS_PARSED = SpecialsVariant(
    name="specials_always_parsed", models="control tokens split out of the text even without parse_special",
    rule=f"without parse_special, CONTROL tokens' texts are plain text ({PARTITION})",
    checks=("encode",), shipped_by="known-port-bugs 14 (parse_special and special registration)",
    change=lambda tok, t, a, p: encode_exact(tok, t, a, True), needs=lambda tok: _has_attr(tok, CONTROL | UNKNOWN),
    headline="special-token texts parsed without parse_special")


def _bos_ignored(tok, text, add, parse):
    out, v = encode_exact(tok, text, add, parse), tok.vocab
    return out[1:] if add and v.add_bos and out[:1] == (v.bos,) else out


def _bos_forced(tok, text, add, parse):
    out, v = encode_exact(tok, text, add, parse), tok.vocab
    return (v.bos,) + out if add and out[:1] != (v.bos,) else out


def _eos_ignored(tok, text, add, parse):
    out, v = encode_exact(tok, text, add, parse), tok.vocab
    return out[:-1] if add and v.add_eos and out[-1:] == (v.eos,) else out


def _eos_forced(tok, text, add, parse):
    out, v = encode_exact(tok, text, add, parse), tok.vocab
    return out + (v.eos,) if add and out[-1:] != (v.eos,) else out


def _undo_bos(tok, ids, text, add, parse):
    bos = tok.vocab.bos
    return tuple(ids[1:]) if add and tuple(ids[:1]) == (bos,) else None


def _undo_eos(tok, ids, text, add, parse):
    eos = tok.vocab.eos
    return tuple(ids[:-1]) if add and tuple(ids[-1:]) == (eos,) else None


def _redo_bos(tok, ids, text, add, parse):
    """The BOS a port with add_bos_ignored left out, put back."""
    v = tok.vocab
    return (v.bos,) + tuple(ids) if add and v.add_bos and tuple(ids[:1]) != (v.bos,) else None


def _redo_eos(tok, ids, text, add, parse):
    """The EOS a port with add_eos_ignored left out, put back."""
    v = tok.vocab
    return tuple(ids) + (v.eos,) if add and v.add_eos and tuple(ids[-1:]) != (v.eos,) else None


def _undo_wrapper(tok, ids, text, add, parse):
    """The ids without what add_special=true would have put around the text (CLS/SEP, BOS/EOS)."""
    if add:
        return None
    head, tail = specials_around(tok, text, parse)
    ids = tuple(ids)
    end = len(ids) - len(tail)
    if end >= len(head) and ids[:len(head)] == head and ids[end:] == tail:
        return ids[len(head):end]
    return None

ADD_BOS_IGNORED = SpecialsVariant(
    name="add_bos_ignored", models="add_special adds no BOS although the vocab's add_bos is true",
    rule=f"adds BOS (WPM: CLS) first when add_special and add_bos ({TOKENIZE})",
    checks=("encode",), shipped_by="known-port-bugs 17 (BOS defaults)",
    change=_bos_ignored, needs=lambda tok: tok.vocab.add_bos and tok.vocab.bos is not None, undo=_redo_bos,
    about_edges=True, headline="add_special does not add BOS")
ADD_BOS_FORCED = SpecialsVariant(
    name="add_bos_forced", models="add_special prepends BOS although the vocab's add_bos is false",
    rule=f"adds BOS only when the vocab's add_bos is true (tokenizer.ggml.add_bos_token, pre-type defaults) "
         f"({TOKENIZE})",
    checks=("encode",), shipped_by="known-port-bugs 17 (BOS defaults); transformers on deepseek-coder",
    change=_bos_forced, needs=lambda tok: not tok.vocab.add_bos and tok.vocab.bos is not None, undo=_undo_bos,
    about_edges=True, headline="add_special prepends BOS though this vocab's add_bos is false")
ADD_EOS_IGNORED = SpecialsVariant(
    name="add_eos_ignored", models="add_special adds no EOS although the vocab's add_eos is true",
    rule=f"appends EOS (WPM: SEP) when add_special and add_eos ({TOKENIZE})",
    checks=("encode",), change=_eos_ignored, needs=lambda tok: tok.vocab.add_eos and tok.vocab.eos is not None,
    undo=_redo_eos,
    about_edges=True, headline="add_special does not append EOS")
ADD_EOS_FORCED = SpecialsVariant(
    name="add_eos_forced", models="add_special appends EOS although the vocab's add_eos is false",
    rule=f"appends EOS only when the vocab's add_eos is true ({TOKENIZE})",
    checks=("encode",), change=_eos_forced, undo=_undo_eos,
    needs=lambda tok: not tok.vocab.add_eos and tok.vocab.eos is not None and tok.vocab.vocab_type != "wpm",
    about_edges=True, headline="add_special appends EOS though this vocab's add_eos is false")
ADD_SPECIAL_ALWAYS = SpecialsVariant(
    name="add_special_always", models="add_special ignored: BOS/EOS (CLS/SEP) added even when add_special is false",
    rule=f"adds the vocab's BOS/EOS only when the caller's add_special is true ({TOKENIZE})",
    checks=("encode",), shipped_by="bindings that hard-code add_bos=true (known-port-bugs 17)",
    change=lambda tok, t, a, p: encode_exact(tok, t, True, p),
    needs=lambda tok: bool(encode_exact(tok, "", True, False)), undo=_undo_wrapper,
    about_edges=True, headline="add_special=false still adds BOS/EOS")
def _redo_wrapper(tok, ids, text, add, parse):
    """What add_special puts around the text (CLS/SEP, BOS/EOS), put back where a port left it out."""
    if not add:
        return None
    head, tail = specials_around(tok, text, parse)
    ids = tuple(ids)
    return None if ids[:len(head)] == head and ids[len(ids) - len(tail):] == tail else head + ids + tail


ADD_SPECIAL_IGNORED = SpecialsVariant(
    name="add_special_ignored", models="add_special ignored: nothing added around the text (no BOS/CLS, no EOS/SEP)",
    rule=f"with add_special, adds the vocab's BOS/EOS (WPM: CLS and SEP), also around an empty text ({TOKENIZE})",
    checks=("encode",), shipped_by="shimmytok 0.8.4 on bert-bge (no [CLS]/[SEP])",
    change=lambda tok, t, a, p: encode_exact(tok, t, False, p),
    needs=lambda tok: all(specials_around(tok, "a", False)), undo=_redo_wrapper,
    about_edges=True, headline="add_special adds nothing around the text")
NO_SPECIALS_ON_EMPTY = SpecialsVariant(
    name="no_bos_on_empty", models="an empty text gives no ids, even with add_special",
    rule=f"adds BOS/EOS around an empty text too: \"\" with add_special is [BOS] ({TOKENIZE})",
    checks=("encode",), shipped_by="known-port-bugs 17; transformers on llama-bpe (\"\" gives no BOS)",
    change=lambda tok, t, a, p: () if t == "" else encode_exact(tok, t, a, p),
    needs=lambda tok: bool(encode_exact(tok, "", True, False)),
    about_edges=True, headline="add_special adds nothing to an empty text")


@dataclass(frozen=True, kw_only=True)
class TokenParamVariant(SpecialsVariant):
    """A variant whose parameter is a token, read off the port's answer: ``param = (id, text)``."""

    pick: Callable = lambda case: None  # the id worth trying for one case, or None

    def candidates(self, tok, cases):
        for case in cases:
            if case.family == "encode" and (tid := self.pick(case)) is not None:
                text = tok.vocab.tokens[tid] if 0 <= tid < tok.n_vocab else b"<out of range>"
                yield self.bind((tid, text.decode("utf-8", "replace")))
                return

    def _edge_params(self) -> tuple:
        return (self.param[0],) if self.param else ()

    def encode(self, tok, text, add, parse):
        if self.param is None:
            return encode_exact(tok, text, add, parse)
        return self.change(tok, text, add, parse, self.param[0])

    def title(self, cases) -> str:
        tid, text = self.param or (None, "")
        return titled(self.headline.format(id=tid, text=text), self.rule)


def _chat_bos(tok, text, add, parse, tid):
    out, v = encode_exact(tok, text, add, parse), tok.vocab
    if not add:
        return out
    return (tid,) + (out[1:] if v.add_bos and out[:1] == (v.bos,) else out)


CHAT_TOKEN_AS_BOS = TokenParamVariant(
    name="chat_token_as_bos", models="add_special prepends another token (a chat token) as BOS",
    rule=f"prepends the vocab's BOS id (tokenizer.ggml.bos_token_id) when add_special and add_bos ({TOKENIZE})",
    checks=("encode",), shipped_by="known-port-bugs 17; transformers on deepseek-coder (BOS 32257)",
    change=_chat_bos, pick=lambda case: case.port_output[0] if case.flags[0] and case.port_output else None,
    about_edges=True, headline="add_special prepends token {id} ({text!r}) as BOS")
EXTRA_TOKEN = TokenParamVariant(
    name="extra_token_appended", models="every encode ends with one extra token",
    rule=f"adds nothing after the text but EOS with add_special and add_eos ({TOKENIZE})",
    checks=("encode",), change=lambda tok, t, a, p, tid: encode_exact(tok, t, a, p) + (tid,),
    pick=lambda case: case.port_output[-1] if case.port_output else None,
    about_edges=True, headline="every encode ends with an extra token {id} ({text!r})")


@dataclass(frozen=True, kw_only=True)
class VocabVariant(Variant):
    """The exact tokenizer over a changed vocab: ``changes(vocab) -> {field: value}``."""

    changes: Callable
    needs: Callable = lambda tok: True
    headline: str = ""
    same_session: bool = False  # the change is outside the algorithm: share the exact session
    points: Callable | None = None  # tok -> code points the change reaches, for predictions

    def applies(self, tok) -> bool:
        return tok.vocab.vocab_type != "none" and bool(self.needs(tok))

    def prediction_points(self, tok) -> tuple[int, ...]:
        return tuple(self.points(tok)) if self.points is not None else ()

    def build(self, tok):
        t = Tokenizer(replace(tok.vocab, **self.changes(tok.vocab)))
        if self.same_session:
            t._session = tok.session()  # building one can take seconds (UGM's charsmap)
        return t

    def title(self, cases) -> str:
        return titled(self.headline, self.rule)


def _strip_cleared(bit):
    return lambda v: {"attrs": tuple(a & ~bit for a in v.attrs)}


LSTRIP_IGNORED = VocabVariant(
    name="lstrip_ignored", models="a special token's LSTRIP attribute ignored (spaces before it kept)",
    rule=f"an LSTRIP token eats the C-isspace bytes before it ({PARTITION})",
    checks=("encode",), shipped_by="known-port-bugs 13 (lstrip/rstrip: 'a <mask> b')",
    changes=_strip_cleared(LSTRIP), needs=lambda tok: _has_attr(tok, LSTRIP), same_session=True,
    headline="spaces before an LSTRIP special kept")
RSTRIP_IGNORED = VocabVariant(
    name="rstrip_ignored", models="a special token's RSTRIP attribute ignored (spaces after it kept)",
    rule=f"an RSTRIP token eats the C-isspace bytes after it ({PARTITION})",
    checks=("encode",), shipped_by="known-port-bugs 13 (lstrip/rstrip: 'a </s> b')",
    changes=_strip_cleared(RSTRIP), needs=lambda tok: _has_attr(tok, RSTRIP), same_session=True,
    headline="spaces after an RSTRIP special kept")
def _file_types(v) -> dict:
    """The vocab with each token's type as the GGUF gives it (llama.cpp's text rules undone):
    those tokens leave or join the special-token list, which stays longest first."""
    attrs = list(v.attrs)
    for i, a in v.type_overrides.items():
        attrs[i] = a | (attrs[i] & (LSTRIP | RSTRIP))
    special = CONTROL | USER_DEFINED | UNKNOWN
    cache = [i for i in v.special_cache if attrs[i] & special]
    cache += [i for i in v.type_overrides if attrs[i] & special and i not in v.special_cache]
    cache.sort(key=lambda i: -len(v.tokens[i]))  # stable: llama.cpp's order among the rest kept
    return {"attrs": tuple(attrs), "special_cache": tuple(cache)}


TYPES_NOT_OVERRIDDEN = VocabVariant(
    name="token_types_not_overridden",
    models="a token llama.cpp's load makes CONTROL by its text (end of generation or turn, FIM) keeps its GGUF type",
    rule=f"a token whose text is an end-of-generation, end-of-turn or FIM text becomes CONTROL at load, "
         f"whatever its GGUF type: parse_special cuts it out and its piece is empty without special ({LOAD})",
    checks=("encode", "decode", "piece"),
    shipped_by="candle, ollama, shimmytok, transformers and its GGUF conversion (qwen2's '</s>', deepseek-coder's FIM tokens)",
    changes=_file_types, needs=lambda tok: bool(tok.vocab.type_overrides),
    headline="a token llama.cpp makes CONTROL by its text (EOG, EOT, FIM) keeps its GGUF type")
UGM_CHARSMAP_IGNORED = VocabVariant(
    name="ugm_charsmap_ignored", models="UGM without its precompiled charsmap: the text reaches the Viterbi search "
                                        "unnormalised",
    rule="UGM normalises every input prefix through the precompiled charsmap (XCDA) before tokenizing "
         "(src/llama-vocab.cpp, llm_tokenizer_ugm_session::normalize)",
    checks=("encode",), shipped_by="shimmytok 0.8.4 on nomic-bert-moe",
    changes=lambda v: {"precompiled_charsmap": b""},
    needs=lambda tok: tok.vocab.vocab_type == "ugm" and bool(tok.vocab.precompiled_charsmap),
    headline="UGM ignores the precompiled charsmap (no normalisation)")
UGM_EXTRA_WHITESPACES_KEPT = VocabVariant(
    name="ugm_extra_whitespaces_kept", models="UGM keeps runs of spaces and leading/trailing spaces "
                                              "(remove_extra_whitespaces ignored)",
    rule="with remove_extra_whitespaces, UGM normalisation drops leading and trailing whitespace and merges runs "
         "into one space (src/llama-vocab.cpp, llm_tokenizer_ugm_session::normalize)",
    checks=("encode",), shipped_by="shimmytok 0.8.4 on nomic-bert-moe",
    changes=lambda v: {"remove_extra_whitespaces": False},
    needs=lambda tok: tok.vocab.vocab_type == "ugm" and tok.vocab.remove_extra_whitespaces,
    headline="UGM keeps extra whitespace (remove_extra_whitespaces ignored)")
USER_DEFINED_TYPED_CONTROL = VocabVariant(
    name="user_defined_typed_control",
    models="USER_DEFINED tokens typed CONTROL: matched only with parse_special, and printed only with special",
    rule=f"USER_DEFINED texts are cut out of raw text always ({PARTITION}) and their pieces are their "
         f"texts, special or not (src/llama-vocab.cpp, llama_vocab::impl::token_to_piece)",
    checks=("encode", "decode", "piece"), shipped_by="candle on command-r and deepseek-coder",
    changes=lambda v: {"attrs": tuple(a & ~USER_DEFINED | CONTROL if a & USER_DEFINED else a for a in v.attrs)},
    needs=lambda tok: _has_attr(tok, USER_DEFINED), same_session=True,
    headline="user-defined tokens treated as control tokens (matched only with parse_special, printed only with special)")
SPACE_PREFIX_FLIPPED = VocabVariant(
    name="add_space_prefix_flipped", models="add_space_prefix read the other way round (encode and decode)",
    rule=f"SPM/UGM prepend one space to the first fragment and after each special iff add_space_prefix "
         f"({TOKENIZE}); detokenize strips it back",
    checks=("encode", "decode"), shipped_by="known-port-bugs 11 (add_space_prefix); transformers on llama-spm",
    changes=lambda v: {"add_space_prefix": not v.add_space_prefix},
    needs=lambda tok: tok.vocab.vocab_type in ("spm", "ugm"),
    headline="add_space_prefix read the other way round")


@dataclass(frozen=True, kw_only=True)
class PartitionVariant(VocabVariant):
    """The exact tokenizer with its special-token list changed: ``specials(list) -> list``."""

    specials: Callable

    def build(self, tok):
        t = Tokenizer(tok.vocab)
        t._session = tok.session()  # the algorithm is unchanged: share it
        t._specials = self.specials(t._specials)
        return t


USER_DEFINED_NOT_MATCHED = PartitionVariant(
    name="user_defined_not_matched", models="USER_DEFINED tokens' texts never cut out of the text",
    rule=f"USER_DEFINED texts are cut out of raw text always, parse_special or not ({PARTITION})",
    checks=("encode",), shipped_by="known-port-bugs 15 (USER_DEFINED in raw text: gemma2 '[toxicity=0]')",
    changes=dict, specials=lambda s: [x for x in s if not x[2] & USER_DEFINED],
    needs=lambda tok: _has_attr(tok, USER_DEFINED), headline="user-defined token texts never matched")
UNKNOWN_NOT_MATCHED = PartitionVariant(
    name="unknown_type_not_matched", models="UNKNOWN-typed tokens' texts never cut out of the text (only CONTROL "
    "and USER_DEFINED are specials)",
    rule=f"with parse_special, CONTROL and UNKNOWN texts become their ids, '<unk>' too ({PARTITION})",
    checks=("encode",), shipped_by="ollama on llama-spm ('<unk>')",
    changes=dict, specials=lambda s: [x for x in s if not x[2] & UNKNOWN],
    needs=lambda tok: _has_attr(tok, UNKNOWN), headline="UNKNOWN-typed token texts never matched")


def _unknown_normal(v) -> dict:
    """UNKNOWN-typed tokens other than the unk id made NORMAL (out of the special-token list)."""
    attrs = tuple(NORMAL if a & UNKNOWN and i != v.unk else a for i, a in enumerate(v.attrs))
    return {"attrs": attrs, "special_cache": tuple(i for i in v.special_cache if attrs[i] != NORMAL)}


UNKNOWN_AS_NORMAL = VocabVariant(
    name="unknown_type_as_normal", models="UNKNOWN-typed tokens besides the unk token read as normal tokens",
    rule=f"an UNKNOWN-typed token is special: parse_special cuts its text out ({PARTITION}) and its piece "
         f"is empty without special (src/llama-vocab.cpp, llama_vocab::impl::token_to_piece)",
    checks=("encode", "decode", "piece"), shipped_by="transformers' GGUF conversion on phi-3 ([PAD32000]...)",
    changes=_unknown_normal, needs=lambda tok: any(a & UNKNOWN and i != tok.vocab.unk
                                                   for i, a in enumerate(tok.vocab.attrs)),
    headline="UNKNOWN-typed tokens read as normal tokens")
USER_DEFINED_AS_CONTROL = PartitionVariant(
    name="user_defined_as_control", models="USER_DEFINED tokens matched only with parse_special, like CONTROL",
    rule=f"USER_DEFINED texts are cut out of raw text even without parse_special ({PARTITION})",
    checks=("encode",), shipped_by="known-port-bugs 15 (USER_DEFINED in raw text)",
    changes=dict, specials=lambda s: [(i, t, a | CONTROL if a & USER_DEFINED else a) for i, t, a in s],
    needs=lambda tok: _has_attr(tok, USER_DEFINED),
    headline="user-defined token texts matched only with parse_special")
