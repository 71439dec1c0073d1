"""The farm benchmark's chunk-size rule (scripts/farm_bench.py; the benchmark itself runs by hand)."""

import importlib.util
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[1] / "scripts" / "farm_bench.py"


def load():
    spec = importlib.util.spec_from_file_location("farm_bench", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_recommended_chunk_keeps_the_overhead_under_a_tenth_in_whole_segments():
    bench = load()
    # 4 s of overhead, 0.1 s a frame: 360 frames of work make the overhead a tenth -> 384 (6 segments)
    assert bench.recommended_chunk(4.0, 0.1) == 384
    assert 4.0 / (4.0 + 384 * 0.1) <= 0.1 < 4.0 / (4.0 + 320 * 0.1)
    assert bench.recommended_chunk(0.5, 1.0) == 64  # never less than one segment
    assert bench.recommended_chunk(6.4, 0.1) == 576  # exactly a tenth at 576 frames
