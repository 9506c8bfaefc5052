"""Replays of two libstdc++ behaviours that decide llama.cpp's tokenizer output.

llama.cpp's load step depends on implementation details of the C++ standard
library it was built with (libstdc++ on Linux):

* ``cache_special_tokens`` is sorted with ``std::sort`` (introsort, unstable)
  by text length only, so the order of equal-length specials -- and so which of
  two overlapping specials wins in the partition -- is libstdc++'s;
* EOT/EOM/FIM auto-detection walks ``token_to_id``, a
  ``std::unordered_map<std::string, int>``, and the first matching text wins.

Both are replayed here exactly, and tested against the pinned libllama.

>>> libstdcxx_sort([0, 1, 2], [1, 3, 2])
[1, 2, 0]
"""

from __future__ import annotations

import numpy as np

from harness.errors import VocabError


# --- libstdc++ std::sort, replayed exactly --------------------------------------------------
# cache_special_tokens is sorted with std::sort (introsort: unstable), comparing text
# lengths only, so equal-length specials keep whatever order libstdc++ leaves them in --
# and that order decides which of two overlapping specials wins in tokenizer_st_partition.

_THRESHOLD = 16  # libstdc++ _S_threshold


def libstdcxx_sort(ids: list[int], lengths: list[int]) -> list[int]:
    """Sort ``ids`` by ``lengths[id]`` descending exactly as libstdc++'s ``std::sort`` does.

    >>> libstdcxx_sort([0, 1, 2], [1, 3, 2])
    [1, 2, 0]
    """
    a = list(ids)
    key = [lengths[i] for i in a]  # sort (key, id) pairs in lockstep; lengths: list or dict
    n = len(a)
    if n > 1:
        _introsort_loop(a, key, 0, n, 2 * (n.bit_length() - 1))
        _final_insertion_sort(a, key, 0, n)
    return a


def _swap(a, key, i, j):
    a[i], a[j] = a[j], a[i]
    key[i], key[j] = key[j], key[i]


def _introsort_loop(a, key, first, last, depth):
    # comp(x, y) == key[x] > key[y]  (longer first)
    while last - first > _THRESHOLD:
        if depth == 0:
            _heap_sort(a, key, first, last)
            return
        depth -= 1
        mid = first + (last - first) // 2
        _move_median_to_first(a, key, first, first + 1, mid, last - 1)
        cut = _unguarded_partition(a, key, first + 1, last, first)
        _introsort_loop(a, key, cut, last, depth)
        last = cut


def _move_median_to_first(a, key, result, x, y, z):
    kx, ky, kz = key[x], key[y], key[z]
    if kx > ky:
        if ky > kz:
            _swap(a, key, result, y)
        elif kx > kz:
            _swap(a, key, result, z)
        else:
            _swap(a, key, result, x)
    elif kx > kz:
        _swap(a, key, result, x)
    elif ky > kz:
        _swap(a, key, result, z)
    else:
        _swap(a, key, result, y)


def _unguarded_partition(a, key, first, last, pivot):
    kp = key[pivot]
    while True:
        while key[first] > kp:
            first += 1
        last -= 1
        while kp > key[last]:
            last -= 1
        if not first < last:
            return first
        _swap(a, key, first, last)
        first += 1


def _final_insertion_sort(a, key, first, last):
    if last - first > _THRESHOLD:
        _insertion_sort(a, key, first, first + _THRESHOLD)
        for i in range(first + _THRESHOLD, last):
            _unguarded_linear_insert(a, key, i)
    else:
        _insertion_sort(a, key, first, last)


def _insertion_sort(a, key, first, last):
    for i in range(first + 1, last):
        if key[i] > key[first]:
            v, k = a[i], key[i]
            a[first + 1:i + 1], key[first + 1:i + 1] = a[first:i], key[first:i]
            a[first], key[first] = v, k
        else:
            _unguarded_linear_insert(a, key, i)


def _unguarded_linear_insert(a, key, last):
    v, k = a[last], key[last]
    nxt = last - 1
    while k > key[nxt]:
        a[last], key[last] = a[nxt], key[nxt]
        last = nxt
        nxt -= 1
    a[last], key[last] = v, k


