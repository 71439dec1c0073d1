"""The one way from settings to a pipeline: the CLI, the worker (and through it the Blender add-on),
the benchmarks and the demo all build their analyzer, sources, selector, swapper and swap job here.

    settings = Settings.from_dict({"cache_dir": "...", "sources": ["face.png"], "swapper": "classic"})
    pipeline = build_pipeline(settings)                  # checks models and sources now
    report = pipeline.swap_job().run(target, out_dir, frames)

`Settings` checks every value against `facecache.choices` (names and ranges), so a bad value is one
message before any work starts, and turns itself into each part's arguments (`analysis`, `yaw_limit`,
`composite`): the settings flow one way, from `Settings` through the build steps into the parts. `Parts`
holds what a long-lived process keeps warm between pipelines (model stores, ONNX sessions, built models,
analysed source sets, bound swappers), keyed by those arguments alone; a one-shot caller simply omits it.
"""

from __future__ import annotations

import dataclasses
import json
import math
import os
from dataclasses import dataclass
from pathlib import Path

from facecache import choices, protocol
from facecache.errors import BadValue, FaceCacheError
from facecache.locations import resolve_cache_dir
from facecache.store.cache import DEFAULT_MAX_BYTES, FaceCache
from facecache.store.remote import RemoteURL, remote_from


STAGES = ("detect", "landmark", "embed", "swap")  # model runs are counted by these stages


class SettingsError(FaceCacheError):
    """A setting has an unknown name or a value out of its range."""


