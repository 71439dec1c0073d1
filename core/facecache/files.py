"""General file I/O for the whole engine, safe on network filesystems and on Windows. Used by the cache
(store/), the model installer (models/), the swap outputs (jobs/) and the GPU runtime (gpu/).

- the one writer: a temp file beside the target (`temp_name`), then a rename: `write_atomic` replaces,
  `write_once` keeps a file already there (the cache's packs, named by their content); temp files of
  writers that died are cleaned up (`remove_leftover_temp_files`);
- renames, replaces and deletes that wait a moment while another process on Windows holds a file open,
  and deletes that rename first (unlink is not atomic on NFS);
- folders made with their mode whatever the umask, emptied without following a symlink; a bad file set aside;
- the one hasher: a file's (or bytes') content digest, and SHA-256 or crc32 in the same read (`hash_file`).
"""

from __future__ import annotations

import errno
import hashlib
import os
import re
import secrets
import shutil
import stat
import time
import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

import xxhash

from facecache.errors import SHARING_VIOLATIONS, in_use
from facecache.permissions import permissions_for
from facecache.processes import host_tag, local_process_is_gone

DOOMED_PREFIX = ".del-"


# -- renames and deletes that wait out a reader on Windows ------------------------------------------

# Windows refuses to rename, replace or delete a file that another process holds open (Python opens
# files without FILE_SHARE_DELETE): a sharing or lock violation, or "access denied" for a rename onto
# an open file. Such holds are brief (a teammate's job reading a pack, Blender reading an overlay, a
# virus scanner), so those errors are retried for about 1.5 s before they count.
_HELD_OPEN = (5, *SHARING_VIOLATIONS)  # ERROR_ACCESS_DENIED too: a rename or replace onto an open file
_HELD_OPEN_PAUSES = (0.05, 0.1, 0.2, 0.4, 0.8)


def _retry_while_held_open(operation, *paths) -> None:  # os.rename or os.replace
    for pause in _HELD_OPEN_PAUSES:
        try:
            return operation(*paths)
        except PermissionError as exc:
            if getattr(exc, "winerror", None) not in _HELD_OPEN:
                raise
            time.sleep(pause)
    return operation(*paths)


def replace_file(source: Path, target: Path) -> None:
    """os.replace, waiting a moment while another process on Windows holds `target` open."""
    _retry_while_held_open(os.replace, source, target)


def rename_path(source: Path, target: Path) -> None:
    """os.rename (FileExistsError on Windows when `target` exists), waiting a moment while another
    process on Windows holds `source` (or a file in that folder) open."""
    _retry_while_held_open(os.rename, source, target)


def delete_file(path: Path) -> bool:
    """Rename first, then unlink: unlink is not atomic on NFS (a reader once got a truncated
    object), a rename is. A file already gone is fine. False when the file stays because another
    process on Windows still holds it open: the caller leaves it for a later pass."""
    doomed = path.with_name(f"{DOOMED_PREFIX}{secrets.token_hex(6)}")
    try:
        rename_path(path, doomed)
    except FileNotFoundError:
        return True
    except PermissionError as exc:
        if in_use(exc):
            return False
        raise
    try:
        os.unlink(doomed)
    except FileNotFoundError:
        pass
    return True


def unlink_quietly(path: Path) -> None:
    """Remove a file of our own that nobody else reads (a temp file after a failed write); a file
    already gone, or a share gone too, is fine."""
    try:
        os.unlink(path)
    except OSError:
        pass


# -- opening files, the same everywhere -------------------------------------------------------------

# Flags for os.open that mean the same everywhere. Windows has no O_NOFOLLOW, O_NONBLOCK or
# O_DIRECTORY (symlinks are then refused by an lstat check instead) and needs O_BINARY, or reads
# and writes translate line endings and damage every pack.
NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
OPEN_READ = os.O_RDONLY | NOFOLLOW | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_BINARY", 0)
OPEN_NEW = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0)
# Opening a folder and the files in it through its descriptor (one lookup, no symlink race).
DIR_FD = os.open in os.supports_dir_fd and os.scandir in os.supports_fd and hasattr(os, "O_DIRECTORY")


def create_new(path: Path, mode: int) -> int:
    """Create `path` exclusively and return its descriptor; FileExistsError when it exists.
    sshfs reports the loser of two simultaneous exclusive creates as EPERM (SFTP's generic
    failure), not EEXIST: seen on 273 of 300 races across two mounts. A refusal while the file
    now exists is that lost race; where it does not exist, it is a real permission fault."""
    try:
        return os.open(path, OPEN_NEW, mode)
    except PermissionError as exc:
        if exc.errno == errno.EPERM and os.path.lexists(path):
            raise FileExistsError(errno.EEXIST, os.strerror(errno.EEXIST), str(path)) from None
        raise


def set_mode(fd: int, path: Path, mode: int) -> None:
    """chmod an open file (by descriptor where the OS can; Windows before Python 3.13 cannot)."""
    if hasattr(os, "fchmod"):
        os.fchmod(fd, mode)
    else:
        os.chmod(path, mode)


# -- the one writer: a temp file beside the target, then a rename ------------------------------------

