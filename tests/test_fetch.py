"""Fetch integrity: the lock holds, bad copies never win, and nothing is lost.

The sources here are a fake "checkout" (``LLAMA_CPP_DIR``-style, built in
tmp_path from the verified vocabs) and a loopback HTTP server standing in for
GitHub, so every failure mode runs offline.
"""

from __future__ import annotations

import http.server
import shutil
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from harness.errors import IntegrityError, ReferenceUnavailable
from reference import fetch as F
from reference import lock as L
from reference.integrity import place_verified, sha256_file
from reference.paths import vocabs_dir
from reference.sources import GithubSource

SMALL = ("ggml-vocab-bert-bge.gguf.inp", "ggml-vocab-bert-bge.gguf.out", "ggml-vocab-llama-spm.gguf")


def small_lock() -> L.Lock:
    """The selected pin restricted to three small files (keeps the tests fast)."""
    full = L.load()
    return L.Lock(commit=full.commit, sdist=full.sdist, name=full.name, tree_sha256=full.tree_sha256,
                  files=tuple(f for f in full.files if f.name in SMALL))


@pytest.fixture(autouse=True)
def private_store(tmp_path, monkeypatch):
    """Each test gets its own content-addressed store: vocabs are hard links into it, and a
    test that flips a byte in place must not reach the shared cache."""
    store = tmp_path / "store"
    monkeypatch.setattr(F, "store_dir", lambda: store)
    return store


@pytest.fixture
def checkout(tmp_path) -> Path:
    """A fake llama.cpp checkout holding the verified small files under models/."""
    root = tmp_path / "llama.cpp"
    (root / "models").mkdir(parents=True)
    (root / "src").mkdir()
    (root / "src" / "llama-vocab.cpp").write_text("// fake\n")
    for name in SMALL:
        src = vocabs_dir() / name
        if not src.is_file():
            pytest.skip(f"{src} missing: run `make fetch`")
        shutil.copy(src, root / "models" / name)
    return root


def test_fetched_vocabs_match_the_lock():
    lock = L.load()
    assert [p.name for p in L.load_all()] == ["4df29be", "0c1e570"]
    assert L.load_all()[0].commit == "4df29be4f4c3673f428170fda944a5b19f743bb8"
    assert len(lock.vocab_names()) == 19
    assert sum(f.name.endswith((".inp", ".out")) for f in lock.files) == 30
    problems = F.verify()
    assert problems == [], "\n".join(problems)


def test_pin_selection_by_name_or_prefix(monkeypatch):
    from harness.errors import HarnessError

    monkeypatch.delenv("PIN", raising=False)
    assert L.load().name == "0c1e570", "the default is the newest pin"
    assert L.load(pin="4df29be4f4c3").name == "4df29be"
    assert L.load(pin="0c1e57098").key.startswith("0c1e57098-")
    monkeypatch.setenv("PIN", "4df29be")
    assert L.load().name == "4df29be"
    from reference.paths import vocabs_dir
    assert vocabs_dir().name == "4df29be"
    with pytest.raises(HarnessError, match="matches no pin.*4df29be"):
        L.load(pin="deadbeef")


def test_the_harness_behaviour_table_knows_every_pin():
    from harness.tokenizer import pins

    assert [name for name, _ in pins.PINS] == [p.name for p in L.load_all()]
    assert [commit for _, commit in pins.PINS] == [p.commit for p in L.load_all()]
    assert all(c.since in dict(pins.PINS) and c.source for c in pins.CHANGES)


def test_identical_files_across_pins_are_stored_once(tmp_path, checkout, private_store):
    a = small_lock()
    b = L.Lock(commit="1" * 40, sdist=None, files=a.files, name="1111111")
    F.fetch(llama_cpp_dir=str(checkout), dest=tmp_path / "a", lock=a)
    shutil.rmtree(checkout)  # the second pin must not need the source at all
    result = F.fetch(llama_cpp_dir=str(checkout), dest=tmp_path / "b", lock=b)
    assert sorted(result.linked) == sorted(SMALL) and result.fetched == []
    for name in SMALL:
        assert (tmp_path / "a" / name).stat().st_ino == (tmp_path / "b" / name).stat().st_ino
    assert len(list(private_store.iterdir())) == len({f.sha256 for f in a.files}) + 1  # + .lock