@dataclass(frozen=True)
class Settings:
    """Everything a run depends on besides its targets (media, frames, output folder)."""

    cache_dir: str | None = None  # None: $FACECACHE_DIR, else the per-user cache folder
    max_bytes: int = DEFAULT_MAX_BYTES
    models_dir: str | None = None  # None: $FACECACHE_MODELS, else the per-user data folder
    providers: str = choices.DEFAULTS["providers"]
    detector: str = choices.DEFAULTS["detector"]
    tracking: str = choices.DEFAULTS["tracking"]  # "on": MTCNN follows faces from frame to frame
    landmarker: str = choices.DEFAULTS["landmarker"]
    recognizer: str = choices.DEFAULTS["recognizer"]
    swapper: str = choices.DEFAULTS["swapper"]
    selector: str = choices.DEFAULTS["selector"]
    sources: tuple[str, ...] = ()
    source_face: int = int(choices.SOURCE_FACE.default)
    position: tuple[float, float] | None = None  # for the `one` selector: fractions of width, height
    references: tuple[str, ...] = ()  # for the `reference` selector
    reference_threshold: float = choices.REFERENCE_THRESHOLD.default
    mask_blur: float = choices.MASK_BLUR.default
    color_match: float = choices.COLOR_MATCH.default
    opacity: float = choices.OPACITY.default
    output_form: str = choices.DEFAULTS["output_form"]
    limit_yaw: bool = True  # the classic swapper leaves faces turned past max_yaw as they are
    max_yaw: float = choices.MAX_YAW.default
    picture_rules: str = choices.DEFAULTS["picture_rules"]  # whose picture of a movie: the Blender showing it
    remote_cache: str | None = None  # s3://bucket/prefix; None: no remote tier (the CLI fills it from its variable)
    remote_read_only: bool = False  # read the remote tier, never upload to it (render nodes)

    def __post_init__(self) -> None:
        """Every value checked by type, then against its choices or range: a wrong one is a SettingsError
        (exit code 2) naming the setting, never a failure deeper in."""
        for field in ("cache_dir", "models_dir"):
            if getattr(self, field) == "":  # empty, as an empty environment variable: the default folder
                object.__setattr__(self, field, None)
            if getattr(self, field) is not None:
                object.__setattr__(self, field, path_value(getattr(self, field), field.replace("_", " ")))
        for field in ("sources", "references"):
            object.__setattr__(self, field, _path_list(getattr(self, field), field))
        for field, options in (("providers", choices.PROVIDERS), ("detector", choices.DETECTORS),
                               ("tracking", choices.TRACKING),
                               ("landmarker", choices.LANDMARKERS), ("recognizer", choices.RECOGNIZERS),
                               ("swapper", choices.SWAPPERS), ("selector", choices.SELECTORS),
                               ("output_form", choices.OUTPUT_FORMS), ("picture_rules", choices.PICTURE_RULES)):
            value = getattr(self, field)
            if not isinstance(value, str) or value not in choices.names(options):
                raise SettingsError(f"unknown {field.replace('_', ' ')} {_shown(value)}: choose one of "
                                    f"{', '.join(choices.names(options))}")
        for number in (*choices.COMPOSITE, choices.REFERENCE_THRESHOLD, choices.SOURCE_FACE, choices.MAX_YAW):
            object.__setattr__(self, number.name, _checked_number(number, getattr(self, number.name)))
        for field in ("limit_yaw", "remote_read_only"):
            if not isinstance(getattr(self, field), bool):
                raise SettingsError(f"{field.replace('_', ' ')} must be true or false, got {_shown(getattr(self, field))}")
        if self.remote_cache == "":
            object.__setattr__(self, "remote_cache", None)
        if self.remote_cache is not None:
            try:
                RemoteURL.parse(str(self.remote_cache))
            except BadValue as exc:
                raise SettingsError(str(exc)) from None
        if self.position is not None:
            if not (isinstance(self.position, (list, tuple)) and len(self.position) == 2
                    and all(_real(v) and 0.0 <= v <= 1.0 for v in self.position)):
                raise SettingsError(f"position {_shown(self.position)} must be two fractions 0..1 (x, y), "
                                    "e.g. 0.5,0.4")
            object.__setattr__(self, "position", (float(self.position[0]), float(self.position[1])))
        max_bytes = _whole(self.max_bytes)
        if max_bytes is None or max_bytes < 0:
            raise SettingsError(f"the cache size cap must be a whole number of bytes, 0 or more, got "
                                f"{_shown(self.max_bytes)}")
        object.__setattr__(self, "max_bytes", max_bytes)

    @classmethod
    def from_dict(cls, data: dict) -> "Settings":
        """Settings from a JSON object (the worker's requests); unknown keys are an error, so a caller
        and the engine that disagree about a name fail loudly instead of dropping the setting."""
        if not isinstance(data, dict):
            raise SettingsError("settings must be a JSON object")
        known = {field.name for field in dataclasses.fields(cls)}
        unknown = sorted(set(data) - known)
        if unknown:
            raise SettingsError(f"unknown setting(s) {', '.join(unknown)}: known settings are "
                                f"{', '.join(sorted(known))}")
        return cls(**{key: value for key, value in data.items() if value is not None})

    @classmethod
    def from_args(cls, args) -> "Settings":
        """Settings from a parsed command line whose option names are the settings' names."""
        values = {field.name: getattr(args, field.name) for field in dataclasses.fields(cls) if hasattr(args, field.name)}
        for key in ("cache_dir", "models_dir"):
            if values.get(key) is not None:
                values[key] = str(values[key])
        return cls(**{k: v for k, v in values.items() if v is not None})

    def as_dict(self) -> dict:
        return dataclasses.asdict(self)

    @property
    def analysis(self):
        """What the analysis models are chosen and made with (`analysis.factory.build_model_set`)."""
        from facecache.analysis.factory import AnalysisSettings

        return AnalysisSettings(self.detector, self.landmarker, self.recognizer, tracking=self.tracking == "on")

    @property
    def yaw_limit(self) -> float | None:
        """The swapper's yaw limit in degrees (`swap.factory.build_swapper`); None: every face is swapped."""
        return float(self.max_yaw) if self.limit_yaw else None

    @property
    def composite(self):
        from facecache.swap.composite import CompositeParams

        return CompositeParams(mask_blur=self.mask_blur, color_match=self.color_match, opacity=self.opacity)

    def without_composite(self) -> "Settings":
        """The same settings with default blend values: what a swap's cached crops depend on."""
        return dataclasses.replace(self, **{number.name: number.default for number in choices.COMPOSITE})

    def key(self) -> str:
        return json.dumps(self.as_dict(), sort_keys=True)


def _checked_number(number: choices.Number, value) -> float | int:
    """A finite number within its range; a whole one where the setting counts (its default is an int)."""
    whole = isinstance(number.default, int)
    checked = _whole(value) if whole else (float(value) if _real(value) else None)
    if checked is None:
        kind = "a whole number" if whole else "a number"
        raise SettingsError(f"{number.name.replace('_', ' ')} must be {kind}, got {_shown(value)}")
    if not number.holds(checked):
        raise SettingsError(f"{number.name.replace('_', ' ')} {value!r} is out of range: use a value between "
                            f"{number.minimum:g} and {number.maximum:g}")
    return checked


