"""Colour transfer in CIE L*a*b*: the swapped face takes the original face's colours, without
clipping a channel or shifting a hue, and without flattening its detail.

Fit (once per swapped face, in the swap stage): inside the face mask, the mean and spread of each
L*, a*, b* channel of the swapped crop and of the original face at the same place (Reinhard et al.
2001, "Color Transfer between Images"). Each channel's transfer is affine: ``x' = gain * x + offset``.

Apply (in the composite stage, at the blend setting's strength):
- lightness: the gain applies to the crop's lighting only (a blurred copy of L*); the fine detail
  on top of it keeps its own contrast, so a flatter-lit target does not blur the face;
- chroma: the change fades out on dark pixels (pupils, dark glasses rims, shadows), whose hue the
  skin's statistics say nothing about: a reddish-brown pupil stays one instead of turning teal;
- range: lightness approaches 0 and 100 along a soft knee instead of being cut, and a pixel whose
  new colour falls outside sRGB keeps less of the chroma change (down to none) until it fits, so
  no channel is clipped at 0 or 255 that was not clipped before.
"""

from __future__ import annotations

from dataclasses import dataclass

import cv2
import numpy as np

# A channel's spread is never scaled by more than this factor either way.
MAX_GAIN = 2.0
_MIN_WEIGHT = 1e-3
# Statistics are measured on copies shrunk to this side: means and spreads barely move.
_STATS_SIDE = 64
# Lightness (0..100) below which the chroma change fades out (smoothstep from 0 to here).
DARK_LIGHTNESS = 45.0
# Soft knee: within this many L* units of 0 or 100, lightness bends towards the limit.
_KNEE = 8.0
# Channel values (0..1) a result must stay strictly between to round to neither 0 nor 255.
_LOW, _HIGH = 0.6 / 255.0, 254.4 / 255.0
# Fractions of the chroma change tried, in order, for a pixel whose colour leaves sRGB.
_CHROMA_STEPS = (0.75, 0.5, 0.25, 0.0)
# Lighting is L* blurred with this sigma, as a fraction of the crop's side.
_LIGHTING_SIGMA = 1.0 / 48.0


def _lab(image_bgr: np.ndarray) -> np.ndarray:
    """Float L*a*b* (L 0..100, a and b around 0) through OpenCV's fast 8-bit conversion."""
    lab = cv2.cvtColor(image_bgr, cv2.COLOR_BGR2LAB).astype(np.float32)
    lab[..., 0] *= np.float32(100.0 / 255.0)
    lab[..., 1:] -= np.float32(128.0)
    return lab


def _shrink(image: np.ndarray) -> np.ndarray:
    height, width = image.shape[:2]
    if max(height, width) <= _STATS_SIDE:
        return image
    scale = _STATS_SIDE / max(height, width)
    return cv2.resize(image, (max(1, round(width * scale)), max(1, round(height * scale))),
                      interpolation=cv2.INTER_AREA)


