"""Our own converters to ONNX, run by the model installer (no TensorFlow, no `onnx` package).

    Conversion("tflite", {"graph_name": "face_mesh", ...}).apply(tflite_bytes) -> ONNX bytes

A catalog entry names the conversion of each file whose source is not ONNX; the bytes it
produces are deterministic, so the installed file is pinned by SHA-256 like any other.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

from facecache.models.convert.errors import ConversionError

KINDS = {
    "tflite": "TFLite FlatBuffer -> ONNX (facecache.models.convert.tflite)",
    "tf-graphdef": "frozen TensorFlow GraphDef -> ONNX (facecache.models.convert.tf_graph)",
}


@dataclass(frozen=True)
class Conversion:
    kind: str  # a key of KINDS
    options: Mapping[str, object] = field(default_factory=dict, hash=False)  # a read-only view

    def __post_init__(self):
        if self.kind not in KINDS:
            raise ValueError(f"unknown conversion {self.kind!r}; known: {', '.join(KINDS)}")
        object.__setattr__(self, "options", MappingProxyType(dict(self.options)))

    def apply(self, data: bytes) -> bytes:
        if self.kind == "tflite":
            from facecache.models.convert.tflite import tflite_to_onnx
            return tflite_to_onnx(data, **self.options)
        from facecache.models.convert.tf_graph import graphdef_to_onnx
        return graphdef_to_onnx(data, **self.options)

    def describe(self) -> str:
        return KINDS[self.kind]


__all__ = ["Conversion", "ConversionError", "KINDS"]
