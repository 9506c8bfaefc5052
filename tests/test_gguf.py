"""GGUF reader/writer: hostile files are refused cleanly, valid edge cases are not.

Hostile files are built byte by byte with ``struct.pack`` so each test shows
exactly which field is wrong. Every refusal must be a GGUFFormatError (never
a crash, a hang or a huge allocation) that names the offset.
"""

from __future__ import annotations

import struct
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from harness.errors import GGUFFormatError
from harness.tokenizer.gguf import GGUFReader, GGUFValueType as T, Keys
from harness.tokenizer.gguf.writer import rewrite_metadata, write_gguf
from reference.paths import vocabs_dir

VOCABS = sorted(vocabs_dir().glob("ggml-vocab-*.gguf"))  # vocabs/<pin>/ of the selected pin


def s(text: bytes | str) -> bytes:
    """A GGUF string: u64 length + bytes."""
    b = text.encode() if isinstance(text, str) else text
    return struct.pack("<Q", len(b)) + b


def header(n_kv: int, n_tensors: int = 0, version: int = 3) -> bytes:
    return b"GGUF" + struct.pack("<IQQ", version, n_tensors, n_kv)


def kv(key: str, vtype: int, payload: bytes) -> bytes:
    return s(key) + struct.pack("<I", vtype) + payload


def write(tmp_path: Path, data: bytes) -> Path:
    p = tmp_path / "x.gguf"
    p.write_bytes(data)
    return p


def refused(tmp_path: Path, data: bytes, *fragments: str) -> GGUFFormatError:
    with pytest.raises(GGUFFormatError) as ei:
        GGUFReader(write(tmp_path, data))
    msg = str(ei.value)
    assert ei.value.offset is not None, msg
    for f in fragments:
        assert f in msg, msg
    return ei.value


# --- hostile files -----------------------------------------------------------------------

def test_empty_file(tmp_path):
    refused(tmp_path, b"", "magic")


def test_wrong_magic(tmp_path):
    refused(tmp_path, b"GGML" + b"\0" * 20, "bad magic")


def test_v1_is_refused_with_a_clear_message(tmp_path):
    refused(tmp_path, header(0, version=1), "v1")


@pytest.mark.parametrize("version", [0, 4, 0x03000000])
def test_unknown_version(tmp_path, version):
    refused(tmp_path, header(0, version=version), f"version {version}")


def test_truncated_header(tmp_path):
    refused(tmp_path, header(0)[:-3], "truncated")


def test_kv_count_past_eof(tmp_path):
    refused(tmp_path, header(2**62), "metadata count")


def test_key_length_past_eof(tmp_path):
    refused(tmp_path, header(1) + struct.pack("<Q", 2**40) + b"abc", "length")


def test_string_value_past_eof(tmp_path):
    e = refused(tmp_path, header(1) + s("k") + struct.pack("<IQ", T.STRING, 100) + b"short", "k")
    assert e.key == "k"


def test_unknown_value_type(tmp_path):
    refused(tmp_path, header(1) + kv("k", 13, b"\0" * 16), "unknown GGUF value type 13", "'k'")


def test_unknown_array_item_type(tmp_path):
    refused(tmp_path, header(1) + kv("k", T.ARRAY, struct.pack("<IQ", 99, 1)) + b"\0" * 16,
            "unknown GGUF value type 99")


@pytest.mark.parametrize("item", [T.UINT8, T.FLOAT64, T.STRING, T.ARRAY])
def test_array_count_needing_terabytes_is_refused_before_allocating(tmp_path, item):
    # 2**40 elements of at least one byte cannot fit in a 60-byte file
    e = refused(tmp_path, header(1) + kv("big", T.ARRAY, struct.pack("<IQ", item, 2**40)), "big", "remain")
    assert e.key == "big"


def test_string_array_element_past_eof(tmp_path):
    body = struct.pack("<IQ", T.STRING, 3) + s("a") + s("b") + struct.pack("<Q", 50) + b"xy"
    e = refused(tmp_path, header(1) + kv("tokenizer.ggml.tokens", T.ARRAY, body), "string 2 of 3")
    assert e.key == "tokenizer.ggml.tokens"


