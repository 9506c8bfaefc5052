"""Progress of long reference work: the build percentage from the build's own lines."""

from __future__ import annotations

import io
import sys

from reference import progress


def test_build_percentages_reach_the_log_and_the_meter(tmp_path):
    script = "".join(f"print('[{p:3d}%] Building CXX object f{p}.o')\n" for p in range(0, 101, 5))
    out, log = io.StringIO(), io.StringIO()
    meter = progress.Meter("reference: build", out, estimate_s=300.0, step=25)
    assert progress.run_logged([sys.executable, "-c", script], log, meter) == 0
    assert log.getvalue().count("Building CXX") == 21  # every line still in the log
    shown = [line.split()[2] for line in out.getvalue().splitlines()]
    assert shown == ["25%", "50%", "75%", "100%"]
    assert "left by the last build" in out.getvalue()


def test_a_failing_step_returns_its_code():
    assert progress.run_logged([sys.executable, "-c", "raise SystemExit(3)"], io.StringIO()) == 3


def test_last_build_duration_round_trips(tmp_path):
    path = tmp_path / "last-build.json"
    assert progress.last_duration(path) is None
    progress.record_duration(path, 312.34)
    assert progress.last_duration(path) == 312.3
    path.write_text("garbage")
    assert progress.last_duration(path) is None


def test_bytes_without_a_known_size_print_every_10_mb():
    out = io.StringIO()
    m = progress.ByteMeter("x", 0, out)
    for done in range(0, 25_000_001, 1_000_000):
        m.bytes(done)
    assert out.getvalue().splitlines() == ["x: 10.0 MB", "x: 20.0 MB"]


def test_build_shows_percentages_and_records_its_duration(tmp_path, monkeypatch, capsys):
    """reference.build with stand-in cmake and c++ (printing CMake's progress lines)."""
    import os
    import textwrap

    from reference import build

    bindir = tmp_path / "fakebin"
    bindir.mkdir()
    (bindir / "cmake").write_text(textwrap.dedent("""\
        #!/bin/sh
        if [ "$1" = "--build" ]; then
          for p in 10 40 70 100; do echo "[ $p%] Building CXX object f$p.o"; done
          mkdir -p "$2/bin" && touch "$2/bin/llama-tokenize" "$2/bin/libllama.so"
        fi
        """))
    (bindir / "c++").write_text('#!/bin/sh\nfor a; do case "$prev" in -o) touch "$a";; esac; prev="$a"; done\n'
                                'echo "c++ (fake) 1.0"\n')
    for f in bindir.iterdir():
        f.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bindir}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv("LLAMA_CONFORMANCE_CACHE", str(tmp_path / "cache"))
    monkeypatch.delenv("LLAMA_CONFORMANCE_BUILD", raising=False)
    arts = build.build(tmp_path / "src")
    err = capsys.readouterr().err
    assert [line.split()[2] for line in err.splitlines() if line.startswith("reference: build:")] == \
        ["10%", "40%", "70%", "100%"]
    assert "Building CXX object f40.o" in (arts.build_dir / "build.log").read_text()
    assert progress.last_duration(tmp_path / "cache" / "build" / "last-build.json") is not None
    # The next build (another key) quotes the last one's duration.
    monkeypatch.setattr(build, "CMAKE_OPTIONS", build.CMAKE_OPTIONS + (("X", "1"),))
    build.build(tmp_path / "src")
    assert "the last build took" in capsys.readouterr().err
