"""'Swap only this person' on the default install: a reference photo of one person picks that
person's face in a multi-person clip, in every frame where they appear, and nobody else.

The clip is made of real photographs side by side (three people a frame, in changing places;
two photographs of the person to find, neither of them the reference photo; frames without
them), run through `facecache swap --selector reference` with the embedded default models
(MTCNN, face mesh, FaceNet) and its default threshold."""

import json

import cv2
import numpy as np
import pytest

from facecache.cli import main
from facecache.errors import FaceCacheError
from facecache.engine import run_job

pytestmark = pytest.mark.index  # models and photographs come from the package index

PANEL = (240, 300)  # width, height of one person's place in the frame
FRAMES = (  # who stands where, left to right; the person to find is obama2 / obama3
    ("obama2", "biden", "grace_hopper"),
    ("biden", "obama2", "grace_hopper"),
    ("grace_hopper", "biden", "obama3"),
    ("biden", "grace_hopper", "astronaut"),
    ("obama3", "astronaut", "biden"),
    ("grace_hopper", "astronaut", "biden"),
)


def _panel(photo: np.ndarray) -> np.ndarray:
    """The photo scaled to the panel's width, its top part kept (where the faces are), padded if short."""
    width, height = PANEL
    scaled = cv2.resize(photo, (width, round(photo.shape[0] * width / photo.shape[1])), interpolation=cv2.INTER_AREA)
    panel = np.zeros((height, width, 3), np.uint8)
    panel[:min(height, scaled.shape[0])] = scaled[:height]
    return panel


@pytest.fixture
def interview(tmp_path, identity_photos, portraits):
    """(clip, reference photo): the multi-person clip, and a photo of the person to find that is not in it."""
    photos = {**identity_photos, **portraits}
    clip = tmp_path / "interview.avi"
    writer = cv2.VideoWriter(str(clip), cv2.VideoWriter_fourcc(*"MJPG"), 25, (PANEL[0] * 3, PANEL[1]))
    for people in FRAMES:
        writer.write(np.hstack([_panel(photos[name]) for name in people]))
    writer.release()
    reference = tmp_path / "reference.jpg"
    cv2.imwrite(str(reference), identity_photos["obama"])
    return clip, reference


def _check_only_the_reference_person_swapped(overlays):
    for index, people in enumerate(FRAMES):
        overlay = cv2.imread(str(overlays / f"{index:06d}.png"), cv2.IMREAD_UNCHANGED)
        assert overlay is not None and overlay.shape[2] == 4
        alpha = overlay[:, :, 3] > 0
        for place, name in enumerate(people):
            swapped = alpha[:, place * PANEL[0]:(place + 1) * PANEL[0]].sum()
            if name.startswith("obama"):
                assert swapped > 500, f"frame {index}: {name} at place {place} was not swapped"
            else:
                assert swapped == 0, f"frame {index}: {name} at place {place} was swapped"


def test_only_the_reference_person_is_swapped_in_every_frame(tmp_path, default_models_dir, interview,
                                                             portrait_paths, capsys):
    clip, reference = interview
    code = main(["swap", "--source", str(portrait_paths["astronaut"]), "--target", str(clip),
                 "--selector", "reference", "--reference", str(reference), "--out", str(tmp_path / "out"),
                 "--cache-dir", str(tmp_path / "cache"), "--models-dir", str(default_models_dir),
                 "--providers", "cpu", "--json"])
    assert code == 0
    assert json.loads(capsys.readouterr().out)["frames"] == len(FRAMES)
    _check_only_the_reference_person_swapped(tmp_path / "out" / "interview")


def test_the_add_on_job_swaps_only_the_reference_person(tmp_path, default_models_dir, interview, portrait_paths):
    """The same through the worker job the Blender extension sends (Faces: Reference Person)."""
    clip, reference = interview
    settings = {"cache_dir": str(tmp_path / "cache"), "models_dir": str(default_models_dir), "providers": "cpu",
                "sources": [str(portrait_paths["astronaut"])], "selector": "reference",
                "references": [str(reference)]}
    summary = run_job({"kind": "swap", "settings": settings, "items": [
        {"media": str(clip), "start": 0, "stop": len(FRAMES), "out": str(tmp_path / "out")}]}, lambda _m: None)
    assert summary["frames"] == len(FRAMES)
    _check_only_the_reference_person_swapped(tmp_path / "out" / "interview")
    with pytest.raises(FaceCacheError, match="at least one reference photo"):
        run_job({"kind": "swap", "settings": {**settings, "references": []}, "items": []}, lambda _m: None)


