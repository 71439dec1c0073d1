"""Exceptions whose messages tell the user what to do next, and the one mapping of operating-system
faults (permission denied, read-only file system, disk full, ...) to such messages and exit codes.

Standard library only: the Blender add-on imports this module in Blender's own process.

Exit codes of `facecache` (and `"exit_code"` of the worker's error messages):

    0    done
    1    done, but something was found bad (`cache verify`, files refused by `models import`)
    2    bad input or set-up: an option or value, a missing model or media file, a damaged model
    3    permission denied (EACCES, EPERM)
    4    read-only file system (EROFS)
    5    no space left on the device, or the disk quota is used up (ENOSPC, EDQUOT)
    6    a path that cannot be used: not a folder, a folder where a file belongs, a name too long,
         a symlink loop (ENOTDIR, EISDIR, ENAMETOOLONG, ELOOP, EEXIST)
    7    any other input/output error (EIO, a network share gone, ...)
    130  interrupted (Ctrl-C); finished work is kept
    141  the output pipe was closed (`| head`); ends quietly, like a process stopped by SIGPIPE
"""

from __future__ import annotations

import errno
import os
from pathlib import Path

EXIT_FOUND_BAD = 1
EXIT_USAGE = 2
EXIT_PERMISSION = 3
EXIT_READ_ONLY = 4
EXIT_NO_SPACE = 5
EXIT_BAD_PATH = 6
EXIT_IO = 7
EXIT_INTERRUPTED = 130
EXIT_CLOSED_PIPE = 141


class FaceCacheError(Exception):
    """Base class of every error the engine reports to a user."""

    exit_code = EXIT_USAGE


class CacheError(FaceCacheError):
    """The cache location cannot be used as given (a file where the folder belongs)."""

    exit_code = EXIT_BAD_PATH


class CorruptPack(FaceCacheError):
    """A pack file failed a check; the cache treats it as a miss and sets it aside."""


class ModelError(FaceCacheError):
    """A model (or a file fetched from a package index) cannot be used."""


class ModelMissing(ModelError):
    """A model is not installed; the message names the install command."""


class ModelCorrupt(ModelError):
    """A model file failed its hash check; it has been set aside or deleted."""


class ModelRefused(ModelCorrupt):
    """A file is not the model its name claims (junk, wrong contract, a symlink leaving its folder);
    it is left in place and not used. `reason` says why in a short clause."""

    def __init__(self, message: str, reason: str):
        super().__init__(message)
        self.reason = reason


class ModelChanged(ModelError):
    """A model file's bytes no longer match the digest it was checked with (changed in place)."""


class DownloadError(ModelError):
    """A download (from a package index or a model URL) failed."""


class Cancelled(FaceCacheError):
    """The job was cancelled (the add-on's Cancel, through the engine session); the message says what is kept."""


class Interrupted(FaceCacheError):
    """Ctrl-C (SIGINT) stopped the command; the message says what was kept and what was removed."""

    exit_code = EXIT_INTERRUPTED


class BadValue(FaceCacheError, ValueError):
    """A value given by the user is out of its range; the message names the allowed range."""


# errno -> (exit code, what happened, what to do). Several errnos share a line.
_PERMISSION = (EXIT_PERMISSION, "permission denied",
               "ask the folder's owner for write access (or add yourself to its group), or choose another folder")
_FAULTS: dict[int, tuple[int, str, str]] = {
    errno.EACCES: _PERMISSION,
    errno.EPERM: _PERMISSION,
    errno.EROFS: (EXIT_READ_ONLY, "read-only file system",
                  "choose a folder on a writable disk (or remount this one read-write)"),
    errno.ENOSPC: (EXIT_NO_SPACE, "no space left on the device",
                   "free some space (`facecache cache prune` shrinks the cache) or choose a folder on another disk"),
    errno.ENOTDIR: (EXIT_BAD_PATH, "it (or a folder above it) is a file, not a folder", "choose a folder path"),
    errno.EISDIR: (EXIT_BAD_PATH, "this is a folder, where a file was expected", "choose another path"),
    errno.EEXIST: (EXIT_BAD_PATH, "something else already exists at this path", "move it away or choose another path"),
    errno.ENAMETOOLONG: (EXIT_BAD_PATH, "the path or a name in it is too long",
                         "choose a shorter path (a folder nearer the top of the disk)"),
    errno.ELOOP: (EXIT_BAD_PATH, "too many symbolic links in this path", "fix the links or choose another path"),
    errno.ENOENT: (EXIT_USAGE, "it does not exist", "check the path"),
}
if hasattr(errno, "EDQUOT"):
    _FAULTS[errno.EDQUOT] = (EXIT_NO_SPACE, "your disk quota is used up", _FAULTS[errno.ENOSPC][2])
