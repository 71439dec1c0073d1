"""Swap and composite as cached stages, end to end with the real MTCNN and the
classic swapper on real portraits: each kind of change pays only for its stage."""

import json
import os
import shutil
import stat
import subprocess
import sys
from pathlib import Path

import cv2
import numpy as np
import pytest

from facecache import output_layout
from facecache.analysis.analyzer import FaceAnalyzer
from facecache.analysis.factory import build_model_set
from facecache.analysis.selection import Selector
from facecache.jobs.found_outputs import faceless_outputs
from facecache.jobs.swap_job import SwapJob
from facecache.media.reader import MediaReader
from facecache.models.runtime import SessionFactory
from facecache.models.store import ModelStore
from facecache.store.cache import FaceCache
from facecache.swap.composite import CompositeParams
from facecache.swap.factory import build_swapper
from facecache.swap.preview_frame import Preview
from facecache.swap.sources import SourceError, SourceSet

pytestmark = pytest.mark.index  # real weights and portraits come from the package index


def run_job(tmp_path, models_dir, sources, target, composite=CompositeParams(), out="out", **job):
    models = ModelStore(models_dir)
    analyzer = FaceAnalyzer(FaceCache(tmp_path / "cache"), build_model_set(models, SessionFactory("cpu")))
    source_set = SourceSet.load(sources, analyzer)
    swapper = build_swapper("classic", source_set, models, SessionFactory("cpu"))
    report = SwapJob(analyzer, swapper, source_set, composite=composite, **job).run(target, tmp_path / out)
    return analyzer, report


@pytest.fixture
def second_source(tmp_path, portraits):
    """Another source face: the Grace Hopper portrait mirrored (other pixels, other fingerprint)."""
    path = tmp_path / "mirrored.png"
    cv2.imwrite(str(path), portraits["grace_hopper"][:, ::-1])
    return path


def test_each_change_reruns_only_its_own_stage(tmp_path, default_models_dir, portrait_paths, second_source):
    models_dir = default_models_dir
    source, target = portrait_paths["grace_hopper"], portrait_paths["astronaut"]
    first, report = run_job(tmp_path, models_dir, [source], target)
    assert first.inferences.as_dict(("detect", "swap")) == {"detect": 2, "swap": 1}
    assert report.written == 1

    # A new source: only the new source image is analysed; the target's analysis is a cache hit.
    # (the default models find its 68 landmarks and its embedding too; the target needs no embedding)
    new_source, report = run_job(tmp_path, models_dir, [second_source], target)
    assert new_source.inferences.as_dict(("detect", "landmark", "embed", "swap")) == \
        {"detect": 1, "landmark": 1, "embed": 1, "swap": 1}
    assert new_source.stats.hits == 1 and report.written == 1

    # A composite-only change: no model runs at all.
    blend, report = run_job(tmp_path, models_dir, [source], target, CompositeParams(mask_blur=0.5, opacity=0.8))
    assert blend.inferences.total == 0 and report.written == 1 and report.swap_stats.hits == 1

    # The same inputs again: nothing recomputed, nothing rewritten.
    output = tmp_path / "out" / "astronaut_swapped.png"
    before = output.stat().st_mtime_ns
    again, report = run_job(tmp_path, models_dir, [source], target, CompositeParams(mask_blur=0.5, opacity=0.8))
    assert again.inferences.total == 0 and report.written == 0 and report.skipped == 1
    assert output.stat().st_mtime_ns == before


def test_several_sources_analyse_the_target_once(tmp_path, models_dir, portrait_paths, second_source):
    analyzer, report = run_job(tmp_path, models_dir, [portrait_paths["grace_hopper"], second_source],
                               portrait_paths["astronaut"])
    assert analyzer.inferences.detect == 3  # two sources, one target
    # the target's detection is stored before its other stages are looked up (FaceAnalyzer.frames)
    assert (analyzer.stats.misses, analyzer.stats.partial_hits) == (2, 1) and report.written == 1


