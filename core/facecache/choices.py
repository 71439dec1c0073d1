"""Every choice a user makes, as data: the one list the CLI, the worker, the Blender add-on, the
benchmarks and the demo all read, so they cannot drift apart.

Each choice has a name (what settings, the CLI and the cache keys use), a label and a description
(what the add-on's menus and the CLI's help show). Numeric settings carry their range and default,
so every caller checks and offers the same values. Nothing here imports more than the standard
library: the add-on imports it inside Blender's own process.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Choice:
    name: str
    label: str
    description: str


@dataclass(frozen=True)
class DetectorChoice(Choice):
    """A detector, and what the panel shows for it: the tracking menu only where it follows faces."""

    tracks: bool = False  # follows faces from frame to frame when tracking is on (MTCNN alone)


@dataclass(frozen=True)
class SwapperChoice(Choice):
    """A swapper, and what the panel shows for it: the yaw limit only where it uses one."""

    uses_yaw_limit: bool = False  # leaves faces turned past MAX_YAW as they are (the classic swapper)


@dataclass(frozen=True)
class Number:
    """A numeric setting: its range (inclusive) and default."""

    name: str
    label: str
    description: str
    minimum: float
    maximum: float
    default: float

    def holds(self, value: float) -> bool:
        """Whether ``value`` is within the range (every caller checks against it, none by hand)."""
        return self.minimum <= value <= self.maximum


DETECTORS = (
    DetectorChoice("mtcnn", "MTCNN", "The embedded default (installed from the package index); 5 landmarks",
                   tracks=True),
    DetectorChoice("scrfd_2.5g", "SCRFD 2.5G", "FaceFusion's fast InsightFace detector (non-commercial licence)"),
    DetectorChoice("retinaface_10g", "RetinaFace 10G",
                   "FaceFusion's accurate InsightFace detector (non-commercial licence)"),
    DetectorChoice("yoloface_8n", "YOLOface 8n", "FaceFusion's YOLOv8 face detector (GPL-3.0)"),
)
# How MTCNN (the default detector) finds the faces of a movie's frames (facecache.analysis.tracking).
TRACKING = (
    Choice("on", "Follow Faces", "The default: a face found in one frame is looked for where it went in the next, and "
           "new faces only where the picture changed (about 6x faster, as complete); MTCNN only"),
    Choice("off", "Every Frame", "The detector searches every whole frame (the engine before tracking)"),
)
# "auto": the first installed model of the list; "none": switched off.
LANDMARKERS = (
    Choice("auto", "Automatic", "A 68-point landmarker when one is installed, else the detector's 5 points"),
    Choice("none", "None", "The detector's 5 points only"),
    Choice("2dfan4", "2DFAN4", "FaceFusion's 68-point landmarker (MIT)"),
    Choice("face_mesh_468", "Face Mesh", "The embedded default: MediaPipe's 468-point face mesh, 68 points taken "
                                         "from it (Apache-2.0)"),
)
RECOGNIZERS = (
    Choice("auto", "Automatic", "An identity recognizer when one is installed"),
    Choice("none", "None", "No identity embeddings (the classic swapper and the one/many selectors need none)"),
    Choice("arcface_w600k_r50", "ArcFace w600k R50", "FaceFusion's identity recognizer (non-commercial licence)"),
    Choice("facenet_512", "FaceNet", "The embedded default: FaceNet (512-d, MIT), for reference selection; "
                                     "the InSwapper and HyperSwap swappers need ArcFace"),
)
SWAPPERS = (
    SwapperChoice("classic", "Classic", "No model needed: warps the source face onto each target face",
                  uses_yaw_limit=True),
    SwapperChoice("classic_eyes", "Classic, Eyes Follow",
                  "The classic swap, its lids and gaze following the target's: blinks, lowered lids, glances "
                  "(needs the iris model: facecache models install iris_landmark; slower per face)",
                  uses_yaw_limit=True),
    SwapperChoice("inswapper_128", "InSwapper 128", "FaceFusion's inswapper_128 (needs a recognizer; non-commercial)"),
    SwapperChoice("inswapper_128_fp16", "InSwapper 128 fp16",
                  "Half-precision inswapper_128 (needs a recognizer; non-commercial)"),
    SwapperChoice("hyperswap_1a_256", "HyperSwap 1a 256", "FaceFusion's hyperswap_1a_256 (needs a recognizer)"),
)
# The default is one face, the largest: an editor replaces one person in a shot (a stunt double, a
# recast actor), and in a close-up or talking head that person is the largest face; swapping every
# face of a group shot with one source turns everyone into the same person. FaceFusion's default
# likewise follows one person (its "reference" mode, taken from the largest face).
SELECTORS = (
    Choice("one", "Largest Face", "The largest face of each frame (the default), or the face nearest a chosen point"),
    Choice("many", "Every Face", "Every face of each frame"),
    Choice("reference", "Reference", "Faces that look like the reference photos (needs a recognizer)"),
)
PROVIDERS = (
    Choice("auto", "Automatic", "CUDA where it really runs (an NVIDIA driver and the NVIDIA GPU runtime), "
           "else the CPU"),
    Choice("cpu", "CPU", "The processor only"),
    Choice("cuda", "CUDA", "NVIDIA GPUs (install the NVIDIA GPU runtime first)"),
    Choice("tensorrt", "TensorRT", "NVIDIA GPUs; the first run of each model builds an engine (minutes)"),
    Choice("coreml", "CoreML", "Apple's Core ML on macOS; not measured faster than the CPU for these models"),
    Choice("directml", "DirectML", "Any DirectX 12 GPU on Windows; needs onnxruntime-directml in the engine's Python"),
)
OUTPUT_FORMS = (
    Choice("auto", "Automatic", "Whole pictures for stills, face overlays for videos"),
    Choice("overlay", "Overlay", "RGBA images holding only the swapped faces, to lay over the original"),
    Choice("full", "Full", "Whole pictures with the faces swapped"),
    Choice("sequencer", "Sequencer", "Face overlays for a sequencer's image strip: one size per clip, except that "
           "a frame without a face is a single transparent pixel, which costs playback nothing"),
)
# Whose picture of a movie the engine analyses: the rules of the Blender that shows it
# (facecache.media.picture_rules). The add-on passes its own Blender's; the CLI uses the newest.
PICTURE_RULES = (
    Choice("blender-5.2", "Blender 5.2", "The picture Blender 5.2 shows: as Blender 5.0's, and BT.709 tagged with "
           "gamma 2.2 through Blender's view"),
    Choice("blender-5", "Blender 5.0 and 5.1", "The picture Blender 5.0 and 5.1 show: turned upright by the clip's "
           "display matrix, chroma taken per sample, HDR (BT.2020 HLG or PQ) through Blender's view"),
    Choice("blender-4.5", "Blender 4.4 and 4.5", "The picture Blender 4.4 and 4.5 show: as Blender 5's, but HDR "
           "as its code values"),
    Choice("blender-4.2-windows", "Blender 4.2 and 4.3 on Windows", "The picture Blender 4.2 and 4.3 show on "
           "Windows: as on Linux, but 8-bit 4:2:2 in pairs of rows, each odd row with the chroma of the row above"),
    Choice("blender-4.2", "Blender 4.2 and 4.3", "The picture Blender 4.2 and 4.3 show: as coded (a phone's "
           "portrait clip lies on its side), chroma interpolated"),
)
# The Blender versions from which each rule holds, newest first: 4.4's reader applies the display matrix and
# point-sampled chroma (4.5.15 measured; 4.4 has no bpy module to test), 5.0's maps HDR tags to colour spaces,
# 5.2's the whole CICP (5.1.2 and 5.2.3 measured).
PICTURE_RULES_SINCE = (((5, 2, 0), "blender-5.2"), ((5, 0, 0), "blender-5"), ((4, 4, 0), "blender-4.5"),
                       ((0, 0, 0), "blender-4.2"))


# Rules that a platform's build of Blender shows otherwise, by (rules, sys.platform): 4.2's Windows build converts
# 8-bit 4:2:2 with FFmpeg 6.1's C converter (4.2.23 measured under Wine; 4.3 has no Windows bpy module to test).
PICTURE_RULES_ON_PLATFORM = {("blender-4.2", "win32"): "blender-4.2-windows"}


def picture_rules_for(version: tuple[int, ...], platform: str) -> str:
    """The picture rules of a Blender version (bpy.app.version) on a platform (its sys.platform)."""
    name = next(name for since, name in PICTURE_RULES_SINCE if tuple(version[:3]) >= since)
    return PICTURE_RULES_ON_PLATFORM.get((name, platform), name)


# Blend settings: changing them re-runs the composite stage only.
MASK_BLUR = Number("mask_blur", "Mask Blur", "Fade of the face mask's edges, as a fraction of the face size",
                   0.0, 1.0, 0.3)
COLOR_MATCH = Number("color_match", "Color Match", "How much the swapped face takes the original face's colours, "
                     "for every swapper (0 = the swapper's own colours)", 0.0, 1.0, 1.0)
OPACITY = Number("opacity", "Opacity", "How much of the swapped face shows", 0.0, 1.0, 1.0)
COMPOSITE = (MASK_BLUR, COLOR_MATCH, OPACITY)
# The classic swapper leaves faces turned further than this (degrees of yaw, from the cached head
# pose) as they are: it warps a frontal source, which on a profile shows one eye squeezed.
# 45: the group photo's three-quarter face reads 49-57 degrees (68- and 5-point pose) and looks wrong
# swapped; its faces at 36-38 degrees still swap cleanly.
MAX_YAW = Number("max_yaw", "Yaw Limit", "Faces turned further than this (degrees, from the head pose) are left "
                 "as they are by the classic swapper", 1.0, 90.0, 45.0)
# 0 (no face can be closer than that) stands for the recognizer's own threshold, measured per model
# (facecache.analysis.selection.DEFAULT_REFERENCE_THRESHOLDS): one default serves every recognizer.
REFERENCE_THRESHOLD = Number("reference_threshold", "Reference Threshold",
                             "Identity distance under which a face counts as the reference person "
                             "(0 = identical, 1 = opposite); 0 means the recognizer's own: ArcFace 0.3, "
                             "FaceNet (the default) 0.25", 0.0, 1.0, 0.0)
SOURCE_FACE = Number("source_face", "Source Face",
                     "Which face of each source image: 0 = the largest, 1 = the next, ...", 0, 99, 0)

DEFAULTS = {"detector": "mtcnn", "tracking": "on", "landmarker": "auto", "recognizer": "auto", "swapper": "classic",
            "selector": "one", "providers": "auto", "output_form": "auto", "picture_rules": "blender-5.2"}


SWITCHES = ("auto", "none")  # the landmarker and recognizer choices that are not a model


def names(choices: tuple[Choice, ...]) -> tuple[str, ...]:
    return tuple(choice.name for choice in choices)


def choice(choices: tuple[Choice, ...], name: str) -> Choice:
    """The record of one of the names (KeyError for another)."""
    return {option.name: option for option in choices}[name]


def models(choices: tuple[Choice, ...]) -> tuple[str, ...]:
    """The choices that name a model (not "auto" or "none")."""
    return tuple(name for name in names(choices) if name not in SWITCHES)


def help_text(choices: tuple[Choice, ...]) -> str:
    """'name (description), ...' for a command-line help line."""
    return "; ".join(f"{choice.name}: {choice.description}" for choice in choices)
