"""Exclusive claims with an expiry, portable to network filesystems.

POSIX and flock locks are unreliable on NFS and sshfs, so a claim is a small
file created with O_EXCL that names its owner (host:pid) and an expiry time. A claim whose
owner died stops being renewed and expires (at once when the owner was a process on this
same machine that no longer exists); the next claimant takes it over, so
a stale claim is never waited on forever. Several claimants may find the same
stale claim at once: a rename alone does not settle it (by the time a slow one
renames, the file may be the winner's fresh claim), so only the claimant that
creates, with O_EXCL, a takeover marker named after that very claim removes it;
the others are busy.
"""

from __future__ import annotations

import errno
import os
import secrets
import socket
import time
from pathlib import Path

import msgpack
import xxhash

from facecache.errors import in_use
from facecache.files import (DOOMED_PREFIX, LEFTOVER_TEMP_SECONDS, OPEN_READ, TEMP_MARK, create_new, delete_file,
                             remove_leftover_temp_files, set_mode, unlink_quietly, write_atomic)
from facecache.permissions import Permissions
from facecache.processes import local_process_is_gone

_MAX_CLAIM_BYTES = 4096
_TAKEOVER_PREFIX = ".takeover-"
_TAKEOVER_KEEP_SECONDS = 24 * 3600
_LEASE_SUFFIXES = (".claim", ".lease", ".lock")
_DOOMED_KEEP_SECONDS = 60.0  # a takeover renames a claim to .del-* and reads it back at once


class Lease:
    """A held claim; `renew()` pushes its expiry forward, `release()` drops it."""

    def __init__(self, path: Path, owner: str, ttl: float, perms: Permissions):
        self.path = path
        self.owner = owner
        self.ttl = ttl
        self._perms = perms

    @classmethod
    def acquire(cls, path: Path, ttl: float, perms: Permissions) -> "Lease | None":
        """Take the claim at `path`, or return None while someone else holds it."""
        owner = f"{socket.gethostname()}:{os.getpid()}:{secrets.token_hex(4)}"
        for _ in range(3):
            try:
                fd = create_new(path, perms.file_mode)
            except FileExistsError:
                if not _take_over_if_stale(path, perms):
                    return None
                continue
            try:
                try:
                    set_mode(fd, path, perms.file_mode)
                    _write_all(fd, _claim_bytes(owner, ttl), path)
                finally:
                    os.close(fd)
            except BaseException:
                unlink_quietly(path)  # an empty claim would look held for a minute
                raise
            return cls(path, owner, ttl, perms)
        return None

    def held(self) -> bool:
        """True while the claim file is still ours (not taken over after expiry)."""
        claim = _read_claim(self.path)
        return claim is not None and claim.get("owner") == self.owner

    def renew(self) -> bool:
        """Extend the expiry; False when the claim was lost meanwhile. A renewal that fails (a full
        disk, a lost share) leaves no temp file behind."""
        if not self.held():
            return False
        # a contender reading the claim holds it open for a moment (Windows): write_atomic waits for it
        write_atomic(self.path, _claim_bytes(self.owner, self.ttl), mode=self._perms.file_mode, durable=False)
        return True

    def release(self) -> None:
        if self.held():
            delete_file(self.path)

    def __enter__(self) -> "Lease":
        return self

    def __exit__(self, *exc) -> None:
        self.release()


def _write_all(fd: int, data: bytes, path: Path) -> None:
    if os.write(fd, data) != len(data):  # a short write: the disk filled up
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(path))


def _claim_bytes(owner: str, ttl: float) -> bytes:
    return msgpack.packb({"owner": owner, "expires": time.time() + ttl})


def _read_bytes(path: Path) -> tuple[bytes, os.stat_result] | None:
    """Raw claim bytes and the file's stat, or None when there is no file. Something that
    is not a readable claim (symlink, socket, folder) reads as empty: judged by its age."""
    try:
        fd = os.open(path, OPEN_READ)  # O_NONBLOCK: a FIFO must not block
    except FileNotFoundError:
        return None
    except OSError:
        try:
            return b"", os.lstat(path)
        except OSError:
            return None
    try:
        try:
            data = os.read(fd, _MAX_CLAIM_BYTES + 1)
        except OSError:
            data = b""
        return data, os.fstat(fd)
    finally:
        os.close(fd)


