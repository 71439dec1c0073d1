"""Installing the NVIDIA runtime into its folder: download with pip, check, unpack, manifest; a rerun
fetching only what is missing; another Python; removal; one install at a time. Stand-in wheels with the
pinned projects, names and layout, from a local package index on 127.0.0.1 (conftest), fetched by pip."""

import json
import os
import subprocess
import sys
import zipfile

import pytest

from facecache.errors import DownloadError, ModelCorrupt
from facecache.gpu_runtime import pins
from facecache.gpu.install import GpuRuntimeError, GpuRuntimeInstaller, _still_held, unpack_wheel
from facecache.gpu_runtime.layout import MANIFEST, RuntimeFolder
from facecache.gpu_runtime.pins import this_python
from facecache.models.pypi_fetch import PackageFetcher
from facecache.permissions import PRIVATE
from facecache.store.claims import HeldClaim
from facecache.store.lease import Lease


def installer(standin, **kwargs) -> GpuRuntimeInstaller:
    return GpuRuntimeInstaller(sets=lambda cuda, platform: standin, **kwargs)


def downloads_left(runtime_dir) -> list[str]:
    folder = runtime_dir / "downloads"
    return sorted(p.name for p in folder.iterdir()) if folder.is_dir() else []


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
    assert downloads_left(runtime_dir) == []  # the wheels are deleted once unpacked
    # each wheel came through pip from the index, once
    assert sorted(r.path for r in asset_server.requests if r.path.startswith("/wheels/")) == \
        sorted(f"/wheels/{w.filename}" for w in plan.wheels)
    downloaded = [e for e in events if not e.file.startswith("unpacking")]
    dones = [e.done for e in downloaded]  # in bytes of the whole download, never going back
    assert dones == sorted(dones) and plan.wheels[0].size in dones and dones[-1] == plan.download_bytes
    assert {e.total for e in downloaded} == {plan.download_bytes} and events[-1].file.startswith("unpacking")
    # nothing more to do: no request
    requests = len(asset_server.requests)
    again = installer(standin).install("12")
    assert not again.plan.wheels and len(asset_server.requests) == requests

    # another Python adds only its onnxruntime wheel, beside the same libraries
    other = next(tag for tag in standin.pythons if tag != this_python())
    more = installer(standin).install("12", [other])
    assert [w.filename for w in more.plan.wheels] == [standin.onnxruntime[other].filename]
    assert sorted(more.pythons) == sorted([this_python(), other]) and (folder / other / "onnxruntime").is_dir()


def test_a_rerun_fetches_only_the_wheels_still_missing(standin_set, runtime_dir, asset_server, pip_index):
    standin, served = standin_set
    library, onnxruntime = standin.libraries[0], standin.onnxruntime[this_python()]
    pip_index.withdraw(onnxruntime.filename)  # the run breaks at its second wheel
    with pytest.raises(DownloadError, match=f"pip could not download onnxruntime-gpu==1.26.0") as caught:
        installer(standin).install("12")
    # one line naming the log, which holds pip's own words
    log = runtime_dir / "logs" / f"pip-{standin.platform}.log"
    assert "\n" not in str(caught.value) and "ERROR" not in str(caught.value) and f"is in {log}" in str(caught.value)
    assert "ERROR: No matching distribution found for onnxruntime-gpu==1.26.0" in log.read_text()
    assert RuntimeFolder.resolve().installed() is None  # nothing half-installed is used
    assert downloads_left(runtime_dir) == [library.filename]  # the first wheel, whole and checked, is kept
    pip_index.publish(onnxruntime.project, onnxruntime.filename, served[onnxruntime.filename])
    events = []
    installer(standin).install("12", progress=events.append)
    assert len(asset_server.served(library.filename)) == 1  # not fetched again
    assert len(asset_server.served(onnxruntime.filename)) == 1
    assert any(e.file.endswith("(kept from an earlier run)") and e.done == library.size for e in events)
    assert RuntimeFolder.resolve().installed() is not None and downloads_left(runtime_dir) == []