_CHUNK = 1024 * 1024
TEMP_MARK = ".tmp-"
# temp_name's names: `.<target>.tmp-<host tag>-<pid>-<random>` (the cache's: `.tmp-<host tag>-...`).
_TEMP_NAME = re.compile(r"\..+\.tmp-(?P<host>[0-9a-f]{8})-(?P<pid>[0-9]+)-[a-z0-9_]+")
# No single write takes this long: a temp file this old was left by a writer on another machine
# that died (on this machine a dead writer's files are known at once).
LEFTOVER_TEMP_SECONDS = 3600.0


def temp_name(target: str = "") -> str:
    """The name of a temp file that becomes `target` once complete: `.<target>.tmp-<host tag>-<pid>-<random>`,
    unique among the writers of every machine that shares the folder, and naming its writer so that
    `remove_leftover_temp_files` knows a dead one's at once. The cache's packs are named by their content,
    so their temp files name no target: `.tmp-<host tag>-<pid>-<random>` (its `verify` knows them by
    `TEMP_MARK`)."""
    return f"{'.' + target if target else ''}{TEMP_MARK}{host_tag()}-{os.getpid()}-{secrets.token_hex(6)}"


def write_atomic(dest: Path, source: BinaryIO | bytes, mode: int = 0o644, durable: bool = True) -> Path:
    """Write `source` to a temp file beside `dest`, fsync it (unless not `durable`), set its mode, then
    rename it onto `dest` (waiting a moment while a reader on Windows holds the old one open).

    Readers never see a half-written file; a crash leaves only a `.<name>.tmp-*` file behind,
    which `remove_leftover_temp_files` cleans up. Without the fsync a power cut may leave `dest`
    empty: only for files whose readers check them and can remake them.
    """
    dest = Path(dest)
    make_folders(dest.parent)
    temp = _write_temp(dest.parent / temp_name(dest.name), source, mode, durable)
    try:
        replace_file(temp, dest)
    except BaseException:
        unlink_quietly(temp)
        raise
    return dest


def write_once(folder: Path, name: str, data: bytes, mode: int) -> bool:
    """`write_atomic` for a file named by its content (the cache's packs): a file of that name already
    holds these bytes, so it is never replaced. The temp file is fsynced before the rename and the
    folder after it, so the new name itself is durable too. False when the file was there first, or
    another writer's rename won the race (POSIX replaces the identical file; Windows refuses)."""
    target = folder / name
    temp = _write_temp(folder / temp_name(), data, mode, durable=True)
    try:
        if os.path.lexists(target):  # another writer won the race with identical content
            delete_file(temp)
            return False
        try:
            os.rename(temp, target)
        except FileExistsError:
            unlink_quietly(temp)
            return False
    except BaseException:
        unlink_quietly(temp)  # a full disk or a lost share must not leave the temp file behind
        raise
    _fsync_folder(folder)
    return True


def _write_temp(temp: Path, source: BinaryIO | bytes, mode: int, durable: bool) -> Path:
    """Create `temp` exclusively, its mode set whatever the umask (in a team folder the group must read
    it), write `source` (bytes, or a binary stream read in chunks) whole, and fsync it when `durable`.
    Nothing is left behind when that fails."""
    fd = create_new(temp, mode)
    try:
        try:
            set_mode(fd, temp, mode)
            chunks = [source] if isinstance(source, (bytes, bytearray, memoryview)) else \
                iter(lambda: source.read(_CHUNK), b"")
            for chunk in chunks:
                view = memoryview(chunk)
                while view:  # a short write: the rest, until the disk says it is full
                    view = view[os.write(fd, view):]
            if durable:
                os.fsync(fd)  # the OS may reorder the data and the rename
        finally:
            os.close(fd)
    except BaseException:
        unlink_quietly(temp)
        raise
    return temp


