"""The engine's JSON-lines protocol, for both of its sides: every key of a request, an item, an answer
(progress, result, error) and a job's summary is spelled here once, as a constant, and the shape of each
message is a TypedDict. The engine (`engine`, `serve`, `worker`) writes and reads its messages with these
names, and so does the Blender add-on, which loads this module inside Blender through
`engine_client.engine_module("protocol")`, as it loads `choices`: standard library only.

Why TypedDicts and not dataclasses: a message is a JSON object on a pipe, and both sides keep it a plain
dict (the engine builds a summary step by step and adds to it; the add-on gets what `json.loads` gives).
A TypedDict describes such a dict for the reader and a type checker and costs nothing at run time; a
dataclass would need converting both ways at every boundary. The TypedDicts are written in the functional
form, with the constants as keys, so each key is spelled once (a type checker that insists on literal keys
reads the constants' values the same). `from` is a key no class body could name.

    request   {"id": 7, "kind": "swap", "settings": {...}, "items": [{"media", "start", "stop", "out"}]}
              (an item may add "deinterlace": true: the picture of a strip with Blender's Deinterlace option)
    cancel    {"id": 8, "kind": "cancel", "target": 7}
    progress  {"id": 7, "type": "progress", "done": 3, "total": 24, "label": "clip.mp4"}
    result    {"id": 7, "type": "result", "summary": {...}}
    error     {"id": 7, "type": "error", "message": "...", "kind": "ModelMissing", "exit_code": 2}

The one-job mode (`python -m facecache.worker`) speaks the same messages without ids. The settings are the
fields of `facecache.pipeline.Settings` (`SETTINGS`; tests/test_protocol.py checks that they are the same).
"""

from __future__ import annotations

from typing import Any, TypedDict

# -- a request ---------------------------------------------------------------------------------------
ID = "id"  # the caller's id for a request, carried back by every answer (the engine session)
KIND = "kind"  # a request's job kind (engine.JOB_KINDS), or an error's kind (the exception's name)
SETTINGS = "settings"
ITEMS = "items"
TARGET = "target"  # a cancel's: the id of the request to stop
MODELS = "models"  # install_models: the model names
FROM = "from"  # install_models: the folder of the pinned packages
FOLDER = "folder"  # import_models: FaceFusion's models folder; remote_support_install/uninstall: the support's
CUDA = "cuda"  # gpu_install: "12" or "13"
SESSIONS = "sessions"  # gpu_status: also say where each model's session runs
CANCEL = "cancel"  # the kind of a cancel request

# -- an item: media frames start..stop-1 of one file, and where its outputs go --------------------------
MEDIA = "media"
START = "start"
STOP = "stop"
OUT = "out"
DEINTERLACE = "deinterlace"  # a movie's picture as a strip with the Deinterlace option shows it (default false)

# -- an answer -----------------------------------------------------------------------------------------
TYPE = "type"
PROGRESS = "progress"  # the types of answer
RESULT = "result"
ERROR = "error"
DONE = "done"
TOTAL = "total"
LABEL = "label"
SUMMARY = "summary"
MESSAGE = "message"  # an error's line, and a summary's sentence in the CLI's words
EXIT_CODE = "exit_code"
REFUSED_ID = "refused_id"  # a request refused because its id is in use: that id (the answer's id is null)
CANCELLED_KIND = "Cancelled"  # the error kind of a cancelled request (facecache.errors.Cancelled)

