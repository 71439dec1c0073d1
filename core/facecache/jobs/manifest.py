"""The output manifest: for each output file, the key of the inputs it was made from.

An output whose entry is missing or differs is stale and is made again; an output whose entry
matches is skipped without decoding its frame. Entries are added only after the file itself is
in place (written atomically), so a killed job never makes a half-written or stale output look
valid. An entry also records the output file's size and mtime (whole seconds): an entry that
outlived its file (a file replaced by hand or by a writer whose entry was not seen) no longer
matches it and is treated as stale, never as a wrong skip.

Several writers may share one output folder (workstations on a NAS, render nodes), so the
manifest is a journal, not one file: each `save()` adds a new write-once file to
`.facecache-manifest/`, named `<time ns>-<host>-<pid>-<random>.json`, holding that save's
entries; reading merges the journal files in name order (later saves win). Nothing is ever
rewritten in place, because network clients cache file attributes: sshfs keeps a file's old
size for up to 20 s, so a file replaced on one workstation reads *truncated* on another
(measured on the loopback sshfs of tests/nas). A write-once file has no old size to serve.
Clients also cache folder listings (1–20 s), so a teammate's newest journal file may not be
listed yet: then the output's own stamp (`output_stamp`, the key inside the PNG) says whether
it is current, and the entry is taken into this writer's next save. When the journal grows
long, one writer at a time folds it into one file.
"""

from __future__ import annotations

import json
import logging
import os
import re
import secrets
import time
from pathlib import Path

from facecache.errors import cannot_write, os_fault
from facecache.files import remove_leftover_temp_files, write_atomic
from facecache.jobs.output_stamp import read_stamp
from facecache.permissions import Permissions, make_dir, permissions_for
from facecache.processes import host_tag
from facecache.store.lease import Lease

log = logging.getLogger("facecache.manifest")

JOURNAL_FOLDER = ".facecache-manifest"
_JOURNAL_NAME = re.compile(r"[0-9]{20}-[0-9a-f]{8}-[0-9]+-[0-9a-f]{8}\.json")
_FOLD_LOCK = ".fold.lock"
_FOLD_AT = 32  # journal files; a 10,000-frame film makes about 160 per run (one per segment)
_FOLD_LOCK_TTL_SECONDS = 60.0
_MAX_JOURNAL_BYTES = 64 * 1024 * 1024
_VERSION = 3

Entry = tuple[str, int, int]  # (inputs key, file size, file mtime in whole seconds)


