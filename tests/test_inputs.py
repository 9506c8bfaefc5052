"""What the checks feed: the named strategy families, and the fast phase's pool and budget."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, find, given, settings
from hypothesis import strategies as st

from harness.inputs import strategies
from harness.reports.diff import Divergence
from harness.reports.finding import Finding


# --- strategies --------------------------------------------------------------------------------
def test_strategies_all_is_checked_and_families_are_named():
    assert set(strategies.FAMILIES) <= set(strategies.__all__)
    for name in strategies.__all__:
        assert hasattr(strategies, name)


@settings(max_examples=60, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_every_family_makes_nonempty_text(data):
    family = data.draw(st.sampled_from(sorted(strategies.FAMILIES)))
    text = data.draw(strategies.FAMILIES[family])
    assert isinstance(text, str) and text and "\ud800" not in text


def test_families_shrink_to_the_interesting_character():
    full = settings(database=None, max_examples=1000, deadline=None)  # whatever the session's profile
    assert find(strategies.whitespace, lambda s: "\u3000" in s, settings=full) == "\u3000"
    # Contractions come one to four in a row; the shrinker may keep a minimal "'s" before it.
    found = find(strategies.contractions, lambda s: "'Re" in s, settings=full).rstrip("x")
    # ("'Rex" is the near miss "'R" followed by "ex": as small, to the shrinker)
    assert found.endswith("'Re") and set(found[:-3].split("'")) <= {"", "s"}, found
    # the near misses are drawn: an apostrophe and "r" with no "e" after it ("'r", "'Rx")
    import re
    near = find(strategies.contractions, lambda s: re.search(r"'[rR](?![eE])", s) is not None, settings=full)
    assert re.fullmatch(r"(.*')?[rR]", near), near
    assert len(find(strategies.latin, lambda s: any(0x300 <= ord(c) <= 0x36F for c in s), settings=full)) == 2


def test_materialise_glues_vocab_texts_and_specials():
    vt = strategies.VocabTexts(("he", "llo"), ("<s>",))
    r = strategies.Recipe(("a", strategies.VocabPiece(3), strategies.SpecialText(5, " ", "\n")), 2)
    assert strategies.materialise(r, vt) == "allo <s>\nallo <s>\n"
    assert len(strategies.materialise(strategies.Recipe(("ab",), 10**6), vt)) == strategies.MAX_CHARS
    assert len(strategies.materialise(strategies.Recipe(("x" * 50_000,), 3), vt)) == 50_000



# --- the fast random phase ----------------------------------------------------------------------
def test_fast_phase_texts_repeat_exactly_for_a_seed_and_differ_for_another():
    import random

    from harness.inputs.pool import fragment_pool, random_recipes
    vt = strategies.VocabTexts(("he", "llo", "wor"), ("<s>", "</s>"))

    def texts(seed, n=300):
        recipes = random_recipes(fragment_pool.__wrapped__(seed), random.Random(f"{seed}:t"))
        return [strategies.materialise(next(recipes), vt) for _ in range(n)]

    first = texts(0)
    assert first == texts(0)
    assert first != texts(1)
    assert len(set(first)) > 250  # cheap, but not a handful of texts over and over


def test_fast_phase_counts_passes_and_hands_divergences_to_the_hunt():
    from harness.engine.fastphase import run_phase
    from harness.engine.hunt import Hunt
    from harness.errors import PortUnsupported
    seen = []

    def run(text):
        seen.append(text)
        return Finding("encode", "v", None, False, False, text,
                       Divergence(0, 0, True, (1,), (2,))) if "x" in text else None

    h = Hunt("encode", "plain", run, vocab="v", signature=lambda f: "x")
    inputs = iter(["a", "xa", "b", "u", "xb"] * 100)
    answers = lambda batch: [PortUnsupported("no") if t == "u" else t for t in batch]
    used = run_phase(h, inputs, answers, lambda t, got: "x" not in t, count=500, seconds=None)
    assert used == 500 and h.tally.cases == 400 and h.tally.unsupported == 100  # 200 agree, 200 diverge
    assert h.tally.divergent == 200 and seen == ["xa", "xb"] * 100  # only divergent texts go through run
    tally = h._settle()
    assert [f.text for f in tally.findings] == ["xa"] and tally.findings[0].cases == 200


def test_budget_is_a_time_and_bad_ones_say_the_fix(monkeypatch):
    from harness.inputs.pool import parse_budget, time_share
    from harness.errors import HarnessError
    assert parse_budget("5m") == 300
    with pytest.raises(HarnessError, match="such as 300, 90s, 5m"):
        parse_budget("five minutes")
    monkeypatch.setenv("BUDGET", "2m")
    monkeypatch.setenv("PYTEST_XDIST_WORKER_COUNT", "2")
    assert time_share(n_tests=10) == pytest.approx(120 * 2 * 0.6 / 10)
