"""Measure what checking a model's digest at every session creation costs (a script, not a test).

    python tests/models/measure_model_check.py [--megabytes 500] [--repeat 3]

Writes an ONNX graph holding one float32 initializer of the given size (a stand-in with the
size of inswapper_128, 530 MB), then times, median of `--repeat` runs with the file in the
page cache: reading the file, XXH3-128 over the bytes in memory (the check), creating a CPU
session from those bytes, and creating a session from the path (what the engine did before).
Prints one JSON object; `check_fraction` is the check's share of a session creation.
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper

from facecache.fingerprint import bytes_digest
from facecache.models.runtime import SessionFactory


def big_model(path: Path, megabytes: int) -> Path:
    weights = np.random.default_rng(0).random(megabytes * 1_000_000 // 4, dtype=np.float32)
    graph = helper.make_graph(
        [helper.make_node("ReduceMean", ["w"], ["m"], keepdims=0), helper.make_node("Add", ["x", "m"], ["y"])],
        "big", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1])], [numpy_helper.from_array(weights, "w")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    onnx.save(model, str(path))
    return path


def median_seconds(action, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        action()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--megabytes", type=int, default=500)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        path = big_model(Path(folder) / "big.onnx", args.megabytes)
        data = path.read_bytes()
        digest = bytes_digest(data)
        factory = SessionFactory("cpu")
        options = factory.session_options()
        read_s = median_seconds(path.read_bytes, args.repeat)
        hash_s = median_seconds(lambda: bytes_digest(data), args.repeat)
        from_path_s = median_seconds(lambda: ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"]),
                                     args.repeat)
        checked_s = median_seconds(lambda: SessionFactory("cpu").session(path, digest), args.repeat)
        print(json.dumps({"model_mb": round(len(data) / 1e6, 1), "read_s": round(read_s, 3),
                          "xxh3_128_in_memory_s": round(hash_s, 3), "session_from_path_s": round(from_path_s, 3),
                          "session_checked_s": round(checked_s, 3),
                          "check_fraction": round(hash_s / checked_s, 3)}, indent=1))


if __name__ == "__main__":
    main()
