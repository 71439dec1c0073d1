#!/usr/bin/env python3
"""Build the vse_faceswap Blender extension: one zip per platform in dist/ (and a static extension
repository with --repo).

Each zip serves every Blender its manifest's range names on that platform: Blender 4.2-5.0 run Python 3.11
(numpy 1.26), 5.1 and 5.2 run Python 3.13 (numpy 2), so a zip carries the wheels for both Pythons and
Blender unpacks the ones for its own (docs/platforms.md: how each version picks them). For each platform
this script
  1. copies blender_addon/ (the extension) into build/addon/<platform>/vse_faceswap/,
  2. vendors the engine: core/facecache -> vse_faceswap/facecache/ (run out of process by the add-on),
  3. downloads the binary wheels of the engine's dependencies (pyproject.toml's, ONNX Runtime for the CPU),
     per Python, resolved against the numpy those Blenders bundle and without numpy itself, for the
     oldest OS the platform's Blenders support (`pip download --only-binary=:all: --platform <tags>`),
  4. checks every wheel: it loads on that oldest OS, and each Python gets one wheel per package,
  5. writes the manifest's `platforms` and `wheels`,
  6. zips it to dist/vse_faceswap-<version>-<platform>.zip (at most 150 MB) and validates the zip with
     Blender's own extension validator (`blender --command extension validate`, or the `blender_ext.py`
     script the bpy module ships); any error stops the build with a non-zero exit code.

Examples:
  python build_addon.py                           # every platform
  python build_addon.py --platform linux-x64      # just one
  python build_addon.py --repo /srv/blender-repo  # and a static extension repository of the zips
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
import tomllib
import zipfile
from pathlib import Path
from typing import NamedTuple

ROOT = Path(__file__).resolve().parent
ADDON_SRC = ROOT / "blender_addon"
ENGINE_SRC = ROOT / "core" / "facecache"
EXTENSION_ID = "vse_faceswap"
MAX_ZIP_BYTES = 150 * 10**6

# Blender's Pythons and the numpy their Blenders bundle: resolved against, never shipped.
# 4.2-5.0: Python 3.11, numpy 1.26.4. 5.1 and 5.2: Python 3.13; bpy 5.1.x and 5.2.3 require
# numpy>=2.2,<3 (their METADATA), so the wheels must work with 2.2 (the oldest the range allows).
BLENDER_NUMPY = {"3.11": "1.26.4", "3.13": "2.2.6"}


class Platform(NamedTuple):
    """A zip's platform: the oldest OS its Blenders support (glibc for Linux, macOS version; Windows wheels
    carry no version), the Pythons of its Blenders, and its manifest's range where it differs."""

    os: str  # "linux", "macos" or "windows"
    arch: str  # as in wheel tags: "x86_64", "arm64", "amd64"
    floor: tuple[int, int]  # glibc (Linux) or macOS version; Windows 10 (its wheel tags carry no version)
    pythons: tuple[str, ...] = ("3.11", "3.13")
    blender_version_max: str | None = None  # exclusive; None: the manifest's own
    # {(distribution, python): floor}: a newer floor for one package where no build exists for the platform's
    # floor; the engine says so where it runs on an older OS (facecache/models/runtime_import.py).
    newer_floors: dict[tuple[str, str], tuple[int, int]] = {}  # never changed

    def floor_for(self, distribution: str, python: str) -> tuple[int, int]:
        return self.newer_floors.get((distribution, python), self.floor)

    def floor_name(self, floor: tuple[int, int] | None = None) -> str:
        major, minor = floor or self.floor
        return {"linux": f"glibc {major}.{minor}", "macos": f"macOS {major}.{minor}",
                "windows": f"Windows {major}"}[self.os]


