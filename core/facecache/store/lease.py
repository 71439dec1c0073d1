"""Exclusive claims with an expiry, portable to network filesystems.

POSIX and flock locks are unreliable on NFS and sshfs, so a claim is a small
file created with O_EXCL that names its owner and an expiry time. A claim whose
owner died stops being renewed and expires; the next claimant takes it over by
renaming it away first (only one rename of a given name can succeed), so a
stale claim is never waited on forever.
"""

from __future__ import annotations

import os
import secrets
import socket
import time
from pathlib import Path

import msgpack

from facecache.store.permissions import Permissions

_MAX_CLAIM_BYTES = 4096


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
                fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, perms.file_mode)
            except FileExistsError:
                if not _is_stale(path):
                    return None
                _remove_stale(path)
                continue
            try:
                os.fchmod(fd, perms.file_mode)
                os.write(fd, _claim_bytes(owner, ttl))
            finally:
                os.close(fd)
            return cls(path, owner, ttl, perms)
        return None

    def held(self) -> bool:
        """True while the claim file is still ours (not taken over after expiry)."""
        claim = _read_claim(self.path)
        return claim is not None and claim.get("owner") == self.owner

    def renew(self) -> bool:
        """Extend the expiry; False when the claim was lost meanwhile."""
        if not self.held():
            return False
        tmp = self.path.with_name(f".tmp-{secrets.token_hex(8)}-{os.getpid()}")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, self._perms.file_mode)
        try:
            os.fchmod(fd, self._perms.file_mode)
            os.write(fd, _claim_bytes(self.owner, self.ttl))
        finally:
            os.close(fd)
        os.replace(tmp, self.path)
        return True

    def release(self) -> None:
        if self.held():
            _remove_stale(self.path)

    def __enter__(self) -> "Lease":
        return self

    def __exit__(self, *exc) -> None:
        self.release()


def _claim_bytes(owner: str, ttl: float) -> bytes:
    return msgpack.packb({"owner": owner, "expires": time.time() + ttl})


def _read_claim(path: Path) -> dict | None:
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
    except OSError:
        return None
    try:
        data = os.read(fd, _MAX_CLAIM_BYTES + 1)
    finally:
        os.close(fd)
    try:
        claim = msgpack.unpackb(data, raw=False, strict_map_key=True)
    except Exception:
        return None
    return claim if isinstance(claim, dict) else None


def _is_stale(path: Path) -> bool:
    claim = _read_claim(path)
    if claim is not None and isinstance(claim.get("expires"), (int, float)):
        return claim["expires"] < time.time()
    # Unreadable (a writer died between create and write): judge by its age.
    try:
        return path.lstat().st_mtime + 60 < time.time()
    except FileNotFoundError:
        return True


def _remove_stale(path: Path) -> None:
    doomed = path.with_name(f".del-{secrets.token_hex(8)}")
    try:
        os.rename(path, doomed)
    except FileNotFoundError:
        return
    try:
        os.unlink(doomed)
    except FileNotFoundError:
        pass
