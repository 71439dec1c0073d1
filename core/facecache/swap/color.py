"""Colour transfer in CIE L*a*b*: the swapped face takes the original face's colours, without
clipping a channel or shifting a hue, and without flattening its detail.

Fit (once per swapped face, in the swap stage): inside the face mask, the mean and spread of each
L*, a*, b* channel of the swapped crop and of the original face at the same place (Reinhard et al.
2001, "Color Transfer between Images"). Each channel's transfer is affine: ``x' = gain * x + offset``.
Light also has a direction: a source lit from above has a brighter forehead than chin, one lit
from the side a brighter cheek, and where the target is lit otherwise the mask's edge shows it as
a band (a pale forehead edge, a dark jaw beside a bright neck). So each face's lightness inside
the mask is also fitted by a plane (least squares: its slope across and down the crop), and the
swapped face takes the target's slopes in place of its own. A plane holds the light's direction
and nothing of the face's shape: the nose's shadow, the eye sockets and the cheekbones stay the
source's. (Measured against correcting the mask's edge alone, with a field faded inwards from the
edge: with the plane the worst seam of `facecache bench quality` went 1.52 -> 1.46 and the
identity margin 0.12 -> 0.14: docs/quality.md.)

Apply (in the composite stage, at the blend setting's strength):
- lightness: the gain applies to the crop's lighting only (a blurred copy of L*); the fine detail
  on top of it keeps its own contrast, so a flatter-lit target does not blur the face; the plane
  of the light's direction is added;
- chroma: the change fades out on dark pixels (pupils, dark glasses rims, shadows), whose hue the
  skin's statistics say nothing about: a reddish-brown pupil stays one instead of turning teal; and it
  takes no a* or b* below the lower of its own value and neutral (skin is warm): a white glint far
  from the skin's colour stays white instead of turning cyan;
- range: lightness approaches 0 and 100 along a soft knee instead of being cut, and a pixel whose
  new colour falls outside sRGB keeps less of the chroma change (down to none) until it fits, so
  no channel is clipped at 0 or 255 that was not clipped before;
- the original's brightest skin (``top``: the 99th percentile of its L* under the fit's mask):
  lighter pixels bend towards 2 L* above it (at part strength, part of the way). A highlight the
  source's detail brings keeps its own contrast over a lightness the transfer may lift by 15 L*;
  lighter than any of the original's skin, its colour left sRGB, and it came out white, with
  yellow specks where a crease, a little darker, still held the colour (docs/quality.md).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import cv2
import numpy as np

from facecache.analysis.align import linear_det

# A channel's spread is never scaled by more than this factor either way.
MAX_GAIN = 1.5
_MIN_WEIGHT = 1e-3
# Statistics are measured on copies shrunk to this side: means and spreads barely move.
_STATS_SIDE = 64
# Lightness (0..100) below which the chroma change fades out (smoothstep from 0 to here).
DARK_LIGHTNESS = 45.0
# Soft knee: within this many L* units of 0 or 100, lightness bends towards the limit.
_KNEE = 8.0
# The original's brightest skin: this percentile of its L* where the fit's weights are at least half
# their largest. Lighter pixels bend towards _TOP_MARGIN L* above it: on the quality bench's faces a
# margin of 2 left no yellow specks, 3 and 4 faint ones (docs/quality.md).
_TOP_PERCENTILE = 99.0
_TOP_MARGIN = 2.0
# A transfer as stored: rows gain, offset, light, (top, 0, 0).
TRANSFER_SHAPE = (4, 3)
# Channel values (0..1) a result must stay strictly between to round to neither 0 nor 255.
_LOW, _HIGH = 0.6 / 255.0, 254.4 / 255.0
_LOW_IN = float(np.nextafter(np.float32(_LOW), np.float32(1.0)))
_HIGH_IN = float(np.nextafter(np.float32(_HIGH), np.float32(0.0)))
# Fractions of the chroma change tried, in order, for a pixel whose colour leaves sRGB.
_CHROMA_STEPS = (0.75, 0.5, 0.25, 0.0)
# Lighting is L* blurred with this sigma, as a fraction of the crop's side.
_LIGHTING_SIGMA = 1.0 / 48.0
_L8 = np.float32(255.0 / 100.0)  # 8-bit L* units per L* unit
# 8-bit L*a*b* floors for cv2.min: L* none, a* and b* neutral.
_NEUTRAL_FLOOR = (0.0, 128.0, 128.0, 0.0)
# The share of the chroma change each 8-bit lightness keeps (smoothstep up to DARK_LIGHTNESS).
_DARK_FADE = np.clip(np.arange(256, dtype=np.float32) / _L8 / np.float32(DARK_LIGHTNESS), 0.0, 1.0)
_DARK_FADE = (_DARK_FADE * _DARK_FADE * (3.0 - 2.0 * _DARK_FADE)).astype(np.float32)
_DARK_FADE.setflags(write=False)
# OpenCV's 8-bit L*a*b* to float L*a*b* (L 0..100, a and b around 0), for cv2.transform.
_FROM_LAB8 = np.array([[100.0 / 255.0, 0, 0, 0], [0, 1, 0, -128.0], [0, 0, 1, -128.0]], np.float32)


def _lab(image_bgr: np.ndarray) -> np.ndarray:
    """Float L*a*b* (L 0..100, a and b around 0) through OpenCV's fast 8-bit conversion."""
    return cv2.transform(cv2.cvtColor(image_bgr, cv2.COLOR_BGR2LAB).astype(np.float32), _FROM_LAB8)


