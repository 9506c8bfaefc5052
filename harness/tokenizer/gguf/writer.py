"""Write GGUF files (v2/v3) and rewrite the metadata of existing ones.

Used to build small test vocabs and derived vocabs (a pinned vocab with one
key changed). Values are given as ``(GGUFValueType, value)``; arrays as
``(GGUFValueType.ARRAY, values, item_type)`` -- the item type may be left out
when it can be inferred (numpy arrays, lists of str/bytes, lists of bools).

>>> import tempfile, os
>>> from harness.tokenizer.gguf import GGUFReader, GGUFValueType as T
>>> p = os.path.join(tempfile.mkdtemp(), "v.gguf")
>>> write_gguf(p, {"tokenizer.ggml.model": (T.STRING, "llama"),
...                "tokenizer.ggml.tokens": (T.ARRAY, ["<unk>", "a"]),
...                "tokenizer.ggml.scores": (T.ARRAY, [0.0, -1.0], T.FLOAT32)})
>>> GGUFReader(p).get("tokenizer.ggml.tokens")
[b'<unk>', b'a']
"""

from __future__ import annotations

import os
import struct
import tempfile
from typing import Any, Iterable, Mapping

import numpy as np

from harness.errors import GGUFFormatError, HarnessError
from harness.tokenizer.gguf.keys import FIXED_DTYPES, GGUF_DEFAULT_ALIGNMENT, GGUF_MAGIC, GGUFValueType, Keys
from harness.tokenizer.gguf.reader import GGUFReader

T = GGUFValueType
_SCALAR_FMT = {T.UINT8: "<B", T.INT8: "<b", T.UINT16: "<H", T.INT16: "<h", T.UINT32: "<I",
               T.INT32: "<i", T.FLOAT32: "<f", T.BOOL: "<?", T.UINT64: "<Q", T.INT64: "<q",
               T.FLOAT64: "<d"}
_NP_TO_GGUF = {np.dtype(d): t for t, d in FIXED_DTYPES.items() if t != T.BOOL}


def _string(s: str | bytes) -> bytes:
    b = s.encode("utf-8", "surrogateescape") if isinstance(s, str) else bytes(s)
    return struct.pack("<Q", len(b)) + b


def _infer_item_type(values: Any, key: str) -> GGUFValueType:
    if isinstance(values, np.ndarray):
        if values.dtype == np.bool_:
            return T.BOOL
        t = _NP_TO_GGUF.get(values.dtype.newbyteorder("<"))
        if t is not None:
            return t
    seq = list(values)
    if seq and all(isinstance(v, (str, bytes)) for v in seq):
        return T.STRING
    if seq and all(isinstance(v, bool) for v in seq):
        return T.BOOL
    if seq and all(isinstance(v, (list, tuple, np.ndarray)) for v in seq):
        return T.ARRAY
    raise HarnessError(f"{key}: cannot infer the array element type of {type(values).__name__}; "
                       "pass (GGUFValueType.ARRAY, values, item_type)")


def _array_body(values: Any, item_type: GGUFValueType, key: str) -> bytes:
    if item_type == T.STRING:
        return b"".join(_string(v) for v in values)
    if item_type == T.ARRAY:
        parts = []
        for inner in values:
            if isinstance(inner, tuple) and len(inner) == 2 and isinstance(inner[0], GGUFValueType):
                it, vals = inner
            else:
                it, vals = _infer_item_type(inner, key), inner
            parts.append(_encode_array(vals, it, key))
        return b"".join(parts)
    dtype = FIXED_DTYPES[item_type]
    arr = np.asarray(values)
    if item_type == T.BOOL:
        arr = arr.astype(bool)
    return arr.astype(dtype).tobytes()


def _encode_array(values: Any, item_type: GGUFValueType, key: str) -> bytes:
    n = len(values)
    return struct.pack("<IQ", int(item_type), n) + _array_body(values, item_type, key)