def test_real_swap_changes_the_face_only_with_a_feathered_edge(tmp_path, models_dir, portrait_paths, portraits):
    run_job(tmp_path, models_dir, [portrait_paths["grace_hopper"]], portrait_paths["astronaut"])
    result = cv2.imread(str(tmp_path / "out" / "astronaut_swapped.png"))
    target = portraits["astronaut"]
    changed = np.abs(result.astype(int) - target).max(axis=2) > 0
    ys, xs = np.nonzero(changed)
    assert len(ys) > 2000  # the swap did something
    x1, x2, y1, y2 = xs.min(), xs.max(), ys.min(), ys.max()
    face_box = (179, 64, 264, 174)  # the astronaut's face, as MTCNN finds it
    assert x1 > face_box[0] - 60 and x2 < face_box[2] + 60 and y1 > face_box[1] - 60 and y2 < face_box[3] + 60
    outside = np.ones_like(changed)
    outside[y1:y2 + 1, x1:x2 + 1] = False
    assert np.array_equal(result[outside], target[outside])  # exactly the original outside the mask
    # Not a pasted rectangle: the changed region does not fill its bounding box ...
    assert changed[y1:y2 + 1, x1:x2 + 1].mean() < 0.95
    # ... and the overlay's alpha fades: many values strictly between 0 and 255 at the edge.
    run_job(tmp_path, models_dir, [portrait_paths["grace_hopper"]], portrait_paths["astronaut"],
            out="overlay", output_form="overlay")
    rgba = cv2.imread(str(tmp_path / "overlay" / "astronaut_swapped.png"), cv2.IMREAD_UNCHANGED)
    alpha = rgba[..., 3]
    far = np.ones_like(changed)
    far[face_box[1] - 60:face_box[3] + 60, face_box[0] - 60:face_box[2] + 60] = False
    assert rgba.shape == (512, 512, 4) and alpha[far].max() == 0
    assert np.count_nonzero((alpha > 0) & (alpha < 255)) > 500


def test_source_without_a_face_names_the_file(tmp_path, models_dir, portrait_paths):
    blank = tmp_path / "blank.png"
    cv2.imwrite(str(blank), np.full((300, 300, 3), 128, np.uint8))
    with pytest.raises(SourceError, match="no face found in the source image .*blank.png"):
        run_job(tmp_path, models_dir, [blank], portrait_paths["astronaut"])


def test_target_without_a_face_is_passed_through_unchanged(tmp_path, models_dir, portrait_paths):
    empty = tmp_path / "empty.png"
    picture = np.random.default_rng(3).integers(0, 256, (240, 320, 3), dtype=np.uint8)
    cv2.imwrite(str(empty), picture)
    _, report = run_job(tmp_path, models_dir, [portrait_paths["grace_hopper"]], empty)
    assert report.written == 1 and report.faces_found == report.faces_swapped == 0
    assert np.array_equal(cv2.imread(str(tmp_path / "out" / "empty_swapped.png")), picture)
    command = [sys.executable, "-m", "facecache", "swap", "--source", str(portrait_paths["grace_hopper"]),
               "--target", str(empty), "--out", str(tmp_path / "cli"), "--cache-dir", str(tmp_path / "c"),
               "--models-dir", str(models_dir), "--providers", "cpu"]
    done = subprocess.run(command, capture_output=True, text=True, check=True)
    assert "warning: no face found in" in done.stderr and "empty.png" in done.stderr
    assert "1 frame: 1 frame written" in done.stdout
    summary = json.loads(subprocess.run(command + ["--json"], capture_output=True, text=True, check=True).stdout)
    assert summary["written"] == 0 and "warning" not in summary  # up to date: nothing new to say


