"""InsightFace ``inswapper_128`` (and ``inswapper_128_fp16``) adapter.

Contract (FaceFusion 3.x): the target face is aligned to the ``arcface_128``
template at 128 x 128; input ``target`` (1, 3, 128, 128) RGB ``pixel / 255``;
input ``source`` (1, 512) = ``raw embedding @ emap / |raw embedding|``, emap
being the graph's last initializer (see ``models/derived.py``). The output
(1, 3, 128, 128) is RGB in 0..1. The model has no mask of its own.
"""

from __future__ import annotations

import numpy as np

from facecache.analysis.session import OnnxSession, require_inputs, require_output_count, run_model
from facecache.swap.embedding import check_emap, project_source
from facecache.swap.result import SwapResult
from facecache.swap.tensors import check_square_input, input_dtype, swapper_feeds, tensor_to_crop

TEMPLATE = "arcface_128"
CROP_SIZE = 128
MEAN, STD = 0.0, 1.0


class InswapperSwapper:
    """Swaps a source identity (a raw ArcFace embedding) onto target faces."""

    def __init__(self, session: OnnxSession, emap: np.ndarray, *, model: str = "inswapper_128") -> None:
        require_inputs(session, model, ["target", "source"])
        self._output = require_output_count(session, model, 1)[0]
        check_square_input(session, "target", CROP_SIZE, model)
        self._session = session
        self._emap = check_emap(emap)  # a private float64 copy
        self._emap.setflags(write=False)
        self._types = {name: input_dtype(session, name) for name in ("target", "source")}
        self.model = model

    def describe(self) -> dict:
        """What changes this adapter's results besides the model file (for cache keys)."""
        return {"swapper": self.model, "template": TEMPLATE, "crop_size": CROP_SIZE}

    def source_vector(self, embedding) -> np.ndarray:
        """The (1, 512) ``source`` input for a raw embedding (or a Face with one)."""
        return project_source(embedding, self._emap)

    def swap(self, frame: np.ndarray, target_face, source_embedding) -> SwapResult:
        """The swapped 128 px crop of ``target_face`` in ``frame`` and its frame-to-crop matrix."""
        feeds, matrix = swapper_feeds(frame, target_face, self.source_vector(source_embedding), TEMPLATE, CROP_SIZE,
                                      MEAN, STD, self._types)
        (output,) = run_model(self._session, self.model, [self._output], feeds)
        return SwapResult(tensor_to_crop(output, MEAN, STD, CROP_SIZE, self.model), matrix, None)
