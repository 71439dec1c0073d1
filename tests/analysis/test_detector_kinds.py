"""Detectors are kind records, one per choice, and a name without one is refused wherever it is given."""

from __future__ import annotations

import shutil
import zlib

import numpy as np
import pytest
from analysis_graphs import standin_model

from facecache import choices
from facecache.analysis.factory import DETECTOR_KINDS, AnalysisSettings, _detector, build_model_set
from facecache.errors import FaceCacheError
from facecache.models.runtime import SessionFactory
from facecache.models.store import ModelStore

KNOWN = f"choose one of {', '.join(choices.names(choices.DETECTORS))}$"


def test_every_detector_choice_is_one_kind_record():
    assert tuple(DETECTOR_KINDS) == choices.names(choices.DETECTORS)


def test_an_unknown_detector_is_refused_naming_the_known_ones(models_dir):
    models, sessions = ModelStore(models_dir), SessionFactory("cpu")
    with pytest.raises(FaceCacheError, match=f"unknown detector 'scrfd_10g': {KNOWN}"):
        build_model_set(models, sessions, AnalysisSettings(detector="scrfd_10g"))
    # not made as SCRFD, as any name but MTCNN's and YOLOface's once was
    with pytest.raises(FaceCacheError, match=f"unknown detector 'scrfd_10g': {KNOWN}"):
        _detector(models, sessions, models.model("mtcnn"), AnalysisSettings(detector="scrfd_10g"), None)


def test_only_the_detectors_that_use_it_key_the_score_threshold(models_dir):
    """MTCNN has thresholds of its own: the FaceFusion detectors' threshold stays out of its namespace,
    and MTCNN alone follows faces."""
    model_set = build_model_set(ModelStore(models_dir), SessionFactory("cpu"), AnalysisSettings(score_threshold=0.7))
    assert model_set.settings["score_threshold"] is None and "tracking" in model_set.settings
    assert [name for name, kind in DETECTOR_KINDS.items() if not kind.uses_score_threshold] == ["mtcnn"]
    assert [detector.name for detector in choices.DETECTORS if detector.tracks] == ["mtcnn"]


def test_a_detector_follows_faces_where_its_choice_says_so(tmp_path, models_dir):
    """The add-on's panel offers the tracking menu by the detector's choice (`DetectorChoice.tracks`); the
    engine's namespace follows the same record: SCRFD (a stand-in) searches every frame, tracking on or off."""
    folder = tmp_path / "facefusion"
    folder.mkdir()
    counts = [(640 // stride) ** 2 * 2 for stride in (8, 16, 32)]
    names = [f"{what}_{stride}" for what in ("score", "bbox", "kps") for stride in (8, 16, 32)]
    outputs = [np.zeros((n, width)) for width in (1, 4, 10) for n in counts]
    model = standin_model(folder / "scrfd_2.5g.onnx", "input", [1, 3, 640, 640], list(zip(names, outputs)))
    (folder / "scrfd_2.5g.hash").write_text(f"{zlib.crc32(model.read_bytes()):08x}")
    (tmp_path / "models").mkdir()
    for path in ModelStore(models_dir).paths("mtcnn").values():
        shutil.copy(path, tmp_path / "models" / path.name)
    models = ModelStore(tmp_path / "models")
    models.import_folder(folder)
    for detector in ("mtcnn", "scrfd_2.5g"):
        namespace = build_model_set(models, SessionFactory("cpu"), AnalysisSettings(detector=detector)).settings
        assert ("tracking" in namespace) == choices.choice(choices.DETECTORS, detector).tracks, detector