def test_source_with_several_faces_uses_the_largest_unless_told(tmp_path, models_dir, portraits):
    both = np.full((700, 1300, 3), 90, np.uint8)
    both[50:650, 50:562] = portraits["grace_hopper"]                  # large face
    both[200:456, 700:956] = cv2.resize(portraits["astronaut"], (256, 256))  # smaller face
    path = tmp_path / "two.png"
    cv2.imwrite(str(path), both)
    analyzer = FaceAnalyzer(FaceCache(tmp_path / "cache"), build_model_set(ModelStore(models_dir), SessionFactory("cpu")))
    largest = SourceSet.load([path], analyzer).faces[0].face
    second = SourceSet.load([path], analyzer, face_rank=1).faces[0].face
    assert largest.box[0] < 562 < second.box[0]
    assert SourceSet.load([path], analyzer).digest != SourceSet.load([path], analyzer, face_rank=1).digest


def test_video_target_writes_overlays_by_media_frame_index(tmp_path, models_dir, portrait_paths, portraits):
    clip = tmp_path / "clip.mp4"
    writer = cv2.VideoWriter(str(clip), cv2.VideoWriter_fourcc(*"mp4v"), 25, (512, 512))
    for i in range(12):
        writer.write(portraits["astronaut"] if i != 5 else np.zeros((512, 512, 3), np.uint8))
    writer.release()
    first, report = run_job(tmp_path, models_dir, [portrait_paths["grace_hopper"]], clip)
    names = sorted(p.name for p in (tmp_path / "out" / "clip").glob("*.png"))
    assert names == [f"{i:06d}.png" for i in range(12)]
    blank = cv2.imread(str(tmp_path / "out" / "clip" / "000005.png"), cv2.IMREAD_UNCHANGED)
    assert blank.shape == (512, 512, 4) and blank[..., 3].max() == 0  # no face: fully transparent
    again, report = run_job(tmp_path, models_dir, [portrait_paths["grace_hopper"]], clip)
    assert report.skipped == 12 and report.written == 0 and again.inferences.total == 0


def four_frames_one_without_a_face(tmp_path, portrait_paths, portraits):
    """(a 4-frame 512x512 clip of a real portrait whose frame 2 is black, the source faces)"""
    clip = tmp_path / "clip.mp4"
    writer = cv2.VideoWriter(str(clip), cv2.VideoWriter_fourcc(*"mp4v"), 25, (512, 512))
    for i in range(4):
        writer.write(portraits["astronaut"] if i != 2 else np.zeros((512, 512, 3), np.uint8))
    writer.release()
    return clip, [portrait_paths["grace_hopper"]]


def test_sequencer_form_writes_a_frame_without_a_face_as_one_transparent_pixel(tmp_path, models_dir, portrait_paths,
                                                                             portraits):
    """The extension's form: frames with faces are the overlay's pixels at the clip's size, a frame
    without one is 1x1 and transparent (it costs Blender's playback nothing); the overlay form keeps one
    size per clip for other tools."""
    clip, source = four_frames_one_without_a_face(tmp_path, portrait_paths, portraits)
    run_job(tmp_path, models_dir, source, clip, out="overlay", output_form="overlay")
    _, report = run_job(tmp_path, models_dir, source, clip, out="sequencer", output_form="sequencer")
    assert report.written == 4
    for index in range(4):
        overlay, sequencer = (cv2.imread(str(tmp_path / form / "clip" / f"{index:06d}.png"), cv2.IMREAD_UNCHANGED)
                              for form in ("overlay", "sequencer"))
        assert overlay.shape == (512, 512, 4)
        if index == 2:
            assert overlay[..., 3].max() == 0 and sequencer.shape == (1, 1, 4) and sequencer.max() == 0
        else:
            assert np.array_equal(sequencer, overlay) and overlay[..., 3].max() == 255
    # which outputs hold no face, told from their size and header (the extension keys those frames out)
    assert faceless_outputs(clip, tmp_path / "sequencer", [0, 1, 2, 3]) == [2]
    assert faceless_outputs(clip, tmp_path / "overlay", [0, 1, 2, 3]) == []
    (tmp_path / "sequencer" / "clip" / "000001.png").write_bytes(b"not a png")  # small, not an image
    (tmp_path / "sequencer" / "clip" / "000003.png").unlink()  # gone since the listing
    assert faceless_outputs(clip, tmp_path / "sequencer", [0, 1, 2, 3]) == [2]


