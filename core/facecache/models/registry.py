"""The small state file kept in the models folder (`registry.json`).

It holds two things:
- `imports`: folders registered in place with `facecache models import` (FaceFusion's
  `.assets/models`), searched after the models folder itself;
- `checked`: for each model file that was checked, its size, mtime_ns, which check it passed
  and its content digest, or `refused` and why (a file in an imported folder that is not the
  model its name claims). A file whose size and mtime are unchanged is trusted (or refused)
  without hashing it again; any change means a full check. The digest is checked again
  against the bytes loaded whenever a session is created (`ModelStore.session`).

The file is JSON written by write-then-rename. Losing it costs only re-hashing and the
import registrations (a damaged file is set aside with a warning that says how to redo them).
"""

from __future__ import annotations

import json
import logging
import os
from dataclasses import asdict, dataclass
from pathlib import Path

from facecache.files import set_aside, write_atomic

REGISTRY_NAME = "registry.json"
_VERSION = 1
REFUSED = "refused"
log = logging.getLogger(__name__)


@dataclass(frozen=True)
class CheckedFile:
    size: int
    mtime_ns: int
    digest: str  # XXH3-128 of the file ("" when refused)
    check: str  # "sha256", "crc32" (FaceFusion sidecar), "none" (no reference to check against) or "refused"
    reason: str = ""  # why a file was refused

    @property
    def refused(self) -> bool:
        return self.check == REFUSED

    def matches(self, st: os.stat_result) -> bool:
        return self.size == st.st_size and self.mtime_ns == st.st_mtime_ns


class Registry:
    """Load-modify-save access to `registry.json` in one models folder."""

    def __init__(self, root: Path):
        self.path = Path(root) / REGISTRY_NAME
        self.imports: list[str] = []
        self.checked: dict[str, CheckedFile] = {}
        self.dirty = False
        self._load()

    def _load(self) -> None:
        try:
            raw = self.path.read_text(encoding="utf-8")
        except FileNotFoundError:
            return
        except OSError as exc:
            log.warning("cannot read %s (%s); model checks will be redone", self.path, exc.strerror)
            return
        try:
            data = json.loads(raw)
            if not isinstance(data, dict) or data.get("version") != _VERSION:
                raise ValueError("unknown format")
            imports = data.get("imports", [])
            checked = data.get("checked", {})
            if not (isinstance(imports, list) and all(isinstance(p, str) for p in imports)
                    and isinstance(checked, dict)):
                raise ValueError("unexpected types")
            self.imports = list(imports)
            for key, value in checked.items():
                if (isinstance(value, dict) and isinstance(value.get("size"), int)
                        and isinstance(value.get("mtime_ns"), int) and isinstance(value.get("digest"), str)
                        and value.get("check") in ("sha256", "crc32", "none", REFUSED)):
                    self.checked[key] = CheckedFile(value["size"], value["mtime_ns"], value["digest"], value["check"],
                                                    str(value.get("reason", "")))
        except ValueError as exc:
            try:
                where = f"was renamed to {set_aside(self.path).name}"
            except OSError:
                where = "is ignored"
            log.warning("%s is damaged (%s) and %s; model files will be checked again and imported "
                        "folders must be registered again with `facecache models import PATH`",
                        self.path, exc, where)
            self.imports, self.checked = [], {}

    def save(self) -> bool:
        """Write the registry if anything changed; False (with a log line) when the folder is read-only."""
        if not self.dirty:
            return True
        data = {"version": _VERSION, "imports": self.imports,
                "checked": {k: asdict(v) for k, v in sorted(self.checked.items())}}
        try:
            write_atomic(self.path, (json.dumps(data, indent=1, sort_keys=True) + "\n").encode())
            self.dirty = False
            return True
        except OSError as exc:
            log.info("cannot write %s (%s); checks will be repeated next time", self.path, exc.strerror)
            return False

    def lookup(self, path: Path, st: os.stat_result) -> CheckedFile | None:
        record = self.checked.get(str(path))
        return record if record is not None and record.matches(st) else None

    def remember(self, path: Path, record: CheckedFile) -> None:
        if self.checked.get(str(path)) != record:
            self.checked[str(path)] = record
            self.dirty = True

    def forget(self, path: Path) -> None:
        if self.checked.pop(str(path), None) is not None:
            self.dirty = True

    def add_import(self, folder: Path) -> bool:
        key = str(folder)
        if key in self.imports:
            return False
        self.imports.append(key)
        self.dirty = True
        return True
