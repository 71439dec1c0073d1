"""Input is bounded before it is decoded: an image's size is read from its header and refused beyond
the pixel limit (exit 2, one line naming the file and its size) in `analyze`, `swap` and the worker;
a stream whose container declares no frame count is counted by decoding; `--frames 5-` runs to the
last frame; `models import` refuses a file larger than its model can be before reading it."""

from __future__ import annotations

import io
import json
import struct
import zlib
from pathlib import Path

import cv2
import numpy as np
import pytest

from facecache.cli import main
from facecache.cli.common import parse_frame_range
from facecache.analysis.analyzer import checked_range
from facecache.media.image_size import MAX_PIXELS, image_size
from facecache.media.reader import MediaReader
from facecache.worker import main as worker_main


def png_declaring(width: int, height: int) -> bytes:
    """A small PNG whose header declares `width` x `height` (its one row of data does not fill it)."""
    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))
    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(b"\0" * 64))
            + chunk(b"IEND", b""))


def declaring(kind: str, width: int, height: int) -> bytes:
    """Headers of each still format, declaring a size, with no real pixels behind them."""
    if kind == "png":
        return png_declaring(width, height)
    if kind == "jpg":
        app0 = b"\xff\xe0" + struct.pack(">H", 16) + b"JFIF\0\x01\x01\0\0\x01\0\x01\0\0"
        sof = b"\xff\xc0" + struct.pack(">HBHHB", 11, 8, height, width, 1) + b"\x01\x11\x00"
        return b"\xff\xd8" + app0 + sof + b"\xff\xd9"
    if kind == "bmp":
        return b"BM" + struct.pack("<IHHI", 54, 0, 0, 54) + struct.pack("<IiiHHIIiiII", 40, width, -height, 1, 24,
                                                                          0, 0, 0, 0, 0, 0)
    if kind == "tif":
        entries = [(256, 4, 1, width), (257, 4, 1, height)]
        ifd = struct.pack("<H", len(entries)) + b"".join(struct.pack("<HHII", *e) for e in entries) + b"\0" * 4
        return b"II*\x00" + struct.pack("<I", 8) + ifd
    if kind == "webp":
        vp8x = b"VP8X" + struct.pack("<I", 10) + b"\0\0\0\0" + (width - 1).to_bytes(3, "little") \
            + (height - 1).to_bytes(3, "little")
        return b"RIFF" + struct.pack("<I", 4 + len(vp8x)) + b"WEBP" + vp8x
    raise ValueError(kind)


FORMATS = ["png", "jpg", "bmp", "tif", "webp"]


@pytest.mark.parametrize("kind", FORMATS)
def test_the_header_size_of_every_still_format_is_what_opencv_decodes(tmp_path, kind):
    image = np.random.default_rng(1).integers(0, 255, (37, 53, 3), np.uint8)
    path = tmp_path / f"real.{kind}"
    params = [cv2.IMWRITE_WEBP_QUALITY, 101] if kind == "webp" else []  # 101: lossless (VP8L)
    assert cv2.imwrite(str(path), image, params)
    with open(path, "rb") as handle:
        assert image_size(handle) == (53, 37)
    assert MediaReader(path).info.width == 53


@pytest.mark.parametrize("kind", FORMATS)
@pytest.mark.parametrize("size", [(65535, 65535), (16000, 16000), (8193, 8192)])
def test_a_still_over_the_pixel_limit_is_refused_before_decoding(tmp_path, capsys, kind, size):
    assert size[0] * size[1] > MAX_PIXELS
    bomb = tmp_path / f"bomb.{kind}"
    bomb.write_bytes(declaring(kind, *size))
    with open(bomb, "rb") as handle:
        assert image_size(handle) == size
    for command in (["analyze", bomb], ["swap", "--source", bomb, "--target", bomb, "--out", tmp_path / "out"]):
        code = main([str(a) for a in command + ["--cache-dir", tmp_path / "cache", "--models-dir", tmp_path]])
        (line,) = capsys.readouterr().err.strip().splitlines()
        assert code == 2, line
        assert str(bomb) in line and f"{size[0]} x {size[1]} pixels" in line and "scale it down" in line


