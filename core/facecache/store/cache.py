"""FaceCache: a cache folder's read and write path, and when it stores at all.

A group holds the records of one slice of work (for example 64 frames of a clip); a warm read of it
opens one or a few packs. Writes go to a temp file in the same folder, are fsynced, then renamed to
the content digest: a reader sees a whole pack or none. Existing packs are never rewritten, only
touched, so their mtime orders eviction. Everything read from disk is checked; a bad pack is a miss,
logged once and set aside. Where things live, and how they are reached without following a symlink,
is `layout.py`; eviction (`prune`, `clear`) is `eviction.py`, and `stats` and `verify` are
`inspection.py`: FaceCache's methods of those names hand over to them.

A cache that cannot take new files (a read-only mount, a teammate's folder without write access,
a full disk) still serves what it holds: the first write that fails for one of those reasons
turns storing off for this cache object, with one warning, and results are then computed without
being stored. Nothing already stored is removed while storing is off.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Generic, TypeVar

import msgpack

from facecache.errors import CacheError, CorruptPack, cannot_write, os_fault
from facecache.fingerprint import is_digest
from facecache.files import OPEN_NEW, delete_file, folder_bytes, temp_name, touch, unlink_quietly, write_once
from facecache.permissions import make_dir
from facecache.store import eviction, inspection, packfile, tier_hits
from facecache.store.eviction import PRUNE_GRACE_SECONDS, PruneReport
from facecache.store.inspection import CacheStats, VerifyReport
from facecache.store.layout import MAX_RECORD_BYTES, NAMESPACE_FILE, PACK_NAME, PACK_SUFFIX, SUBFOLDERS, CacheFolder
from facecache.store.namespace import Namespace
from facecache.store.remote import RemoteTier


DEFAULT_MAX_BYTES = 10 * 1000**3
_TOUCH_AFTER_SECONDS = 600.0
_MEMO_KINDS = ("media",)
CHOOSE_CACHE = "choose a writable cache folder with --cache-dir or FACECACHE_DIR (in Blender: Cache Location)"

T = TypeVar("T")


@dataclass(frozen=True)
class StoredPack(Generic[T]):
    name: str
    content: T
    remote: bool = False  # fetched from the remote tier in this run (its hits are the remote tier's)


class FaceCache(CacheFolder):
    """One cache folder. Safe to use from several processes and machines at once."""

    def __init__(self, root: str | os.PathLike, max_bytes: int = DEFAULT_MAX_BYTES, create: bool = True,
                 remote: RemoteTier | None = None):
        """The cache folder at `root`, created (private, or shared with a team folder's group) where it
        is missing; an existing folder keeps its own mode. `create=False` opens it to look only
        (`stats`): nothing is created, changed or set aside, and a missing folder is an empty cache.
        `remote`: a bucket read after this folder, which keeps what it fetches (`remote.py`)."""
        # storing: False once a write failed because the folder cannot take new files
        super().__init__(root, storing=create)
        self.max_bytes = int(max_bytes)
        self.remote = remote
        self.hits = tier_hits.TierHits()  # frame records served by each tier (kept by `keep_hits`)
        self._hits_file = tier_hits.OwnHitsFile()
        # per (namespace, group): the pack names the remote listed in this run (see remove_packs)
        self._remote_names: dict[tuple[str, str], set[str]] = {}
        self._namespaces_touched: set[str] = set()
        self._bytes_since_cap_check = 0
        if os.path.exists(self.root) and not self.root.is_dir():
            raise CacheError(f"cache location {self.root} is a file, not a folder: "
                             "pass a folder with --cache-dir or FACECACHE_DIR")
        if not create:
            return
        try:
            self.root.parent.mkdir(parents=True, exist_ok=True)
            make_dir(self.root, self.perms)
            for folder in map(self.inside, SUBFOLDERS):
                if folder is not None:  # else a symlink there that cannot be set aside: never used
                    make_dir(folder, self.perms)
        except OSError as exc:
            if not (cannot_write(exc) and self.root.is_dir() and os.access(self.root, os.R_OK | os.X_OK)):
                raise os_fault(exc, "create the cache folder", self.root, hint=CHOOSE_CACHE) from None
            self.stop_storing(exc)  # an existing cache we may read but not write: still serves its hits

    # -- storing ------------------------------------------------------------------------------

    def stop_storing(self, exc: OSError) -> None:
        """Turn storing off after a write failed because the folder cannot take new files; warns once."""
        if not self.storing:
            return
        self.storing = False
        fault = os_fault(exc, "store new results in the cache", self.root, hint=CHOOSE_CACHE)
        self.warn(f"{fault}. Results already in the cache are still used; new ones are computed but not stored "
                  "in this run")

    def _storing(self, write: Callable[[], T]) -> T | None:
        """Run a write while storing is on; None when it is off or turns off now."""
        if not self.storing:
            return None
        try:
            return write()
        except OSError as exc:
            if not cannot_write(exc):
                raise
            self.stop_storing(exc)
            return None

    def _store_file(self, folder: Path, name: str, data: bytes) -> None:
        """Write-once a small file, its folder created as needed, while storing is on."""
        def write() -> None:
            make_dir(folder, self.perms)
            self._write_file(folder, name, data)

        self._storing(write)

    # -- namespaces ---------------------------------------------------------------------------

    def use_namespace(self, namespace: Namespace) -> str:
        """Make sure the namespace folder exists and mark it used now; returns its key."""
        key = namespace.key
        if key in self._namespaces_touched:
            return key
        folder = self.inside("ns", key)
        if folder is None:
            return key
        marker = folder / NAMESPACE_FILE
        if marker.exists():
            _touch(marker)
        else:
            self._store_file(folder, NAMESPACE_FILE, msgpack.packb(namespace.describe(), use_bin_type=True))
        self._namespaces_touched.add(key)
        return key

    # -- packs ----------------------------------------------------------------------------------

    def read_group(self, namespace_key: str, group: str,
                   decode: Callable[[packfile.Pack], T] = lambda pack: pack, fresh: bool = False) -> list[StoredPack[T]]:
        """Every good pack of a group, passed through `decode` (which raises CorruptPack
        on content it rejects). Bad packs are set aside and skipped. `fresh`: as the file server
        lists them now (after taking a group's claim, to see what the previous holder wrote)."""
        folder = self.real_group_dir(namespace_key, group, check_group=fresh)  # else checked on opening
        if folder is None:
            return []
        if fresh:
            self._refresh_listing(folder)
        for _attempt in range(2):
            packs, vanished = self._read_packs_in(folder, decode)
            if not vanished:
                break
            # A pack disappeared while we read: a writer compacted the group into a new pack.
        if self.remote is not None and self.remote.usable:
            packs += self._fetch_remote(namespace_key, group, folder, {pack.name for pack in packs}, decode)
        return packs

    def _fetch_remote(self, namespace_key: str, group: str, folder: Path, have: set[str],
                      decode: Callable[[packfile.Pack], T]) -> list[StoredPack[T]]:
        """The group's packs that only the remote tier holds, checked like a local pack and kept locally.
        One that fails its checks (digest, format) is never served: it is set aside (`RemoteTier.set_aside`)."""
        listed = self.remote.list_group(namespace_key, group)
        self._remote_names[(namespace_key, group)] = set(listed)
        fetched: list[StoredPack[T]] = []
        for name in listed:
            if name in have:
                continue
            data = self.remote.fetch(namespace_key, group, name)
            if data is None:
                continue  # gone meanwhile (merged into a newer pack) or the tier just turned off
            try:
                fetched.append(StoredPack(name, decode(packfile.decode(data, name)), remote=True))
            except CorruptPack as exc:
                self.remote.set_aside(namespace_key, group, name, str(exc))
                self._store_file(self._quarantine(), f"remote.{name}{PACK_SUFFIX}", data)  # to look at
                continue
            self._store_file(folder, name + PACK_SUFFIX, data)  # a remote hit is kept locally
        return fetched

    def _refresh_listing(self, folder: Path) -> None:
        """Network clients (sshfs, NFS) list a folder from a cache for a while (sshfs's dcache_timeout,
        NFS's acdirmin) but drop that cache when they change the folder themselves, so a probe file
        is created in it and removed. On tests/nas's sshfs mounts a pack written through the other
        mount was missing from the listing until the probe, every time. Best effort: a folder that is
        missing or cannot be written is listed as it is."""
        if not self.storing:
            return
        probe = folder / f"{temp_name()}-listing"
        try:
            os.close(os.open(probe, OPEN_NEW, self.perms.file_mode))
        except OSError:
            return
        unlink_quietly(probe)

    def _read_packs_in(self, folder: Path, decode: Callable[[packfile.Pack], Any]) -> tuple[list[StoredPack], bool]:
        packs: list[StoredPack] = []
        vanished = False
        listing = self.list_group(folder)
        if listing is None:
            return packs, False
        names, dir_fd = listing
        try:
            for file_name in names:
                if not PACK_NAME.match(file_name):
                    continue
                path = folder / file_name
                name = file_name[:-len(PACK_SUFFIX)]
                try:
                    data, info = self.read_file_stat(path, dir_fd=dir_fd)
                    stored = StoredPack(name, decode(packfile.decode(data, name)))
                except FileNotFoundError:
                    vanished = True
                    continue
                except (CorruptPack, OSError) as exc:
                    if not os.path.lexists(path):  # removed while we read it (a prune or a merge)
                        vanished = True
                    elif isinstance(exc, CorruptPack):
                        self.set_aside(path, str(exc))
                    else:
                        self.report_once(path, f"cannot read {path}: {exc}")
                    continue
                packs.append(stored)
                if info.st_mtime < time.time() - _TOUCH_AFTER_SECONDS:  # from the open file: no extra stat
                    _touch(path)
        finally:
            if dir_fd is not None:
                os.close(dir_fd)
        return packs, vanished

    def write_pack(self, namespace_key: str, group: str, meta: dict, arrays: dict, entries: int) -> str | None:
        """Store a pack in a group (write-once, atomic); returns its name (digest), or None when the
        cache is not storing (see `stop_storing`)."""
        if not self.storing:
            return None
        digest, data = packfile.encode(meta, arrays, entries)

        def write() -> str | None:
            folder = self.real_group_dir(namespace_key, group)
            if folder is None:
                return None
            make_dir(folder, self.perms)
            if self._write_file(folder, digest + PACK_SUFFIX, data):
                self.io.packs_written += 1
                self.io.bytes_written += len(data)
                self._bytes_since_cap_check += len(data)
                if self._bytes_since_cap_check > max(self.max_bytes // 100, 16 * 1024 * 1024):
                    self.enforce_size_cap()
            return digest

        name = self._storing(write)
        if name is not None and self.remote is not None:
            self.remote.upload(namespace_key, group, name, data)
        return name

    def _write_file(self, folder: Path, name: str, data: bytes) -> bool:
        """Write-once (`files.write_once`); an existing file is only touched (LRU). False if it existed."""
        target = folder / name
        if os.path.lexists(target):
            _touch(target)
            return False
        try:
            return write_once(folder, name, data, self.perms.file_mode)
        except FileNotFoundError:
            make_dir(folder, self.perms)  # a pruner removed the empty folder meanwhile
            return write_once(folder, name, data, self.perms.file_mode)

    def remove_packs(self, namespace_key: str, group: str, names: list[str]) -> None:
        """Delete packs whose content now lives in another pack of the group. With a remote tier, those
        the bucket holds go there too; a read-only node keeps its copies of them instead, so that the
        next run finds them here and does not fetch them again."""
        remote_names = self._remote_names.get((namespace_key, group), set())
        if self.remote is not None and self.remote.writable:
            self.remote.remove(namespace_key, group, [name for name in names if name in remote_names])
        elif remote_names:
            names = [name for name in names if name not in remote_names]

        def remove() -> None:
            folder = self.real_group_dir(namespace_key, group)
            for name in names if folder is not None else ():
                if is_digest(name):
                    delete_file(folder / (name + PACK_SUFFIX))

        self._storing(remove)

    # -- small keyed records (e.g. remembered media identities) ----------------------------------

    def remember(self, kind: str, key: str, value: dict) -> None:
        """Store a small msgpack record under <root>/<kind>/ (write-once by key)."""
        folder = self._memo_dir(kind, key)
        if folder is not None:
            self._store_file(folder, key + ".msgpack", msgpack.packb(value, use_bin_type=True))

    def recall(self, kind: str, key: str) -> dict | None:
        """A record stored by `remember`, or None when absent or unreadable."""
        folder = self._memo_dir(kind, key)
        if folder is None:
            return None
        path = folder / (key + ".msgpack")
        try:
            value = msgpack.unpackb(self.read_file(path, MAX_RECORD_BYTES), raw=False, strict_map_key=True)
        except FileNotFoundError:
            return None
        except (OSError, CorruptPack, ValueError, msgpack.UnpackException) as exc:
            self.set_aside(path, f"unreadable record: {exc}")
            return None
        if not isinstance(value, dict):
            self.set_aside(path, "record is not a map")
            return None
        _touch_if_older(path, _TOUCH_AFTER_SECONDS)
        return value

    def _memo_dir(self, kind: str, key: str) -> Path | None:
        if kind not in _MEMO_KINDS or not is_digest(key):
            raise ValueError(f"bad memo kind or key: {kind!r} {key!r}")
        return self.inside(kind, key[:2])

    # -- maintenance: eviction.py and inspection.py ---------------------------------------------

    def prune(self, max_bytes: int | None = None, stale_seconds: float | None = None,
              grace_seconds: float = PRUNE_GRACE_SECONDS) -> PruneReport:
        return eviction.prune(self, max_bytes, stale_seconds, grace_seconds)

    def enforce_size_cap(self) -> PruneReport:
        self._bytes_since_cap_check = 0
        return eviction.enforce_size_cap(self, self.max_bytes)

    def clean_locks(self) -> int:
        return eviction.clean_locks(self)

    def keep_hits(self) -> None:
        """At a job's end: this object's hits by tier, kept for `cache stats` (`tier_hits`)."""
        self._hits_file.keep(self, self.hits)

    def clear(self) -> None:
        eviction.clear(self)

    def stats(self) -> CacheStats:
        return inspection.stats(self)

    def verify(self, temp_grace_seconds: float = 600.0) -> VerifyReport:
        return inspection.verify(self, temp_grace_seconds)

    def total_bytes(self) -> int:
        """Bytes of every file in the cache folder (a walk of the folder; no file is opened)."""
        return folder_bytes(self.root)


def _touch(path: Path) -> None:
    try:
        touch(path)
    except OSError:
        pass  # read-only cache or a vanished file: LRU order is best effort


def _touch_if_older(path: Path, seconds: float) -> None:
    try:
        if path.lstat().st_mtime < time.time() - seconds:
            _touch(path)
    except OSError:
        pass

