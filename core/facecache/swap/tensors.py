"""Image tensors in and out of swapper models: BGR uint8 crops <-> normalised RGB NCHW."""

from __future__ import annotations

import numpy as np

from facecache.analysis.align import warp_face
from facecache.analysis.frames import check_bgr_frame
from facecache.analysis.session import OnnxSession, contract_error
from facecache.swap.faces import face_kps5


def crop_to_tensor(crop_bgr: np.ndarray, mean: float, std: float) -> np.ndarray:
    """(1, 3, S, S) float32 RGB ``(pixel / 255 - mean) / std`` of a BGR uint8 crop."""
    rgb = crop_bgr[:, :, ::-1].astype(np.float32) / np.float32(255.0)
    return np.ascontiguousarray(((rgb - np.float32(mean)) / np.float32(std)).transpose(2, 0, 1)[None])


def tensor_to_crop(tensor: np.ndarray, mean: float, std: float, size: int, model: str) -> np.ndarray:
    """A BGR uint8 crop from a (1, 3, S, S) RGB output normalised like the input."""
    array = np.asarray(tensor, dtype=np.float32)
    if array.shape != (1, 3, size, size):
        raise contract_error(model, f"its image output has shape {array.shape}, expected (1, 3, {size}, {size})")
    rgb = np.clip(array[0] * np.float32(std) + np.float32(mean), 0.0, 1.0).transpose(1, 2, 0)
    return np.ascontiguousarray(np.rint(rgb[:, :, ::-1] * np.float32(255.0)).astype(np.uint8))


def input_dtype(session: OnnxSession, name: str) -> np.dtype:
    """float16 when the session declares that input as ``tensor(float16)``, else float32."""
    for item in session.get_inputs():
        if item.name == name and "float16" in str(getattr(item, "type", "")):
            return np.dtype(np.float16)
    return np.dtype(np.float32)


def check_square_input(session: OnnxSession, name: str, size: int, model: str) -> None:
    """Contract error unless the NCHW input ``name`` takes 3 x size x size (dynamic dimensions pass)."""
    for item in session.get_inputs():
        if item.name != name:
            continue
        shape = list(getattr(item, "shape", None) or [])
        if not shape:
            return
        fixed = [dim if isinstance(dim, int) and dim > 0 else None for dim in shape]
        expected = [1, 3, size, size]
        if len(fixed) != 4 or any(dim is not None and dim != want for dim, want in zip(fixed, expected)):
            raise contract_error(model, f"input {name!r} has shape {shape}, expected (1, 3, {size}, {size})")


def swapper_feeds(frame: np.ndarray, target_face, source: np.ndarray, template: str, size: int,
                  mean: float, std: float, types: dict) -> tuple[dict, np.ndarray]:
    """The `target` and `source` inputs a FaceFusion swapper takes for one target face, and the
    frame-to-crop matrix (float32) of the aligned target crop."""
    crop, matrix = warp_face(check_bgr_frame(frame), face_kps5(target_face, "target face"), template, size)
    feeds = {"target": crop_to_tensor(crop, mean, std).astype(types["target"]),
             "source": source.astype(types["source"])}
    return feeds, matrix.astype(np.float32)
