import numpy as np
import pytest

from facecache.swap.result import SwapResult, SwapResultError

MATRIX = np.array([[0.5, 0.0, -10.0], [0.0, 0.5, -20.0]])


def test_result_holds_private_read_only_copies():
    crop = np.full((64, 64, 3), 9, dtype=np.uint8)
    mask = np.full((64, 64), 0.5, dtype=np.float64)
    result = SwapResult(crop, MATRIX, mask)
    crop[:] = 0
    assert result.crop[0, 0, 0] == 9 and result.size == 64
    assert result.matrix.dtype == np.float32 and result.mask.dtype == np.float32
    assert np.allclose(result.matrix, MATRIX)
    for array in (result.crop, result.matrix, result.mask):
        with pytest.raises(ValueError):
            array[0, 0] = 1


def test_round_trip_through_plain_arrays():
    result = SwapResult(np.zeros((8, 8, 3), np.uint8), MATRIX, np.ones((8, 8), np.float32))
    again = SwapResult.from_arrays({k: np.array(v) for k, v in result.as_arrays().items()})
    assert np.array_equal(again.crop, result.crop) and np.array_equal(again.matrix, result.matrix)
    assert np.array_equal(again.mask, result.mask)
    no_mask = SwapResult(np.zeros((8, 8, 3), np.uint8), MATRIX)
    assert set(no_mask.as_arrays()) == {"crop", "matrix"} and SwapResult.from_arrays(no_mask.as_arrays()).mask is None
    with pytest.raises(SwapResultError, match="lacks the array"):
        SwapResult.from_arrays({"crop": result.crop})


@pytest.mark.parametrize("crop, matrix, mask, message", [
    (np.zeros((8, 9, 3), np.uint8), MATRIX, None, "square BGR uint8"),
    (np.zeros((8, 8, 3), np.float32), MATRIX, None, "square BGR uint8"),
    (np.zeros((8, 8), np.uint8), MATRIX, None, "square BGR uint8"),
    (np.zeros((8, 8, 3), np.uint8), np.zeros((3, 3)), None, r"\(2, 3\) affine"),
    (np.zeros((8, 8, 3), np.uint8), np.zeros((2, 3)), None, "singular"),
    (np.zeros((8, 8, 3), np.uint8), MATRIX, np.zeros((4, 4), np.float32), "like its crop"),
    (np.zeros((8, 8, 3), np.uint8), MATRIX, np.full((8, 8), 1.5, np.float32), "0..1"),
    (np.zeros((8, 8, 3), np.uint8), MATRIX, np.full((8, 8), np.nan, np.float32), "0..1"),
])
def test_malformed_results_are_refused_with_a_hint(crop, matrix, mask, message):
    with pytest.raises(SwapResultError, match=message):
        SwapResult(crop, matrix, mask)
