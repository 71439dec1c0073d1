"""The NVIDIA GPU runtime's pinned wheels: onnxruntime-gpu and NVIDIA's CUDA and cuDNN libraries, for
linux x86-64 and Windows x64. Each wheel is pinned by what identifies it on any index: its project, its file
name (which holds its version and its Python and platform tags), its SHA-256 and its size in bytes. No host
is named: pip fetches them from whatever index the user's pip is set up for (facecache.gpu.install).

- CUDA 12 (the default): onnxruntime-gpu 1.26.0, the last CUDA 12 build (driver 525 or newer).
- CUDA 13: onnxruntime-gpu 1.31.1 (driver 580 or newer, Turing or newer GPUs: compute capability 7.5).

The library wheels are the same for every Python and are stored once; onnxruntime-gpu has one wheel per
Python (Blender 4.2-5.0 run 3.11, 5.1 and later 3.13). numpy and onnxruntime's pure-Python dependencies
are not here: the engine's own environment has them. `scripts/gpu_pins.py` printed WHEELS (pip's resolver
reading each wheel's metadata only, sizes and hashes from the index's JSON pages; figures of 2026-12: the
CUDA 12 libraries are 1.70 GB on linux and 1.63 GB on Windows, the CUDA 13 ones 1.31 and 1.17 GB).

Standard library only: the add-on reads the sizes from here to show them before anything is asked.
"""

from __future__ import annotations

import platform as _platform
import sys
from dataclasses import dataclass

CUDA_MAJORS = ("12", "13")
DEFAULT_CUDA = "12"
ONNXRUNTIME = {"12": "1.26.0", "13": "1.31.1"}
PLATFORMS = ("linux_x86_64", "win_amd64")


@dataclass(frozen=True)
class Wheel:
    cuda: str  # "12" or "13"
    platform: str  # "linux_x86_64" or "win_amd64"
    project: str  # its name on the index
    filename: str  # NAME-VERSION-PYTHON-ABI-PLATFORMS.whl (no build tag in any pinned wheel)
    sha256: str
    size: int  # bytes

    @property
    def _tags(self) -> list[str]:
        return self.filename.removesuffix(".whl").split("-")

    @property
    def version(self) -> str:
        return self._tags[1]

    @property
    def python(self) -> str:
        """The Python tag of an onnxruntime-gpu wheel (e.g. "cp311"); "py3" for a library wheel."""
        return self._tags[-3]

    @property
    def platform_tags(self) -> tuple[str, ...]:
        """The wheel's platform tags, e.g. ("manylinux_2_27_x86_64", "manylinux_2_28_x86_64")."""
        return tuple(self._tags[-1].split("."))

    @property
    def is_library(self) -> bool:
        return self.project != "onnxruntime-gpu"


@dataclass(frozen=True)
class RuntimeSet:
    """What one CUDA major on one platform needs: its library wheels and one onnxruntime-gpu wheel a Python."""

    cuda: str
    platform: str
    libraries: tuple[Wheel, ...]
    onnxruntime: dict  # Python tag -> Wheel

    @property
    def pythons(self) -> tuple[str, ...]:
        return tuple(sorted(self.onnxruntime))

    def wheels_for(self, python: str, libraries: bool = True) -> tuple[Wheel, ...]:
        return (self.libraries if libraries else ()) + (self.onnxruntime[python],)

    def download_bytes(self, python: str, libraries: bool = True) -> int:
        return sum(wheel.size for wheel in self.wheels_for(python, libraries))


def runtime_set(cuda: str, platform: str) -> RuntimeSet:
    """The pinned set of `cuda` ("12" or "13") for `platform` (a key of PLATFORMS); KeyError otherwise."""
    wheels = [w for w in WHEELS if w.cuda == cuda and w.platform == platform]
    if not wheels:
        raise KeyError(f"no NVIDIA runtime is pinned for CUDA {cuda} on {platform}")
    return RuntimeSet(cuda, platform, tuple(w for w in wheels if w.is_library),
                      {w.python: w for w in wheels if not w.is_library})


