"""A memory-mapped, bounds-checked GGUF (v2/v3) reader.

Every read checks the bytes it needs against the end of the file *before*
touching or allocating anything, so a truncated or hostile file raises
:class:`GGUFFormatError` (naming the path, byte offset and key) instead of
crashing, hanging or allocating terabytes. gguf-py does not do this; we do.

Values come back as Python/numpy objects:

* scalar numbers -> ``int`` / ``float``; ``BOOL`` -> ``bool``
* ``STRING`` -> ``str`` (UTF-8; invalid bytes kept as surrogate escapes, so
  ``s.encode("utf-8", "surrogateescape")`` gives back the exact bytes)
* arrays of fixed-size numbers -> a numpy array (read in bulk); bool arrays
  -> numpy ``bool``
* arrays of strings -> ``list[bytes]`` (token texts are bytes, never decoded)
* arrays of arrays -> ``list`` of the above (depth-limited)

>>> r = GGUFReader("vocabs/ggml-vocab-qwen2.gguf")       # doctest: +SKIP
>>> r.get("tokenizer.ggml.model")                        # doctest: +SKIP
'gpt2'
"""

from __future__ import annotations

import mmap
import os
import struct
from dataclasses import dataclass
from typing import Any, Iterator, Mapping

import numpy as np

from harness.errors import GGUFFormatError
from harness.tokenizer.gguf.keys import FIXED_DTYPES, GGUF_DEFAULT_ALIGNMENT, GGUF_MAGIC, GGUFValueType, Keys

_U32 = struct.Struct("<I")
_U64 = struct.Struct("<Q")
_SCALAR = {t: struct.Struct(d.replace("<u1", "<B").replace("<i1", "<b").replace("<u2", "<H")
                            .replace("<i2", "<h").replace("<u4", "<I").replace("<i4", "<i")
                            .replace("<f4", "<f").replace("<u8", "<Q").replace("<i8", "<q")
                            .replace("<f8", "<d"))
           for t, d in FIXED_DTYPES.items()}

MAX_ARRAY_DEPTH = 8           # nested arrays deeper than this are a depth bomb
MAX_TENSOR_DIMS = 4           # GGML_MAX_DIMS
MAX_TENSOR_NAME = 63          # GGML_MAX_NAME - 1 (llama.cpp rejects >= 64)
_INT64_MAX = (1 << 63) - 1
_SIZE_MAX = (1 << 64) - 1
# ggml type id -> (block size, bytes per block) at the pin (ggml_blck_size, ggml_type_size);
# (0, 0) marks an id whose support was removed. tests/test_gguf.py checks it against libggml.
GGML_TYPES = {
    0: (1, 4), 1: (1, 2), 2: (32, 18), 3: (32, 20), 4: (0, 0), 5: (0, 0), 6: (32, 22), 7: (32, 24),
    8: (32, 34), 9: (32, 36), 10: (256, 84), 11: (256, 110), 12: (256, 144), 13: (256, 176),
    14: (256, 210), 15: (256, 292), 16: (256, 66), 17: (256, 74), 18: (256, 98), 19: (256, 50),
    20: (32, 18), 21: (256, 110), 22: (256, 82), 23: (256, 136), 24: (1, 1), 25: (1, 2), 26: (1, 4),
    27: (1, 8), 28: (1, 8), 29: (256, 56), 30: (1, 2), 31: (0, 0), 32: (0, 0), 33: (0, 0),
    34: (256, 54), 35: (256, 66), 36: (0, 0), 37: (0, 0), 38: (0, 0), 39: (32, 17), 40: (64, 36),
    41: (128, 18), 42: (64, 18)}
GGML_TYPE_COUNT = len(GGML_TYPES)
_MIN_ITEM_SIZE = {GGUFValueType.STRING: 8, GGUFValueType.ARRAY: 12}