def _real(value) -> bool:
    """A finite int or float (not a bool: JSON's true is no number)."""
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def _whole(value) -> int | None:
    """A whole number (an int, or a float with no fraction), else None."""
    if isinstance(value, float) and _real(value) and value.is_integer():
        return int(value)
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def path_value(value, what: str) -> str:
    """A path setting as a string: text (or a path object) that names something, without NUL characters."""
    if isinstance(value, os.PathLike):
        value = os.fspath(value)
    if not isinstance(value, str) or not value or "\0" in value:
        raise SettingsError(f"{what} must be a path (non-empty text without NUL characters), got {_shown(value)}")
    return value


def _path_list(value, what: str) -> tuple[str, ...]:
    """A list of paths (empty entries skipped)."""
    if not isinstance(value, (list, tuple)):
        raise SettingsError(f"{what} must be a list of image paths, got {_shown(value)}")
    return tuple(path_value(item, f"each of {what}") for item in value if item not in ("", None))


def _shown(value) -> str:
    """A value as a message shows it: short, whatever it is."""
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


class Parts:
    """What pipelines of one process share, kept warm between them: model stores, ONNX session
    factories, model sets (with their loaded models), analysed source sets and bound swappers.
    Everything is keyed by what it depends on (file digests, stats of the source images), so an
    installed model or an edited source image gives a new part, never a stale one. Each part is made
    from the arguments it is given: Parts knows nothing of `Settings`, and no part asks it for another."""

    def __init__(self) -> None:
        self._stores: dict = {}
        self._sessions: dict = {}
        self._model_sets: dict = {}
        self._sources: dict = {}
        self._swappers: dict = {}

    def model_store(self, models_dir: str | None):
        from facecache.models.store import ModelStore

        if models_dir not in self._stores:
            self._stores[models_dir] = ModelStore(models_dir)
        return self._stores[models_dir]

    def sessions(self, providers: str):
        from facecache.models.runtime import SessionFactory

        if providers not in self._sessions:
            self._sessions[providers] = SessionFactory(providers)
        return self._sessions[providers]

    def model_set(self, models, sessions, analysis):
        """The model set of `analysis` (`Settings.analysis`) from this store, run by these sessions."""
        from facecache.analysis.factory import build_model_set

        fresh = build_model_set(models, sessions, analysis)
        # the store and the sessions themselves (one per folder and providers here) name where it comes from
        key = (models, sessions, json.dumps([fresh.digests, fresh.settings], sort_keys=True))
        return self._model_sets.setdefault(key, fresh)

    def source_set(self, paths: tuple[str, ...], face_rank: int, analyzer, embeddings: bool = True):
        from facecache.swap.sources import SourceSet

        # Per cache folder too: loading a set stores the sources' analyses in the cache, where the
        # project's other processes (render nodes, teammates) look for them.
        key = (str(analyzer.cache.root), analyzer.namespace.key, face_rank, embeddings,
               tuple((p, *_file_version(p)) for p in paths))
        if key not in self._sources:
            self._sources[key] = SourceSet.load([Path(p) for p in paths], analyzer, face_rank, embeddings)
        return self._sources[key]

    def swapper(self, name: str, sources, models, sessions, max_yaw: float | None):
        """The swapper `name` bound to `sources` (`max_yaw`: `Settings.yaw_limit`)."""
        from facecache.swap.factory import build_swapper

        key = (name, sources.digest, models, sessions, max_yaw)
        if key not in self._swappers:
            self._swappers[key] = build_swapper(name, sources, models, sessions, max_yaw)
        return self._swappers[key]


def _file_version(path: str) -> tuple:
    try:
        st = os.stat(path)
    except OSError:
        return (None, None)
    return (st.st_size, st.st_mtime_ns)