def _heap_sort(a, key, first, last):
    """std::__partial_sort(first, last, last): make_heap then sort_heap."""
    n = last - first
    for parent in range((n - 2) // 2, -1, -1):
        _adjust_heap(a, key, first, parent, n, a[first + parent], key[first + parent])
    while last - first > 1:
        last -= 1
        v, k = a[last], key[last]
        a[last], key[last] = a[first], key[first]
        _adjust_heap(a, key, first, 0, last - first, v, k)


def _adjust_heap(a, key, first, hole, n, v, k):
    top, child = hole, hole
    while child < (n - 1) // 2:
        child = 2 * (child + 1)
        if key[first + child] > key[first + child - 1]:
            child -= 1
        a[first + hole], key[first + hole] = a[first + child], key[first + child]
        hole = child
    if n % 2 == 0 and child == (n - 2) // 2:
        child = 2 * (child + 1)
        a[first + hole], key[first + hole] = a[first + child - 1], key[first + child - 1]
        hole = child - 1
    parent = (hole - 1) // 2
    while hole > top and key[first + parent] > k:
        a[first + hole], key[first + hole] = a[first + parent], key[first + parent]
        hole = parent
        parent = (hole - 1) // 2
    a[first + hole], key[first + hole] = v, k


# --- libstdc++ std::unordered_map<std::string, int> iteration order ---------------------------
# EOT/EOM/FIM auto-detection walks token_to_id (an unordered_map) and the first matching
# text wins. qwen2 has both <|im_end|> and <|endoftext|>; llama.cpp picks <|im_end|> only
# because of this order, so we replay it: std::hash (_Hash_bytes, murmur2-64A variant with
# seed 0xc70f6907), _Prime_rehash_policy (max load 1.0, growth x2, libstdc++'s prime list)
# and the singly linked node list the hashtable keeps.

_PRIMES = np.array([  # libstdc++ __prime_list entries below 2**25 (index 6 is the search start)
    2, 3, 5, 7, 11, 13, 17, 19, 23, 29, 31, 37, 41, 43, 47, 53, 59, 61, 67, 71, 73, 79, 83, 89, 97,
    103, 109, 113, 127, 137, 139, 149, 157, 167, 179, 193, 199, 211, 227, 241, 257, 277, 293, 313,
    337, 359, 383, 409, 439, 467, 503, 541, 577, 619, 661, 709, 761, 823, 887, 953, 1031, 1109, 1193,
    1289, 1381, 1493, 1613, 1741, 1879, 2029, 2179, 2357, 2549, 2753, 2971, 3209, 3469, 3739, 4027,
    4349, 4703, 5087, 5503, 5953, 6427, 6949, 7517, 8123, 8783, 9497, 10273, 11113, 12011, 12983,
    14033, 15173, 16411, 17749, 19183, 20753, 22447, 24281, 26267, 28411, 30727, 33223, 35933, 38873,
    42043, 45481, 49201, 53201, 57557, 62233, 67307, 72817, 78779, 85229, 92203, 99733, 107897,
    116731, 126271, 136607, 147793, 159871, 172933, 187091, 202409, 218971, 236897, 256279, 277261,
    299951, 324503, 351061, 379787, 410857, 444487, 480881, 520241, 562841, 608903, 658753, 712697,
    771049, 834181, 902483, 976369, 1056323, 1142821, 1236397, 1337629, 1447153, 1565659, 1693859,
    1832561, 1982627, 2144977, 2320627, 2510653, 2716249, 2938679, 3179303, 3439651, 3721303,
    4026031, 4355707, 4712381, 5098259, 5515729, 5967347, 6456007, 6984629, 7556579, 8175383,
    8844859, 9569143, 10352717, 11200489, 12117689, 13109983, 14183539, 15345007, 16601593,
    17961079, 19431899, 21023161, 22744717, 24607243, 26622317, 28802401, 31160981, 33712729],
    np.int64)
_FAST_BKT = (2, 2, 2, 3, 5, 5, 7, 7, 11, 11, 11, 11, 13, 13)
_MUL = np.uint64(0xC6A4A7935BD1E995)


def std_hash(keys: list[bytes]) -> np.ndarray:
    """``std::hash<std::string>`` (libstdc++ ``_Hash_bytes``, 64-bit) of every key, vectorised.

    >>> std_hash([b"a", b"hello world"]).shape
    (2,)
    """
    n = len(keys)
    lens = np.fromiter(map(len, keys), np.int64, n)
    offs = np.zeros(n, np.int64)
    np.cumsum(lens[:-1], out=offs[1:])
    return hash_spans(b"".join(keys), offs, lens)


def hash_spans(region: bytes, offs: np.ndarray, lens: np.ndarray) -> np.ndarray:
    """:func:`std_hash` of the strings ``region[offs[i]:offs[i]+lens[i]]``."""
    n = len(lens)
    raw = np.frombuffer(region + b"\0" * 8, np.uint8)
    # unaligned little-endian u64 at every byte offset (a strided view, no copy)
    u64 = np.ndarray(shape=(len(raw) - 7,), dtype="<u8", buffer=raw, strides=(1,))
    by_blocks = np.argsort(-(lens // 8), kind="stable")  # keys with most 8-byte blocks first
    nblk_sorted = (lens // 8)[by_blocks]
    offs_sorted = offs[by_blocks]
    with np.errstate(over="ignore"):
        h = np.uint64(0xC70F6907) ^ (lens[by_blocks].astype(np.uint64) * _MUL)
        for k in range(int(nblk_sorted[0]) if n else 0):
            active = int(np.searchsorted(-nblk_sorted, -k, side="left"))  # count with nblk > k
            d = u64[offs_sorted[:active] + 8 * k] * _MUL
            d = (d ^ (d >> np.uint64(47))) * _MUL
            h[:active] = (h[:active] ^ d) * _MUL
        rem = (lens & 7)[by_blocks]
        m = rem != 0
        mask = (np.uint64(1) << (8 * rem[m]).astype(np.uint64)) - np.uint64(1)
        tail = u64[offs_sorted[m] + 8 * nblk_sorted[m]] & mask
        h[m] = (h[m] ^ tail) * _MUL
        h = (h ^ (h >> np.uint64(47))) * _MUL
        h ^= h >> np.uint64(47)
    out = np.empty(n, np.uint64)
    out[by_blocks] = h
    return out


def _next_bkt(n: int) -> int:
    if n < len(_FAST_BKT):
        return _FAST_BKT[n]
    i = int(np.searchsorted(_PRIMES[6:], n)) + 6
    if i >= len(_PRIMES):
        raise VocabError(f"{n} buckets: vocab too large for the unordered_map order emulation")
    return int(_PRIMES[i])


def unordered_map_order(keys: list[bytes] | np.ndarray, wanted: set[int]) -> dict[int, int]:
    """Iteration rank of each id in ``wanted`` after ``m[keys[i]] = i`` for all i, in order.

    ``keys`` may also be the precomputed :func:`std_hash` values.

    >>> sorted(unordered_map_order([b"a", b"b", b"c"], {0, 1, 2}).items())
    [(0, 2), (1, 1), (2, 0)]
    """
    n = len(keys)
    h = keys if isinstance(keys, np.ndarray) else std_hash(keys)
    order = np.zeros(0, np.int64)  # list order right after the last rehash
    n_bkt, next_resize, epoch_start, i = 1, 0, 0, 0
    while i < n:
        if i + 1 > next_resize:  # _M_need_rehash(n_bkt, i, 1)
            min_bkts = max(i + 1, 0 if next_resize else 11)
            if min_bkts >= n_bkt:
                order = _end_of_epoch(order, h, n_bkt, np.arange(epoch_start, i))
                n_bkt = _next_bkt(max(min_bkts + 1, n_bkt * 2))
                next_resize = n_bkt
                order = _rehash(order, h, n_bkt)
                epoch_start = i
            else:
                next_resize = n_bkt
        # no rehash until the element count passes next_resize: jump there
        i = max(i + 1, min(n, next_resize))
    order = _end_of_epoch(order, h, n_bkt, np.arange(epoch_start, n))
    pos = np.empty(n, np.int64)
    pos[order] = np.arange(n)
    return {w: int(pos[w]) for w in wanted}


def _rehash(order: np.ndarray, h: np.ndarray, n_bkt: int) -> np.ndarray:
    """_M_rehash_aux: walk the old list; a node whose bucket is new goes to the list front,
    else to the front of its bucket's group."""
    if not len(order):
        return order
    b = (h[order] % np.uint64(n_bkt)).astype(np.int64)
    pos = np.arange(len(order))
    first_of = _first_position(b, n_bkt)
    return order[_order_by(-first_of[b], -pos)]


def _end_of_epoch(order: np.ndarray, h: np.ndarray, n_bkt: int, inserted: np.ndarray) -> np.ndarray:
    """_M_insert_bucket_begin for each inserted id since the rehash: into an occupied bucket
    -> front of its group; into an empty one -> a new group at the list front."""
    if not len(inserted):
        return order
    nb = np.uint64(n_bkt)
    bo = (h[order] % nb).astype(np.int64)
    bi = (h[inserted] % nb).astype(np.int64)
    group = _first_position(bo, n_bkt)  # existing groups keep their place in the list
    t = np.arange(1, len(inserted) + 1)
    fresh = group[bi] == _EMPTY
    first_t = np.full(n_bkt, _EMPTY, np.int64)
    np.minimum.at(first_t, bi[fresh], t[fresh])  # a fresh group sits where its first node went
    group[bi[fresh]] = -first_t[bi[fresh]]
    ids = np.concatenate((order, inserted))
    return ids[_order_by(np.concatenate((group[bo], group[bi])),
                         np.concatenate((np.arange(len(bo)), -t)))]


_EMPTY = np.iinfo(np.int64).max


def _first_position(b: np.ndarray, n_bkt: int) -> np.ndarray:
    """Index of the first occurrence of each bucket in ``b`` (``_EMPTY`` if absent)."""
    first = np.full(n_bkt, _EMPTY, np.int64)
    np.minimum.at(first, b, np.arange(len(b)))
    return first


def _order_by(major: np.ndarray, minor: np.ndarray) -> np.ndarray:
    """argsort by (major, minor); both are distinct-enough ints in [-n, n]."""
    n = len(major) + 1
    return np.argsort((major + n) * (2 * n + 1) + (minor + n))
