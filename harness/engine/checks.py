"""The bodies of the checks: golden, known, encode, decode, piece and the CLI cross-check.

One function per check, called by the suite's pytest tests
(:mod:`harness.conformance.suite`) and by the pytest plugin's ``@conformance`` tests
(:mod:`harness.pytest_plugin`), so a Python port gets exactly what an external one
gets, fast phase included. Each takes the vocab under test and ``make_hunt``, the
caller's way to make a :class:`~harness.engine.hunt.Hunt` (``make_hunt(check,
flags_label, run, **options)``: the caller decides where its tally goes), runs the
whole budget inside ``Hunt.guard`` (an exception stops the check, keeps what ran before it
and makes the cell ``error``), and ends with ``Hunt.finish`` (which raises when something
diverged, failed or crashed).

``fast`` is ``(count, seconds, rng)``: the fast random phase's size (a count, or
seconds of a wall-time budget) and its seeded ``random.Random``. ``replay`` holds
inputs from the replay store (earlier runs' shrunk failures), ``first`` other inputs
checked first (known texts); both run before the fast phase.

>>> sorted(SOURCES)
['prefix', 'random', 'whole']
"""

from __future__ import annotations

from typing import Callable

from harness.engine import scaling
from harness.engine.fastphase import run_phase
from harness.engine.shrink import shrink_ids, shrink_text
from harness.errors import PortUnsupported
from harness.flags import flags_label
from harness.inputs.pool import fragment_pool, random_recipes, run_seed

#: Where a decode case's ids come from (see ``VocabUnderTest.decode_input``).
SOURCES = ("whole", "prefix", "random")
#: Ids asked of the port per ``piece`` batch.
PIECE_CHUNK = 512


def golden(vut, make_hunt: Callable) -> None:
    """Every .inp/.out case of the pin (made with add_special=False, parse_special=False)."""
    from reference.vocabs import golden_cases
    expected = dict(golden_cases(vut.name))
    h = make_hunt("golden", "plain", lambda text: vut.check_golden(text, expected.get(text)),
                  signature=vut.signature, shrink=shrink_text, diagnosis=vut.diagnoser)
    with h.guard():
        h.begin(vut.unsupported_reason("encode", add_special=False, parse_special=False), expected)
    h.finish()


def known(vut, flags, make_hunt: Callable, texts) -> None:
    """``texts`` (the known port bugs), every one, under one flag combination; minimal already."""
    add_special, parse_special = flags
    h = make_hunt("known", flags_label(*flags),
                  lambda text: vut.check_encode(text, add_special, parse_special, check="known"),
                  signature=vut.signature, diagnosis=vut.diagnoser)
    with h.guard():
        h.begin(vut.unsupported_reason("encode", add_special=add_special, parse_special=parse_special), texts)
    h.finish()


def _explore(h, given_args: dict, body: Callable, settings_overrides: dict | None) -> None:
    """Run ``body`` under Hypothesis (the loaded profile, with ``settings_overrides``), guarded
    by the hunt ``h`` (:meth:`~harness.engine.hunt.Hunt.explore_body`: nothing it raises
    reaches Hypothesis, so no crashed example is rerun)."""
    from hypothesis import given, settings

    from harness.inputs.strategies import seeded_generation
    test = given(**given_args)(h.explore_body(body))
    if settings_overrides:
        test = settings(**settings_overrides)(test)
    with seeded_generation():
        test()


def encode(vut, flags, make_hunt: Callable, *, fast, replay=(), first=(),
           settings_overrides: dict | None = None) -> None:
    """Generated encode: the fast random phase, then Hypothesis, then the runs timed for length
    scaling (:mod:`harness.engine.scaling`); port ids vs llama.cpp's."""
    from harness.inputs.strategies import materialise, recipes
    add_special, parse_special = flags
    h = make_hunt("encode", flags_label(*flags),
                  lambda text: vut.check_encode(text, add_special, parse_special),
                  signature=vut.signature, shrink=shrink_text, diagnosis=vut.diagnoser)
    with h.guard():
        reason = vut.unsupported_reason("encode", add_special=add_special, parse_special=parse_special)
        if h.begin(reason, first, replay=[t for t in replay if isinstance(t, str)]):
            count, seconds, rng = fast
            texts = (materialise(r, vut.texts) for r in random_recipes(fragment_pool(run_seed()), rng))
            run_phase(h, texts, lambda batch: vut.port_many("encode", batch, add_special=add_special,
                                                            parse_special=parse_special),
                      lambda text, ids: list(ids) == vut.reference.encode(text, add_special=add_special,
                                                                          parse_special=parse_special),
                      count=count, seconds=seconds)
            _explore(h, {"recipe": recipes()}, lambda recipe: h.case(materialise(recipe, vut.texts)),
                     settings_overrides)
            if scaling.enabled():  # last: a port that hangs on long runs costs nothing else
                scaling.probe(vut, h, flags)
    h.finish()


