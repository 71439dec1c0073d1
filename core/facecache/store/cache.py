"""FaceCache: the on-disk store of packs, organised by namespace and group.

    <root>/ns/<namespace>/namespace.msgpack     what the namespace stands for; mtime = last use
    <root>/ns/<namespace>/<g[:2]>/<group>/<digest>.fcp
    <root>/media/<k[:2]>/<k>.msgpack            remembered media identities
    <root>/quarantine/                          packs set aside as bad
    <root>/locks/                               claims (one pruner at a time)

A group holds the records of one slice of work (for example 64 frames of a
clip); a warm read of it opens one or a few packs. Writes go to a temp file in
the same folder, are fsynced, then renamed to the content digest: a reader sees
a whole pack or none. Existing packs are never rewritten. Deletes rename first,
then unlink, so nobody reads a half-deleted pack. Everything read from disk is
checked; a bad pack is a miss, logged once and set aside.

A cache that cannot take new files (a read-only mount, a teammate's folder without write access,
a full disk) still serves what it holds: the first write that fails for one of those reasons
turns storing off for this cache object, with one warning, and results are then computed without
being stored. Nothing already stored is removed while storing is off.
"""

from __future__ import annotations

import errno
import logging
import os
import re
import secrets
import shutil
import stat
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Generic, Iterator, TypeVar

import msgpack

from facecache.errors import CacheError, CorruptPack, OSFault, cannot_write, os_fault
from facecache.fingerprint import is_digest
from facecache.files import (DIR_FD, DOOMED_PREFIX, NOFOLLOW, OPEN_NEW, OPEN_READ, TEMP_MARK, delete_file,
                             empty_folder, folder_bytes, rename_path, temp_name, touch, unlink_quietly, write_once)
from facecache.permissions import LooseEntries, Permissions, loose_entries, make_dir, permissions_for
from facecache.store import packfile
from facecache.store.lease import Lease, remove_stale
from facecache.store.namespace import Namespace

log = logging.getLogger("facecache.cache")

DEFAULT_MAX_BYTES = 10 * 1000**3
PACK_SUFFIX = ".fcp"
NAMESPACE_FILE = "namespace.msgpack"
PRUNE_GRACE_SECONDS = 300.0
_PACK_NAME = re.compile(r"^[0-9a-f]{32}\.fcp\Z")  # \Z: "$" would also accept a trailing newline
_FANOUT_NAME = re.compile(r"^[0-9a-f]{2}\Z")
_TOUCH_AFTER_SECONDS = 600.0
_PRUNE_LEASE_SECONDS = 600.0
_MEMO_KINDS = ("media",)
CHOOSE_CACHE = "choose a writable cache folder with --cache-dir or FACECACHE_DIR (in Blender: Cache Location)"
CHANGE_CACHE = "ask the cache folder's owner for write access (or to run this), or fix the disk, then run it again"
_MAX_MEMO_BYTES = 64 * 1024
# The folders the cache manages under its root; quarantine first, where the others' stand-ins go.
SUBFOLDERS = ("quarantine", "ns", "media", "locks")


@dataclass
class IOCounters:
    """What this cache object did on disk (the benchmark reads it)."""

    files_opened: int = 0
    bytes_read: int = 0
    packs_written: int = 0
    bytes_written: int = 0


T = TypeVar("T")


@dataclass(frozen=True)
class StoredPack(Generic[T]):
    name: str
    content: T


@dataclass(frozen=True)
class PackInfo:
    path: Path
    namespace: str
    size: int
    mtime: float


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


@dataclass
class PruneReport:
    removed_packs: int = 0
    removed_bytes: int = 0
    removed_namespaces: int = 0
    skipped_young: int = 0
    skipped_in_use: int = 0  # held open by another process (Windows): left for the next prune
    locks_cleaned: int = 0  # stale claims and temp files removed from locks/
    busy: bool = False  # another process was pruning; nothing done

    def as_dict(self) -> dict:
        return vars(self)


