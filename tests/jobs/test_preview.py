"""The preview session: one frame at a time, as the playhead moves, with nothing redone."""

import cv2
import numpy as np
import pytest

from facecache.jobs.preview import PreviewSession
from facecache.media.reader import MediaReader
from facecache.swap.composite import CompositeParams

from test_video_jobs import make_job, write_clip

pytestmark = pytest.mark.index


def test_preview_renders_the_same_frames_as_a_job_and_reuses_everything(tmp_path, models_dir, portrait_paths,
                                                                        portraits, monkeypatch):
    clip = write_clip(tmp_path / "clip.mp4", portraits["astronaut"], 80)
    make_job(tmp_path, models_dir, portrait_paths["grace_hopper"]).run(clip, tmp_path / "job", frames=range(60, 80))

    job = make_job(tmp_path, models_dir, portrait_paths["grace_hopper"])
    with PreviewSession(job, clip, tmp_path / "preview") as session:
        paths = [session.render(i) for i in (60, 61, 62, 70, 5)]
    # Frame 5 was detected by the job: tracking detects a segment's frames in order, from its first
    # (FaceAnalyzer.frames), so frames 0-59 were detected with 60-63.
    assert job.analyzer.inferences.detect == 0
    for path in paths[:4]:  # made from the cache without decoding: the job's decoded frames' bytes
        assert path.read_bytes() == (tmp_path / "job" / "clip" / path.name).read_bytes()

    job = make_job(tmp_path, models_dir, portrait_paths["grace_hopper"], CompositeParams(mask_blur=0.6))
    reads = []
    real = MediaReader._decoded
    monkeypatch.setattr(MediaReader, "_decoded", lambda self, i: reads.append(i) or real(self, i))
    with PreviewSession(job, clip, tmp_path / "preview") as session:
        for index in range(60, 66):
            session.render(index)
        again = session.render(63)
    # every face came from the cache with its colour transfer: nothing to run, nothing to decode
    assert job.analyzer.inferences.total == 0 and reads == []
    assert cv2.imread(str(again), cv2.IMREAD_UNCHANGED).shape == (240, 320, 4)
