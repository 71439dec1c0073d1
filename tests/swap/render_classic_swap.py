"""Render the classic swap on the sample portraits for a look by eye (a script, not a test).

    python tests/swap/render_classic_swap.py OUT_FOLDER [--seamless] [--color-match 1.0]

Writes grace_hopper_on_astronaut.png, astronaut_on_grace_hopper.png and
sheet.png (per pair: target, result, result's mask; zoomed on the face).
"""

from __future__ import annotations

import argparse
from pathlib import Path

import cv2
import numpy as np

from facecache.samples import sample_image
from facecache.swap import ClassicSettings, ClassicSwapper, CompositeParams, paste_back
from portrait_faces import portrait_face

PAIRS = [("grace_hopper", "astronaut"), ("astronaut", "grace_hopper")]


def zoom(image: np.ndarray, box, side: int = 400) -> np.ndarray:
    x1, y1, x2, y2 = (int(v) for v in box)
    cx, cy, half = (x1 + x2) // 2, (y1 + y2) // 2, int(max(x2 - x1, y2 - y1) * 0.9)
    return cv2.resize(image[max(cy - half, 0):cy + half, max(cx - half, 0):cx + half], (side, side))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("--seamless", action="store_true")
    parser.add_argument("--color-match", type=float, default=1.0)
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    frames = {name: cv2.imread(str(sample_image(name))) for name in ("grace_hopper", "astronaut")}
    swapper = ClassicSwapper(ClassicSettings(seamless=args.seamless, color_match=args.color_match))
    rows = []
    for source, target in PAIRS:
        result = swapper.swap(frames[target], portrait_face(target), swapper.prepare_source(frames[source], portrait_face(source)))
        out = paste_back(frames[target], [result], CompositeParams())
        cv2.imwrite(str(args.out / f"{source}_on_{target}.png"), out)
        mask = cv2.cvtColor(np.rint(result.mask * 255).astype(np.uint8), cv2.COLOR_GRAY2BGR)
        box = portrait_face(target).box
        rows.append(np.hstack([zoom(frames[target], box), zoom(out, box), cv2.resize(mask, (400, 400))]))
    cv2.imwrite(str(args.out / "sheet.png"), np.vstack(rows))
    print(f"wrote {args.out}/sheet.png")


if __name__ == "__main__":
    main()
