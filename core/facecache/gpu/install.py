"""Install and remove the NVIDIA GPU runtime (layout: facecache.gpu_runtime.layout).

    installer = GpuRuntimeInstaller()                  # $FACECACHE_GPU_RUNTIME, else <user data>/gpu-runtime
    installer.plan("12", ["cp311"]).download_bytes     # what would be downloaded, before asking anything
    installer.install(progress=cb)                     # CUDA 12 or 13 as the driver allows, this Python's wheel
    installer.install(pythons=["cp311", "cp313"])      # another Python only adds its onnxruntime-gpu wheel
    installer.install(cancel=event)                    # event.set() from another thread stops it (Cancelled)
    installer.uninstall()

Every wheel is downloaded by pip, with the user's pip settings (facecache.gpu.wheels: a wheel that arrived
whole is kept for the next run until the install is complete), its size and SHA-256 are checked against
the pins, and only then is it unpacked: into a staging folder that is renamed into place, the manifest
written last. The user's Python and Blender's wheel folder are never touched. One install or removal at a
time per runtime folder: each holds `locks/install.lock` (facecache.store.lease: a claim file created
exclusively, renewed while it works, taken over once its holder has died or stopped renewing), so
Blender's preferences and a `facecache gpu` command cannot interleave.

An install that stops part-way (Ctrl-C: `Interrupted`, exit code 130; the add-on's Cancel: `Cancelled`)
stops pip at once, removes pip's working folder and any staging folder, and says in one line what it
leaves: the runtime installed before, unchanged (or nothing installed), and the wheels that arrived whole,
kept in `downloads/` so that installing again fetches only the rest. A download with no new byte for the
stall bound (facecache.gpu.wheels) stops the same way. pip's output is in `logs/pip-<platform>.log`.
"""

from __future__ import annotations

import os
import shutil
import threading
import zipfile
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from facecache.errors import EXIT_NO_SPACE, Cancelled, FaceCacheError, Interrupted, os_fault
from facecache.files import folder_bytes
from facecache.gpu_runtime import pins
from facecache.gpu_runtime.driver import Driver, choose_cuda, read_driver
from facecache.gpu_runtime.layout import Installed, RuntimeFolder, write_manifest
from facecache.gpu_runtime.pins import this_platform, this_python
from facecache.gpu.wheels import FETCHING_PREFIX, fetch_wheels, stall_seconds, stop_if_cancelled
from facecache.models.download import Progress, ProgressCallback
from facecache.models.pypi_fetch import PackageFetcher
from facecache.permissions import permissions_for
from facecache.progress import human_bytes
from facecache.store.claims import HeldClaim
from facecache.store.lease import Lease

LOCK_TTL = 600.0  # seconds; renewed while an install works, so only a holder that died lets it lapse
_DATA_SCHEMES = ("purelib", "platlib")  # a wheel's <name>.data/ parts that belong in the site folder


class GpuRuntimeError(FaceCacheError):
    """The GPU runtime cannot be installed or removed as asked; the message says what to do."""


class NotEnoughSpace(GpuRuntimeError):
    exit_code = EXIT_NO_SPACE


@dataclass(frozen=True)
class Plan:
    """What an install would do now."""

    cuda: str
    reason: str  # why this CUDA major
    pythons: tuple[str, ...]  # Python tags whose onnxruntime-gpu wheel is added
    wheels: tuple[pins.Wheel, ...]  # to download (empty: already installed)
    replace: bool  # the libraries (a CUDA set) are installed anew

    @property
    def download_bytes(self) -> int:
        return sum(wheel.size for wheel in self.wheels)

    def as_dict(self) -> dict:
        return {"cuda": self.cuda, "reason": self.reason, "pythons": list(self.pythons),
                "download_bytes": self.download_bytes, "wheels": [wheel_pin(w) for w in self.wheels]}


def wheel_pin(wheel: pins.Wheel) -> dict:
    """What the install will download and check, for a studio's IT to approve: the pinned file, its size and
    SHA-256, and the line `pip download --no-deps --require-hashes -r FILE` checks it with. No URL: the pins
    name no host; pip takes the file from the index it is set up for (PyPI: files.pythonhosted.org)."""
    return {"filename": wheel.filename, "project": wheel.project, "version": wheel.version, "size": wheel.size,
            "sha256": wheel.sha256, "requirement": f"{wheel.project}=={wheel.version} --hash=sha256:{wheel.sha256}"}


