"""build_addon.py's wheel checks: every wheel of a zip loads on the oldest OS its Blenders support, and each
Blender Python unpacks one wheel per package. The names are the shapes pip downloads (tags from the wheels
on the package index); pip itself cannot be made to return a too-new wheel, its --platform tags forbid it."""

import pytest

MACOS_ARM64_ZIP = [  # what the macos-arm64 zip ships (Blender 4.2-5.0 on Python 3.11, 5.1+ on 3.13)
    "onnxruntime-1.19.2-cp311-cp311-macosx_11_0_universal2.whl",
    "onnxruntime-1.23.2-cp313-cp313-macosx_13_0_arm64.whl",
    "opencv_python_headless-4.10.0.84-cp37-abi3-macosx_11_0_arm64.whl",
    "msgpack-1.2.4-cp311-cp311-macosx_11_0_arm64.whl",
    "msgpack-1.2.4-cp313-cp313-macosx_11_0_arm64.whl",
    "protobuf-7.36.2-cp310-abi3-macosx_10_9_universal2.whl",
    "sympy-1.14.0-py3-none-any.whl",
]
LINUX_ZIP = [
    "onnxruntime-1.32.0-cp311-cp311-manylinux_2_28_x86_64.whl",
    "onnxruntime-1.32.0-cp313-cp313-manylinux_2_28_x86_64.whl",
    "psutil-7.2.2-cp36-abi3-manylinux2010_x86_64.manylinux_2_12_x86_64.manylinux_2_28_x86_64.whl",
    "xxhash-4.1.0-cp311-cp311-manylinux2014_x86_64.manylinux_2_17_x86_64.manylinux_2_28_x86_64.whl",
    "xxhash-4.1.0-cp313-cp313-manylinux2014_x86_64.manylinux_2_17_x86_64.manylinux_2_28_x86_64.whl",
]


def test_the_wheels_the_zips_ship_pass(build_addon):
    assert build_addon.wheel_problems("macos-arm64", MACOS_ARM64_ZIP) == []
    assert build_addon.wheel_problems("linux-x64", LINUX_ZIP) == []
    assert build_addon.wheel_problems("windows-x64", ["msgpack-1.2.4-cp311-cp311-win_amd64.whl",
                                                      "watchdog-7.1.0-py3-none-win_amd64.whl"]) == []


@pytest.mark.parametrize("platform, wheel, needs", [
    ("macos-arm64", "onnxruntime-1.32.0-cp311-cp311-macosx_14_0_arm64.whl", "needs macOS 14.0, newer than macOS 11.2"),
    ("macos-arm64", "opencv_python_headless-4.11.0.86-cp37-abi3-macosx_13_0_arm64.whl", "needs macOS 13.0"),
    # the newer floor of ONNX Runtime for Python 3.13 is for that package and that Python alone
    ("macos-arm64", "onnxruntime-1.24.1-cp313-cp313-macosx_14_0_arm64.whl", "newer than macOS 13.0"),
    ("macos-arm64", "xxhash-4.1.0-cp313-cp313-macosx_13_0_arm64.whl", "newer than macOS 11.2"),
    ("macos-x64", "opencv_python_headless-4.11.0.86-cp37-abi3-macosx_13_0_x86_64.whl", "needs macOS 13.0"),
    ("linux-x64", "onnxruntime-1.40.0-cp311-cp311-manylinux_2_34_x86_64.whl", "needs glibc 2.34, newer than glibc 2.28"),
    ("linux-x64", "msgpack-1.2.4-cp311-cp311-manylinux_2_17_aarch64.whl", "is not a linux-x64 wheel"),
    ("windows-x64", "msgpack-1.2.4-cp311-cp311-win_arm64.whl", "is not a windows-x64 wheel"),
    ("linux-x64", "msgpack-1.2.4-cp312-cp312-manylinux_2_17_x86_64.whl", "runs on none of this zip's Pythons"),
    ("macos-x64", "msgpack-1.2.4-cp313-cp313-macosx_10_9_x86_64.whl", "runs on none of this zip's Pythons"),
])
def test_a_wheel_for_a_newer_os_or_another_platform_fails_the_check(build_addon, platform, wheel, needs):
    (problem,) = build_addon.wheel_problems(platform, [wheel])
    assert wheel in problem and needs in problem


def test_the_newer_floor_of_onnxruntime_for_python_3_13_is_allowed(build_addon):
    assert build_addon.wheel_problems("macos-arm64", ["onnxruntime-1.23.2-cp313-cp313-macosx_13_0_arm64.whl"]) == []
    (problem,) = build_addon.wheel_problems("macos-arm64", ["onnxruntime-1.23.2-cp311-cp311-macosx_13_0_arm64.whl"])
    assert "newer than macOS 11.2" in problem


def test_two_versions_of_a_package_for_one_python_fail_the_check(build_addon):
    """Blender unpacks the newest of two wheels of one package: a Python 3.11 Blender would get opencv 4.11
    (macOS 13) from an abi3 wheel meant for 3.13, so the two resolutions must agree."""
    problems = build_addon.wheel_problems("linux-x64", [
        "opencv_python_headless-4.10.0.84-cp37-abi3-manylinux_2_17_x86_64.whl",
        "opencv_python_headless-4.11.0.86-cp37-abi3-manylinux_2_17_x86_64.whl"])
    assert len(problems) == 2 and all("two opencv_python_headless wheels" in p for p in problems)
    assert "3.11" in problems[0] and "3.13" in problems[1]


def test_a_build_with_a_too_new_wheel_fails(build_addon, tmp_path, monkeypatch):
    """The build stops before staging when the downloads hold a wheel the check refuses. pip stands in as a
    function returning the files pip would have written, here one of them too new for macOS 11.2."""
    def pip_download(platform, python, dest, constraints):
        dest.mkdir(parents=True)
        names = {"3.11": ["onnxruntime-1.32.0-cp311-cp311-macosx_14_0_arm64.whl"],
                 "3.13": ["onnxruntime-1.23.2-cp313-cp313-macosx_13_0_arm64.whl"]}[python]
        for name in names:
            (dest / name).write_bytes(b"")
        return sorted(dest.glob("*.whl"))

    monkeypatch.setattr(build_addon, "pip_download", pip_download)
    with pytest.raises(build_addon.BuildError, match=r"cannot ship:\n.*onnxruntime-1\.32\.0.*needs macOS 14\.0"):
        build_addon.download_wheels("macos-arm64", tmp_path / "wheels")
    assert build_addon.main(["--platform", "macos-arm64", "--no-validate", "--build-dir", str(tmp_path / "b"),
                             "--dist", str(tmp_path / "d")]) == 1
    assert not (tmp_path / "d").exists()


def test_pip_is_offered_the_tags_of_the_oldest_os_only(build_addon):
    linux = build_addon.platform_tags(build_addon.PLATFORMS["linux-x64"], (2, 28))
    assert "manylinux_2_28_x86_64" in linux and "manylinux2014_x86_64" in linux and "manylinux1_x86_64" in linux
    assert not any(tag.startswith("manylinux_2_29") for tag in linux)
    macos = build_addon.platform_tags(build_addon.PLATFORMS["macos-arm64"], (11, 2))
    assert {"macosx_11_0_arm64", "macosx_11_2_arm64", "macosx_10_9_universal2"} <= set(macos)
    assert not any(tag.startswith(("macosx_11_3", "macosx_12")) for tag in macos)
    assert build_addon.platform_tags(build_addon.PLATFORMS["windows-x64"], (10, 0)) == ["win_amd64"]
