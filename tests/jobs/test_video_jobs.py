"""Video jobs: frame-accurate decoding, image sequences, progress, cancel, SIGKILL
and resume, truncated files. Real MTCNN and the classic swapper on small clips."""

import json
import os
import signal
import struct
import subprocess
import sys
import threading
import time
from pathlib import Path

import av
import cv2
import numpy as np
import pytest

from facecache.analysis.analyzer import FaceAnalyzer
from facecache.analysis.factory import build_model_set
from facecache.errors import FaceCacheError
from facecache.jobs.manifest import OutputManifest
from facecache.jobs.swap_job import SwapJob
from facecache.media.identity import media_identity
from facecache.media.movie import stream_tags
from facecache.media.reader import MediaReader, decoder_id_for
from facecache.models.runtime import SessionFactory
from facecache.models.store import ModelStore
from facecache.protocol import INFERENCES
from facecache.store.cache import FaceCache
from facecache.swap.composite import CompositeParams
from facecache.swap.factory import build_swapper
from facecache.swap.sources import SourceSet

pytestmark = pytest.mark.index  # real weights and portraits come from the package index


def write_clip(path, portrait, frames, size=(320, 240), fourcc="mp4v"):
    """The portrait sliding across a noisy background; every frame differs."""
    width, height = size
    face = cv2.resize(portrait, (height, height))
    noise = np.random.default_rng(0).integers(0, 255, (height, width * 2, 3), dtype=np.uint8)
    writer = cv2.VideoWriter(str(path), cv2.VideoWriter_fourcc(*fourcc), 25, size)
    for i in range(frames):
        frame = noise[:, i % width:i % width + width].copy()
        x = i % (width - height)
        frame[:, x:x + height] = face
        writer.write(frame)
    writer.release()
    return path


def make_job(tmp_path, models_dir, source, composite=CompositeParams()):
    models = ModelStore(models_dir)
    analyzer = FaceAnalyzer(FaceCache(tmp_path / "cache"), build_model_set(models, SessionFactory("cpu")))
    sources = SourceSet.load([source], analyzer)
    return SwapJob(analyzer, build_swapper("classic", sources, models, SessionFactory("cpu")), sources,
                   composite=composite)


def mp4_sync_samples(path) -> int:
    """Number of keyframes in an MP4, from its 'stss' box (absent: every frame is a keyframe)."""
    data = Path(path).read_bytes()
    at = data.find(b"stss")
    return -1 if at < 0 else struct.unpack(">I", data[at + 8:at + 12])[0]


def test_seeking_gives_the_same_frames_as_sequential_reading(tmp_path, portraits):
    clip = write_clip(tmp_path / "gop.mp4", portraits["astronaut"], 90)
    assert 1 < mp4_sync_samples(clip) < 90  # keyframes exist and the GOP is longer than 1
    with MediaReader(clip) as reader:
        sequential = [frame.copy() for _, frame in reader.frames(range(90))]
    order = np.random.default_rng(1).permutation(90)
    with MediaReader(clip) as reader:
        for index in order:
            ((_, frame),) = reader.frames([int(index)])
            assert np.array_equal(frame, sequential[index]), index


def test_image_sequence_is_a_target(tmp_path, models_dir, portrait_paths, portraits):
    folder = tmp_path / "shot"
    folder.mkdir()
    for i in (1, 2, 10):  # natural order: 1, 2, 10
        cv2.imwrite(str(folder / f"frame{i}.png"), np.roll(portraits["astronaut"], i, axis=1))
    job = make_job(tmp_path, models_dir, portrait_paths["grace_hopper"])
    report = job.run(folder, tmp_path / "out")
    assert report.written == 3
    with MediaReader(folder) as reader:
        assert np.array_equal(next(reader.frames([2]))[1], np.roll(portraits["astronaut"], 10, axis=1))
    assert sorted(p.name for p in (tmp_path / "out" / "shot").glob("*.png")) == ["000000.png", "000001.png", "000002.png"]
    again = make_job(tmp_path, models_dir, portrait_paths["grace_hopper"]).run(folder, tmp_path / "out")
    assert again.skipped == 3 and again.written == 0


def test_progress_reports_counts_rate_and_eta(tmp_path, models_dir, portrait_paths, portraits):
    clip = write_clip(tmp_path / "clip.mp4", portraits["astronaut"], 70)
    seen = []
    make_job(tmp_path, models_dir, portrait_paths["grace_hopper"]).run(clip, tmp_path / "out", progress=seen.append)
    assert [p.done for p in seen] == sorted(p.done for p in seen)
    assert seen[-1].done == seen[-1].total == 70 and seen[-1].written == 70
    assert all(p.frames_per_second > 0 for p in seen if p.done)
    assert seen[-1].eta_seconds == 0
    warm = []
    make_job(tmp_path, models_dir, portrait_paths["grace_hopper"]).run(clip, tmp_path / "out", progress=warm.append)
    assert warm[-1].skipped == 70 and warm[-1].written == 0


