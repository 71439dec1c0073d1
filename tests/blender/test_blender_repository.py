"""The studio's extension repository (`build_addon.py --repo DIR`): Blender adds it, installs the extension from
it and sees the next version as an update. The workstation is a fresh bpy process (tests/blender/studio_repository.py)
with its own user folders; the test session's own installed extension is untouched."""

import json
import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from blender_helpers import ROOT, fresh_blender, this_platform

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


class Workstation:
    """A Blender session (a fresh Blender process, tests/blender/studio_repository.py) with its own user folders."""

    def __init__(self, url: str, user: Path):
        self.process = subprocess.Popen(
            fresh_blender(ROOT / "tests" / "blender" / "studio_repository.py", url), text=True,
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
            env={**os.environ, "BLENDER_USER_RESOURCES": str(user)})
        self.output: list[str] = []

    def do(self, action: str) -> dict:
        self.process.stdin.write(action + "\n")
        self.process.stdin.flush()
        for line in self.process.stdout:  # Blender's own status and download progress, then the answer
            if line.startswith("RESULT "):
                return json.loads(line[len("RESULT "):])
            self.output.append(line)
        raise AssertionError(f"the bpy process ended ({self.process.wait()}):\n" + "".join(self.output[-40:]))

    def close(self) -> None:
        self.process.stdin.close()
        assert self.process.wait(timeout=120) == 0, "".join(self.output[-40:])


@pytest.mark.every_blender
def test_a_studio_repository_installs_the_extension_then_offers_the_next_version(tmp_path, bpy, extension_zip, build_addon):
    repo = tmp_path / "repo"
    build_addon.write_repository([extension_zip(platform) for platform in build_addon.PLATFORMS], repo)
    url = (repo / "index.json").as_uri()
    workstation = Workstation(url, tmp_path / "workstation")
    python_tag = "cp{}{}-".format(*sys.version_info[:2])

    first = workstation.do("install")
    assert first["installed"] == build_addon.version() and first["enabled"], first
    assert first["onnxruntime_tags"] and all(tag.startswith(python_tag) for tag in first["onnxruntime_tags"]), first

    bumped = with_version(extension_zip(this_platform()), "99.0.0", tmp_path / "next")
    build_addon.write_repository([bumped], repo)  # the studio publishes the next release in the same folder
    assert sorted(p.name for p in repo.glob("*.zip")) == [bumped.name]

    second = workstation.do("upgrade")  # in the same session: Blender checks for updates
    assert second["updates"] == 1, second  # Blender's own count of extensions with a newer version
    assert second["installed"] == "99.0.0" and second["enabled"], second
    workstation.close()