@dataclass(frozen=True)
class InstallReport:
    folder: Path
    plan: Plan
    pythons: tuple[str, ...]  # every Python tag installed now
    disk_bytes: int

    def as_dict(self) -> dict:
        return {"folder": str(self.folder), **self.plan.as_dict(), "installed_pythons": list(self.pythons),
                "downloaded": bool(self.plan.wheels), "disk_bytes": self.disk_bytes}


class GpuRuntimeInstaller:
    """`sets(cuda, platform)` gives the pinned wheels (default: facecache.gpu_runtime.pins; tests pass stand-in wheels of
    the same names and layout); `fetcher` runs pip (default: this Python's pip, with the user's pip settings,
    its output in the runtime's pip log); `stall`: seconds without a new byte before a download is given up
    (default: $FACECACHE_GPU_STALL_SECONDS, else 60)."""

    def __init__(self, runtime_dir: str | os.PathLike | None = None, *, platform: str | None = None,
                 sets: Callable[[str, str], pins.RuntimeSet] | None = None,
                 fetcher: PackageFetcher | None = None, stall: float | None = None):
        self.location = RuntimeFolder.resolve(runtime_dir, platform)
        self.sets = sets if sets is not None else pins.runtime_set
        self.stall = stall
        # No time bound on one wheel (cuDNN is 700 MB): the stall bound ends a download that stopped moving.
        # No pip cache either: the wheels are kept in the downloads folder, not a second time in pip's cache.
        self.fetcher = fetcher or PackageFetcher(pip_args=("--no-cache-dir",), timeout=None,
                                                 log_file=self.location.pip_log)

    # --- what would happen ---------------------------------------------------------------------------

    def plan(self, cuda: str | None = None, pythons: Sequence[str] | None = None,
             driver: Driver | None = None) -> Plan:
        """What an install would do; `driver`: the driver already read (else it is read here)."""
        platform = self.location.platform
        if platform not in pins.PLATFORMS:
            raise GpuRuntimeError("the NVIDIA GPU runtime exists for linux x86-64 and Windows x64 only; on macOS "
                                  "the CPU onnxruntime already holds CoreML (choose the coreml provider)")
        if cuda is None:
            choice = choose_cuda(driver if driver is not None else read_driver()) \
                if platform == this_platform() else None
            cuda, reason = (choice.cuda, choice.reason) if choice else (pins.DEFAULT_CUDA, "the default")
        else:
            reason = "asked for"
        if cuda not in pins.CUDA_MAJORS:
            raise GpuRuntimeError(f"unknown CUDA major {cuda!r}: choose one of {', '.join(pins.CUDA_MAJORS)}")
        wanted = self.sets(cuda, platform)
        pythons = tuple(dict.fromkeys(pythons or (this_python(),)))
        unknown = [p for p in pythons if p not in wanted.onnxruntime]
        if unknown:
            raise GpuRuntimeError(f"onnxruntime-gpu {pins.ONNXRUNTIME[cuda]} has no wheel for {', '.join(unknown)} "
                                  f"(it has {', '.join(wanted.pythons)}); use one of those Pythons")
        installed = self.location.installed()
        replace = installed is None or installed.cuda != cuda or installed.libraries != _libraries(wanted)
        missing = [p for p in pythons
                   if replace or installed.pythons.get(p) != wanted.onnxruntime[p].filename
                   or self.location.usable_site(p) is None]
        wheels = (wanted.libraries if replace else ()) + tuple(wanted.onnxruntime[p] for p in missing)
        return Plan(cuda, reason, tuple(missing), wheels, replace)

    # --- install -----------------------------------------------------------------------------------

    def install(self, cuda: str | None = None, pythons: Sequence[str] | None = None,
                progress: ProgressCallback | None = None, driver: Driver | None = None,
                cancel: threading.Event | None = None) -> InstallReport:
        """Install as planned; `cancel` set (from another thread) stops it within half a second of pip's
        download (`Cancelled`), Ctrl-C at once (`Interrupted`); either says what is left."""
        stall = stall_seconds(self.stall)
        before = self.location.installed()
        try:
            with self._exclusive() as lock:
                plan = self.plan(cuda, pythons, driver)  # under the lock: what an install that just ended left
                if plan.wheels:
                    self._remove_stale_folders()
                    self._check_space(plan)
                    self.location.pip_log.unlink(missing_ok=True)  # the log holds this install's pip only
                    files = fetch_wheels(plan.wheels, self.location.downloads, self.fetcher, progress,
                                         lock.keep_alive, cancel, stall)
                    if plan.replace:
                        self._install_set(plan, files, progress, lock, cancel)
                    else:
                        self._add_pythons(plan, files, progress, lock, cancel)
                    for path in files.values():
                        path.unlink(missing_ok=True)
                installed = self.location.installed()
                return InstallReport(self.location.folder, plan,
                                     tuple(sorted(installed.pythons)) if installed else (), self.location.disk_bytes())
        except (KeyboardInterrupt, Interrupted):
            raise Interrupted(f"interrupted: {self.left_behind(before)}") from None
        except Cancelled:
            raise Cancelled(f"cancelled: {self.left_behind(before)}") from None

    def left_behind(self, before: Installed | None) -> str:
        """What an install that stopped part-way leaves, read from the folder (its lock already released)."""
        after = self.location.installed()
        if after is not None and after != before:
            state = (f"the NVIDIA GPU runtime (CUDA {after.cuda}) was installed in {self.location.folder} "
                     "before it stopped")
        elif before is not None:
            state = f"the NVIDIA GPU runtime installed before (CUDA {before.cuda}) is unchanged"
        else:
            state = "nothing was installed"
        downloads = self.location.downloads
        known = {w.filename for cuda in pins.CUDA_MAJORS for w in _set_or_none(self.sets, cuda, self.location.platform)}
        try:
            entries = sorted(downloads.iterdir()) if downloads.is_dir() else []
            partial = [p for p in entries if p.name.startswith(FETCHING_PREFIX)]
            whole = [(p, p.stat().st_size) for p in entries if p.name in known and p.is_file()]
        except OSError as exc:
            return f"{state}; what is kept in {downloads} cannot be read ({exc.strerror or exc})"
        state += (f" and a partial download is left in {partial[0]} (the next install removes it)" if partial
                  else " and no partial download is kept")
        if not whole:
            return state + ": install again (`facecache gpu install`) to start over"
        count, size = len(whole), sum(size for _, size in whole)
        return (f"{state}; {count} wheel{'s' if count > 1 else ''} downloaded whole ({human_bytes(size)}) "
                f"{'are' if count > 1 else 'is'} kept in {downloads}, so installing again (`facecache gpu install`) "
                f"fetches only the rest (`facecache gpu uninstall` removes {'them' if count > 1 else 'it'})")

    def _exclusive(self):
        """Hold the runtime folder's install lock, or say that another install or removal is running."""
        return install_lock(self.location.root, "NVIDIA GPU runtime",
                            "Blender's preferences or a `facecache gpu` command",
                            "choose another folder (--runtime-dir, FACECACHE_GPU_RUNTIME or the add-on's preferences)",
                            GpuRuntimeError)

    def _check_space(self, plan: Plan) -> None:
        free = shutil.disk_usage(self.location.root).free
        # the wheels, pip's temporary copy of the largest, then their contents beside them while they unpack
        # (more than the wheels: they are zips)
        needed = 2 * plan.download_bytes + max(wheel.size for wheel in plan.wheels)
        if free < needed:
            raise NotEnoughSpace(f"the NVIDIA runtime needs about {needed / 1e9:.1f} GB free in "
                                  f"{self.location.root} while it installs ({free / 1e9:.1f} GB are free): free "
                                  "some space or choose another folder (--runtime-dir, FACECACHE_GPU_RUNTIME or the "
                                  "add-on's preferences)")

    def _install_set(self, plan: Plan, files: dict[pins.Wheel, Path], progress: ProgressCallback | None,
                     lock: HeldClaim, cancel: threading.Event | None) -> None:
        """A new CUDA set: everything unpacked into a staging folder, then renamed into place."""
        wanted = self.sets(plan.cuda, self.location.platform)
        staging = self.location.root / f".{self.location.platform}.partial-{os.getpid()}"
        shutil.rmtree(staging, ignore_errors=True)
        try:
            for wheel, path in files.items():
                _report(progress, f"unpacking {wheel.filename}")
                stop_if_cancelled(cancel)
                lock.keep_alive()
                unpack_wheel(path, staging if wheel.is_library else staging / wheel.python)
            write_manifest(staging, Installed(plan.cuda, pins.ONNXRUNTIME[plan.cuda], _libraries(wanted),
                                              {p: wanted.onnxruntime[p].filename for p in plan.pythons}))
            stop_if_cancelled(cancel)
            _still_held(lock)
        except BaseException:  # a failure, Cancel or Ctrl-C: no staging folder is left
            shutil.rmtree(staging, ignore_errors=True)
            raise
        swap_in(staging, self.location.folder, self.location.root / f".{self.location.platform}.old-{os.getpid()}")

    def _add_pythons(self, plan: Plan, files: dict[pins.Wheel, Path], progress: ProgressCallback | None,
                     lock: HeldClaim, cancel: threading.Event | None) -> None:
        """onnxruntime-gpu for more Pythons beside the installed libraries."""
        installed = self.location.installed()
        for wheel, path in files.items():
            _report(progress, f"unpacking {wheel.filename}")
            staging = self.location.folder / f".{wheel.python}.partial-{os.getpid()}"
            shutil.rmtree(staging, ignore_errors=True)
            try:
                stop_if_cancelled(cancel)
                lock.keep_alive()
                unpack_wheel(path, staging)
                stop_if_cancelled(cancel)
                _still_held(lock)
            except BaseException:  # a failure, Cancel or Ctrl-C: no staging folder is left
                shutil.rmtree(staging, ignore_errors=True)
                raise
            swap_in(staging, self.location.site(wheel.python),
                    self.location.folder / f".{wheel.python}.old-{os.getpid()}")
            installed.pythons[wheel.python] = wheel.filename
            write_manifest(self.location.folder, installed)
        self._remove_stale_folders()

    # --- remove ------------------------------------------------------------------------------------

    def uninstall(self) -> int:
        """Remove this platform's runtime and its unfinished downloads; returns the bytes freed."""
        if not self.location.root.is_dir():
            return 0
        with self._exclusive():
            folder = self.location.folder
            freed = 0
            if self.location.platform and folder.exists():
                freed = folder_bytes(folder)
                aside = self.location.root / f".{self.location.platform}.removing-{os.getpid()}"
                _rename(folder, aside, "remove")
                shutil.rmtree(aside, ignore_errors=True)
            freed += self._remove_stale_folders() + self._remove_downloads()
            if self.location.pip_log.is_file():
                freed += self.location.pip_log.stat().st_size
                self.location.pip_log.unlink(missing_ok=True)
        for name in (self.location.downloads, self.location.pip_log.parent, self.location.root / "locks",
                     self.location.root):
            try:
                name.rmdir()  # only when empty: another platform's runtime stays
            except OSError:
                pass
        return freed

    def _remove_stale_folders(self) -> int:
        """Staging and set-aside folders of installs or removals that died."""
        platform = self.location.platform
        stale: list[Path] = []
        for parent, prefix in ((self.location.root, f".{platform}."), (self.location.folder, ".cp")):
            if parent.is_dir():
                stale += [p for p in parent.iterdir() if p.name.startswith(prefix) and p.is_dir()]
        freed = sum(folder_bytes(p) for p in stale)
        for path in stale:
            shutil.rmtree(path, ignore_errors=True)
        return freed

    def _remove_downloads(self) -> int:
        """This platform's wheels, kept or being fetched (another platform's stay)."""
        known = {w.filename for cuda in pins.CUDA_MAJORS for w in _set_or_none(self.sets, cuda, self.location.platform)}
        found = [p for p in self.location.downloads.glob("*") if p.name.removeprefix(FETCHING_PREFIX) in known]
        freed = sum(folder_bytes(p) if p.is_dir() else p.stat().st_size for p in found)
        for path in found:
            if path.is_dir():
                shutil.rmtree(path, ignore_errors=True)
            else:
                path.unlink(missing_ok=True)
        return freed


