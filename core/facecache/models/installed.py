"""The installed models: finding a model's files in the models folder or a folder imported in place,
checking them, and answering what is there (`status`, `model`, `digest`, `session`, `derived`).

A file is checked (SHA-256 pin or FaceFusion crc32 sidecar) when it is installed or imported
and whenever its size or mtime changed since the last check; a file in the models folder that
fails is renamed to `NAME.corrupt` and never used. Files in imported folders (FaceFusion's own)
are never renamed or changed: one that fails its sidecar, does not load as ONNX, does not fit
the catalog's contract for its name, or is a symlink leading out of its folder is refused
(remembered in the registry, reported, and never used). Whenever a session is created, the bytes
loaded are checked against the digest the model was checked with, so a file changed in place
(size and mtime kept) is never used under its old cache namespace.

`store.ModelStore` is this plus installing (`install.py`) and importing FaceFusion's folder
(`facefusion_import.py`); both check what they bring through `checked` here.
"""

from __future__ import annotations

import errno
import logging
import os
import re
import stat
import threading
from dataclasses import dataclass, field
from pathlib import Path

from facecache.errors import ModelChanged, ModelCorrupt, ModelError, ModelMissing, ModelRefused, os_fault
from facecache.files import hash_bytes, set_aside
from facecache.fingerprint import bytes_digest
from facecache.locations import MODELS_DIR_ENV, resolve_models_dir
from facecache.models import derived
from facecache.models.catalog import (DEFAULT_CATALOG, FACEFUSION_ASSETS_URL, Catalog, ModelFile, ModelSpec,
                                      ReleaseSource)
from facecache.models.pypi_fetch import PackageFetcher
from facecache.models.registry import REFUSED, CheckedFile, Registry
from facecache.models.validate import contract_problem

MODELS_URL_ENV = "FACECACHE_MODELS_URL"
HEX8 = re.compile(r"^[0-9a-f]{8}$")  # a FaceFusion `.hash` sidecar: crc32 as 8 hex digits
log = logging.getLogger("facecache.models.store")  # the model store's one logger, as callers configure it


@dataclass(frozen=True)
class InstalledModel:
    """A model whose files are present and checked."""

    spec: ModelSpec
    paths: dict[str, Path]  # role -> file
    digest: str  # content digest of all its files (32 hex digits)
    verified: bool  # False when some file had no reference hash (imported without sidecar)
    file_digests: dict[str, str] = field(default_factory=dict)  # role -> XXH3-128 of that file


@dataclass(frozen=True)
class ModelStatus:
    name: str
    kind: str
    licence: str
    installed: bool
    paths: dict[str, Path] = field(default_factory=dict)
    location: str = ""  # "models folder", "imported: FOLDER", or "" when missing

    def as_dict(self) -> dict:
        return {"name": self.name, "kind": self.kind, "licence": self.licence, "installed": self.installed,
                "paths": {k: str(v) for k, v in self.paths.items()}, "location": self.location}


def _check_folder(root: Path) -> None:
    """A models folder that is a file, or lies under one, is refused in one line (no model could be found or
    installed there, and "not installed" would send the user to install one)."""
    for path in (root, *root.parents):
        if path.exists():
            if not path.is_dir():
                fault = NotADirectoryError(errno.ENOTDIR, os.strerror(errno.ENOTDIR), str(path))
                raise os_fault(fault, "use the models folder", root, hint="pass a folder to --models-dir (or "
                               f"${MODELS_DIR_ENV}), or leave it unset for the per-user models folder")
            return


