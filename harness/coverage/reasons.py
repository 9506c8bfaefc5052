"""Why a line of llama.cpp's tokenizer code is left unreached by ``make coverage``.

Each uncovered line gets a reason: a line no input can reach, for a reason read off the
pin's code (:data:`WHY_UNREACHED`); a function nothing in the pin's ``src/`` calls; a line
holding only exception cleanup; an abort or throw path; or "no reason found", a finding to
aim at, never a default.

>>> uncovered_reason(["x;", "  GGML_ABORT(0);"], 2)
'abort/throw path: llama.cpp aborts or throws here, no case can pass through it'
"""

from __future__ import annotations

import re
from functools import lru_cache
from pathlib import Path

_ABORTS = re.compile(r"\b(GGML_ABORT|GGML_ASSERT|throw|abort)\b")
_BAD_UTF8 = ("invalid UTF-8: the port protocol's texts are str (always valid UTF-8), so llama.cpp's "
             "replacement path for invalid bytes takes no case")
# Lines no input can reach, each for a reason read off the pin's code (and re-checked when a
# pin moves: a pattern that no longer matches leaves its line as "no reason found").
# (function name prefix, source line regex, reason)
WHY_UNREACHED = (
    ("unicode_cpt_from_utf8(", r'throw std::invalid_argument\("(invalid character|failed to convert)', _BAD_UTF8),
    ("unicode_cpts_from_utf8(", r"catch \(const std::invalid_argument|\+\+offset;|emplace_back\(0xFFFD\)", _BAD_UTF8),
    ("llm_tokenizer_ugm_session::normalize_prefix(", r"catch \(std::invalid_argument|\\xEF\\xBF\\xBD", _BAD_UTF8),
    ("unicode_regex_split_custom_", r"^\s*_add_token\(\+\+pos\);",
     "the splitter's 'no matches' step: every in-range code point has a nonzero flag "
     "(unicode_ranges_flags covers U+0000..U+10FFFF, unassigned ones as UNDEFINED), so an earlier "
     "alternative always matches"),
    ("unicode_regex_split_custom_kimi_k2(", r"(?s)while \(_get_flags\(pos\)\.is_letter && !unicode_cpt_is_han.*\n\s*pos\+\+;$",
     "the first letter loop already consumed every non-Han letter, so the second loop's body "
     "(after 'Continue consuming letters') never runs"),
    ("unicode_regex_split_custom_kimi_k2(", r"(?s)else if \(has_leading_char\) \{\n.*\n\s*pos--;$",
     "is_letter_pattern holds only when a non-Han letter follows the optional leading char, so "
     "has_letters is always true and the backtrack never runs"),
    ("llm_tokenizer_spm_session::resegment(", r"^\s*resegment\(symbols\[p->second",
     "a merged SPM symbol's text is always a token (try_add_bigram queues only bigrams whose text is "
     "one), so resegment returns before it recurses"),
    ("llm_tokenizer_spm_session::try_add_bigram(", r"^\s*return;",
     "text_to_token never returns an id >= n_tokens"),
    ("llm_tokenizer_bpe_session::tokenize(", r"^\s*continue;",
     "symbols_final holds only symbols with n > 0, so the n == 0 skip never runs"),
    ("llm_tokenizer_wpm_session::tokenize(", r"^\s*continue;",
     "preprocess never returns an empty word"),
    ("llm_tokenizer_ugm_session::normalize(", r"(?s)if \(shall_append_space\) \{\n\s*normalized->append\(space\);$",
     "treat_whitespace_as_suffix: no GGUF key sets it at this pin (llama_vocab::impl::load leaves it "
     "false), so shall_append_space is never true"),
    ("llm_tokenizer_ugm_session::normalize_prefix(", r"return \{ &input\[input_offset\], 0, 0 \}",
     "normalize calls normalize_prefix only while input_offset < input.size()"),
    ("llm_tokenizer_rwkv_session::tokenize(", r"token_unk\(\)|position \+= 1;|^\s*continue;",
     "every RWKV world vocab has a token for each of the 256 bytes, so the trie always matches one"),
    ("unicode_regex_split(", r'fprintf\(stderr, "(Failed to process regex|Regex error)',
     "the catch of a regex std::regex cannot compile: every pre type's regexes compile (the derived "
     "vocabs load each of them)"),
    ("llama_vocab::tokenize(char const*", r"exceeds int32_t limit|numeric_limits<int32_t>::min",
     "a tokenization of 2^31 tokens: no text of a conformance run is that long"),
    ("llama_vocab::impl::token_to_piece(int, char*", r"exceeds int32_t limit",
     "a piece of 2^31 bytes: no vocab has one"),
)
_CLEANUP_ONLY = re.compile(r"^\s*(\}|\};|\{ .*\},?\s*(//.*)?)$")


@lru_cache(maxsize=4)
def _src_text(sources_dir: Path) -> str:
    """The pin's ``src/*.cpp``, read once per run."""
    return "\n".join(f.read_text(encoding="utf-8", errors="replace") for f in sorted((sources_dir / "src").glob("*.cpp")))


def _dead(function: str, sources_dir: Path | None) -> bool:
    """Whether ``function`` has no caller in the pin's ``src/``: its name followed by ``(``
    appears in the ``.cpp`` files only once (its definition; headers only declare it)."""
    if sources_dir is None:
        return False
    name = function.split("(")[0].split("[")[0].split("::")[-1]
    if not name:
        return False
    return len(re.findall(rf"\b{re.escape(name)}\s*\(", _src_text(Path(sources_dir)))) <= 1


def uncovered_reason(source: list[str], line: int, function: str = "", entered: bool = True,
                     sources_dir: Path | None = None) -> str:
    """Why an uncovered line (not explained by a missing vocab) is not reached: a line no
    input can reach, for a reason in :data:`WHY_UNREACHED`; a function nothing in the pin's
    ``src/`` calls; a line holding only exception cleanup; an abort or throw path (llama.cpp
    stops there: no conformance case can return through it); or none found (an input could
    still reach it: a finding to aim at).

    >>> uncovered_reason(["x;", "  GGML_ABORT(0);"], 2)
    'abort/throw path: llama.cpp aborts or throws here, no case can pass through it'
    >>> uncovered_reason(["int f() {", "  return g();", "}"], 3, "f()").split(":")[0]
    'exception cleanup only'
    """
    text = source[line - 1] if 0 < line <= len(source) else ""
    # a pattern with a newline sees the line and the two before it (its context), line last
    pair = "\n".join(source[max(0, line - 3):max(0, line - 1)] + [text])
    for prefix, pattern, reason in WHY_UNREACHED:
        if function.startswith(prefix) and (re.search(pattern, text) or
                                                       ("\\n" in pattern and re.search(pattern, pair))):
            return reason
    if function and not entered and _dead(function, sources_dir):
        return "dead code: nothing in the pin's src/ calls this function"
    if entered and _CLEANUP_ONLY.match(text):
        return ("exception cleanup only: at -O0 gcov puts the landing pad that destroys the locals (or an "
                "initializer list's temporaries) on this line; the normal path ran on the lines before it")
    if _ABORTS.search(text):
        return "abort/throw path: llama.cpp aborts or throws here, no case can pass through it"
    nxt = " ".join(source[line:line + 2])
    if _ABORTS.search(nxt) and (text.strip().endswith("{") or text.strip().startswith(("case ", "default:"))):
        return "guard of an abort/throw path"
    return "no reason found: no input of the run reached it"