class StringArraySpans:
    """A parsed string array kept as one region plus start/end offsets (numpy int64).

    Materialising 500k ``bytes`` objects costs more than parsing them, so
    string arrays stay in this form until someone asks for the list; fast
    consumers (merges splitting) work on the spans directly.
    """

    __slots__ = ("region", "starts", "ends", "_list")

    def __init__(self, region: bytes, starts: np.ndarray, ends: np.ndarray):
        self.region, self.starts, self.ends, self._list = region, starts, ends, None

    def __len__(self) -> int:
        return len(self.starts)

    def tolist(self) -> list[bytes]:
        if self._list is None:
            r = self.region
            self._list = [r[i:j] for i, j in zip(self.starts.tolist(), self.ends.tolist())]
        return self._list


class GGUFField:
    """One metadata key/value pair, with its type and where it sits in the file.

    ``item_type`` is the element type for arrays (``None`` otherwise);
    ``start``/``end`` delimit the whole key/value record in the file, which
    lets :func:`harness.tokenizer.gguf.writer.rewrite_metadata` copy it verbatim.
    """

    __slots__ = ("key", "type", "_value", "item_type", "start", "end")

    def __init__(self, key, type, value, item_type, start, end):
        self.key, self.type, self._value, self.item_type = key, type, value, item_type
        self.start, self.end = start, end

    @property
    def value(self) -> Any:
        v = self._value
        return v.tolist() if isinstance(v, StringArraySpans) else v

    def spans(self) -> StringArraySpans | None:
        """The raw spans of a top-level string array (``None`` for anything else)."""
        return self._value if isinstance(self._value, StringArraySpans) else None

    def __repr__(self) -> str:
        return f"GGUFField({self.key!r}, {self.type.name}, item_type={self.item_type})"


@dataclass(frozen=True)
class TensorInfo:
    """A tensor-info record: name, shape (ne), ggml type id, offset in the data section."""

    name: str
    shape: tuple[int, ...]
    ggml_type: int
    offset: int


class _Cursor:
    """Reads little-endian values from a buffer, checking bounds before each read."""

    def __init__(self, buf, path: str):
        self.buf, self.path, self.pos, self.end = buf, path, 0, len(buf)
        self.key: str | None = None

    def fail(self, msg: str, offset: int | None = None) -> GGUFFormatError:
        return GGUFFormatError(msg, path=self.path, offset=self.pos if offset is None else offset,
                               key=self.key)

    def need(self, n: int, what: str) -> None:
        if n > self.end - self.pos:
            raise self.fail(f"{what} needs {n} bytes but only {self.end - self.pos} remain before "
                            "end of file: the file is truncated or corrupt; re-download or re-convert it")

    def u32(self, what: str) -> int:
        self.need(4, what)
        v = _U32.unpack_from(self.buf, self.pos)[0]
        self.pos += 4
        return v

    def u64(self, what: str) -> int:
        self.need(8, what)
        v = _U64.unpack_from(self.buf, self.pos)[0]
        self.pos += 8
        return v

    def raw_string(self, what: str) -> bytes:
        n = self.u64(f"length of {what}")
        self.need(n, f"{what} of length {n}")
        s = self.buf[self.pos:self.pos + n]
        self.pos += n
        return bytes(s)

    def string(self, what: str) -> str:
        return self.raw_string(what).decode("utf-8", "surrogateescape")

    def value_type(self, what: str) -> GGUFValueType:
        at = self.pos
        t = self.u32(what)
        try:
            return GGUFValueType(t)
        except ValueError:
            raise self.fail(f"unknown GGUF value type {t} for {what} (known: 0..12)", at) from None


def _candidates(buf, base: int, win: int) -> tuple[np.ndarray, np.ndarray]:
    """Positions (relative to ``base``) that may start a string shorter than 256 bytes.

    Such a string's u64 length has seven zero high bytes, so its start ``p`` has
    bytes ``p+1..p+7`` all zero. Returns candidate starts and the end each
    would imply (start + 8 + low byte).
    """
    a = np.frombuffer(buf, np.uint8, count=win, offset=base)
    z = a == 0
    m = max(win - 7, 0)
    c = z[1:1 + m].copy()
    for k in range(2, 8):
        c &= z[k:k + m]
    cand = np.flatnonzero(c)
    return cand, cand + 8 + a[cand].astype(np.int64)