def _fsync_folder(folder: Path) -> None:
    try:
        fd = os.open(folder, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass  # some filesystems (and Windows) cannot fsync a folder: the rename is still atomic
    finally:
        os.close(fd)


def remove_leftover_temp_files(folder: Path, older_than: float = LEFTOVER_TEMP_SECONDS) -> int:
    """Delete temp files in `folder` (`temp_name`'s, with a target) whose writer died: a process of this machine
    that no longer exists, or any writer when the file is older than `older_than` seconds.
    Temp files of live writers (other jobs, other threads of this one) are left alone.
    Returns how many were removed."""
    removed = 0
    try:
        entries = list(os.scandir(folder))
    except OSError:
        return 0
    mine = host_tag()
    for entry in entries:
        match = _TEMP_NAME.fullmatch(entry.name)
        if match is None:
            continue
        try:
            dead = match["host"] == mine and local_process_is_gone(int(match["pid"]))
            if dead or entry.stat(follow_symlinks=False).st_mtime < time.time() - older_than:
                os.unlink(entry.path)
                removed += 1
        except OSError:  # gone meanwhile, or not ours to delete
            continue
    return removed



# -- folders ---------------------------------------------------------------------------------------

def make_folders(folder: Path) -> None:
    """Create `folder` and its missing parents with their mode set whatever the umask (under umask 000
    `mkdir` made the models folder 0777: anyone could replace a model): readable by all, changed only by
    their owner (0755), or by the group too inside a team folder (2775, as `facecache.permissions` decides;
    models hold no faces, so they need not be private). Existing folders keep their mode."""
    missing = []
    folder = Path(folder)
    while not os.path.isdir(folder) and folder != folder.parent:
        missing.append(folder)
        folder = folder.parent
    for path in reversed(missing):
        mode = 0o2775 if permissions_for(path).shared else 0o755
        try:
            os.mkdir(path, mode & 0o777)
        except FileExistsError:
            continue
        os.chmod(path, mode)


def empty_folder(folder: Path) -> None:
    """Remove everything in `folder`, never following a symlink: the folder is opened once without
    following one (where the OS can) and every entry is renamed, then removed, through that open
    folder, so an entry swapped for a symlink meanwhile is removed as the link it is. Subfolders are
    removed by shutil.rmtree, which does not follow symlinks either (`avoids_symlink_attacks`)."""
    if not (DIR_FD and shutil.rmtree.avoids_symlink_attacks):
        return _empty_folder_by_path(folder)
    try:
        fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY | NOFOLLOW)
    except FileNotFoundError:
        return
    try:
        with os.scandir(fd) as scan:
            entries = [(entry.name, entry.is_dir(follow_symlinks=False)) for entry in scan]
        for name, is_dir in entries:
            doomed = f"{DOOMED_PREFIX}{secrets.token_hex(6)}"
            try:
                os.rename(name, doomed, src_dir_fd=fd, dst_dir_fd=fd)
            except FileNotFoundError:
                continue
            if is_dir:
                shutil.rmtree(doomed, dir_fd=fd, ignore_errors=True)
            else:
                os.unlink(doomed, dir_fd=fd)
    finally:
        os.close(fd)


def _empty_folder_by_path(folder: Path) -> None:
    """`empty_folder` where folders cannot be opened (Windows): each entry checked without following it."""
    if os.path.islink(folder) or not os.path.isdir(folder):
        return
    for entry in os.scandir(folder):
        doomed = Path(folder) / f"{DOOMED_PREFIX}{secrets.token_hex(6)}"
        try:
            rename_path(entry.path, doomed)
        except FileNotFoundError:
            continue
        if stat.S_ISDIR(os.lstat(doomed).st_mode):
            shutil.rmtree(doomed, ignore_errors=True)
        else:
            os.unlink(doomed)


def touch(path: Path) -> None:
    """Set a file's mtime to now, never through a symlink. Windows' os.utime cannot leave a link
    alone (NotImplementedError), so there a link is checked for first and left as it is."""
    if os.utime in os.supports_follow_symlinks:
        os.utime(path, follow_symlinks=False)
    elif not os.path.islink(path):
        os.utime(path)


def folder_bytes(folder: str | os.PathLike) -> int:
    """Bytes of the regular files under `folder` (a walk; no file is opened, links are not followed)."""
    total = 0
    for dirpath, _dirs, files in os.walk(folder):
        for name in files:
            try:
                total += os.lstat(os.path.join(dirpath, name)).st_size
            except FileNotFoundError:
                continue
    return total


def set_aside(path: Path) -> Path:
    """Rename a bad file to `NAME.corrupt` (or `NAME.corrupt-2`, ...) beside it, so nothing uses it
    again and the user can still look at it. Returns the new path."""
    path = Path(path)
    for n in range(1, 1000):
        target = path.with_name(f"{path.name}.corrupt" if n == 1 else f"{path.name}.corrupt-{n}")
        if not target.exists():
            os.replace(path, target)
            return target
    raise OSError(f"too many set-aside copies of {path}; delete the {path.name}.corrupt* files beside it")


# -- the one hasher ---------------------------------------------------------------------------------

@dataclass(frozen=True)
class FileHashes:
    size: int
    digest: str  # XXH3-128, the engine's content digest (facecache.fingerprint.file_digest)
    sha256: str = ""
    crc32: str = ""


def hash_file(path: str | os.PathLike, sha256: bool = False, crc32: bool = False) -> FileHashes:
    """Read a file once and return its content digest, plus SHA-256 and/or crc32 when asked."""
    with open(path, "rb") as handle:
        return _hash_chunks(iter(lambda: handle.read(_CHUNK), b""), sha256, crc32)


def hash_bytes(data: bytes, sha256: bool = False, crc32: bool = False) -> FileHashes:
    """`hash_file` for bytes already in memory."""
    return _hash_chunks([data], sha256, crc32)


def _hash_chunks(chunks, sha256: bool, crc32: bool) -> FileHashes:
    xxh = xxhash.xxh3_128()
    sha = hashlib.sha256() if sha256 else None
    crc = 0
    size = 0
    for chunk in chunks:
        size += len(chunk)
        xxh.update(chunk)
        if sha is not None:
            sha.update(chunk)
        if crc32:
            crc = zlib.crc32(chunk, crc)
    return FileHashes(size, xxh.hexdigest(), sha.hexdigest() if sha else "",
                      format(crc & 0xFFFFFFFF, "08x") if crc32 else "")
