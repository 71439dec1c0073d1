"""Analysis through the cache with the real MTCNN weights: counts of model runs,
partial hits, videos, bad input."""

import json
import os
import subprocess
import sys
import zlib

import cv2
import numpy as np
import pytest

from facecache.analysis.analyzer import FaceAnalyzer
from facecache.analysis.factory import AnalysisSettings, build_model_set
from facecache.analysis.selection import SelectionError, Selector
from facecache.errors import FaceCacheError, ModelMissing
from facecache.models.runtime import SessionFactory
from facecache.models.store import ModelStore
from facecache.store.cache import FaceCache
from facecache.store.frame_store import SEGMENT_FRAMES
from facecache.store.records import Stage

from analysis_graphs import echo_model, standin_model

pytestmark = pytest.mark.index  # real weights and portraits come from the package index


def analyzer(cache_dir, models_dir, **settings):
    models = build_model_set(ModelStore(models_dir), SessionFactory("cpu"), AnalysisSettings(**settings))
    return FaceAnalyzer(FaceCache(cache_dir), models)


def test_real_portraits_then_zero_inferences_on_the_second_run(tmp_path, models_dir, portrait_paths):
    first = analyzer(tmp_path / "c", models_dir)
    for name, path in portrait_paths.items():
        (result,) = first.analyze_media(path)
        (face,) = result.record.faces
        x1, y1, x2, y2 = face.box
        width, height = result.record.width, result.record.height
        assert 0 <= x1 < x2 <= width and 0 <= y1 < y2 <= height
        assert 0.1 < (x2 - x1) / width < 0.6  # a face, not the whole picture
        eyes, mouth = face.kps5[:2], face.kps5[3:]
        assert eyes[:, 1].max() < mouth[:, 1].min()  # eyes above the mouth corners
        assert all(x1 <= x <= x2 and y1 <= y <= y2 for x, y in face.kps5)
        pitch, yaw, roll = face.pose
        assert abs(pitch) < 25 and abs(yaw) < 25 and abs(roll) < 25, name
    assert first.inferences.detect == 2 and first.stats.misses == 2

    second = analyzer(tmp_path / "c", models_dir)
    for path in portrait_paths.values():
        second.analyze_media(path)
    assert second.inferences.total == 0
    assert second.stats.as_dict() == {"hits": 2, "misses": 0, "partial_hits": 0}


def _facefusion_folder(folder):
    """Stand-ins for FaceFusion's 2dfan4 and arcface_w600k_r50 (same input/output names and
    shapes as the real models), with their crc32 `.hash` sidecars, as FaceFusion keeps them."""
    folder.mkdir()
    points = np.zeros((1, 68, 3), np.float32)
    points[0, :, 0] = np.linspace(60, 200, 68)
    points[0, :, 1] = np.linspace(60, 200, 68)
    standin_model(folder / "2dfan4.onnx", "input", (1, 3, 256, 256),
                  [("landmarks_xyscore", points), ("heatmaps", np.full((1, 68, 64, 64), 0.8, np.float32))])
    echo_model(folder / "arcface_w600k_r50.onnx", "input", (1, 3, 112, 112), "output", 512)
    for name in ("2dfan4", "arcface_w600k_r50"):
        crc = zlib.crc32((folder / f"{name}.onnx").read_bytes())
        (folder / f"{name}.hash").write_text(f"{crc:08x}")
    return folder


def test_partial_hit_runs_only_the_missing_stage(tmp_path, models_dir, portrait_paths):
    store = ModelStore(models_dir)
    local_models = tmp_path / "models"
    local_models.mkdir()
    for path in store.paths("mtcnn").values():
        os.link(path, local_models / path.name)
    local = ModelStore(local_models)
    local.import_folder(_facefusion_folder(tmp_path / "facefusion"))
    assert local.is_installed("2dfan4") and local.is_installed("arcface_w600k_r50")

    image = portrait_paths["grace_hopper"]
    first = analyzer(tmp_path / "c", local_models)
    (result,) = first.analyze_media(image, needed=first.stages(embeddings=False))
    assert result.record.faces[0].landmarks68 is not None and result.record.faces[0].embedding is None
    assert first.inferences.as_dict() == {"detect": 1, "landmark": 1, "embed": 0}

    second = analyzer(tmp_path / "c", local_models)
    (result,) = second.analyze_media(image)  # now embeddings are needed too
    assert second.inferences.as_dict() == {"detect": 0, "landmark": 0, "embed": 1}
    assert second.stats.partial_hits == 1
    assert result.record.faces[0].embedding.shape == (512,)

    third = analyzer(tmp_path / "c", local_models)
    third.analyze_media(image)
    assert third.inferences.total == 0 and third.stats.hits == 1


