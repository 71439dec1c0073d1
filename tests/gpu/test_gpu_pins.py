"""The pinned wheels of the NVIDIA runtime: well-formed, consistent with each other and with the libraries
the engine loads (their hashes and sizes are the index's, printed by scripts/gpu_pins.py; a wrong one makes
the real install stop at its check, which these tests cannot reach without a 2 GB download)."""

import re

import pytest

from facecache.gpu import pins
from facecache.gpu.activate import cuda_libraries

SETS = [(cuda, platform) for cuda in pins.CUDA_MAJORS for platform in pins.PLATFORMS]
# the wheel that ships each library folder the engine loads from
SHIPS = {"cublas": "nvidia-cublas", "cuda_nvrtc": "nvidia-cuda-nvrtc", "curand": "nvidia-curand",
         "cufft": "nvidia-cufft", "cuda_runtime": "nvidia-cuda-runtime", "cudnn": "nvidia-cudnn"}


def test_every_wheel_is_pinned_by_url_sha256_and_size():
    assert pins.WHEELS
    for wheel in pins.WHEELS:
        assert re.fullmatch(r"[0-9a-f]{64}", wheel.sha256), wheel
        assert wheel.url.startswith("https://files.pythonhosted.org/packages/"), wheel
        assert wheel.filename.endswith(".whl") and wheel.size > 1_000_000, wheel
        assert wheel.filename.split("-")[0].lower() == wheel.project.replace("-", "_"), wheel
        tag = "win_amd64" if wheel.platform == "win_amd64" else "x86_64"
        assert wheel.filename.endswith(f"{tag}.whl"), wheel
    assert len({w.sha256 for w in pins.WHEELS}) == len({w.url for w in pins.WHEELS}) == len(pins.WHEELS)


@pytest.mark.parametrize("cuda, platform", SETS)
def test_each_set_has_its_onnxruntime_for_blenders_pythons_and_one_copy_of_each_library(cuda, platform):
    wanted = pins.runtime_set(cuda, platform)
    assert {"cp311", "cp313"} <= set(wanted.pythons)  # Blender 4.2-5.0 and 5.1+
    for tag, wheel in wanted.onnxruntime.items():
        assert wheel.filename.startswith(f"onnxruntime_gpu-{pins.ONNXRUNTIME[cuda]}-{tag}-{tag}-")
    projects = [w.project for w in wanted.libraries]
    assert len(projects) == len(set(projects))
    suffix = f"-cu{cuda}"
    for library in cuda_libraries(cuda, platform):
        part = library.folder[1] if cuda == "12" or library.folder[1] == "cudnn" else None
        if part is None:
            continue  # CUDA 13's toolkit wheels share nvidia/cu13
        assert SHIPS[part] + suffix in projects, (library, projects)
    if cuda == "13":
        assert {"nvidia-cublas", "nvidia-cuda-runtime", "nvidia-cudnn-cu13"} <= set(projects)


def test_download_sizes_are_the_index_figures():
    """The totals the README and the preferences show (bytes from the index's JSON pages, 2026-12)."""
    libraries = {key: sum(w.size for w in pins.runtime_set(*key).libraries) for key in SETS}
    assert round(libraries[("12", "linux_x86_64")] / 1e9, 2) == 1.70
    assert round(libraries[("12", "win_amd64")] / 1e9, 2) == 1.63
    assert round(libraries[("13", "linux_x86_64")] / 1e9, 2) == 1.31
    assert round(libraries[("13", "win_amd64")] / 1e9, 2) == 1.17
    assert pins.runtime_set("12", "linux_x86_64").download_bytes("cp311") == \
        libraries[("12", "linux_x86_64")] + pins.runtime_set("12", "linux_x86_64").onnxruntime["cp311"].size


def test_unknown_sets_are_refused():
    with pytest.raises(KeyError):
        pins.runtime_set("11", "linux_x86_64")
    with pytest.raises(KeyError):
        pins.runtime_set("12", "macosx_arm64")