def test_sequencer_form_writes_each_frame_with_faces_composited_where_blenders_preview_reads_it(
        tmp_path, models_dir, portrait_paths, portraits):
    """Beside each overlay with faces, the picture the overlay makes over its frame, opaque, as the strip's
    proxies at 100 % and 50 % (Blender's preview reads them, a render never does); none for a frame without a face, where one
    left from earlier settings goes; none in the overlay form."""
    clip, source = four_frames_one_without_a_face(tmp_path, portrait_paths, portraits)
    run_job(tmp_path, models_dir, source, clip, out="overlay", output_form="overlay")
    assert not (tmp_path / "overlay" / "clip" / "BL_proxy").exists()
    folder = tmp_path / "sequencer" / "clip"
    run_job(tmp_path, models_dir, source, clip, out="sequencer", output_form="sequencer")
    stale = [Path(output_layout.preview_path(folder / "000002.png", size)) for size in (100, 50)]
    for made in (folder / "BL_proxy", stale[0].parent.parent, stale[0].parent, stale[1].parent):
        # swapped faces: as private as the overlays
        assert stat.S_IMODE(made.stat().st_mode) == stat.S_IMODE(folder.stat().st_mode) in (0o700, 0o2770)
    assert not any(path.exists() for path in stale)
    for path in stale:
        path.write_bytes(b"a preview of earlier settings")
    _, report = run_job(tmp_path, models_dir, source, clip, CompositeParams(opacity=0.9), out="sequencer",
                        output_form="sequencer")
    assert report.written == 4 and not any(path.exists() for path in stale)
    with MediaReader(clip) as reader:
        frames = dict(reader.frames(range(4)))
    for index in (0, 1, 3):
        overlay = cv2.imread(str(folder / f"{index:06d}.png"), cv2.IMREAD_UNCHANGED)
        preview = cv2.imread(output_layout.preview_path(folder / f"{index:06d}.png"), cv2.IMREAD_UNCHANGED)
        alpha = overlay[..., 3:].astype(np.float32) / 255
        exact = frames[index] * (1 - alpha) + overlay[..., :3] * alpha
        assert preview.shape == (512, 512, 3)  # opaque
        assert np.abs(preview - exact).mean() < 2.5  # the JPEG's loss, in the preview only
        face = alpha[..., 0] > 0.8
        assert np.abs(preview[face].astype(int) - frames[index][face]).mean() > 10  # the swapped face shows
        half = cv2.imread(output_layout.preview_path(folder / f"{index:06d}.png", 50), cv2.IMREAD_UNCHANGED)
        assert half.shape == (256, 256, 3)  # the preview at 50 %: half the picture's sides
        # the JPEG loses a little more where the same detail is twice as dense
        assert np.abs(half - cv2.resize(exact, (256, 256), interpolation=cv2.INTER_AREA)).mean() < 3.5
        # made again over the first run's previews, only the faces' bands encoded: the whole picture's JPEGs
        for size, made in ((100, preview), (50, half)):
            whole = Preview(frames[index], [(0, 0, overlay)], "").jpeg(size)
            assert np.array_equal(made, cv2.imdecode(np.frombuffer(whole, np.uint8), cv2.IMREAD_UNCHANGED))