@contextmanager
def install_lock(root: Path, what: str, who: str, choose: str, error: type[FaceCacheError]) -> Iterator[HeldClaim]:
    """Hold `root`'s install lock (`locks/install.lock`, renewed through the HeldClaim while it works), or raise
    `error` saying that another install or removal of `what` (started by `who`) is running. Shared by the
    installers of what the engine fetches on demand: the NVIDIA GPU runtime, the remote cache support."""
    folder = root / "locks"
    try:
        folder.mkdir(parents=True, exist_ok=True)
        lease = Lease.acquire(folder / "install.lock", LOCK_TTL, permissions_for(root))
    except OSError as exc:
        raise os_fault(exc, f"install the {what} in", root, choose) from None
    if lease is None:
        raise error(f"another install or removal of the {what} is running in {root} ({who}); wait for it to end, "
                    "then try again")
    held = HeldClaim([lease], LOCK_TTL)
    try:
        yield held
    finally:
        held.release()


def unpack_wheel(wheel: Path, dest: Path) -> None:
    """Unpack a wheel's files into `dest` (its purelib/platlib data too). A member whose name would
    leave `dest` stops the install: the wheel is not what was pinned."""
    with zipfile.ZipFile(wheel) as archive:
        for info in archive.infolist():
            if info.is_dir():
                continue
            relative = _member_path(info.filename, wheel.name)
            if relative is None:
                continue
            target = dest.joinpath(*relative.parts)
            target.parent.mkdir(parents=True, exist_ok=True)
            with archive.open(info) as source, open(target, "wb") as out:
                shutil.copyfileobj(source, out, 1 << 20)
            mode = (info.external_attr >> 16) & 0o777
            if mode and os.name != "nt":
                os.chmod(target, mode | 0o400)


