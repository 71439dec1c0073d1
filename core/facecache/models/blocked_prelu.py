"""The face mesh's graph in a form ONNX Runtime's CPU provider runs in its blocked channel layout
(NCHWc) from end to end: 40 % less CPU, and numbers that differ in the last bits.

ONNX Runtime runs convolutions in a blocked layout and changes layout around every operator that
cannot work in it. PRelu (or `prelu_split`'s Min and Mul) and the zero channel padding of the face
mesh's residual blocks (Pad) are such operators: measured here (onnxruntime 1.32, 2 threads, six faces
a run), the split face mesh spent 5 of its 17.6 ms in convolutions and the rest in element-wise
operators and layout changes. Here
- PRelu(x) becomes Relu(x) + (-slope) * Relu(-x), with -x and the product as depthwise 1 x 1
  convolutions (for a slope of shape (C, 1, 1): one per channel of an NCHW tensor);
- a Pad that appends C zero channels to a tensor of C channels (a residual block that doubles its
  channels) becomes a concatenation with a depthwise convolution by zeros;
all operators the blocked layout keeps. The face mesh, six faces a run: 17.6 -> 10.4 ms of CPU.

Each rewrite is exact on its own (for each element either Relu term is zero, and -x, the product and
x * 0 are exact), but in the blocked layout ONNX Runtime also fuses each residual Add into the
convolution before it, which then accumulates onto the skip connection: other roundings, the face
mesh's landmarks about 1e-4 crop pixels from the file's own (tests/models/test_blocked_prelu.py). So the
records differ: a model file run in this form names it in the analysis namespace (`ModelFile.cpu_graph`,
`analysis.factory`), and a change here that changes any number must rename the form.
"""

from __future__ import annotations

import numpy as np

from facecache.models.convert.onnx_writer import tensor_proto
from facecache.models.graph_edit import Node, edit_graph, node


def blocked_prelu(model: bytes) -> bytes:
    """The model with its PRelu nodes and zero channel padding rewritten (see the module doc); the bytes
    unchanged when it has no PRelu."""
    if b"PRelu" not in model:
        return model
    return edit_graph(model, _blocked_nodes)


def _blocked_nodes(nodes: list[Node], initializer) -> tuple[list[bytes], list[bytes]]:
    out, added = [], []
    channels: dict[str, int] = {}  # the channel counts known from the slopes, for the padding that follows
    for each in nodes:
        rewritten = None
        if each.is_onnx("PRelu", 2):
            rewritten = _prelu(each, initializer(each.inputs[1]))
            if rewritten is not None:
                channels[each.outputs[0]] = rewritten[2]
        elif each.is_onnx("MaxPool", 1) and each.inputs[0] in channels:
            channels[each.outputs[0]] = channels[each.inputs[0]]
        elif each.is_onnx("Pad", 2) and not each.attributes:  # no mode: constant, and no value: zeros
            rewritten = _zero_padding(each, initializer(each.inputs[1]), channels.get(each.inputs[0]))
        if rewritten is None:
            out.append(each.raw)
        else:
            out += rewritten[0]
            added += rewritten[1]
    return out, added


def _prelu(prelu: Node, slope: np.ndarray | None):
    """(nodes, initializers, channels) of Relu(x) + (-slope) * Relu(-x); None for a slope that is not one
    per channel of an NCHW tensor."""
    if slope is None or slope.dtype != np.float32 or slope.ndim != 3 or slope.shape[1:] != (1, 1):
        return None
    (x, _), (y,) = prelu.inputs, prelu.outputs
    count = slope.shape[0]
    negate, scale = f"{y}/blocked/minus_one", f"{y}/blocked/minus_slope"
    positive, negated, negative, scaled = (f"{y}/blocked/{part}" for part in ("relu", "negated", "negative", "scaled"))
    nodes = [node("Relu", [x], positive), _depthwise(x, negate, negated, count), node("Relu", [negated], negative),
             _depthwise(negative, scale, scaled, count), node("Add", [positive, scaled], y)]
    weights = [tensor_proto(negate, np.full((count, 1, 1, 1), -1.0, np.float32)),
               tensor_proto(scale, -slope.reshape(count, 1, 1, 1))]
    return nodes, weights, count


def _zero_padding(pad: Node, pads: np.ndarray | None, count: int | None):
    """(nodes, initializers) of x and as many zero channels after it; None for any other padding."""
    if count is None or pads is None or pads.tolist() != [0, 0, 0, 0, 0, count, 0, 0]:
        return None
    (x, _), (y,) = pad.inputs, pad.outputs
    zero, zeros = f"{y}/blocked/zero", f"{y}/blocked/zeros"
    return ([_depthwise(x, zero, zeros, count), node("Concat", [x, zeros], y, axis=1)],
            [tensor_proto(zero, np.zeros((count, 1, 1, 1), np.float32))])


def _depthwise(x: str, weights: str, output: str, count: int) -> bytes:
    """Each of `count` channels times its own weight: a 1 x 1 convolution with a group per channel."""
    return node("Conv", [x, weights], output, group=count, kernel_shape=[1, 1])