def test_the_worker_refuses_a_pixel_bomb_as_bad_input(tmp_path):
    bomb = tmp_path / "bomb.png"
    bomb.write_bytes(png_declaring(65535, 65535))
    out = io.StringIO()
    job = {"kind": "analyze", "settings": {"cache_dir": str(tmp_path / "c")},
           "items": [{"media": str(bomb), "start": 0, "stop": 1}]}
    assert worker_main([], io.StringIO(json.dumps(job) + "\n"), out) == 2
    answer = json.loads(out.getvalue())
    assert answer["exit_code"] == 2 and "65535 x 65535 pixels" in answer["message"]


def test_truncated_and_unknown_images_are_one_line_errors(tmp_path, capsys):
    for name, data in (("cut.png", png_declaring(64, 64)[:20]), ("cut.jpg", b"\xff\xd8\xff\xe0\x00"),
                       ("text.png", b"hello"), ("empty.jpg", b"")):
        (tmp_path / name).write_bytes(data)
        assert main(["analyze", str(tmp_path / name), "--cache-dir", str(tmp_path / "cache")]) == 2
        (line,) = capsys.readouterr().err.strip().splitlines()
        assert name in line and "save it as PNG or JPEG" in line


def raw_mjpeg(path: Path, frames: int) -> Path:
    """A raw MJPEG stream: JPEG frames one after another, in no container (so no frame count)."""
    data = b""
    for index in range(frames):
        image = np.full((120, 160, 3), 40 * index, np.uint8)
        data += cv2.imencode(".jpg", image)[1].tobytes()
    path.write_bytes(data)
    return path


def test_a_stream_without_a_frame_count_is_counted_by_decoding(tmp_path):
    stream = raw_mjpeg(tmp_path / "raw.mjpeg", 6)
    with MediaReader(stream) as reader:
        assert reader.info.frame_count == 6
        levels = [int(frame.mean() + 0.5) for _, frame in reader.frames([0, 3, 5])]
        again = [int(frame.mean() + 0.5) for _, frame in reader.frames([1, 2])]  # back: read from the start again
    assert levels == [0, 120, 200] and again == [40, 80]


def test_an_open_frame_range_runs_to_the_last_frame():
    assert checked_range(parse_frame_range("3-"), 6, "clip.mp4") == range(3, 6)
    assert checked_range(parse_frame_range("5"), 6, "clip.mp4") == range(5, 6)
    assert checked_range(parse_frame_range("0-5"), 6, "clip.mp4") == range(0, 6)
    with pytest.raises(Exception, match="outside"):
        checked_range(parse_frame_range("9-"), 6, "clip.mp4")


@pytest.mark.index
def test_analyze_counts_a_raw_stream_and_runs_an_open_range_to_its_end(tmp_path, models_dir, capsys):
    stream = raw_mjpeg(tmp_path / "raw.mjpeg", 6)
    code = main(["analyze", str(stream), "--frames", "2-", "--cache-dir", str(tmp_path / "cache"),
                 "--models-dir", str(models_dir), "--json"])
    assert code == 0
    lines = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [line["frame"] for line in lines[:-1]] == [2, 3, 4, 5] and lines[-1]["frames"] == 4


def test_models_import_refuses_a_file_too_large_for_its_model_before_reading_it(tmp_path, capsys):
    folder = tmp_path / "facefusion" / ".assets" / "models"
    folder.mkdir(parents=True)
    with open(folder / "scrfd_2.5g.onnx", "wb") as handle:
        handle.truncate(8 * 1024**3)  # 8 GiB named like a model (sparse: no disk used)
    code = main(["models", "import", str(tmp_path / "facefusion"), "--models-dir", str(tmp_path / "models")])
    captured = capsys.readouterr()
    assert code == 1, captured.err
    assert "scrfd_2.5g.onnx" in captured.out + captured.err and "MB at most" in captured.out + captured.err
    assert "Traceback" not in captured.err and "MemoryError" not in captured.err
