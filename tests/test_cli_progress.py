"""Progress off a terminal while a step is quiet: its last line comes again, so a render farm (Flamenco
cancels a task silent for 10 minutes) never takes a task waiting for another node's claim for a hung one."""

import io
import time

from facecache.progress import ProgressLine


def test_a_quiet_step_repeats_its_last_line_until_it_finishes():
    out = io.StringIO()
    progress = ProgressLine("clip.mp4", stream=out, interval=5.0, heartbeat=0.05)
    progress(3, 400, "3 written, 0 up to date")  # then nothing for a while (another node holds a claim)
    time.sleep(0.4)
    beats = out.getvalue().splitlines()
    assert len(beats) >= 3 and all(line.startswith("clip.mp4: 3/400 frames 3 written") for line in beats)
    progress(400, 400)
    assert out.getvalue().splitlines()[-1].startswith("clip.mp4: 400/400 frames")
    finished = out.getvalue()
    time.sleep(0.2)
    assert out.getvalue() == finished  # the heartbeat stops with the step
