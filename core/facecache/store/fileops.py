"""File operations that stay safe on network filesystems."""

from __future__ import annotations

import errno
import os
import secrets
import shutil
import stat
from pathlib import Path

DOOMED_PREFIX = ".del-"


def delete_file(path: Path) -> None:
    """Rename first, then unlink: unlink is not atomic on NFS (a reader once got a truncated
    object), a rename is. A file already gone is fine."""
    doomed = path.with_name(f"{DOOMED_PREFIX}{secrets.token_hex(6)}")
    try:
        os.rename(path, doomed)
    except FileNotFoundError:
        return
    try:
        os.unlink(doomed)
    except FileNotFoundError:
        pass


def unlink_quietly(path: Path) -> None:
    """Remove a file of our own that nobody else reads (a temp file after a failed write); a file
    already gone, or a share gone too, is fine."""
    try:
        os.unlink(path)
    except OSError:
        pass


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
            os.rename(entry.path, doomed)
        except FileNotFoundError:
            continue
        if stat.S_ISDIR(os.lstat(doomed).st_mode):
            shutil.rmtree(doomed, ignore_errors=True)
        else:
            os.unlink(doomed)