def _member_path(name: str, wheel: str) -> PurePosixPath | None:
    path = PurePosixPath(name)
    if "\\" in name or ":" in name or path.is_absolute() or ".." in path.parts:
        raise GpuRuntimeError(f"{wheel} holds a file named {name!r}, outside its folder; nothing was installed. "
                              "It is not the pinned wheel: delete it and install again")
    if path.parts and path.parts[0].endswith(".data"):
        if len(path.parts) < 3 or path.parts[1] not in _DATA_SCHEMES:
            return None  # headers and scripts are not needed to run
        return PurePosixPath(*path.parts[2:])
    return path


def _libraries(wanted: pins.RuntimeSet) -> dict[str, str]:
    return {wheel.filename: wheel.sha256 for wheel in wanted.libraries}


def _set_or_none(sets, cuda: str, platform: str) -> Iterable[pins.Wheel]:
    try:
        wanted = sets(cuda, platform)
    except KeyError:
        return ()
    return wanted.libraries + tuple(wanted.onnxruntime.values())


def _still_held(lock: HeldClaim) -> None:
    """Before a step that changes the runtime folder: the lock must still be ours (it lapses only when this
    process stopped for LOCK_TTL, e.g. a machine asleep, and another install may have started meanwhile)."""
    lock.keep_alive()
    if lock.lost:
        raise GpuRuntimeError("this install stopped for over ten minutes and another install or removal has "
                              "started since; nothing more was changed: run it again once that one has ended")


def swap_in(staging: Path, place: Path, aside: Path) -> None:
    """Rename `staging` to `place`, the folder there set `aside` first and deleted after; should this be
    stopped between the two renames (Ctrl-C), the folder set aside goes back, so nothing is half-replaced."""
    if place.exists():
        _rename(place, aside, "replace")
    try:
        os.replace(staging, place)
    except BaseException:
        if aside.exists() and not place.exists():
            os.replace(aside, place)
        shutil.rmtree(staging, ignore_errors=True)
        raise
    shutil.rmtree(aside, ignore_errors=True)


def _rename(source: Path, target: Path, doing: str) -> None:
    try:
        os.replace(source, target)
    except PermissionError:
        raise GpuRuntimeError(f"cannot {doing} {source}: a running engine uses it (Blender with the add-on, or a "
                              "facecache command); close them and try again") from None


def _report(progress: ProgressCallback | None, label: str) -> None:
    if progress:
        progress(Progress(label, 0, None))
