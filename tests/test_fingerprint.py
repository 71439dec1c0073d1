import numpy as np

from facecache.fingerprint import file_digest, frame_fingerprint, is_digest


def test_fingerprint_is_128_bit_hex_and_content_keyed():
    frame = np.zeros((1080, 1920, 3), dtype=np.uint8)
    fp = frame_fingerprint(frame)
    assert is_digest(fp) and len(fp) * 4 == 128
    changed = frame.copy()
    changed[500, 900, 1] = 1
    assert frame_fingerprint(changed) != fp
    assert frame_fingerprint(frame.copy()) == fp


def test_fingerprint_includes_shape_and_dtype():
    data = np.zeros(12, dtype=np.uint8)
    assert frame_fingerprint(data.reshape(3, 4)) != frame_fingerprint(data.reshape(4, 3))
    assert frame_fingerprint(np.zeros(3, np.uint16)) != frame_fingerprint(np.zeros(6, np.uint8))


def test_non_contiguous_views_hash_like_their_copy():
    frame = np.arange(60, dtype=np.uint8).reshape(3, 4, 5)
    view = frame[:, ::2]
    assert frame_fingerprint(view) == frame_fingerprint(view.copy())


def test_file_digest(tmp_path):
    path = tmp_path / "x.bin"
    path.write_bytes(b"a" * 10_000_000)
    assert is_digest(file_digest(path))
    assert not is_digest("../" + "a" * 29) and not is_digest("A" * 32)
