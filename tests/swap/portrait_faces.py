"""The sample portraits' faces, for the swap tests (imported by name: tests/swap is on sys.path)."""

from __future__ import annotations

import numpy as np

from facecache.store.records import Face
from facecache.swap.piecewise import layout_68

# Faces of the sample portraits as the engine's MTCNN finds them (rounded to 0.01 px).
PORTRAIT_FACES = {
    "grace_hopper": dict(box=[175.11, 112.65, 355.51, 337.70], score=0.99996,
                         kps5=[[224.19, 193.06], [309.00, 188.91], [271.36, 238.44], [233.10, 278.49], [304.90, 274.17]]),
    "astronaut": dict(box=[179.17, 64.36, 264.13, 173.99], score=0.99983,
                      kps5=[[203.71, 101.35], [247.02, 104.16], [224.55, 128.99], [201.31, 140.02], [244.84, 142.80]]),
}


def portrait_face(name: str) -> Face:
    spec = PORTRAIT_FACES[name]
    return Face(box=np.array(spec["box"], dtype=np.float32), score=spec["score"],
                kps5=np.array(spec["kps5"], dtype=np.float32))



def synthetic_68(kps5, mouth_open: float = 0.0) -> np.ndarray:
    """68 points laid out like the iBUG landmarks around five key points, for tests that need a
    68-point face where no landmarker runs (the layout the warp's mesh is cut on)."""
    return layout_68(kps5, mouth_open).astype(np.float32)
