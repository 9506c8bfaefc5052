"""Both reference adapters reproduce llama.cpp's own goldens and agree with each other.

The .out files were made with add_special=False, parse_special=False
(tests/test-tokenizer-0.cpp). The CLI can only express add_special as
``add_bos(vocab) and not --no-bos`` (tools/tokenize/tokenize.cpp), so the
agreement test asks the in-process side for exactly that.

Each llama-tokenize call loads the vocab again (up to a second), so ``make test`` runs
one call per vocab and flag combination (every .inp text joined into one text), and
``make test-slow`` runs every .inp text on its own.
"""

from __future__ import annotations

import itertools
from concurrent.futures import ThreadPoolExecutor

import pytest

from reference import vocabs

FLAGS = list(itertools.product([False, True], repeat=2))
GOLDEN = [n for n in vocabs.names() if vocabs.has_golden(n)]


def test_pin_has_694_golden_cases_over_15_vocabs():
    assert len(GOLDEN) == 15
    assert sum(len(vocabs.golden_cases(n)) for n in GOLDEN) == 694


@pytest.mark.parametrize("name", GOLDEN)
def test_inproc_reproduces_golden(name, inproc):
    ref = inproc(name)
    bad = [(t, ids, got) for t, ids in vocabs.golden_cases(name)
           if (got := ref.encode(t, add_special=False, parse_special=False)) != ids]
    assert not bad, f"{len(bad)} golden mismatches, first: {bad[0]!r}"


def _cli_results(ref, jobs):
    """Each (text, add_special, parse_special) through llama-tokenize once, 4 processes at a time."""
    with ThreadPoolExecutor(4) as pool:  # each call is a process that spends its time loading the vocab
        return dict(zip(jobs, pool.map(lambda j: ref.encode(*j), jobs)))


def _cli_combos(fast, parse_special) -> list[tuple[bool, bool]]:
    # add_special=True is only expressible through the CLI when the model's add_bos is true.
    return sorted({(a and fast.add_bos, parse_special) for a in (False, True)})


@pytest.mark.parametrize("parse_special", [False, True], ids=["plain", "parse"])
@pytest.mark.parametrize("name", vocabs.names())
def test_cli_agrees_with_inproc_on_all_inp_texts_at_once(name, parse_special, inproc, cli):
    """One llama-tokenize process per vocab and flag combination (make test); every
    .inp text of the pin, joined, so one vocab load covers them all."""
    fast, slow = inproc(name), cli(name)
    text = "\n".join(vocabs.all_inp_texts())
    for add, parse in _cli_combos(fast, parse_special):
        got, want = slow.encode(text, add, parse), fast.encode(text, add_special=add, parse_special=parse)
        assert got == want, (f"{name} add_special={add} parse_special={parse}: llama-tokenize and "
                             f"in-process differ first at index "
                             f"{next((i for i, (g, w) in enumerate(zip(got, want)) if g != w), min(len(got), len(want)))}")


@pytest.mark.slow
@pytest.mark.parametrize("parse_special", [False, True], ids=["plain", "parse"])
@pytest.mark.parametrize("name", vocabs.names())
def test_cli_reproduces_golden_and_agrees_with_inproc(name, parse_special, inproc, cli):
    """One pass of CLI calls per (vocab, parse_special) serves both checks: a call costs a vocab load."""
    fast, slow = inproc(name), cli(name)
    combos = _cli_combos(fast, parse_special)
    jobs = [(t, a, p) for t in vocabs.all_inp_texts() for a, p in combos]
    got = _cli_results(slow, jobs)
    if vocabs.has_golden(name) and not parse_special:
        bad = [(t, ids, got[(t, False, False)]) for t, ids in vocabs.golden_cases(name)
               if got[(t, False, False)] != ids]
        assert not bad, f"{len(bad)} CLI golden mismatches, first (text, expected, got): {bad[0]!r}"
    bad = [(j, g, fast.encode(*j)) for j, g in got.items() if g != fast.encode(*j)]
    assert not bad, f"{len(bad)} disagreements, first ((text, add_special, parse_special), cli, inproc): {bad[0]!r}"


@pytest.mark.parametrize("name, ids", [
    ("qwen2", [9707, 1879, 11, 432, 594, 220, 17, 15, 17, 21, 0]),
    ("llama-bpe", [128000, 9906, 1917, 11, 433, 596, 220, 2366, 21, 0]),
])
def test_seed_facts(name, ids, inproc, cli):
    text = "Hello world, it's 2026!"
    assert inproc(name).encode(text, add_special=True, parse_special=True) == ids
    assert cli(name).encode(text, add_special=True, parse_special=True) == ids


def test_inproc_decode_and_piece_roundtrip(inproc):
    ref = inproc("qwen2")
    ids = ref.encode("Hello world", add_special=False, parse_special=False)
    assert ref.decode(ids) == b"Hello world"
    assert b"".join(ref.token_to_piece(i) for i in ids) == b"Hello world"
    assert ref.n_vocab == 151936


def test_inproc_handles_output_bigger_than_first_buffer(inproc):
    # The adapter's first buffer holds len(bytes)+16 ids. nomic-bert-moe's charsmap expands
    # U+FDFA (3 bytes) to a four-word phrase, so llama_tokenize must answer with a negative
    # size and the adapter must retry with the size it asked for.
    ref = inproc("nomic-bert-moe")
    text = "\ufdfa" * 100
    ids = ref.encode(text, add_special=True, parse_special=False)
    assert len(ids) > len(text.encode()) + 16


def test_inproc_refuses_out_of_range_id(inproc):
    from harness.errors import ReferenceFailure

    ref = inproc("qwen2")
    with pytest.raises(ReferenceFailure, match="out of range"):
        ref.token_to_piece(ref.n_vocab)
    with pytest.raises(ReferenceFailure):
        ref.decode([ref.n_vocab + 5])


@pytest.mark.parametrize("name", ["llama-spm", "qwen2", "bert-bge", "nomic-bert-moe"])
def test_cxx_overloads_agree_with_the_c_api(name, inproc):
    """The crosscheck's second half: llama_vocab::detokenize(tokens, special) and the cached
    token_to_piece(token) give the C API's bytes, here on every golden text's ids."""
    from harness.engine.checks import overloads_agree
    ref = inproc(name)
    for text in vocabs.all_inp_texts()[:40]:
        for special in (False, True):
            overloads_agree(ref, ref.encode(text, add_special=True, parse_special=special), special)


class _Disagreeing:
    """A reference whose C++ overload drops the last byte: the check must refuse it."""

    def __init__(self, ref, cxx_bug=False, piece_bug=False):
        self.ref, self.cxx_bug, self.piece_bug = ref, cxx_bug, piece_bug

    def decode(self, ids, **kw):
        return self.ref.decode(ids, **kw)

    def decode_cxx(self, ids, special=False):
        out = self.ref.decode_cxx(ids, special=special)
        return out[:-1] if self.cxx_bug else out

    def token_to_piece(self, i, special=False):
        return self.ref.token_to_piece(i, special=special)

    def cached_piece(self, i):
        return b"?" if self.piece_bug else self.ref.cached_piece(i)


@pytest.mark.parametrize("bug", ["cxx_bug", "piece_bug"])
def test_overloads_check_raises_when_llama_cpp_disagrees_with_itself(bug, inproc):
    from harness.engine.checks import overloads_agree
    from harness.errors import ReferenceFailure
    ref = _Disagreeing(inproc("qwen2"), **{bug: True})
    with pytest.raises(ReferenceFailure, match="disagrees with itself"):
        overloads_agree(ref, ref.ref.encode("Hello world"), False)
