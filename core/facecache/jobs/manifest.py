"""The output manifest: for each output file, the key of the inputs it was made from.

An output whose entry is missing or differs is stale and is made again; an
output whose entry matches is skipped without decoding its frame. Entries are
added only after the file itself is in place (written atomically), and the
manifest is saved atomically, so a killed job never makes a half-written or
stale output look valid.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from facecache.models.files import write_atomic

MANIFEST_NAME = ".facecache-manifest.json"
_VERSION = 1


class OutputManifest:
    def __init__(self, folder: Path):
        self.folder = Path(folder)
        self.path = self.folder / MANIFEST_NAME
        self._entries: dict[str, str] = self._load()
        self._dirty = False

    def _load(self) -> dict[str, str]:
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return {}  # missing or damaged: every output is treated as stale
        entries = data.get("outputs") if isinstance(data, dict) and data.get("version") == _VERSION else None
        if not isinstance(entries, dict):
            return {}
        return {k: v for k, v in entries.items() if isinstance(k, str) and isinstance(v, str)}

    def is_current(self, name: str, key: str) -> bool:
        return self._entries.get(name) == key and os.path.isfile(self.folder / name)

    def record(self, name: str, key: str) -> None:
        self._entries[name] = key
        self._dirty = True

    def save(self) -> None:
        if self._dirty:
            payload = json.dumps({"version": _VERSION, "outputs": self._entries}, sort_keys=True).encode()
            write_atomic(self.path, payload)
            self._dirty = False
