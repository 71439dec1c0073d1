"""Run by Windows Python under Wine (tests/windows/test_windows_footage.py): each clip of a folder decoded by
the engine with the windows zip's wheels (PyAV included), under both picture rules; prints one JSON object a
clip and rules: its length, size and every frame's fingerprint.

Usage: python.exe footage_frames.py FOLDER
"""

from __future__ import annotations

import json
import sys
import traceback
from pathlib import Path

from facecache.fingerprint import frame_fingerprint
from facecache.media.picture_rules import RULES
from facecache.media.reader import MediaReader

for clip in sorted(Path(sys.argv[1]).iterdir()):
    for name, rules in RULES.items():
        try:
            with MediaReader(clip, rules) as reader:
                frames = [frame_fingerprint(frame) for _, frame in reader.frames(range(reader.info.frame_count))]
                found = {"length": reader.info.frame_count, "size": [reader.info.width, reader.info.height],
                         "frames": frames}
        except Exception:  # the test shows what happened
            found = {"crashed": traceback.format_exc()}
        print(json.dumps({"clip": f"{clip.name}|{name}", **found}), flush=True)
