"""The sparse overlay PNG encoder decodes to exactly the full overlay."""

import struct
import zlib

import cv2
import numpy as np
import pytest

from facecache.swap.sparse_png import SparseOverlayEncoder


def decode(data: bytes) -> np.ndarray:
    return cv2.imdecode(np.frombuffer(data, np.uint8), cv2.IMREAD_UNCHANGED)


@pytest.mark.parametrize("width, height, x, y, ph, pw", [
    (1920, 1080, 800, 300, 300, 280),  # a face in the middle
    (1920, 1080, 0, 0, 300, 280),      # touching the top-left corner
    (640, 480, 360, 180, 300, 280),    # touching the bottom-right corner
    (1, 1, 0, 0, 1, 1),                # the whole picture
    (33, 17, 5, 16, 1, 20),            # the last row only
])
def test_decodes_to_the_full_overlay(width, height, x, y, ph, pw):
    patch = np.random.default_rng(width).integers(0, 256, (ph, pw, 4), dtype=np.uint8)
    encoder = SparseOverlayEncoder()
    for _ in range(2):  # the second time the empty-row runs come from the encoder's cache
        image = decode(encoder.encode(width, height, [(x, y, patch)]))
        full = np.zeros((height, width, 4), np.uint8)
        full[y:y + ph, x:x + pw] = patch
        assert np.array_equal(image, full)  # cv2 decodes to BGRA, as the patch is given


def test_no_face_is_a_transparent_picture_and_bad_patches_are_refused():
    image = decode(SparseOverlayEncoder().encode(64, 32, []))
    assert image.shape == (32, 64, 4) and image.max() == 0
    with pytest.raises(ValueError, match="outside the frame"):
        SparseOverlayEncoder().encode(64, 32, [(60, 0, np.zeros((4, 8, 4), np.uint8))])


def test_several_patches_side_by_side_and_stacked():
    rng = np.random.default_rng(7)
    places = [(10, 5, 30, 40), (200, 20, 50, 30), (100, 100, 20, 20), (300, 90, 60, 25), (0, 190, 10, 400)]
    patches = [(x, y, rng.integers(0, 256, (h, w, 4), dtype=np.uint8)) for x, y, h, w in places]
    full = np.zeros((200, 400, 4), np.uint8)
    for x, y, patch in patches:
        full[y:y + patch.shape[0], x:x + patch.shape[1]] = patch
    encoder = SparseOverlayEncoder()
    assert np.array_equal(decode(encoder.encode(400, 200, patches)), full)
    assert np.array_equal(decode(encoder.encode(400, 200, patches[::-1])), full)  # any order


def test_a_moving_face_does_not_compress_the_empty_rows_again(monkeypatch):
    from facecache.swap import sparse_png

    compressed = []
    original = sparse_png._deflate
    monkeypatch.setattr(sparse_png, "_deflate", lambda data, final: (compressed.append(len(data)), original(data, final))[1])
    width, height, patch = 64, 200, np.full((20, 10, 4), 200, np.uint8)
    encoder = SparseOverlayEncoder()
    for y in range(0, 180):  # a face moving down one row a frame
        image = decode(encoder.encode(width, height, [(5, y, patch)]))
        assert image[y, 5, 3] == 200 and image[..., 3].sum() == 200 * 20 * 10
    row_bytes = 1 + 4 * width
    band_bytes = 180 * 20 * row_bytes
    # Empty runs are made of power-of-two row counts compressed once: fewer than 2 x 256 rows in all.
    assert sum(compressed) - band_bytes < 2 * 256 * row_bytes


