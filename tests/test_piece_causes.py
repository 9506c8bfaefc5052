"""Piece defects as causes: the edit from llama.cpp's piece to the port's, and the token's
kind, make the signature (harness.engine.vut); a normal token's piece rendered otherwise is
one cause per algorithm, a special token's or an empty piece one for all (harness.reports.causes).
"""

from __future__ import annotations

from harness.reports.causes import group_causes, unexplained_title
from harness.reports.diff import Divergence
from harness.reports.finding import Finding


def test_two_piece_bugs_of_one_token_kind_are_two_signatures(inproc):
    """Seen on ollama: its piece of a byte-valued token drops the NUL, and its WPM pieces drop
    the leading space; both are 'normal' tokens, so a signature of the token kind alone made
    them one unexplained cause. The edit from llama.cpp's piece to the port's splits them."""
    from pathlib import Path

    from harness.engine.vut import VocabUnderTest
    from reference.vocabs import vocab_path

    ref = inproc("llama-bpe")
    vut = VocabUnderTest("llama-bpe", Path(vocab_path("llama-bpe")), "p", ref, None)
    nul = next(i for i in range(300) if ref.token_to_piece(i, special=True) == b"\x00")
    the = ref.encode(" the", add_special=False, parse_special=False)[0]
    drop_nul = vut.check_piece(nul, True, got=b"")
    drop_space = vut.check_piece(the, True, got=b"the")
    signatures = {vut.signature(drop_nul), vut.signature(drop_space)}
    assert signatures == {("piece", "empty", "normal token"), ("piece", "leading space dropped", "any token")}
    assert len({unexplained_title(s) for s in signatures}) == 2


def test_a_piece_defect_is_one_cause_whatever_character_its_tokens_start_with(inproc):
    """One defect (the port's pieces lose their leading space) on tokens whose next
    character is a letter, a digit or punctuation: one signature, so one cause, not one per
    character class; and a decode divergence at such a token is attributed to the piece."""
    from pathlib import Path

    from harness.engine.vut import VocabUnderTest
    from reference.vocabs import vocab_path

    ref = inproc("llama-bpe")
    ids = [ref.encode(t, add_special=False, parse_special=False)[0] for t in (" the", " (", " —", " 2024")]
    ids = [i for i in ids if ref.token_to_piece(i, special=True)[:1] == b" " and len(ref.token_to_piece(i, special=True)) > 1]
    assert len(ids) >= 3  # a letter, punctuation and a dash after the space

    class Port:  # the port's pieces lose their leading space; its decode is its pieces joined
        def token_to_piece(self, id, special=True):
            p = ref.token_to_piece(id, special=special)
            return p[1:] if p.startswith(b" ") else p

        def decode(self, ids, remove_special=False, unparse_special=False):
            return b"".join(self.token_to_piece(i, unparse_special) for i in ids)

    class Session:
        def port(self, vut):
            return Port()

    vut = VocabUnderTest("llama-bpe", Path(vocab_path("llama-bpe")), "py:p", ref, Session())
    pieces = {vut.signature(vut.check_piece(i, True, got=Port().token_to_piece(i))) for i in ids}
    assert pieces == {("piece", "leading space dropped", "any token")}
    dec = vut.check_decode((ids[0], ids[1]), False, True)
    assert vut.signature(dec) == ("piece", "leading space dropped", "any token")


def test_a_normal_token_s_piece_defect_is_one_cause_per_algorithm_a_special_s_one_for_all():
    """shimmytok renders normal tokens' pieces in each algorithm's code: SPM turns 'Ġ' into a
    space, WPM and UGM keep U+2581. All three are "other bytes" on normal tokens, three defects
    (three places to fix), so three causes; an unexplained defect of a control token's text
    (the vocabulary's, shared by every algorithm) stays one cause across vocab types."""
    def piece(vocab, pre_type, kind, ref, port):
        return Finding("piece", vocab, pre_type, False, False, "", Divergence(0, 0, True, ref, port),
                       decoded_ids=(7,), signature=("piece", "other bytes", f"{kind} token"))

    normal = [piece("llama-spm", "n/a (llama)", "normal", b"\xc4\xa0", b" "),
              piece("bert-bge", "n/a (bert)", "normal", b" a", "\u2581a".encode()),
              piece("nomic-bert-moe", "n/a (t5)", "normal", b" a", "\u2581a".encode()),
              piece("phi-3", "n/a (llama)", "normal", b"\xc4\xa0b", b" b")]
    control = [piece(v, p, "control", b"", b"</s>") for v, p in (("llama-spm", "n/a (llama)"), ("qwen2", "QWEN2"))]
    causes = group_causes(normal + control)
    by_findings = sorted(tuple(c.findings) for c in causes)
    assert by_findings == [(0, 3), (1,), (2,), (4, 5)], by_findings


def test_an_empty_piece_of_normal_tokens_is_one_cause_on_every_algorithm():
    """A port whose piece call gives nothing for normal tokens (llama-cpp-python's did, on SPM
    and BPE vocabs alike) renders no algorithm's code at all: one defect, one cause."""
    def empty(vocab, pre_type):
        return Finding("piece", vocab, pre_type, False, False, "", Divergence(0, 0, True, b"a", b""),
                       decoded_ids=(7,), signature=("piece", "empty", "normal token"))

    causes = group_causes([empty("llama-spm", "n/a (llama)"), empty("qwen2", "QWEN2"), empty("bert-bge", "n/a (bert)")])
    assert [tuple(c.findings) for c in causes] == [(0, 1, 2)]
