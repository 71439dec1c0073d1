import os

import pytest

from facecache.errors import FaceCacheError
from facecache.media.identity import media_identity
from facecache.store.cache import FaceCache


def test_identity_is_remembered_until_the_file_changes(tmp_path, monkeypatch):
    cache = FaceCache(tmp_path / "c")
    clip = tmp_path / "clip.mp4"
    clip.write_bytes(b"frames" * 1000)
    first = media_identity(clip, cache)

    calls = []
    import facecache.media.identity as identity
    real = identity.file_digest
    monkeypatch.setattr(identity, "file_digest", lambda p: calls.append(p) or real(p))
    assert media_identity(clip, FaceCache(tmp_path / "c")) == first
    assert calls == []  # answered from the memo, the file was not read

    clip.write_bytes(b"other!" * 1000)  # same size, new content and mtime
    os.utime(clip, ns=(1, 1))
    second = media_identity(clip, cache)
    assert second != first and len(calls) == 1


def test_identical_copies_share_an_identity(tmp_path):
    cache = FaceCache(tmp_path / "c")
    (tmp_path / "a.mp4").write_bytes(b"x" * 100)
    (tmp_path / "b.mp4").write_bytes(b"x" * 100)
    assert media_identity(tmp_path / "a.mp4", cache) == media_identity(tmp_path / "b.mp4", cache)


def test_missing_file_is_a_clear_error(tmp_path):
    with pytest.raises(FaceCacheError, match="check the path"):
        media_identity(tmp_path / "nope.mp4", FaceCache(tmp_path / "c"))
    (tmp_path / "empty").mkdir()
    with pytest.raises(FaceCacheError, match="holds no images"):
        media_identity(tmp_path / "empty", FaceCache(tmp_path / "c"))


def test_image_sequence_identity_follows_its_frames(tmp_path):
    cache = FaceCache(tmp_path / "c")
    folder = tmp_path / "shot"
    folder.mkdir()
    for i in range(3):
        (folder / f"f{i}.png").write_bytes(bytes([i]) * 100)
    first = media_identity(folder, cache)
    assert media_identity(folder, cache) == first
    (folder / "f1.png").write_bytes(b"edited" * 10)
    assert media_identity(folder, cache) != first
