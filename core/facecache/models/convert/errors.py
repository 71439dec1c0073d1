"""The converters' error."""

from facecache.errors import FaceCacheError


class ConversionError(FaceCacheError):
    """A model file cannot be converted to ONNX (an unsupported operator, a damaged file)."""
