"""A GGUF file as the fuzzer edits it: header fields, metadata records, tensor infos.

Records stay typed (``(type, value[, item_type])`` as :mod:`harness.tokenizer.gguf.writer`
takes them) until a mutation breaks one; then it holds raw bytes. Header counts
may be overridden to lie about the records that follow.

>>> d = Doc([KV(b"general.name", (T.STRING, "x"))])
>>> d.to_bytes()[:4], len(d.to_bytes())
(b'GGUF', 57)
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, field

from harness.tokenizer.gguf.keys import GGUFValueType as T
from harness.tokenizer.gguf.writer import encode_value


def pack_str(s: bytes) -> bytes:
    """A GGUF string: u64 length, then the bytes."""
    return struct.pack("<Q", len(s)) + s


@dataclass
class KV:
    """One metadata record; ``raw`` (type tag + value bytes) replaces ``spec`` once malformed."""

    key: bytes
    spec: tuple | None
    raw: bytes | None = None

    def payload(self) -> bytes:
        if self.raw is not None:
            return self.raw
        return encode_value(self.key.decode("utf-8", "surrogateescape"), self.spec)


def tensor_info(name: bytes, ne: list[int], ggml_type: int, offset: int) -> bytes:
    """One tensor-info record (values wrap to their field widths, as hostile files do)."""
    return (pack_str(name) + struct.pack("<I", len(ne) & 0xFFFFFFFF)
            + b"".join(struct.pack("<Q", x & (2**64 - 1)) for x in ne)
            + struct.pack("<I", ggml_type & 0xFFFFFFFF) + struct.pack("<Q", offset & (2**64 - 1)))


@dataclass
class Doc:
    kvs: list[KV]
    tensors: list[bytes] = field(default_factory=list)
    data: bytes = b""
    version: int = 3
    magic: bytes = b"GGUF"
    n_kv: int | None = None
    n_tensors: int | None = None
    alignment: int = 32

    def find(self, key: bytes) -> KV | None:
        return next((kv for kv in self.kvs if kv.key == key), None)

    def set(self, key: bytes, spec: tuple) -> None:
        kv = self.find(key)
        if kv is None:
            self.kvs.append(KV(key, spec))
        else:
            kv.spec, kv.raw = spec, None

    def remove(self, key: bytes) -> None:
        self.kvs = [kv for kv in self.kvs if kv.key != key]

    def to_bytes(self) -> bytes:
        n_tensors = len(self.tensors) if self.n_tensors is None else self.n_tensors
        n_kv = len(self.kvs) if self.n_kv is None else self.n_kv
        body = bytearray(self.magic + struct.pack("<IQQ", self.version & 0xFFFFFFFF,
                                                  n_tensors & (2**64 - 1), n_kv & (2**64 - 1)))
        for kv in self.kvs:
            body += pack_str(kv.key) + kv.payload()
        for t in self.tensors:
            body += t
        if self.tensors:
            body += b"\0" * (-len(body) % self.alignment)
        return bytes(body + self.data)

    def copy(self) -> "Doc":
        return Doc([KV(kv.key, kv.spec, kv.raw) for kv in self.kvs], list(self.tensors), self.data,
                   self.version, self.magic, self.n_kv, self.n_tensors, self.alignment)
