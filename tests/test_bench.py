"""The benchmark's corpus is fixed forever, and both sides see the same bytes."""

from __future__ import annotations

from harness.bench_corpus import CORPUS_BYTES, CORPUS_SHA256, chunks, corpus, sha256


def test_corpus_is_the_pinned_bytes():
    text = corpus()
    assert len(text.encode()) >= CORPUS_BYTES
    assert sha256(text) == CORPUS_SHA256, "the corpus generator changed: bench figures are no longer comparable"


def test_corpus_mixes_every_family():
    text = corpus(200_000)
    for needle in ("def ", "汉字", "Привет", "مرحبا", "नमस्ते", "👨‍👩‍👧‍👦", "\u3000", "<|im_end|>", "\r\n"):
        assert needle in text, needle
    assert any(ch.isdigit() for ch in text)


def test_chunks_rejoin_exactly():
    text = corpus(300_000)
    parts = chunks(text)
    assert "".join(parts) == text
    assert len(parts) > 10 and max(len(p.encode()) for p in parts) < 64_000