PLATFORMS = {
    # Blender's Linux builds (and its bpy wheels) are manylinux_2_28: glibc 2.28 (VFX Reference Platform 2024+).
    "linux-x64": Platform("linux", "x86_64", (2, 28)),
    "windows-x64": Platform("windows", "amd64", (10, 0)),
    # Blender 4.2-5.2 support macOS 11.2 (their bpy wheels: macosx_11_0). ONNX Runtime builds for Python 3.13
    # need macOS 13 (1.20-1.23; 1.24+ need 14): Blender 5.1+ on macOS 11-12 get a clear refusal instead.
    # PyAV (movies) needs macOS 13 on Apple silicon (15.1; 16+ need 14): there macOS 11-12 read stills and
    # image sequences, and a movie is refused in one line (media.movie.import_av).
    "macos-arm64": Platform("macos", "arm64", (11, 2), newer_floors={("onnxruntime", "3.13"): (13, 0),
                                                                    ("av", "3.11"): (13, 0), ("av", "3.13"): (13, 0)}),
    # Intel Macs: Blender 4.2 and 4.5 LTS are the last with Intel builds (5.0 has none).
    "macos-x64": Platform("macos", "x86_64", (11, 2), pythons=("3.11",), blender_version_max="5.0.0"),
}
LEGACY_MANYLINUX = {"manylinux1": (2, 5), "manylinux2010": (2, 12), "manylinux2014": (2, 17)}


class BuildError(Exception):
    pass


def requirements() -> list[str]:
    """The engine's run-time dependencies (pyproject.toml's), less numpy: Blender ships its own."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    return [r for r in project["dependencies"] if not re.match(r"numpy\b", r)]


# --- wheel tags: what loads on a platform's oldest OS ---------------------------------------------------

def platform_tags(platform: Platform, floor: tuple[int, int]) -> list[str]:
    """Every platform tag a wheel may carry to load on `floor` (pip download picks among these)."""
    if platform.os == "windows":
        return [f"win_{platform.arch}"]
    if platform.os == "linux":
        tags = [f"manylinux_2_{minor}_{platform.arch}" for minor in range(floor[1], 4, -1)]
        return tags + [f"{name}_{platform.arch}" for name, glibc in LEGACY_MANYLINUX.items() if glibc <= floor]
    versions = [(10, minor) for minor in range(9, 17)] + [(major, 0) for major in range(11, floor[0] + 1)]
    versions += [(floor[0], minor) for minor in range(1, floor[1] + 1)]
    return [f"macosx_{major}_{minor}_{arch}" for major, minor in reversed(versions)
            for arch in (platform.arch, "universal2")]


class Wheel(NamedTuple):
    distribution: str  # normalised: lower case, "-" and "." as "_"
    version: str
    pythons: tuple[str, ...]  # "cp311", "py3", ...
    abi: tuple[str, ...]
    platforms: tuple[str, ...]
    name: str

    @classmethod
    def parse(cls, filename: str) -> Wheel:
        parts = filename[:-len(".whl")].split("-")
        if not filename.endswith(".whl") or len(parts) not in (5, 6):
            raise BuildError(f"{filename} is not a wheel file name")
        return cls(re.sub(r"[-_.]+", "_", parts[0]).lower(), parts[1], tuple(parts[-3].split(".")),
                   tuple(parts[-2].split(".")), tuple(parts[-1].split(".")), filename)

    def runs_on(self, python: str) -> bool:
        """Whether Blender with this Python (e.g. "3.13") unpacks it: Blender 4.2.13+ compare the python tag
        (cp311 is 3.11 only, py3 any 3.x) and let an abi3 wheel serve its Python and later ones."""
        wanted = tuple(int(x) for x in python.split("."))
        for tag in self.pythons:
            match = re.fullmatch(r"(?:py|cp)(\d)(\d*)", tag)
            if not match:
                continue
            major, minor = int(match[1]), int(match[2]) if match[2] else None
            if minor is None and major == wanted[0]:
                return True
            if (major, minor) == wanted or ("abi3" in self.abi and major == wanted[0] and minor <= wanted[1]):
                return True
        return False

    def oldest_os(self, platform: Platform) -> tuple[int, int] | None:
        """The oldest OS version (glibc or macOS) this wheel loads on, (0, 0) for any, None: not this platform."""
        found = []
        for tag in self.platforms:
            if tag == "any" or (platform.os == "windows" and tag == f"win_{platform.arch}"):
                found.append((0, 0))
            elif platform.os == "linux" and (match := re.fullmatch(r"manylinux_(\d+)_(\d+)_(\w+)", tag)):
                if match[3] == platform.arch:
                    found.append((int(match[1]), int(match[2])))
            elif platform.os == "linux" and (match := re.fullmatch(r"(manylinux\d+)_(\w+)", tag)):
                if match[2] == platform.arch and match[1] in LEGACY_MANYLINUX:
                    found.append(LEGACY_MANYLINUX[match[1]])
            elif platform.os == "macos" and (match := re.fullmatch(r"macosx_(\d+)_(\d+)_(\w+)", tag)):
                if match[3] in (platform.arch, "universal2"):
                    found.append((int(match[1]), int(match[2])))
        return min(found) if found else None


def wheel_problems(platform_name: str, filenames: list[str]) -> list[str]:
    """Why these wheels cannot ship in the platform's zip (empty: they can): a wheel for another platform or
    Python, one that needs a newer OS than the platform's floor, or two wheels of one package for a Python."""
    platform = PLATFORMS[platform_name]
    problems = []
    wheels = [Wheel.parse(name) for name in filenames]
    for wheel in wheels:
        pythons = [python for python in platform.pythons if wheel.runs_on(python)]
        oldest = wheel.oldest_os(platform)
        if not pythons:
            problems.append(f"{wheel.name} runs on none of this zip's Pythons ({', '.join(platform.pythons)})")
        elif oldest is None:
            problems.append(f"{wheel.name} is not a {platform_name} wheel")
        else:
            allowed = max(platform.floor_for(wheel.distribution, python) for python in pythons)
            if oldest > allowed:
                problems.append(f"{wheel.name} needs {platform.floor_name(oldest)}, newer than "
                                f"{platform.floor_name(allowed)}, the oldest OS {platform_name}'s zip serves")
    for python in platform.pythons:
        seen: dict[str, str] = {}
        for wheel in wheels:
            if wheel.runs_on(python):
                if wheel.distribution in seen:
                    problems.append(f"Blender's Python {python} would get two {wheel.distribution} wheels: "
                                    f"{seen[wheel.distribution]} and {wheel.name}")
                seen[wheel.distribution] = wheel.name
    return problems


