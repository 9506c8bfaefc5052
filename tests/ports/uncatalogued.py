"""A JSON-lines port with bugs that no catalogue variant models: the test that cannot be fitted.

Every bug of tests/ports/faulty_port.py is a catalogue entry, so a test on it proves the
catalogue names what it was built to name. The bugs here are the kind real ports ship that
the catalogue does not know; the engine must report each as exactly one cause, not many,
and never name it by a variant that happens to fit a short case:

    python tests/ports/uncatalogued.py --vocab V --bugs ascii-punct|cyrillic-unk|reserved-shift|ids-16bit

- ``ascii-punct`` (a WPM vocab): the BERT pre-tokenizer splits off only ASCII punctuation;
  a non-ASCII punctuation mark (U+FF08, U+2019, U+00BF ...) stays inside its word (the
  catalogue has modelled it since, as ``wpm_char_not_split``);
- ``cyrillic-unk``: every code point of the Cyrillic block (U+0400-U+04FF) is the unknown
  token, the text around it tokenized apart (a normaliser that maps a script to ``<unk>``);
- ``reserved-shift``: the control tokens whose text holds ``reserved`` are numbered one off
  (each id's text is the next reserved token's), in encode, decode and pieces alike;
- ``ids-16bit``: the port keeps token ids in 16 bits (a ``Uint16Array``, a ``uint16_t``: it
  assumed vocabs under 65,536 tokens), so an id past 65,535 wraps: encode answers it wrapped,
  decode and pieces read the wrapped id, on every token kind alike;
- ``file-types``: every token typed as the GGUF's ``token_type`` says, without the types
  llama.cpp's load gives by text (an end-of-generation text such as ``</s>`` made CONTROL,
  FIM texts found by name): on qwen2 ``</s>`` (128247) stays NORMAL, so it is not cut out with
  parse_special and its piece is its text without special (several real ports ship this; the
  catalogue has modelled it since, as ``token_types_not_overridden``);
- ``latin1``: the input text read as Latin-1, each of its UTF-8 bytes one code point (a
  stream opened with the platform's default charset): every non-ASCII character parts from
  llama.cpp, whatever its class, on every vocab;
- ``ascii-lower`` (a WPM vocab): lowercasing is C's ``tolower``, so a letter past ASCII keeps
  its case ('Ɔ', 'Б', and 'Ä' whose NFD letter is 'A'); an uppercase accented letter then
  misses the uncased vocab as it would with its accents kept, and no accent entry may name it;
- ``added-twice``: ``info`` counts the added (CONTROL and USER_DEFINED) tokens a second time
  on top of the GGUF's token list, as a port that adds them to a list that already holds them
  (transformers answered 32,259 for deepseek-coder's 32,256); every id it serves is right.
"""

from __future__ import annotations

import argparse
import json
import re
import sys

import dataclasses

from harness.tokenizer import Tokenizer
from harness.tokenizer import unicode as U
from harness.tokenizer.algorithms import wpm
from harness.tokenizer.gguf import GGUFReader, Keys
from harness.tokenizer.vocab import BYTE, CONTROL, NORMAL, UNDEFINED, UNKNOWN, UNUSED, USER_DEFINED

BUGS = {"ascii-punct", "cyrillic-unk", "reserved-shift", "file-types", "added-twice", "ids-16bit", "latin1",
        "ascii-lower"}
_CYRILLIC = re.compile("([\u0400-\u04ff])")


def _ascii_punct_classify(classify):
    """``wpm.classify`` with non-ASCII punctuation read as a letter (APPEND)."""
    def patched(cpt, lowercase, strip_accents):
        kind, s = classify(cpt, lowercase, strip_accents)
        if kind == wpm.SINGLE and cpt >= 0x80 and U.cpt_flags(cpt) & U.PUNCTUATION:
            return wpm.APPEND, s
        return kind, s
    return patched


def _ascii_lower_classify(classify):
    """``wpm.classify`` lowercasing as C's ``tolower`` does: a code point past ASCII keeps its
    case (after the NFD its accents are stripped with, as before)."""
    def patched(cpt, lowercase, strip_accents):
        kind, s = classify(cpt, lowercase, strip_accents)
        if lowercase and s and cpt >= 0x80 and kind in (wpm.APPEND, wpm.SINGLE):
            return kind, U.cpt_to_utf8(U.nfd_first(cpt) if strip_accents else cpt)
        return kind, s
    return patched


