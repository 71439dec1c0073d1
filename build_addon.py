#!/usr/bin/env python3
"""Build the vse_faceswap Blender extension: one zip per platform in dist/.

For each platform this script
  1. copies blender_addon/ (the extension) into build/addon/<platform>/vse_faceswap/,
  2. vendors the engine: core/facecache -> vse_faceswap/facecache/ (run out of process by the add-on),
  3. downloads the binary wheels of the engine's dependencies for Blender's Python 3.11 with numpy 1.26
     (`pip download --only-binary=:all: --python-version=3.11 --platform=<tag>`), without numpy itself
     (Blender ships it), with onnxruntime-gpu on linux-x64 / windows-x64 and onnxruntime on macos-arm64,
  4. writes the manifest's `platforms` and `wheels`,
  5. zips it to dist/vse_faceswap-<version>-<platform>.zip and validates the zip with Blender's own
     extension validator (`blender --command extension validate`, or the `blender_ext.py` script the
     bpy module ships); any error stops the build with a non-zero exit code.

Examples:
  python build_addon.py                           # every platform
  python build_addon.py --platform linux-x64      # just one
  python build_addon.py --cpu-runtime             # onnxruntime (CPU) everywhere: much smaller zips
  python build_addon.py --no-wheels               # no downloads (for development; not installable offline)
"""

from __future__ import annotations

import argparse
import glob
import os
import re
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent
ADDON_SRC = ROOT / "blender_addon"
ENGINE_SRC = ROOT / "core" / "facecache"
EXTENSION_ID = "vse_faceswap"

PLATFORMS = {
    "linux-x64": ["manylinux_2_28_x86_64", "manylinux_2_27_x86_64", "manylinux_2_17_x86_64", "manylinux2014_x86_64"],
    "windows-x64": ["win_amd64"],
    "macos-arm64": ["macosx_14_0_arm64", "macosx_13_0_arm64", "macosx_12_0_arm64", "macosx_11_0_arm64",
                    "macosx_13_0_universal2", "macosx_11_0_universal2", "macosx_10_9_universal2"],
}
GPU_RUNTIME = {"linux-x64": True, "windows-x64": True, "macos-arm64": False}  # onnxruntime-gpu wheels exist
# The engine's run-time dependencies (pyproject.toml's), less numpy and onnxruntime (chosen above).
COMMON_REQUIREMENTS = ["opencv-python-headless>=4.9,<4.12", "msgpack>=1.0", "xxhash>=3.0", "watchdog>=4.0",
                       "platformdirs>=3.0", "psutil>=5.9", "zlib-ng>=0.5"]
BLENDER_NUMPY = "numpy==1.26.4"  # Blender 4.2-5.0's own numpy: resolved against, never shipped


class BuildError(Exception):
    pass


def requirements(platform: str, cpu_runtime: bool) -> list[str]:
    runtime = "onnxruntime-gpu>=1.20" if GPU_RUNTIME[platform] and not cpu_runtime else "onnxruntime>=1.20"
    return [runtime, *COMMON_REQUIREMENTS]


def download_wheels(platform: str, dest: Path, cpu_runtime: bool) -> list[Path]:
    if dest.exists():
        shutil.rmtree(dest)  # only this build's wheels (pip's own cache makes a rebuild cheap)
    dest.mkdir(parents=True)
    constraints = dest.parent / "constraints.txt"
    constraints.write_text(BLENDER_NUMPY + "\n")
    command = [sys.executable, "-m", "pip", "download", "--disable-pip-version-check", "--quiet",
               "--dest", str(dest), "--only-binary=:all:", "--python-version=3.11", "--implementation=cp",
               "-c", str(constraints)]
    for tag in PLATFORMS[platform]:
        command.append(f"--platform={tag}")
    command += requirements(platform, cpu_runtime)
    print(f"[{platform}] pip download {' '.join(requirements(platform, cpu_runtime))}", flush=True)
    result = subprocess.run(command, capture_output=True, text=True)
    if result.returncode != 0:
        raise BuildError(f"pip download failed for {platform}:\n{result.stderr.strip()}")
    wheels = []
    for wheel in sorted(dest.glob("*.whl")):
        if wheel.name.lower().startswith("numpy-"):
            wheel.unlink()  # Blender's own numpy is used
            continue
        wheels.append(wheel)
    if not wheels:
        raise BuildError(f"no wheels were downloaded for {platform}")
    return wheels


def version() -> str:
    text = (ADDON_SRC / "blender_manifest.toml").read_text(encoding="utf-8")
    match = re.search(r'^version\s*=\s*"([^"]+)"', text, re.M)
    if not match:
        raise BuildError("blender_manifest.toml has no version")
    return match.group(1)