_OTHER = (EXIT_IO, "input/output error", "check the disk or network share, then run the command again")
# Windows: another process holds the file open (ERROR_SHARING_VIOLATION, ERROR_LOCK_VIOLATION), say a
# teammate's job reading the same cache; Python reports it as a permission error, which it is not.
SHARING_VIOLATIONS = (32, 33)
_IN_USE = (EXIT_IO, "it is in use by another program (another job, or Blender, reading it)",
           "wait until that is done, then run the command again")
# Windows' "access denied" also answers a rename or replace onto a file another program has open.
_ACCESS_DENIED = (EXIT_PERMISSION, "access denied (or the file is open in another program)", _PERMISSION[2])
# Without long paths enabled, Windows refuses paths of 260 characters and more as "not found".
_TOO_LONG = (EXIT_BAD_PATH, "the path is longer than the 260 characters Windows allows",
             "choose a folder nearer the top of the disk, or enable long paths in Windows (LongPathsEnabled)")
_WINDOWS_MAX_PATH = 260


def in_use(exc: BaseException) -> bool:
    """A Windows sharing violation: another process has the file open (never a POSIX error)."""
    return getattr(exc, "winerror", None) in SHARING_VIOLATIONS


def _windows_fault(exc: OSError) -> tuple[int, str, str] | None:
    """What a Windows error code says better than its errno (None on other platforms)."""
    code = getattr(exc, "winerror", None)
    if code in SHARING_VIOLATIONS:
        return _IN_USE
    if code == 5:
        return _ACCESS_DENIED
    if code in (3, 206) and any(len(name) >= _WINDOWS_MAX_PATH for name in _names(exc)):  # not found, too long
        return _TOO_LONG
    return None


def _names(exc: OSError) -> list[str]:
    return [os.fsdecode(name) for name in (exc.filename, exc.filename2) if name is not None]


def _posix_errno(exc: OSError) -> int:
    """The errno POSIX gives for this fault: where a folder in the path is a file, Windows says "path not found"
    (ENOENT) and POSIX ENOTDIR."""
    if getattr(exc, "winerror", None) == 3 and any(parent.is_file() for name in _names(exc)
                                                   for parent in Path(name).parents):
        return errno.ENOTDIR
    return exc.errno or -1


class OSFault(FaceCacheError):
    """An operating-system fault, said in one line: the path, what happened and what to do."""

    def __init__(self, message: str, exit_code: int, errno_: int | None, path: str):
        super().__init__(message)
        self.exit_code = exit_code
        self.errno = errno_
        self.path = path


def os_fault(exc: OSError, doing: str = "", path: str | os.PathLike | None = None, hint: str = "",
             name_file: bool = True) -> OSFault:
    """The one-line message for an OSError. `doing` says what was attempted ("write the cache"),
    `path` the folder it concerns (the file that failed follows in brackets unless `name_file` is
    False), `hint` replaces the generic advice (e.g. the option that chooses another folder)."""
    if isinstance(exc, OSFault):
        return exc
    windows = _windows_fault(exc)
    code, happened, advice = windows or _FAULTS.get(_posix_errno(exc), _OTHER)
    if code == EXIT_IO and exc.strerror:
        happened = exc.strerror.lower()
    failed = "" if exc.filename is None else os.fsdecode(exc.filename) if isinstance(exc.filename, bytes) \
        else str(exc.filename)
    where = os.fsdecode(os.fspath(path)) if path is not None else failed
    if failed and failed != where and name_file:
        where = f"{where} ({failed})"
    parts = [f"cannot {doing}" if doing else "", where]
    head = " ".join(part for part in parts if part) or "file system error"
    if hint and code != EXIT_USAGE and windows in (None, _ACCESS_DENIED):
        advice = f"free some space, or {hint}" if code == EXIT_NO_SPACE else hint
    return OSFault(f"{head}: {happened}; {advice}", code, exc.errno, where)


def exit_code_of(exc: BaseException) -> int:
    """The documented exit code for an error a command ends with."""
    if isinstance(exc, FaceCacheError):
        return exc.exit_code
    if isinstance(exc, OSError):
        return os_fault(exc).exit_code
    return EXIT_USAGE


def is_disk_full(exc: BaseException) -> bool:
    return isinstance(exc, OSError) and exc.errno in (errno.ENOSPC, getattr(errno, "EDQUOT", errno.ENOSPC))


def cannot_write(exc: BaseException) -> bool:
    """Faults that mean "this folder cannot take new files" (as opposed to a damaged file or a bug)."""
    return isinstance(exc, OSError) and not in_use(exc) and exc.errno in (
        errno.EACCES, errno.EPERM, errno.EROFS, errno.ENOSPC, getattr(errno, "EDQUOT", errno.ENOSPC))
