"""Which media frames of a file are analysed, answered from the cache without decoding.

A frame counts as analysed when the cache maps its media frame index to a record with every stage
the analyzer gives a swap (a frame only detected, before the frames tracking needed it for, is not);
the file's identity is remembered by path, size, mtime and inode, so an unchanged file is not hashed
again.
"""

from __future__ import annotations

from pathlib import Path

from facecache.analysis.analyzer import FaceAnalyzer, segments
from facecache.media.identity import media_identity, stream_tags
from facecache.media.reader import decoder_id_for


def analysed_frames(analyzer: FaceAnalyzer, path: str | Path, frames: range, deinterlace: bool = False) -> list[int]:
    """The indices in `frames` whose analysis records are in the cache (for this analyzer's models, and the
    picture `deinterlace` says: a strip's Deinterlace option)."""
    media_id = media_identity(path, analyzer.cache)
    decoder_id = decoder_id_for(Path(path), analyzer.picture_rules, lambda: stream_tags(path, analyzer.cache),
                                deinterlace)
    needed = analyzer.stages(embeddings=False)
    found: list[int] = []
    for segment, wanted in segments(frames):
        group = analyzer.open_segment(media_id, decoder_id, segment)
        found.extend(i for i in wanted if _complete(group, i, needed))
    return found


def _complete(group, index: int, needed) -> bool:
    fingerprint = group.fingerprint_at(index)
    record = group.content.records.get(fingerprint) if fingerprint is not None else None
    return record is not None and record.has(needed)
