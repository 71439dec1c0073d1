"""Cached swap-stage records: per frame, the swap results of its selected faces.

In a pack the results are stored column by column: crops (N, S, S, 3) uint8,
matrices (N, 2, 3) float32, and the swapper masks that exist (M, S, S) as uint8
(0..255). Masks are quantised by `quantise_mask` before the first composite too,
so a frame composited from a fresh result and from the cache is the same.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Sequence

import numpy as np

from facecache.errors import CorruptPack
from facecache.fingerprint import is_digest
from facecache.store.records import GroupRecords
from facecache.swap.result import SwapResult

SWAP_RECORD_FORMAT = "swap/1"


@dataclass
class SwapRecord:
    fingerprint: str
    results: Sequence[SwapResult] = field(default_factory=list)


class StoredResults(Sequence[SwapResult]):
    """One frame's swap results as read from a pack, made into SwapResults on first use: a
    segment of six faces holds 384 of them, a preview step uses six. The arrays were checked
    when the pack was decoded."""

    def __init__(self, crops: np.ndarray, matrices: np.ndarray, masks: list[np.ndarray | None]):
        self._arrays = (crops, matrices, masks)
        self._results: list[SwapResult] | None = None

    def _made(self) -> list[SwapResult]:
        if self._results is None:
            crops, matrices, masks = self._arrays
            self._results = [SwapResult(crop, matrix, None if mask is None else mask.astype(np.float32) / 255)
                             for crop, matrix, mask in zip(crops, matrices, masks)]
        return self._results

    def __getitem__(self, index):
        return self._made()[index]

    def __len__(self) -> int:
        return len(self._arrays[2])


def quantise_mask(result: SwapResult) -> SwapResult:
    """The result with its mask rounded to 1/255 steps, exactly as the cache stores it."""
    if result.mask is None:
        return result
    mask = np.round(np.asarray(result.mask, np.float32) * 255).astype(np.float32) / 255
    return SwapResult(result.crop, result.matrix, mask)


class SwapCodec:
    @staticmethod
    def encode(group: GroupRecords) -> tuple[dict, dict, int]:
        order = list(group.records)
        position = {fp: i for i, fp in enumerate(order)}
        results = [r for fp in order for r in group.records[fp].results]
        size = results[0].size if results else 0
        if any(r.size != size for r in results):
            raise ValueError("all swap results of one namespace have one crop size")
        masks = [np.round(r.mask * 255).astype(np.uint8) for r in results if r.mask is not None]
        meta = {
            "format": SWAP_RECORD_FORMAT,
            "records": [[fp, len(group.records[fp].results)] for fp in order],
            "index": [[int(i), position[fp]] for i, fp in sorted(group.index.items()) if fp in position],
        }
        arrays = {
            "crop": np.stack([r.crop for r in results]) if results else np.zeros((0, 0, 0, 3), np.uint8),
            "matrix": np.stack([r.matrix for r in results]).astype(np.float32) if results
            else np.zeros((0, 2, 3), np.float32),
            "has_mask": np.array([r.mask is not None for r in results], dtype=np.uint8),
            "mask": np.stack(masks) if masks else np.zeros((0, size, size), np.uint8),
        }
        return meta, arrays, len(order)

    @staticmethod
    def decode(meta: dict, arrays: dict) -> GroupRecords:
        if meta.get("format") != SWAP_RECORD_FORMAT:
            raise CorruptPack(f"record format {meta.get('format')!r} is not {SWAP_RECORD_FORMAT!r}")
        rows, index_rows = meta.get("records"), meta.get("index")
        if not isinstance(rows, list) or not isinstance(index_rows, list):
            raise CorruptPack("records or index missing")
        for row in rows:
            if not (isinstance(row, list) and len(row) == 2 and is_digest(row[0])
                    and isinstance(row[1], int) and not isinstance(row[1], bool) and 0 <= row[1] < 2**20):
                raise CorruptPack("bad swap record row")
        count = sum(row[1] for row in rows)
        crop, matrix, has_mask, mask = (arrays.get(k) for k in ("crop", "matrix", "has_mask", "mask"))
        if (crop is None or crop.dtype != np.uint8 or crop.ndim != 4 or len(crop) != count
                or matrix is None or matrix.shape != (count, 2, 3) or matrix.dtype.kind != "f"
                or has_mask is None or has_mask.shape != (count,)
                or mask is None or mask.dtype != np.uint8 or mask.ndim != 3
                or len(mask) != int(np.count_nonzero(has_mask))):
            raise CorruptPack("swap columns do not match their records")
        dets = matrix[:, 0, 0].astype(np.float64) * matrix[:, 1, 1] - matrix[:, 0, 1].astype(np.float64) * matrix[:, 1, 0]
        if not np.all(np.isfinite(matrix)) or np.any(np.abs(dets) < 1e-12) or (count and (crop.shape[1] < 2 or crop.shape[1:] != (
                crop.shape[1], crop.shape[1], 3))) or (len(mask) and mask.shape[1:] != crop.shape[1:3]):
            raise CorruptPack("bad swap result arrays")
        mask_rows = np.cumsum(has_mask.astype(bool)) - 1  # row of each result's mask in `mask`
        group = GroupRecords()
        start = 0
        for fingerprint, n in rows:
            masks = [mask[mask_rows[i]] if has_mask[i] else None for i in range(start, start + n)]
            group.records[fingerprint] = SwapRecord(fingerprint, StoredResults(crop[start:start + n],
                                                                               matrix[start:start + n], masks))
            start += n
        for item in index_rows:
            if not (isinstance(item, list) and len(item) == 2 and all(isinstance(v, int) for v in item)
                    and 0 <= item[0] and 0 <= item[1] < len(rows)):
                raise CorruptPack("bad index row")
            group.index[item[0]] = rows[item[1]][0]
        return group

    @staticmethod
    def complete(record: SwapRecord, needed=None) -> bool:
        return True

    @staticmethod
    def richer(a: SwapRecord, b: SwapRecord) -> bool:
        return False  # results for one key are the same whichever writer made them


SWAP_CODEC = SwapCodec()
