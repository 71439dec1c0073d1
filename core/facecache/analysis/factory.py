"""Build the analysis model set from installed models and settings.

The detector is MTCNN (the embedded default) unless another installed detector
is chosen; MTCNN follows faces from frame to frame unless tracking is off. The 68-point landmarker and the recognizer are used when installed
("auto": FaceFusion's when installed, else the embedded default's face mesh and
FaceNet), or when named; "none" switches them off.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from facecache import choices
from facecache.analysis.analyzer import ModelSet
from facecache.analysis.arcface import ArcFaceRecognizer
from facecache.analysis.face_mesh import FaceMeshLandmarker
from facecache.analysis.facenet import FaceNetRecognizer
from facecache.analysis.fan68 import Fan68Landmarker
from facecache.analysis.mtcnn import MtcnnDetector
from facecache.analysis.scrfd import ScrfdDetector
from facecache.analysis.tracking import TrackingDetector, TrackingSettings
from facecache.analysis.yoloface import YoloFaceDetector
from facecache.errors import FaceCacheError, ModelRefused
from facecache.models.cpu_graphs import SAME_NUMBERS
from facecache.models.runtime import SessionFactory
from facecache.models.installed import InstalledModel
from facecache.models.store import ModelStore

# The adapter of each model, in the order of facecache.choices: the order "auto" prefers them.
_ADAPTERS = {"2dfan4": Fan68Landmarker, "face_mesh_468": FaceMeshLandmarker,
             "arcface_w600k_r50": ArcFaceRecognizer, "facenet_512": FaceNetRecognizer}
LANDMARKERS = {name: _ADAPTERS[name] for name in choices.models(choices.LANDMARKERS)}
RECOGNIZERS = {name: _ADAPTERS[name] for name in choices.models(choices.RECOGNIZERS)}


@dataclass(frozen=True)
class AnalysisSettings:
    detector: str = "mtcnn"
    landmarker: str = "auto"   # "auto", "none" or a landmarker's name
    recognizer: str = "auto"   # "auto", "none" or a recognizer's name
    score_threshold: float = 0.5  # for the FaceFusion detectors
    tracking: bool = True  # MTCNN follows faces from frame to frame (facecache.analysis.tracking)


@dataclass(frozen=True)
class DetectorKind:
    """How the engine makes one detector. A new detector is its `DetectorChoice` in `choices.DETECTORS`, its
    model's `ModelSpec` in `models/catalog.py`, its adapter and one line in `DETECTOR_KINDS`."""
    build: Callable[[ModelStore, SessionFactory, InstalledModel, AnalysisSettings], object]
    uses_score_threshold: bool = True  # AnalysisSettings.score_threshold changes its faces (and the namespace)
    # Whether it follows faces from frame to frame when tracking is on (TrackingDetector) is its choice's
    # `tracks` (choices.DETECTORS), where the add-on's panel reads it too.


def detector_kind(name: str) -> DetectorKind:
    """The kind record of a detector's name; an unknown name is refused, naming the known ones."""
    if name not in DETECTOR_KINDS:
        raise FaceCacheError(f"unknown detector {name!r}: choose one of {', '.join(DETECTOR_KINDS)}")
    return DETECTOR_KINDS[name]


def build_model_set(models: ModelStore, sessions: SessionFactory, settings: AnalysisSettings = AnalysisSettings()) -> ModelSet:
    """Check and digest the chosen models now (ModelMissing names the install command);
    their ONNX sessions are created only when a frame needs them, from bytes that have the digests
    the namespace is named after (`ModelStore.session`)."""
    detector = detector_kind(settings.detector)
    landmarker = _optional(models, settings.landmarker, LANDMARKERS, "landmarker")
    recognizer = _optional(models, settings.recognizer, RECOGNIZERS, "recognizer")
    chosen = {name: models.model(name) for name in (settings.detector, landmarker, recognizer) if name}
    tracks = choices.choice(choices.DETECTORS, settings.detector).tracks
    tracking = TrackingSettings() if settings.tracking and tracks else None
    namespace_settings = {"detector": settings.detector, "landmarker": landmarker, "recognizer": recognizer,
                          "score_threshold": settings.score_threshold if detector.uses_score_threshold else None}
    if tracking is not None:  # absent without tracking: the records of every frame searched whole stay valid
        namespace_settings["tracking"] = tracking.describe()
    # The CPU forms of the files that give other numbers than the file itself (absent where none does:
    # those records stay valid). Named whatever the provider: a GPU's numbers differ from the CPU's anyway.
    cpu_graphs = {f"{name}/{item.role}": item.cpu_graph for name, model in chosen.items()
                  for item in model.spec.files if item.cpu_graph not in SAME_NUMBERS}
    if cpu_graphs:
        namespace_settings["cpu_graphs"] = cpu_graphs
    return ModelSet(
        digests={name: model.digest for name, model in chosen.items()},
        settings=namespace_settings,
        build_detector=lambda: _detector(models, sessions, chosen[settings.detector], settings, tracking),
        build_landmarker=(lambda: LANDMARKERS[landmarker](models.session(sessions, chosen[landmarker]), model=landmarker))
        if landmarker else None,
        build_recognizer=(lambda: RECOGNIZERS[recognizer](models.session(sessions, chosen[recognizer]), model=recognizer))
        if recognizer else None,
    )


def _detector(models: ModelStore, sessions: SessionFactory, model: InstalledModel, settings: AnalysisSettings,
              tracking: TrackingSettings | None):
    detector = detector_kind(settings.detector).build(models, sessions, model, settings)
    return detector if tracking is None else TrackingDetector(detector, tracking)


def _mtcnn(models: ModelStore, sessions: SessionFactory, model: InstalledModel, settings: AnalysisSettings):
    return MtcnnDetector(*(models.session(sessions, model, role) for role in ("pnet", "rnet", "onet")))


def _facefusion(adapter):
    """The builder of a FaceFusion detector: one ONNX session, and the score threshold."""

    def build(models: ModelStore, sessions: SessionFactory, model: InstalledModel, settings: AnalysisSettings):
        return adapter(models.session(sessions, model), score_threshold=settings.score_threshold,
                       model=settings.detector)

    return build


# One record per name of choices.DETECTORS (tests/analysis/test_detector_kinds.py checks they match). MTCNN
# has its own fixed thresholds; it alone follows faces (choices.DETECTORS: analysis.tracking searches regions with
# its cascade).
DETECTOR_KINDS: dict[str, DetectorKind] = {
    "mtcnn": DetectorKind(_mtcnn, uses_score_threshold=False),
    "scrfd_2.5g": DetectorKind(_facefusion(ScrfdDetector)),
    "retinaface_10g": DetectorKind(_facefusion(ScrfdDetector)),
    "yoloface_8n": DetectorKind(_facefusion(YoloFaceDetector)),
}


def _optional(models: ModelStore, choice: str, names, what: str) -> str | None:
    if choice == "none":
        return None
    if choice == "auto":
        # A file `models import` refused (junk, a wrong contract) is skipped, as it was when imported; an
        # installed model that fails its check raises ModelCorrupt (set aside; the message names the
        # install command): a run asked to use what is installed stops rather than going on without it.
        return next((name for name in names if models.is_installed(name, absent_when=ModelRefused)), None)
    if choice not in names:
        raise FaceCacheError(f"unknown {what} {choice!r}: choose auto, none or one of {', '.join(names)}")
    return choice

