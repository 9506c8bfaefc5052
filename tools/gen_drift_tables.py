"""Generate harness/tokenizer/unicode/_drift_tables.py: where llama.cpp's Unicode view
differs from the ones ports run on.

llama.cpp classifies code points with its own tables (src/unicode-data.cpp,
Unicode 15.1 at the pin; harness.tokenizer.unicode mirrors them). A port classifies them
with its platform's tables: Python 3.11's ``unicodedata`` (14.0), the ``regex``
module (18.0 in its 2026.11 release), Java/ICU/Go/JavaScript regex classes, or a
``unicodedata2`` backport of any version. Every code point where the two views
disagree is a place a port can diverge without a bug in its own code.

Each class below is computed, never written by hand; the output stores code
point ranges per class, with the class's size in a comment.

Sources (``SOURCES``): ``py311`` (unicodedata and str methods of the running
Python, which must be 3.11: Unicode 14.0), ``regex`` (the regex module's \\p{..}
classes), ``ud15.0``, ``ud15.1``, ``ud16.0``, ``ud17.0``, ``ud18.0`` (unicodedata2 of that
version, pip-installed into a temporary directory: a generation-time dependency
only). Platform classes (``PLATFORM_CLASSES``) are defined by their documents:
- JavaScript (ECMA-262 §22.2.2.9 CharacterClassEscape, §12.2 WhiteSpace, §12.3
  LineTerminator): ``\\s`` = TAB VT FF SP NBSP ZWNBSP(U+FEFF) + every Zs + LF CR
  U+2028 U+2029; ``\\d`` = [0-9]; ``\\w`` = [A-Za-z0-9_] (also with the u flag).
- Java ``java.util.regex.Pattern`` (default flags): ``\\s`` = [ \\t\\n\\x0B\\f\\r],
  ``\\d`` = [0-9], ``\\w`` = [a-zA-Z_0-9]; ``Character.isWhitespace`` (what
  hand-written Java splitters call) = Zs/Zl/Zp except U+00A0 U+2007 U+202F,
  plus U+0009-000D and U+001C-001F.
- ICU regex (unicode-org.github.io/icu/userguide/strings/regexp.html):
  ``\\s`` = [\\t\\n\\f\\r\\p{Z}], ``\\d`` = \\p{Nd}, ``\\w`` =
  [\\p{Alphabetic}\\p{M}\\p{Nd}\\p{Pc}\\u200c\\u200d] (Alphabetic approximated by
  L + Nl, Unicode of the ``regex`` module).
- Go ``regexp`` (RE2 syntax): ``\\s`` = [\\t\\n\\f\\r ], ``\\d`` = [0-9],
  ``\\w`` = [0-9A-Za-z_].
- Python ``re``: ``\\s`` = str.isspace(), ``\\d`` = str.isdecimal() (Nd),
  ``\\w`` = str.isalnum() or '_'.
- ``regex`` module: its own ``\\s``, ``\\d``, ``\\w``, matched code point by code point.

llama.cpp's side of a platform class: ``\\s`` = its WHITESPACE flag (25 code
points), ``\\d`` = its NUMBER flag (what ``\\p{N}`` means to llama.cpp: a port
that writes \\d for \\p{N} gets the difference), ``\\w`` = LETTER | NUMBER | '_'.

Usage::

    python tools/gen_drift_tables.py            # write harness/tokenizer/unicode/_drift_tables.py
    python tools/gen_drift_tables.py --check    # exit 1 if the committed file is stale

>>> ranges([1, 2, 3, 7, 9, 10])
[(1, 3), (7, 7), (9, 10)]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
OUT = ROOT / "harness" / "tokenizer" / "unicode" / "_drift_tables.py"
UD2_VERSIONS = ("15.0.0", "15.1.0", "16.0.0", "17.0.0", "18.0.0")
N = 0x110000
SURROGATES = range(0xD800, 0xE000)

# General category (first letter) -> llama.cpp flag, as llama.cpp's scripts/gen-unicode-data.py
# maps them (Cn is UNDEFINED; Cc/Cf/Cs/Co are CONTROL).
_FLAG_OF = {"N": 0x02, "L": 0x04, "Z": 0x08, "M": 0x10, "P": 0x20, "S": 0x40, "C": 0x80}
UNDEFINED = 0x01

# Run in a subprocess against one unicodedata2 (or the stdlib unicodedata): one
# line of JSON with every code point's general category and NFD first code point.
_DUMP = r"""
import json, sys
try:
    import unicodedata2 as u
