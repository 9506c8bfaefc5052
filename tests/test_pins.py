"""The behaviour table (harness/tokenizer/pins.py): each llama.cpp change between pins, on the selected pin.

Each test checks the selected pin's behaviour (``make test-pins`` runs them on every
pin) against libllama of that pin, and one test runs the harness under every pin
in a subprocess to prove that the table forks where llama.cpp's source did.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from harness.tokenizer import pins
from harness.errors import VocabError
from harness.tokenizer.gguf import GGUFValueType as T, Keys
from harness.tokenizer.vocab import NORMAL
from tests.support.vocabs import load, refused_by_both, spm

K = Keys.Tokenizer
ROOT = Path(__file__).resolve().parent.parent


def test_int32_scores(tmp_path):
    meta = spm(**{K.SCORES: (T.ARRAY, [0, -1, -2, -3, -4, -5, -6], T.INT32)})
    if pins.has("int32_scores"):
        v = load(tmp_path, meta)  # and libllama of this pin agrees
        assert [float(s) for s in v.scores] == [0.0, -1.0, -2.0, -3.0, -4.0, -5.0, -6.0]
    else:
        refused_by_both(tmp_path, meta, match="scores")


def test_plamo_eos_keeps_s_normal(tmp_path):
    toks = [b"<unk>", b"<s>", b"</s>", b"<|plamo:eos|>", b"a"]
    v = load(tmp_path, spm(**{K.TOKENS: (T.ARRAY, toks, T.STRING), K.SCORES: None, K.TOKEN_TYPE: None,
                              K.EOS_ID: (T.UINT32, 3)}))
    if pins.has("plamo_eos_keeps_s_normal"):
        assert 2 not in v.eog and v.attrs[2] == NORMAL
    else:
        assert 2 in v.eog


def test_test_model_loads_from_its_pin(tmp_path):
    """tokenizer.ggml.model 'test' is LLAMA_VOCAB_TYPE_TEST from 0c1e570 on (5-byte hash chunks,
    hex pieces: harness/tokenizer/algorithms/hashtest.py); before, an unknown tokenizer."""
    from harness.tokenizer import Tokenizer
    from harness.tokenizer.gguf.writer import write_gguf

    p = tmp_path / "t.gguf"
    write_gguf(p, spm(**{K.MODEL: (T.STRING, "test")}))
    if not pins.has("vocab_type_test"):
        with pytest.raises(VocabError, match="unknown tokenizer model"):
            Tokenizer.from_gguf(p)
        return
    tok = Tokenizer.from_gguf(p)
    # "abcde": ((((97*31+98)*31+99)*31+100)*31+101) % 7 == 0; "f": 102 % 7 == 4; add_special adds nothing
    assert tok.vocab.vocab_type == "test" and tok.encode("abcdef", add_special=True) == [0, 4]
    assert tok.token_to_piece(6, special=False) == b"6" and tok.token_to_piece(1) == b""  # <s> is CONTROL


_PROBE = """
import json
from harness.tokenizer import pins
from harness.tokenizer.pretypes import PRE_FLAGS, PRE_NAMES, ARCHITECTURES
from harness.tokenizer.pretokenize import split_words
print(json.dumps({"pin": pins.current(), "glm4": PRE_FLAGS["glm4"], "hy_v4": PRE_NAMES.get("hy_v4"),
                  "glm5": PRE_NAMES.get("glm5"), "maple": "maple" in ARCHITECTURES,
                  "tilde": split_words("DEEPSEEK3_LLM", "a ~~b")}))
"""


def _probe(pin: str) -> dict:
    env = {**__import__("os").environ, "PIN": pin}
    return json.loads(subprocess.run([sys.executable, "-c", _PROBE], env=env, cwd=ROOT, check=True,
                                     capture_output=True, text=True).stdout)


def test_the_table_forks_per_pin():
    """Unit level, whatever the selected pin; that each side is right is checked against libllama
    (tests/test_pretypes_derived.py has '~~' texts on every pre type, make conformance PIN=...)."""
    old, new = _probe("4df29be"), _probe("0c1e570")
    assert (old["pin"], new["pin"]) == ("4df29be", "0c1e570")
    assert (old["glm4"], new["glm4"]) == ({"bos_null": True}, {"bos_null": True, "ignore_merges": True})
    assert (old["hy_v4"], old["glm5"], old["maple"]) == (None, None, False)
    assert (new["hy_v4"], new["glm5"], new["maple"]) == ("HY_V4", "CHATGLM4", True)
    # '~' joins \\p{S} on the collapsed regex path, which DEEPSEEK3_LLM's third regex takes
    assert old["tilde"] != new["tilde"]


def test_an_unknown_pin_is_a_clear_error():
    from harness.errors import HarnessError

    with pytest.raises(HarnessError, match="names no pin.*harness/tokenizer/pins.py"):
        pins.resolve("ffffff0")


def test_glm4_ignore_merges(tmp_path):
    """'ab' is a token no merge reaches: only ignore_merges (glm4 from 0c1e570 on) emits it whole.
    The gpt-2-derived vocabs of make pin-diff cannot show this: every gpt-2 token is reachable."""
    from harness.tokenizer import Tokenizer
    from reference.inproc import InProcessReference
    from tests.support.vocabs import bpe
    from harness.tokenizer.gguf.writer import write_gguf
    from harness.conformance.needs import require

    p = tmp_path / "glm4.gguf"
    write_gguf(p, bpe([b"a", b"b", b"ab", b"c", b"ac"], merges=[b"a c"], **{K.PRE: (T.STRING, "glm4")}))
    ours = Tokenizer.from_gguf(p).encode("ab")
    assert ours == ([2] if pins.has("glm4_ignore_merges") else [0, 1])
    assert ours == require(lambda: InProcessReference(p)).encode("ab", False, False)