# --- the build ----------------------------------------------------------------------------------------

def pip_download(platform_name: str, python: str, dest: Path, constraints: list[str]) -> list[Path]:
    """The wheels of the requirements for one Python; a package with a newer floor of its own (newer_floors)
    is downloaded for that floor apart from the rest, which keep the platform's."""
    platform = PLATFORMS[platform_name]
    dest.mkdir(parents=True)
    constraints_file = dest / "constraints.txt"
    constraints_file.write_text("".join(f"{line}\n" for line in [f"numpy=={BLENDER_NUMPY[python]}", *constraints]))
    by_floor: dict[tuple[int, int], list[str]] = {}
    for requirement in requirements():
        name = re.match(r"[A-Za-z0-9_.-]+", requirement)[0].lower().replace("-", "_")
        by_floor.setdefault(platform.floor_for(name, python), []).append(requirement)
    for floor, wanted in sorted(by_floor.items()):
        command = [sys.executable, "-m", "pip", "download", "--disable-pip-version-check", "--quiet",
                   "--dest", str(dest), "--only-binary=:all:", f"--python-version={python}", "--implementation=cp",
                   "-c", str(constraints_file), *(f"--platform={tag}" for tag in platform_tags(platform, floor)),
                   *wanted]
        print(f"[{platform_name}] Python {python}, {platform.floor_name(floor)}: pip download {' '.join(wanted)}",
              flush=True)
        result = subprocess.run(command, capture_output=True, text=True)
        if result.returncode != 0:
            raise BuildError(f"pip download failed for {platform_name}, Python {python}:\n{result.stderr.strip()}")
    return [wheel for wheel in sorted(dest.glob("*.whl")) if not wheel.name.lower().startswith("numpy-")]