except ImportError:
    import unicodedata as u
cats, nfd = [], {}
for cp in range(0x110000):
    if 0xD800 <= cp < 0xE000:
        cats.append("Cs"); continue
    c = chr(cp)
    cats.append(u.category(c))
    d = u.normalize("NFD", c)
    if d != c:
        nfd[cp] = ord(d[0])
print(json.dumps({"version": u.unidata_version, "cats": "".join(cats), "nfd": nfd}))
"""


def ranges(cps) -> list[tuple[int, int]]:
    """Sorted code points -> inclusive (first, last) runs."""
    out: list[list[int]] = []
    for cp in sorted(cps):
        if out and out[-1][1] == cp - 1:
            out[-1][1] = cp
        else:
            out.append([cp, cp])
    return [tuple(r) for r in out]


def _dump(pythonpath: str | None) -> dict:
    env = {"PYTHONPATH": pythonpath} if pythonpath else {}
    out = subprocess.run([sys.executable, "-c", _DUMP], check=True, capture_output=True, text=True,
                         env={**__import__("os").environ, **env}).stdout
    data = json.loads(out)
    cats = data["cats"]
    data["cats"] = [cats[i:i + 2] for i in range(0, len(cats), 2)]
    data["nfd"] = {int(k): v for k, v in data["nfd"].items()}
    return data


def _unicodedata2(version: str, scratch: Path) -> dict:
    target = scratch / f"ud2-{version}"
    if not target.is_dir():
        subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--disable-pip-version-check",
                        "--target", str(target), f"unicodedata2=={version}"], check=True)
    return _dump(str(target))


def _flag(cat: str) -> int:
    return UNDEFINED if cat == "Cn" else _FLAG_OF[cat[0]]


def _regex_cats() -> list[str]:
    """The regex module's general category of every code point (its \\p{..} tables)."""
    import regex
    text = "".join(chr(c) for c in range(N) if c not in SURROGATES)
    cats = ["Cn"] * N
    for cp in SURROGATES:
        cats[cp] = "Cs"
    for cat in ("Lu Ll Lt Lm Lo Mn Mc Me Nd Nl No Pc Pd Ps Pe Pi Pf Po Sm Sc Sk So "
                "Zs Zl Zp Cc Cf Co").split():
        for m in regex.finditer(r"\p{%s}" % cat, text):
            cats[ord(m.group())] = cat
    return cats


def _category_classes(name: str, cats: list[str], llama_flags) -> dict[str, set[int]]:
    """Newer/older assignments and changed categories vs llama.cpp's flags, split by the
    category that matters to a splitter (``:L`` letter, ``:N``, ``:P``, ``:S``, ``:M``,
    ``:Z``, ``:C``): the platform's for ``assigned_only_in_*`` and ``category_*``,
    llama.cpp's for ``unassigned_in_*``. Drawing the class first gives every kind of
    change the same weight (a new punctuation mark is rarer than a new letter, and
    matters more)."""
    letter = {v: k for k, v in _FLAG_OF.items()}
    out: dict[str, set[int]] = {}
    for cp in range(N):
        if cp in SURROGATES:
            continue
        mine, theirs = int(llama_flags[cp]) & 0xFF, _flag(cats[cp])
        if mine == theirs:
            continue
        if mine == UNDEFINED:
            key = f"assigned_only_in_{name}:{cats[cp][0]}"
        elif theirs == UNDEFINED:
            key = f"unassigned_in_{name}:{letter.get(mine, '?')}"
        else:
            key = f"category_{name}:{cats[cp][0]}"
        out.setdefault(key, set()).add(cp)
    return out


