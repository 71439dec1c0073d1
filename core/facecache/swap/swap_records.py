"""Cached swap-stage records: per frame, the swap results of its selected faces.

In a pack the results are stored column by column: each crop's side (N,), the
crops flattened into one uint8 column (sides differ: a swapper may size each crop
by its face), matrices (N, 2, 3) float32, the swapper masks that exist flattened
as uint8 (0..255), and the colour transfers that were fitted (K, 3, 3) float32.
Each frame also records how many of its faces the swapper left untouched (turned
past its yaw limit). Masks are quantised by `quantise_mask` before the first
composite too, so a frame composited from a fresh result and from the cache is
the same.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Sequence

import numpy as np

from facecache.errors import CorruptPack
from facecache.fingerprint import is_digest
from facecache.store.records import GroupRecords
from facecache.swap.color import TRANSFER_SHAPE
from facecache.swap.result import SwapResult

SWAP_RECORD_FORMAT = "swap/3"  # 3: colour transfers hold the light's direction; each is TRANSFER_SHAPE
# (its fourth row, the original's brightest skin, came with the swaps' key, SWAP_FORMAT_VERSION 4, in jobs.swap_job)
MAX_CROP_SIDE = 4096


@dataclass
class SwapRecord:
    fingerprint: str
    results: Sequence[SwapResult] = field(default_factory=list)
    turned_away: int = 0  # faces the swapper left untouched (turned past its yaw limit)


class StoredResults(Sequence[SwapResult]):
    """One frame's swap results as read from a pack, made into SwapResults on first use: a
    segment of six faces holds 384 of them, a preview step uses six. The arrays were checked
    when the pack was decoded; ``arrays`` holds (crop, matrix, mask or None, colour or None)
    per result."""

    def __init__(self, arrays: list[tuple]):
        self._arrays = arrays
        self._results: list[SwapResult] | None = None

    def _made(self) -> list[SwapResult]:
        if self._results is None:
            self._results = [SwapResult(crop, matrix, None if mask is None else mask.astype(np.float32) / 255, color)
                             for crop, matrix, mask, color in self._arrays]
        return self._results

    def __getitem__(self, index):
        return self._made()[index]

    def __len__(self) -> int:
        return len(self._arrays)


def quantise_mask(result: SwapResult) -> SwapResult:
    """The result with its mask rounded to 1/255 steps, exactly as the cache stores it."""
    if result.mask is None:
        return result
    mask = np.round(np.asarray(result.mask, np.float32) * 255).astype(np.float32) / 255
    return SwapResult(result.crop, result.matrix, mask, result.color)


def _flat(arrays: list[np.ndarray]) -> np.ndarray:
    """Arrays of different shapes as one flat uint8 column (their shapes are stored beside it)."""
    return np.concatenate([a.reshape(-1) for a in arrays]).astype(np.uint8) if arrays else np.zeros(0, np.uint8)


class SwapCodec:
    @staticmethod
    def encode(group: GroupRecords) -> tuple[dict, dict, int]:
        order = list(group.records)
        position = {fp: i for i, fp in enumerate(order)}
        results = [r for fp in order for r in group.records[fp].results]
        colors = [r.color for r in results if r.color is not None]
        meta = {
            "format": SWAP_RECORD_FORMAT,
            "records": [[fp, len(group.records[fp].results), group.records[fp].turned_away] for fp in order],
            "index": [[int(i), position[fp]] for i, fp in sorted(group.index.items()) if fp in position],
        }
        arrays = {
            "size": np.array([r.size for r in results], dtype=np.int32),
            "crop": _flat([r.crop for r in results]),
            "matrix": np.stack([r.matrix for r in results]).astype(np.float32) if results
            else np.zeros((0, 2, 3), np.float32),
            "has_mask": np.array([r.mask is not None for r in results], dtype=np.uint8),
            "mask": _flat([np.round(r.mask * 255).astype(np.uint8) for r in results if r.mask is not None]),
            "has_color": np.array([r.color is not None for r in results], dtype=np.uint8),
            "color": np.stack(colors).astype(np.float32) if colors else np.zeros((0, *TRANSFER_SHAPE), np.float32),
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
            if not (isinstance(row, list) and len(row) == 3 and is_digest(row[0])
                    and all(isinstance(v, int) and not isinstance(v, bool) and 0 <= v < 2**20 for v in row[1:])):
                raise CorruptPack("bad swap record row")
        count = sum(row[1] for row in rows)
        size, crop, matrix, has_mask, mask, has_color, color = (
            arrays.get(k) for k in ("size", "crop", "matrix", "has_mask", "mask", "has_color", "color"))
        if (size is None or size.shape != (count,) or size.dtype.kind not in "iu"
                or np.any(size < 2) or np.any(size > MAX_CROP_SIDE)
                or has_mask is None or has_mask.shape != (count,) or has_color is None or has_color.shape != (count,)):
            raise CorruptPack("swap columns do not match their records")
        area = size.astype(np.int64) ** 2
        if (crop is None or crop.dtype != np.uint8 or crop.shape != (int(area.sum() * 3),)
                or matrix is None or matrix.shape != (count, 2, 3) or matrix.dtype.kind != "f"
                or mask is None or mask.dtype != np.uint8 or mask.shape != (int(area[has_mask > 0].sum()),)
                or color is None or color.dtype.kind != "f"
                or color.shape != (int(np.count_nonzero(has_color)), *TRANSFER_SHAPE)):
            raise CorruptPack("swap columns do not match their records")
        dets = matrix[:, 0, 0].astype(np.float64) * matrix[:, 1, 1] - matrix[:, 0, 1].astype(np.float64) * matrix[:, 1, 0]
        if not np.all(np.isfinite(matrix)) or np.any(np.abs(dets) < 1e-12) or not np.all(np.isfinite(color)):
            raise CorruptPack("bad swap result arrays")
        crop_ends = np.cumsum(area * 3)
        mask_ends = np.cumsum(np.where(has_mask > 0, area, 0))
        color_rows = np.cumsum(has_color > 0) - 1  # row of each result's colour in `color`
        group = GroupRecords()
        start = 0
        for fingerprint, n, turned_away in rows:
            stored = []
            for i in range(start, start + n):
                side = int(size[i])
                pixels = crop[crop_ends[i] - area[i] * 3:crop_ends[i]].reshape(side, side, 3)
                own_mask = mask[mask_ends[i] - area[i]:mask_ends[i]].reshape(side, side) if has_mask[i] else None
                stored.append((pixels, matrix[i], own_mask, color[color_rows[i]] if has_color[i] else None))
            group.records[fingerprint] = SwapRecord(fingerprint, StoredResults(stored), turned_away)
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