def test_corrupt_copy_is_named_even_when_the_source_then_fails(tmp_path, checkout, private_store):
    dest = tmp_path / "vocabs"
    F.fetch(llama_cpp_dir=str(checkout), dest=dest, lock=small_lock())
    victim = dest / "ggml-vocab-llama-spm.gguf"
    victim.unlink()  # break the hard link: the store entry stays good
    victim.write_bytes(b"garbage")
    bad_hash = sha256_file(victim)
    shutil.rmtree(private_store)
    shutil.rmtree(checkout)  # the source fails too
    with pytest.raises(Exception) as info:
        F.fetch(llama_cpp_dir=str(checkout), dest=dest, lock=small_lock())
    msg = str(info.value)
    expected = next(f for f in small_lock().files if f.name == victim.name).sha256
    aside = next(dest.glob("ggml-vocab-llama-spm.gguf.corrupt-*"))
    assert bad_hash in msg and expected in msg and str(aside) in msg
    assert "LLAMA_CPP_DIR" in msg, "the source's own failure is reported too"


def test_a_directory_at_a_vocab_path_is_one_clear_error(tmp_path, checkout):
    from harness.errors import HarnessError

    dest = tmp_path / "vocabs"
    (dest / "ggml-vocab-llama-spm.gguf").mkdir(parents=True)
    with pytest.raises(HarnessError, match=r"ggml-vocab-llama-spm.gguf is a directory, where a file belongs"):
        F.fetch(llama_cpp_dir=str(checkout), dest=dest, lock=small_lock())
    assert any("not a regular file" in p for p in F.verify(dest, small_lock()))


def test_a_corrupt_cached_sdist_is_replaced_and_reported_with_both_hashes(tmp_path, monkeypatch):
    from reference import sources

    good = b"a verified sdist"
    sdist = {"package": "llama-cpp-python", "version": "0.0.0", "filename": "x.tar.gz",
             "sha256": sha256_file_bytes(good), "tree": "x", "size": len(good)}
    monkeypatch.setenv("LLAMA_CONFORMANCE_CACHE", str(tmp_path / "cache"))
    cached = tmp_path / "cache" / "sdist" / "x.tar.gz"
    cached.parent.mkdir(parents=True)
    cached.write_bytes(b"a corrupt sdist!")
    bad_hash = sha256_file(cached)
    src = sources.SdistSource(L.Lock(commit="1" * 40, sdist=sdist, files=()))
    monkeypatch.setattr(src, "_download", lambda root, target, pinned: target.write_bytes(good))
    assert src.archive().read_bytes() == good
    [msg] = src.replaced
    assert bad_hash in msg and sdist["sha256"] in msg and "moved to" in msg
    assert list(cached.parent.glob("x.tar.gz.corrupt-*"))


def sha256_file_bytes(data: bytes) -> str:
    from reference.integrity import sha256_bytes

    return sha256_bytes(data)


def test_fetch_from_a_checkout_verifies_everything(tmp_path, checkout):
    dest = tmp_path / "vocabs"
    result = F.fetch(llama_cpp_dir=str(checkout), dest=dest, lock=small_lock())
    assert sorted(result.fetched) == sorted(SMALL)
    assert F.verify(dest, small_lock()) == []


def test_second_fetch_touches_no_source(tmp_path, checkout):
    dest = tmp_path / "vocabs"
    F.fetch(llama_cpp_dir=str(checkout), dest=dest, lock=small_lock())
    shutil.rmtree(checkout)  # any source access would now fail
    result = F.fetch(llama_cpp_dir=str(checkout), dest=dest, lock=small_lock())
    assert result.fetched == [] and sorted(result.kept) == sorted(SMALL)