def test_cancel_keeps_finished_frames_and_a_rerun_continues(tmp_path, models_dir, portrait_paths, portraits):
    clip = write_clip(tmp_path / "clip.mp4", portraits["astronaut"], 40)
    cancel = threading.Event()
    job = make_job(tmp_path, models_dir, portrait_paths["grace_hopper"])
    report = job.run(clip, tmp_path / "out", cancel=cancel,
                     progress=lambda p: p.done >= 10 and cancel.set())
    assert report.cancelled and 10 <= report.written < 40
    finished = report.written
    rerun = make_job(tmp_path, models_dir, portrait_paths["grace_hopper"])
    report = rerun.run(clip, tmp_path / "out")
    assert report.skipped == finished and report.written == 40 - finished
    assert rerun.analyzer.inferences.detect == 40 - finished  # finished frames are not analysed again


def test_sigkill_mid_run_then_rerun_completes_with_identical_outputs(tmp_path, models_dir, portrait_paths, portraits):
    clip = write_clip(tmp_path / "clip.mp4", portraits["astronaut"], 150)
    command = [sys.executable, "-m", "facecache", "swap", "--source", str(portrait_paths["grace_hopper"]),
               "--target", str(clip), "--cache-dir", str(tmp_path / "cache"), "--models-dir", str(models_dir),
               "--providers", "cpu", "--json"]
    # its output unread: to the null device, so no full pipe can stall it while the test waits below
    child = subprocess.Popen(command + ["--out", str(tmp_path / "killed")], stdout=subprocess.DEVNULL,
                             stderr=subprocess.DEVNULL)
    outputs = tmp_path / "killed" / "clip"
    # past the first 64-frame segment, however long that takes; a child that ends first fails the check below
    while len(list(outputs.glob("*.png"))) < 70 and child.poll() is None:
        time.sleep(0.05)
    child.send_signal(signal.SIGKILL)
    child.wait()
    assert 0 < len(list(outputs.glob("*.png"))) < 150, "the job should have been killed mid-run"

    subprocess.run(command + ["--out", str(tmp_path / "killed")], check=True, capture_output=True)
    subprocess.run(command + ["--out", str(tmp_path / "clean"), "--cache-dir", str(tmp_path / "clean-cache")],
                   check=True, capture_output=True)
    killed = sorted(outputs.glob("*.png"))
    clean = sorted((tmp_path / "clean" / "clip").glob("*.png"))
    assert [p.name for p in killed] == [p.name for p in clean] == [f"{i:06d}.png" for i in range(150)]
    for a, b in zip(killed, clean):
        assert a.read_bytes() == b.read_bytes(), a.name
    assert not [p for p in outputs.iterdir() if ".tmp-" in p.name]
    assert FaceCache(tmp_path / "cache").verify(temp_grace_seconds=0).clean