def encode_value(key: str, spec: tuple) -> bytes:
    """The type tag and value bytes of one metadata entry (without the key).

    >>> encode_value("x", (GGUFValueType.UINT32, 7)).hex()
    '0400000007000000'
    """
    vtype = GGUFValueType(spec[0])
    value = spec[1]
    if vtype == T.ARRAY:
        item_type = GGUFValueType(spec[2]) if len(spec) > 2 else _infer_item_type(value, key)
        return struct.pack("<I", int(T.ARRAY)) + _encode_array(value, item_type, key)
    if vtype == T.STRING:
        return struct.pack("<I", int(T.STRING)) + _string(value)
    return struct.pack("<I", int(vtype)) + struct.pack(_SCALAR_FMT[vtype], value)


def _kv_bytes(key: str, spec: tuple) -> bytes:
    return _string(key) + encode_value(key, spec)


def _items(metadata: Mapping[str, tuple] | Iterable[tuple[str, tuple]]) -> list[tuple[str, tuple]]:
    return list(metadata.items()) if isinstance(metadata, Mapping) else list(metadata)


def _atomic_write(path: str | os.PathLike, chunks: Iterable[bytes]) -> None:
    path = os.fspath(path)
    fd, tmp = tempfile.mkstemp(dir=os.path.dirname(os.path.abspath(path)), suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            for c in chunks:
                f.write(c)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def write_gguf(path: str | os.PathLike, metadata: Mapping[str, tuple] | Iterable[tuple[str, tuple]],
               version: int = 3) -> None:
    """Write a tensor-less GGUF file with ``metadata`` in the given order.

    >>> import tempfile, os
    >>> p = os.path.join(tempfile.mkdtemp(), "x.gguf")
    >>> write_gguf(p, [("general.name", (GGUFValueType.STRING, "x"))], version=2)
    >>> GGUFReader(p).version
    2
    """
    if version not in (2, 3):
        raise HarnessError(f"write_gguf: version {version} unsupported; use 2 or 3")
    items = _items(metadata)
    keys = [k for k, _ in items]
    if len(set(keys)) != len(keys):
        raise HarnessError("write_gguf: duplicate keys " + repr(sorted({k for k in keys if keys.count(k) > 1})))
    header = GGUF_MAGIC + struct.pack("<IQQ", version, 0, len(items))
    _atomic_write(path, [header] + [_kv_bytes(k, s) for k, s in items])


def rewrite_metadata(src: str | os.PathLike, dst: str | os.PathLike,
                     changes: Mapping[str, tuple | None]) -> None:
    """Copy ``src`` to ``dst`` with some metadata keys changed, added or removed.

    ``changes[key] = (type, value[, item_type])`` replaces the key in place (or
    appends it if new); ``None`` removes it. Untouched entries, tensor infos
    and tensor data are copied byte for byte.

    >>> rewrite_metadata("vocabs/ggml-vocab-qwen2.gguf", "/tmp/q.gguf",
    ...                  {"tokenizer.ggml.pre": (GGUFValueType.STRING, "qwen35")})  # doctest: +SKIP
    """
    r = GGUFReader(src)
    if r.n_tensors and Keys.General.ALIGNMENT in changes:
        raise HarnessError(f"rewrite_metadata: changing {Keys.General.ALIGNMENT} of {src} would move its "
                           "tensor data; rewrite a tensor-less file instead")
    chunks: list[bytes] = []
    for key in r:
        f = r.field(key)
        if key not in changes:
            chunks.append(r.raw(f.start, f.end))
        elif changes[key] is not None:
            chunks.append(_kv_bytes(key, changes[key]))
    chunks += [_kv_bytes(k, s) for k, s in changes.items() if s is not None and k not in r]
    n_kv = len(chunks)
    header = GGUF_MAGIC + struct.pack("<IQQ", r.version, r.n_tensors, n_kv)
    body = header + b"".join(chunks) + r.raw(r.kv_end, r.tensor_info_end)
    if r.n_tensors:
        body += b"\0" * (-len(body) % r.alignment)
    _atomic_write(dst, [body, r.data_section()])
    check = GGUFReader(dst)
    if check.n_kv != n_kv:
        raise GGUFFormatError("rewritten file does not read back", path=os.fspath(dst))


__all__ = ["write_gguf", "rewrite_metadata", "encode_value", "GGUF_DEFAULT_ALIGNMENT"]
