"""The footage corpus decoded by the engine on Windows CPython (3.11 and 3.13) under Wine, with the windows
zip's PyAV: every frame the same to the bit as on Linux, under both picture rules (which frame, rotation,
colours); tests/blender/test_blender_footage.py holds Linux's frames to Blender's own renders."""

from __future__ import annotations

import pytest

from facecache.fingerprint import frame_fingerprint
from facecache.media.picture_rules import RULES
from facecache.media.reader import MediaReader
from footage import CORPUS, write_clip
from windows_helpers import json_lines, run_inside
from wine import winpath

pytestmark = pytest.mark.windows


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    folder = tmp_path_factory.mktemp("footage")
    for filename, options in CORPUS.values():
        write_clip(folder / filename, **options)
    return folder


def test_windows_decodes_every_clip_as_linux_does(windows_python, corpus):
    decoded = json_lines(run_inside(windows_python, "footage_frames.py", winpath(corpus)), "clip")
    for clip in sorted(corpus.iterdir()):
        for name, rules in RULES.items():
            key = f"{clip.name}|{name}"
            assert key in decoded, decoded["_log"]
            assert "crashed" not in decoded[key], decoded[key]["crashed"]
            with MediaReader(clip, rules) as reader:
                frames = [frame_fingerprint(frame) for _, frame in reader.frames(range(reader.info.frame_count))]
                size = [reader.info.width, reader.info.height]
            assert decoded[key] == {"clip": key, "length": len(frames), "size": size, "frames": frames}, key