def test_a_blend_change_composes_cached_faces_without_decoding(tmp_path, models_dir, portrait_paths, portraits,
                                                              monkeypatch):
    """Overlays made from cached swaps need no pixels of the frame: a blend change decodes nothing, and
    its overlays are byte for byte those of a run that decoded every frame."""
    from facecache.media.reader import MediaReader

    clip = tmp_path / "clip.mp4"
    writer = cv2.VideoWriter(str(clip), cv2.VideoWriter_fourcc(*"mp4v"), 25, (512, 512))
    for i in range(6):
        writer.write(np.roll(portraits["astronaut"], 8 * i, axis=1) if i != 3 else np.zeros((512, 512, 3), np.uint8))
    writer.release()
    decoded, read = [], MediaReader.frames

    def counted(reader, indices, rows=None):
        indices = list(indices)
        if reader.path == clip:  # (the source photo is read too)
            decoded.extend(indices)
        return read(reader, indices, rows)

    monkeypatch.setattr(MediaReader, "frames", counted)
    source, tweaked = [portrait_paths["grace_hopper"]], CompositeParams(mask_blur=0.5, opacity=0.8)

    run_job(tmp_path, models_dir, source, clip)
    assert sorted(decoded) == list(range(6))
    decoded.clear()
    _, report = run_job(tmp_path, models_dir, source, clip, composite=tweaked)
    assert report.written == 6 and decoded == []  # every face came from the cache with its colour transfer
    _, fresh = run_job(tmp_path / "elsewhere", models_dir, source, clip, composite=tweaked)
    assert fresh.written == 6 and sorted(decoded) == list(range(6))  # a new cache: every frame decoded
    for index in range(6):
        name = f"clip/{index:06d}.png"
        assert (tmp_path / "out" / name).read_bytes() == (tmp_path / "elsewhere" / "out" / name).read_bytes()


def test_cli_swap_json(tmp_path, default_models_dir, portrait_paths):
    command = [sys.executable, "-m", "facecache", "swap", "--source", str(portrait_paths["grace_hopper"]),
               "--target", str(portrait_paths["astronaut"]), "--out", str(tmp_path / "out"),
               "--cache-dir", str(tmp_path / "c"), "--models-dir", str(default_models_dir), "--providers", "cpu",
               "--json"]
    run = subprocess.run(command, capture_output=True, text=True, check=True)
    first = json.loads(run.stdout)
    assert (first["frames"], first["written"], first["skipped"]) == (1, 1, 0)
    assert (first["faces_found"], first["faces_swapped"]) == (1, 1) and "facecache: warning" not in run.stderr
    # source and target: detection and 68 landmarks; no embedding (neither the classic swapper nor the one
    # selector needs an identity)
    assert first["inferences"] == {"detect": 2, "landmark": 2, "embed": 0, "swap": 1}
    second = json.loads(subprocess.run(command + ["--mask-blur", "0.6"], capture_output=True, text=True,
                                       check=True).stdout)
    assert second["inferences"] == {"detect": 0, "landmark": 0, "embed": 0, "swap": 0} and second["written"] == 1
    bad = subprocess.run(command + ["--opacity", "3"], capture_output=True, text=True)
    assert bad.returncode == 2 and "between 0 and 1" in bad.stderr
    missing_target = [str(tmp_path / "nope.mp4") if arg == str(portrait_paths["astronaut"]) else arg
                      for arg in command]
    missing = subprocess.run(missing_target, capture_output=True, text=True)
    assert missing.returncode == 2 and "check the path" in missing.stderr


