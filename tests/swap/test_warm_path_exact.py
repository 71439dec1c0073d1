"""The warm path's shortcuts change no byte: on the real group photo (six people, analysed by the embedded
default models: MTCNN and the face mesh's 68 points), with two real sources, every swap record (crop,
mask, colour transfer) and every overlay patch is the same with the shortcuts as without them.

The shortcuts: a colour transfer brings back into sRGB's range only the pixels its caller reads
(``ColorTransfer.apply``'s ``used``: the composite's bicubic reach of the mask, the edge light's weighted
blocks); without it the transfer corrects every pixel, as before the cut. And a warm overlay's frame is
converted only in the rows its faces' swaps read (``rows_read``): whatever the other rows hold, every
record and patch is the same."""

from __future__ import annotations

import cv2
import numpy as np
import pytest

from facecache.pipeline import Settings, build_pipeline
from facecache.samples import sample_image
from facecache.swap import color
from facecache.swap.composite import CompositeParams, overlay_patches
from facecache.swap.swap_records import quantise_mask

BLEND = (CompositeParams(), CompositeParams(mask_blur=0.5, opacity=0.9, color_match=0.6))


def swapped(pipeline, frame, faces):
    swapper = pipeline.swap_job().swapper
    results = [quantise_mask(swapper.swap(frame, face)) for face in faces]
    return results, [overlay_patches(frame, results, params) for params in BLEND]


@pytest.mark.index
@pytest.mark.parametrize("source", ["astronaut", "grace_hopper"])
def test_the_colour_transfers_shortcut_changes_no_record_and_no_overlay(source, portrait_paths, default_models_dir,
                                                                         tmp_path, monkeypatch):
    group = cv2.imread(str(sample_image("group", portrait_paths[source].parent)), cv2.IMREAD_COLOR)
    pipeline = build_pipeline(Settings(cache_dir=str(tmp_path / "cache"), models_dir=str(default_models_dir),
                                       providers="cpu", sources=(str(portrait_paths[source]),), selector="many"))
    faces = [face for face in pipeline.analyzer.analyze_frame(group).faces if face.landmarks68 is not None]
    assert len(faces) >= 5

    shortcut, shortcut_patches = swapped(pipeline, group, faces)
    skipped = []
    plain_apply = color.ColorTransfer.apply

    def everywhere(self, image, strength=1.0, box=None, used=None):
        """The transfer corrected on every pixel; records how many pixels the shortcut left as they were."""
        full = plain_apply(self, image, strength, box)
        if used is not None:
            skipped.append(int((plain_apply(self, image, strength, box, used) != full).any(axis=2).sum()))
        return full

    monkeypatch.setattr(color.ColorTransfer, "apply", everywhere)
    plain, plain_patches = swapped(pipeline, group, faces)

    assert sum(skipped) > 0  # the shortcut left pixels uncorrected: only pixels nobody reads
    for ours, theirs in zip(shortcut, plain):
        assert np.array_equal(ours.crop, theirs.crop) and np.array_equal(ours.mask, theirs.mask)
        assert np.array_equal(ours.color, theirs.color) and np.array_equal(ours.matrix, theirs.matrix)
    for ours, theirs in zip(shortcut_patches, plain_patches):
        assert len(ours) == len(theirs) > 0
        for (x, y, bgra), (x2, y2, bgra2) in zip(ours, theirs):
            assert (x, y) == (x2, y2) and bgra.tobytes() == bgra2.tobytes()


@pytest.mark.index
def test_a_swap_reads_no_row_beyond_the_rows_it_names(portrait_paths, default_models_dir, tmp_path):
    """Each face of the group photo, and the same photo cut just above its top face (whose crop then
    leaves the frame), swapped with every row outside the swapper's `rows_read` replaced by noise: the
    same record and patches as on the photo itself."""
    group = cv2.imread(str(sample_image("group", portrait_paths["astronaut"].parent)), cv2.IMREAD_COLOR)
    pipeline = build_pipeline(Settings(cache_dir=str(tmp_path / "cache"), models_dir=str(default_models_dir),
                                       providers="cpu", sources=(str(portrait_paths["astronaut"]),), selector="many"))
    swapper = pipeline.swap_job().swapper
    faces = pipeline.analyzer.analyze_frame(group).faces
    top = min(faces, key=lambda face: face.box[1])
    cut = np.ascontiguousarray(group[int(top.box[1]) + 4:])
    noise = np.random.default_rng(5)
    checked = 0
    for frame in (group, cut):
        for face in pipeline.analyzer.analyze_frame(frame).faces:
            first, last = swapper.rows_read(face, frame.shape[0])
            assert 0 <= first < last <= frame.shape[0]
            elsewhere = noise.integers(0, 256, frame.shape, np.uint8)
            elsewhere[first:last] = frame[first:last]
            (ours, ours_patches), (theirs, theirs_patches) = (swapped(pipeline, picture, [face])
                                                              for picture in (frame, elsewhere))
            assert np.array_equal(ours[0].crop, theirs[0].crop) and np.array_equal(ours[0].mask, theirs[0].mask)
            assert np.array_equal(ours[0].color, theirs[0].color)
            for ours_blend, theirs_blend in zip(ours_patches, theirs_patches):
                assert [(x, y, bgra.tobytes()) for x, y, bgra in ours_blend] == \
                    [(x, y, bgra.tobytes()) for x, y, bgra in theirs_blend]
            checked += 1
    assert checked >= 10
