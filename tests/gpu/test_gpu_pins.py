"""The pinned wheels of the NVIDIA runtime: well-formed, consistent with each other and with the libraries
the engine loads (their hashes and sizes are the index's, printed by scripts/gpu_pins.py; a wrong one makes
the real install stop at its check, which these tests cannot reach without a 2 GB download)."""

import re

import pytest

from facecache.gpu_runtime import pins
from facecache.gpu_runtime.activate import cuda_libraries

SETS = [(cuda, platform) for cuda in pins.CUDA_MAJORS for platform in pins.PLATFORMS]
# the wheel that ships each library folder the engine loads from
SHIPS = {"cublas": "nvidia-cublas", "cuda_nvrtc": "nvidia-cuda-nvrtc", "curand": "nvidia-curand",
         "cufft": "nvidia-cufft", "cuda_runtime": "nvidia-cuda-runtime", "cudnn": "nvidia-cudnn"}
WHEEL_NAME = re.compile(r"(?P<name>[A-Za-z0-9_.]+)-(?P<version>[0-9][0-9.]*)-(?P<python>cp3\d+|py3)-"
                        r"(?P<abi>cp3\d+|none)-(?P<platforms>[a-z0-9_.]+)\.whl")


def test_every_wheel_is_pinned_by_project_file_name_sha256_and_size():
    assert pins.WHEELS
    for wheel in pins.WHEELS:
        assert re.fullmatch(r"[0-9a-f]{64}", wheel.sha256) and wheel.size > 1_000_000, wheel
        parts = WHEEL_NAME.fullmatch(wheel.filename)  # a file name, nothing of where it is served
        assert parts, wheel
        assert parts["name"].lower() == wheel.project.replace("-", "_") and parts["version"] == wheel.version, wheel
        assert parts["python"] == wheel.python and parts["platforms"].split(".") == list(wheel.platform_tags), wheel
        tag = "win_amd64" if wheel.platform == "win_amd64" else "x86_64"
        assert all(t.endswith(tag) for t in wheel.platform_tags), wheel
        if not wheel.is_library:
            assert wheel.version == pins.ONNXRUNTIME[wheel.cuda] and parts["abi"] == wheel.python, wheel
    assert len({w.sha256 for w in pins.WHEELS}) == len({w.filename for w in pins.WHEELS}) == len(pins.WHEELS)


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
    """The totals docs/gpu.md, the README and the preferences show (bytes from the index's JSON pages, 2026-12)."""
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