# -- a summary: the CLI's `--json` keys, and what the engine adds for its callers -------------------------
FRAMES = "frames"
WRITTEN = "written"
SKIPPED = "skipped"
INFERENCES = "inferences"  # model runs by stage
SECONDS = "seconds"
FACES = "faces"  # an analysis's faces found
FACES_FOUND = "faces_found"  # a swap's
FACES_SWAPPED = "faces_swapped"
FACES_TURNED_AWAY = "faces_turned_away"  # left as they were: turned past the swapper's yaw limit
ANALYSIS_CACHE = "analysis_cache"  # the analyses' cache figures (hits, ...)
SWAP_CACHE = "swap_cache"
REMOTE = "remote"  # what the remote cache tier did: groups listed, packs fetched and uploaded, bytes
CACHE_WARNING = "cache_warning"  # what the cache could not do: store, read a file, reach the remote tier
CANCELLED = "cancelled"
WARNING = "warning"
ANALYSED = "analysed"  # {picture: [frames]} in the cache (picture: `picture_key`, the media path for most)
SWAPPED = "swapped"  # {picture: [frames]} with an output file
FACELESS = "faceless"  # {picture: [frames]} of those written without a face (one transparent pixel)
TURNED_AWAY = "turned_away"  # {picture: [frames]} with a face left as it was (the yaw limit)
TURNED_AWAY_FRAMES = "turned_away_frames"  # the CLI's list; the engine says it by picture in TURNED_AWAY
OUTPUTS = "outputs"  # a preview's output files
MOVIE_BYTES = "movie_bytes"  # preview_movie: the bytes of the movies written
CACHE_BYTES = "cache_bytes"
PROVIDERS = "providers"  # {model file: the provider its session runs on}; also a setting
GPU_WARNING = "gpu_warning"
STATS = "stats"
PRUNE = "prune"
MODELS_DIR = "models_dir"  # also a setting
INSTALLED = "installed"
IMPORT = "import"
GPU = "gpu"
GPU_INSTALL = "gpu_install"
GPU_UNINSTALL = "gpu_uninstall"
# the extension's remote cache support (facecache.remote_support): what was installed, or removed
REMOTE_SUPPORT_INSTALL = "remote_support_install"
REMOTE_SUPPORT_UNINSTALL = "remote_support_uninstall"

# -- the settings: the fields of facecache.pipeline.Settings -------------------------------------------
CACHE_DIR = "cache_dir"
MAX_BYTES = "max_bytes"
DETECTOR = "detector"
TRACKING = "tracking"
LANDMARKER = "landmarker"
RECOGNIZER = "recognizer"
SWAPPER = "swapper"
SELECTOR = "selector"
SOURCES = "sources"
SOURCE_FACE = "source_face"
POSITION = "position"
REFERENCES = "references"
REFERENCE_THRESHOLD = "reference_threshold"
MASK_BLUR = "mask_blur"
COLOR_MATCH = "color_match"
OPACITY = "opacity"
OUTPUT_FORM = "output_form"
LIMIT_YAW = "limit_yaw"
MAX_YAW = "max_yaw"
PICTURE_RULES = "picture_rules"
REMOTE_CACHE = "remote_cache"  # s3://bucket/prefix, or none
REMOTE_READ_ONLY = "remote_read_only"  # render nodes: read the remote tier, never upload

JobSettings = TypedDict("JobSettings", {
    CACHE_DIR: "str | None", MAX_BYTES: int, MODELS_DIR: "str | None", PROVIDERS: str, DETECTOR: str,
    TRACKING: str, LANDMARKER: str, RECOGNIZER: str, SWAPPER: str, SELECTOR: str, SOURCES: "list[str]",
    SOURCE_FACE: int, POSITION: "list[float] | None", REFERENCES: "list[str]", REFERENCE_THRESHOLD: float,
    MASK_BLUR: float, COLOR_MATCH: float, OPACITY: float, OUTPUT_FORM: str, LIMIT_YAW: bool,
    MAX_YAW: "float | None", PICTURE_RULES: str, REMOTE_CACHE: "str | None", REMOTE_READ_ONLY: bool,
}, total=False)  # a missing setting takes Settings' default
SETTINGS_NAMES: tuple[str, ...] = tuple(JobSettings.__annotations__)

Item = TypedDict("Item", {MEDIA: str, START: int, STOP: int, OUT: str, DEINTERLACE: bool},
                 total=False)  # OUT: kinds that write; DEINTERLACE: only where set
