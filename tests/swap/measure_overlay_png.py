"""Measure OpenCV PNG encoding of a full 1080p BGR frame vs. an RGBA face overlay (a script, not a test).

    python tests/swap/measure_overlay_png.py [--repeat N]

Builds a 1920x1080 frame from the astronaut sample (and a copy with sensor-like
grain), swaps Grace Hopper's face onto it with the classic swapper, and times
``cv2.imencode('.png', ...)`` for several compression levels and zlib strategies.
Prints one row per setting: milliseconds (median), bytes, and whether decoding
gives the exact pixels back.
"""

from __future__ import annotations

import argparse
import statistics
import time

import cv2
import numpy as np

from facecache.analysis.results import Detection
from facecache.samples import sample_image
from facecache.swap.classic import ClassicSwapper
from facecache.swap.composite import CompositeParams, overlay, overlay_patches

# Key points measured on the samples with the engine's MTCNN detector.
HOPPER_KPS = [[224.19, 193.06], [309.00, 188.91], [271.36, 238.44], [233.10, 278.49], [304.90, 274.17]]
ASTRONAUT_KPS = [[203.71, 101.35], [247.02, 104.16], [224.55, 128.99], [201.31, 140.02], [244.84, 142.80]]

C, S = cv2.IMWRITE_PNG_COMPRESSION, cv2.IMWRITE_PNG_STRATEGY
SETTINGS = {
    "opencv default (no params)": [],
    "level 0 (stored)": [C, 0],
    "level 1": [C, 1],
    "level 3": [C, 3],
    "level 6": [C, 6],
    "level 9": [C, 9],
    "level 1 + RLE": [C, 1, S, cv2.IMWRITE_PNG_STRATEGY_RLE],
    "level 1 + HUFFMAN_ONLY": [C, 1, S, cv2.IMWRITE_PNG_STRATEGY_HUFFMAN_ONLY],
    "level 1 + FILTERED": [C, 1, S, cv2.IMWRITE_PNG_STRATEGY_FILTERED],
    "level 1 + FIXED": [C, 1, S, cv2.IMWRITE_PNG_STRATEGY_FIXED],
    "level 3 + RLE": [C, 3, S, cv2.IMWRITE_PNG_STRATEGY_RLE],
    "RLE only": [S, cv2.IMWRITE_PNG_STRATEGY_RLE],
}


def frame_1080p() -> tuple[np.ndarray, np.ndarray]:
    image = cv2.imread(str(sample_image("astronaut")))
    # Centre 512x288 band around the face, scaled 3.75x to 1920x1080.
    top = 0
    band = image[top:top + 288]
    frame = cv2.resize(band, (1920, 1080), interpolation=cv2.INTER_CUBIC)
    kps = (np.asarray(ASTRONAUT_KPS) - [0, top]) * 3.75
    return frame, kps


def timed(image: np.ndarray, params: list[int], repeat: int) -> tuple[float, int, bool]:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        ok, data = cv2.imencode(".png", image, params)
        times.append(time.perf_counter() - start)
        assert ok
    decoded = cv2.imdecode(data, cv2.IMREAD_UNCHANGED)
    return statistics.median(times) * 1000.0, int(data.size), bool(np.array_equal(decoded, image))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=7)
    args = parser.parse_args()
    frame, kps = frame_1080p()
    grain = np.clip(frame.astype(np.int16) + np.random.default_rng(0).normal(0, 2.0, frame.shape).round().astype(np.int16),
                    0, 255).astype(np.uint8)
    hopper = cv2.imread(str(sample_image("grace_hopper")))
    swapper = ClassicSwapper()
    source = swapper.prepare_source(hopper, Detection([0, 0, 1, 1], 1.0, HOPPER_KPS))
    cases = {}
    for name, base in (("clean", frame), ("grain", grain)):
        result = swapper.swap(base, Detection([0, 0, 1, 1], 1.0, kps), source)
        layer = overlay(base, [result], CompositeParams())
        ys, xs = np.nonzero(layer[..., 3])
        cases[f"1080p BGR frame ({name})"] = base
        cases[f"1080p BGRA overlay ({name}; face box {xs.max() - xs.min() + 1}x{ys.max() - ys.min() + 1})"] = layer
        ((x, y, patch),) = overlay_patches(base, [result], CompositeParams())
        cases[f"BGRA patch only ({name}; {patch.shape[1]}x{patch.shape[0]} at {x},{y})"] = patch
    print(f"opencv {cv2.__version__}, numpy {np.__version__}, median of {args.repeat}")
    for case, image in cases.items():
        print(f"\n{case}")
        for label, params in SETTINGS.items():
            ms, size, exact = timed(image, params, args.repeat)
            print(f"  {label:28s} {ms:8.2f} ms {size:10,d} bytes  exact={exact}")


if __name__ == "__main__":
    main()