def test_the_swap_mask_follows_the_68_points(tmp_path, default_models_dir, identity_photos, portrait_paths):
    """With the default install the classic swap blends inside the outline of the face mesh's 68 points
    (extended over the forehead and temples, which the 68 points do not reach)."""
    from facecache.analysis.analyzer import FaceAnalyzer
    from facecache.analysis.factory import build_model_set
    from facecache.models.runtime import SessionFactory
    from facecache.models.store import ModelStore
    from facecache.store.cache import FaceCache

    target = tmp_path / "biden.png"
    cv2.imwrite(str(target), identity_photos["biden"])
    assert main(["swap", "--source", str(portrait_paths["astronaut"]), "--target", str(target),
                 "--out", str(tmp_path / "out"), "--cache-dir", str(tmp_path / "cache"),
                 "--models-dir", str(default_models_dir), "--providers", "cpu"]) == 0
    result = cv2.imread(str(tmp_path / "out" / "biden_swapped.png"))
    analyzer = FaceAnalyzer(FaceCache(tmp_path / "cache"), build_model_set(ModelStore(default_models_dir),
                                                                          SessionFactory("cpu")))
    [analysed] = analyzer.analyze_media(target, needed=analyzer.stages(embeddings=False))
    [face] = analysed.record.faces
    assert analyzer.inferences.total == 0 and face.landmarks68 is not None  # the swap's own analysis, cached
    hull = np.zeros(result.shape[:2], np.uint8)
    cv2.fillConvexPoly(hull, cv2.convexHull(face.landmarks68.astype(np.int32)), 1)
    hull = cv2.dilate(hull, np.ones((7, 7), np.uint8))  # interpolation at the edge
    changed = np.abs(result.astype(int) - identity_photos["biden"]).max(axis=2) > 0
    assert changed.sum() > 0.3 * hull.sum()  # the face was swapped ...
    # ... mostly inside its 68-point outline (the mask also reaches over the forehead and temples)
    inside = (changed & (hull > 0)).sum() / changed.sum()
    assert inside > 0.7, inside


def test_the_recognizer_runs_only_where_an_embedding_is_needed(tmp_path, default_models_dir, identity_photos,
                                                               portrait_paths, capsys):
    """The classic swapper with the one selector needs no identity: neither the new source face nor the
    target runs FaceNet. A later run that selects by reference computes the embeddings alone from the
    same cache (no detection, no landmarks again) for the faces it already knows."""
    target = tmp_path / "biden.png"
    cv2.imwrite(str(target), identity_photos["biden"])
    reference = tmp_path / "obama.png"
    cv2.imwrite(str(reference), identity_photos["obama"])
    common = ["--target", str(target), "--out", str(tmp_path / "out"), "--cache-dir", str(tmp_path / "cache"),
              "--models-dir", str(default_models_dir), "--providers", "cpu", "--json"]

    def swap(*options):
        assert main(["swap", "--source", str(portrait_paths["astronaut"]), *options, *common]) == 0
        return json.loads(capsys.readouterr().out)["inferences"]

    # source and target: detected and landmarked, no embedding; the face swapped
    assert swap() == {"detect": 2, "landmark": 2, "embed": 0, "swap": 1}
    # the reference photo is new (every stage); the target's and source's records gain only what they lack:
    # the target an embedding, the source nothing (the classic swapper does not need its identity);
    # the target is not the reference person, so nothing is swapped
    assert swap("--selector", "reference", "--reference", str(reference)) == \
        {"detect": 1, "landmark": 1, "embed": 2, "swap": 0}
    assert swap("--selector", "reference", "--reference", str(reference)) == \
        {"detect": 0, "landmark": 0, "embed": 0, "swap": 0}
    # a swapper that needs the source's identity later: the source's cached record gains its embedding alone
    from facecache.pipeline import Settings, build_analyzer
    from facecache.swap.sources import SourceSet

    analyzer = build_analyzer(Settings(cache_dir=str(tmp_path / "cache"), models_dir=str(default_models_dir),
                                       providers="cpu"))
    sources = SourceSet.load([portrait_paths["astronaut"]], analyzer, embeddings=True)
    assert sources.has_embeddings and analyzer.inferences.as_dict() == {"detect": 0, "landmark": 0, "embed": 1}