Request = TypedDict("Request", {
    ID: "int | str", KIND: str, SETTINGS: JobSettings, ITEMS: "list[Item]", TARGET: "int | str",
    MODELS: "list[str]", FROM: str, FOLDER: str, CUDA: str, SESSIONS: bool,
}, total=False)
Progress = TypedDict("Progress", {ID: "int | str", TYPE: str, DONE: int, TOTAL: int, LABEL: str}, total=False)
Summary = TypedDict("Summary", {
    KIND: str, MESSAGE: str, SECONDS: float, FRAMES: int, WRITTEN: int, SKIPPED: int, INFERENCES: "dict[str, int]",
    FACES: int, FACES_FOUND: int, FACES_SWAPPED: int, FACES_TURNED_AWAY: int, ANALYSIS_CACHE: "dict[str, int]",
    SWAP_CACHE: "dict[str, int]", REMOTE: "dict[str, int]", CACHE_WARNING: str, CANCELLED: bool, WARNING: str,
    ANALYSED: "dict[str, list[int]]", SWAPPED: "dict[str, list[int]]", FACELESS: "dict[str, list[int]]",
    TURNED_AWAY: "dict[str, list[int]]", TURNED_AWAY_FRAMES: "list[int]", OUTPUTS: "list[str]", MOVIE_BYTES: int,
    CACHE_BYTES: int, PROVIDERS: "dict[str, str]", GPU_WARNING: str, STATS: "dict[str, Any]", PRUNE: "dict[str, Any]",
    MODELS_DIR: str, INSTALLED: "list[str]", IMPORT: "dict[str, Any]", GPU: "dict[str, Any]",
    GPU_INSTALL: "dict[str, Any]", GPU_UNINSTALL: "dict[str, Any]", REMOTE_SUPPORT_INSTALL: "dict[str, Any]",
    REMOTE_SUPPORT_UNINSTALL: "dict[str, Any]",
}, total=False)  # which keys a summary has depends on its kind (facecache.engine's docstring)
Result = TypedDict("Result", {ID: "int | str", TYPE: str, SUMMARY: Summary}, total=False)
Error = TypedDict("Error", {ID: "int | str | None", TYPE: str, MESSAGE: str, KIND: str, EXIT_CODE: int,
                            REFUSED_ID: "int | str"}, total=False)

# The coverage kinds a summary reports by picture ({picture_key: [frames]}): what the add-on shows under strips.
COVERAGE_KINDS = (ANALYSED, SWAPPED, FACELESS)


def item(media: str, start: int, stop: int, out: str | None = None, deinterlace: bool = False) -> Item:
    """One item: media frames start..stop-1 of `media` (and the folder its outputs go to, for the kinds
    that write); `deinterlace`: the picture a strip with the Deinterlace option shows."""
    made: Item = {MEDIA: media, START: start, STOP: stop}
    if out is not None:
        made[OUT] = out
    if deinterlace:
        made[DEINTERLACE] = True
    return made


def frame_range(entry: Item) -> range:
    """The media frames an item covers."""
    return range(int(entry[START]), int(entry[STOP]))


def deinterlaced(entry: Item) -> bool:
    """Whether an item asks for the picture a strip with the Deinterlace option shows."""
    return bool(entry.get(DEINTERLACE, False))


# How the coverage kinds key the Deinterlace option's picture of a file: its path and this. No path holds a NUL,
# so one file's two pictures never share a key, nor does a picture share another file's.
DEINTERLACED_PICTURE = "\0deinterlaced"


def picture_key(media: str, deinterlace: bool) -> str:
    """The key of a file's picture in the coverage kinds ({picture: [frames]}): its path for the picture as
    stored, else the path and DEINTERLACED_PICTURE."""
    return media + DEINTERLACED_PICTURE if deinterlace else media


def picture(entry: Item) -> str:
    """The coverage kinds' key of the picture an item asks for (`picture_key`)."""
    return picture_key(str(entry[MEDIA]), deinterlaced(entry))


def progress(done: int, total: int, label: str) -> Progress:
    return {TYPE: PROGRESS, DONE: done, TOTAL: total, LABEL: label}


def result(summary: Summary) -> Result:
    return {TYPE: RESULT, SUMMARY: summary}


def error(message: str, kind: str, exit_code: int | None = None) -> Error:
    """An error answer; the add-on's own (the engine process died) has no exit code."""
    made: Error = {TYPE: ERROR, MESSAGE: message, KIND: kind}
    if exit_code is not None:
        made[EXIT_CODE] = exit_code
    return made


def cancel(target) -> Request:
    """The request that stops request `target`."""
    return {KIND: CANCEL, TARGET: target}
