"""The colour spaces Blender 4.4 and later give a movie by its primaries and transfer tags, as its Standard
view shows them: an HDR phone clip (BT.2020 with HLG or PQ) is not shown as its code values, but taken to
scene-linear Rec.709 and encoded as sRGB.

Blender's reader maps the tags to a display colour space (`probe_video_colorspace` in movie_read.cc: BT.2020
+ HLG -> Rec.2100-HLG, BT.2020 + PQ -> Rec.2100-PQ, BT.2020 + BT.709 transfer -> Rec.2020 with gamma 2.4);
anything else is shown as decoded (BT.709 with gamma 2.2 too: measured, bpy 5.0.1 shows its code values).
Blender 5.2 maps the stream's whole CICP, and shows BT.709 with gamma 2.2 through its Rec.709 g2.2 space:
measured on bpy 5.2.3, the sRGB encoding of the decoded values to the power 2.2. Which tags a Blender
shows through a space is its picture rules' (`HDR_SPACES`, `GAMMA22_SPACE`).
The transfer functions are the published ones (ITU-R BT.2100, BT.1886's 2.4 power; HLG's system gamma 1.2
at 1000 nits, 100 nits as 1.0), checked against bpy 5.0.1's renders in tests/blender/test_blender_footage.py.
"""

from __future__ import annotations

from typing import Callable

import numpy as np

# AVColorPrimaries and AVColorTransferCharacteristic tags
_BT709, _BT2020 = 1, 9
_TRC_BT709, _TRC_GAMMA22, _TRC_PQ, _TRC_HLG = 1, 4, 16, 18
# (primaries, transfer) tags a Blender shows through a colour space of its own: 5.0 on, and 5.2 on
HDR_SPACES = frozenset({(_BT2020, _TRC_HLG), (_BT2020, _TRC_PQ), (_BT2020, _TRC_BT709)})
GAMMA22_SPACE = frozenset({(_BT709, _TRC_GAMMA22)})
# Tags whose 8-bit picture goes through the space as Blender's byte buffer, rounded to 8 bits first (5.2's g2.2:
# 0.029 / 2 off bpy 5.2.3, against 0.18 / 1 from the decoded floats). 8-bit HDR is not in the corpus and keeps the
# float path its cached pictures were made with.
FROM_BYTES = GAMMA22_SPACE
_BT2020_TO_BT709 = np.array([[1.660491, -0.587641, -0.072850],
                             [-0.124550, 1.132900, -0.008349],
                             [-0.018151, -0.100579, 1.118730]])
_BT2020_LUMA = np.array([0.2627, 0.6780, 0.0593])


def display_transform(primaries: int, transfer: int,
                      shown: frozenset[tuple[int, int]]) -> Callable[[np.ndarray], np.ndarray] | None:
    """For a stream's tags, the function from its decoded RGB (float64, 0-1, channels last) to what Blender's
    Standard view shows (sRGB, 0-1), where `shown` (the rules' tags) holds them; None where Blender shows the
    decoded picture as it is. In double
    precision: float32's power and exp differ by an ulp between platforms' maths libraries, which moved a
    few pixels' rounding between Linux and Windows (their fingerprints, the cache's keys, then differ)."""
    return _TRANSFORMS[primaries, transfer] if (primaries, transfer) in shown else None


def _srgb_encode(linear: np.ndarray) -> np.ndarray:
    linear = np.clip(linear, 0.0, 1.0)
    return np.where(linear <= 0.0031308, 12.92 * linear, 1.055 * np.power(linear, 1 / 2.4) - 0.055)


def _hlg_to_display(rgb: np.ndarray) -> np.ndarray:
    a, b, c = 0.17883277, 0.28466892, 0.55991073
    scene = np.where(rgb <= 0.5, rgb * rgb / 3, (np.exp((rgb - c) / a) + b) / 12)
    luminance = np.maximum(scene @ _BT2020_LUMA, 1e-12)[..., None]
    display = 1000 * luminance ** 0.2 * scene / 100  # the OOTF at 1000 nits; 100 nits is 1.0
    return _srgb_encode(display @ _BT2020_TO_BT709.T)


def _pq_to_display(rgb: np.ndarray) -> np.ndarray:
    m1, m2, c1, c2, c3 = 2610 / 16384, 2523 / 4096 * 128, 3424 / 4096, 2413 / 4096 * 32, 2392 / 4096 * 32
    power = np.power(np.clip(rgb, 0.0, 1.0), 1 / m2)
    nits = 10000 * np.power(np.maximum(power - c1, 0) / (c2 - c3 * power), 1 / m1)
    return _srgb_encode(nits / 100 @ _BT2020_TO_BT709.T)


_TRANSFORMS = {
    (_BT2020, _TRC_HLG): _hlg_to_display,
    (_BT2020, _TRC_PQ): _pq_to_display,
    (_BT2020, _TRC_BT709): lambda rgb: _srgb_encode(np.power(np.clip(rgb, 0, 1), 2.4) @ _BT2020_TO_BT709.T),
    (_BT709, _TRC_GAMMA22): lambda rgb: _srgb_encode(np.power(np.clip(rgb, 0, 1), 2.2)),
}
assert set(_TRANSFORMS) == HDR_SPACES | GAMMA22_SPACE