def test_flipped_byte_is_named_kept_aside_and_replaced(tmp_path, checkout):
    dest = tmp_path / "vocabs"
    F.fetch(llama_cpp_dir=str(checkout), dest=dest, lock=small_lock())
    victim = dest / "ggml-vocab-llama-spm.gguf"
    data = bytearray(victim.read_bytes())
    data[1000] ^= 0x01
    victim.write_bytes(bytes(data))
    bad_hash = sha256_file(victim)
    with pytest.raises(IntegrityError) as info:
        F.fetch(llama_cpp_dir=str(checkout), dest=dest, lock=small_lock())
    msg = str(info.value)
    assert "ggml-vocab-llama-spm.gguf" in msg and bad_hash in msg
    expected = next(f for f in small_lock().files if f.name == victim.name).sha256
    assert expected in msg
    assert sha256_file(victim) == expected, "a verified copy must be in place"
    kept = list(dest.glob("ggml-vocab-llama-spm.gguf.corrupt-*"))
    assert len(kept) == 1 and kept[0].read_bytes() == bytes(data), "the bad copy is kept, not lost"
    F.fetch(llama_cpp_dir=str(checkout), dest=dest, lock=small_lock())  # refetch: clean


def test_bad_source_never_replaces_a_good_copy(tmp_path, checkout):
    pinned = next(f for f in small_lock().files if f.name == "ggml-vocab-bert-bge.gguf.inp")
    cache = tmp_path / "cache"
    cache.mkdir()
    target = cache / pinned.name
    shutil.copy(checkout / "models" / pinned.name, target)
    with pytest.raises(IntegrityError, match="corrupt"):
        place_verified(target, pinned, "test", lambda fh: fh.write(b"x" * pinned.size))
    assert sha256_file(target) == pinned.sha256
    assert [p.name for p in cache.iterdir()] == [pinned.name], "no temp file left behind"


