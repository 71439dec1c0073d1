"""Eviction: keeping a cache folder within its size, dropping namespaces nobody uses, emptying it.

`prune` evicts the least recently used packs (by mtime: readers touch what they use) down to a
size and drops namespaces unused for a while, under a lease so that one process prunes at a time
(on a shared cache, every client cleaning at once causes storms). Nothing younger than a grace
period is removed, so a pack being written or just read is never taken. A pack another process
holds open (Windows) is left for the next prune. Deletes rename first, then unlink, so nobody
reads a half-deleted pack; `clear` and `prune` never follow a symlink out of the cache.
"""

from __future__ import annotations

import secrets
import shutil
import time
from dataclasses import dataclass
from pathlib import Path

from facecache.errors import OSFault, os_fault
from facecache.fingerprint import is_digest
from facecache.files import DOOMED_PREFIX, delete_file, empty_folder, rename_path
from facecache.store.layout import HITS_FOLDER, NAMESPACE_FILE, CacheFolder
from facecache.store import tier_hits
from facecache.store.lease import Lease, remove_stale

PRUNE_GRACE_SECONDS = 300.0
_PRUNE_LEASE_SECONDS = 600.0
CHANGE_CACHE = "ask the cache folder's owner for write access (or to run this), or fix the disk, then run it again"


@dataclass
class PruneReport:
    removed_packs: int = 0
    removed_bytes: int = 0
    removed_namespaces: int = 0
    skipped_young: int = 0
    skipped_in_use: int = 0  # held open by another process (Windows): left for the next prune
    locks_cleaned: int = 0  # stale claims and temp files removed from locks/
    hits_files_folded: int = 0  # old files of hits/ folded into one (tier_hits.fold)
    busy: bool = False  # another process was pruning; nothing done

    def as_dict(self) -> dict:
        return vars(self)


def prune(cache: CacheFolder, max_bytes: int | None = None, stale_seconds: float | None = None,
          grace_seconds: float = PRUNE_GRACE_SECONDS) -> PruneReport:
    """Evict least recently used packs down to max_bytes and drop namespaces
    unused for stale_seconds, and clean locks/. One pruner at a time; nothing younger than the grace.
    A cache that cannot be changed raises an OSFault that says why and what to do."""
    try:
        return _prune(cache, max_bytes, stale_seconds, grace_seconds)
    except OSError as exc:
        raise os_fault(exc, "prune the cache", cache.root, hint=CHANGE_CACHE) from None


def _prune(cache: CacheFolder, max_bytes: int | None, stale_seconds: float | None,
           grace_seconds: float) -> PruneReport:
    report = PruneReport()
    locks = cache.inside("locks")
    if locks is None:  # a symlink there that cannot be set aside: no lease, so no pruning
        report.busy = True
        return report
    lease = Lease.acquire(locks / "prune.lease", _PRUNE_LEASE_SECONDS, cache.perms)
    if lease is None:
        report.busy = True
        return report
    with lease:
        report.locks_cleaned = clean_locks(cache)
        report.hits_files_folded = tier_hits.fold(cache)
        now = time.time()
        if stale_seconds is not None:
            for ns_entry in cache.subfolders(cache.root / "ns"):
                marker = Path(ns_entry.path) / NAMESPACE_FILE
                try:
                    last_used = marker.lstat().st_mtime
                except FileNotFoundError:
                    last_used = ns_entry.stat(follow_symlinks=False).st_mtime
                if is_digest(ns_entry.name) and last_used < now - max(stale_seconds, grace_seconds):
                    _remove_tree(Path(ns_entry.path))
                    report.removed_namespaces += 1
        if max_bytes is not None:
            packs = sorted(cache.iter_packs(), key=lambda p: p.mtime)
            total = sum(p.size for p in packs)
            for info in packs:
                if total <= max_bytes:
                    break
                if info.mtime > now - grace_seconds:
                    report.skipped_young += 1
                    continue
                if not delete_file(info.path):
                    report.skipped_in_use += 1
                    continue
                total -= info.size
                report.removed_packs += 1
                report.removed_bytes += info.size
                _remove_empty_dir(info.path.parent)
    return report


def enforce_size_cap(cache: CacheFolder, max_bytes: int) -> PruneReport:
    """Prune down to the cap while storing; a cap that cannot be enforced now (no write access
    to locks/, say) is reported once and left to the next run."""
    try:
        return prune(cache, max_bytes=max_bytes)
    except OSFault as fault:
        cache.report_once(cache.root / "locks", f"the size cap was not enforced: {fault}")
        return PruneReport()


def clean_locks(cache: CacheFolder) -> int:
    """Remove expired claims of dead holders and temp files of failed renewals from locks/."""
    folders = (cache.inside("locks"), cache.inside("locks", "claims"))
    return sum(remove_stale(folder, cache.perms) for folder in folders if folder is not None)


def clear(cache: CacheFolder) -> None:
    """Remove every cached result (namespaces, media identities, quarantine) and the hits counted so far
    (`tier_hits`). A symlink where one of those folders belongs is set aside, never followed (`inside`), and
    so is any symlink in them."""
    try:
        for sub in ("ns", "media", "quarantine", HITS_FOLDER):
            folder = cache.inside(sub)
            if folder is not None:
                empty_folder(folder)
    except OSError as exc:
        raise os_fault(exc, "clear the cache", cache.root, hint=CHANGE_CACHE) from None


def _remove_tree(folder: Path) -> None:
    doomed = folder.with_name(f"{DOOMED_PREFIX}{secrets.token_hex(6)}")
    try:
        rename_path(folder, doomed)
    except FileNotFoundError:
        return
    shutil.rmtree(doomed, ignore_errors=True)


def _remove_empty_dir(folder: Path) -> None:
    try:
        folder.rmdir()
    except OSError:
        pass  # not empty, or already gone
