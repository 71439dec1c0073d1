"""The converters' error."""

from facecache.errors import FaceCacheError


class ConversionError(FaceCacheError):
    """A model file cannot be converted to ONNX (an unsupported operator, a damaged file)."""


# The most elements one tensor of a converted model may hold: FaceNet's largest holds under a million,
# the face mesh's under 100,000. A shape beyond it is a damaged file; nothing is allocated for it.
MAX_TENSOR_ELEMENTS = 1 << 24

# What reading damaged bytes can raise besides the converters' own checks (an index, a shape or a
# type that a hostile file made wrong): every entry point turns them into a ConversionError.
DAMAGED_INPUT = (IndexError, KeyError, TypeError, ValueError, AttributeError, OverflowError, ZeroDivisionError,
                 RecursionError)


def element_count(shape, what: str) -> int:
    """The elements of a tensor of `shape`: every dimension 0 or more, the product at most
    MAX_TENSOR_ELEMENTS (in Python integers: no overflow), else ConversionError."""
    count = 1
    for dim in shape:
        if not isinstance(dim, int) or dim < 0:
            raise ConversionError(f"{what} has shape {list(shape)[:8]}: a dimension is negative or not a number")
        count *= dim
        if count > MAX_TENSOR_ELEMENTS:
            raise ConversionError(f"{what} has shape {list(shape)[:8]}, more than {MAX_TENSOR_ELEMENTS} elements: "
                                  "the file is damaged")
    return count
