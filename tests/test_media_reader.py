"""Media decoding details that need no models: variable frame rate, sequences, bad files."""

import struct

import cv2
import numpy as np
import pytest

from facecache.media.frame_rate import frame_durations, is_variable_frame_rate
from facecache.media.reader import MediaError, MediaReader


def box(kind: bytes, payload: bytes) -> bytes:
    return struct.pack(">I4s", 8 + len(payload), kind) + payload


def mp4_with_durations(path, durations, handler=b"vide"):
    """A minimal MP4 box tree: moov/trak/mdia/{hdlr, minf/stbl/stts}."""
    stts = struct.pack(">II", 0, len(durations)) + b"".join(struct.pack(">II", 10, d) for d in durations)
    hdlr = struct.pack(">I", 0) + struct.pack(">I", 0) + handler + b"\0" * 12
    mdia = box(b"mdia", box(b"hdlr", hdlr) + box(b"minf", box(b"stbl", box(b"stts", stts))))
    path.write_bytes(box(b"ftyp", b"isom\0\0\0\0") + box(b"moov", box(b"trak", mdia)))
    return path


def test_variable_frame_rate_mp4_is_refused_with_the_fix(tmp_path):
    vfr = mp4_with_durations(tmp_path / "phone.mp4", [512, 1024, 512])
    assert frame_durations(vfr) == {512, 1024} and is_variable_frame_rate(vfr)
    with pytest.raises(MediaError, match="variable frame rate.*-vsync cfr"):
        MediaReader(vfr)
    cfr = mp4_with_durations(tmp_path / "cfr.mp4", [512])
    assert not is_variable_frame_rate(cfr)
    audio_only = mp4_with_durations(tmp_path / "audio.mp4", [1024, 512], handler=b"soun")
    assert frame_durations(audio_only) is None


def test_opencv_written_mp4_is_constant_rate(tmp_path):
    path = tmp_path / "clip.mp4"
    writer = cv2.VideoWriter(str(path), cv2.VideoWriter_fourcc(*"mp4v"), 25, (64, 48))
    for i in range(10):
        writer.write(np.full((48, 64, 3), i * 20, np.uint8))
    writer.release()
    assert len(frame_durations(path)) == 1
    with MediaReader(path) as reader:
        assert reader.info.frame_count == 10 and reader.info.fps == 25


def test_bad_files_and_folders_are_clear_errors(tmp_path):
    (tmp_path / "empty").mkdir()
    with pytest.raises(MediaError, match="holds no images"):
        MediaReader(tmp_path / "empty")
    (tmp_path / "x.png").write_bytes(b"not a png")
    with pytest.raises(MediaError, match="save it as PNG or JPEG"):
        MediaReader(tmp_path / "x.png")
    with pytest.raises(MediaError, match="check the path"):
        MediaReader(tmp_path / "missing.mov")
    cv2.imwrite(str(tmp_path / "one.png"), np.zeros((4, 4, 3), np.uint8))
    with MediaReader(tmp_path / "one.png") as reader, pytest.raises(MediaError, match="outside"):
        list(reader.frames([1]))
