"""Band JPEGs (`swap.jpeg_bands`): a band re-encoded from a strip of its rows is the whole encoding's band, to
the byte, so a preview whose faces changed is made by encoding their bands alone."""

import cv2
import numpy as np
import pytest

from facecache.swap import jpeg_bands


def picture(height: int, width: int, seed: int) -> np.ndarray:
    """Smooth colour with detail, as a frame has (noise alone would hide a misplaced band less)."""
    rng = np.random.default_rng(seed)
    small = rng.integers(0, 256, (height // 8 + 2, width // 8 + 2, 3), dtype=np.uint8)
    smooth = cv2.resize(small, (width, height), interpolation=cv2.INTER_CUBIC)
    return cv2.add(smooth, rng.integers(0, 12, (height, width, 3), dtype=np.uint8))


@pytest.mark.parametrize("height, width", [(96, 64), (70, 50), (1, 17)])
def test_a_band_jpeg_holds_one_band_of_16_rows_each_its_note_and_the_picture(height, width):
    image = picture(height, width, 1)
    data = jpeg_bands.encode(image, 90, b"what it is")
    parsed = jpeg_bands.parse(data)
    assert parsed.note == b"what it is" and parsed.height == height
    assert len(parsed.bands) == -(-height // 16)
    decoded = cv2.imdecode(np.frombuffer(data, np.uint8), cv2.IMREAD_COLOR)
    # the restart markers change no pixel: the picture is the plain JPEG's of that quality
    plain = cv2.imencode(".jpg", image, [cv2.IMWRITE_JPEG_QUALITY, 90])[1]
    assert np.array_equal(decoded, cv2.imdecode(plain, cv2.IMREAD_COLOR))
    assert decoded.shape == image.shape and np.abs(decoded.astype(int) - image).mean() < 6
    assert jpeg_bands.assembled(parsed, parsed.bands, b"what it is") == data


@pytest.mark.parametrize("height, width", [(96, 64), (70, 50)])
def test_bands_encoded_from_strips_are_the_whole_encodings_bytes(height, width):
    """Rows 20-45 changed: their bands (16-47), encoded from that strip alone and put in the old file, give
    the file the whole new picture encodes to, byte for byte; the last band, cut short, as well."""
    old_picture, new_picture = picture(height, width, 1), picture(height, width, 1)
    new_picture[20:45] = picture(25, width, 2)
    new_picture[64:] = 255 - new_picture[64:]
    old = jpeg_bands.parse(jpeg_bands.encode(old_picture, 90, b"old"))
    strips = [(1, jpeg_bands.encode(new_picture[16:48], 90, b"")),
              (4, jpeg_bands.encode(new_picture[64:], 90, b""))]
    assert jpeg_bands.spliced(old, strips, b"new") == jpeg_bands.encode(new_picture, 90, b"new")
    # what was not replaced is the old file's
    kept = jpeg_bands.parse(jpeg_bands.spliced(old, strips[:1], b"new"))
    assert kept.bands[0] == old.bands[0] and kept.bands[3:] == old.bands[3:]


def test_a_strip_encoded_otherwise_is_not_spliced():
    image = picture(64, 48, 1)
    old = jpeg_bands.parse(jpeg_bands.encode(image, 90, b""))
    assert jpeg_bands.spliced(old, [(1, jpeg_bands.encode(image[16:32], 80, b""))], b"") is None  # quality
    assert jpeg_bands.spliced(old, [(1, jpeg_bands.encode(image[16:32, :32], 90, b""))], b"") is None  # width
    assert jpeg_bands.spliced(old, [(3, jpeg_bands.encode(image[16:48], 90, b""))], b"") is None  # past the end


def test_what_is_not_a_whole_band_jpeg_is_not_taken_apart():
    image = picture(64, 48, 1)
    data = jpeg_bands.encode(image, 90, b"note")
    plain = cv2.imencode(".jpg", image)[1].tobytes()  # no restart markers
    every_two_rows = cv2.imencode(".jpg", image, [cv2.IMWRITE_JPEG_RST_INTERVAL, 6])[1].tobytes()
    full_chroma = cv2.imencode(".jpg", image, [cv2.IMWRITE_JPEG_RST_INTERVAL, 3, cv2.IMWRITE_JPEG_SAMPLING_FACTOR,
                                               cv2.IMWRITE_JPEG_SAMPLING_FACTOR_444])[1].tobytes()
    progressive = cv2.imencode(".jpg", image, [cv2.IMWRITE_JPEG_RST_INTERVAL, 3,
                                               cv2.IMWRITE_JPEG_PROGRESSIVE, 1])[1].tobytes()
    for broken in (b"", b"not a jpeg", data[:-1], data[:len(data) // 2] + b"\xff\xd9", data[:40] + data[60:],
                   plain, every_two_rows, full_chroma, progressive):
        assert jpeg_bands.parse(broken) is None
    assert jpeg_bands.parse(data) is not None