def _clip(path, portrait, frames=80):
    """A small MP4: the portrait panning, every 8th frame black (no face)."""
    writer = cv2.VideoWriter(str(path), cv2.VideoWriter_fourcc(*"mp4v"), 25, (320, 240))
    assert writer.isOpened()
    small = cv2.resize(portrait, (240, 280))
    for i in range(frames):
        canvas = np.zeros((240, 320, 3), np.uint8)
        if i % 8 != 7:
            x = 10 + i % 60
            canvas[:, x:x + 240] = small[20:260, :][:, : 320 - x][:, :240]
        writer.write(canvas)
    writer.release()
    return path


def test_video_frames_are_cached_and_a_warm_run_decodes_nothing(tmp_path, models_dir, portraits, monkeypatch):
    clip = _clip(tmp_path / "clip.mp4", portraits["grace_hopper"])
    first = analyzer(tmp_path / "c", models_dir)
    results = first.analyze_media(clip, frames=range(10, 70))
    assert [r.index for r in results] == list(range(10, 70))
    # Identical frames within a 64-frame group are analysed once; tracking detects frames 0-9 first
    # (the segment's frames before the range: see below).
    assert first.inferences.detect > 50
    faces = {r.index: len(r.record.faces) for r in results}
    assert all(faces[i] == 0 for i in faces if i % 8 == 7)  # black frames: cached as empty
    assert sum(1 for i in faces if i % 8 != 7 and faces[i] == 1) >= 45

    from facecache.media.reader import MediaReader
    decoded = []
    real_frames = MediaReader.frames
    monkeypatch.setattr(MediaReader, "frames",
                        lambda self, idx, rows=None: (decoded.extend(list(idx)) or real_frames(self, [])))
    second = analyzer(tmp_path / "c", models_dir)
    again = second.analyze_media(clip, frames=range(10, 70))
    assert decoded == [] and second.inferences.total == 0
    assert {r.index: len(r.record.faces) for r in again} == faces
    monkeypatch.setattr(MediaReader, "frames", real_frames)

    third = analyzer(tmp_path / "c", models_dir)  # extend the range: only new frames are analysed
    extended = third.analyze_media(clip, frames=range(0, 80))
    detected_first = {(r.index // SEGMENT_FRAMES, r.record.fingerprint) for r in extended if r.index < 70}
    assert first.inferences.detect == len(detected_first)
    new = {(r.index // SEGMENT_FRAMES, r.record.fingerprint) for r in extended} - detected_first
    assert third.inferences.detect == len(new) > 5
    # frames 10-69 are hits; frames 0-9, detected by the first run, gain their other stages (partial hits),
    # but for the black frame 7, whose pixels are those of the black frames 15, 23, ...
    assert (third.stats.hits, third.stats.partial_hits) == (61, 9)


def test_cli_analyze_json_is_a_line_a_frame_then_the_summary(tmp_path, models_dir, portrait_paths):
    command = [sys.executable, "-m", "facecache", "analyze", *map(str, portrait_paths.values()),
               "--cache-dir", str(tmp_path / "c"), "--models-dir", str(models_dir), "--providers", "cpu", "--json"]

    def lines():
        stdout = subprocess.run(command, capture_output=True, text=True, check=True).stdout
        return [json.loads(line) for line in stdout.splitlines()]

    *frames, first = lines()
    *_, second = lines()
    assert [(f["type"], f["media"], f["frame"], f["face_count"]) for f in frames] == [
        ("frame", str(path), 0, 1) for path in portrait_paths.values()]
    assert "faces" not in frames[0]  # each face's details only with --faces
    assert first["type"] == "summary" and first["frames"] == 2 and first["faces"] == 2
    assert first["inferences"]["detect"] == 2
    assert second["inferences"] == {"detect": 0, "landmark": 0, "embed": 0}
    assert second["hits"] == 2 and second["misses"] == 0
    assert isinstance(second["seconds"], float)
    assert "per_frame" not in second["media"][0]  # the frames were the lines above


def test_cli_analyze_faces_prints_what_the_cache_holds_per_frame(tmp_path, default_models_dir, portrait_paths):
    command = [sys.executable, "-m", "facecache", "analyze", str(portrait_paths["astronaut"]), "--faces",
               "--cache-dir", str(tmp_path / "c"), "--models-dir", str(default_models_dir), "--providers", "cpu"]
    pretty = subprocess.run(command + ["--pretty"], capture_output=True, text=True, check=True).stdout
    assert pretty.count("\n") > 100  # indented: a line a value, not one 66 KB line
    listed = json.loads(pretty)
    (frame,) = listed["media"][0]["per_frame"]
    (face,) = frame["faces"]
    assert frame["frame"] == 0 and frame["face_count"] == 1 and face["score"] > 0.9
    x1, y1, x2, y2 = face["box"]
    assert 150 < x1 < x2 < 300 and 40 < y1 < y2 < 200  # the astronaut's face
    assert len(face["kps5"]) == 5 and all(x1 <= x <= x2 and y1 <= y <= y2 for x, y in face["kps5"])
    assert len(face["landmarks68"]) == 68  # the default models' face mesh
    assert all(x1 - 20 <= x <= x2 + 20 and y1 - 20 <= y <= y2 + 20 for x, y in face["landmarks68"])
    assert set(face["pose"]) == {"pitch", "yaw", "roll"} and abs(face["pose"]["yaw"]) < 25
    assert face["embedding_cached"] is True  # and its recognizer
    lines = subprocess.run(command + ["--json"], capture_output=True, text=True, check=True).stdout.splitlines()
    assert len(lines) == 2 and json.loads(lines[0])["faces"] == frame["faces"]  # the same, on the frame's line
    text = subprocess.run(command, capture_output=True, text=True, check=True).stdout
    assert "frame 0 face 0: box" in text and "yaw" in text and "68 landmarks" in text and "embedding cached" in text
    assert "analyses from cache 1" in text


def test_non_media_file_is_a_clear_error_and_nothing_is_written(tmp_path, models_dir):
    bogus = tmp_path / "notes.mp4"
    bogus.write_text("not a video")
    a = analyzer(tmp_path / "c", models_dir)
    with pytest.raises(FaceCacheError, match="not a video or image"):
        a.analyze_media(bogus)
    with pytest.raises(FaceCacheError, match="check the path"):
        a.analyze_media(tmp_path / "missing.png")
    stats = FaceCache(tmp_path / "c").stats()
    assert stats.entries == 0 and not any((tmp_path / "c" / "media").iterdir())


def test_missing_model_names_the_install_command(tmp_path):
    with pytest.raises(ModelMissing, match="facecache models install default"):
        analyzer(tmp_path / "c", tmp_path / "no-models")


@pytest.mark.parametrize("shape", [(1080, 1920, 3), (8, 8, 3), (4320, 7680, 3)])
def test_black_tiny_and_huge_frames_are_empty_records(tmp_path, models_dir, shape):
    a = analyzer(tmp_path / "c", models_dir)
    record = a.analyze_frame(np.zeros(shape, np.uint8))
    assert record.faces == [] and record.has(Stage.DETECT)
    again = analyzer(tmp_path / "c", models_dir)
    assert again.analyze_frame(np.zeros(shape, np.uint8)).faces == []
    assert again.inferences.total == 0


def test_reference_selection_without_a_recognizer_says_what_to_install(tmp_path, models_dir, portraits):
    a = analyzer(tmp_path / "c", models_dir, recognizer="none")  # the default models have one
    record = a.analyze_frame(portraits["astronaut"])
    selector = Selector("reference", references=(np.ones(512, np.float32),))
    with pytest.raises(SelectionError, match="models install default"):
        selector.select(record.faces, record.width, record.height)
    assert Selector("one").select(record.faces, record.width, record.height) == record.faces


def test_a_cache_made_before_uneven_chroma_steps_were_followed_is_served_where_the_picture_is_the_same(
        tmp_path, models_dir, portraits):
    """A video whose chroma steps unevenly (here 4:2:0, 97 pixels wide) is keyed apart since the engine follows
    swscale's uneven steps; the records made under its key before are found by fingerprint only. Blender 4.2
    shows this even height as before (the unscaled converter): nothing is analysed again; under 5.x's rules
    the pictures are others (Blender 5 takes the next chroma sample early from the middle on): all six are."""
    import av

    from facecache.media.identity import media_identity
    from facecache.media.picture_rules import RULES
    from facecache.media.reader import UNEVEN_CHROMA, MediaReader

    clip = tmp_path / "clip.mkv"
    with av.open(str(clip), "w") as container:
        stream = container.add_stream("ffv1", rate=25)
        stream.width, stream.height, stream.pix_fmt = 97, 96, "yuv420p"
        face = cv2.resize(portraits["grace_hopper"], (97, 96))
        for index in range(6):
            frame = av.VideoFrame.from_ndarray(np.roll(face, index, axis=1)[..., ::-1].copy(), format="rgb24")
            container.mux(stream.encode(frame))
        container.mux(stream.encode())
    for rules, detections in ((RULES["blender-4.2"], 0), (RULES["blender-5"], 6)):
        old = analyzer(tmp_path / rules.name, models_dir)
        old.picture_rules = rules
        with old.open_reader(clip) as reader:
            assert reader.decoder_id.endswith(UNEVEN_CHROMA)
            before_id = reader.decoder_id.replace(UNEVEN_CHROMA, "")
        group = old.open_segment(media_identity(clip, old.cache), before_id, 0)
        with MediaReader(clip, RULES["blender-4.2"]) as before:  # the pictures the key held before, 4.2's here
            for index, frame in before.frames(range(6)):
                old.ensure(group, index, frame, old.stages())
        group.flush()
        new = analyzer(tmp_path / rules.name, models_dir)
        new.picture_rules = rules
        frames = new.analyze_media(clip)
        assert len(frames) == 6 and new.inferences.detect == detections, rules.name


def test_a_cache_made_by_the_opencv_decoder_is_served_where_the_picture_is_the_same(tmp_path, models_dir,
                                                                                     portrait_paths):
    """Records of the engine's earlier decoder (OpenCV) are found by fingerprint only: under the rules of
    Blender 4.2, whose picture of this untagged clip is OpenCV's to the bit, nothing is analysed again;
    under 5.x's (chroma per sample: up to 3/255 apart) every frame is, and no old record is served."""
    from facecache.media.identity import media_identity
    from facecache.media.picture_rules import RULES
    from facecache.media.reader import LEGACY_VIDEO_DECODER_ID
    from facecache.media.sample_clip import write_sample_clip

    clip = write_sample_clip(portrait_paths["grace_hopper"], tmp_path / "clip.mp4", frames=6, size=(320, 240))
    old = analyzer(tmp_path / "c", models_dir)
    group = old.open_segment(media_identity(clip, old.cache), LEGACY_VIDEO_DECODER_ID, 0)
    capture = cv2.VideoCapture(str(clip))  # the old decoder, as it filled caches before
    for index in range(6):
        old.ensure(group, index, capture.read()[1], old.stages())
    group.flush()
    assert old.inferences.detect == 6

    for rules, detections in ((RULES["blender-4.2"], 0), (RULES["blender-5"], 6)):
        new = analyzer(tmp_path / "c", models_dir)
        new.picture_rules = rules
        frames = new.analyze_media(clip)
        assert len(frames) == 6 and new.inferences.detect == detections, rules.name