def decode(vut, flags, make_hunt: Callable, *, fast, replay=(), settings_overrides: dict | None = None) -> None:
    """Generated decode: llama.cpp's ids of generated texts (whole, prefixes, random ids),
    the port's bytes vs llama_detokenize's, byte for byte."""
    from hypothesis import strategies as st

    from harness.inputs.strategies import materialise, recipes
    remove_special, unparse_special = flags
    h = make_hunt("decode", flags_label(*flags),
                  lambda ids: vut.check_decode(ids, remove_special, unparse_special),
                  signature=vut.signature, shrink=shrink_ids, diagnosis=vut.diagnoser)
    with h.guard():
        reason = vut.unsupported_reason("decode", remove_special=remove_special, unparse_special=unparse_special)
        if h.begin(reason, replay=[ids for ids in replay if isinstance(ids, tuple)]):
            count, seconds, rng = fast
            inputs = (vut.decode_input(materialise(r, vut.texts), rng.choice(SOURCES), rng.randrange(2**16),
                                       [rng.randrange(2**31) for _ in range(rng.randint(1, 12))])
                      for r in random_recipes(fragment_pool(run_seed()), rng))
            run_phase(h, inputs, lambda batch: vut.port_many("decode", batch, remove_special=remove_special,
                                                             unparse_special=unparse_special),
                      lambda ids, got: bytes(got) == vut.reference.decode(ids, remove_special=remove_special,
                                                                          unparse_special=unparse_special),
                      count=count, seconds=seconds)

            def explore(recipe, source, cut, rand):
                h.case(vut.decode_input(materialise(recipe, vut.texts), source, cut, rand))

            _explore(h, {"recipe": recipes(max_repeat=20), "source": st.sampled_from(SOURCES),
                         "cut": st.integers(0, 2**16),
                         "rand": st.lists(st.integers(0, 2**31 - 1), min_size=1, max_size=12)},
                     explore, settings_overrides)
    h.finish()


def pieces(vut, special: bool, make_hunt: Callable) -> None:
    """Every token's piece, the port's vs llama_token_to_piece, byte for byte; an
    external port that has the batch op gets :data:`PIECE_CHUNK` ids per request."""
    got: dict = {}
    h = make_hunt("piece", "parse" if special else "plain",
                  lambda id: vut.check_piece(id, special, got.pop(id, None)), signature=vut.signature,
                  diagnosis=vut.diagnoser)
    with h.guard():
        if h.begin(vut.unsupported_reason("piece", special=special)):
            shared = getattr(vut.session, "shared_ids", None)  # the pytest plugin's session has none
            n = shared(vut) if shared else vut.reference.n_vocab
            for start in range(0, n, PIECE_CHUNK):
                ids = range(start, min(n, start + PIECE_CHUNK))
                got = vut.port_pieces_of(list(ids), special) if not h.stopped else {}
                for id in ids:
                    h.case(id)
    h.finish()


def overloads_agree(reference, ids: list[int], special: bool) -> None:
    """llama_vocab's C++ overloads (the sampler's ``detokenize(tokens, special)``, the
    grammar's cached ``token_to_piece(token)``) give what the C API gives for ``ids``;
    a difference is llama.cpp disagreeing with itself, raised (an error cell), not a finding."""
    from harness.errors import ReferenceFailure
    c_api = reference.decode(ids, remove_special=False, unparse_special=special)
    if reference.decode_cxx(ids, special=special) != c_api:
        raise ReferenceFailure(f"llama_vocab::detokenize(ids, special={special}) differs from llama_detokenize "
                               f"on ids {ids[:16]}{'…' if len(ids) > 16 else ''}: llama.cpp disagrees with itself")
    for i in set(ids):
        if reference.cached_piece(i) != reference.token_to_piece(i, special=True):
            raise ReferenceFailure(f"llama_vocab::token_to_piece({i}) (cached at load) differs from "
                                   f"llama_token_to_piece({i}, special=true): llama.cpp disagrees with itself")


def crosscheck(vut, cli, flags, make_hunt: Callable, *, sample: int) -> None:
    """``sample`` generated texts through the llama-tokenize CLI against llama.cpp in
    process, so the in-process oracle cannot drift from what users run; the same ids
    through llama_vocab's C++ overloads too (:func:`overloads_agree`)."""

    from harness.inputs.strategies import materialise, recipes
    add_special, parse_special = flags

    def run(text):
        overloads_agree(vut.reference, vut.reference.encode(text, add_special=add_special,
                                                             parse_special=parse_special), parse_special)
        if add_special and not vut.reference.add_bos:
            raise PortUnsupported("llama-tokenize adds specials only for vocabs with add_bos")
        expected = vut.reference.encode(text, add_special=add_special, parse_special=parse_special)
        got = cli.encode(text, add_special, parse_special)
        return vut.finding("crosscheck", text, add_special, parse_special, expected, got,
                           port_label="llama-tokenize")

    h = make_hunt("crosscheck", flags_label(*flags), run)
    with h.guard():
        _explore(h, {"recipe": recipes(max_fragments=4, max_repeat=2)},
                 lambda recipe: h.case(materialise(recipe, vut.texts) or "a"),  # llama-tokenize refuses ""
                 {"max_examples": sample})
    h.finish()
