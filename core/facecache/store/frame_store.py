"""Frame records of one namespace, read and written a group at a time.

A group is one slice of a media file (SEGMENT_FRAMES consecutive frames) or one
still image. A codec turns a group's records into a pack and back (analysis
records by default; the swap stage has its own). Reading a group opens its pack(s) once; records are then looked up
by frame index or by fingerprint, and new records are collected and written as
one pack by `flush()`, which also folds the packs it read into the new one so a
group normally holds a single pack.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol

from facecache.fingerprint import bytes_digest
from facecache.store.cache import FaceCache
from facecache.store.namespace import Namespace
from facecache.store.records import ANALYSIS_CODEC, GroupRecords

SEGMENT_FRAMES = 64


def group_key(*parts: str | int) -> str:
    """A group's key from what identifies it, e.g. (media id, decoder id, segment)."""
    return bytes_digest("|".join(str(p) for p in parts).encode())


class RecordCodec(Protocol):
    def encode(self, group: GroupRecords) -> tuple[dict, dict, int]: ...
    def decode(self, meta: dict, arrays: dict) -> GroupRecords: ...
    def complete(self, record: Any, needed: Any) -> bool: ...
    def richer(self, a: Any, b: Any) -> bool: ...


@dataclass
class RunStats:
    """Per-run cache outcome of frame lookups."""

    hits: int = 0
    misses: int = 0
    partial_hits: int = 0

    def as_dict(self) -> dict:
        return {"hits": self.hits, "misses": self.misses, "partial_hits": self.partial_hits}


class FrameStore:
    def __init__(self, cache: FaceCache, namespace: Namespace, stats: RunStats | None = None,
                 codec: RecordCodec = ANALYSIS_CODEC):
        self.cache = cache
        self.namespace_key = cache.use_namespace(namespace)
        self.stats = stats if stats is not None else RunStats()
        self.codec = codec

    def open_group(self, key: str, fresh: bool = False) -> "FrameGroup":
        """The group's records (`fresh`: as the file server lists its packs now; see FaceCache.read_group)."""
        stored = self.cache.read_group(self.namespace_key, key,
                                       decode=lambda pack: self.codec.decode(pack.meta, pack.arrays), fresh=fresh)
        content = GroupRecords()
        for item in stored:
            merge(content, item.content, self.codec)
        # the records that came from remote packs (a local pack's record of the same frame may have won)
        from_remote = {fingerprint for item in stored if item.remote
                       for fingerprint, record in item.content.records.items()
                       if content.records[fingerprint] is record}
        return FrameGroup(self, key, content, [item.name for item in stored], from_remote)


class FrameGroup:
    """The records of one group, plus the ones added since it was opened."""

    def __init__(self, store: FrameStore, key: str, content: GroupRecords, pack_names: list[str],
                 from_remote: set[str] | None = None):
        self._store = store
        self.key = key
        self.content = content
        self._pack_names = pack_names
        self._from_remote = from_remote or set()  # fingerprints whose record the remote tier served
        self._dirty = False

    def fingerprint_at(self, frame_index: int) -> str | None:
        return self.content.index.get(frame_index)

    def lookup(self, fingerprint: str, needed: Any = None) -> Any:
        """The record for a frame (counted as hit, partial hit or miss); it may
        lack some of the needed stages, which the caller then computes."""
        record = self.content.records.get(fingerprint)
        stats = self._store.stats
        if record is None:
            stats.misses += 1
        elif self._store.codec.complete(record, needed):
            stats.hits += 1
            tier_hits = self._store.cache.hits
            if fingerprint in self._from_remote:
                tier_hits.remote += 1
            else:
                tier_hits.local += 1
        else:
            stats.partial_hits += 1
        return record

    def put(self, record: Any, frame_index: int | None = None) -> None:
        self.content.records[record.fingerprint] = record
        self._from_remote.discard(record.fingerprint)  # computed here now
        if frame_index is not None:
            self.content.index[frame_index] = record.fingerprint
        self._dirty = True

    def flush(self) -> None:
        """Write what was added as one pack that also holds everything read, then
        remove the packs it replaces (their content is now in the new one)."""
        if not self._dirty:
            return
        if not self._store.cache.storing:  # a read-only or full cache: the records live for this run only
            return
        meta, arrays, entries = self._store.codec.encode(self.content)
        name = self._store.cache.write_pack(self._store.namespace_key, self.key, meta, arrays, entries)
        if name is None:  # storing just stopped (see FaceCache.stop_storing): keep the packs read
            return
        self._store.cache.remove_packs(self._store.namespace_key, self.key,
                                       [n for n in self._pack_names if n != name])
        self._pack_names = [name]
        self._dirty = False


def merge(into: GroupRecords, other: GroupRecords, codec: RecordCodec = ANALYSIS_CODEC) -> None:
    """Fold another pack's records in, keeping the richer record of a frame."""
    for fingerprint, record in other.records.items():
        mine = into.records.get(fingerprint)
        if mine is None or codec.richer(record, mine):
            into.records[fingerprint] = record
    into.index.update(other.index)
