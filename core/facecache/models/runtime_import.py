"""Why onnxruntime does not import, said so the user knows what to do.

The extension's macOS zip ships, for Blender 5.1+ (Python 3.13), an ONNX Runtime that needs macOS 13: no
build for Python 3.13 runs on macOS 11 or 12 (docs/platforms.md). Blender unpacks it whatever the macOS
version, so on an older Mac the import fails with a loader error; this module names the real cause from
the installed wheel's own tags (its dist-info `WHEEL` file) and the Mac's version.
"""

from __future__ import annotations

import platform
import re
import sys

from facecache.errors import FaceCacheError


class RuntimeUnavailable(FaceCacheError):
    """onnxruntime cannot be imported or cannot load a model."""


def import_onnxruntime():
    """The onnxruntime module, or RuntimeUnavailable saying why it does not import and what to do."""
    try:
        import onnxruntime
    except ImportError as exc:
        raise RuntimeUnavailable(onnxruntime_import_problem(exc)) from None
    return onnxruntime


def macos_needed(tags: list[str], machine: str) -> tuple[int, int] | None:
    """The oldest macOS that any of a wheel's tags (e.g. "cp313-cp313-macosx_13_0_arm64") runs on, for this
    machine ("arm64", "x86_64"); None when no tag is a macOS one for it."""
    versions = [(int(m[1]), int(m[2])) for tag in tags
                if (m := re.search(r"macosx_(\d+)_(\d+)_(\w+)$", tag)) and m[3] in (machine, "universal2")]
    return min(versions) if versions else None


def installed_wheel_tags(distribution: str) -> tuple[str, list[str]]:
    """(version, tags) of an installed distribution, from its metadata; ("", []) when it is not installed."""
    from importlib import metadata

    try:
        found = metadata.distribution(distribution)
    except metadata.PackageNotFoundError:
        return "", []
    wheel = found.read_text("WHEEL") or ""
    return found.version, [line.split(":", 1)[1].strip() for line in wheel.splitlines() if line.startswith("Tag:")]


def onnxruntime_import_problem(exc: BaseException, *, mac_version: str | None = None, machine: str | None = None,
                               installed: tuple[str, list[str]] | None = None) -> str:
    """One line: why `import onnxruntime` failed and what to do. The keywords default to this Mac's version
    (none elsewhere) and processor, and the installed onnxruntime wheel's version and tags."""
    too_old = newer_macos_needed("onnxruntime", mac_version, machine, installed)
    if too_old:
        version, needed, have = too_old
        python = "{}.{}".format(*sys.version_info[:2])
        return (f"ONNX Runtime {version} (for Python {python}) needs macOS {needed} or later, and this "
                f"Mac runs macOS {have}: update macOS, or use Blender 4.2 to 5.0 (Python 3.11), whose "
                "ONNX Runtime runs on macOS 11")
    return f"onnxruntime cannot be imported ({exc}); install it: `pip install onnxruntime`"


def newer_macos_needed(distribution: str, mac_version: str | None = None, machine: str | None = None,
                       installed: tuple[str, list[str]] | None = None) -> tuple[str, str, str] | None:
    """(wheel version, macOS it needs, macOS this Mac runs) when the installed wheel of `distribution` needs
    a newer macOS than this one; None elsewhere. The keywords default to this Mac and the installed wheel."""
    if mac_version is None:
        mac_version = platform.mac_ver()[0] if sys.platform == "darwin" else ""
    version, tags = installed if installed is not None else installed_wheel_tags(distribution)
    needed = macos_needed(tags, machine or platform.machine()) if mac_version else None
    have = tuple(int(part) for part in (mac_version.split(".") + ["0"])[:2]) if mac_version else None
    if needed and have and have < needed:
        return version, f"{needed[0]}.{needed[1]}", mac_version
    return None
