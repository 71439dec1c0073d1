"""The extension's remote cache support (botocore and its pure-Python dependencies), installed with the GPU
runtime's machinery: stand-in wheels with the pinned projects and file names, served by a local package index
on 127.0.0.1 (conftest) and fetched by the real pip; then checked, unpacked, put on an engine's path only when a
remote cache is set, and removed."""

import subprocess
import sys
import threading

import pytest

from facecache.errors import Cancelled, ModelCorrupt
from facecache.remote_support import layout, pins
from facecache.remote_support.install import RemoteSupportError, RemoteSupportInstaller, as_wheel

MODULES = {"botocore": "botocore/__init__.py", "jmespath": "jmespath/__init__.py",
           "python-dateutil": "dateutil/__init__.py", "six": "six.py", "urllib3": "urllib3/__init__.py"}


@pytest.fixture
def standins(pip_index):
    """The pins' stand-ins, published: each wheel holds its package, saying which stand-in it is."""
    published = []
    for project, filename, _sha256, _size in pins.WHEELS:
        wheel = pip_index.publish_standin(as_wheel((project, filename, "", 0)),
                                          {MODULES[project]: f"STANDIN = {filename!r}\n".encode()})
        published.append((project, filename, wheel.sha256, wheel.size))
    return tuple(published)


def test_the_pins_are_pure_python_wheels_for_every_python_the_extension_runs():
    for project, filename, sha256, size in pins.WHEELS:
        wheel = as_wheel((project, filename, sha256, size))
        assert wheel.platform_tags == ("any",) and wheel.python in ("py3", "py2.py3"), filename
        assert filename.split("-")[0] == project.replace("-", "_") and len(sha256) == 64
    assert [project for project, *_ in pins.WHEELS] == list(MODULES)
    assert 16_000_000 < pins.download_bytes() < 20_000_000  # botocore is nearly all of it


def test_install_unpacks_the_checked_wheels_and_the_manifest_last(standins, tmp_path, monkeypatch):
    folder = tmp_path / "remote-support"
    monkeypatch.setenv(layout.SUPPORT_DIR_ENV, str(folder))
    events = []
    report = RemoteSupportInstaller(wheels=standins).install(progress=events.append)
    assert report["downloaded"] and report["folder"] == str(folder)
    assert report["download_bytes"] == sum(size for *_, size in standins)
    assert events[-1].done == events[-1].total == report["download_bytes"]
    assert layout.is_installed(folder, standins) and not layout.is_installed(folder)  # not the real pins
    assert sorted(p.name for p in (folder / layout.SITE).iterdir()) == sorted(
        ["botocore", "jmespath", "dateutil", "six.py", "urllib3", *(
            f"{project.replace('-', '_')}-{filename.split('-')[1]}.dist-info" for project, filename, *_ in standins)])
    assert not (folder / "downloads").exists() or not list((folder / "downloads").iterdir())  # kept until done
    assert RemoteSupportInstaller(wheels=standins).install()["downloaded"] is False  # already there


def test_the_engine_puts_it_first_on_its_path_only_when_a_remote_cache_is_set(standins, tmp_path):
    folder = tmp_path / "remote-support"
    RemoteSupportInstaller(folder, wheels=standins).install()
    path = ["/somewhere"]
    assert layout.use_support(folder, path, environ={}, wheels=standins) is None and path == ["/somewhere"]
    assert layout.use_support(folder, path, environ={layout.REMOTE_CACHE_ENV: "s3://b/p"}) is None  # other pins
    site = layout.use_support(folder, path, environ={layout.REMOTE_CACHE_ENV: "s3://studio-cache/faces"},
                              wheels=standins)
    assert site == folder / layout.SITE and path == [str(site), "/somewhere"]
    done = subprocess.run([sys.executable, "-c", "import sys; sys.path[:0] = sys.argv[1:]; import botocore, six; "
                           "print(botocore.STANDIN, six.STANDIN)", str(site)], capture_output=True, text=True)
    assert done.stdout.split() == ["botocore-1.44.8-py3-none-any.whl", "six-1.17.0-py2.py3-none-any.whl"]


def test_a_wheel_that_is_not_the_pinned_one_installs_nothing(standins, tmp_path, pip_index):
    project, filename, _sha256, size = standins[0]
    tampered = ((project, filename, "0" * 64, size),) + standins[1:]
    with pytest.raises(ModelCorrupt):
        RemoteSupportInstaller(tmp_path / "rs", wheels=tampered).install()
    assert not layout.is_installed(tmp_path / "rs", tampered) and not (tmp_path / "rs" / layout.SITE).exists()


def test_a_cancel_stops_the_download_and_says_what_is_left(standins, tmp_path):
    cancel = threading.Event()
    cancel.set()
    with pytest.raises(Cancelled, match="cancelled: nothing was installed"):
        RemoteSupportInstaller(tmp_path / "rs", wheels=standins).install(cancel=cancel)
    assert not layout.is_installed(tmp_path / "rs", standins)


def test_uninstall_removes_it_and_frees_its_bytes(standins, tmp_path):
    folder = tmp_path / "rs"
    installer = RemoteSupportInstaller(folder, wheels=standins)
    installer.install()
    assert installer.uninstall() > 0 and not folder.exists() and not installer.installed
    assert installer.uninstall() == 0


def test_one_install_at_a_time(standins, tmp_path):
    installer = RemoteSupportInstaller(tmp_path / "rs", wheels=standins)
    with installer._exclusive():
        with pytest.raises(RemoteSupportError, match="another install or removal of the remote cache support"):
            installer.install()


def test_no_folder_is_one_line_naming_the_variable(monkeypatch):
    monkeypatch.delenv(layout.SUPPORT_DIR_ENV, raising=False)
    with pytest.raises(Exception, match=layout.SUPPORT_DIR_ENV):
        RemoteSupportInstaller()


def test_a_manifest_without_its_site_folder_is_not_installed(tmp_path):
    (tmp_path / layout.MANIFEST).write_text(__import__("json").dumps(layout.manifest()))
    assert not layout.is_installed(tmp_path)
    (tmp_path / layout.SITE).mkdir()
    assert layout.is_installed(tmp_path) and not layout.is_installed(None)
