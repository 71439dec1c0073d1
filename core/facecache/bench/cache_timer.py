"""Timing what the cache costs inside a real job, without touching the engine.

`CacheTimer` collects wall time per category. `instrument(timer)` is a context
manager that wraps, for its duration only, the engine's cache entry points:

  reading (counted as cache overhead):
    fingerprint    frame_fingerprint as the analyzer calls it
    identity       media_identity (the remembered content digest of the media file)
    open_group     FrameStore.open_group: read, check and decode a group's packs, merge them
    read_group     FaceCache.read_group (inside open_group; breakdown only)
    lookup         FaceAnalyzer.cached, FrameGroup.lookup / fingerprint_at
    manifest       loading the output manifest and asking it whether an output is current
  writing (reported apart):
    flush          FrameGroup.flush (encode and write a group's pack)
    manifest_save  OutputManifest.save

Calls nest (open_group calls read_group, cached calls lookup): every category
keeps its inclusive time, and the totals count only the outermost timed call,
so nothing is counted twice. Everything patched is restored on exit.
"""

from __future__ import annotations

import functools
import time
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from typing import Callable, Iterator
from unittest import mock

from facecache.analysis import analyzer as analyzer_module
from facecache.analysis.analyzer import FaceAnalyzer
from facecache.jobs import manifest as manifest_module
from facecache.jobs import swap_job as swap_job_module
from facecache.store.cache import FaceCache
from facecache.store.frame_store import FrameGroup, FrameStore

READ = "read"
WRITE = "write"


@dataclass
class CacheTimer:
    """Seconds and calls per category; `totals` holds outermost time per kind (read/write)."""

    seconds: dict[str, float] = field(default_factory=dict)
    calls: dict[str, int] = field(default_factory=dict)
    totals: dict[str, float] = field(default_factory=lambda: {READ: 0.0, WRITE: 0.0})
    _depth: int = 0

    def wrap(self, category: str, kind: str, function: Callable) -> Callable:
        @functools.wraps(function)
        def timed(*args, **kwargs):
            outermost = self._depth == 0
            self._depth += 1
            start = time.perf_counter()
            try:
                return function(*args, **kwargs)
            finally:
                elapsed = time.perf_counter() - start
                self._depth -= 1
                self.seconds[category] = self.seconds.get(category, 0.0) + elapsed
                self.calls[category] = self.calls.get(category, 0) + 1
                if outermost:
                    self.totals[kind] += elapsed

        return timed

    def as_dict(self) -> dict:
        """{category: {"ms": inclusive milliseconds, "calls": n}}."""
        return {name: {"ms": round(self.seconds[name] * 1000, 3), "calls": self.calls[name]}
                for name in sorted(self.seconds)}


# (owner, attribute, category, kind): what `instrument` wraps.
_TARGETS = (
    (analyzer_module, "frame_fingerprint", "fingerprint", READ),
    (analyzer_module, "media_identity", "identity", READ),
    (swap_job_module, "media_identity", "identity", READ),
    (FrameStore, "open_group", "open_group", READ),
    (FaceCache, "read_group", "read_group", READ),
    (FaceAnalyzer, "cached", "lookup", READ),
    (FrameGroup, "lookup", "lookup", READ),
    (FrameGroup, "fingerprint_at", "lookup", READ),
    (manifest_module.OutputManifest, "__init__", "manifest", READ),
    (manifest_module.OutputManifest, "is_current", "manifest", READ),
    (FrameGroup, "flush", "flush", WRITE),
    (manifest_module.OutputManifest, "save", "manifest_save", WRITE),
)


@contextmanager
def instrument(timer: CacheTimer) -> Iterator[CacheTimer]:
    """Time the cache entry points into `timer` while the block runs; restore them after."""
    with ExitStack() as stack:
        for owner, name, category, kind in _TARGETS:
            original = getattr(owner, name)
            stack.enter_context(mock.patch.object(owner, name, timer.wrap(category, kind, original)))
        yield timer
