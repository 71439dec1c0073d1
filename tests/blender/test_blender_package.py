"""The built extension: manifest, wheels, vendored engine, registration under Blender's rules."""

import subprocess
import sys
import tomllib
import zipfile
from pathlib import Path

import pytest

from blender_helpers import MODULE, ROOT, compat, this_platform

pytestmark = [pytest.mark.blender, pytest.mark.index]


def test_help_documents_the_build():
    result = subprocess.run([sys.executable, str(ROOT / "build_addon.py"), "--help"], capture_output=True, text=True)
    assert result.returncode == 0
    for word in ("--platform", "linux-x64", "windows-x64", "macos-arm64", "macos-x64", "validate", "wheels", "--repo"):
        assert word in result.stdout


def test_zip_holds_manifest_wheels_and_engine(addon_zip):
    with zipfile.ZipFile(addon_zip) as archive:
        names = archive.namelist()
        manifest = tomllib.loads(archive.read("blender_manifest.toml").decode())
        init = archive.read("__init__.py").decode()
    assert manifest["id"] == "vse_faceswap" and manifest["schema_version"] == "1.0.0"
    assert manifest["blender_version_min"] == "4.2.13" and manifest["tags"] == ["Sequencer"]
    assert manifest["blender_version_max"] == "5.3.0"  # exclusive: 5.2 LTS is the newest tested
    assert set(manifest["permissions"]) == {"files", "network"}
    assert manifest["platforms"] == [this_platform()]
    wheels = manifest["wheels"]
    assert all(w.startswith("./wheels/") and w[2:] in names for w in wheels)
    assert not any("numpy-" in w for w in wheels), "Blender's own numpy must be used"
    assert any("onnxruntime" in w for w in wheels) and any("opencv_python_headless" in w for w in wheels)
    for requirement in ("msgpack", "xxhash", "watchdog", "platformdirs", "psutil"):  # every run-time dependency
        assert any(w.split("/")[-1].startswith(requirement + "-") for w in wheels), requirement
    assert not any(w.split("/")[-1].startswith("onnx-") for w in wheels)  # the emap is read without it
    assert not any("onnxruntime_gpu" in w for w in wheels), "ONNX Runtime for the CPU; the GPU's is a download"
    for python in ("cp311", "cp313"):  # Blender 4.2-5.0 and 5.1+: each unpacks the wheels for its own Python
        assert any(w.split("/")[-1].startswith("onnxruntime-") and f"-{python}-" in w for w in wheels), python
    assert "facecache/worker.py" in names and "facecache/analysis/coverage.py" in names
    assert "bl_info" not in init


def test_the_manifest_claims_the_blenders_that_are_tested():
    import re

    manifest = tomllib.loads((ROOT / "blender_addon" / "blender_manifest.toml").read_text(encoding="utf-8"))
    lts = re.search(r'^BLENDER_LTS="([^"]+)"', (ROOT / "dev").read_text(), re.M).group(1).split()
    (series_5_0,) = re.findall(r'"bpy==([0-9.]+);', (ROOT / "pyproject.toml").read_text())
    debian_root = ROOT / "scripts" / "debian_root.sh"  # ./dev test's Debian 13 root: bpy 5.2 on Python 3.13
    if not debian_root.is_file():
        pytest.skip("scripts/debian_root.sh (the bpy 5.2 root of ./dev test) is not in this tree")
    newest = re.search(r"^BPY=([0-9.]+)", debian_root.read_text(), re.M).group(1)
    tested = sorted(tuple(map(int, v.split("."))) for v in [*lts, series_5_0, newest])
    low = tuple(map(int, manifest["blender_version_min"].split(".")))
    high = tuple(map(int, manifest["blender_version_max"].split(".")))  # exclusive
    assert all(low <= v < high for v in tested)
    assert tested[0][:2] == low[:2], "the oldest Blender the manifest claims is tested"
    assert tested[-1][:2] == (high[0], high[1] - 1), "the newest series the manifest claims is tested"


