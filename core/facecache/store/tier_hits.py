"""The hits each tier served, kept across runs (`facecache cache stats`).

A cache object counts the frame records it served complete (`FrameGroup.lookup`'s hits): from the cache
folder, or from packs the remote tier fetched in this run. At a job's end it writes its totals so far to
its own small file,

    <root>/hits/<host tag>-<pid>-<random>.msgpack      {"local": n, "remote": m}

rewritten whole by that object alone (a temp file renamed over it), so no two processes ever write one
file and nothing is lost when two jobs end at once. Reading sums every file. `cache clear` empties the
folder; a file that cannot be read counts nothing.
"""

from __future__ import annotations

import os
import secrets
from dataclasses import dataclass
from pathlib import Path

import msgpack

from facecache.errors import CorruptPack
from facecache.files import write_atomic
from facecache.processes import host_tag
from facecache.permissions import make_dir
from facecache.store.layout import HITS_FOLDER, MAX_RECORD_BYTES, CacheFolder, scanfiles

_SUFFIX = ".msgpack"
_TIERS = ("local", "remote")


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


def keep(cache: CacheFolder, hits: TierHits, file_name: str) -> None:
    """Write a cache object's totals to its own file (nothing when it served no hit, or cannot store)."""
    if not (hits.local or hits.remote) or not cache.storing:
        return
    folder = cache.inside(HITS_FOLDER)
    if folder is None:
        return
    try:
        make_dir(folder, cache.perms)
        # not fsynced: a power cut may cost the last run's figures, never a pack
        write_atomic(folder / file_name, msgpack.packb(hits.as_dict()), cache.perms.file_mode, durable=False)
    except OSError:
        return  # figures only: a full or read-only cache still serves its hits


def total(cache: CacheFolder) -> TierHits:
    """Every run's hits, summed over the files in hits/."""
    summed = TierHits()
    for entry in scanfiles(cache.root / HITS_FOLDER):
        if not entry.name.endswith(_SUFFIX) or entry.name.startswith("."):
            continue
        try:
            counts = msgpack.unpackb(bytes(cache.read_file(Path(entry.path), MAX_RECORD_BYTES)))
        except (OSError, CorruptPack, ValueError, msgpack.ExtraData, msgpack.FormatError, msgpack.StackError):
            continue  # removed meanwhile, or not ours: counts nothing
        for tier in _TIERS:
            count = counts.get(tier) if isinstance(counts, dict) else None
            if isinstance(count, int) and count > 0:
                setattr(summed, tier, getattr(summed, tier) + count)
    return summed
