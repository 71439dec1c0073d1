"""Inspection: what a cache folder holds (`stats`) and whether all of it is sound (`verify`).

`stats` only looks: it counts packs, records and bytes per namespace from the packs' headers and
changes nothing (a symlink where a folder of the cache belongs is reported and left alone).
`verify` reads every pack in full and sets aside the bad ones, symlinks inside the cache and
temp files of writers that died, cleans locks/, and tightens entries more open than the folder's
permission rule. Both walk the folder without following symlinks (`layout.CacheFolder`).
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass, field
from pathlib import Path

import msgpack

from facecache.errors import CorruptPack
from facecache.files import DOOMED_PREFIX, TEMP_MARK, delete_file
from facecache.fingerprint import is_digest
from facecache.permissions import LooseEntries, loose_entries
from facecache.store import packfile, tier_hits
from facecache.store.eviction import clean_locks
from facecache.store.layout import (MAX_RECORD_BYTES, NAMESPACE_FILE, PACK_SUFFIX, SUBFOLDERS, CacheFolder,
                                    entry_count, scanfiles)


@dataclass
class NamespaceStats:
    key: str
    description: dict | None
    packs: int = 0
    entries: int = 0
    bytes: int = 0
    last_used: float | None = None


@dataclass
class CacheStats:
    root: str
    shared: bool
    entries: int = 0
    bytes: int = 0
    packs: int = 0
    quarantined: int = 0
    temp_files: int = 0
    namespaces: list[NamespaceStats] = field(default_factory=list)
    loose_permissions: LooseEntries = field(default_factory=LooseEntries)  # entries more open than the rule
    hits: tier_hits.TierHits = field(default_factory=tier_hits.TierHits)  # every run's hits, by tier

    def as_dict(self) -> dict:
        return {
            "root": self.root,
            "shared": self.shared,
            "entries": self.entries,
            "bytes": self.bytes,
            "packs": self.packs,
            "quarantined": self.quarantined,
            "temp_files": self.temp_files,
            "namespaces": len(self.namespaces),
            "namespace_details": [vars(n) for n in self.namespaces],
            "loose_permissions": self.loose_permissions.as_dict(),
            "hits": self.hits.as_dict(),
        }


@dataclass
class VerifyReport:
    checked: int = 0
    bad: list[str] = field(default_factory=list)
    temp_set_aside: int = 0
    temp_in_flight: int = 0
    locks_cleaned: int = 0  # stale claims and temp files removed from locks/
    loose_permissions: LooseEntries = field(default_factory=LooseEntries)  # found, and tightened where ours

    @property
    def clean(self) -> bool:
        return not self.bad

    def as_dict(self) -> dict:
        return {**vars(self), "loose_permissions": self.loose_permissions.as_dict(), "clean": self.clean}


def stats(cache: CacheFolder) -> CacheStats:
    result = CacheStats(root=str(cache.root), shared=cache.perms.shared)
    for sub in SUBFOLDERS:
        if os.path.islink(cache.root / sub):
            cache.report_once(cache.root / sub, f"left alone: {cache.root / sub} is a symlink where a folder of "
                              "the cache belongs (any other cache command sets it aside)")
    by_ns: dict[str, NamespaceStats] = {}
    for ns_entry in cache.subfolders(cache.root / "ns"):
        if is_digest(ns_entry.name):
            by_ns[ns_entry.name] = _namespace_stats(cache, Path(ns_entry.path))
    for info in cache.iter_packs():
        ns = by_ns.get(info.namespace) or by_ns.setdefault(  # a namespace created mid-scan
            info.namespace, _namespace_stats(cache, cache.root / "ns" / info.namespace))
        ns.packs += 1
        ns.bytes += info.size
        ns.entries += entry_count(info.path)
    result.namespaces = sorted(by_ns.values(), key=lambda n: n.key)
    result.packs = sum(n.packs for n in result.namespaces)
    result.entries = sum(n.entries for n in result.namespaces)
    result.quarantined = sum(1 for _ in scanfiles(cache.root / "quarantine"))
    result.loose_permissions = loose_entries(cache.root, cache.perms, tighten=False, include_root=False)
    result.hits = tier_hits.total(cache)
    for dirpath, _dirs, files in os.walk(cache.root):
        for name in files:
            try:
                result.bytes += os.lstat(os.path.join(dirpath, name)).st_size
            except FileNotFoundError:
                continue
            result.temp_files += name.startswith(TEMP_MARK)
    return result


def verify(cache: CacheFolder, temp_grace_seconds: float = 600.0) -> VerifyReport:
    """Read every pack in full; set aside bad ones and temp files left by dead writers."""
    report = VerifyReport()
    now = time.time()
    namespaces = cache.inside("ns")
    for info in list(cache.iter_packs()):
        report.checked += 1
        try:
            packfile.decode(cache.read_file(info.path), info.path.name[:-len(PACK_SUFFIX)])
        except FileNotFoundError:
            continue
        except (CorruptPack, OSError) as exc:
            report.bad.append(f"{info.path.relative_to(cache.root)}: {exc}")
            cache.set_aside(info.path, str(exc))
    for dirpath, dirs, files in os.walk(namespaces) if namespaces is not None else ():
        for name in dirs + files:
            path = Path(dirpath) / name
            if path.is_symlink():  # listed, never followed by the walk
                report.bad.append(f"{path.relative_to(cache.root)}: a symlink inside the cache")
                cache.set_aside(path, "a symlink inside the cache; what it points to was not touched")
            elif name not in files:
                continue
            elif name.startswith(DOOMED_PREFIX):
                delete_file(path)
            elif name.startswith(TEMP_MARK):
                try:
                    young = path.lstat().st_mtime > now - temp_grace_seconds
                except FileNotFoundError:
                    continue
                if young:
                    report.temp_in_flight += 1
                else:
                    cache.set_aside(path, "temp file of an interrupted write")
                    report.temp_set_aside += 1
    report.locks_cleaned = clean_locks(cache)
    report.loose_permissions = loose_entries(cache.root, cache.perms, tighten=True, include_root=False)
    return report


def _namespace_stats(cache: CacheFolder, folder: Path) -> NamespaceStats:
    stats = NamespaceStats(key=folder.name, description=None)
    marker = folder / NAMESPACE_FILE
    try:
        stats.last_used = marker.lstat().st_mtime
        description = msgpack.unpackb(cache.read_file(marker, MAX_RECORD_BYTES), raw=False, strict_map_key=True)
        stats.description = description if isinstance(description, dict) else None
    except (OSError, CorruptPack, ValueError, msgpack.UnpackException):
        pass
    return stats