def shrunk_for_statistics(image: np.ndarray) -> np.ndarray:
    """``image`` at most _STATS_SIDE pixels on its longer side (area-averaged): where means and spreads are read."""
    height, width = image.shape[:2]
    if max(height, width) <= _STATS_SIDE:
        return image
    scale = _STATS_SIDE / max(height, width)
    return cv2.resize(image, (max(1, round(width * scale)), max(1, round(height * scale))),
                      interpolation=cv2.INTER_AREA)


def _weighted_moments(weights: np.ndarray, *images: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(means, covariance), weighted by ``weights`` (H, W), of the columns: the image position (u, v)
    in image sides, then every channel of each of ``images`` (H, W, C). One product gives every
    moment the fit needs: on 64-pixel copies, separate numpy passes were mostly call overhead."""
    height, width = weights.shape
    u, v = np.meshgrid((np.arange(width) + 0.5) / width, (np.arange(height) + 0.5) / height)
    columns = np.concatenate([u[..., None], v[..., None], *images], axis=2).reshape(height * width, -1)
    share = weights.reshape(-1, 1).astype(np.float64) / float(weights.sum())
    # Sums and einsum, not matrix products: OpenBLAS would wake its threads for these, and they spin on
    # for a while after each one, taking the core another face's swap was running on.
    means = (columns * share).sum(axis=0)
    centred = columns - means
    return means, np.einsum("ni,nj->ij", centred * share, centred)


def _slopes(covariance: np.ndarray, *channels: int) -> list[np.ndarray]:
    """The least-squares plane's slopes (across, down) of each column in ``channels``, from the
    weighted covariance of ``_weighted_moments``; zero where the weights span no area."""
    # The 2x2 system written out: numpy's LAPACK calls wait on the BLAS threads (docs/benchmarks.md).
    (uu, uv), (_, vv) = covariance[:2, :2]
    det = linear_det(covariance)
    if abs(det) < 1e-9:
        return [np.zeros(2) for _ in channels]
    return [np.array([vv * covariance[0, channel] - uv * covariance[1, channel],
                      uu * covariance[1, channel] - uv * covariance[0, channel]]) / det for channel in channels]


@dataclass(frozen=True)
class ColorTransfer:
    """Per-channel affine L*a*b* transfer: ``x' = gain * x + offset`` (L 0..100, a and b around 0),
    the light's direction: ``light[0] * u + light[1] * v + light[2]`` added to L* at the image
    position (u, v) in image sides (0..1 across and down); lightness beyond ``top`` (the original's
    brightest skin, L*) bends towards _TOP_MARGIN above it."""

    gain: np.ndarray    # (3,)
    offset: np.ndarray  # (3,)
    light: np.ndarray = field(default_factory=lambda: np.zeros(3, np.float32))  # (3,)
    top: float = 100.0

    @classmethod
    def fit(cls, image: np.ndarray, reference: np.ndarray, mask: np.ndarray) -> "ColorTransfer | None":
        """The transfer moving ``image``'s colours inside ``mask`` to ``reference``'s there (same
        size BGR uint8 images, float mask); None when the mask is empty."""
        if image.shape != reference.shape or image.ndim != 3 or image.shape[2] != 3:
            raise ValueError(f"colour matching needs two BGR images of one size, got {image.shape} and {reference.shape}")
        weights = np.asarray(mask, dtype=np.float32)
        if weights.shape != image.shape[:2]:
            raise ValueError(f"colour matching mask must be {image.shape[:2]}, got {weights.shape}")
        if float(weights.sum()) < _MIN_WEIGHT:
            return None
        small_weights = shrunk_for_statistics(weights)
        if float(small_weights.sum()) < _MIN_WEIGHT:
            small_image, small_reference, small_weights = image, reference, weights
        else:
            small_image, small_reference = shrunk_for_statistics(image), shrunk_for_statistics(reference)
        lab_src, lab_ref = _lab(small_image), _lab(small_reference)
        means, covariance = _weighted_moments(small_weights, lab_src, lab_ref)  # u, v, source L a b, reference L a b
        spreads = np.sqrt(np.maximum(np.diag(covariance), 0.0))
        mean_src, mean_ref, std_src, std_ref = means[2:5], means[5:8], spreads[2:5], spreads[5:8]
        gain = np.where(std_src > 1e-6, std_ref / np.maximum(std_src, 1e-6), 1.0)
        gain = np.clip(gain, 1.0 / MAX_GAIN, MAX_GAIN)
        # The gain scales the crop's lighting, its slopes too: what remains to reach the target's.
        ref_slopes, src_slopes = _slopes(covariance, 5, 2)
        slopes = ref_slopes - gain[0] * src_slopes
        light = np.array([*slopes, -float(slopes @ means[:2])])  # no change on average over the mask
        skin = lab_ref[..., 0][small_weights >= 0.5 * float(small_weights.max())]
        top = float(np.percentile(skin, _TOP_PERCENTILE))
        return cls(gain.astype(np.float32), (mean_ref - gain * mean_src).astype(np.float32), light.astype(np.float32),
                   top)

    def local_gains(self, lightness8: np.ndarray) -> np.ndarray:
        """(H, W, 3) float32: how much a smooth change of L*, a*, b* at pixels of 8-bit lightness
        ``lightness8`` (H, W uint8, OpenCV's L* scale) is scaled when the transfer is applied at full
        strength: the lightness gain (it scales the lighting, which a smooth change is part of), and
        the chroma gains faded out on dark pixels as ``apply`` fades them."""
        fade = cv2.LUT(lightness8, _DARK_FADE)
        gains = np.empty((*lightness8.shape, 3), np.float32)
        gains[..., 0] = self.gain[0]
        for channel in (1, 2):
            gains[..., channel] = 1.0 + (self.gain[channel] - 1.0) * fade
        return gains

    def as_array(self) -> np.ndarray:
        """(4, 3) float32: gain, offset, light and (top, 0, 0)."""
        return np.stack([self.gain, self.offset, self.light, [self.top, 0.0, 0.0]]).astype(np.float32)

    @classmethod
    def from_array(cls, array: np.ndarray) -> "ColorTransfer":
        array = np.asarray(array, dtype=np.float32)
        if array.shape != TRANSFER_SHAPE or not np.all(np.isfinite(array)):
            raise ValueError(f"a colour transfer is a finite {TRANSFER_SHAPE} array (gain, offset, light, top), "
                             f"got {array.shape}")
        return cls(array[0].copy(), array[1].copy(), array[2].copy(), float(array[3, 0]))

    def apply(self, image: np.ndarray, strength: float = 1.0,
              box: tuple[int, int, int, int] | None = None, used: np.ndarray | None = None) -> np.ndarray:
        """``image`` (BGR uint8) with the transfer applied at ``strength`` (0..1); a new image.
        ``box`` (x0, y0, x1, y1): change only that part (the rest is copied as it is). ``used`` (bool,
        the image's height and width): the pixels the caller reads; only they are brought back into
        sRGB's range, the rest may keep a clipped channel (they are the same wherever ``used`` holds)."""
        if not 0.0 <= float(strength) <= 1.0:
            raise ValueError(f"colour match strength must be in 0..1, got {strength}")
        if strength == 0.0:
            return image
        height, width = image.shape[:2]
        if used is not None and used.shape != (height, width):
            raise ValueError(f"the used pixels must be a ({height}, {width}) mask, got {used.shape}")
        if box is not None:
            x0, y0, x1, y1 = box
            out = image.copy()
            if x1 > x0 and y1 > y0:
                out[y0:y1, x0:x1] = self._applied(image[y0:y1, x0:x1], float(strength), (x0, y0, width, height),
                                                  None if used is None else used[y0:y1, x0:x1])
            return out
        return self._applied(image, float(strength), (0, 0, width, height), used)

    def _applied(self, image: np.ndarray, s: float, place: tuple[int, int, int, int],
                 used: np.ndarray | None = None) -> np.ndarray:
        """``apply`` on ``image``, the part of a (width, height) image at (x0, y0) (``place``)."""
        # OpenCV's 8-bit L*a*b* (L scaled to 0..255, a and b offset by 128) goes through lookup tables:
        # several times faster than its float conversions, which only the few pixels near a limit need.
        lab8 = cv2.cvtColor(image, cv2.COLOR_BGR2LAB)
        lab = lab8.astype(np.float32)
        # The chroma change (a, b affine), faded out on dark pixels: they keep their own hue.
        change = cv2.transform(lab, self._chroma_change(s))
        change *= cv2.LUT(lab8[..., 0], _DARK_FADE)[..., None]
        moved = lab + change
        # No a* or b* below the lower of its own value and neutral. Skin is warm (a*, b* above 0) in every face,
        # and the transfer widens each channel's spread about the source face's mean: a pixel far from the skin's
        # colour (a white glint on a glasses' rim) was carried past neutral, or further from it, and turned cyan.
        cv2.max(moved, cv2.min(lab, _NEUTRAL_FLOOR), dst=moved)
        cv2.subtract(moved, lab, dst=change)
        offset = self.offset[0] + self._plane(*place, image.shape)  # L* units
        moved[..., 0] += s * ((self.gain[0] - 1.0) * _lighting(lab[..., 0]) + offset * _L8)
        lightness = moved[..., 0]
        top = 100.0 - s * (100.0 - self.top)  # at part strength, part of the way: no jump from 0
        near_limits = (lightness < _KNEE * _L8) | (lightness > min(top, 100.0 - _KNEE) * _L8)
        if near_limits.any():
            lightness[near_limits] = _soft_range(lightness[near_limits] / _L8, top) * _L8
        np.clip(moved, 0.0, 255.0, out=moved)
        bgr = cv2.cvtColor(cv2.convertScaleAbs(moved), cv2.COLOR_LAB2BGR)  # rounded, in 0..255
        # Pixels at a limit now that were not before: their colour left sRGB (OpenCV cut a channel).
        suspects = (cv2.inRange(bgr, (1, 1, 1), (254, 254, 254)) == 0) & (cv2.inRange(image, (1, 1, 1), (254, 254, 254)) > 0)
        if used is not None:  # the correction was half of a face's transfer, mostly on hair and background
            suspects &= used
        if suspects.any():
            bgr[suspects] = _into_range(lightness[suspects] / _L8, lab[suspects][:, 1:] - 128.0, change[suspects][:, 1:])
        return bgr

    def _plane(self, x0: int, y0: int, width: int, height: int, shape: tuple[int, ...]) -> np.ndarray:
        """The light's plane (L* units) over the ``shape`` part at (x0, y0) of a (width, height) image."""
        u = (x0 + np.arange(shape[1], dtype=np.float32) + 0.5) / width
        v = (y0 + np.arange(shape[0], dtype=np.float32) + 0.5) / height
        return (self.light[0] * u[None, :] + (self.light[1] * v + self.light[2])[:, None]).astype(np.float32)

    def _chroma_change(self, strength: float) -> np.ndarray:
        """(3, 4) matrix for cv2.transform: from 8-bit L*a*b* to the change of a* and b* at ``strength``
        (none for L*): ``strength * ((gain - 1) * (x - 128) + offset)``."""
        matrix = np.zeros((3, 4), np.float32)
        for channel in (1, 2):
            matrix[channel, channel] = strength * (self.gain[channel] - 1.0)
            matrix[channel, 3] = strength * (self.offset[channel] - 128.0 * (self.gain[channel] - 1.0))
        return matrix


def _lighting(lightness: np.ndarray) -> np.ndarray:
    """The slow part of L*: blurred with sigma _LIGHTING_SIGMA of the side, on a quarter-size copy."""
    height, width = lightness.shape
    small = cv2.resize(lightness, (max(1, width // 4), max(1, height // 4)), interpolation=cv2.INTER_AREA)
    sigma = max(0.5, _LIGHTING_SIGMA * max(height, width) / 4.0)
    return cv2.resize(cv2.GaussianBlur(small, (0, 0), sigma), (width, height), interpolation=cv2.INTER_LINEAR)


def _soft_range(lightness: np.ndarray, top: float) -> np.ndarray:
    """L* bent smoothly: beyond ``top`` towards ``top`` + _TOP_MARGIN, and into (0, 100) within _KNEE of
    either end (identity in between)."""
    beyond = top + _TOP_MARGIN * (1.0 - np.exp((top - np.maximum(lightness, top)) / _TOP_MARGIN))
    lightness = np.where(lightness > top, beyond, lightness)
    low = _KNEE * np.exp((np.minimum(lightness, _KNEE) - _KNEE) / _KNEE)
    high = 100.0 - _KNEE * np.exp((100.0 - _KNEE - np.maximum(lightness, 100.0 - _KNEE)) / _KNEE)
    return np.where(lightness < _KNEE, low, np.where(lightness > 100.0 - _KNEE, high, lightness)).astype(np.float32)


def _into_range(lightness: np.ndarray, chroma: np.ndarray, change: np.ndarray) -> np.ndarray:
    """BGR uint8 (N, 3) for N pixels whose new colour left sRGB: the largest share of the chroma
    change (then of their own chroma) that stays strictly inside, at the new lightness. Every
    candidate of every pixel goes through one conversion."""
    shares = np.asarray(_CHROMA_STEPS, np.float32)
    steps = len(shares)
    # Each pixel's candidates are one row of 8: every one goes through OpenCV's vector code alike.
    trials = np.empty((len(lightness), 2 * steps, 3), np.float32)
    trials[..., 0] = lightness[:, None]
    for step, share in enumerate(shares):  # written in place, share by share: no (N, steps, 2) temporaries
        np.multiply(change, share, out=trials[:, step, 1:])
        trials[:, step, 1:] += chroma                                # less change
        np.multiply(chroma, share, out=trials[:, steps + step, 1:])  # less own chroma
    converted = cv2.cvtColor(trials, cv2.COLOR_Lab2BGR)
    # Strictly between the limits: inRange's bounds are inclusive, so the next float32 inwards.
    fits = cv2.inRange(converted.reshape(-1, 1, 3), (_LOW_IN,) * 3, (_HIGH_IN,) * 3).reshape(trials.shape[:2])
    # The first fitting candidate; the last one (grey at a soft-ranged lightness) always fits.
    fits[:, -1] = 255
    first = fits.argmax(axis=1)
    chosen = converted[np.arange(len(first)), first]
    return np.clip(np.rint(chosen * 255.0), 1, 254).astype(np.uint8)


def match_color(image: np.ndarray, reference: np.ndarray, mask: np.ndarray, strength: float = 1.0) -> np.ndarray:
    """``image`` with its colours inside ``mask`` moved towards ``reference``'s (fit, then apply)."""
    if not 0.0 <= float(strength) <= 1.0:
        raise ValueError(f"colour match strength must be in 0..1, got {strength}")
    if strength == 0.0:
        return image
    transfer = ColorTransfer.fit(image, reference, mask)
    return image if transfer is None else transfer.apply(image, strength)
