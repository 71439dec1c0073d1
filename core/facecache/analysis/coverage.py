"""Which media frames of a file are analysed, answered from the cache without decoding.

A frame counts as analysed when the cache maps its media frame index to a record (the file's
identity is remembered by path, size, mtime and inode, so an unchanged file is not hashed again).
"""

from __future__ import annotations

from pathlib import Path

from facecache.analysis.analyzer import FaceAnalyzer, segments
from facecache.media.identity import media_identity
from facecache.media.reader import decoder_id_for


def analysed_frames(analyzer: FaceAnalyzer, path: str | Path, frames: range) -> list[int]:
    """The indices in `frames` whose analysis records are in the cache (for this analyzer's models)."""
    media_id = media_identity(path, analyzer.cache)
    decoder_id = decoder_id_for(Path(path), analyzer.picture_rules)
    found: list[int] = []
    for segment, wanted in segments(frames):
        group = analyzer.open_segment(media_id, decoder_id, segment)
        found.extend(i for i in wanted if group.fingerprint_at(i) is not None)
    return found
