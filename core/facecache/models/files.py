"""Small file helpers shared by the model installer, the sample fetcher and the swap outputs:
hashing, write-then-rename (and cleaning up after writers that died), and setting a bad file
aside."""

from __future__ import annotations

import hashlib
import os
import re
import tempfile
import time
import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

import xxhash

from facecache.processes import host_tag, local_process_is_gone
from facecache.store.permissions import permissions_for

_CHUNK = 1024 * 1024
# write_atomic's temp files: `.<name>.tmp-<host tag>-<pid>-<random>`.
_TEMP_NAME = re.compile(r"\..+\.tmp-(?P<host>[0-9a-f]{8})-(?P<pid>[0-9]+)-[a-z0-9_]+")
# No single write takes this long: a temp file this old was left by a writer on another machine
# that died (on this machine a dead writer's files are known at once).
LEFTOVER_TEMP_SECONDS = 3600.0


def sha256_file(path: str | os.PathLike) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        while chunk := handle.read(_CHUNK):
            digest.update(chunk)
    return digest.hexdigest()


def crc32_file(path: str | os.PathLike) -> str:
    """zlib crc32 of a whole file as 8 lowercase hex digits (FaceFusion's `.hash` format)."""
    value = 0
    with open(path, "rb") as handle:
        while chunk := handle.read(_CHUNK):
            value = zlib.crc32(chunk, value)
    return format(value & 0xFFFFFFFF, "08x")


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


def make_folders(folder: Path) -> None:
    """Create `folder` and its missing parents with their mode set whatever the umask (under umask 000
    `mkdir` made the models folder 0777: anyone could replace a model): readable by all, changed only by
    their owner (0755), or by the group too inside a team folder (2775, as `store.permissions` decides;
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


def write_atomic(dest: Path, source: BinaryIO | bytes, mode: int = 0o644, durable: bool = True) -> Path:
    """Write `source` to a temp file beside `dest`, fsync it (unless not `durable`), set its mode, then
    rename it onto `dest`.

    Readers never see a half-written file; a crash leaves only a `.<name>.tmp-*` file behind,
    which `remove_leftover_temp_files` cleans up. Without the fsync a power cut may leave `dest`
    empty: only for files whose readers check them and can remake them.
    """
    dest = Path(dest)
    make_folders(dest.parent)
    fd, tmp_name = tempfile.mkstemp(prefix=f".{dest.name}.tmp-{host_tag()}-{os.getpid()}-", dir=dest.parent)
    try:
        with os.fdopen(fd, "wb") as out:
            if isinstance(source, (bytes, bytearray, memoryview)):
                out.write(source)
            else:
                while chunk := source.read(_CHUNK):
                    out.write(chunk)
            out.flush()
            if durable:
                os.fsync(out.fileno())
        os.chmod(tmp_name, mode)
        os.replace(tmp_name, dest)
    except BaseException:
        try:
            os.unlink(tmp_name)
        except FileNotFoundError:
            pass
        raise
    return dest


def remove_leftover_temp_files(folder: Path, older_than: float = LEFTOVER_TEMP_SECONDS) -> int:
    """Delete write_atomic temp files in `folder` whose writer died: a process of this machine
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
