"""Detectors are kind records, one per choice, and a name without one is refused wherever it is given."""

from __future__ import annotations

import pytest

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
    assert [name for name, kind in DETECTOR_KINDS.items() if not kind.uses_score_threshold or kind.tracks] == ["mtcnn"]