class InstalledModels:
    """Models in one folder (plus folders imported in place). Not shared between processes in memory:
    each process opens its own store; the registry file on disk is the shared part. `base_url`, `fetcher`,
    `retries` and `timeout` are where and how `install` gets the files."""

    def __init__(self, models_dir: str | os.PathLike | None = None, *, catalog: Catalog = DEFAULT_CATALOG,
                 base_url: str | None = None, fetcher: PackageFetcher | None = None,
                 retries: int = 3, timeout: float = 60.0):
        self.root = resolve_models_dir(models_dir).expanduser().absolute()
        _check_folder(self.root)
        self.catalog = catalog
        self.base_url = base_url or os.environ.get(MODELS_URL_ENV) or FACEFUSION_ASSETS_URL
        self.fetcher = fetcher or PackageFetcher()
        self.retries = retries
        self.timeout = timeout
        self._registry: Registry | None = None
        self.lock = threading.RLock()  # one store may serve several threads

    # --- state ------------------------------------------------------------------------------------

    @property
    def registry(self) -> Registry:
        if self._registry is None:
            self._registry = Registry(self.root)
        return self._registry

    def imported_folders(self) -> list[Path]:
        return [Path(p) for p in self.registry.imports]

    def _candidates(self, item: ModelFile) -> list[tuple[Path, str]]:
        found = [(self.root / item.name, "models folder")]
        found += [(folder / item.name, f"imported: {folder}") for folder in self.imported_folders()]
        return found

    def _locate(self, item: ModelFile) -> tuple[Path, str] | None:
        """The first candidate file that is present and not refused (with its stat unchanged)."""
        for path, where in self._candidates(item):
            try:
                st = path.stat()
            except OSError:
                continue
            known = self.registry.lookup(path, st)
            if stat.S_ISREG(st.st_mode) and not (known is not None and known.refused):
                return path, where
        return None

    # --- queries ----------------------------------------------------------------------------------

    def status(self, name: str) -> ModelStatus:
        """Whether all files of a model are present (cheap: no hashing)."""
        spec = self.catalog.get(name)
        paths, where = {}, ""
        for item in spec.files:
            hit = self._locate(item)
            if hit is None:
                return ModelStatus(spec.name, spec.kind, spec.licence, False)
            paths[item.role], where = hit[0], where or hit[1]
        return ModelStatus(spec.name, spec.kind, spec.licence, True, paths, where)

    def statuses(self) -> list[ModelStatus]:
        return [self.status(name) for name in self.catalog.names()]

    def is_installed(self, name: str, absent_when: type[ModelError] = ModelError) -> bool:
        """Present and passing its checks (a file that fails with `absent_when` is logged and counts as
        absent; other failures raise)."""
        if not self.status(name).installed:
            return False
        try:
            self.model(name)
        except absent_when as exc:
            log.warning("%s", exc)
            return False
        return True

    def model(self, name: str) -> InstalledModel:
        """The checked files of a model: `ModelMissing` when absent, `ModelCorrupt` when a check fails."""
        spec = self.catalog.get(name)
        paths: dict[str, Path] = {}
        records: list[tuple[str, CheckedFile]] = []
        with self.lock:
            for item in spec.files:
                hit = self._locate(item)
                if hit is None:
                    raise ModelMissing(self._missing_message(spec, item))
                records.append((item.role, self.checked(spec, item, hit[0])))
                paths[item.role] = hit[0]
            self.registry.save()
        digest = bytes_digest("\n".join(f"{role}:{rec.digest}" for role, rec in records).encode())
        return InstalledModel(spec, paths, digest, all(rec.check != "none" for _, rec in records),
                              {role: rec.digest for role, rec in records})

    def session(self, sessions, model: InstalledModel, role: str | None = None):
        """An ONNX Runtime session (from `sessions`, a SessionFactory) of one file of a checked model,
        made from bytes whose digest is the one the model was checked with: the digest its cache
        namespace is named after. A file changed since (even with its size and mtime restored) is
        checked again in full and `ModelChanged` (or `ModelCorrupt`) is raised before anything is
        computed with it."""
        item = model.spec.file(role)
        path = model.paths[item.role]
        try:
            return sessions.session(path, model.file_digests[item.role], item.cpu_graph)
        except ModelChanged as changed:
            unchanged = "although its size and modification time are unchanged; nothing was computed with it"
            with self.lock:
                self.registry.forget(path)
                try:
                    self.checked(model.spec, item, path)
                except ModelCorrupt as corrupt:  # it no longer matches its pin, sidecar or contract
                    raise ModelCorrupt(f"{changed}, {unchanged}. {corrupt}") from None
                finally:
                    self.registry.save()
            raise ModelChanged(f"{changed}, {unchanged} and no result was stored under its old cache namespace. "
                               "It has been checked again: run the same command again") from None

    def paths(self, name: str) -> dict[str, Path]:
        """Role -> checked file path (e.g. {"pnet": ..., "rnet": ..., "onet": ...} for `default`)."""
        return self.model(name).paths

    def path(self, name: str, role: str | None = None) -> Path:
        """The checked file of a single-file model (or of one `role` of a multi-file model)."""
        spec = self.catalog.get(name)
        return self.model(name).paths[spec.file(role).role]

    def digest(self, name: str) -> str:
        """Content digest (32 hex digits) of a model's files; computed once per file version."""
        return self.model(name).digest

    def derived(self, name: str, kind: str):
        """An array derived from a model (e.g. `derived.EMAP`, InSwapper's source projection), read from
        its file in the models folder; made from the model file first when missing or damaged."""
        model = self.model(name)
        path = derived.path_for(self.root, model.spec.name, model.digest, kind)
        array = derived.read(path, model.spec.name, model.digest, kind)
        if array is None:
            array = derived.EXTRACTORS[kind](model.paths[model.spec.file().role])
            try:
                derived.write(path, model.spec.name, model.digest, kind, array)
            except OSError as exc:
                log.warning("cannot write %s (%s); it will be made from the model file on each use", path,
                            exc.strerror)
        return array

    def make_derived(self, spec: ModelSpec) -> None:
        for kind in spec.derived:
            self.derived(spec.name, kind)

    def verify(self, name: str) -> InstalledModel:
        """Check every file of a model again, ignoring remembered checks."""
        spec = self.catalog.get(name)
        for item in spec.files:
            hit = self._locate(item)
            if hit:
                self.registry.forget(hit[0])
        return self.model(name)

    def install_command(self, spec: ModelSpec) -> str:
        name = "default" if "default" in self.catalog.packs_of(spec.name) else spec.name
        return f"`facecache models install {name}`"

    def _missing_message(self, spec: ModelSpec, item: ModelFile) -> str:
        looked = ", ".join(str(p.parent) for p, _ in self._candidates(item))
        extra = ""
        if isinstance(spec.source, ReleaseSource):
            extra = (" (or, if FaceFusion is installed, `facecache models import PATH_TO_FACEFUSION` "
                     "to use its models in place)")
        return (f"model {spec.name} is not installed ({item.name} not found in {looked}); run "
                f"{self.install_command(spec)}{extra}")

    # --- checking ---------------------------------------------------------------------------------

    def checked(self, spec: ModelSpec, item: ModelFile, path: Path, force: bool = False) -> CheckedFile:
        st = path.stat()
        if not force:
            known = self.registry.lookup(path, st)
            if known is not None and known.refused:
                raise ModelRefused(self._refused_message(spec, path, known.reason), known.reason)
            if known is not None:
                return known
        record = self._check_file(spec, item, path)
        self.registry.remember(path, CheckedFile(st.st_size, st.st_mtime_ns, record.digest, record.check))
        return self.registry.checked[str(path)]

    def _is_imported(self, path: Path) -> bool:
        return path.parent != self.root and path.parent in self.imported_folders()

    def _check_file(self, spec: ModelSpec, item: ModelFile, path: Path) -> CheckedFile:
        """Read `path` once; compare it with the pinned SHA-256 or the FaceFusion sidecar; a file
        without a pin, or in an imported folder, must also load as ONNX and fit the catalog's
        contract. A failing file in the models folder is set aside; one in an imported folder is
        refused and left as it is."""
        imported = self._is_imported(path)
        leaves = _symlink_leaving_folder(path)
        if leaves is not None:
            self.refuse(spec, path, f"it is a symbolic link to {leaves}, outside {path.parent}")
        sidecar = path.with_name(item.sidecar)
        has_sidecar = not item.sha256 and sidecar.is_file()
        try:
            expected_crc = _read_sidecar(sidecar, self.install_command(spec), imported) if has_sidecar else ""
        except ModelCorrupt as exc:
            if imported:
                self.refuse(spec, path, str(exc))
            raise
        data = _read_within(path, item.max_bytes)
        if data is None:
            too_big = (f"it holds {path.stat().st_size / 1e6:.0f} MB, more than a {spec.name} file can "
                       f"({item.max_bytes / 1e6:.0f} MB at most)")
            if imported:
                self.refuse(spec, path, too_big)
            raise ModelCorrupt(f"{path}: {too_big}: it is not that model; delete it and reinstall: "
                               f"{self.install_command(spec)}")
        hashes = hash_bytes(data, sha256=bool(item.sha256), crc32=bool(expected_crc))
        if item.sha256:
            check, actual, expected, reference = "sha256", hashes.sha256, item.sha256, "its pinned SHA-256"
        elif expected_crc:
            check, actual, expected, reference = "crc32", hashes.crc32, expected_crc, f"its sidecar {sidecar.name}"
        else:
            check, actual, expected, reference = "none", "", "", ""
        if actual != expected:
            mismatch = f"it does not match {reference} ({check} {actual}, expected {expected})"
            if imported:
                self.refuse(spec, path, mismatch)
            self.registry.forget(path)
            try:
                moved = f"it was renamed to {set_aside(path).name} and will not be used"
            except OSError as exc:
                moved = f"it could not be set aside ({exc.strerror}): delete it"
            self.registry.save()
            raise ModelCorrupt(f"{path}: {mismatch}; {moved}. Reinstall it: {self.install_command(spec)}")
        if imported or check == "none":
            problem = contract_problem(data, spec.name, item.contract)
            if problem is not None:
                self.refuse(spec, path, f"it is not a {spec.name} model: {problem}")
        st = path.stat()
        return CheckedFile(st.st_size, st.st_mtime_ns, hashes.digest, check)

    def refuse(self, spec: ModelSpec, path: Path, reason: str) -> None:
        """Remember that a file is not used (until it changes) and raise ModelRefused; the file is
        left exactly as it is."""
        try:
            st = path.stat()
            self.registry.remember(path, CheckedFile(st.st_size, st.st_mtime_ns, "", REFUSED, reason))
        except OSError:
            self.registry.forget(path)
        self.registry.save()
        raise ModelRefused(self._refused_message(spec, path, reason), reason)

    def _refused_message(self, spec: ModelSpec, path: Path, reason: str) -> str:
        return (f"{path} is refused: {reason}. It is left as it is and not used; replace it with an intact "
                f"{spec.name} (in FaceFusion, or {self.install_command(spec)}) or delete it")