_SCAN_CHUNK = 1 << 26  # 64 MiB


def _scan(buf, base: int, lo: int, hi: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Candidates in ``[lo, hi)`` (offsets from ``base``), their implied ends, and the run breaks."""
    cand, ends = _candidates(buf, base + lo, hi - lo)
    cand, ends = cand + lo, ends + lo
    return cand, ends, np.flatnonzero(cand[1:] != ends[:-1])


def _read_string_array(cur: _Cursor, count: int) -> StringArraySpans:
    """Parse ``count`` length-prefixed strings, mostly vectorised.

    Walk the real chain of strings from the array start. Wherever the walk sits
    on a candidate (see :func:`_candidates`) whose implied end is the next
    candidate, a whole run of strings is taken at once; the chain is proven by
    induction (each start is real, so its end is the next real start). Long
    strings, or stray zero bytes inside a string, break a run: that one string
    is read with the checked slow path, then the fast walk resumes.
    """
    base, rem = cur.pos, cur.end - cur.pos
    # Scan a window [lo, hi) at a time (at most _SCAN_CHUNK bytes: bounded memory on huge files).
    lo, hi = 0, min(rem, count * 32 + 4096, _SCAN_CHUNK)
    cand, ends, breaks = _scan(cur.buf, base, lo, hi)
    starts_out: list[np.ndarray] = []
    ends_out: list[np.ndarray] = []
    got, pos = 0, 0
    while got < count:
        if hi < rem and pos > hi - 64:  # the walk reached the end of the scanned window
            lo, hi = pos, min(rem, pos + min(_SCAN_CHUNK, max(4096, 2 * (hi - lo))))
            cand, ends, breaks = _scan(cur.buf, base, lo, hi)
        i = int(np.searchsorted(cand, pos))
        if i < len(cand) and cand[i] == pos:
            k = int(np.searchsorted(breaks, i))
            last = int(breaks[k]) if k < len(breaks) else len(cand) - 1
            take = min(last - i + 1, count - got)
            if ends[i + take - 1] <= rem:
                starts_out.append(cand[i:i + take] + 8)
                ends_out.append(ends[i:i + take])
                got += take
                pos = int(ends[i + take - 1])
                continue
        cur.pos = base + pos  # slow, checked path for one string
        n = cur.u64(f"length of string {got} of {count} in array")
        cur.need(n, f"string {got} of {count} (length {n}) in array")
        starts_out.append(np.array([pos + 8], np.int64))
        ends_out.append(np.array([pos + 8 + n], np.int64))
        got += 1
        pos += 8 + n
    cur.pos = base + pos
    st = np.concatenate(starts_out) if starts_out else np.zeros(0, np.int64)
    en = np.concatenate(ends_out) if ends_out else np.zeros(0, np.int64)
    return StringArraySpans(bytes(cur.buf[base:base + pos]), st, en)


def _read_array(cur: _Cursor, depth: int) -> tuple[Any, GGUFValueType]:
    if depth > MAX_ARRAY_DEPTH:
        raise cur.fail(f"arrays nested deeper than {MAX_ARRAY_DEPTH} levels: refusing a depth bomb")
    item_type = cur.value_type("array element type")
    count = cur.u64("array length")
    dtype = FIXED_DTYPES.get(item_type)
    min_size = np.dtype(dtype).itemsize if dtype else _MIN_ITEM_SIZE[item_type]
    # Check before allocating: count * smallest element must fit in what is left.
    if count > (cur.end - cur.pos) // min_size:
        raise cur.fail(f"array of {count} {item_type.name} elements needs at least {count * min_size} "
                       f"bytes but only {cur.end - cur.pos} remain: the file is truncated or hostile")
    if dtype is not None:
        arr = np.frombuffer(cur.buf, dtype=dtype, count=count, offset=cur.pos).copy()
        cur.pos += count * min_size
        return (arr != 0 if item_type == GGUFValueType.BOOL else arr), item_type
    if item_type == GGUFValueType.STRING:
        return _read_string_array(cur, count), item_type
    items = [_read_array(cur, depth + 1)[0] for _ in range(count)]
    return [v.tolist() if isinstance(v, StringArraySpans) else v for v in items], item_type


def _check_tensor_shape(cur: _Cursor, name: str, shape: tuple[int, ...], ggml_type: int, at: int) -> None:
    """gguf.cpp's checks of one tensor's shape and type, in its order."""
    ne = list(shape) + [1] * (MAX_TENSOR_DIMS - len(shape))
    if any(x > _INT64_MAX for x in ne):  # read as int64 there: negative
        raise cur.fail(f"tensor {name!r} has a negative dimension {[x - (1 << 64) if x > _INT64_MAX else x for x in ne]}")
    nel = _int64(ne[0] * ne[1] * ne[2] * ne[3])  # ggml_nelements, wrapping as int64 does
    if nel > 0 and (_INT64_MAX // ne[1] <= ne[0] or _INT64_MAX // ne[2] <= ne[0] * ne[1]
                    or _INT64_MAX // ne[3] <= ne[0] * ne[1] * ne[2]):
        raise cur.fail(f"tensor {name!r} shape {tuple(ne)} has more than INT64_MAX elements")
    signed = ggml_type - (1 << 32) if ggml_type >= 1 << 31 else ggml_type  # an int32 enum there
    if not 0 <= signed < GGML_TYPE_COUNT:
        raise cur.fail(f"tensor {name!r} has invalid ggml type {signed} (valid: 0..{GGML_TYPE_COUNT - 1})", at)
    blck, size = GGML_TYPES[ggml_type]
    if blck == 0 or ne[0] % blck:
        raise cur.fail(f"tensor {name!r} of ggml type {ggml_type} has {ne[0]} elements per row, not a "
                       f"multiple of its block size {blck} (0: a removed type)", at)
    per_block = abs(nel) // blck * (1 if nel >= 0 else -1)  # C division truncates toward zero
    if per_block & _SIZE_MAX > _SIZE_MAX // size:
        raise cur.fail(f"tensor {name!r} shape {tuple(ne)} has a size in bytes above SIZE_MAX", at)


def _int64(x: int) -> int:
    x &= _SIZE_MAX
    return x - (1 << 64) if x > _INT64_MAX else x


def tensor_nbytes(shape: tuple[int, ...], ggml_type: int) -> int:
    """``ggml_nbytes`` (size_t arithmetic) of a tensor that passed :func:`_check_tensor_shape`.

    >>> tensor_nbytes((4, 2), 0), tensor_nbytes((64,), 2), tensor_nbytes((0, 3), 0)
    (32, 36, 0)
    """
    ne = list(shape) + [1] * (MAX_TENSOR_DIMS - len(shape))
    if any(x <= 0 for x in ne):
        return 0
    blck, size = GGML_TYPES[ggml_type]
    nb = [size, size * (ne[0] // blck) & _SIZE_MAX]
    for j in range(2, MAX_TENSOR_DIMS):
        nb.append(nb[j - 1] * ne[j - 1] & _SIZE_MAX)
    n = size if blck == 1 else (ne[0] * nb[0] & _SIZE_MAX) // blck
    for j in range(0 if blck == 1 else 1, MAX_TENSOR_DIMS):
        n = (n + (ne[j] - 1) * nb[j]) & _SIZE_MAX
    return n


def _read_value(cur: _Cursor, vtype: GGUFValueType) -> tuple[Any, GGUFValueType | None]:
    if vtype == GGUFValueType.STRING:
        return cur.string("string value"), None
    if vtype == GGUFValueType.ARRAY:
        return _read_array(cur, 1)
    st = _SCALAR[vtype]
    cur.need(st.size, f"{vtype.name} value")
    v = st.unpack_from(cur.buf, cur.pos)[0]
    cur.pos += st.size
    return (v != 0 if vtype == GGUFValueType.BOOL else v), None


class GGUFReader:
    """Parse a GGUF file's header, metadata and tensor infos (tensor data is not read).

    >>> r = GGUFReader("vocabs/ggml-vocab-llama-spm.gguf")   # doctest: +SKIP
    >>> r.version, len(r.get(Keys.Tokenizer.TOKENS))          # doctest: +SKIP
    (3, 32000)
    """

    def __init__(self, path: str | os.PathLike):
        self.path = str(path)
        try:
            with open(self.path, "rb") as f:
                size = os.fstat(f.fileno()).st_size
                self._mm = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) if size else b""
        except OSError as e:
            raise GGUFFormatError(f"cannot open: {e}", path=self.path) from e
        cur = _Cursor(self._mm, self.path)
        self._parse_header(cur)
        self._parse_kv(cur)
        self._parse_tensor_infos(cur)

    # -- parsing -----------------------------------------------------------
    def _parse_header(self, cur: _Cursor) -> None:
        cur.need(4, "magic")
        magic = bytes(cur.buf[0:4])
        if magic != GGUF_MAGIC:
            raise cur.fail(f"bad magic {magic!r}, expected b'GGUF': this is not a GGUF file")
        cur.pos = 4
        self.version = cur.u32("version")
        if self.version == 1:
            raise cur.fail("GGUF v1 is not supported (llama.cpp refuses it too): re-convert the model "
                           "with a current convert_hf_to_gguf.py", 4)
        if self.version not in (2, 3):
            raise cur.fail(f"unknown GGUF version {self.version} (supported: 2, 3); a huge value "
                           "suggests a big-endian file", 4)
        self.n_tensors = cur.u64("tensor count")
        self.n_kv = cur.u64("metadata key/value count")
        # smallest kv record: 8 (key len) + 4 (type) + 1 (u8 value); checked up front so a
        # hostile count is refused at once
        if self.n_kv > (cur.end - cur.pos) // 13:
            raise cur.fail(f"metadata count {self.n_kv} cannot fit in the {cur.end - cur.pos} bytes left")

    def _parse_kv(self, cur: _Cursor) -> None:
        self._fields: dict[str, GGUFField] = {}
        self._cstr: dict[str, GGUFField] = {}  # see find()
        for i in range(self.n_kv):
            start = cur.pos
            cur.key = None
            key = cur.string(f"key of metadata entry {i}")
            if not key:
                raise cur.fail(f"metadata entry {i} has an empty key", start)
            if key in self._fields:
                raise cur.fail(f"duplicate metadata key {key!r} (llama.cpp refuses the file)", start)
            cur.key = key
            vtype = cur.value_type("value type")
            value, item_type = _read_value(cur, vtype)
            self._fields[key] = GGUFField(key, vtype, value, item_type, start, cur.pos)
            self._cstr.setdefault(key.split("\0", 1)[0], self._fields[key])
        cur.key = None
        self.alignment = GGUF_DEFAULT_ALIGNMENT
        al = self._fields.get(Keys.General.ALIGNMENT)
        if al is not None:
            if al.type != GGUFValueType.UINT32:
                raise GGUFFormatError(f"must be UINT32, found {al.type.name}", path=self.path,
                                      offset=al.start, key=al.key)
            if al.value == 0 or al.value & (al.value - 1):
                raise GGUFFormatError(f"alignment {al.value} is not a power of 2", path=self.path,
                                      offset=al.start, key=al.key)
            self.alignment = al.value
        self.kv_end = cur.pos

    def _parse_tensor_infos(self, cur: _Cursor) -> None:
        """Tensor-info records, refused where gguf_init_from_file_impl (gguf.cpp) and
        llama_tensor_weight refuse them, so a file loads here iff it loads there."""
        # smallest tensor info: 8 (name len) + 4 (n_dims) + 4 (type) + 8 (offset)
        if self.n_tensors > (cur.end - cur.pos) // 24:
            raise cur.fail(f"tensor count {self.n_tensors} cannot fit in the {cur.end - cur.pos} bytes left")
        self.tensors: list[TensorInfo] = []
        names: set[str] = set()
        for i in range(self.n_tensors):
            at = cur.pos
            name = cur.string(f"name of tensor {i}")
            cname = name.split("\0", 1)[0]  # ggml_set_name copies the C string
            if len(name.encode("utf-8", "surrogateescape")) > MAX_TENSOR_NAME or cname in names:
                raise cur.fail(f"tensor {i} name {name!r} is too long or duplicated", at)
            n_dims = cur.u32(f"n_dims of tensor {name!r}")
            if n_dims > MAX_TENSOR_DIMS:
                raise cur.fail(f"tensor {name!r} has {n_dims} dims (max {MAX_TENSOR_DIMS})")
            shape = tuple(cur.u64(f"dim {j} of tensor {name!r}") for j in range(n_dims))
            at = cur.pos
            ggml_type = cur.u32(f"type of tensor {name!r}")
            _check_tensor_shape(cur, name, shape, ggml_type, at)
            offset = cur.u64(f"offset of tensor {name!r}")
            names.add(cname)
            self.tensors.append(TensorInfo(name, shape, ggml_type, offset))
        self.tensor_info_end = cur.pos
        pad = -cur.pos % self.alignment
        self.data_offset = cur.pos + pad if self.n_tensors else cur.pos
        if self.data_offset > cur.end:
            raise cur.fail("data section starts past end of file (missing alignment padding)")
        self._check_tensor_offsets(cur.end)

    def _check_tensor_offsets(self, file_size: int) -> None:
        """Each tensor starts where the previous one's padded data ends (gguf.cpp), and its
        data lies inside the file (llama_tensor_weight)."""
        expected = 0
        for t in self.tensors:
            def fail(msg: str) -> GGUFFormatError:
                return GGUFFormatError(f"tensor {t.name!r} {msg} (llama.cpp refuses the file)",
                                       path=self.path, offset=self.tensor_info_end)
            if t.offset != expected:
                raise fail(f"has offset {t.offset}, expected {expected}")
            nbytes = tensor_nbytes(t.shape, t.ggml_type)
            padded = (nbytes + self.alignment - 1) & ~(self.alignment - 1) & _SIZE_MAX
            if _SIZE_MAX - expected < padded:
                raise fail(f"size overflows: {expected} + {padded}")
            start = self.data_offset + t.offset
            if start + nbytes > _SIZE_MAX or start + nbytes > file_size:
                raise fail(f"data ({nbytes} bytes at {start}) is not within the file ({file_size} bytes)")
            expected += padded

    # -- access ------------------------------------------------------------
    @property
    def fields(self) -> Mapping[str, Any]:
        """Key -> value, in file order."""
        return {k: f.value for k, f in self._fields.items()}  # materialises string arrays

    def field(self, key: str) -> GGUFField | None:
        """The full record (type, item type, file span) for ``key``, or ``None``."""
        return self._fields.get(key)

    def find(self, key: str) -> GGUFField | None:
        """``gguf_find_key``: the first record whose key, read as a C string (cut at its
        first NUL), equals ``key``. llama.cpp looks keys up this way; :meth:`field` is exact.

        >>> r = GGUFReader.__new__(GGUFReader); r._cstr = {"a": "record of 'a\\x00b'"}
        >>> r.find("a")
        "record of 'a\\x00b'"
        """
        return self._cstr.get(key)

    def get(self, key: str, default: Any = None) -> Any:
        """Value of ``key`` or ``default``.

        >>> GGUFReader("vocabs/ggml-vocab-gpt-2.gguf").get("tokenizer.ggml.pre")  # doctest: +SKIP
        'gpt-2'
        """
        f = self._fields.get(key)
        return default if f is None else f.value

    def __contains__(self, key: object) -> bool:
        return key in self._fields

    def __iter__(self) -> Iterator[str]:
        return iter(self._fields)

    def raw(self, start: int, end: int) -> bytes:
        """Bytes ``[start, end)`` of the file (for verbatim copies)."""
        return bytes(self._mm[start:end])

    def close(self) -> None:
        """Release the memory map (values already read stay valid: they are copies)."""
        if isinstance(self._mm, mmap.mmap):
            self._mm.close()

    def __enter__(self) -> "GGUFReader":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def data_section(self) -> bytes:
        """The tensor data section, verbatim (empty for vocab-only files)."""
        return bytes(self._mm[self.data_offset:]) if self.n_tensors else b""
