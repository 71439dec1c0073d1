"""The swap and composite stages.

Swap (cached per frame, target face, source and swapper): a ``SwapResult`` =
the swapped face as an aligned crop, its frame-to-crop matrix and the
swapper's own mask, if any.

    ClassicSwapper(ClassicSettings()).prepare_source(image, face) -> ClassicSource
    ClassicSwapper(...).swap(frame, target_face, source) -> SwapResult     # no model weights
    InswapperSwapper(session, store.derived(name, EMAP)).swap(frame, target_face, embedding) -> SwapResult
    HyperswapSwapper(session).swap(frame, target_face, embedding) -> SwapResult

Composite (cheap, parameterised, never runs a model):

    paste_back(frame, results, CompositeParams()) -> frame
    overlay(frame, results, params) -> (H, W, 4) BGRA, alpha 0 outside the faces
    SparseOverlayEncoder().encode(width, height, overlay_patches(frame, results, params)) -> PNG bytes
"""

from facecache.swap.classic import ClassicSettings, ClassicSource, ClassicSwapper
from facecache.swap.composite import CompositeParams, crop_mask, overlay, overlay_patches, paste_back
from facecache.swap.embedding import average_embedding, inswapper_source, normalised_source
from facecache.swap.errors import SwapInputError
from facecache.swap.hyperswap import HyperswapSwapper
from facecache.swap.inswapper import InswapperSwapper
from facecache.swap.masks import box_mask, combine_masks
from facecache.swap.result import SwapResult, SwapResultError
from facecache.swap.sparse_png import SparseOverlayEncoder

__all__ = [
    "ClassicSettings", "ClassicSource", "ClassicSwapper", "CompositeParams", "HyperswapSwapper",
    "InswapperSwapper", "SwapInputError", "SwapResult", "SwapResultError", "average_embedding",
    "SparseOverlayEncoder", "box_mask", "combine_masks", "crop_mask", "inswapper_source",
    "normalised_source", "overlay", "overlay_patches", "paste_back",
]
