"""The hits each tier served, kept across runs (`facecache cache stats`).

A cache object counts the frame records it served complete (`FrameGroup.lookup`'s hits): from the cache
folder, or from packs the remote tier fetched in this run. At a job's end it writes its totals so far to
its own small file,

    <root>/hits/<host tag>-<pid>-<random>.msgpack      {"local": n, "remote": m}

rewritten whole by that object alone (a temp file renamed over it), so no two processes ever write one
file and nothing is lost when two jobs end at once. Reading sums every file. `cache clear` empties the
folder; a file that cannot be read counts nothing.

So that a farm's thousands of runs do not leave thousands of files, a prune (under its lease: one at a
time) folds the files untouched for FOLD_AFTER_SECONDS into one new file of their sum. A cache object that
writes again after its file was folded writes only what it served since (`OwnHitsFile`).
"""

from __future__ import annotations

import os
import secrets
import time
from dataclasses import dataclass, replace
from pathlib import Path

import msgpack

from facecache.errors import CorruptPack
from facecache.files import write_atomic
from facecache.processes import host_tag
from facecache.permissions import make_dir
from facecache.store.layout import HITS_FOLDER, MAX_RECORD_BYTES, CacheFolder, scanfiles

_SUFFIX = ".msgpack"
_TIERS = ("local", "remote")
FOLD_AFTER_SECONDS = 7 * 24 * 3600  # a file untouched for a week: its process has ended, or it starts afresh


def own_file_name() -> str:
    """The name of one cache object's file: no other process (on any machine sharing the folder) picks it."""
    return f"{host_tag()}-{os.getpid()}-{secrets.token_hex(4)}{_SUFFIX}"


@dataclass
class TierHits:
    """Frame records served from the cache folder (`local`) and from packs fetched from the remote tier."""

    local: int = 0
    remote: int = 0

    def as_dict(self) -> dict[str, int]:
        return {tier: getattr(self, tier) for tier in _TIERS}

    def any(self) -> bool:
        return any(getattr(self, tier) for tier in _TIERS)

    def add(self, other: "TierHits") -> None:
        for tier in _TIERS:
            setattr(self, tier, getattr(self, tier) + getattr(other, tier))

    def less(self, other: "TierHits") -> "TierHits":
        return TierHits(**{tier: getattr(self, tier) - getattr(other, tier) for tier in _TIERS})


class OwnHitsFile:
    """One cache object's file in hits/: its totals, less what a prune folded into another file meanwhile."""

    def __init__(self) -> None:
        self.name = own_file_name()
        self._written = TierHits()  # the totals last written
        self._folded = TierHits()  # the part of them that a prune folded away since

    def keep(self, cache: CacheFolder, hits: TierHits) -> None:
        """Write the totals (nothing when it served no hit, or cannot store)."""
        if not hits.any() or not cache.storing:
            return
        folder = cache.inside(HITS_FOLDER)
        if folder is None:
            return
        try:
            make_dir(folder, cache.perms)
            if self._written.any() and not (folder / self.name).exists():
                self._folded = self._written  # a prune folded the file: those are counted in its sum
            # not fsynced: a power cut may cost the last run's figures, never a pack
            write_atomic(folder / self.name, msgpack.packb(hits.less(self._folded).as_dict()),
                         cache.perms.file_mode, durable=False)
            self._written = replace(hits)
        except OSError:
            return  # figures only: a full or read-only cache still serves its hits


def total(cache: CacheFolder) -> TierHits:
    """Every run's hits, summed over the files in hits/."""
    summed = TierHits()
    for entry in _files(cache):
        summed.add(_read(cache, Path(entry.path)))
    return summed


def fold(cache: CacheFolder, now: float | None = None) -> int:
    """Fold the files untouched for FOLD_AFTER_SECONDS into one new file of their sum (a prune's, under its
    lease); returns how many were folded."""
    before = (time.time() if now is None else now) - FOLD_AFTER_SECONDS
    old = [Path(entry.path) for entry in _files(cache) if entry.stat(follow_symlinks=False).st_mtime < before]
    if len(old) < 2:
        return 0
    summed = TierHits()
    for path in old:
        summed.add(_read(cache, path))
    write_atomic(cache.root / HITS_FOLDER / own_file_name(), msgpack.packb(summed.as_dict()), cache.perms.file_mode,
                 durable=False)
    for path in old:
        path.unlink(missing_ok=True)
    return len(old)


def _files(cache: CacheFolder):
    return [entry for entry in scanfiles(cache.root / HITS_FOLDER)
            if entry.name.endswith(_SUFFIX) and not entry.name.startswith(".")]


def _read(cache: CacheFolder, path: Path) -> TierHits:
    """One file's counts; nothing from a file removed meanwhile or not ours."""
    try:
        counts = msgpack.unpackb(bytes(cache.read_file(path, MAX_RECORD_BYTES)))
    except (OSError, CorruptPack, ValueError, msgpack.ExtraData, msgpack.FormatError, msgpack.StackError):
        return TierHits()
    found = TierHits()
    for tier in _TIERS:
        count = counts.get(tier) if isinstance(counts, dict) else None
        if isinstance(count, int) and count > 0:
            setattr(found, tier, count)
    return found