def download_wheels(platform_name: str, dest: Path) -> list[Path]:
    """The wheels for every Python of the platform. A wheel that serves several Pythons (py3, abi3) is pinned
    to the first Python's choice, so that each Blender unpacks one version of each package."""
    if dest.exists():
        shutil.rmtree(dest)  # only this build's wheels (pip's own cache makes a rebuild cheap)
    pythons = PLATFORMS[platform_name].pythons
    chosen: dict[str, Path] = {}
    pins: list[str] = []
    for python in pythons:
        for path in pip_download(platform_name, python, dest / python, pins):
            chosen.setdefault(path.name, path)
        pins = sorted({f"{w.distribution}=={w.version}" for w in map(Wheel.parse, chosen)
                       if all(w.runs_on(p) for p in pythons)})
    if not chosen:
        raise BuildError(f"no wheels were downloaded for {platform_name}")
    if problems := wheel_problems(platform_name, sorted(chosen)):
        raise BuildError(f"the {platform_name} wheels cannot ship:\n  " + "\n  ".join(problems))
    return [chosen[name] for name in sorted(chosen)]


def version() -> str:
    text = (ADDON_SRC / "blender_manifest.toml").read_text(encoding="utf-8")
    match = re.search(r'^version\s*=\s*"([^"]+)"', text, re.M)
    if not match:
        raise BuildError("blender_manifest.toml has no version")
    return match.group(1)


def write_manifest(target: Path, platform_name: str, wheels: list[Path]) -> None:
    text = (ADDON_SRC / "blender_manifest.toml").read_text(encoding="utf-8")
    if maximum := PLATFORMS[platform_name].blender_version_max:
        text, count = re.subn(r'^blender_version_max\s*=.*$', f'blender_version_max = "{maximum}"', text, flags=re.M)
        if count != 1:
            raise BuildError("blender_manifest.toml has no blender_version_max")
    lines = [f'platforms = ["{platform_name}"]']
    if wheels:
        lines.append("wheels = [\n" + "".join(f'  "./wheels/{w.name}",\n' for w in wheels) + "]")
    extra = "\n".join(lines) + "\n"
    # top-level keys must come before the first [table]
    head, sep, tail = text.partition("\n[")
    target.write_text(head.rstrip() + "\n\n" + extra + (sep + tail if sep else ""), encoding="utf-8")


def stage(platform_name: str, build_dir: Path, wheels_cache: Path | None) -> Path:
    folder = build_dir / platform_name / EXTENSION_ID
    if folder.exists():
        shutil.rmtree(folder)
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc", "*.egg-info")
    shutil.copytree(ADDON_SRC, folder, ignore=ignore)
    shutil.copytree(ENGINE_SRC, folder / "facecache", ignore=ignore)
    wheels: list[Path] = []
    if wheels_cache is not None:
        (folder / "wheels").mkdir()
        for wheel in download_wheels(platform_name, wheels_cache / platform_name):
            shutil.copy2(wheel, folder / "wheels" / wheel.name)
            wheels.append(wheel)
    write_manifest(folder / "blender_manifest.toml", platform_name, wheels)
    return folder


def make_zip(folder: Path, out: Path) -> Path:
    out.parent.mkdir(parents=True, exist_ok=True)
    if out.exists():
        out.unlink()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as archive:
        for path in sorted(folder.rglob("*")):
            if path.is_file():
                archive.write(path, path.relative_to(folder).as_posix())
    if out.stat().st_size > MAX_ZIP_BYTES:
        raise BuildError(f"{out} is {out.stat().st_size / 1e6:.1f} MB, over the {MAX_ZIP_BYTES / 1e6:.0f} MB limit")
    return out


# --- Blender's own extension tool: validate, server-generate -------------------------------------------

def blender_ext_command() -> list[str]:
    """Blender's extension command: the `blender` binary named by $BLENDER, else the Blender binary this code
    runs in, else the `blender_ext.py` script of the bpy module this Python imports (the same code: a test
    environment's own Blender), else a `blender` on PATH. Append a sub-command and its arguments."""
    if os.environ.get("BLENDER"):
        return [os.environ["BLENDER"], "--background", "--factory-startup", "--command", "extension"]
    running = sys.modules.get("bpy")
    if running is not None and running.app.binary_path:  # "" in the bpy module
        return [running.app.binary_path, "--background", "--factory-startup", "--command", "extension"]
    try:
        import importlib.util

        spec = importlib.util.find_spec("bpy")
    except (ImportError, ValueError):
        spec = None
    if spec is not None and spec.submodule_search_locations:
        base = Path(list(spec.submodule_search_locations)[0])
        scripts = sorted(glob.glob(str(base / "*" / "scripts" / "addons_core" / "bl_pkg" / "cli" / "blender_ext.py")))
        if not scripts:
            raise BuildError(f"the bpy module at {base} has no blender_ext.py")
        return [sys.executable, scripts[-1]]
    if blender := shutil.which("blender"):
        return [blender, "--background", "--factory-startup", "--command", "extension"]
    raise BuildError("Blender's extension tool is missing: neither a `blender` binary (set $BLENDER) nor the bpy "
                     "module (pip install bpy==5.0.1 on Python 3.11) is available; use --no-validate to skip")