def _parse_claim(data: bytes) -> dict | None:
    try:
        claim = msgpack.unpackb(data, raw=False, strict_map_key=True)
    except Exception:
        return None
    return claim if isinstance(claim, dict) else None


def _read_claim(path: Path) -> dict | None:
    read = _read_bytes(path)
    return None if read is None else _parse_claim(read[0])


def _is_stale(data: bytes, info: os.stat_result) -> bool:
    claim = _parse_claim(data)
    if claim is not None and _owner_is_dead(claim.get("owner")):
        return True
    if claim is not None and isinstance(claim.get("expires"), (int, float)):
        return claim["expires"] < time.time()
    # Unreadable (a writer died between create and write): judge by its age.
    return info.st_mtime + 60 < time.time()


def _owner_is_dead(owner) -> bool:
    """True when the claim's owner was a process on this machine that no longer exists, so a
    rerun after a crash need not wait for the expiry. Owners on other machines are judged by
    the expiry alone."""
    if not isinstance(owner, str):
        return False
    host, _, rest = owner.partition(":")
    pid_text = rest.partition(":")[0]
    return host == socket.gethostname() and pid_text.isdigit() and local_process_is_gone(int(pid_text))


def _take_over_if_stale(path: Path, perms: Permissions) -> bool:
    """Remove the claim at `path` if it is stale and we win the right to; True means
    "try to create the claim again", False means "someone holds it (or is taking it over)"."""
    read = _read_bytes(path)
    if read is None:
        return True  # gone meanwhile
    data, info = read
    if not _is_stale(data, info):
        return False
    # One marker per stale claim (its inode, mtime and content): one taker per claim.
    key = xxhash.xxh3_64_hexdigest(b"%d:%d:%d:" % (info.st_dev, info.st_ino, info.st_mtime_ns) + data)
    try:
        os.close(create_new(path.with_name(_TAKEOVER_PREFIX + key), perms.file_mode))
    except FileExistsError:
        return False
    doomed = path.with_name(f"{DOOMED_PREFIX}{secrets.token_hex(8)}")
    try:
        os.rename(path, doomed)
    except FileNotFoundError:
        return True
    except PermissionError as exc:
        if in_use(exc):  # a contender reads it this very moment (Windows): try again later
            return False
        raise
    moved = _read_bytes(doomed)
    if moved is None or moved[0] != data:
        # Not the claim we judged (its owner released it and a new claim appeared): put it back.
        try:
            os.link(doomed, path)
        except OSError:
            pass
    try:
        os.unlink(doomed)
    except OSError:
        pass
    _forget_old_markers(path.parent)
    return moved is not None and moved[0] == data


def _forget_old_markers(folder: Path) -> None:
    """Markers only matter while contenders of that takeover may still act on it."""
    try:
        entries = list(os.scandir(folder))
    except OSError:
        return
    for entry in entries:
        if entry.name.startswith(_TAKEOVER_PREFIX):
            try:
                if entry.stat(follow_symlinks=False).st_mtime + _TAKEOVER_KEEP_SECONDS < time.time():
                    os.unlink(entry.path)
            except OSError:
                pass


def remove_stale(folder: Path, perms: Permissions) -> int:
    """Clean a folder of leases (`locks/`, `locks/claims/`): expired claims and leases of dead holders,
    temp files of renewals that failed or whose writer died, and other leftovers. Live claims are left
    alone. Returns how many files were removed."""
    try:
        entries = list(os.scandir(folder))
    except OSError:
        return 0
    removed = remove_leftover_temp_files(folder)
    now = time.time()
    for entry in entries:
        try:
            if entry.name.endswith(_LEASE_SUFFIXES) and not entry.name.startswith("."):
                removed += _take_over_if_stale(Path(entry.path), perms)  # False while its holder lives
            elif entry.name.startswith((DOOMED_PREFIX, TEMP_MARK)):  # renewals before temp names had a host
                keep = _DOOMED_KEEP_SECONDS if entry.name.startswith(DOOMED_PREFIX) else LEFTOVER_TEMP_SECONDS
                if entry.stat(follow_symlinks=False).st_mtime < now - keep:
                    os.unlink(entry.path)
                    removed += 1
        except OSError:
            continue  # gone meanwhile, or not ours to remove
    _forget_old_markers(folder)
    return removed
