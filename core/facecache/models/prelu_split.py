"""PRelu written as Relu(x) + slope * Min(x, 0) for ONNX Runtime's CPU provider: the same numbers, faster.

ONNX Runtime's CPU PRelu is a slow broadcasting kernel, and it leaves the blocked channel layout the
convolutions run in, so every PRelu pays two layout changes as well. The face mesh has 23 of them:
measured here (onnxruntime 1.32, 2 threads, six faces a run), PRelu and those layout changes were
17 of the graph's 27 ms. Relu, Min, Mul and Add are ONNX Runtime's fast element-wise kernels: the
face mesh costs 25-40 % less CPU, R-Net 33 %, O-Net 5 %. (Not every graph gains: MTCNN's P-Net, over
whole frames, was 5-10 % slower; the catalog says which files are split, `ModelFile.cpu_graph`.)

The numbers are the same to the bit: where x > 0, x + slope * 0 is x; where x < 0, 0 + slope * x is
slope * x; Relu, Min and Add return their inputs' values exactly, and the one product is PRelu's own.
(Only a zero's sign can differ, and a zero adds nothing to the sums that follow.) So a model file keeps
its digest, and an analysis made with either graph is the same record.

The model is rewritten in its protobuf bytes (`graph_edit`), as the converters write models: the `onnx`
package is not one of the extension's wheels. (`blocked_prelu` is the faster form that keeps the blocked
layout, at the price of other numbers.)
"""

from __future__ import annotations

import numpy as np

from facecache.models.convert.onnx_writer import tensor_proto
from facecache.models.graph_edit import Node, default_opset, edit_graph, node

_BROADCASTING_MIN = 8  # the first opset whose Min broadcasts a scalar
_ZERO = "prelu_split/zero"


def split_prelu(model: bytes) -> bytes:
    """The model with each PRelu node replaced by Relu, Min, Mul and Add (see the module doc); the bytes
    unchanged when it has no PRelu or its opset is too old for a broadcasting Min."""
    if b"PRelu" not in model or default_opset(model) < _BROADCASTING_MIN:
        return model
    return edit_graph(model, _split_nodes)


def _split_nodes(nodes: list[Node], _initializer) -> tuple[list[bytes], list[bytes]]:
    out, split = [], False
    for each in nodes:
        if not each.is_onnx("PRelu", 2):
            out.append(each.raw)
            continue
        (x, slope), (y,) = each.inputs, each.outputs
        positive, negative, scaled = (f"{y}/prelu_split/{part}" for part in ("relu", "min", "mul"))
        out += [node("Relu", [x], positive), node("Min", [x, _ZERO], negative),
                node("Mul", [negative, slope], scaled), node("Add", [positive, scaled], y)]
        split = True
    return out, [tensor_proto(_ZERO, np.zeros((), np.float32))] if split else []