class OutputManifest:
    def __init__(self, folder: Path, perms: Permissions | None = None):
        self.folder = Path(folder)
        self.perms = perms or permissions_for(self.folder)  # as the outputs themselves (`facecache.permissions`)
        self.journal = self.folder / JOURNAL_FOLDER
        self._read: dict[str, dict[str, Entry]] = {}  # journal file name -> its entries
        self._entries: dict[str, Entry] = {}
        self._mine: dict[str, Entry] = {}  # recorded here and not saved yet
        self.refresh()

    def refresh(self) -> bool:
        """Take in what other writers saved since this manifest was read; True when it changed."""
        try:
            names = sorted(e.name for e in os.scandir(self.journal) if _JOURNAL_NAME.fullmatch(e.name))
        except OSError:
            names = []  # no journal yet, or an unreadable one: every output is treated as stale
        unread = [name for name in names if name not in self._read]
        if not unread and len(names) == len(self._read):
            return False
        # Folded files vanish; their entries live on in the file they were folded into.
        self._read = {name: self._read[name] for name in names if name in self._read}
        for name in unread:
            entries = _read_journal(self.journal / name)
            if entries is not None:  # else vanished or unreadable: looked at again next time
                self._read[name] = entries
        merged: dict[str, Entry] = {}
        for name in sorted(self._read):
            merged.update(self._read[name])
        self._entries = {**merged, **self._mine}
        return True

    def is_current(self, name: str, key: str) -> bool:
        entry = self._entries.get(name)
        if entry is not None:
            try:
                info = os.stat(self.folder / name)
            except OSError:
                return False
            if (info.st_size, _seconds(info)) == entry[1:]:
                return entry[0] == key  # the entry describes this very file
        # No entry (a teammate's save this client does not list yet, or one lost), or one that no
        # longer matches the file: the file's own stamp says what it was made from.
        if read_stamp(self.folder / name) == key:
            self.record(name, key)
            return True
        return False

    def record(self, name: str, key: str) -> None:
        """Record an output that is now in place (call it after the file was written)."""
        info = os.stat(self.folder / name)
        entry = (key, info.st_size, _seconds(info))
        self._entries[name] = self._mine[name] = entry

    def save(self) -> None:
        """Add this writer's new entries to the journal as one new file. A folder that cannot take it
        (full, read-only) costs nothing lasting: each output carries its key, so the next run still
        recognises it; the entries stay here for a later save."""
        if not self._mine:
            return
        try:
            name = _write_journal(self.journal, self._mine, self.perms)
        except OSError as exc:
            if not cannot_write(exc):
                raise
            log.warning("%s; the outputs carry their key, so the next run still finds them up to date",
                        os_fault(exc, "save the output manifest in", self.journal))
            return
        self._read[name] = self._mine
        self._mine = {}
        if len(self._read) >= _FOLD_AT:
            self._fold()

    def _fold(self) -> None:
        """Replace the journal files read so far by one holding their merged entries. One writer
        folds at a time (others skip it); the merged file is in place before the old ones go, so
        a reader sees every entry in one or the other."""
        try:
            lease = Lease.acquire(self.journal / _FOLD_LOCK, _FOLD_LOCK_TTL_SECONDS, self.perms)
        except OSError as exc:  # a read-only or odd share: the journal just stays long
            log.warning("cannot fold the output manifest in %s (%s)", self.journal, exc)
            return
        if lease is None:
            return
        try:
            self.refresh()
            folded = sorted(self._read)
            merged: dict[str, Entry] = {}
            for name in folded:
                merged.update(self._read[name])
            # Named after the newest file it holds, so journal files saved meanwhile still sort after it.
            kept = _write_journal(self.journal, merged, self.perms, stamp=folded[-1].partition("-")[0])
            for name in folded:
                try:
                    os.unlink(self.journal / name)
                except OSError:
                    pass
            self._read = {kept: merged}
            remove_leftover_temp_files(self.journal)
        finally:
            lease.release()


def _write_journal(folder: Path, entries: dict[str, Entry], perms: Permissions, stamp: str | None = None) -> str:
    make_dir(folder, perms)
    stamp = stamp or f"{time.time_ns():020d}"
    name = f"{stamp}-{host_tag()}-{os.getpid()}-{secrets.token_hex(4)}.json"
    payload = {"version": _VERSION, "outputs": {k: list(v) for k, v in entries.items()}}
    write_atomic(folder / name, json.dumps(payload, sort_keys=True).encode(), mode=perms.file_mode)
    return name


def _read_journal(path: Path) -> dict[str, Entry] | None:
    """A journal file's entries; None when it is gone or unreadable (damaged files are ignored:
    their outputs are treated as stale)."""
    try:
        with open(path, "rb") as handle:
            data = handle.read(_MAX_JOURNAL_BYTES + 1)
        content = json.loads(data.decode("utf-8")) if len(data) <= _MAX_JOURNAL_BYTES else None
    except (OSError, ValueError):
        return None
    entries = content.get("outputs") if isinstance(content, dict) and content.get("version") == _VERSION else None
    if not isinstance(entries, dict):
        return None
    return {name: (v[0], v[1], v[2]) for name, v in entries.items()
            if isinstance(name, str) and isinstance(v, list) and len(v) == 3 and isinstance(v[0], str)
            and all(isinstance(n, int) and not isinstance(n, bool) for n in v[1:])}


def _seconds(info: os.stat_result) -> int:
    """Whole seconds: sftp (sshfs) carries no more, NFS and local disks carry nanoseconds, and
    one output folder may be seen through both."""
    return info.st_mtime_ns // 1_000_000_000