def test_4k_bands_are_the_same_with_or_without_a_thread_pool():
    """A 4K frame's bands (one of them the whole width, at the top edge) are built on a pool's
    threads, and the bytes stay the same."""
    from concurrent.futures import ThreadPoolExecutor

    rng = np.random.default_rng(4)
    width, height = 3840, 2160
    patches = [(1500, 500, rng.integers(0, 256, (700, 900, 4), dtype=np.uint8)),
               (100, 1400, rng.integers(0, 256, (30, 60, 4), dtype=np.uint8)),
               (0, 0, rng.integers(0, 256, (20, width, 4), dtype=np.uint8))]
    alone = SparseOverlayEncoder().encode(width, height, patches)
    with ThreadPoolExecutor(2) as pool:
        pooled = SparseOverlayEncoder(pool=pool).encode(width, height, patches)
    assert pooled == alone
    full = np.zeros((height, width, 4), np.uint8)
    for x, y, patch in patches:
        full[y:y + patch.shape[0], x:x + patch.shape[1]] = patch
    assert np.array_equal(decode(alone), full)  # OpenCV checks the stream's Adler-32 as it inflates


def test_adler32_of_pieces_combines_into_the_whole():
    import zlib

    from facecache.swap.sparse_png import _adler_combine

    data = np.random.default_rng(2).integers(0, 256, 300_000, dtype=np.uint8).tobytes()
    for cut in (0, 1, 5551, 65521, 200_000, len(data)):
        first, second = data[:cut], data[cut:]
        assert _adler_combine(zlib.adler32(first), zlib.adler32(second), len(second)) == zlib.adler32(data)


def test_one_encoder_shared_by_threads_gives_each_frame_its_own_bytes():
    """A job's writer threads share one encoder (its empty-row runs are made once for them all)."""
    from concurrent.futures import ThreadPoolExecutor

    rng = np.random.default_rng(9)
    frames = [[(int(x), int(y), rng.integers(0, 256, (40, 30, 4), dtype=np.uint8))]
              for x, y in zip(rng.integers(0, 600, 24), rng.integers(0, 400, 24))]
    expected = [SparseOverlayEncoder().encode(640, 480, patches) for patches in frames]
    shared = SparseOverlayEncoder()
    with ThreadPoolExecutor(4) as pool:
        assert list(pool.map(lambda patches: shared.encode(640, 480, patches), frames)) == expected


def test_face_bytes_are_stored_and_the_zeros_beside_them_copied():
    """A face's non-zero bytes go into the file as they are (Blender inflates a stored block with one
    copy) and its transparent surroundings cost a few bytes a row; a pixel with colour under alpha 0
    at the edge of a face is kept."""
    rng = np.random.default_rng(7)
    patch = np.zeros((120, 100, 4), np.uint8)
    patch[10:110, 10:90] = rng.integers(1, 256, (100, 80, 4), dtype=np.uint8)
    patch[50, 95] = (9, 8, 7, 0)
    data = SparseOverlayEncoder().encode(1920, 1080, [(700, 400, patch)])
    full = np.zeros((1080, 1920, 4), np.uint8)
    full[400:520, 700:800] = patch
    assert np.array_equal(decode(data), full)
    assert 100 * 80 * 4 < len(data) < 100 * 80 * 4 + 120 * 40 + 40_000  # the face, headers, the empty rows


@pytest.mark.parametrize("distance", [1, 257, 7681, 32768])
def test_a_zero_run_inflates_to_its_zeros_copied_from_a_row_back(distance):
    """Each zero run (`deflate_blocks._zero_block`: matches of 258 bytes made at once, then the rest, a rest
    under 3 bytes taken from the last match) inflates, `distance` zeros on, to exactly `count` zeros."""
    from facecache.swap.deflate_blocks import _zero_block

    for count in [8, 9, 257, 258, 259, 260, 261, 516, 517, 518, 7681, 258 * 40 + 1, 258 * 40 + 2]:
        inflate = zlib.decompressobj(-15)
        window = b"\x01" * 64 + bytes(distance)  # a copy from further back would bring ones
        stored = b"\x00" + struct.pack("<HH", len(window), len(window) ^ 0xFFFF) + window
        # the window as a stored block, the run (ending on an open stored block's header: closed empty),
        # then an empty final stored block
        out = inflate.decompress(stored + _zero_block(count, distance) + b"\x00\x00\xff\xff" +
                                 b"\x01\x00\x00\xff\xff")
        assert out == window + bytes(count) and inflate.eof
