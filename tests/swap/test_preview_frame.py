"""The "sequencer" form's preview picture: the frame with the overlay's patches laid over it, opaque."""

import cv2
import numpy as np
import pytest

from facecache import output_layout
from facecache.swap import jpeg_bands, preview_frame
from facecache.swap.preview_frame import Preview


def test_patches_are_laid_over_the_frame_as_alpha_over_shows_them():
    rng = np.random.default_rng(7)
    frame = rng.integers(0, 256, (40, 60, 3), dtype=np.uint8)
    before = frame.copy()
    colour = np.full((10, 20, 3), (200, 40, 10), np.uint8)
    alpha = np.zeros((10, 20, 1), np.uint8)
    alpha[:, :5], alpha[:, 5:10], alpha[:, 10:] = 0, 255, 128
    patch = np.concatenate([colour, alpha], axis=2)
    picture = preview_frame.composited(frame, [(30, 12, patch)])
    assert np.array_equal(frame, before)  # the frame is left as it is
    outside = np.ones((40, 60), bool)
    outside[12:22, 35:50] = False
    assert np.array_equal(picture[outside], frame[outside])  # transparent and outside: the frame
    assert np.array_equal(picture[12:22, 35:40], np.broadcast_to(colour[:, :5], (10, 5, 3)))  # opaque: the face
    expected = np.rint(frame[12:22, 40:50] + (colour[:, 10:].astype(np.float32) - frame[12:22, 40:50]) * (128 / 255))
    assert np.abs(picture[12:22, 40:50].astype(int) - expected.astype(int)).max() <= 1


def test_every_colour_over_every_colour_at_every_alpha_is_rounded_as_alpha_over_computes_it():
    """All 256 x 256 x 256 cases: region + (colour - region) x alpha / 255, rounded to the nearest (the
    integer form of Blender's straight alpha-over, where no case is a tie). A row a value of alpha, a column a
    pair of values, each channel a third of the regions."""
    values = np.arange(256, dtype=np.int32)
    region = np.arange(86, dtype=np.int32).reshape(-1, 1) + np.array([0, 86, 172], np.int32)  # (86, 3): 0-257
    region = np.minimum(region, 255)
    pairs_region = np.repeat(region, 256, axis=0)  # (86 x 256, 3): every region value against...
    pairs_colour = np.tile(values, 86)  # ...every colour
    frame = np.broadcast_to(pairs_region.astype(np.uint8), (256, *pairs_region.shape))
    patch = np.empty((256, len(pairs_colour), 4), np.uint8)
    patch[..., :3] = pairs_colour.reshape(1, -1, 1)
    patch[..., 3] = values.reshape(-1, 1)
    picture = preview_frame.composited(np.ascontiguousarray(frame), [(0, 0, patch)])
    alpha = values.reshape(-1, 1, 1)
    exact = (2 * (pairs_region * (255 - alpha) + pairs_colour.reshape(1, -1, 1) * alpha) + 255) // 510
    assert np.array_equal(picture, exact)


def test_the_preview_is_an_opaque_jpeg_close_to_the_picture():
    picture = np.zeros((64, 96, 3), np.uint8)
    picture[:, :48] = (30, 120, 220)
    decoded = cv2.imdecode(np.frombuffer(Preview(picture, [], "a frame").jpeg(100), np.uint8), cv2.IMREAD_UNCHANGED)
    assert decoded.shape == picture.shape  # three channels: no alpha, so the strip above hides the movie
    assert np.abs(decoded.astype(int) - picture).mean() < 2