WHEELS = (
    Wheel("12", "linux_x86_64", "onnxruntime-gpu",
          "onnxruntime_gpu-1.26.0-cp311-cp311-manylinux_2_27_x86_64.manylinux_2_28_x86_64.whl",
          "4fa231294c2643911d2a7d16469c4808b0bdcdc4b5f4063d3a53744ce25b683a", 276956564),
    Wheel("12", "linux_x86_64", "nvidia-cuda-nvrtc-cu12",
          "nvidia_cuda_nvrtc_cu12-12.9.86-py3-none-manylinux2010_x86_64.manylinux_2_12_x86_64.whl",
          "210cf05005a447e29214e9ce50851e83fc5f4358df8b453155d5e1918094dcb4", 89568129),
    Wheel("12", "linux_x86_64", "nvidia-cuda-runtime-cu12",
          "nvidia_cuda_runtime_cu12-12.9.79-py3-none-manylinux2014_x86_64.manylinux_2_17_x86_64.whl",
          "25bba2dfb01d48a9b59ca474a1ac43c6ebf7011f1b0b8cc44f54eb6ac48a96c3", 3493179),
    Wheel("12", "linux_x86_64", "nvidia-cudnn-cu12",
          "nvidia_cudnn_cu12-9.28.0.42-py3-none-manylinux_2_27_x86_64.whl",
          "9ff58b7f36dacd0a93e89f8f2957b52466889217963701daa15e577317cfa375", 716538495),
    Wheel("12", "linux_x86_64", "nvidia-cufft-cu12",
          "nvidia_cufft_cu12-11.4.1.4-py3-none-manylinux2014_x86_64.manylinux_2_17_x86_64.whl",
          "c67884f2a7d276b4b80eb56a79322a95df592ae5e765cf1243693365ccab4e28", 200877592),
    Wheel("12", "linux_x86_64", "nvidia-curand-cu12",
          "nvidia_curand_cu12-10.3.10.19-py3-none-manylinux_2_27_x86_64.whl",
          "49b274db4780d421bd2ccd362e1415c13887c53c214f0d4b761752b8f9f6aa1e", 68295626),
    Wheel("12", "linux_x86_64", "nvidia-cublas-cu12",
          "nvidia_cublas_cu12-12.9.3.13-py3-none-manylinux_2_27_x86_64.whl",
          "d7d51055f161b317c7105ddaae90e71eda059026074ffef93cf7cde2886bfe72", 581217458),
    Wheel("12", "linux_x86_64", "nvidia-nvjitlink-cu12",
          "nvidia_nvjitlink_cu12-12.9.86-py3-none-manylinux2010_x86_64.manylinux_2_12_x86_64.whl",
          "e3f1171dbdc83c5932a45f0f4c99180a70de9bd2718c1ab77d14104f6d7147f9", 39748338),
    Wheel("12", "linux_x86_64", "onnxruntime-gpu",
          "onnxruntime_gpu-1.26.0-cp312-cp312-manylinux_2_27_x86_64.manylinux_2_28_x86_64.whl",
          "3c01119ed4d9449d60367fa8ccffcd02bd3fe736754284e4b198d131f54edad6", 276971796),
    Wheel("12", "linux_x86_64", "onnxruntime-gpu",
          "onnxruntime_gpu-1.26.0-cp313-cp313-manylinux_2_27_x86_64.manylinux_2_28_x86_64.whl",
          "cfda2fad535595bfc3e570eb588092717711dcb2957656d814695e0c9ceb1508", 276974871),
    Wheel("12", "linux_x86_64", "onnxruntime-gpu",
          "onnxruntime_gpu-1.26.0-cp314-cp314-manylinux_2_27_x86_64.manylinux_2_28_x86_64.whl",
          "9e6e4fb1ec9ae1cf456534d9115f106ab2a1ae96fa513b4ed0f4795302b4a2c6", 276978254),
    Wheel("12", "win_amd64", "onnxruntime-gpu",
          "onnxruntime_gpu-1.26.0-cp311-cp311-win_amd64.whl",
          "cc5329aad02d9745cc3ae9cdb185bfa1aad242a7bf89b8c471280002ec40f98a", 226539455),
    Wheel("12", "win_amd64", "nvidia-cuda-nvrtc-cu12",
          "nvidia_cuda_nvrtc_cu12-12.9.86-py3-none-win_amd64.whl",
          "72972ebdcf504d69462d3bcd67e7b81edd25d0fb85a2c46d3ea3517666636349", 76408187),
    Wheel("12", "win_amd64", "nvidia-cuda-runtime-cu12",
          "nvidia_cuda_runtime_cu12-12.9.79-py3-none-win_amd64.whl",
          "8e018af8fa02363876860388bd10ccb89eb9ab8fb0aa749aaf58430a9f7c4891", 3591604),
    Wheel("12", "win_amd64", "nvidia-cudnn-cu12",
          "nvidia_cudnn_cu12-9.28.0.42-py3-none-win_amd64.whl",
          "e8eb548c252e95713e81e6fc53c61940d13114d7116908069d018b2d24700620", 693320977),
    Wheel("12", "win_amd64", "nvidia-cufft-cu12",
          "nvidia_cufft_cu12-11.4.1.4-py3-none-win_amd64.whl",
          "8e5bfaac795e93f80611f807d42844e8e27e340e0cde270dcb6c65386d795b80", 200067309),
    Wheel("12", "win_amd64", "nvidia-curand-cu12",
          "nvidia_curand_cu12-10.3.10.19-py3-none-win_amd64.whl",
          "e8129e6ac40dc123bd948e33d3e11b4aa617d87a583fa2f21b3210e90c743cde", 68774847),
    Wheel("12", "win_amd64", "nvidia-cublas-cu12",
          "nvidia_cublas_cu12-12.9.2.10-py3-none-win_amd64.whl",
          "623f43027d40d44ceadf0043f002bd25cf353e8f13ce90b9a87057019f560661", 553162896),
    Wheel("12", "win_amd64", "nvidia-nvjitlink-cu12",
          "nvidia_nvjitlink_cu12-12.9.86-py3-none-win_amd64.whl",
          "cc6fcec260ca843c10e34c936921a1c426b351753587fdd638e8cff7b16bb9db", 35584936),
    Wheel("12", "win_amd64", "onnxruntime-gpu",
          "onnxruntime_gpu-1.26.0-cp312-cp312-win_amd64.whl",
          "5f49c44689894650990e4c8a857d2edafc276fbd79bba57ceb224bd18d25d491", 226548963),
    Wheel("12", "win_amd64", "onnxruntime-gpu",
          "onnxruntime_gpu-1.26.0-cp313-cp313-win_amd64.whl",
          "6ab9f9c741d2e239b2e321ab0d389c04329d4ab7f11e3b92dd3aa7db1c59dee4", 226548083),
    Wheel("12", "win_amd64", "onnxruntime-gpu",
          "onnxruntime_gpu-1.26.0-cp314-cp314-win_amd64.whl",
          "3e592439b0183d303c2374517b5b392599a3d50b2dc9de949b9b15731ac921c9", 229142768),
    Wheel("13", "linux_x86_64", "onnxruntime-gpu",
          "onnxruntime_gpu-1.31.1-cp311-cp311-manylinux_2_28_x86_64.whl",
          "e26c475fe361b2015f45b4b824bd13f0bb20204e59b62814e6f0acd5f3d491a6", 255560985),
    Wheel("13", "linux_x86_64", "nvidia-cuda-nvrtc",
          "nvidia_cuda_nvrtc-13.5.37-py3-none-manylinux2010_x86_64.manylinux_2_12_x86_64.whl",
          "86b4d68058807988b7d9af5b44917a0601e9c337f35ccd657bfb3c759ff8d8bc", 58185930),
    Wheel("13", "linux_x86_64", "nvidia-cuda-runtime",
          "nvidia_cuda_runtime-13.5.37-py3-none-manylinux2014_x86_64.manylinux_2_17_x86_64.whl",
          "df2b79a8852f10d1fef8c848489c49eebb5754051bf870202a862831412b179d", 2504024),
    Wheel("13", "linux_x86_64", "nvidia-cudnn-cu13",
          "nvidia_cudnn_cu13-9.28.1.4-py3-none-manylinux_2_27_x86_64.whl",
          "a54f205b1db1f2895d99f398754db1369816f0569dd459731f925635cf7b65ec", 516817937),
    Wheel("13", "linux_x86_64", "nvidia-cufft",
          "nvidia_cufft-12.5.0.14-py3-none-manylinux2014_x86_64.manylinux_2_17_x86_64.whl",
          "b8be26837a5abad2b5b74f3e92dd29f622a42934b355be0961a48712cbba23ad", 165072555),
    Wheel("13", "linux_x86_64", "nvidia-curand",
          "nvidia_curand-10.4.5.25-py3-none-manylinux_2_27_x86_64.whl",
          "22bb226a857e5888fe6b54ae465fc4371296bcff13a35f79e19691bcf454f529", 77113015),
    Wheel("13", "linux_x86_64", "nvidia-cublas",
          "nvidia_cublas-13.10.0.20-py3-none-manylinux1_x86_64.manylinux_2_5_x86_64.whl",
          "dcc6d63884c53d07e267ce7e6feac17b2538cebaafec5db865736c3e28e4dc84", 444289903),
    Wheel("13", "linux_x86_64", "nvidia-nvjitlink",
          "nvidia_nvjitlink-13.5.37-py3-none-manylinux2010_x86_64.manylinux_2_12_x86_64.whl",
          "280d7cb9649704145f074b8dbde500de04ce02d0872e066e20a83c17bcaa93eb", 46642491),
    Wheel("13", "linux_x86_64", "onnxruntime-gpu",
          "onnxruntime_gpu-1.31.1-cp312-cp312-manylinux_2_28_x86_64.whl",
          "05d548956197b9d01f59b625de740e0d6be3593f874e241a12dc0362650ecdf7", 255569273),
    Wheel("13", "linux_x86_64", "onnxruntime-gpu",
          "onnxruntime_gpu-1.31.1-cp313-cp313-manylinux_2_28_x86_64.whl",
          "f659529e07c21ec6b6179fd1bfaf82ffb7c3dc9c0916e18f6f313f9a690891be", 255567609),
    Wheel("13", "linux_x86_64", "onnxruntime-gpu",
          "onnxruntime_gpu-1.31.1-cp314-cp314-manylinux_2_28_x86_64.whl",
          "52a9ec263f331678e8fcb4f71a6fa44e5f901f0aac0b61fbe5a61517f2b4cc7d", 255572322),
    Wheel("13", "win_amd64", "onnxruntime-gpu",
          "onnxruntime_gpu-1.31.1-cp311-cp311-win_amd64.whl",
          "fd98341ba71c093153f0dcfc53eb69d57f706866fb45e94e5b0cde5d97a50dbf", 168096711),
    Wheel("13", "win_amd64", "nvidia-cuda-nvrtc",
          "nvidia_cuda_nvrtc-13.5.37-py3-none-win_amd64.whl",
          "e8e6c10b251385707ae3abd7b4ee118de6736fd7678d0f0f4eab4d759f679c21", 49248991),
    Wheel("13", "win_amd64", "nvidia-cuda-runtime",
          "nvidia_cuda_runtime-13.5.37-py3-none-win_amd64.whl",
          "f225d3fa5ea6bfbb58fc4979ef72375cbe661d9107f0d8a4ff22cc151525e4a9", 2780254),
    Wheel("13", "win_amd64", "nvidia-cudnn-cu13",
          "nvidia_cudnn_cu13-9.28.1.4-py3-none-win_amd64.whl",
          "73d874c6bd8a1c75ca040228f77c4e163efe9bab3b65bd85914e2b7334ac68ee", 407065099),
    Wheel("13", "win_amd64", "nvidia-cufft",
          "nvidia_cufft-12.5.0.14-py3-none-win_amd64.whl",
          "78e7585159ecf37d73af1ce43a5dea7fd3360e1af71cde08f070c07966a336bc", 164476208),
    Wheel("13", "win_amd64", "nvidia-curand",
          "nvidia_curand-10.4.5.25-py3-none-win_amd64.whl",
          "f6a02a70f5b9715235df31a164a4bf3237a45be1600a5f435f5e4a0d8682eb22", 77330709),
    Wheel("13", "win_amd64", "nvidia-cublas",
          "nvidia_cublas-13.10.0.20-py3-none-win_amd64.whl",
          "c310b749eea855b88fafb906de08d6819b87216c6711640771764fea5dcd8546", 427284863),
    Wheel("13", "win_amd64", "nvidia-nvjitlink",
          "nvidia_nvjitlink-13.5.37-py3-none-win_amd64.whl",
          "4465d4e8f2212118220b580c82523c5654f93a62906bd51d29d79bdfc12376c1", 41467665),
    Wheel("13", "win_amd64", "onnxruntime-gpu",
          "onnxruntime_gpu-1.31.1-cp312-cp312-win_amd64.whl",
          "2bb1e9373baba88f6415257f5b6a589d23e23c16004f7d89adf4344eada5749e", 168098228),
    Wheel("13", "win_amd64", "onnxruntime-gpu",
          "onnxruntime_gpu-1.31.1-cp313-cp313-win_amd64.whl",
          "1a667241591c89c516b43689a0ae38c4d99d0cb45a2220e95a9f822aeb6887c4", 168097596),
    Wheel("13", "win_amd64", "onnxruntime-gpu",
          "onnxruntime_gpu-1.31.1-cp314-cp314-win_amd64.whl",
          "f7ab9c9c6189b8bc477797148af699fc24f0dc550020c64099e1db7400b44621", 168776491),
)


def this_platform() -> str | None:
    """The pins' platform name of this machine, or None where no NVIDIA runtime exists (macOS, ARM)."""
    machine = _platform.machine().lower()
    if sys.platform.startswith("linux") and machine in ("x86_64", "amd64"):
        return "linux_x86_64"
    if sys.platform == "win32" and machine in ("amd64", "x86_64"):
        return "win_amd64"
    return None


def this_python() -> str:
    return f"cp{sys.version_info.major}{sys.version_info.minor}"
