"""Installing the NVIDIA runtime into its folder: download (resumable), check, unpack, manifest; another
Python; removal. Stand-in wheels with the pinned names and layout, from a local HTTP server (conftest)."""

import json
import zipfile

import pytest

from facecache.errors import ModelCorrupt
from facecache.gpu import pins
from facecache.gpu.install import GpuRuntimeError, GpuRuntimeInstaller, unpack_wheel
from facecache.gpu.layout import MANIFEST, RuntimeFolder, this_python


def installer(standin, **kwargs) -> GpuRuntimeInstaller:
    return GpuRuntimeInstaller(sets=lambda cuda, platform: standin, **kwargs)


def test_install_puts_libraries_once_and_onnxruntime_per_python(standin_set, runtime_dir, asset_server):
    standin, served = standin_set
    events = []
    plan = installer(standin).plan("12")
    assert plan.download_bytes == standin.download_bytes(this_python()) and plan.replace
    report = installer(standin).install("12", progress=events.append)
    folder = runtime_dir / standin.platform
    assert report.folder == folder and report.pythons == (this_python(),)
    assert (folder / "nvidia" / "cudnn" / "lib" / "libcudnn.so.9").is_file() or standin.platform == "win_amd64"
    site = folder / this_python()
    assert (site / "onnxruntime" / "__init__.py").is_file()
    assert (site / "onnxruntime" / "tools.py").read_text() == "X = 1\n"  # a wheel's purelib data
    assert not (site / "onnxruntime_gpu-1.26.0.data").exists()  # headers are not needed
    manifest = json.loads((folder / MANIFEST).read_text())
    assert manifest["cuda"] == "12" and list(manifest["pythons"]) == [this_python()]
    assert manifest["libraries"] == {w.filename: w.sha256 for w in standin.libraries}
    assert not any((runtime_dir / "downloads").iterdir())  # the wheels are deleted once unpacked
    assert events[-1].file.startswith("unpacking") and any(e.total == plan.download_bytes for e in events)
    # nothing more to do: no request
    requests = len(asset_server.requests)
    again = installer(standin).install("12")
    assert not again.plan.wheels and len(asset_server.requests) == requests

    # another Python adds only its onnxruntime wheel, beside the same libraries
    other = next(tag for tag in standin.pythons if tag != this_python())
    more = installer(standin).install("12", [other])
    assert [w.filename for w in more.plan.wheels] == [standin.onnxruntime[other].filename]
    assert sorted(more.pythons) == sorted([this_python(), other]) and (folder / other / "onnxruntime").is_dir()


def test_an_interrupted_download_resumes_where_it_stopped(standin_set, runtime_dir, asset_server):
    standin, served = standin_set
    library = standin.libraries[0]
    path = f"/wheels/{library.filename}"
    asset_server.drop_after[path] = 100
    asset_server.drop_times[path] = 5  # more drops than the downloader retries: this run stops
    with pytest.raises(Exception, match="run the same command again to resume"):
        installer(standin, retries=1).install("12")
    assert RuntimeFolder.resolve().installed() is None  # nothing half-installed is used
    part = runtime_dir / "downloads" / f"{library.filename}.part"
    assert part.stat().st_size == 200
    asset_server.drop_after.clear()
    installer(standin).install("12")
    ranges = [r.range for r in asset_server.served(library.filename)]
    assert ranges[-1] == "bytes=200-"  # the next run asked for the rest only
    assert RuntimeFolder.resolve().installed() is not None


def test_a_wheel_that_fails_its_hash_is_deleted_and_nothing_is_installed(standin_set, runtime_dir, asset_server):
    standin, served = standin_set
    library = standin.libraries[0]
    data = served[library.filename]
    asset_server.files[f"/wheels/{library.filename}"] = data[:-1] + bytes([data[-1] ^ 1])  # same size
    with pytest.raises(ModelCorrupt, match=f"{library.filename} .* not the pinned .* nothing was installed"):
        installer(standin).install("12")
    assert RuntimeFolder.resolve().installed() is None
    assert not (runtime_dir / "downloads" / f"{library.filename}.part").exists()


def test_another_cuda_set_replaces_the_installed_one(standin_set, runtime_dir):
    standin, _ = standin_set
    installer(standin).install("12")
    renamed = pins.RuntimeSet("13", standin.platform, standin.libraries, standin.onnxruntime)
    replaced = GpuRuntimeInstaller(sets=lambda cuda, platform: renamed).install("13")
    assert replaced.plan.replace and RuntimeFolder.resolve().installed().cuda == "13"
    assert not [p for p in runtime_dir.iterdir() if p.name.startswith(".")]  # no staging or old folder left


def test_uninstall_removes_the_runtime_and_frees_its_bytes(standin_set, runtime_dir):
    standin, _ = standin_set
    report = installer(standin).install("12")
    assert installer(standin).uninstall() == report.disk_bytes > 0
    assert not runtime_dir.exists()
    assert installer(standin).uninstall() == 0


def test_a_member_leaving_its_folder_stops_the_unpacking(tmp_path):
    wheel = tmp_path / "evil-1.0-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as archive:
        archive.writestr("../outside.txt", b"x")
    with pytest.raises(GpuRuntimeError, match="outside its folder"):
        unpack_wheel(wheel, tmp_path / "dest")
    assert not (tmp_path / "outside.txt").exists()


def test_bad_choices_are_one_clear_message(standin_set):
    standin, _ = standin_set
    with pytest.raises(GpuRuntimeError, match="no wheel for cp27"):
        installer(standin).plan("12", ["cp27"])
    with pytest.raises(GpuRuntimeError, match="unknown CUDA major '11'"):
        installer(standin).plan("11")
    with pytest.raises(GpuRuntimeError, match="linux x86-64 and Windows x64 only"):
        GpuRuntimeInstaller(platform="macosx_arm64").plan("12")


def test_not_enough_space_is_said_before_downloading(standin_set, monkeypatch, asset_server):
    import shutil
    from collections import namedtuple

    standin, _ = standin_set
    usage = namedtuple("usage", "total used free")
    monkeypatch.setattr(shutil, "disk_usage", lambda path: usage(10, 10, 0))
    with pytest.raises(GpuRuntimeError, match="needs about .* GB free") as caught:
        installer(standin).install("12")
    assert caught.value.exit_code == 5 and not asset_server.requests