class FaceCache:
    """One cache folder. Safe to use from several processes and machines at once."""

    def __init__(self, root: str | os.PathLike, max_bytes: int = DEFAULT_MAX_BYTES, create: bool = True):
        """The cache folder at `root`, created (private, or shared with a team folder's group) where it
        is missing; an existing folder keeps its own mode. `create=False` opens it to look only
        (`stats`): nothing is created, changed or set aside, and a missing folder is an empty cache."""
        self.root = Path(root).absolute()
        self.max_bytes = int(max_bytes)
        self.io = IOCounters()
        self.storing = create  # False once a write failed because the folder cannot take new files
        self._reported: set[str] = set()
        self._namespaces_touched: set[str] = set()
        self._bytes_since_cap_check = 0
        self.perms: Permissions = permissions_for(self.root)
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
        log.warning("%s. Results already in the cache are still used; new ones are computed but not stored "
                    "in this run", fault)

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

    def group_dir(self, namespace_key: str, group: str) -> Path:
        if not (is_digest(namespace_key) and is_digest(group)):
            raise ValueError("namespace and group keys must be 32 hex digits")
        return self.root / "ns" / namespace_key / group[:2] / group

    def read_group(self, namespace_key: str, group: str,
                   decode: Callable[[packfile.Pack], T] = lambda pack: pack, fresh: bool = False) -> list[StoredPack[T]]:
        """Every good pack of a group, passed through `decode` (which raises CorruptPack
        on content it rejects). Bad packs are set aside and skipped. `fresh`: as the file server
        lists them now (after taking a group's claim, to see what the previous holder wrote)."""
        folder = self._real_group_dir(namespace_key, group, check_group=fresh)  # else checked on opening
        if folder is None:
            return []
        if fresh:
            self._refresh_listing(folder)
        for _attempt in range(2):
            packs, vanished = self._read_packs_in(folder, decode)
            if not vanished:
                return packs
            # A pack disappeared while we read: a writer compacted the group into a new pack.
        return packs

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

    def write_pack(self, namespace_key: str, group: str, meta: dict, arrays: dict, entries: int) -> str | None:
        """Store a pack in a group (write-once, atomic); returns its name (digest), or None when the
        cache is not storing (see `stop_storing`)."""
        if not self.storing:
            return None
        digest, data = packfile.encode(meta, arrays, entries)

        def write() -> str | None:
            folder = self._real_group_dir(namespace_key, group)
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

        return self._storing(write)

    def remove_packs(self, namespace_key: str, group: str, names: list[str]) -> None:
        """Delete packs whose content now lives in another pack of the group."""
        def remove() -> None:
            folder = self._real_group_dir(namespace_key, group)
            for name in names if folder is not None else ():
                if is_digest(name):
                    delete_file(folder / (name + PACK_SUFFIX))

        self._storing(remove)

    def _real_group_dir(self, namespace_key: str, group: str, check_group: bool = True) -> Path | None:
        """group_dir, after setting aside a symlink standing in for `ns/`, the namespace, fan-out or
        group folder (`inside`): through one, packs outside the cache would be read, written or deleted;
        None when one stays there.
        Readers pass check_group=False and open the group folder with O_NOFOLLOW instead
        (one network round trip less per group)."""
        folder = self.group_dir(namespace_key, group)
        safe = self.inside("ns", namespace_key, group[:2], *((group,) if check_group else ()))
        return folder if safe is not None else None

    def _read_packs_in(self, folder: Path, decode: Callable[[packfile.Pack], Any]) -> tuple[list[StoredPack], bool]:
        packs: list[StoredPack] = []
        vanished = False
        listing = self._list_group(folder)
        if listing is None:
            return packs, False
        names, dir_fd = listing
        try:
            for file_name in names:
                if not _PACK_NAME.match(file_name):
                    continue
                path = folder / file_name
                name = file_name[:-len(PACK_SUFFIX)]
                try:
                    data, info = self._read_file_stat(path, dir_fd=dir_fd)
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
                        self._report_once(path, f"cannot read {path}: {exc}")
                    continue
                packs.append(stored)
                if info.st_mtime < time.time() - _TOUCH_AFTER_SECONDS:  # from the open file: no extra stat
                    _touch(path)
        finally:
            if dir_fd is not None:
                os.close(dir_fd)
        return packs, vanished

    def _list_group(self, folder: Path) -> tuple[list[str], int | None] | None:
        """The names in a group folder, and (where the OS allows) an open descriptor of it to open
        the packs through; None when it does not exist or is a symlink (set aside)."""
        try:
            if DIR_FD:  # O_NOFOLLOW: the folder is checked in the same round trip that opens it
                dir_fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY | NOFOLLOW)
                try:
                    with os.scandir(dir_fd) as scan:
                        return [entry.name for entry in scan], dir_fd
                except BaseException:
                    os.close(dir_fd)
                    raise
            if os.path.islink(folder):
                raise OSError(errno.ELOOP, "symlinked folder")
            return os.listdir(folder), None
        except FileNotFoundError:
            return None
        except OSError as exc:
            if exc.errno in (errno.ELOOP, errno.ENOTDIR) and os.path.islink(folder):
                self.set_aside(folder, "symlinked folder inside the cache")
            return None

    def _read_file(self, path: Path, limit: int = packfile.MAX_PACK_BYTES) -> bytearray:
        """Read a regular file whole, never following a symlink, within a size limit."""
        return self._read_file_stat(path, limit)[0]

    def _read_file_stat(self, path: Path, limit: int = packfile.MAX_PACK_BYTES,
                        dir_fd: int | None = None) -> tuple[bytearray, os.stat_result]:
        """`_read_file`, also giving the open file's stat; with `dir_fd`, the file is opened by
        name inside that (already checked) folder."""
        if not NOFOLLOW and os.path.islink(path):  # no O_NOFOLLOW here (Windows): check first
            raise CorruptPack("symlink inside the cache")
        try:
            fd = os.open(path.name if dir_fd is not None else path, OPEN_READ, dir_fd=dir_fd)
        except OSError as exc:
            if exc.errno == errno.ELOOP:
                raise CorruptPack("symlink inside the cache") from None
            raise
        self.io.files_opened += 1
        try:
            info = os.fstat(fd)
            if not stat.S_ISREG(info.st_mode):
                raise CorruptPack("not a regular file")
            if info.st_size > limit:
                raise CorruptPack(f"file of {info.st_size} bytes is over the {limit}-byte limit")
            # Straight into one private buffer (a six-face swap pack is ~100 MB: no chunks to join,
            # and its arrays can be views of it); one extra byte detects growth while reading.
            data = bytearray(info.st_size + 1)
            with os.fdopen(fd, "rb", buffering=0, closefd=False) as handle, memoryview(data) as view:
                filled = 0
                while filled < len(data) and (count := handle.readinto(view[filled:])):
                    filled += count
        finally:
            os.close(fd)
        del data[filled:]
        self.io.bytes_read += len(data)
        return data, info

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
            value = msgpack.unpackb(self._read_file(path, _MAX_MEMO_BYTES), raw=False, strict_map_key=True)
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

    # -- bad files -------------------------------------------------------------------------------

    def inside(self, *parts: str) -> Path | None:
        """`root/parts...`, after setting aside whatever stands where one of those folders belongs and
        is not a folder: a symlink (through one, files outside the cache would be read, written or
        deleted: a teammate's folder, through a shared cache root) or a file. Missing folders are fine.
        None when such a stand-in stays (a cache this process may not change): nothing goes through it."""
        path = self.root
        for part in parts:
            path = path / part
            try:
                if stat.S_ISDIR(os.lstat(path).st_mode):
                    continue
            except FileNotFoundError:
                break
            if self.storing:
                self.set_aside(path, "a symlink (or a file) where a folder of the cache belongs; "
                               "what it points to was not touched")
            if os.path.lexists(path):
                self._report_once(path, f"{path} is a symlink (or a file) where a folder of the cache belongs: "
                                  "nothing is read or written through it; remove it")
                return None
            break
        return path

    def set_aside(self, path: Path, reason: str) -> None:
        """Move a bad file into quarantine/ so it is never read again; log once."""
        self._report_once(path, f"set aside {path}: {reason}")
        relative = path.relative_to(self.root)
        destination = self._quarantine() / f"{'.'.join(relative.parts)}.{secrets.token_hex(4)}"
        try:
            os.rename(path, destination)
        except OSError:
            pass  # someone else moved it, or it is gone: either way it is not read

    def _quarantine(self) -> Path:
        """quarantine/, a real folder: a symlink there is itself moved beside it, under a name of its own."""
        folder = self.root / "quarantine"
        try:
            if not stat.S_ISDIR(os.lstat(folder).st_mode):
                aside = self.root / f"quarantine.not-a-folder-{secrets.token_hex(4)}"
                self._report_once(folder, f"moved {folder} to {aside}: a symlink (or a file) where the cache's "
                                  "quarantine folder belongs; what it points to was not touched")
                os.rename(folder, aside)
        except OSError:
            pass  # missing (made below), or moved by someone else
        try:
            make_dir(folder, self.perms)
        except OSError:
            pass  # the rename into it then fails, and the file is simply not read again
        return folder

    def _report_once(self, path: Path, message: str) -> None:
        if str(path) not in self._reported:
            self._reported.add(str(path))
            log.warning(message)

    # -- maintenance ------------------------------------------------------------------------------

    def iter_packs(self) -> Iterator[PackInfo]:
        """Every pack file (by name pattern) under ns/, without following symlinks."""
        for ns_entry in self._subfolders(self.root / "ns"):
            if not is_digest(ns_entry.name):
                continue
            for fan in self._subfolders(Path(ns_entry.path)):
                if not _FANOUT_NAME.match(fan.name):
                    continue
                for group in self._subfolders(Path(fan.path)):
                    for entry in _scanfiles(Path(group.path)):
                        if _PACK_NAME.match(entry.name):
                            try:
                                info = entry.stat(follow_symlinks=False)
                            except FileNotFoundError:
                                continue  # removed meanwhile (a writer merged it away, a pruner)
                            yield PackInfo(Path(entry.path), ns_entry.name, info.st_size, info.st_mtime)

    def stats(self) -> CacheStats:
        result = CacheStats(root=str(self.root), shared=self.perms.shared)
        for sub in SUBFOLDERS:
            if os.path.islink(self.root / sub):
                self._report_once(self.root / sub, f"left alone: {self.root / sub} is a symlink where a folder of "
                                  "the cache belongs (any other cache command sets it aside)")
        by_ns: dict[str, NamespaceStats] = {}
        for ns_entry in self._subfolders(self.root / "ns"):
            if is_digest(ns_entry.name):
                by_ns[ns_entry.name] = self._namespace_stats(Path(ns_entry.path))
        for info in self.iter_packs():
            ns = by_ns.get(info.namespace) or by_ns.setdefault(  # a namespace created mid-scan
                info.namespace, self._namespace_stats(self.root / "ns" / info.namespace))
            ns.packs += 1
            ns.bytes += info.size
            ns.entries += _entry_count(info.path)
        result.namespaces = sorted(by_ns.values(), key=lambda n: n.key)
        result.packs = sum(n.packs for n in result.namespaces)
        result.entries = sum(n.entries for n in result.namespaces)
        result.quarantined = sum(1 for _ in _scanfiles(self.root / "quarantine"))
        result.loose_permissions = loose_entries(self.root, self.perms, tighten=False, include_root=False)
        for dirpath, _dirs, files in os.walk(self.root):
            for name in files:
                try:
                    result.bytes += os.lstat(os.path.join(dirpath, name)).st_size
                except FileNotFoundError:
                    continue
                result.temp_files += name.startswith(TEMP_MARK)
        return result

    def total_bytes(self) -> int:
        """Bytes of every file in the cache folder (a walk of the folder; no file is opened)."""
        return folder_bytes(self.root)

    def verify(self, temp_grace_seconds: float = 600.0) -> VerifyReport:
        """Read every pack in full; set aside bad ones and temp files left by dead writers."""
        report = VerifyReport()
        now = time.time()
        namespaces = self.inside("ns")
        for info in list(self.iter_packs()):
            report.checked += 1
            try:
                packfile.decode(self._read_file(info.path), info.path.name[:-len(PACK_SUFFIX)])
            except FileNotFoundError:
                continue
            except (CorruptPack, OSError) as exc:
                report.bad.append(f"{info.path.relative_to(self.root)}: {exc}")
                self.set_aside(info.path, str(exc))
        for dirpath, dirs, files in os.walk(namespaces) if namespaces is not None else ():
            for name in dirs + files:
                path = Path(dirpath) / name
                if path.is_symlink():  # listed, never followed by the walk
                    report.bad.append(f"{path.relative_to(self.root)}: a symlink inside the cache")
                    self.set_aside(path, "a symlink inside the cache; what it points to was not touched")
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
                        self.set_aside(path, "temp file of an interrupted write")
                        report.temp_set_aside += 1
        report.locks_cleaned = self.clean_locks()
        report.loose_permissions = loose_entries(self.root, self.perms, tighten=True, include_root=False)
        return report

    def clean_locks(self) -> int:
        """Remove expired claims of dead holders and temp files of failed renewals from locks/."""
        folders = (self.inside("locks"), self.inside("locks", "claims"))
        return sum(remove_stale(folder, self.perms) for folder in folders if folder is not None)

    def prune(self, max_bytes: int | None = None, stale_seconds: float | None = None,
              grace_seconds: float = PRUNE_GRACE_SECONDS) -> PruneReport:
        """Evict least recently used packs down to max_bytes and drop namespaces
        unused for stale_seconds, and clean locks/. One pruner at a time; nothing younger than the grace.
        A cache that cannot be changed raises an OSFault that says why and what to do."""
        try:
            return self._prune(max_bytes, stale_seconds, grace_seconds)
        except OSError as exc:
            raise os_fault(exc, "prune the cache", self.root, hint=CHANGE_CACHE) from None

    def _prune(self, max_bytes: int | None, stale_seconds: float | None, grace_seconds: float) -> PruneReport:
        report = PruneReport()
        locks = self.inside("locks")
        if locks is None:  # a symlink there that cannot be set aside: no lease, so no pruning
            report.busy = True
            return report
        lease = Lease.acquire(locks / "prune.lease", _PRUNE_LEASE_SECONDS, self.perms)
        if lease is None:
            report.busy = True
            return report
        with lease:
            report.locks_cleaned = self.clean_locks()
            now = time.time()
            if stale_seconds is not None:
                for ns_entry in self._subfolders(self.root / "ns"):
                    marker = Path(ns_entry.path) / NAMESPACE_FILE
                    try:
                        last_used = marker.lstat().st_mtime
                    except FileNotFoundError:
                        last_used = ns_entry.stat(follow_symlinks=False).st_mtime
                    if is_digest(ns_entry.name) and last_used < now - max(stale_seconds, grace_seconds):
                        self._remove_tree(Path(ns_entry.path))
                        report.removed_namespaces += 1
            if max_bytes is not None:
                packs = sorted(self.iter_packs(), key=lambda p: p.mtime)
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

    def enforce_size_cap(self) -> PruneReport:
        """Prune down to the cap while storing; a cap that cannot be enforced now (no write access
        to locks/, say) is reported once and left to the next run."""
        self._bytes_since_cap_check = 0
        try:
            return self.prune(max_bytes=self.max_bytes)
        except OSFault as fault:
            self._report_once(self.root / "locks", f"the size cap was not enforced: {fault}")
            return PruneReport()

    def clear(self) -> None:
        """Remove every cached result (namespaces, media identities, quarantine). A symlink where one of
        those folders belongs is set aside, never followed (`inside`), and so is any symlink in them."""
        try:
            for sub in ("ns", "media", "quarantine"):
                folder = self.inside(sub)
                if folder is not None:
                    empty_folder(folder)
        except OSError as exc:
            raise os_fault(exc, "clear the cache", self.root, hint=CHANGE_CACHE) from None

    def _subfolders(self, folder: Path) -> Iterator[os.DirEntry]:
        """The folders in a folder of the cache; a symlink among them is reported (once) and left alone."""
        for entry in _scan(folder):
            if entry.is_symlink():
                self._report_once(Path(entry.path), f"left alone: {entry.path} is a symlink inside the cache "
                                  "(`facecache cache verify` sets it aside)")
            elif entry.is_dir(follow_symlinks=False) and not entry.name.startswith("."):
                yield entry

    def _namespace_stats(self, folder: Path) -> NamespaceStats:
        stats = NamespaceStats(key=folder.name, description=None)
        marker = folder / NAMESPACE_FILE
        try:
            stats.last_used = marker.lstat().st_mtime
            description = msgpack.unpackb(self._read_file(marker, _MAX_MEMO_BYTES), raw=False, strict_map_key=True)
            stats.description = description if isinstance(description, dict) else None
        except (OSError, CorruptPack, ValueError, msgpack.UnpackException):
            pass
        return stats

    def _remove_tree(self, folder: Path) -> None:
        doomed = folder.with_name(f"{DOOMED_PREFIX}{secrets.token_hex(6)}")
        try:
            rename_path(folder, doomed)
        except FileNotFoundError:
            return
        shutil.rmtree(doomed, ignore_errors=True)



def _scan(folder: Path) -> list[os.DirEntry]:
    """The entries of a folder; none when it does not exist, is not a folder or is a symlink (whose
    entries are outside the cache)."""
    if os.path.islink(folder):
        return []
    try:
        return list(os.scandir(folder))
    except (FileNotFoundError, NotADirectoryError):
        return []


def _scanfiles(folder: Path) -> Iterator[os.DirEntry]:
    for entry in _scan(folder):
        if not entry.is_dir(follow_symlinks=False):
            yield entry


def _entry_count(path: Path) -> int:
    try:
        fd = os.open(path, OPEN_READ)
    except OSError:
        return 0
    try:
        return packfile.read_entry_count(os.read(fd, packfile.HEADER.size))
    except CorruptPack:
        return 0
    finally:
        os.close(fd)


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


def _remove_empty_dir(folder: Path) -> None:
    try:
        folder.rmdir()
    except OSError:
        pass  # not empty, or already gone
