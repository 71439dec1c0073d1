"""FaceFusion ``hyperswap_1a_256`` adapter (the 1b and 1c variants share the contract).

Contract (FaceFusion 3.x): the target face is aligned to the ``arcface_128``
template at 256 x 256; input ``target`` (1, 3, 256, 256) RGB
``(pixel / 255 - 0.5) / 0.5``; input ``source`` (1, 512) the L2-normalised
embedding. Outputs: ``output`` (1, 3, 256, 256) normalised like the input,
and ``mask`` (1, 1, 256, 256) in 0..1 (a sigmoid), kept as the result's mask.
"""

from __future__ import annotations

import numpy as np

from facecache.analysis.session import OnnxSession, contract_error, output_names, require_inputs, require_outputs, run_model
from facecache.swap.embedding import normalised_source
from facecache.swap.result import SwapResult
from facecache.swap.tensors import check_square_input, input_dtype, swapper_feeds, tensor_to_crop

TEMPLATE = "arcface_128"
CROP_SIZE = 256
MEAN, STD = 0.5, 0.5
MASK_OUTPUT = "mask"


class HyperswapSwapper:
    """Swaps a source identity (a raw ArcFace embedding) onto target faces, with the model's own mask."""

    def __init__(self, session: OnnxSession, *, model: str = "hyperswap_1a_256") -> None:
        require_inputs(session, model, ["source", "target"])
        require_outputs(session, model, [MASK_OUTPUT])
        images = [name for name in output_names(session) if name != MASK_OUTPUT]
        if len(images) != 1:
            raise contract_error(model, f"it has outputs {output_names(session)}, expected an image output and 'mask'")
        check_square_input(session, "target", CROP_SIZE, model)
        self._session = session
        self._image_output = images[0]
        self._types = {name: input_dtype(session, name) for name in ("target", "source")}
        self.model = model

    def describe(self) -> dict:
        """What changes this adapter's results besides the model file (for cache keys)."""
        return {"swapper": self.model, "template": TEMPLATE, "crop_size": CROP_SIZE}

    def source_vector(self, embedding) -> np.ndarray:
        """The (1, 512) ``source`` input: the unit-length embedding."""
        return normalised_source(embedding)

    def swap(self, frame: np.ndarray, target_face, source_embedding) -> SwapResult:
        """The swapped 256 px crop of ``target_face`` in ``frame``, its matrix and the model's mask."""
        feeds, matrix = swapper_feeds(frame, target_face, self.source_vector(source_embedding), TEMPLATE, CROP_SIZE,
                                      MEAN, STD, self._types)
        image, mask = run_model(self._session, self.model, [self._image_output, MASK_OUTPUT], feeds)
        if mask.size != CROP_SIZE * CROP_SIZE:
            raise contract_error(self.model, f"its mask output has shape {mask.shape}, expected (1, 1, {CROP_SIZE}, {CROP_SIZE})")
        mask = np.clip(np.nan_to_num(mask.reshape(CROP_SIZE, CROP_SIZE), nan=0.0), 0.0, 1.0)
        return SwapResult(tensor_to_crop(image, MEAN, STD, CROP_SIZE, self.model), matrix, mask)
