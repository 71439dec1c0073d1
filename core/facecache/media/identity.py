"""Content identity of a media file, computed once per file version.

The identity is the XXH3-128 digest of the file's bytes. It is remembered in
the cache under (absolute path, size, mtime_ns, inode), so while a file is
unchanged the question "which of its frames are analysed" is answered from the
cache without hashing or decoding it again. Any change to the file changes that
key; the content is hashed anew and an edited file never reuses the old
frame mapping (an untouched copy with equal bytes rightly shares it). A video's header tags (colour tags
and pixel format), which some picture rules key its frames by, are remembered the same way (`stream_tags`).
"""

from __future__ import annotations

import os
from pathlib import Path

from facecache.errors import FaceCacheError
from facecache.fingerprint import bytes_digest, file_digest, is_digest
from facecache.media import movie
from facecache.media.picture_rules import StreamTags
from facecache.media.reader import sequence_files
from facecache.store.cache import FaceCache


def media_identity(path: str | os.PathLike, cache: FaceCache) -> str:
    """The content digest of the file at `path` (32 hex digits); for an image
    sequence folder, the digest of its frames' names and identities in order."""
    path = Path(path).absolute()
    if path.is_dir():
        files = sequence_files(path)
        if not files:
            raise FaceCacheError(f"the folder {path} holds no images: pass a video, an image, or a folder of frames")
        parts = [f"{f.name}:{media_identity(f, cache)}" for f in files]
        return bytes_digest("\n".join(["sequence", *parts]).encode())
    memo_key, size = _file_version(path)
    memo = cache.recall("media", memo_key)
    if memo is not None and is_digest(memo.get("content")) and memo.get("size") == size:
        return memo["content"]
    content = file_digest(path)
    cache.remember("media", memo_key, {"content": content, "size": size, "path": str(path)})
    return content


def stream_tags(path: str | os.PathLike, cache: FaceCache) -> StreamTags:
    """A video's colour tags, pixel format, height and chroma steps, read from its stream's header once per file
    version: opening a movie can take a tenth of a second (FFmpeg probes its first frames), too much for each
    coverage question."""
    version, _ = _file_version(Path(path).absolute())
    memo_key = bytes_digest(f"{version}|stream tags".encode())  # beside the identity's memo, not over it
    memo = cache.recall("media", memo_key)
    tags = memo.get("tags") if memo is not None else None
    # (a memo of four, from before the chroma's steps were kept, is read again)
    if (isinstance(tags, list) and len(tags) == 5 and isinstance(tags[2], str) and isinstance(tags[4], bool)
            and all(isinstance(tags[i], int) for i in (0, 1, 3))):
        return StreamTags(*tags)
    read = movie.stream_tags(Path(path))
    cache.remember("media", memo_key, {"tags": [read.primaries, read.transfer, read.pixel_format, read.height,
                                                read.uneven_chroma]})
    return read


def _file_version(path: Path) -> tuple[str, int]:
    """(the memo key of this version of the file at absolute `path`, its size)."""
    try:
        info = path.stat()
    except OSError as exc:
        raise FaceCacheError(f"cannot read media file {path}: {exc.strerror}; check the path") from None
    if not path.is_file():
        raise FaceCacheError(f"{path} is not a file: pass a video or image file")
    return bytes_digest(f"{path}|{info.st_size}|{info.st_mtime_ns}|{info.st_ino}".encode()), info.st_size