@pytest.mark.every_blender
def test_this_blenders_validator_accepts_every_platform_zip(bpy, extension_zip, build_addon):
    command = build_addon.validator_command(extension_zip(this_platform()))
    if bpy.app.binary_path:  # a Blender binary: its own `--command extension validate`
        assert command[0] == bpy.app.binary_path, command
    else:  # the bpy module's validator script, with its tag list
        series = "{}.{}".format(*bpy.app.version[:2])
        assert f"/bpy/{series}/scripts/" in Path(command[1]).as_posix(), command
        assert command[-2] == "--valid-tags" and f"/bpy/{series}/" in Path(command[-1]).as_posix()
    for platform in build_addon.PLATFORMS:
        build_addon.validate(extension_zip(platform))


@pytest.mark.every_blender
def test_validator_rejects_a_broken_manifest_or_an_unknown_tag(tmp_path, bpy, addon_zip, build_addon):
    broken = tmp_path / "broken.zip"
    with zipfile.ZipFile(broken, "w") as archive:
        archive.writestr("blender_manifest.toml", 'schema_version = "1.0.0"\nid = "x"\n')
        archive.writestr("__init__.py", "")
    with pytest.raises(build_addon.BuildError, match="rejected"):
        build_addon.validate(broken)
    with zipfile.ZipFile(addon_zip) as archive:
        manifest = archive.read("blender_manifest.toml").decode()
    assert 'tags = ["Sequencer"]' in manifest
    tagged = tmp_path / "tagged.zip"
    with zipfile.ZipFile(tagged, "w") as archive:
        archive.writestr("blender_manifest.toml", manifest.replace('tags = ["Sequencer"]', 'tags = ["Face Swap"]'))
        archive.writestr("__init__.py", "")
    with pytest.raises(build_addon.BuildError, match="Face Swap"):
        build_addon.validate(tagged)


@pytest.mark.every_blender
def test_registered_the_blender_way(bpy, addon):
    assert MODULE in bpy.context.preferences.addons
    for op in ("analyze", "swap", "update", "cancel", "cache_prune", "cache_clear"):
        assert hasattr(bpy.ops.faceswap, op)
        assert getattr(bpy.ops.faceswap, op).idname() == f"FACESWAP_OT_{op}"
    props = bpy.context.scene.faceswap
    assert any(p.identifier.startswith("source") for p in props.bl_rna.properties)
    assert "last_report" in props.bl_rna.properties
    assert bpy.types.FACESWAP_PT_main.bl_category == "Face Swap"
    assert bpy.types.FACESWAP_PT_main.bl_space_type == "SEQUENCE_EDITOR"
    assert hasattr(compat().strip_type(), "faceswap")


@pytest.mark.every_blender
def test_this_blender_unpacks_one_wheel_of_each_package_for_its_own_python(bpy, addon_zip):
    """Blender's own choice (the function its extension manager runs before unpacking): from the zip's wheels
    for Python 3.11 and 3.13, the ones for this Blender's Python, one per package, every package there."""
    from bl_pkg.bl_extension_ops import _extensions_wheel_filter_for_this_system

    from _bpy_internal.extensions.wheel_manager import wheel_list_deduplicate_as_skip_set

    with zipfile.ZipFile(addon_zip) as archive:
        wheels = tomllib.loads(archive.read("blender_manifest.toml").decode())["wheels"]
    picked = _extensions_wheel_filter_for_this_system(wheels)
    assert not wheel_list_deduplicate_as_skip_set([("vse_faceswap", picked)])  # no package twice
    distribution = lambda wheel: wheel.split("/")[-1].split("-")[0]  # noqa: E731
    assert {distribution(w) for w in picked} == {distribution(w) for w in wheels}
    this_python = "cp{}{}".format(*sys.version_info[:2])
    assert all(f"-{this_python}-" in w for w in picked if "-cp3" in w and "-abi3-" not in w), picked
    assert len(picked) < len(wheels)  # the other Python's wheels stay packed
