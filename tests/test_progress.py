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