def textured(height: int, width: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    small = rng.integers(0, 256, (height // 8 + 2, width // 8 + 2, 3), dtype=np.uint8)
    return cv2.resize(small, (width, height), interpolation=cv2.INTER_CUBIC)


def face(height: int, width: int, seed: int) -> np.ndarray:
    """A patch: opaque inside, fading to clear at its edges."""
    alpha = np.zeros((height, width), np.uint8)
    alpha[4:-4, 4:-4] = 255
    alpha = cv2.GaussianBlur(alpha, (5, 5), 0)
    return np.dstack([textured(height, width, seed), alpha])


@pytest.mark.parametrize("size", [100, 50])
def test_a_frame_made_again_encodes_only_the_bands_its_old_and_new_faces_cover(size):
    """The file there now is of the same picture (frame 7 of a movie): its bands that neither its faces (rows
    120-170) nor the new ones (rows 45-95 and 200-230) cover are kept, the others are encoded from this frame. An
    old file of the same frame gives exactly the whole encoding."""
    frame = textured(256, 192, 1)
    old_faces, new_faces = [(30, 120, face(50, 60, 2))], [(32, 45, face(50, 60, 3)), (100, 200, face(30, 40, 4))]
    elsewhere = Preview(textured(256, 192, 9), old_faces, "movie|rules|7").jpeg(size)  # its bands are told apart
    made = jpeg_bands.parse(Preview(frame, new_faces, "movie|rules|7").jpeg(size, elsewhere))
    whole = jpeg_bands.parse(Preview(frame, new_faces, "movie|rules|7").jpeg(size))
    old = jpeg_bands.parse(elsewhere)
    band_rows = 16 * 100 // size  # of the frame
    encoded = {band for top, bottom in [(120, 170), (45, 95), (200, 230)]
               for band in range(top // band_rows, -(-bottom // band_rows))}
    assert made.note == whole.note
    for band in range(len(made.bands)):
        assert made.bands[band] == (whole if band in encoded else old).bands[band], band
    same_frame = Preview(frame, old_faces, "movie|rules|7").jpeg(size)
    assert Preview(frame, new_faces, "movie|rules|7").jpeg(size, same_frame) == \
        Preview(frame, new_faces, "movie|rules|7").jpeg(size)


def test_a_preview_is_encoded_whole_where_the_file_there_is_not_this_pictures_own():
    frame, faces = textured(256, 192, 1), [(32, 45, face(50, 60, 3))]
    whole = Preview(frame, faces, "movie|rules|7").jpeg(100)
    old_frame = textured(256, 192, 9)
    others = [Preview(old_frame, faces, "movie|rules|8").jpeg(100),  # another frame
              Preview(old_frame, faces, "movie|other rules|7").jpeg(100),  # another decoder's picture
              Preview(old_frame[:240], faces, "movie|rules|7").jpeg(100),  # another size
              cv2.imencode(".jpg", old_frame)[1].tobytes(),  # an older version's, without bands
              b"\xff\xd8 cut short"]
    damaged = bytearray(Preview(old_frame, faces, "movie|rules|7").jpeg(100))
    rows_at = damaged.index(b"movie|rules|7 ") + 14
    assert damaged[rows_at:rows_at + 5] == b"45-95"
    damaged[rows_at:rows_at + 5] = b"x-y,z"  # the faces' rows unreadable
    past_the_end = jpeg_bands.encode(old_frame, preview_frame.QUALITY, b"facecache preview 1 movie|rules|7 45-999")
    for old in [*others, bytes(damaged), past_the_end]:
        assert Preview(frame, faces, "movie|rules|7").jpeg(100, old) == whole
    # at 50 %, sides that do not halve exactly are averaged by weights the whole picture sets: encoded whole
    odd = textured(255, 192, 1)
    old = Preview(textured(255, 192, 9), faces, "movie|rules|7").jpeg(50)
    assert Preview(odd, faces, "movie|rules|7").jpeg(50, old) == Preview(odd, faces, "movie|rules|7").jpeg(50)


def test_a_preview_of_no_named_picture_carries_no_note_and_is_never_spliced():
    frame, faces = textured(256, 192, 1), [(32, 45, face(50, 60, 3))]
    unnamed = Preview(frame, faces, None).jpeg(100)
    assert b"facecache preview" not in unnamed and jpeg_bands.parse(unnamed).note == b""
    same_frame = Preview(frame, [(32, 120, face(50, 60, 3))], "movie|rules|7").jpeg(100)
    assert Preview(frame, faces, None).jpeg(100, same_frame) == unnamed
    assert cv2.imdecode(np.frombuffer(unnamed, np.uint8), cv2.IMREAD_COLOR).shape == frame.shape


def test_composited_rows_are_those_rows_of_the_whole_composite():
    frame, faces = textured(256, 192, 1), [(32, 45, face(50, 60, 3)), (100, 200, face(30, 40, 4))]
    whole = preview_frame.composited(frame, faces)
    for rows in [(0, 256), (48, 80), (90, 210), (220, 256)]:
        assert np.array_equal(preview_frame.composited(frame, faces, rows), whole[rows[0]:rows[1]])


def test_the_preview_sits_where_blender_looks_for_the_strip_elements_proxy(tmp_path):
    overlay = tmp_path / "clip" / output_layout.frame_name(12)
    assert output_layout.preview_path(overlay) == str(tmp_path / "clip" / "BL_proxy" / "images" / "100"
                                                      / "000012.png_proxy.jpg")
    assert output_layout.preview_path(overlay, 50) == str(tmp_path / "clip" / "BL_proxy" / "images" / "50"
                                                          / "000012.png_proxy.jpg")


def test_a_smaller_proxy_size_gets_the_picture_at_blenders_proxy_size_averaged():
    """Blender makes a strip's proxy at size P (percent) P x each side / 100, rounded down (proxy.cc); the
    picture there is the whole picture averaged, so a fine pattern turns grey instead of aliasing."""
    picture = np.zeros((101, 203, 3), np.uint8)
    picture[:, ::2] = 255  # one-pixel stripes
    assert preview_frame.at_size(picture, 100) is picture
    half = preview_frame.at_size(picture, 50)
    assert half.shape == (50, 101, 3)
    assert np.abs(half[:, 1:-1].astype(int) - 128).max() <= 2


def test_one_preview_makes_every_size_each_row_composited_once():
    """Both sizes from one Preview (as a job writes them), spliced or whole, are what separate ones make."""
    frame, faces = textured(256, 192, 1), [(32, 45, face(50, 60, 3)), (100, 200, face(30, 40, 4))]
    old_faces = [(30, 120, face(50, 60, 2))]
    olds = {size: Preview(frame, old_faces, "movie|rules|7").jpeg(size) for size in (100, 50)}
    for order in ((100, 50), (50, 100)):
        for old in (olds, {100: None, 50: None}, {100: olds[100], 50: None}):
            both = Preview(frame, faces, "movie|rules|7")
            for size in order:
                assert both.jpeg(size, old[size]) == Preview(frame, faces, "movie|rules|7").jpeg(size), (order, size)