#: GGUF token_type -> llama.cpp's attribute (src/llama-vocab.cpp, token_to_attr).
_FILE_TYPE = {0: UNDEFINED, 1: NORMAL, 2: UNKNOWN, 3: CONTROL, 4: USER_DEFINED, 5: UNUSED, 6: BYTE}
_TYPE_BITS = UNDEFINED | NORMAL | UNKNOWN | CONTROL | USER_DEFINED | UNUSED | BYTE


def _file_typed(tok: Tokenizer, path: str) -> Tokenizer:
    """``tok`` with each token's type bits as the file's token_type has them."""
    with GGUFReader(path) as reader:
        codes = reader.get(Keys.Tokenizer.TOKEN_TYPE)
    if codes is None:
        return tok
    v = tok.vocab
    attrs = tuple((a & ~_TYPE_BITS) | _FILE_TYPE[int(c)] for a, c in zip(v.attrs, codes))
    cache = tuple(i for i in v.special_cache if attrs[i] & (CONTROL | USER_DEFINED | UNKNOWN))
    return Tokenizer(dataclasses.replace(v, attrs=attrs, special_cache=cache))


class Port:
    def __init__(self, vocab: str, bugs: set[str]):
        if "ascii-punct" in bugs:
            wpm.classify = _ascii_punct_classify(wpm.classify)
        if "ascii-lower" in bugs:
            wpm.classify = _ascii_lower_classify(wpm.classify)
        self.tok = Tokenizer.from_gguf(vocab)
        if "file-types" in bugs:
            self.tok = _file_typed(self.tok, vocab)
        self.bugs = bugs
        v = self.tok.vocab
        reserved = [i for i, t in enumerate(v.tokens) if b"reserved" in t and v.attrs[i] & CONTROL]
        # id -> the id whose text the port gives it (each reserved id one further along)
        self.shift = dict(zip(reserved, reserved[1:] + reserved[:1])) if "reserved-shift" in bugs else {}
        self.unshift = {b: a for a, b in self.shift.items()}
        self.width = 0xFFFF if "ids-16bit" in bugs else -1  # -1: every bit of an id kept

    def encode(self, text: str, add: bool, parse: bool) -> list[int]:
        if "latin1" in self.bugs:  # each UTF-8 byte read as one code point
            text = text.encode("utf-8", "surrogatepass").decode("latin-1")
        if "cyrillic-unk" in self.bugs:
            body = []
            for part in _CYRILLIC.split(text):
                if _CYRILLIC.fullmatch(part):
                    body.append(self.tok.vocab.unk if self.tok.vocab.unk is not None else 0)
                elif part:
                    body += self.tok.encode(part, add_special=False, parse_special=parse)
            if not add:
                return body
            v = self.tok.vocab
            return [v.bos] * bool(v.add_bos and v.bos is not None) + body + [v.eos] * bool(v.add_eos and v.eos is not None)
        ids = self.tok.encode(text, add_special=add, parse_special=parse)
        # the port parses a reserved text as the token it numbers that text with
        return [self.unshift.get(i, i) & self.width for i in ids]

    def decode(self, ids, remove: bool, unparse: bool) -> bytes:
        return self.tok.decode([self.shift.get(i, i) & self.width for i in ids], remove_special=remove,
                               unparse_special=unparse)

    def piece(self, id: int, special: bool) -> bytes:
        return self.tok.token_to_piece(self.shift.get(id, id) & self.width, special=special)

    def answer(self, req: dict) -> dict:
        op = req.get("op")
        if op == "info":
            v = self.tok.vocab
            added = sum(1 for a in v.attrs if a & (CONTROL | USER_DEFINED)) if "added-twice" in self.bugs else 0
            return {"n_vocab": self.tok.n_vocab + added, "unsupported": [], "batch": True}
        if op == "batch":
            return {"responses": [self.answer(r) for r in req["requests"]]}
        if op == "encode":
            return {"ids": self.encode(req["text"], req["add_special"], req["parse_special"])}
        if op == "decode":
            return {"bytes_hex": self.decode(req["ids"], req["remove_special"], req["unparse_special"]).hex()}
        if op == "piece":
            return {"bytes_hex": self.piece(req["id"], req["special"]).hex()}
        return {"error": f"unknown op {op!r}"}


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--vocab", required=True)
    p.add_argument("--bugs", required=True)
    a = p.parse_args()
    bugs = set(filter(None, a.bugs.split(",")))
    if bugs - BUGS:
        raise SystemExit(f"uncatalogued port: unknown --bugs {', '.join(sorted(bugs - BUGS))}; "
                         f"known: {', '.join(sorted(BUGS))}")
    port = Port(a.vocab, bugs)
    for line in sys.stdin.buffer:
        print(json.dumps(port.answer(json.loads(line))), flush=True)


if __name__ == "__main__":
    main()