def _nfd_class(name: str, nfd: dict[int, int], llama_nfd) -> dict[str, set[int]]:
    diff = {cp for cp in range(N) if cp not in SURROGATES and int(llama_nfd[cp]) != nfd.get(cp, cp)}
    return {f"nfd_{name}": diff}


def _case_classes(llama_lower) -> dict[str, set[int]]:
    """Simple lower/upper case maps: llama.cpp's tables vs Python 3.11's str methods."""
    from harness.tokenizer.unicode import T
    upper = dict(zip(T.UNICODE_MAP_UPPERCASE[0::2], T.UNICODE_MAP_UPPERCASE[1::2]))
    lower_diff, upper_diff = set(), set()
    for cp in range(N):
        if cp in SURROGATES:
            continue
        c = chr(cp)
        lo, up = c.lower(), c.upper()
        py_lo = ord(lo) if len(lo) == 1 else cp
        py_up = ord(up) if len(up) == 1 else cp
        if int(llama_lower[cp]) != py_lo:
            lower_diff.add(cp)
        if upper.get(cp, cp) != py_up:
            upper_diff.add(cp)
    return {"lowercase_py311": lower_diff, "uppercase_py311": upper_diff}


def _platform_sets(regex_cats: list[str]) -> dict[str, dict[str, set[int]]]:
    """Each platform's \\s, \\d and \\w as code point sets (see the module docstring)."""
    import regex
    ascii_digits = set(range(0x30, 0x3A))
    ascii_word = ascii_digits | set(range(0x41, 0x5B)) | set(range(0x61, 0x7B)) | {0x5F}
    zs = {cp for cp in range(N) if regex_cats[cp] == "Zs"}
    z = {cp for cp in range(N) if regex_cats[cp] in ("Zs", "Zl", "Zp")}
    nd = {cp for cp in range(N) if regex_cats[cp] == "Nd"}
    alpha_mark = {cp for cp in range(N) if regex_cats[cp][0] in "LM" or regex_cats[cp] == "Nl"}
    pc = {cp for cp in range(N) if regex_cats[cp] == "Pc"}
    chars = [(cp, chr(cp)) for cp in range(N) if cp not in SURROGATES]
    rx = {k: regex.compile(p) for k, p in (("s", r"\s"), ("d", r"\d"), ("w", r"\w"))}
    return {
        "js": {"s": {0x9, 0xB, 0xC, 0x20, 0xA0, 0xFEFF, 0xA, 0xD, 0x2028, 0x2029} | zs,
               "d": ascii_digits, "w": ascii_word},
        "java": {"s": {0x20, 0x9, 0xA, 0xB, 0xC, 0xD}, "d": ascii_digits, "w": ascii_word},
        "java_isWhitespace": {"s": (z - {0xA0, 0x2007, 0x202F}) | set(range(0x9, 0xE)) | set(range(0x1C, 0x20))},
        "icu": {"s": {0x9, 0xA, 0xC, 0xD} | z, "d": nd, "w": alpha_mark | nd | pc | {0x200C, 0x200D}},
        "go": {"s": {0x9, 0xA, 0xC, 0xD, 0x20}, "d": ascii_digits, "w": ascii_word},
        "python_re": {"s": {cp for cp, c in chars if c.isspace()},
                      "d": {cp for cp, c in chars if c.isdecimal()},
                      "w": {cp for cp, c in chars if c.isalnum() or c == "_"}},
        "regex": {k: {cp for cp, c in chars if p.match(c)} for k, p in rx.items()},
    }