def validator_command(path: Path) -> list[str]:
    command = [*blender_ext_command(), "validate", str(path)]
    if command[1].endswith("blender_ext.py"):
        # `blender --command extension validate` checks the tags against Blender's own list: do the same
        tags = Path(command[1]).parents[3] / "modules" / "_bpy_internal" / "extensions" / "tags.py"
        command += ["--valid-tags", str(tags)] if tags.is_file() else []
    return command


def run_blender_ext(command: list[str], what: str) -> str:
    result = subprocess.run(command, capture_output=True, text=True)
    output = (result.stdout + result.stderr).strip()
    if result.returncode != 0 or re.search(r"^\s*(fatal[ _])?error", output, re.I | re.M):
        raise BuildError(f"{what}:\n{output}")
    return output


def validate(path: Path) -> None:
    output = run_blender_ext(validator_command(path), f"Blender's extension validator rejected {path}")
    print(f"validated     {path}" + (f" ({output.splitlines()[-1]})" if output else ""), flush=True)


def write_repository(zips: list[Path], repo: Path) -> Path:
    """A static extension repository in `repo`: the zips (any earlier vse_faceswap zips there are replaced) and
    Blender's own listing, `index.json` (plus `index.html`), made by `extension server-generate`. Blender adds
    it as a remote repository by the URL of index.json and picks the zip for its platform and Python."""
    repo.mkdir(parents=True, exist_ok=True)
    for old in repo.glob(f"{EXTENSION_ID}-*.zip"):
        old.unlink()
    for archive in zips:
        shutil.copy2(archive, repo / archive.name)
    run_blender_ext([*blender_ext_command(), "server-generate", "--repo-dir", str(repo), "--html"],
                    f"Blender's server-generate failed for {repo}")
    index = repo / "index.json"
    if not index.is_file():
        raise BuildError(f"Blender's server-generate wrote no {index}")
    print(f"repository    {index} ({len(zips)} zips)", flush=True)
    return index


def build(platforms: list[str], dist: Path, build_dir: Path, wheels: bool, check: bool,
          repo: Path | None = None) -> list[Path]:
    zips = []
    for platform_name in platforms:
        folder = stage(platform_name, build_dir, build_dir / "wheels" if wheels else None)
        archive = make_zip(folder, dist / f"{EXTENSION_ID}-{version()}-{platform_name}.zip")
        if check:
            validate(archive)
        print(f"built         {archive} ({archive.stat().st_size / 1e6:.1f} MB)", flush=True)
        zips.append(archive)
    if repo is not None:
        write_repository(zips, repo)
    return zips


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--platform", action="append", choices=sorted(PLATFORMS),
                        help="build only this platform (repeatable; default: all)")
    parser.add_argument("--dist", type=Path, default=ROOT / "dist", help="output folder for the zips (default dist/)")
    parser.add_argument("--build-dir", type=Path, default=ROOT / "build" / "addon",
                        help="staging folder (default build/addon)")
    parser.add_argument("--repo", type=Path, metavar="DIR",
                        help="also write a static extension repository of the zips in DIR (Blender's server-generate)")
    parser.add_argument("--no-wheels", action="store_true", help="do not download wheels (development builds)")
    parser.add_argument("--no-validate", action="store_true", help="skip Blender's extension validator")
    args = parser.parse_args(argv)
    try:
        build(args.platform or list(PLATFORMS), args.dist, args.build_dir, not args.no_wheels, not args.no_validate,
              args.repo)
    except BuildError as exc:
        print(f"build_addon.py: error: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
