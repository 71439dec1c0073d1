"""The movie benchmark on a few small frames: every figure is there and each movie holds what it was given
(counts and bytes only; timings belong to `facecache bench movie`, not to tests)."""

import json

from facecache.bench import movie_bench
from facecache.cli import build_parser


def test_every_figure_is_reported_for_both_encoders():
    result = movie_bench.run(frames=3, size=(320, 240))
    for codec in ("h264", "prores"):
        assert {f"{codec}_ms_per_frame", f"{codec}_cpu_ms_per_frame", f"{codec}_bytes_per_frame"} <= set(result)
        assert result[f"{codec}_bytes_per_frame"] > 0
    assert result["h264_encoder"] == "libx264" and result["prores_encoder"] in ("prores_ks", "prores")
    assert result["prores_bytes_per_frame"] > result["h264_bytes_per_frame"]  # an intermediate codec: larger
    assert result["png_bytes"] > 0 and result["frames"] == 3 and result["size"] == "320x240"
    assert json.loads(json.dumps(result)) == result


def test_the_suite_is_offered_by_the_bench_command():
    args = build_parser().parse_args(["bench", "movie", "--frames", "4", "--size", "640x360"])
    assert (args.suite, args.frames, args.size) == ("movie", 4, (640, 360))