class _Handler(http.server.SimpleHTTPRequestHandler):
    truncate = False

    def log_message(self, *args):
        pass

    def do_GET(self):
        path = Path(self.server.root) / self.path.lstrip("/").split("/", 1)[1]
        if not path.is_file():
            self.send_error(404)
            return
        body = path.read_bytes()
        if self.server.truncate:
            body = body[: len(body) // 2]
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


@pytest.fixture
def github(checkout):
    """A loopback server laid out like raw.githubusercontent.com/<commit>/<path>."""
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    server.root, server.truncate = str(checkout), False
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield server
    server.shutdown()


def test_github_source_downloads_and_verifies(tmp_path, github):
    src = GithubSource(small_lock(), base=f"http://127.0.0.1:{github.server_port}")
    src.put_many(list(small_lock().files), tmp_path / "vocabs")
    assert F.verify(tmp_path / "vocabs", small_lock()) == []


def test_truncated_download_is_an_error_naming_the_file(tmp_path, github):
    github.truncate = True
    pinned = next(f for f in small_lock().files if f.name == "ggml-vocab-llama-spm.gguf")
    src = GithubSource(small_lock(), base=f"http://127.0.0.1:{github.server_port}")
    dest = tmp_path / "vocabs"
    with pytest.raises(IntegrityError) as info:
        src.put(pinned, dest / pinned.name)
    assert "truncated" in str(info.value) and pinned.relpath in str(info.value)
    assert pinned.sha256 in str(info.value)
    assert list(dest.iterdir()) == [], "nothing placed, no temp file left"


def test_missing_file_on_server_is_reference_unavailable(tmp_path, github):
    lock = small_lock()
    ghost = L.Pinned("models/ggml-vocab-nope.gguf", "0" * 64, 1)
    src = GithubSource(lock, base=f"http://127.0.0.1:{github.server_port}")
    with pytest.raises(ReferenceUnavailable, match="HTTP 404"):
        src.put(ghost, tmp_path / ghost.name)


def test_concurrent_fetches_are_safe(tmp_path, checkout):
    """Two processes fetching into one empty directory at once both succeed."""
    dest = tmp_path / "vocabs"
    code = ("import sys; from pathlib import Path; from reference import lock as L; "
            "from reference.fetch import fetch; full = L.load(); "
            "lock = L.Lock(full.commit, full.sdist, tuple(f for f in full.files if f.name in sys.argv[4:])); "
            "fetch(llama_cpp_dir=sys.argv[1], dest=Path(sys.argv[2]), store=Path(sys.argv[3]), lock=lock)")
    root = Path(__file__).resolve().parent.parent
    store = tmp_path / "store"
    procs = [subprocess.Popen([sys.executable, "-c", code, str(checkout), str(dest), str(store), *SMALL],
                              cwd=root)
             for _ in range(3)]
    assert [p.wait(timeout=120) for p in procs] == [0, 0, 0]
    assert F.verify(dest, small_lock()) == []


def test_sdist_source_extracts_verified_files(tmp_path):
    from reference.paths import cache_dir
    from reference.sources import SdistSource

    lock = small_lock()
    archive = cache_dir() / "sdist" / lock.sdist["filename"]
    if not archive.is_file():
        pytest.skip(f"{archive} not cached: run `make fetch`")
    SdistSource(lock).put_many(list(lock.files), tmp_path / "vocabs")
    assert F.verify(tmp_path / "vocabs", lock) == []


def test_pin_reports_exactly_the_changed_files(tmp_path, checkout):
    from reference.pin import pin

    lock_path = tmp_path / "lock.json"
    shutil.copy(L.LOCK_PATH, lock_path)
    changed = checkout / "models" / "ggml-vocab-llama-spm.gguf"
    changed.write_bytes(changed.read_bytes() + b"\0")
    (checkout / "models" / "ggml-vocab-new.gguf").write_bytes(b"GGUF")
    new_commit = "1" * 40
    lines = pin(new_commit, "dir", llama_cpp_dir=str(checkout), path=lock_path)
    assert "~ models/ggml-vocab-llama-spm.gguf" in lines
    assert "+ models/ggml-vocab-new.gguf" in lines
    assert "- models/ggml-vocab-qwen2.gguf" in lines  # absent from the fake checkout
    assert "~ models/ggml-vocab-bert-bge.gguf.inp" not in lines
    new = L.load_all(lock_path)[-1]
    assert new.commit == new_commit and new.sdist is None, "the new pin is the newest, the default"
    assert [p.name for p in L.load_all(lock_path)][:2] == ["4df29be", "0c1e570"], "older pins stay"


def test_pin_sdist_scan_reproduces_the_lock():
    """The 0c1e570 pin's commit prefix and tree hash come out of the cached 0.3.36 sdist again."""
    from reference.paths import cache_dir
    from reference.pin import scan_sdist

    pin = L.load(pin="0c1e570")
    archive = cache_dir() / "sdist" / pin.sdist["filename"]
    if not archive.is_file():
        pytest.skip(f"{archive} not cached: run `make fetch PIN=0c1e570`")
    scan = scan_sdist(archive, pin.sdist["version"])
    assert (scan["commit"], scan["tree_sha256"], scan["tree"]) == (pin.commit, pin.tree_sha256, pin.sdist["tree"])
    assert L.files_of(scan["files"]) == pin.files


@pytest.mark.pins
def test_static_changes_between_the_pins():
    from reference.pin import static_changes
    from reference.sources import make_source

    a, b = L.load(pin="4df29be"), L.load(pin="0c1e570")
    trees = [make_source(p).tree() for p in (a, b)]  # both sdists (cached after make test-pins)
    ch = static_changes(a, trees[0], b, trees[1])
    assert ch["files"] == [] and ch["pre_types_added"] == ["HY_V4", "SPARK2_5", "UFAKZEKA"]
    assert ch["pre_names_added"] == ["glm5", "hy_v4", "spark2_5", "ufakzeka"] and ch["pre_names_removed"] == []
    assert sorted(ch["tokenizer_sources_changed"]) == ["src/llama-vocab.cpp", "src/llama-vocab.h", "src/unicode.cpp"]
    assert not ch["unicode_data_changed"]


def test_pin_refuses_a_branch_name(tmp_path):
    from harness.errors import HarnessError
    from reference.pin import pin

    with pytest.raises(HarnessError, match="40-hex"):
        pin("master", "github", path=tmp_path / "lock.json")