def write_manifest(target: Path, platform: str, wheels: list[Path]) -> None:
    text = (ADDON_SRC / "blender_manifest.toml").read_text(encoding="utf-8")
    lines = [f'platforms = ["{platform}"]']
    if wheels:
        lines.append("wheels = [\n" + "".join(f'  "./wheels/{w.name}",\n' for w in wheels) + "]")
    extra = "\n".join(lines) + "\n"
    # top-level keys must come before the first [table]
    head, sep, tail = text.partition("\n[")
    target.write_text(head.rstrip() + "\n\n" + extra + (sep + tail if sep else ""), encoding="utf-8")


def stage(platform: str, build_dir: Path, wheels_cache: Path | None, cpu_runtime: bool) -> Path:
    folder = build_dir / platform / EXTENSION_ID
    if folder.exists():
        shutil.rmtree(folder)
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc", "*.egg-info")
    shutil.copytree(ADDON_SRC, folder, ignore=ignore)
    shutil.copytree(ENGINE_SRC, folder / "facecache", ignore=ignore)
    wheels: list[Path] = []
    if wheels_cache is not None:
        downloaded = download_wheels(platform, wheels_cache / platform, cpu_runtime)
        (folder / "wheels").mkdir()
        for wheel in downloaded:
            shutil.copy2(wheel, folder / "wheels" / wheel.name)
            wheels.append(wheel)
    write_manifest(folder / "blender_manifest.toml", platform, wheels)
    return folder


def make_zip(folder: Path, out: Path) -> Path:
    out.parent.mkdir(parents=True, exist_ok=True)
    if out.exists():
        out.unlink()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as archive:
        for path in sorted(folder.rglob("*")):
            if path.is_file():
                archive.write(path, path.relative_to(folder).as_posix())
    return out


def validator_command(path: Path) -> list[str]:
    """Blender's own validator: a `blender` binary when on PATH (or $BLENDER), else the bpy module's script."""
    blender = os.environ.get("BLENDER") or shutil.which("blender")
    if blender:
        return [blender, "--background", "--factory-startup", "--command", "extension", "validate", str(path)]
    try:
        import importlib.util

        spec = importlib.util.find_spec("bpy")
    except (ImportError, ValueError):
        spec = None
    if spec is None or not spec.submodule_search_locations:
        raise BuildError("cannot validate: neither a `blender` binary (set $BLENDER) nor the bpy module "
                         "(pip install bpy==5.0.1 on Python 3.11) is available; use --no-validate to skip")
    base = Path(list(spec.submodule_search_locations)[0])
    scripts = sorted(glob.glob(str(base / "*" / "scripts" / "addons_core" / "bl_pkg" / "cli" / "blender_ext.py")))
    if not scripts:
        raise BuildError(f"the bpy module at {base} has no blender_ext.py validator")
    # `blender --command extension validate` checks the tags against Blender's own list: do the same
    tags = Path(scripts[-1]).parents[3] / "modules" / "_bpy_internal" / "extensions" / "tags.py"
    return [sys.executable, scripts[-1], "validate", str(path), *(["--valid-tags", str(tags)] if tags.is_file() else [])]


def validate(path: Path) -> None:
    result = subprocess.run(validator_command(path), capture_output=True, text=True)
    output = (result.stdout + result.stderr).strip()
    if result.returncode != 0 or re.search(r"^\s*error", output, re.I | re.M):
        raise BuildError(f"Blender's extension validator rejected {path}:\n{output}")
    print(f"validated     {path}" + (f" ({output.splitlines()[-1]})" if output else ""), flush=True)


def build(platforms: list[str], dist: Path, build_dir: Path, wheels: bool, cpu_runtime: bool,
          check: bool) -> list[Path]:
    zips = []
    for platform in platforms:
        folder = stage(platform, build_dir, build_dir / "wheels" if wheels else None, cpu_runtime)
        archive = make_zip(folder, dist / f"{EXTENSION_ID}-{version()}-{platform}.zip")
        if check:
            validate(archive)
        print(f"built         {archive} ({archive.stat().st_size / 1e6:.1f} MB)", flush=True)
        zips.append(archive)
    return zips


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--platform", action="append", choices=sorted(PLATFORMS),
                        help="build only this platform (repeatable; default: all)")
    parser.add_argument("--dist", type=Path, default=ROOT / "dist", help="output folder for the zips (default dist/)")
    parser.add_argument("--build-dir", type=Path, default=ROOT / "build" / "addon",
                        help="staging folder (default build/addon)")
    parser.add_argument("--cpu-runtime", action="store_true",
                        help="ship onnxruntime (CPU) instead of onnxruntime-gpu on every platform")
    parser.add_argument("--no-wheels", action="store_true", help="do not download wheels (development builds)")
    parser.add_argument("--no-validate", action="store_true", help="skip Blender's extension validator")
    args = parser.parse_args(argv)
    try:
        build(args.platform or list(PLATFORMS), args.dist, args.build_dir, not args.no_wheels, args.cpu_runtime,
              not args.no_validate)
    except BuildError as exc:
        print(f"build_addon.py: error: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
