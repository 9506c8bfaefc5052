"""llama.cpp in process: the fast oracle.

libllama is loaded once per process through a tiny compiled shim
(``reference/shim.cpp``) that exports only scalars and pointers, so no
llama.cpp struct layout is copied into Python. Each vocab is loaded once per
process with ``vocab_only``.

>>> from reference.vocabs import vocab_path                 # doctest: +SKIP
>>> ref = InProcessReference.load(vocab_path("qwen2"))      # doctest: +SKIP
>>> ref.encode("Hello world", add_special=False, parse_special=False)  # doctest: +SKIP
[9707, 1879]
"""

from __future__ import annotations

import ctypes
import threading
from pathlib import Path

from harness.errors import ReferenceFailure, ReferenceUnavailable

from .build import artifacts, require

_LIB = None
_LIB_LOCK = threading.Lock()
_INSTANCES: dict[str, "InProcessReference"] = {}
# llama.cpp's std::regex path (pre types without a hand-written splitter) recurses per
# character: a long text overflows the default 8 MiB stack and kills the process. Texts
# above this size are tokenized on a thread with BIG_STACK bytes of stack.
BIG_STACK_ABOVE = 8 * 1024
BIG_STACK = 512 * 1024 * 1024
_STACK_LOCK = threading.Lock()


def _on_big_stack(fn, *args):
    """``fn(*args)`` on a fresh thread with a :data:`BIG_STACK` stack; its result or exception.

    >>> _on_big_stack(sum, [1, 2])
    3
    """
    box: dict = {}

    def run():
        try:
            box["ok"] = fn(*args)
        except BaseException as e:  # re-raised on the caller's thread
            box["err"] = e
    with _STACK_LOCK:  # threading.stack_size is process-wide: set it, start, restore
        old = threading.stack_size(BIG_STACK)
        try:
            t = threading.Thread(target=run, name="llama-big-stack")
            t.start()
        finally:
            threading.stack_size(old)
    t.join()
    if "err" in box:
        raise box["err"]
    return box["ok"]


def _declare(lib: ctypes.CDLL) -> None:
    c = ctypes
    sigs = {
        "ref_init": (None, []),
        "ref_take_log": (c.c_char_p, []),
        "ref_last_error": (c.c_char_p, []),
        "ref_exception_code": (c.c_int32, []),
        "ref_load_vocab_only": (c.c_void_p, [c.c_char_p]),
        "ref_free": (None, [c.c_void_p]),
        "ref_vocab": (c.c_void_p, [c.c_void_p]),
        "ref_n_vocab": (c.c_int32, [c.c_void_p]),
        "ref_add_bos": (c.c_int, [c.c_void_p]),
        "ref_add_eos": (c.c_int, [c.c_void_p]),
        "ref_tokenize": (c.c_int32, [c.c_void_p, c.c_char_p, c.c_int32, c.POINTER(c.c_int32),
                                     c.c_int32, c.c_int, c.c_int]),
        "ref_detokenize": (c.c_int32, [c.c_void_p, c.POINTER(c.c_int32), c.c_int32,
                                       c.c_char_p, c.c_int32, c.c_int, c.c_int]),
        "ref_token_to_piece": (c.c_int32, [c.c_void_p, c.c_int32, c.c_char_p, c.c_int32,
                                           c.c_int32, c.c_int]),
        "ref_detokenize_cxx": (c.c_int32, [c.c_void_p, c.POINTER(c.c_int32), c.c_int32,
                                           c.c_char_p, c.c_int32, c.c_int]),
        "ref_cached_piece": (c.c_int32, [c.c_void_p, c.c_int32, c.c_char_p, c.c_int32]),
    }
    for name, (restype, argtypes) in sigs.items():
        fn = getattr(lib, name)
        fn.restype, fn.argtypes = restype, argtypes


def library() -> ctypes.CDLL:
    """The shim over libllama, loaded and initialised once per process."""
    global _LIB
    with _LIB_LOCK:
        if _LIB is None:
            lib = load_shim(require(artifacts().shim), _declare)
            lib.ref_init()
            _LIB = lib
        return _LIB


def load_shim(path: Path, declare) -> ctypes.CDLL:
    """A shim library at ``path``, its functions typed by ``declare(lib)``; ReferenceUnavailable
    naming the file and the fix if it cannot be loaded."""
    try:
        lib = ctypes.CDLL(str(path))
    except OSError as e:
        raise ReferenceUnavailable(f"cannot load {path}: {e}; rebuild with `make reference`") from e
    declare(lib)
    return lib