def _llama_sets(flags) -> dict[str, set[int]]:
    s = {cp for cp in range(N) if flags[cp] & 0x100}
    d = {cp for cp in range(N) if flags[cp] & 0x02}
    w = {cp for cp in range(N) if flags[cp] & 0x06} | {0x5F}
    return {"s": s, "d": d, "w": w}


def compute(scratch: Path) -> tuple[dict[str, list[tuple[int, int]]], dict[str, str]]:
    """Every drift class as ranges, and the Unicode version of each source."""
    from harness.tokenizer.unicode import FLAGS, LOWER, NFD_FIRST
    if sys.version_info[:2] != (3, 11):
        raise SystemExit("run with Python 3.11: its unicodedata (Unicode 14.0) is the py311 source")
    classes: dict[str, set[int]] = {}
    versions = {}
    sources = {"py311": _dump(None)}
    for v in UD2_VERSIONS:
        sources[f"ud{v.rsplit('.', 1)[0]}"] = _unicodedata2(v, scratch)
    for name, data in sources.items():
        versions[name] = data["version"]
        classes.update(_category_classes(name, data["cats"], FLAGS))
        classes.update(_nfd_class(name, data["nfd"], NFD_FIRST))
    import regex
    regex_cats = _regex_cats()
    versions["regex"] = f"regex {regex.__version__}"
    classes.update(_category_classes("regex", regex_cats, FLAGS))
    classes.update(_case_classes(LOWER))
    llama = _llama_sets(FLAGS)
    for platform, sets in _platform_sets(regex_cats).items():
        for k, theirs in sets.items():
            classes[f"{platform}_{k}"] = (theirs ^ llama[k]) - set(SURROGATES)
    # ASCII-only \\w (Go, Java, JS) differs from llama.cpp's on every non-ASCII letter and
    # number: the script families draw those already, so the class is not stored.
    for name in ("go_w", "java_w", "js_w"):
        classes.pop(name)
    return _merge_equal({k: ranges(v) for k, v in sorted(classes.items()) if v}), versions


def _merge_equal(classes: dict[str, list]) -> dict[str, list]:
    """Classes with identical sets are stored once, named ``a=b=c``."""
    by_set: dict[tuple, list[str]] = {}
    for name, rs in classes.items():
        by_set.setdefault(tuple(rs), []).append(name)
    return {"=".join(names): list(rs) for rs, names in by_set.items()}


def render(classes: dict[str, list[tuple[int, int]]], versions: dict[str, str]) -> str:
    lines = ['"""Code points where llama.cpp\'s Unicode view differs from a platform\'s, per class.',
             "", "GENERATED by tools/gen_drift_tables.py -- do not edit; regenerate instead.",
             "Sources: " + ", ".join(f"{k}={v}" for k, v in versions.items()) + ".", '"""', "",
             f"VERSIONS = {versions!r}", "", "# class -> inclusive code point ranges (first, last)",
             "CLASSES = {"]
    for name, rs in classes.items():
        size = sum(b - a + 1 for a, b in rs)
        lines.append(f"    # {size} code points in {len(rs)} ranges")
        body = ", ".join(f"({a:#x}, {b:#x})" for a, b in rs)
        lines.append(f"    {name!r}: ({body},),")
    lines.append("}")
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--check", action="store_true", help="compare with the committed file only")
    ap.add_argument("--scratch", type=Path, default=Path(tempfile.gettempdir()) / "llama-conformance-drift",
                    help="where unicodedata2 versions are pip-installed (default: %(default)s)")
    args = ap.parse_args(argv)
    args.scratch.mkdir(parents=True, exist_ok=True)
    text = render(*compute(args.scratch))
    if args.check:
        if OUT.read_text(encoding="utf-8") != text:
            print(f"{OUT} is stale: run python tools/gen_drift_tables.py", file=sys.stderr)
            return 1
        return 0
    OUT.write_text(text, encoding="utf-8")
    print(f"wrote {OUT}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
