"""Rewrite the nodes of an ONNX model in its protobuf bytes, without the `onnx` package (not one of the
extension's wheels): what the CPU forms of a graph (`prelu_split`, `blocked_prelu`) share.

Field numbers are those of onnx.proto: ModelProto.graph (7), opset_import (8); GraphProto.node (1),
initializer (5); NodeProto.input (1), output (2), name (3), op_type (4), attribute (5), domain (7).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from facecache.models.convert import wire
from facecache.models.convert.onnx_writer import attribute_proto
from facecache.models.onnx_tensors import tensor_array, tensor_name

_MODEL_GRAPH, _MODEL_OPSET = 7, 8
_GRAPH_NODE, _GRAPH_INITIALIZER = 1, 5
_NODE_INPUT, _NODE_OUTPUT, _NODE_NAME, _NODE_OP, _NODE_ATTRIBUTE, _NODE_DOMAIN = 1, 2, 3, 4, 5, 7
_ATTRIBUTE_NAME = 1
_OPSET_DOMAIN, _OPSET_VERSION = 1, 2


@dataclass(frozen=True)
class Node:
    """One node as read: its bytes (written back as they are when it is kept) and what a rewrite asks."""

    raw: bytes
    op_type: str
    inputs: tuple[str, ...]
    outputs: tuple[str, ...]
    attributes: tuple[str, ...]  # the attributes' names
    domain: str

    def is_onnx(self, op_type: str, inputs: int, outputs: int = 1) -> bool:
        """Whether it is the standard operator `op_type` with that many inputs and outputs."""
        return (self.op_type == op_type and self.domain in ("", "ai.onnx") and len(self.inputs) == inputs
                and len(self.outputs) == outputs)


# A rewrite of a graph's nodes: given them in order and a look-up of an initializer's values by name
# (None when the name is no initializer), the nodes' bytes in order and the initializers to add.
Rewrite = Callable[[list[Node], Callable[[str], "np.ndarray | None"]], tuple[list[bytes], list[bytes]]]


def edit_graph(model: bytes, rewrite: Rewrite) -> bytes:
    """The model with its graph's nodes as `rewrite` returns them; every other field as it was."""
    return b"".join(_edited(value, rewrite) if number == _MODEL_GRAPH and kind == wire.BYTES
                    else _field(number, kind, value) for number, kind, value in wire.fields(model))


def node(op_type: str, inputs: list[str], output: str, **attributes) -> bytes:
    """A standard operator's node with one output (named after it) and `attributes`."""
    return (b"".join(wire.bytes_field(_NODE_INPUT, name) for name in inputs) + wire.bytes_field(_NODE_OUTPUT, output)
            + wire.bytes_field(_NODE_NAME, f"{output}/{op_type}") + wire.bytes_field(_NODE_OP, op_type)
            + b"".join(wire.bytes_field(_NODE_ATTRIBUTE, attribute_proto(key, value))
                       for key, value in attributes.items()))


def default_opset(model: bytes) -> int:
    """The model's version of the standard operators (0 when it names none)."""
    for number, kind, value in wire.fields(model):
        if number == _MODEL_OPSET and kind == wire.BYTES:
            fields = {n: v for n, _, v in wire.fields(value)}
            if wire.text(fields.get(_OPSET_DOMAIN, b"")) in ("", "ai.onnx"):
                return int(fields.get(_OPSET_VERSION, 0))
    return 0


def _edited(graph, rewrite: Rewrite) -> bytes:
    fields = list(wire.fields(graph))
    nodes = [_read_node(value) for number, kind, value in fields if number == _GRAPH_NODE and kind == wire.BYTES]
    initializers = {tensor_name(value): value for number, kind, value in fields
                    if number == _GRAPH_INITIALIZER and kind == wire.BYTES}
    new_nodes, added = rewrite(nodes, lambda name: tensor_array(initializers[name]) if name in initializers else None)
    # initializers only the replaced nodes read go (ONNX Runtime warns of each unused one)
    unused = {name for each in nodes for name in each.inputs} - {name for raw in new_nodes for name in _read_node(raw).inputs}
    parts, placed = [], False  # joined once: a graph's initializers can be hundreds of megabytes
    for number, kind, value in fields:
        if number == _GRAPH_NODE and kind == wire.BYTES:
            if not placed:  # the nodes stay where the graph had them, in their order
                parts += [wire.bytes_field(_GRAPH_NODE, raw) for raw in new_nodes]
                placed = True
            continue
        if number == _GRAPH_INITIALIZER and kind == wire.BYTES and tensor_name(value) in unused:
            continue
        parts.append(_field(number, kind, value))
    parts += [wire.bytes_field(_GRAPH_INITIALIZER, tensor) for tensor in added]
    return wire.bytes_field(_MODEL_GRAPH, b"".join(parts))


def _read_node(raw) -> Node:
    inputs, outputs, attributes, op_type, domain = [], [], [], "", ""
    for number, kind, value in wire.fields(raw):
        if kind != wire.BYTES:
            continue
        if number == _NODE_INPUT:
            inputs.append(wire.text(value))
        elif number == _NODE_OUTPUT:
            outputs.append(wire.text(value))
        elif number == _NODE_OP:
            op_type = wire.text(value)
        elif number == _NODE_DOMAIN:
            domain = wire.text(value)
        elif number == _NODE_ATTRIBUTE:
            attributes += [wire.text(v) for n, k, v in wire.fields(value) if n == _ATTRIBUTE_NAME and k == wire.BYTES]
    return Node(bytes(raw), op_type, tuple(inputs), tuple(outputs), tuple(attributes), domain)


def _field(number: int, kind: int, value) -> bytes:
    """One field written back as it was read."""
    if kind == wire.VARINT:
        return wire.int_field(number, value)
    if kind == wire.BYTES:
        return wire.bytes_field(number, bytes(value))
    return wire.key(number, kind) + value  # fixed 32- and 64-bit fields come as their bytes
