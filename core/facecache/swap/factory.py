"""Swappers bound to a source set: `swap(frame, target_face) -> SwapResult`.

`classic` needs no model (it uses the first source image of the set);
`inswapper_128` and `hyperswap_1a_256` need their FaceFusion model and a
recognizer for the source embedding. Models are loaded on the first swap.
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
from facecache.swap.result import SwapResult
from facecache.swap.sources import SourceSet

SWAPPERS = choices.names(choices.SWAPPERS)


@dataclass
class BoundSwapper:
    name: str
    describe: dict           # settings that change results (cache key)
    digests: dict[str, str]  # model file digests (cache key)
    _build: Callable[[], Callable[[np.ndarray, object], SwapResult]]
    _swap: Callable | None = field(default=None, repr=False)

    def swap(self, frame: np.ndarray, target_face) -> SwapResult:
        if self._swap is None:
            self._swap = self._build()
        return self._swap(frame, target_face)


def build_swapper(name: str, sources: SourceSet, models: ModelStore, sessions: SessionFactory) -> BoundSwapper:
    if name == "classic":
        swapper = ClassicSwapper()
        first = sources.faces[0]

        def build():
            prepared = swapper.prepare_source(first.image, first.face)
            return lambda frame, face: swapper.swap(frame, face, prepared)

        return BoundSwapper(name, swapper.describe(), {}, build)
    if name not in SWAPPERS:
        raise FaceCacheError(f"unknown swapper {name!r}: choose one of {', '.join(SWAPPERS)}")
    if not sources.has_embeddings:
        raise FaceCacheError(f"the {name} swapper needs the source's identity embedding: install a recognizer "
                             "with `facecache models install arcface_w600k_r50`, or use --swapper classic")
    model = models.model(name)  # ModelMissing names the install command

    def build():
        from facecache.models.derived import EMAP
        from facecache.swap.hyperswap import HyperswapSwapper
        from facecache.swap.inswapper import InswapperSwapper

        session = models.session(sessions, model)  # bytes with the digest the namespace is named after
        adapter = (InswapperSwapper(session, models.derived(name, EMAP), model=name)
                   if name.startswith("inswapper") else HyperswapSwapper(session, model=name))
        return lambda frame, face: adapter.swap(frame, face, sources.embedding)

    return BoundSwapper(name, {"swapper": name}, {name: model.digest}, build)