def _weighted_stats(lab: np.ndarray, weights: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    total = float(weights.sum())
    mean = np.einsum("hw,hwc->c", weights, lab, dtype=np.float64) / total
    var = np.einsum("hw,hwc->c", weights, (lab - mean) ** 2, dtype=np.float64) / total
    return mean, np.sqrt(np.maximum(var, 0.0))


@dataclass(frozen=True)
class ColorTransfer:
    """Per-channel affine L*a*b* transfer: ``x' = gain * x + offset`` (L 0..100, a and b around 0)."""

    gain: np.ndarray    # (3,)
    offset: np.ndarray  # (3,)

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
        small_weights = _shrink(weights)
        if float(small_weights.sum()) < _MIN_WEIGHT:
            small_image, small_reference, small_weights = image, reference, weights
        else:
            small_image, small_reference = _shrink(image), _shrink(reference)
        mean_src, std_src = _weighted_stats(_lab(small_image), small_weights)
        mean_ref, std_ref = _weighted_stats(_lab(small_reference), small_weights)
        gain = np.where(std_src > 1e-6, std_ref / np.maximum(std_src, 1e-6), 1.0)
        gain = np.clip(gain, 1.0 / MAX_GAIN, MAX_GAIN)
        return cls(gain.astype(np.float32), (mean_ref - gain * mean_src).astype(np.float32))

    def as_array(self) -> np.ndarray:
        return np.stack([self.gain, self.offset]).astype(np.float32)

    @classmethod
    def from_array(cls, array: np.ndarray) -> "ColorTransfer":
        array = np.asarray(array, dtype=np.float32)
        if array.shape != (2, 3) or not np.all(np.isfinite(array)):
            raise ValueError(f"a colour transfer is a finite (2, 3) array (gain, offset), got {array.shape}")
        return cls(array[0].copy(), array[1].copy())

    def apply(self, image: np.ndarray, strength: float = 1.0) -> np.ndarray:
        """``image`` (BGR uint8) with the transfer applied at ``strength`` (0..1); a new image."""
        if not 0.0 <= float(strength) <= 1.0:
            raise ValueError(f"colour match strength must be in 0..1, got {strength}")
        if strength == 0.0:
            return image
        s = np.float32(strength)
        lab = _lab(image)
        lightness = lab[..., 0]
        sigma = max(1.0, _LIGHTING_SIGMA * max(image.shape[:2]))
        lighting = cv2.GaussianBlur(lightness, (0, 0), sigma)
        new_l = lightness + s * ((self.gain[0] - 1.0) * lighting + self.offset[0])
        chroma = lab[..., 1:]
        change = chroma * (self.gain[1:] - 1.0) + self.offset[1:]
        # Dark pixels keep their own hue: fade the chroma change out below DARK_LIGHTNESS.
        t = np.clip(np.minimum(lightness, new_l) / np.float32(DARK_LIGHTNESS), 0.0, 1.0)
        change *= (s * t * t * (3.0 - 2.0 * t))[..., None]
        out = np.empty_like(lab)
        out[..., 0] = _soft_range(new_l)
        out[..., 1:] = chroma + change
        bgr = cv2.cvtColor(out, cv2.COLOR_Lab2BGR)
        outside = np.any((bgr <= _LOW) | (bgr >= _HIGH), axis=2) & _was_inside(image)
        if outside.any():
            _bring_into_range(bgr, out, chroma, change, outside)
        return np.clip(np.rint(bgr * 255.0), 0, 255).astype(np.uint8)


def _was_inside(image: np.ndarray) -> np.ndarray:
    """Pixels with no channel at 0 or 255 (those at a limit may stay there)."""
    return np.all((image > 0) & (image < 255), axis=2)


def _soft_range(lightness: np.ndarray) -> np.ndarray:
    """L* bent smoothly into (0, 100) within _KNEE of either end (identity in between)."""
    low = _KNEE * np.exp((lightness - _KNEE) / _KNEE)
    high = 100.0 - _KNEE * np.exp((100.0 - _KNEE - lightness) / _KNEE)
    return np.where(lightness < _KNEE, low, np.where(lightness > 100.0 - _KNEE, high, lightness)).astype(np.float32)


def _bring_into_range(bgr: np.ndarray, lab: np.ndarray, chroma: np.ndarray, change: np.ndarray,
                      outside: np.ndarray) -> None:
    """For pixels whose new colour leaves sRGB, keep less of the chroma change until it fits; in place."""
    ys, xs = np.nonzero(outside)
    lightness = lab[ys, xs, 0]
    base, delta = chroma[ys, xs], change[ys, xs]
    pending = np.ones(len(ys), dtype=bool)
    for fraction in _CHROMA_STEPS:
        trial = np.empty((len(ys), 1, 3), np.float32)
        trial[:, 0, 0] = lightness
        trial[:, 0, 1:] = base + fraction * delta
        converted = cv2.cvtColor(trial, cv2.COLOR_Lab2BGR)[:, 0]
        fits = np.all((converted > _LOW) & (converted < _HIGH), axis=1) & pending
        bgr[ys[fits], xs[fits]] = converted[fits]
        pending &= ~fits
        if not pending.any():
            return
    # Still outside with none of the change: the source pixel's own chroma at the new lightness
    # leaves sRGB; take the nearest colour inside (grey at that lightness is always inside).
    for fraction in (0.5, 0.0):
        trial = np.empty((int(pending.sum()), 1, 3), np.float32)
        trial[:, 0, 0] = lightness[pending]
        trial[:, 0, 1:] = fraction * base[pending]
        converted = cv2.cvtColor(trial, cv2.COLOR_Lab2BGR)[:, 0]
        fits = np.all((converted > _LOW) & (converted < _HIGH), axis=1)
        idx = np.nonzero(pending)[0]
        bgr[ys[idx[fits]], xs[idx[fits]]] = converted[fits]
        pending[idx[fits]] = False
        if not pending.any():
            return
    bgr[ys[pending], xs[pending]] = np.clip(bgr[ys[pending], xs[pending]], _LOW + 1e-4, _HIGH - 1e-4)


def match_color(image: np.ndarray, reference: np.ndarray, mask: np.ndarray, strength: float = 1.0) -> np.ndarray:
    """``image`` with its colours inside ``mask`` moved towards ``reference``'s (fit, then apply)."""
    if not 0.0 <= float(strength) <= 1.0:
        raise ValueError(f"colour match strength must be in 0..1, got {strength}")
    if strength == 0.0:
        return image
    transfer = ColorTransfer.fit(image, reference, mask)
    return image if transfer is None else transfer.apply(image, strength)
