"""Swappers bound to a source set: `swap(frame, target_face) -> SwapResult`.

`classic` needs no model (it uses the first source image of the set);
`inswapper_128` and `hyperswap_1a_256` need their FaceFusion model and a
recognizer for the source embedding. Models are loaded on the first swap.
Every result carries its fitted colour transfer (applied by the composite), and
a swapper may leave faces turned past a yaw limit untouched (`split_turned`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

import numpy as np

from facecache import choices
from facecache.errors import FaceCacheError
from facecache.models.runtime import SessionFactory
from facecache.models.store import ModelStore
from facecache.swap.classic import ClassicSwapper
from facecache.swap.composite import with_color_transfer
from facecache.swap.result import SwapResult
from facecache.swap.sources import SourceSet

SWAPPERS = choices.names(choices.SWAPPERS)
SWAPPER_RECOGNIZER = "arcface_w600k_r50"  # the identity space inswapper and hyperswap were trained on


@dataclass
class BoundSwapper:
    name: str
    describe: dict           # settings that change results (cache key)
    digests: dict[str, str]  # model file digests (cache key)
    _build: Callable[[], Callable[[np.ndarray, object], SwapResult]]
    max_yaw: float | None = None  # faces turned further are left untouched (None: every face)
    _swap: Callable | None = field(default=None, repr=False)

    def __post_init__(self) -> None:
        self.describe = {**self.describe, "max_yaw": self.max_yaw}

    def swap(self, frame: np.ndarray, target_face) -> SwapResult:
        """The swapped face, with the transfer to the original face's colours fitted (the
        composite applies it at its colour-match strength)."""
        if self._swap is None:
            self._swap = self._build()
        return with_color_transfer(self._swap(frame, target_face), frame)

    def split_turned(self, faces: list) -> tuple[list, list]:
        """(faces to swap, faces turned further than ``max_yaw`` by their cached pose)."""
        if self.max_yaw is None:
            return list(faces), []
        turned = [face for face in faces if face.pose is not None and abs(float(face.pose[1])) > self.max_yaw]
        return [face for face in faces if not any(face is t for t in turned)], turned


def needs_source_embedding(name: str) -> bool:
    """Whether a swapper needs the source faces' identity embedding (the model swappers do; the
    classic swapper works from the source's pixels and landmarks alone)."""
    return name != "classic"


def build_swapper(name: str, sources: SourceSet, models: ModelStore, sessions: SessionFactory,
                  max_yaw: float | None = choices.MAX_YAW.default) -> BoundSwapper:
    """``max_yaw``: the classic swapper leaves faces turned further (degrees) untouched; None: it
    swaps every face. The model swappers, which make a face in the target's pose, swap every face."""
    if name != "classic":
        max_yaw = None
    elif max_yaw is not None and not choices.MAX_YAW.minimum <= float(max_yaw) <= choices.MAX_YAW.maximum:
        raise FaceCacheError(f"the yaw limit is in degrees, {choices.MAX_YAW.minimum:g} to "
                             f"{choices.MAX_YAW.maximum:g}, got {max_yaw}")
    if name == "classic":
        swapper = ClassicSwapper()
        first = sources.faces[0]

        def build():
            prepared = swapper.prepare_source(first.image, first.face)
            return lambda frame, face: swapper.swap(frame, face, prepared)

        return BoundSwapper(name, swapper.describe(), {}, build, max_yaw)
    if name not in SWAPPERS:
        raise FaceCacheError(f"unknown swapper {name!r}: choose one of {', '.join(SWAPPERS)}")
    if not sources.has_embeddings or sources.recognizer not in (None, SWAPPER_RECOGNIZER):
        made_by = f" (the embeddings here come from {sources.recognizer}, which only serves face selection)" \
            if sources.has_embeddings else ""
        raise FaceCacheError(f"the {name} swapper needs the source's ArcFace identity{made_by}: install it with "
                             f"`facecache models install {SWAPPER_RECOGNIZER}` and keep --recognizer auto, "
                             "or use --swapper classic")
    model = models.model(name)  # ModelMissing names the install command

    def build():
        from facecache.models.derived import EMAP
        from facecache.swap.hyperswap import HyperswapSwapper
        from facecache.swap.inswapper import InswapperSwapper

        session = models.session(sessions, model)  # bytes with the digest the namespace is named after
        adapter = (InswapperSwapper(session, models.derived(name, EMAP), model=name)
                   if name.startswith("inswapper") else HyperswapSwapper(session, model=name))
        return lambda frame, face: adapter.swap(frame, face, sources.embedding)

    return BoundSwapper(name, {"swapper": name}, {name: model.digest}, build, max_yaw)