@pytest.mark.parametrize("swapper", ["inswapper_128", "hyperswap_1a_256"])
def test_facefusion_swappers_through_the_job_with_stand_in_models(tmp_path, models_dir, portrait_paths, swapper):
    """FaceFusion's swappers and recognizer as stand-in ONNX graphs with their real input/output
    names and shapes, imported from a FaceFusion-style folder with crc32 sidecars; the job runs
    the recognizer on the source, the swapper per target face, and caches both stages."""
    import zlib

    from analysis_graphs import echo_model
    from swap_graphs import emap_matrix, hyperswap_standin, inswapper_standin, probe_vector

    folder = tmp_path / "facefusion"
    folder.mkdir()
    echo_model(folder / "arcface_w600k_r50.onnx", "input", (1, 3, 112, 112), "output", 512)
    if swapper == "inswapper_128":
        inswapper_standin(folder / "inswapper_128.onnx", emap_matrix(), probe_vector())
    else:
        hyperswap_standin(folder / "hyperswap_1a_256.onnx", probe_vector())
    for model in folder.glob("*.onnx"):
        (folder / f"{model.stem}.hash").write_text(f"{zlib.crc32(model.read_bytes()):08x}")
    local_models = tmp_path / "models"
    local_models.mkdir()
    for path in ModelStore(models_dir).paths("mtcnn").values():
        os.link(path, local_models / path.name)
    models = ModelStore(local_models)
    models.import_folder(folder)

    def run(source, composite=CompositeParams()):
        analyzer = FaceAnalyzer(FaceCache(tmp_path / "cache"), build_model_set(models, SessionFactory("cpu")))
        sources = SourceSet.load([source], analyzer)
        job = SwapJob(analyzer, build_swapper(swapper, sources, models, SessionFactory("cpu")), sources,
                      composite=composite)
        return analyzer, job.run(portrait_paths["astronaut"], tmp_path / "out")

    first, report = run(portrait_paths["grace_hopper"])
    assert report.written == 1
    # The source needs its embedding; the target (selector "one") does not.
    assert first.inferences.as_dict(("detect", "embed", "swap")) == {"detect": 2, "embed": 1, "swap": 1}
    output = cv2.imread(str(tmp_path / "out" / "astronaut_swapped.png"))
    assert not np.array_equal(output, cv2.imread(str(portrait_paths["astronaut"])))
    blend, report = run(portrait_paths["grace_hopper"], CompositeParams(opacity=0.5))
    assert blend.inferences.total == 0 and report.written == 1


def test_a_new_sources_overlays_convert_only_their_faces_rows_and_are_the_same(tmp_path, default_models_dir,
                                                                               portrait_paths, second_source,
                                                                               rows_asked, monkeypatch):
    """Once a clip is analysed, a new source's run converts each frame only in the rows its faces' swaps read
    (none for a frame without a face); its overlays are byte for byte those of a run that converts every row."""
    from facecache.media.sample_clip import write_group_clip

    clip = write_group_clip([portrait_paths["grace_hopper"], portrait_paths["astronaut"]], tmp_path / "clip.mp4",
                            faces=2, frames=14, size=(640, 360), empty_every=6)
    run_job(tmp_path, default_models_dir, [portrait_paths["grace_hopper"]], clip, selector=Selector("many"))
    shutil.copytree(tmp_path / "cache", tmp_path / "every_row" / "cache")
    rows_asked.clear()  # the first run's frames
    _, report = run_job(tmp_path, default_models_dir, [second_source], clip, out="some_rows",
                        selector=Selector("many"))
    assert report.written == 14 and len(rows_asked) == 14
    assert [index for index, spans in enumerate(rows_asked) if spans == []] == [5, 11]  # the frames without a face
    with_faces = [spans for spans in rows_asked if spans]
    assert len(with_faces) == 12 and all(len(spans) == 2 for spans in with_faces)
    assert all(sum(bottom - top for top, bottom in spans) < 360 for spans in with_faces)

    monkeypatch.setattr(SwapJob, "rows_read", lambda self, analysis, swaps, index, form: None)
    rows_asked.clear()
    run_job(tmp_path / "every_row", default_models_dir, [second_source], clip, out="all_rows",
            selector=Selector("many"))
    assert rows_asked == [None] * 14
    some, every = (sorted((tmp_path / folder).rglob("*.png")) for folder in ("some_rows", "every_row/all_rows"))
    assert len(some) == len(every) == 14
    assert all(a.name == b.name and a.read_bytes() == b.read_bytes() for a, b in zip(some, every))