def _read_within(path: Path, limit: int) -> bytes | None:
    """The bytes of a file, or None when it holds more than `limit` (known from its size before reading,
    and from the bytes read, should it grow meanwhile)."""
    with open(path, "rb") as handle:
        if os.fstat(handle.fileno()).st_size > limit:
            return None
        data = handle.read(limit + 1)
    return data if len(data) <= limit else None


def _read_sidecar(path: Path, install_command: str, imported: bool = False) -> str:
    """The 8 hex digits of a FaceFusion `.hash` file. A malformed sidecar is reported, since nothing
    can be checked against it; in the models folder it is also set aside (the model file is left
    alone), in an imported folder nothing is changed."""
    try:
        text = path.read_text(encoding="ascii", errors="replace").strip().lower()
    except OSError:
        return ""
    if HEX8.match(text):
        return text
    if imported:
        raise ModelCorrupt(f"its sidecar {path.name} is not a FaceFusion hash sidecar (expected 8 hex digits)")
    try:
        moved = f"it was renamed to {set_aside(path).name}"
    except OSError as exc:
        moved = f"it could not be set aside ({exc.strerror}): delete it"
    raise ModelCorrupt(f"{path} is not a FaceFusion hash sidecar (expected 8 hex digits); {moved}. "
                       f"Reinstall the model: {install_command}")


def _symlink_leaving_folder(path: Path) -> Path | None:
    """Where a symlink leads when that is outside the folder holding it, else None."""
    if not path.is_symlink():
        return None
    target = path.resolve()
    folder = path.parent.resolve()
    return None if target.parent == folder or folder in target.parents else target