def test_two_chunks_racing_on_one_frame_write_what_one_run_writes(tmp_path, models_dir, portrait_paths, portraits):
    """Two farm chunks whose ranges share frame 40, started at the same moment on one cache and one outputs folder
    (issue 36: not reached before): both end well, and the outputs are a single run's, byte for byte, with
    nothing half-written left and every frame current in the manifest, and each frame detected once between them.
    The source portrait is analysed first here: each chunk analyses it when it is not yet cached (one detection,
    not claimed), so two chunks starting together may both do it (that was the 82 detections against 81 seen)."""
    clip = write_clip(tmp_path / "clip.mp4", portraits["astronaut"], 80)
    command = [sys.executable, "-m", "facecache", "swap", "--source", str(portrait_paths["grace_hopper"]),
               "--target", str(clip), "--models-dir", str(models_dir), "--providers", "cpu", "--json"]
    shared = ["--cache-dir", str(tmp_path / "cache"), "--out", str(tmp_path / "farm")]
    onto_the_source_itself = [*command[:command.index("--target") + 1], str(portrait_paths["grace_hopper"]),
                              *command[command.index("--target") + 2:]]
    subprocess.run(onto_the_source_itself + ["--cache-dir", str(tmp_path / "cache"), "--out", str(tmp_path / "warm")],
                   check=True, capture_output=True)  # the source's analysis cached first
    chunks = [subprocess.Popen(command + shared + ["--frames", frames], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
              for frames in ("0-40", "40-79")]
    answers = [chunk.communicate(timeout=600) for chunk in chunks]
    assert [chunk.returncode for chunk in chunks] == [0, 0], [err.decode()[-400:] for _, err in answers]
    runs = [json.loads(out)[INFERENCES] for out, _ in answers]
    assert sum(run["detect"] for run in runs) == 80, runs
    assert sum(run["swap"] for run in runs) == 80, runs
    subprocess.run(command + ["--cache-dir", str(tmp_path / "clean-cache"), "--out", str(tmp_path / "clean")],
                   check=True, capture_output=True)
    farm, clean = sorted((tmp_path / "farm" / "clip").glob("*.png")), sorted((tmp_path / "clean" / "clip").glob("*.png"))
    assert [p.name for p in farm] == [p.name for p in clean] == [f"{i:06d}.png" for i in range(80)]
    assert all(a.read_bytes() == b.read_bytes() for a, b in zip(farm, clean))
    assert not [p for p in (tmp_path / "farm" / "clip").iterdir() if ".tmp-" in p.name]
    again = subprocess.run(command + shared, check=True, capture_output=True)
    assert json.loads(again.stdout)["written"] == 0  # the manifest holds every frame as current
    assert FaceCache(tmp_path / "cache").verify(temp_grace_seconds=0).clean


def test_truncated_video_keeps_the_good_frames_and_says_so(tmp_path, models_dir, portrait_paths, portraits):
    # An MP4 whose index comes first (a camera's or a "fast start" export): its length is declared before the
    # data, so the cut shows. (A cut AVI is simply shorter: FFmpeg, and so Blender, count what is left.)
    whole = write_clip(tmp_path / "whole.avi", portraits["astronaut"], 50, fourcc="MJPG")
    clip = tmp_path / "clip.mp4"
    with av.open(str(whole)) as source, av.open(str(clip), "w", options={"movflags": "faststart"}) as out:
        stream = out.add_stream("libx264", rate=25, options={"g": "5"})
        stream.width, stream.height, stream.pix_fmt = 320, 240, "yuv420p"
        for frame in source.decode(video=0):
            out.mux(stream.encode(frame.reformat(format="yuv420p")))
        out.mux(stream.encode())
    data = clip.read_bytes()
    clip.write_bytes(data[: len(data) // 2])
    job = make_job(tmp_path, models_dir, portrait_paths["grace_hopper"])
    with pytest.raises(FaceCacheError, match="truncated or damaged"):
        job.run(clip, tmp_path / "out")
    written = sorted((tmp_path / "out" / "clip").glob("*.png"))
    assert 5 < len(written) < 50 and job.report.written == len(written)
    for path in written:  # every output present is complete and listed
        assert cv2.imread(str(path), cv2.IMREAD_UNCHANGED).shape == (240, 320, 4)
    manifest, media_id = OutputManifest(tmp_path / "out" / "clip"), media_identity(clip, job.analyzer.cache)
    assert all(manifest.is_current(p.name, job.output_key(media_id, decoder_id_for(clip, job.analyzer.picture_rules, lambda: stream_tags(clip)), int(p.stem), "overlay")) for p in written)


def test_unopenable_video_is_a_clear_error(tmp_path, models_dir, portrait_paths, portraits):
    clip = write_clip(tmp_path / "clip.mp4", portraits["astronaut"], 10)
    clip.write_bytes(clip.read_bytes()[:2000])
    with pytest.raises(FaceCacheError, match="re-export it"):
        make_job(tmp_path, models_dir, portrait_paths["grace_hopper"]).run(clip, tmp_path / "out")
    assert not (tmp_path / "out" / "clip").exists() or not list((tmp_path / "out" / "clip").glob("*.png"))


def test_memory_stays_bounded_by_a_window_not_the_clip(tmp_path, models_dir, portrait_paths, portraits):
    """Peak traced memory of a job over a 3-segment clip stays that of a 1-segment clip: frames
    stream through, and at most one segment's records are held at a time."""
    import tracemalloc

    peaks = {}
    for frames in (64, 192):
        clip = write_clip(tmp_path / f"clip{frames}.mp4", portraits["astronaut"], frames)
        job = make_job(tmp_path / str(frames), models_dir, portrait_paths["grace_hopper"])
        tracemalloc.start()
        try:
            job.run(clip, tmp_path / str(frames) / "out")
            peaks[frames] = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
    # Three times the frames, the same peak: it does not grow with the clip's length.
    assert peaks[192] < 1.1 * peaks[64], peaks


def test_the_faces_of_a_frame_swapped_side_by_side_give_the_same_outputs(tmp_path, models_dir, portrait_paths,
                                                                         monkeypatch):
    """A job swaps the faces of a frame on its writer threads; the outputs are those of one face after
    another, byte for byte."""
    from facecache.analysis.selection import Selector
    from facecache.media.sample_clip import write_group_clip

    clip = write_group_clip([portrait_paths["grace_hopper"], portrait_paths["astronaut"]], tmp_path / "group.mp4",
                            faces=4, frames=4, size=(640, 360))

    def run(name: str):
        job = make_job(tmp_path / name, models_dir, portrait_paths["astronaut"])
        job.selector = Selector("many")
        report = job.run(clip, tmp_path / name / "out")
        folder = tmp_path / name / "out" / clip.stem
        return report, {path.name: path.read_bytes() for path in sorted(folder.glob("*.png"))}

    original = SwapJob._swap_faces
    pooled = []

    def noting_the_pool(self, frame, faces, pool, *eyes):
        pooled.append(pool is not None and len(faces) > 1)
        return original(self, frame, faces, pool, *eyes)

    monkeypatch.setattr(SwapJob, "_swap_faces", noting_the_pool)
    side_by_side, outputs = run("pooled")
    assert pooled and all(pooled)  # every frame's faces went through the writer threads
    monkeypatch.setattr(SwapJob, "_swap_faces", lambda self, frame, faces, pool, *eyes: original(self, frame, faces, None, *eyes))
    one_by_one, expected = run("serial")
    assert one_by_one.faces_swapped == side_by_side.faces_swapped
    assert outputs == expected and len(outputs) == 4
