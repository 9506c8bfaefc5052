"""What llama.cpp's tokenizer does differently at each pin: one small, explicit table.

The harness tokenizer follows the pin of the vocab's reference, the pin ``$PIN``
selects (the newest by default, as for every make target). It does not copy
modules per pin: each tokenizer-visible change between two pins is one
:class:`Change` below, named after the llama.cpp source change it comes from,
and the code asks ``has("<change>")`` where the behaviour forks.

Adding a pin (``make pin``): append it to ``PINS`` (oldest first, as in
``reference/lock.json``), then for every change ``make pin`` reports in the
tokenizer sources add a ``Change`` here and a branch where it applies.
``make pin-diff`` then shows every id that moved, and ``make conformance PIN=...``
on both pins proves the table.

>>> has("tilde_is_symbol", "4df29be"), has("tilde_is_symbol", "0c1e570")
(False, True)
>>> resolve("0c1e57098")
'0c1e570'
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from harness.errors import HarnessError

# (name, llama.cpp commit as the lock records it), oldest first. The last is the default.
PINS: tuple[tuple[str, str], ...] = (
    ("4df29be", "4df29be4f4c3673f428170fda944a5b19f743bb8"),
    ("0c1e570", "0c1e57098"),
)


@dataclass(frozen=True)
class Change:
    name: str
    since: str  # the first pin that has it
    source: str  # the llama.cpp change it comes from


CHANGES: tuple[Change, ...] = (
    Change("pre_types_hy_v4_spark2_5_ufakzeka", "0c1e570",
           "src/llama-vocab.h: LLAMA_VOCAB_PRE_TYPE_HY_V4 = 57, SPARK2_5 = 58, UFAKZEKA = 59; "
           "src/llama-vocab.cpp: pre strings 'hy_v4', 'spark2_5', 'ufakzeka' (clean_spaces = false); "
           "HY_V4 shares DEEPSEEK3_LLM's regexes, SPARK2_5 and UFAKZEKA bring their own"),
    Change("glm4_ignore_merges", "0c1e570",
           "src/llama-vocab.cpp: 'glm4' leaves the 'chatglm-bpe' branch for a new one with 'glm5': "
           "still CHATGLM4 with special_bos_id = NULL, plus ignore_merges = true"),
    Change("int32_scores", "0c1e570",
           "src/llama-vocab.cpp load: tokenizer.ggml.scores may be an INT32 array (cast to float); "
           "before, anything but FLOAT32 threw 'invalid gguf type'"),
    Change("tilde_is_symbol", "0c1e570",
           "src/unicode.cpp unicode_regex_split: '~' (0x7E) joins the ASCII members of \\p{S} on the "
           "collapsed std::regex path (k_ucat_map), so '~' now matches \\p{S} in non-custom regexes"),
    Change("plamo_eos_keeps_s_normal", "0c1e570",
           "src/llama-vocab.cpp load: an EOG '<|plamo:eos|>' now also makes '</s>' a NORMAL, "
           "non-EOG token (before, only '<|tool_response>' did)"),
    Change("vocab_type_test", "0c1e570",
           "src/llama-vocab.cpp: tokenizer.ggml.model 'test' (LLAMA_VOCAB_TYPE_TEST, 5-byte "
           "hash chunks, a test-only tokenizer); before, 'unknown tokenizer'"),
    Change("architectures_0c1e570", "0c1e570",
           "src/llama-arch.cpp / llama-model.cpp: architectures bailingmoe3, dots3note, glm5-next, "
           "granite_swa, hrm_text, hy_v4, maple, qwen4exp, spark2_5 load"),
)
_BY_NAME = {c.name: c for c in CHANGES}
_ORDER = [name for name, _ in PINS]


def resolve(wanted: str | None = None) -> str:
    """A pin name from ``wanted`` (a name or commit prefix), else ``$PIN``, else the newest."""
    wanted = (wanted if wanted is not None else os.environ.get("PIN", "")).strip().lower()
    if not wanted:
        return _ORDER[-1]
    hits = [n for n, commit in PINS
            if wanted == n or (len(wanted) >= 4 and (commit.startswith(wanted) or wanted.startswith(commit)))]
    if len(hits) == 1:
        return hits[0]
    raise HarnessError(f"PIN={wanted!r} names no pin the harness tokenizer knows "
                       f"({', '.join(_ORDER)}); a new pin needs its entry in harness/tokenizer/pins.py")


def has(change: str, pin: str | None = None) -> bool:
    """True when llama.cpp at ``pin`` (default: the selected one) behaves as ``change`` says."""
    c = _BY_NAME[change]
    return _ORDER.index(resolve(pin)) >= _ORDER.index(c.since)


def current() -> str:
    """The selected pin's name (``$PIN``, newest by default)."""
    return resolve()