def test_nested_array_depth_bomb(tmp_path):
    body = struct.pack("<IQ", T.ARRAY, 1) * 10_000 + struct.pack("<IQ", T.UINT8, 0)
    refused(tmp_path, header(1) + kv("deep", T.ARRAY, body), "nested deeper")


def test_duplicate_key(tmp_path):
    one = kv("k", T.UINT8, b"\1")
    refused(tmp_path, header(2) + one + one, "duplicate")


def test_empty_key(tmp_path):
    refused(tmp_path, header(1) + kv("", T.UINT8, b"\1"), "empty key")


def test_bad_alignment_type_and_value(tmp_path):
    refused(tmp_path, header(1) + kv(Keys.General.ALIGNMENT, T.UINT64, struct.pack("<Q", 32)), "UINT32")
    refused(tmp_path, header(1) + kv(Keys.General.ALIGNMENT, T.UINT32, struct.pack("<I", 3)), "power of 2")


def test_tensor_count_past_eof(tmp_path):
    refused(tmp_path, header(0, n_tensors=2**50), "tensor count")


def test_tensor_with_too_many_dims(tmp_path):
    info = s("t") + struct.pack("<I", 9) + b"\0" * 100
    refused(tmp_path, header(0, n_tensors=1) + info, "dims")


def test_truncated_real_vocab_is_refused_everywhere(tmp_path):
    """Cut a real vocab at many points: always a GGUFFormatError, never anything else."""
    data = (VOCABS[0] if VOCABS else None)
    if data is None:
        pytest.skip("no pinned vocabs in vocabs/ (run `make fetch`)")
    raw = data.read_bytes()
    for cut in sorted({5, 23, 24, 40, 100, 1000, len(raw) // 3, len(raw) // 2, len(raw) - 1}):
        with pytest.raises(GGUFFormatError):
            GGUFReader(write(tmp_path, raw[:cut]))


# --- valid edge cases must NOT be rejected ----------------------------------------------------

def test_empty_arrays_and_v2(tmp_path):
    data = (header(3, version=2) + kv("a", T.ARRAY, struct.pack("<IQ", T.STRING, 0))
            + kv("b", T.ARRAY, struct.pack("<IQ", T.FLOAT32, 0))
            + kv("c", T.ARRAY, struct.pack("<IQ", T.ARRAY, 0)))
    r = GGUFReader(write(tmp_path, data))
    assert r.version == 2
    assert r.get("a") == [] and len(r.get("b")) == 0 and r.get("c") == []


def test_nested_arrays_and_all_scalar_types(tmp_path):
    inner = struct.pack("<IQ", T.INT16, 2) + struct.pack("<hh", -1, 7)
    inner_s = struct.pack("<IQ", T.STRING, 1) + s("x")
    data = (header(14)
            + kv("n", T.ARRAY, struct.pack("<IQ", T.ARRAY, 2) + inner + inner_s)
            + kv("u8", T.UINT8, b"\xff") + kv("i8", T.INT8, b"\xff")
            + kv("u16", T.UINT16, struct.pack("<H", 65535)) + kv("i16", T.INT16, struct.pack("<h", -2))
            + kv("u32", T.UINT32, struct.pack("<I", 2**32 - 1)) + kv("i32", T.INT32, struct.pack("<i", -3))
            + kv("f32", T.FLOAT32, struct.pack("<f", 1.5)) + kv("b", T.BOOL, b"\x02")
            + kv("str", T.STRING, s(b"caf\xc3\xa9 \xff"))
            + kv("u64", T.UINT64, struct.pack("<Q", 2**64 - 1)) + kv("i64", T.INT64, struct.pack("<q", -4))
            + kv("f64", T.FLOAT64, struct.pack("<d", 0.25))
            + kv("bools", T.ARRAY, struct.pack("<IQ", T.BOOL, 3) + b"\x00\x01\x05"))
    r = GGUFReader(write(tmp_path, data))
    assert r.get("n")[0].tolist() == [-1, 7] and r.get("n")[1] == [b"x"]
    assert (r.get("u8"), r.get("i8"), r.get("u16"), r.get("i16")) == (255, -1, 65535, -2)
    assert (r.get("u32"), r.get("i32"), r.get("f32"), r.get("b")) == (2**32 - 1, -3, 1.5, True)
    assert r.get("str").encode("utf-8", "surrogateescape") == b"caf\xc3\xa9 \xff"
    assert (r.get("u64"), r.get("i64"), r.get("f64")) == (2**64 - 1, -4, 0.25)
    assert r.get("bools").tolist() == [False, True, True]
    assert r.field("n").item_type == T.ARRAY and r.field("u8").type == T.UINT8


def test_string_arrays_with_long_empty_and_nul_strings(tmp_path):
    """The vectorised string parser must fall back correctly on every awkward shape."""
    strings = [b"", b"a", b"\0" * 9, b"x" * 300, b"", b"\0\0\0\0\0\0\0\0\0\0\0\0" + b"y", b"z" * 70000, b"end"]
    strings = strings * 5
    p = tmp_path / "s.gguf"
    write_gguf(p, {"arr": (T.ARRAY, strings, T.STRING), "after": (T.UINT8, 9)})
    r = GGUFReader(p)
    assert r.get("arr") == strings and r.get("after") == 9


@pytest.mark.parametrize("path", VOCABS, ids=lambda p: p.stem.removeprefix("ggml-vocab-"))
def test_pinned_vocab_string_arrays_match_a_naive_parser(path):
    """The fast string-array path agrees with a 10-line struct parser on every pinned vocab."""
    raw = path.read_bytes()
    n_kv = struct.unpack_from("<Q", raw, 16)[0]
    pos, naive = 24, {}
    sizes = {0: 1, 1: 1, 2: 2, 3: 2, 4: 4, 5: 4, 6: 4, 7: 1, 10: 8, 11: 8, 12: 8}

    def string(p):
        n = struct.unpack_from("<Q", raw, p)[0]
        return raw[p + 8:p + 8 + n], p + 8 + n
    for _ in range(n_kv):
        key, pos = string(pos)
        t = struct.unpack_from("<I", raw, pos)[0]
        pos += 4
        if t == 8:
            _, pos = string(pos)
        elif t == 9:
            it, count = struct.unpack_from("<IQ", raw, pos)
            pos += 12
            if it == 8:
                vals = []
                for _ in range(count):
                    v, pos = string(pos)
                    vals.append(v)
                naive[key.decode()] = vals
            else:
                pos += count * sizes[it]
        else:
            pos += sizes[t]
    r = GGUFReader(path)
    assert naive, "expected string arrays in a vocab"
    for key, vals in naive.items():
        assert r.get(key) == vals, key


# --- writer ------------------------------------------------------------------------------------

def test_write_then_read_round_trip(tmp_path):
    p = tmp_path / "w.gguf"
    meta = {
        "tokenizer.ggml.model": (T.STRING, "llama"),
        "tokenizer.ggml.tokens": (T.ARRAY, [b"<unk>", "\u2581a", b"\xff"]),
        "tokenizer.ggml.scores": (T.ARRAY, np.array([0.0, -1.5, 2.0], np.float32)),
        "tokenizer.ggml.token_type": (T.ARRAY, [2, 1, 6], T.INT32),
        "tokenizer.ggml.add_bos_token": (T.BOOL, True),
        "x.nested": (T.ARRAY, [(T.UINT8, [1, 2]), (T.STRING, ["q"])], T.ARRAY),
    }
    write_gguf(p, meta, version=2)
    r = GGUFReader(p)
    assert r.version == 2 and list(r) == list(meta)
    assert r.get("tokenizer.ggml.tokens") == [b"<unk>", "\u2581a".encode(), b"\xff"]
    assert r.get("tokenizer.ggml.scores").tolist() == [0.0, -1.5, 2.0]
    assert r.field("tokenizer.ggml.token_type").item_type == T.INT32
    assert r.get("x.nested")[0].tolist() == [1, 2] and r.get("x.nested")[1] == [b"q"]


def test_rewrite_metadata_changes_only_what_was_asked(tmp_path):
    if not VOCABS:
        pytest.skip("no pinned vocabs in vocabs/ (run `make fetch`)")
    src = next(p for p in VOCABS if "qwen2" in p.name) if any("qwen2" in p.name for p in VOCABS) else VOCABS[0]
    dst = tmp_path / "d.gguf"
    rewrite_metadata(src, dst, {Keys.Tokenizer.PRE: (T.STRING, "qwen35"), Keys.General.NAME: None,
                                "x.added": (T.UINT32, 7)})
    a, b = GGUFReader(src), GGUFReader(dst)
    assert b.get(Keys.Tokenizer.PRE) == "qwen35" and Keys.General.NAME not in b and b.get("x.added") == 7
    for key in a:
        if key in (Keys.Tokenizer.PRE, Keys.General.NAME):
            continue
        va, vb = a.get(key), b.get(key)
        assert (va == vb).all() if isinstance(va, np.ndarray) else va == vb, key


def test_rewrite_metadata_copies_tensors_verbatim(tmp_path):
    # one tiny F32 tensor (ggml type 0) of 4 elements, data aligned to 32
    info = s("w") + struct.pack("<IQIQ", 1, 4, 0, 0)
    meta = kv("general.name", T.STRING, s("t"))
    head = header(1, n_tensors=1) + meta + info
    data = struct.pack("<4f", 1, 2, 3, 4)
    raw = head + b"\0" * (-len(head) % 32) + data
    src = write(tmp_path, raw)
    dst = tmp_path / "out.gguf"
    rewrite_metadata(src, dst, {"general.name": (T.STRING, "a much longer name than before")})
    r = GGUFReader(dst)
    assert r.tensors[0].name == "w" and r.tensors[0].shape == (4,)
    assert r.data_offset % 32 == 0 and r.data_section() == data


@settings(max_examples=150, deadline=None)
@given(st.lists(st.binary(max_size=300) | st.sampled_from([b"", b"\0" * 9, b"\0" * 17 + b"x"]), max_size=40),
       st.sampled_from([64, 200, 1 << 26]))
def test_string_arrays_round_trip(strings, chunk):
    """Any mix of lengths and zero bytes reads back exactly, also when the candidate scan
    window (normally 64 MiB) slides many times."""
    import tempfile
    import harness.tokenizer.gguf.reader as reader_mod
    old = reader_mod._SCAN_CHUNK
    reader_mod._SCAN_CHUNK = chunk
    try:
        with tempfile.TemporaryDirectory() as d:
            p = Path(d) / "r.gguf"
            write_gguf(p, {"a": (T.ARRAY, strings, T.STRING), "z": (T.UINT8, 5)})
            r = GGUFReader(p)
            assert r.get("a") == strings and r.get("z") == 5
    finally:
        reader_mod._SCAN_CHUNK = old


@pytest.mark.reference
def test_ggml_type_table_matches_the_pinned_libggml():
    """GGML_TYPES (block size, bytes per block) is what the pinned libggml says, for every id."""
    import ctypes
    from harness.tokenizer.gguf.reader import GGML_TYPE_COUNT, GGML_TYPES
    from reference.build import artifacts
    from reference.inproc import library
    from harness.conformance.needs import require
    require(library)  # the shim loads libggml-base with libllama
    base = next(artifacts().libllama.parent.glob("libggml-base.*"))
    lib = ctypes.CDLL(str(base))
    lib.ggml_blck_size.restype, lib.ggml_type_size.restype = ctypes.c_int64, ctypes.c_size_t
    got = {t: (lib.ggml_blck_size(t), lib.ggml_type_size(t)) for t in range(GGML_TYPE_COUNT)}
    assert got == GGML_TYPES
    lib.ggml_type_name.restype = ctypes.c_char_p
    assert lib.ggml_type_name(GGML_TYPE_COUNT - 1) not in (None, b"")  # the last id is a real type