@dataclass
class Pipeline:
    settings: Settings
    analyzer: object  # FaceAnalyzer
    sources: object = None  # SourceSet (swap pipelines)
    selector: object = None  # Selector
    swapper: object = None  # BoundSwapper

    def swap_job(self):
        from facecache.jobs.swap_job import SwapJob

        return SwapJob(self.analyzer, self.swapper, self.sources, self.selector, self.settings.composite,
                       self.settings.output_form)

    def summary(self, report, targets: str) -> dict:
        """A swap run's figures (the CLI's `--json` keys): frames, written, skipped, faces, model runs by
        stage; with a warning when no face was swapped in `targets` (names for the message)."""
        from facecache.jobs.run_summary import no_face_warning

        summary = {**report.as_dict(), protocol.CANCELLED: report.cancelled,
                   protocol.INFERENCES: self.analyzer.inferences.runs(STAGES),
                   protocol.ANALYSIS_CACHE: self.analyzer.stats.as_dict()}
        summary.update(end_of_job(self.analyzer.cache))
        warning = no_face_warning(summary, targets)
        if warning:
            summary[protocol.WARNING] = warning
        return summary


def open_cache(settings: Settings, create: bool = True) -> FaceCache:
    """The settings' cache, with its remote tier where one is set (`create=False`: only looked at, nothing
    created or changed)."""
    return FaceCache(resolve_cache_dir(settings.cache_dir), max_bytes=int(settings.max_bytes), create=create,
                     remote=remote_from(settings.remote_cache, settings.remote_read_only))


_WARNINGS_SAID = 3  # a status line's worth: files that cannot be read are said one by one


def end_of_job(cache: FaceCache) -> dict:
    """At a job's end: the hits each tier served are kept in the cache (`cache stats`); what the remote tier
    did in this run, and what the cache could not do (its warnings, the first few), are returned for the
    summary."""
    cache.keep_hits()
    said = {} if cache.remote is None else {protocol.REMOTE: cache.remote.counters.as_dict()}
    warnings = cache.warnings + ([] if cache.remote is None else cache.remote.warnings)
    if warnings:
        more = len(warnings) - _WARNINGS_SAID
        said[protocol.CACHE_WARNING] = "; ".join(warnings[:_WARNINGS_SAID]) + (f"; and {more} more" if more > 0 else "")
    return said


def build_analyzer(settings: Settings, parts: Parts | None = None):
    """The analyzer of these settings (models checked now, loaded when a frame needs them)."""
    from facecache.analysis.analyzer import FaceAnalyzer
    from facecache.media.picture_rules import picture_rules

    parts = parts or Parts()
    cache = open_cache(settings)
    model_set = parts.model_set(parts.model_store(settings.models_dir), parts.sessions(settings.providers),
                                settings.analysis)
    return FaceAnalyzer(cache, model_set, picture_rules=picture_rules(settings.picture_rules))


def build_pipeline(settings: Settings, parts: Parts | None = None) -> Pipeline:
    """Analyzer, source set, selector and swapper for a swap; errors name what to do. Each step is handed
    what it needs from the settings (`Settings.analysis`, `.yaw_limit`, ...) and gives back its part."""
    from facecache.analysis.selection import Selector, reference_threshold
    from facecache.swap.factory import swapper_kind

    parts = parts or Parts()
    analyzer = build_analyzer(settings, parts)
    if not settings.sources:
        raise FaceCacheError("no source face set: give a source face image (--source IMG, or the Face Swap panel)")
    sources = parts.source_set(settings.sources, settings.source_face, analyzer,
                               embeddings=swapper_kind(settings.swapper).needs_source_embedding)
    threshold = settings.reference_threshold or reference_threshold(analyzer.models.settings.get("recognizer"))
    references = _reference_embeddings(settings.selector, settings.references, analyzer, parts)
    selector = Selector(settings.selector, settings.position, references, threshold)
    swapper = parts.swapper(settings.swapper, sources, parts.model_store(settings.models_dir),
                            parts.sessions(settings.providers), settings.yaw_limit)
    return Pipeline(settings, analyzer, sources, selector, swapper)


def _reference_embeddings(selector: str, photos: tuple[str, ...], analyzer, parts: Parts) -> tuple:
    if selector != "reference":
        return ()
    if not photos:
        raise FaceCacheError("the reference selector needs at least one reference photo of the person to replace "
                             "(--reference IMG, or Reference Faces in the panel)")
    references = parts.source_set(photos, 0, analyzer)
    if not references.has_embeddings:
        raise FaceCacheError("the reference selector needs face embeddings: install the default models, which "
                             "include a recognizer (`facecache models install default`), and keep the recognizer on "
                             "auto; or use the one or many selector")
    return tuple(face.face.embedding for face in references.faces)