def test_progress_shows_the_bytes_arriving_while_pip_downloads(standin_set, asset_server):
    standin, served = standin_set
    library = standin.libraries[0]
    asset_server.stall_after[f"/wheels/{library.filename}"] = (library.size // 2, 2.0)
    events = []
    installer(standin).install("12", progress=events.append)
    assert any(0 < e.done < library.size for e in events if e.file.startswith("1/"))


def test_a_wheel_that_fails_its_hash_installs_nothing(standin_set, runtime_dir, pip_index):
    standin, served = standin_set
    library = standin.libraries[0]
    data = served[library.filename]
    pip_index.publish(library.project, library.filename, data[:-1] + bytes([data[-1] ^ 1]))  # same size
    with pytest.raises(ModelCorrupt, match=f"pip refused {library.project}==.* pinned SHA-256 {library.sha256}"):
        installer(standin).install("12")
    assert RuntimeFolder.resolve().installed() is None
    assert downloads_left(runtime_dir) == []  # neither the wheel nor pip's working folder


def test_a_download_cut_off_part_way_is_resumed_by_pip_or_fetched_again_by_a_rerun(standin_set, runtime_dir,
                                                                                   asset_server):
    standin, _ = standin_set
    library = standin.libraries[0]
    asset_server.drop_after[f"/wheels/{library.filename}"] = library.size // 2  # once
    if PackageFetcher().pip_version() >= (25, 1):  # pip resumes it within the run (--resume-retries)
        installer(standin).install("12")
        assert [r.range for r in asset_server.served(library.filename)] == [None, f"bytes={library.size // 2}-"]
    else:  # an older pip finds the cut-off file's SHA-256 wrong: nothing is kept, the next run fetches it whole
        with pytest.raises(ModelCorrupt, match="cut off"):
            installer(standin).install("12")
        assert RuntimeFolder.resolve().installed() is None and downloads_left(runtime_dir) == []
        installer(standin).install("12")
        assert [r.range for r in asset_server.served(library.filename)] == [None, None]
    assert RuntimeFolder.resolve().installed() is not None


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
    log_bytes = (runtime_dir / "logs" / f"pip-{standin.platform}.log").stat().st_size  # pip's output, removed too
    assert installer(standin).uninstall() == report.disk_bytes + log_bytes > log_bytes > 0
    assert not runtime_dir.exists()
    assert installer(standin).uninstall() == 0


def test_the_installs_size_is_the_runtimes_own_bytes_not_a_dead_installs_leftovers(standin_set, runtime_dir):
    standin, _ = standin_set
    report = installer(standin).install("12")
    folder = runtime_dir / standin.platform
    assert report.disk_bytes == sum(p.stat().st_size for p in folder.rglob("*") if p.is_file())
    leftover = folder / f".{this_python()}.partial-99999" / "onnxruntime"  # an install that died unpacking
    leftover.mkdir(parents=True)
    (leftover / "big.bin").write_bytes(bytes(1 << 20))
    again = installer(standin).install("12")  # nothing to do: the leftover stays until the next download
    assert not again.plan.wheels and leftover.is_dir()
    assert again.disk_bytes == report.disk_bytes
    assert RuntimeFolder.resolve().disk_bytes() == report.disk_bytes  # what `gpu status` says


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


HOLDER = ("import sys, time; from pathlib import Path; from facecache.store.lease import Lease; "
          "from facecache.permissions import PRIVATE; "
          "lease = Lease.acquire(Path(sys.argv[1]), 600, PRIVATE); print('held' if lease else 'refused', flush=True); "
          "time.sleep(600)")


def test_one_install_at_a_time_and_a_dead_holders_lock_is_taken_over(standin_set, runtime_dir, asset_server):
    standin, _ = standin_set
    lock = runtime_dir / "locks" / "install.lock"
    lock.parent.mkdir(parents=True)
    holder = subprocess.Popen([sys.executable, "-c", HOLDER, str(lock)], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "held"  # another install at work (Blender's, say)
        with pytest.raises(GpuRuntimeError, match="another install or removal of the NVIDIA GPU runtime is running"):
            installer(standin).install("12")
        with pytest.raises(GpuRuntimeError, match="another install or removal"):
            installer(standin).uninstall()
        assert not asset_server.requests
    finally:
        holder.kill()
        holder.wait()
    # the holder died without releasing it: on the same machine its lock is stale at once
    installer(standin).install("12")
    assert RuntimeFolder.resolve().installed() is not None and not lock.exists()


def test_the_command_refused_by_the_lock_says_so_in_one_line(runtime_dir):
    lock = runtime_dir / "locks" / "install.lock"
    lock.parent.mkdir(parents=True)
    # were the lock not honoured, pip would find no index (a closed port), never the real 2 GB
    env = {**{k: v for k, v in os.environ.items() if not k.upper().startswith("PIP_")},
           "PIP_CONFIG_FILE": os.devnull, "PIP_INDEX_URL": "http://127.0.0.1:9/simple/"}
    with Lease.acquire(lock, 600, PRIVATE):
        done = subprocess.run([sys.executable, "-m", "facecache", "gpu", "install", "--cuda", "12"],
                              capture_output=True, text=True, timeout=120, env=env)
    assert done.returncode == 2
    last = done.stderr.strip().splitlines()[-1]
    assert "another install or removal of the NVIDIA GPU runtime is running" in last and "Traceback" not in done.stderr


def test_an_install_whose_lock_was_taken_over_changes_nothing_more(tmp_path):
    lock = tmp_path / "install.lock"
    held = HeldClaim([Lease.acquire(lock, 600, PRIVATE)], ttl=1e-9)  # due for renewal at every step
    lock.unlink()
    assert Lease.acquire(lock, 600, PRIVATE)  # another install took it over (this one had stopped too long)
    with pytest.raises(GpuRuntimeError, match="another install or removal has started since; nothing more"):
        _still_held(held)


def test_the_dry_run_lists_each_wheels_pinned_size_and_sha256(runtime_dir):
    """What a studio's IT approves before the download: every file, its size and the SHA-256 it is checked
    against (no URL: the pins name no host, pip takes the files from the index it is set up for)."""
    wanted = pins.runtime_set("12", "win_amd64").wheels_for("cp313")
    command = [sys.executable, "-m", "facecache", "gpu", "install", "--dry-run", "--cuda", "12",
               "--platform", "win_amd64", "--python", "cp313"]
    done = subprocess.run(command + ["--json"], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    plan = json.loads(done.stdout)
    assert plan["wheels"] == [{"filename": w.filename, "project": w.project, "version": w.version, "size": w.size,
                               "sha256": w.sha256, "requirement": f"{w.project}=={w.version} --hash=sha256:{w.sha256}"}
                              for w in wanted]
    assert plan["download_bytes"] == sum(w.size for w in wanted)
    done = subprocess.run(command, capture_output=True, text=True, timeout=120)
    lines = done.stdout.splitlines()
    assert done.returncode == 0 and lines[0].endswith(f"{len(wanted)} wheels, 1.9 GB to download, each checked "
                                                      "against its pinned size and SHA-256:")
    assert lines[1:] == [f"  {w.filename}  {w.size} bytes  sha256:{w.sha256}" for w in wanted]
    assert not runtime_dir.exists()  # nothing was downloaded, nothing made
