"""The studio's extension repository (`build_addon.py --repo DIR`): Blender adds it, installs the extension from
it and sees the next version as an update. Each step runs in a fresh bpy process (tests/blender/studio_repository.py)
with its own user folders, as a workstation's Blender does; the session's own installed extension is untouched."""

import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from blender_helpers import ROOT, fresh_blender, last_json_line, load_build_addon

pytestmark = [pytest.mark.blender, pytest.mark.index]


def with_version(archive: Path, new_version: str, out_dir: Path) -> Path:
    """A copy of the zip whose manifest says `new_version`: the next release, as the studio would publish it."""
    with zipfile.ZipFile(archive) as source:
        manifest = source.read("blender_manifest.toml").decode()
        old_version = next(line.split('"')[1] for line in manifest.splitlines() if line.startswith("version ="))
        out = out_dir / archive.name.replace(old_version, new_version)
        out_dir.mkdir(parents=True, exist_ok=True)
        with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as target:
            for item in source.infolist():
                data = source.read(item)
                if item.filename == "blender_manifest.toml":
                    data = manifest.replace(f'version = "{old_version}"', f'version = "{new_version}"', 1).encode()
                target.writestr(item, data)
    return out


def workstation(url: str, action: str, user: Path) -> dict:
    result = subprocess.run(fresh_blender(ROOT / "tests" / "blender" / "studio_repository.py", url, action),
                            capture_output=True, text=True, env={**os.environ, "BLENDER_USER_RESOURCES": str(user)},
                            timeout=900)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    return last_json_line(result.stdout)


@pytest.mark.every_blender
def test_a_studio_repository_installs_the_extension_then_offers_the_next_version(tmp_path, bpy, extension_zip):
    build_addon = load_build_addon()
    repo = tmp_path / "repo"
    build_addon.write_repository([extension_zip(platform) for platform in build_addon.PLATFORMS], repo)
    url = (repo / "index.json").as_uri()
    user = tmp_path / "workstation"
    python_tag = "cp{}{}-".format(*sys.version_info[:2])

    first = workstation(url, "install", user)
    assert first["installed"] == build_addon.version() and first["enabled"], first
    assert first["onnxruntime_tags"] and all(tag.startswith(python_tag) for tag in first["onnxruntime_tags"]), first

    bumped = with_version(extension_zip("linux-x64"), "99.0.0", tmp_path / "next")
    build_addon.write_repository([bumped], repo)  # the studio publishes the next release in the same folder
    assert sorted(p.name for p in repo.glob("*.zip")) == [bumped.name]

    second = workstation(url, "upgrade", user)
    assert second["updates"] == 1, second  # Blender's own count of extensions with a newer version
    assert second["installed"] == "99.0.0" and second["enabled"], second
