"""The cache folder on disk: where things live in it, and the only ways in.

    <root>/ns/<namespace>/namespace.msgpack     what the namespace stands for; mtime = last use
    <root>/ns/<namespace>/<g[:2]>/<group>/<digest>.fcp
    <root>/media/<k[:2]>/<k>.msgpack            remembered media identities
    <root>/quarantine/                          packs set aside as bad
    <root>/locks/                               claims (one pruner at a time)
    <root>/hits/                                the hits each tier served, a file a process (tier_hits.py)

`CacheFolder` names these places and reaches them without ever following a symlink: `inside` is
the one way to a folder below the root (a symlink or a file standing where a folder belongs is set
aside), group folders are listed and files are read with O_NOFOLLOW where the OS has it, and only
regular files within a size limit are read. A bad file is moved into quarantine/ (`set_aside`) and
reported once. The read and write path (`cache.FaceCache`), eviction and inspection all build on it.
"""

from __future__ import annotations

import errno
import logging
import os
import re
import secrets
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

from facecache.errors import CorruptPack
from facecache.fingerprint import is_digest
from facecache.files import DIR_FD, NOFOLLOW, OPEN_READ
from facecache.permissions import Permissions, make_dir, permissions_for
from facecache.store import packfile

log = logging.getLogger("facecache.cache")

PACK_SUFFIX = ".fcp"
NAMESPACE_FILE = "namespace.msgpack"
MAX_RECORD_BYTES = 64 * 1024  # a namespace description or a remembered record
PACK_NAME = re.compile(r"^[0-9a-f]{32}\.fcp\Z")  # \Z: "$" would also accept a trailing newline
FANOUT_NAME = re.compile(r"^[0-9a-f]{2}\Z")
# The folders the cache manages under its root; quarantine first, where the others' stand-ins go.
SUBFOLDERS = ("quarantine", "ns", "media", "locks")
HITS_FOLDER = "hits"  # made when a job first keeps its hits (tier_hits.py)


@dataclass
class IOCounters:
    """What this cache object did on disk (the benchmark reads it)."""

    files_opened: int = 0
    bytes_read: int = 0
    packs_written: int = 0
    bytes_written: int = 0


@dataclass(frozen=True)
class PackInfo:
    path: Path
    namespace: str
    size: int
    mtime: float


class CacheFolder:
    """One cache folder: its places, and safe ways to list them, read from them and set bad files aside.

    `storing` says whether this object may change the folder: while it is off, a symlink standing
    where a folder belongs is reported and avoided, not set aside."""

    def __init__(self, root: str | os.PathLike, storing: bool):
        self.root = Path(root).absolute()
        self.io = IOCounters()
        self.storing = storing
        self._reported: set[str] = set()
        self.warnings: list[str] = []  # said once each in the log, and in the job's summary (`cache_warning`)
        self.perms: Permissions = permissions_for(self.root)

    # -- places ---------------------------------------------------------------------------------

    def group_dir(self, namespace_key: str, group: str) -> Path:
        if not (is_digest(namespace_key) and is_digest(group)):
            raise ValueError("namespace and group keys must be 32 hex digits")
        return self.root / "ns" / namespace_key / group[:2] / group

    def real_group_dir(self, namespace_key: str, group: str, check_group: bool = True) -> Path | None:
        """group_dir, after setting aside a symlink standing in for `ns/`, the namespace, fan-out or
        group folder (`inside`): through one, packs outside the cache would be read, written or deleted;
        None when one stays there.
        Readers pass check_group=False and open the group folder with O_NOFOLLOW instead
        (one network round trip less per group)."""
        folder = self.group_dir(namespace_key, group)
        safe = self.inside("ns", namespace_key, group[:2], *((group,) if check_group else ()))
        return folder if safe is not None else None

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
                self.report_once(path, f"{path} is a symlink (or a file) where a folder of the cache belongs: "
                                 "nothing is read or written through it; remove it")
                return None
            break
        return path

    # -- listing and reading --------------------------------------------------------------------

    def list_group(self, folder: Path) -> tuple[list[str], int | None] | None:
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

    def subfolders(self, folder: Path) -> Iterator[os.DirEntry]:
        """The folders in a folder of the cache; a symlink among them is reported (once) and left alone."""
        for entry in scan(folder):
            if entry.is_symlink():
                self.report_once(Path(entry.path), f"left alone: {entry.path} is a symlink inside the cache "
                                 "(`facecache cache verify` sets it aside)")
            elif entry.is_dir(follow_symlinks=False) and not entry.name.startswith("."):
                yield entry

    def iter_packs(self) -> Iterator[PackInfo]:
        """Every pack file (by name pattern) under ns/, without following symlinks."""
        for ns_entry in self.subfolders(self.root / "ns"):
            if not is_digest(ns_entry.name):
                continue
            for fan in self.subfolders(Path(ns_entry.path)):
                if not FANOUT_NAME.match(fan.name):
                    continue
                for group in self.subfolders(Path(fan.path)):
                    for entry in scanfiles(Path(group.path)):
                        if PACK_NAME.match(entry.name):
                            try:
                                info = entry.stat(follow_symlinks=False)
                            except FileNotFoundError:
                                continue  # removed meanwhile (a writer merged it away, a pruner)
                            yield PackInfo(Path(entry.path), ns_entry.name, info.st_size, info.st_mtime)

    def read_file(self, path: Path, limit: int = packfile.MAX_PACK_BYTES) -> bytearray:
        """Read a regular file whole, never following a symlink, within a size limit."""
        return self.read_file_stat(path, limit)[0]

    def read_file_stat(self, path: Path, limit: int = packfile.MAX_PACK_BYTES,
                       dir_fd: int | None = None) -> tuple[bytearray, os.stat_result]:
        """`read_file`, also giving the open file's stat; with `dir_fd`, the file is opened by
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

    # -- bad files -------------------------------------------------------------------------------

    def set_aside(self, path: Path, reason: str) -> None:
        """Move a bad file into quarantine/ so it is never read again; log once."""
        self.report_once(path, f"set aside {path}: {reason}")
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
                self.report_once(folder, f"moved {folder} to {aside}: a symlink (or a file) where the cache's "
                                 "quarantine folder belongs; what it points to was not touched")
                os.rename(folder, aside)
        except OSError:
            pass  # missing (made below), or moved by someone else
        try:
            make_dir(folder, self.perms)
        except OSError:
            pass  # the rename into it then fails, and the file is simply not read again
        return folder

    def report_once(self, path: Path, message: str) -> None:
        if str(path) not in self._reported:
            self._reported.add(str(path))
            self.warn(message)

    def warn(self, message: str) -> None:
        """Said in the log (the command line's stderr) and kept for the job's summary, which is all an editor
        in Blender sees of the engine."""
        log.warning(message)
        self.warnings.append(message)


def scan(folder: Path) -> list[os.DirEntry]:
    """The entries of a folder; none when it does not exist, is not a folder or is a symlink (whose
    entries are outside the cache)."""
    if os.path.islink(folder):
        return []
    try:
        return list(os.scandir(folder))
    except (FileNotFoundError, NotADirectoryError):
        return []


def scanfiles(folder: Path) -> Iterator[os.DirEntry]:
    for entry in scan(folder):
        if not entry.is_dir(follow_symlinks=False):
            yield entry


def entry_count(path: Path) -> int:
    """The number of records a pack holds, from its header (0 when it cannot be read)."""
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
