"""The output manifest: for each output file, the key of the inputs it was made from.

An output whose entry is missing or differs is stale and is made again; an output whose entry
matches is skipped without decoding its frame. Entries are added only after the file itself is
in place (written atomically), and the manifest is saved atomically, so a killed job never makes
a half-written or stale output look valid.

Several writers may share one output folder (workstations on a NAS, render nodes): `save()`
re-reads the manifest, merges this writer's new entries in and replaces the file atomically,
under a short lease (`.facecache-manifest.lock`, O_EXCL with an expiry) so saves do not
overwrite each other. Should an entry still be lost (a lease that expired, a stale client
cache) the output is merely made again. An entry also records the output file's size and
mtime (whole seconds): an entry that survived from an older write (a merge that lost a race, a file replaced
by hand) no longer matches the file and is treated as stale, never as a wrong skip.
"""

from __future__ import annotations

import json
import logging
import os
import time
from pathlib import Path

from facecache.models.files import write_atomic
from facecache.store.lease import Lease
from facecache.store.permissions import Permissions

log = logging.getLogger("facecache.manifest")

MANIFEST_NAME = ".facecache-manifest.json"
LOCK_NAME = ".facecache-manifest.lock"
_VERSION = 2
_LOCK_TTL_SECONDS = 30.0
_LOCK_WAIT_SECONDS = 10.0
_OUTPUT_PERMS = Permissions(dir_mode=0o755, file_mode=0o644)  # as the outputs themselves

Entry = tuple[str, int, int]  # (inputs key, file size, file mtime in whole seconds)


class OutputManifest:
    def __init__(self, folder: Path):
        self.folder = Path(folder)
        self.path = self.folder / MANIFEST_NAME
        self._seen: bytes | None = None
        self._entries: dict[str, Entry] = self._load()
        self._mine: dict[str, Entry] = {}  # recorded here and not saved yet

    def _read(self) -> bytes | None:
        # The content, not a stat: network clients cache attributes (sshfs, NFS) but an open
        # reads what the server holds now.
        try:
            return self.path.read_bytes()
        except OSError:
            return None

    def _load(self, data: bytes | None = None) -> dict[str, Entry]:
        self._seen = data = self._read() if data is None else data
        try:
            data = json.loads(data.decode("utf-8")) if data is not None else None
        except ValueError:
            return {}  # damaged: every output is treated as stale
        entries = data.get("outputs") if isinstance(data, dict) and data.get("version") == _VERSION else None
        if not isinstance(entries, dict):
            return {}
        return {name: (v[0], v[1], v[2]) for name, v in entries.items()
                if isinstance(name, str) and isinstance(v, list) and len(v) == 3 and isinstance(v[0], str)
                and all(isinstance(n, int) and not isinstance(n, bool) for n in v[1:])}

    def refresh(self) -> bool:
        """Take in what other writers saved since this manifest was read; True when it changed."""
        data = self._read()
        if data == self._seen:
            return False
        self._entries = {**self._load(data), **self._mine}
        return True

    def is_current(self, name: str, key: str) -> bool:
        entry = self._entries.get(name)
        if entry is None or entry[0] != key:
            return False
        try:
            info = os.stat(self.folder / name)
        except OSError:
            return False
        return (info.st_size, _seconds(info)) == entry[1:]

    def record(self, name: str, key: str) -> None:
        """Record an output that is now in place (call it after the file was written)."""
        info = os.stat(self.folder / name)
        entry = (key, info.st_size, _seconds(info))
        self._entries[name] = self._mine[name] = entry

    def save(self) -> None:
        """Merge this writer's new entries into the manifest on disk (re-read, merge, atomic replace)."""
        if not self._mine:
            return
        lease = self._lock()
        try:
            merged = {**self._load(), **self._mine}
            payload = json.dumps({"version": _VERSION, "outputs": {k: list(v) for k, v in merged.items()}},
                                 sort_keys=True).encode()
            write_atomic(self.path, payload)
            self._seen = payload
        finally:
            if lease is not None:
                lease.release()
        self._entries = merged
        self._mine = {}

    def _lock(self) -> Lease | None:
        deadline = time.monotonic() + _LOCK_WAIT_SECONDS
        while True:
            try:
                lease = Lease.acquire(self.folder / LOCK_NAME, _LOCK_TTL_SECONDS, _OUTPUT_PERMS)
            except OSError as exc:  # a read-only or odd share: merge without it
                log.warning("cannot lock %s (%s): saving without the lock", self.path, exc)
                return None
            if lease is not None or time.monotonic() > deadline:
                if lease is None:
                    log.warning("%s stayed locked for %.0f s: saving without the lock (a lost entry only "
                                "means that output is made again)", self.path, _LOCK_WAIT_SECONDS)
                return lease
            time.sleep(0.05)


def _seconds(info: os.stat_result) -> int:
    """Whole seconds: sftp (sshfs) carries no more, NFS and local disks carry nanoseconds, and
    one output folder may be seen through both."""
    return info.st_mtime_ns // 1_000_000_000
