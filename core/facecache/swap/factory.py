"""Swappers bound to a source set: `swap(frame, target_face) -> SwapResult`.

Each swapper is a kind record in `SWAPPER_KINDS`: how it is bound to a source set, whether it needs the
source's identity embedding, and what changes its pixels (the swap records' key); its `SwapperChoice` says
whether it leaves faces turned past the yaw limit as they are. `classic` needs no model (it uses the first
source image of the set); `inswapper_128` and `hyperswap_1a_256` need their FaceFusion model and a
recognizer for the source embedding. Models are loaded on the first swap. Every result carries its fitted
colour transfer (applied by the composite).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field
from typing import Callable

import numpy as np

from facecache import choices
from facecache.analysis.iris import IRIS_MODEL, IrisChecker
from facecache.errors import FaceCacheError
from facecache.models.derived import EMAP
from facecache.models.runtime import SessionFactory
from facecache.models.store import ModelStore
from facecache.swap.classic import ClassicSource, ClassicSwapper
from facecache.swap.composite import with_color_transfer
from facecache.swap.eye_follow import EYES_FOLLOW
from facecache.swap.eye_records import eyes_of_row, read_eyes
from facecache.swap.hyperswap import HyperswapSwapper
from facecache.swap.inswapper import InswapperSwapper
from facecache.swap.result import SwapResult
from facecache.swap.sources import SourceSet

SWAPPER_RECOGNIZER = "arcface_w600k_r50"  # the identity space inswapper and hyperswap were trained on

Swap = Callable[..., SwapResult]  # (frame, target face[, its eyes]) -> the swapped face
EyeReader = Callable[[np.ndarray, list], np.ndarray]  # (frame, faces) -> their eyes (swap.eye_records.read_eyes)


@dataclass(frozen=True)
class Binding:
    """A swapper kind bound to a source set: its model files' digests (part of the key), and how to make
    its swap function when the first face needs it."""
    digests: dict[str, str]
    make: Callable[[], Swap]
    read_eyes: EyeReader | None = None  # a swapper steered by the target's eyes: how they are read


@dataclass(frozen=True)
class SwapperKind:
    """How the engine makes one swapper. A new swapper is its `SwapperChoice` in `choices.SWAPPERS`, its adapter
    and one line in `SWAPPER_KINDS` (and a model swapper's `ModelSpec` in `models/catalog.py`)."""
    bind: Callable[[str, SourceSet, ModelStore, SessionFactory], Binding]  # checks what it needs now
    # Everything besides its model files, the source and the yaw limit that changes its pixels: the swap
    # records' key (tests/swap/test_swapper_kinds.py checks that no setting escapes it).
    describe: Callable[[str], dict]
    needs_source_embedding: bool = True  # the source faces' ArcFace identity
    # Whether it leaves faces turned past the yaw limit untouched is its choice's `uses_yaw_limit`
    # (choices.SWAPPERS), where the add-on's panel reads it too.


@dataclass
class BoundSwapper:
    name: str
    describe: dict           # settings that change results (cache key)
    digests: dict[str, str]  # model file digests (cache key)
    _build: Callable[[], Swap]
    max_yaw: float | None = None  # faces turned further are left untouched (None: every face)
    # The target's eyes, for a swapper they steer (`classic_eyes`): the swap job caches them per frame
    # (swap.eye_records) and hands each face's to `swap`; without them the swapper reads them itself.
    read_eyes: EyeReader | None = field(default=None, repr=False)
    _swap: Swap | None = field(default=None, repr=False)

    def __post_init__(self) -> None:
        self.describe = {**self.describe, "max_yaw": self.max_yaw}

    def swap(self, frame: np.ndarray, target_face, eyes=None) -> SwapResult:
        """The swapped face, with the transfer to the original face's colours fitted (the
        composite applies it at its colour-match strength); ``eyes``: the target face's, as `read_eyes`
        read them (swap.eye_records.eyes_of_row), for a swapper they steer."""
        swap = self._built()
        swapped = swap(frame, target_face) if eyes is None else swap(frame, target_face, eyes)
        return with_color_transfer(swapped, frame)

    def rows_read(self, target_face, height: int) -> tuple[int, int] | None:
        """The rows (top, bottom) of a frame `height` rows high that `swap` reads for ``target_face``; None
        where the swapper does not say (it may read any)."""
        rows_read = getattr(self._built(), "rows_read", None)
        return None if rows_read is None else rows_read(target_face, height)

    def _built(self) -> Swap:
        """The swap function, made when first needed."""
        if self._swap is None:
            self._swap = self._build()
        return self._swap

    def split_turned(self, faces: list) -> tuple[list, list]:
        """(faces to swap, faces turned further than ``max_yaw`` by their cached pose)."""
        if self.max_yaw is None:
            return list(faces), []
        turned = [face for face in faces if face.pose is not None and abs(float(face.pose[1])) > self.max_yaw]
        return [face for face in faces if not any(face is t for t in turned)], turned


def swapper_kind(name: str) -> SwapperKind:
    """The kind record of a swapper's name; an unknown name is refused, naming the known ones."""
    if name not in SWAPPER_KINDS:
        raise FaceCacheError(f"unknown swapper {name!r}: choose one of {', '.join(SWAPPER_KINDS)}")
    return SWAPPER_KINDS[name]


def build_swapper(name: str, sources: SourceSet, models: ModelStore, sessions: SessionFactory,
                  max_yaw: float | None = choices.MAX_YAW.default) -> BoundSwapper:
    """``max_yaw`` (degrees, checked by `pipeline.Settings`): a swapper whose choice uses the yaw limit
    leaves faces turned further untouched; None: it swaps every face. The others swap every face."""
    kind = swapper_kind(name)
    binding = kind.bind(name, sources, models, sessions)
    uses_yaw_limit = choices.choice(choices.SWAPPERS, name).uses_yaw_limit
    return BoundSwapper(name, kind.describe(name), binding.digests, binding.make,
                        max_yaw if uses_yaw_limit else None, binding.read_eyes)


def _bind_classic(name: str, sources: SourceSet, models: ModelStore, sessions: SessionFactory) -> Binding:
    swapper = ClassicSwapper()
    first = sources.faces[0]

    def make() -> Swap:
        return _ClassicSwap(swapper, swapper.prepare_source(first.image, first.face))

    return Binding({}, make)


@dataclass(frozen=True)
class _ClassicSwap:
    """The classic swap of one prepared source, which says which rows of a frame it reads; with `eyes_of`
    (`classic_eyes`), its eyes follow the target's, read on the frame where they are not given."""
    swapper: ClassicSwapper
    source: ClassicSource
    eyes_of: Callable[[np.ndarray, object], tuple] | None = None

    def __call__(self, frame: np.ndarray, target_face, eyes=None) -> SwapResult:
        if eyes is None and self.eyes_of is not None:
            eyes = self.eyes_of(frame, target_face)
        return self.swapper.swap(frame, target_face, self.source, eyes)

    def rows_read(self, target_face, height: int) -> tuple[int, int]:
        """The rows a swap given its eyes reads (reading them reads around them)."""
        return self.swapper.rows_read(target_face, self.source, height)


def _bind_classic_eyes(name: str, sources: SourceSet, models: ModelStore, sessions: SessionFactory) -> Binding:
    """The classic swap with the source's lids and iris moved onto the target's, both read by the iris model
    around the eyes their 68 landmarks place (faces without them are swapped as by `classic`)."""
    swapper = ClassicSwapper()
    first = sources.faces[0]
    model = models.model(IRIS_MODEL)  # ModelMissing names the install command

    @functools.cache
    def reader() -> IrisChecker:  # the model's session, made on the first reading
        return IrisChecker(models.session(sessions, model))

    def read(frame: np.ndarray, faces: list) -> np.ndarray:
        return read_eyes(reader(), frame, faces)

    def eyes_of(image: np.ndarray, face):
        return eyes_of_row(read(image, [face])[0])

    def make() -> Swap:
        return _ClassicSwap(swapper, swapper.prepare_source(first.image, first.face, eyes_of(first.image, first.face)),
                            eyes_of)

    return Binding({IRIS_MODEL: model.digest}, make, read)


def _bind_model(adapter: Callable[[object, ModelStore, str], object]):
    """The binder of a FaceFusion model swapper: ``adapter(session, models, name)`` makes it, and it swaps
    with the source set's ArcFace embedding."""

    def bind(name: str, sources: SourceSet, models: ModelStore, sessions: SessionFactory) -> Binding:
        if not sources.has_embeddings or sources.recognizer not in (None, SWAPPER_RECOGNIZER):
            made_by = f" (the embeddings here come from {sources.recognizer}, which only serves face selection)" \
                if sources.has_embeddings else ""
            raise FaceCacheError(f"the {name} swapper needs the source's ArcFace identity{made_by}: install it with "
                                 f"`facecache models install {SWAPPER_RECOGNIZER}` and keep --recognizer auto, "
                                 "or use --swapper classic")
        model = models.model(name)  # ModelMissing names the install command

        def make() -> Swap:
            session = models.session(sessions, model)  # bytes with the digest the namespace is named after
            swapper = adapter(session, models, name)
            return lambda frame, face: swapper.swap(frame, face, sources.embedding)

        return Binding({name: model.digest}, make)

    return bind


def _inswapper(session, models: ModelStore, name: str) -> InswapperSwapper:
    return InswapperSwapper(session, models.derived(name, EMAP), model=name)


def _hyperswap(session, models: ModelStore, name: str) -> HyperswapSwapper:
    return HyperswapSwapper(session, model=name)


def _model_key(name: str) -> dict:
    # The adapters' crop size and template are constants of their code (a change there is a new
    # SWAP_FORMAT_VERSION), not settings: the key names the model alone, as it always has.
    return {"swapper": name}


# One record per name of choices.SWAPPERS (tests/swap/test_swapper_kinds.py checks they match).
SWAPPER_KINDS: dict[str, SwapperKind] = {
    "classic": SwapperKind(_bind_classic, lambda name: ClassicSwapper().describe(),
                           needs_source_embedding=False),
    "classic_eyes": SwapperKind(_bind_classic_eyes, lambda name: {**ClassicSwapper().describe(), "eyes": EYES_FOLLOW},
                                needs_source_embedding=False),
    "inswapper_128": SwapperKind(_bind_model(_inswapper), _model_key),
    "inswapper_128_fp16": SwapperKind(_bind_model(_inswapper), _model_key),
    "hyperswap_1a_256": SwapperKind(_bind_model(_hyperswap), _model_key),
}