class InProcessReference:
    """llama.cpp's own tokenizer for one vocab, called through libllama."""

    name = "llama.cpp"

    def __init__(self, path: Path):
        self.path = Path(path)
        self._lib = library()
        self._exception = self._lib.ref_exception_code()
        self._lib.ref_take_log()
        self._model = self._lib.ref_load_vocab_only(str(self.path).encode())
        if not self._model:
            log = self._lib.ref_take_log().decode(errors="replace")
            err = self._lib.ref_last_error().decode(errors="replace")
            raise ReferenceFailure(f"llama.cpp could not load {self.path} (vocab_only). {err}", stderr=log)
        self._vocab = self._lib.ref_vocab(self._model)
        self.n_vocab = int(self._lib.ref_n_vocab(self._vocab))
        self.add_bos = bool(self._lib.ref_add_bos(self._vocab))
        self.add_eos = bool(self._lib.ref_add_eos(self._vocab))
        self._call_lock = threading.Lock()
        self._pieces: tuple[dict, dict] = ({}, {})  # token_to_piece by id: special false, true

    @classmethod
    def load(cls, path: Path | str) -> "InProcessReference":
        """One instance per vocab file per process."""
        key = str(Path(path).resolve())
        if key not in _INSTANCES:
            _INSTANCES[key] = cls(Path(path))
        return _INSTANCES[key]

    @property
    def handle(self) -> int:
        """The ``const llama_vocab *`` as an int, for calling other libllama getters
        (``llama_vocab_get_attr`` and friends) with explicitly declared signatures."""
        return self._vocab

    @property
    def model_handle(self) -> int:
        """The ``llama_model *`` (vocab_only) as an int: the chat shim renders the vocab's own
        template and tokenizes the prompt through it (:mod:`reference.chat`)."""
        return self._model

    def close(self) -> None:
        """Free the model (instances from ``load`` are shared: do not close those)."""
        if self._model:
            self._lib.ref_free(self._model)
            self._model = self._vocab = None

    def _failed(self, what: str) -> ReferenceFailure:
        err = self._lib.ref_last_error().decode(errors="replace")
        log = self._lib.ref_take_log().decode(errors="replace")
        return ReferenceFailure(f"llama.cpp {what} threw on {self.path.name}: {err}", stderr=log)

    def encode(self, text: str | bytes, add_special: bool = False, parse_special: bool = False) -> list[int]:
        """``llama_tokenize``; retries with a bigger buffer on a negative size."""
        data = text.encode("utf-8") if isinstance(text, str) else bytes(text)
        if len(data) > BIG_STACK_ABOVE:
            return _on_big_stack(self._encode, data, add_special, parse_special)
        return self._encode(data, add_special, parse_special)

    def _encode(self, data: bytes, add_special: bool, parse_special: bool) -> list[int]:
        # common_tokenize's first guess (llama.cpp's own tools): a text with more tokens
        # than that takes llama_tokenize's "buffer too small" answer and a second call.
        cap = len(data) + 2 * int(add_special)
        with self._call_lock:
            for _ in range(3):
                buf = (ctypes.c_int32 * cap)()
                n = self._lib.ref_tokenize(self._vocab, data, len(data), buf, cap,
                                           int(add_special), int(parse_special))
                if n == self._exception:
                    raise self._failed("llama_tokenize")
                if n >= 0:
                    return list(buf[:n])
                if n == -(2 ** 31):
                    raise ReferenceFailure("llama_tokenize overflowed int32")
                cap = -n
        raise ReferenceFailure(f"llama_tokenize kept asking for a bigger buffer on {self.path.name}")

    def decode(self, ids, remove_special: bool = False, unparse_special: bool = False) -> bytes:
        """``llama_detokenize``; bytes, lossless (may be invalid UTF-8)."""
        ids = list(ids)
        arr = (ctypes.c_int32 * max(len(ids), 1))(*ids)
        return self._sized("llama_detokenize", 16 + 8 * len(ids), lambda buf, cap: self._lib.ref_detokenize(
            self._vocab, arr, len(ids), buf, cap, int(remove_special), int(unparse_special)), extra=1)

    def decode_cxx(self, ids, special: bool = False) -> bytes:
        """``llama_vocab::detokenize(tokens, special)``, the C++ overload llama.cpp's own
        samplers call (remove_special false, its own resize loop)."""
        ids = list(ids)
        arr = (ctypes.c_int32 * max(len(ids), 1))(*ids)
        return self._sized("llama_vocab::detokenize", 256, lambda buf, cap: self._lib.ref_detokenize_cxx(
            self._vocab, arr, len(ids), buf, cap, int(special)))

    def token_to_piece(self, id: int, special: bool = False) -> bytes:
        """``llama_token_to_piece`` with lstrip=0, asked once per id and flag: the vocab does not
        change once loaded, and a run asks for a piece in its check, its diagnoses and decodes."""
        memo = self._pieces[bool(special)]
        piece = memo.get(id)
        if piece is None:
            self._check_id(id)
            piece = memo[id] = self._sized("llama_token_to_piece", 64, lambda buf, cap: self._lib.ref_token_to_piece(
                self._vocab, id, buf, cap, 0, int(special)))
        return piece

    def cached_piece(self, id: int) -> bytes:
        """``llama_vocab::token_to_piece(token)``: the piece cached at load (the grammar's)."""
        self._check_id(id)
        return self._sized("llama_vocab::token_to_piece", 64, lambda buf, cap: self._lib.ref_cached_piece(
            self._vocab, id, buf, cap))

    def _check_id(self, id: int) -> None:
        if not 0 <= id < self.n_vocab:
            # llama.cpp indexes its tables unchecked here; refuse instead of crashing the process.
            raise ReferenceFailure(f"token id {id} out of range [0, {self.n_vocab}) for {self.path.name}")

    def _sized(self, what: str, cap: int, call, extra: int = 0) -> bytes:
        """``call(buf, cap)`` into a buffer, grown to the size a negative answer asks (+ ``extra``)."""
        with self._call_lock:
            for _ in range(3):
                buf = ctypes.create_string_buffer(cap)
                n = call(buf, cap)
                if n == self._exception:
                    raise self._failed(what)
                if n >= 0:
                    return buf.raw[:n]
                cap = -n + extra
        raise ReferenceFailure(f"{what} kept asking for a bigger buffer on {self.path.name}")


def load_reference(path: Path | str) -> InProcessReference:
    """The oracle for one vocab file: llama.cpp in process, loaded once per process.

    It answers the calls every port answers (keyword flags, bytes out):
    ``encode(text, add_special=, parse_special=)``, ``decode(ids, remove_special=,
    unparse_special=)``, ``token_to_piece(id, special=)`` and ``n_vocab``.
    """
    return InProcessReference.load(path)
