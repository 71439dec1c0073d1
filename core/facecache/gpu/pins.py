"""The NVIDIA GPU runtime's pinned wheels: onnxruntime-gpu and NVIDIA's CUDA and cuDNN libraries, for
linux x86-64 and Windows x64, as the package index serves them (URL, SHA-256, size in bytes).

- CUDA 12 (the default): onnxruntime-gpu 1.26.0, the last CUDA 12 build (driver 525 or newer).
- CUDA 13: onnxruntime-gpu 1.31.1 (driver 580 or newer, Turing or newer GPUs: compute capability 7.5).

The library wheels are the same for every Python and are stored once; onnxruntime-gpu has one wheel per
Python (Blender 4.2-5.0 run 3.11, 5.1 and later 3.13). numpy and onnxruntime's pure-Python dependencies
are not here: the engine's own environment has them. `scripts/gpu_pins.py` printed WHEELS (pip's resolver
reading each wheel's metadata only, sizes from the index's JSON pages; figures of 2026-12: the CUDA 12
libraries are 1.70 GB on linux and 1.63 GB on Windows, the CUDA 13 ones 1.31 and 1.17 GB).

Standard library only: the add-on reads the sizes from here to show them before anything is asked.
"""

from __future__ import annotations

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
    url: str
    sha256: str
    size: int  # bytes

    @property
    def filename(self) -> str:
        return self.url.rsplit("/", 1)[1]

    @property
    def python(self) -> str:
        """The Python tag of an onnxruntime-gpu wheel (e.g. "cp311"); "py3" for a library wheel."""
        return self.filename.split("-")[2]

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
          "https://files.pythonhosted.org/packages/dc/0f/696b4f94a282952239ffed39db78cb17a00ad993acd929cfac010a09759b/onnxruntime_gpu-1.26.0-cp311-cp311-manylinux_2_27_x86_64.manylinux_2_28_x86_64.whl",
          "4fa231294c2643911d2a7d16469c4808b0bdcdc4b5f4063d3a53744ce25b683a", 276956564),
    Wheel("12", "linux_x86_64", "nvidia-cuda-nvrtc-cu12",
          "https://files.pythonhosted.org/packages/b8/85/e4af82cc9202023862090bfca4ea827d533329e925c758f0cde964cb54b7/nvidia_cuda_nvrtc_cu12-12.9.86-py3-none-manylinux2010_x86_64.manylinux_2_12_x86_64.whl",
          "210cf05005a447e29214e9ce50851e83fc5f4358df8b453155d5e1918094dcb4", 89568129),
    Wheel("12", "linux_x86_64", "nvidia-cuda-runtime-cu12",
          "https://files.pythonhosted.org/packages/bc/46/a92db19b8309581092a3add7e6fceb4c301a3fd233969856a8cbf042cd3c/nvidia_cuda_runtime_cu12-12.9.79-py3-none-manylinux2014_x86_64.manylinux_2_17_x86_64.whl",
          "25bba2dfb01d48a9b59ca474a1ac43c6ebf7011f1b0b8cc44f54eb6ac48a96c3", 3493179),
    Wheel("12", "linux_x86_64", "nvidia-cudnn-cu12",
          "https://files.pythonhosted.org/packages/ce/64/56ce3cad192cc75b50da3be44e36741ba963c84d3d2ca10aaa5ec16c49c3/nvidia_cudnn_cu12-9.28.0.42-py3-none-manylinux_2_27_x86_64.whl",
          "9ff58b7f36dacd0a93e89f8f2957b52466889217963701daa15e577317cfa375", 716538495),
    Wheel("12", "linux_x86_64", "nvidia-cufft-cu12",
          "https://files.pythonhosted.org/packages/95/f4/61e6996dd20481ee834f57a8e9dca28b1869366a135e0d42e2aa8493bdd4/nvidia_cufft_cu12-11.4.1.4-py3-none-manylinux2014_x86_64.manylinux_2_17_x86_64.whl",
          "c67884f2a7d276b4b80eb56a79322a95df592ae5e765cf1243693365ccab4e28", 200877592),
    Wheel("12", "linux_x86_64", "nvidia-curand-cu12",
          "https://files.pythonhosted.org/packages/31/44/193a0e171750ca9f8320626e8a1f2381e4077a65e69e2fb9708bd479e34a/nvidia_curand_cu12-10.3.10.19-py3-none-manylinux_2_27_x86_64.whl",
          "49b274db4780d421bd2ccd362e1415c13887c53c214f0d4b761752b8f9f6aa1e", 68295626),
    Wheel("12", "linux_x86_64", "nvidia-cublas-cu12",
          "https://files.pythonhosted.org/packages/7b/ea/9b6c36aef90766eebb4763aded157039e797ae9789c9c216e960d1d3cd47/nvidia_cublas_cu12-12.9.3.13-py3-none-manylinux_2_27_x86_64.whl",
          "d7d51055f161b317c7105ddaae90e71eda059026074ffef93cf7cde2886bfe72", 581217458),
    Wheel("12", "linux_x86_64", "nvidia-nvjitlink-cu12",
          "https://files.pythonhosted.org/packages/46/0c/c75bbfb967457a0b7670b8ad267bfc4fffdf341c074e0a80db06c24ccfd4/nvidia_nvjitlink_cu12-12.9.86-py3-none-manylinux2010_x86_64.manylinux_2_12_x86_64.whl",
          "e3f1171dbdc83c5932a45f0f4c99180a70de9bd2718c1ab77d14104f6d7147f9", 39748338),
    Wheel("12", "linux_x86_64", "onnxruntime-gpu",
          "https://files.pythonhosted.org/packages/94/fd/59bee7cffaa435da44fefdeb63e29c61de4dbfa4b279852f59cd02c042ae/onnxruntime_gpu-1.26.0-cp312-cp312-manylinux_2_27_x86_64.manylinux_2_28_x86_64.whl",
          "3c01119ed4d9449d60367fa8ccffcd02bd3fe736754284e4b198d131f54edad6", 276971796),
    Wheel("12", "linux_x86_64", "onnxruntime-gpu",
          "https://files.pythonhosted.org/packages/dd/97/fe8979f44b9275654b42f7bb556e30789b71a1b22998c83b540df2b1b774/onnxruntime_gpu-1.26.0-cp313-cp313-manylinux_2_27_x86_64.manylinux_2_28_x86_64.whl",
          "cfda2fad535595bfc3e570eb588092717711dcb2957656d814695e0c9ceb1508", 276974871),
    Wheel("12", "linux_x86_64", "onnxruntime-gpu",
          "https://files.pythonhosted.org/packages/fd/c8/aa2dc0e79bba577f37d5448bcb32fea79977e07506684d8138c19a0f1077/onnxruntime_gpu-1.26.0-cp314-cp314-manylinux_2_27_x86_64.manylinux_2_28_x86_64.whl",
          "9e6e4fb1ec9ae1cf456534d9115f106ab2a1ae96fa513b4ed0f4795302b4a2c6", 276978254),
    Wheel("12", "win_amd64", "onnxruntime-gpu",
          "https://files.pythonhosted.org/packages/ef/26/a417b7a1cdbbf56a389bfcd399255be23f30e5721e3e519472fe8dde9c99/onnxruntime_gpu-1.26.0-cp311-cp311-win_amd64.whl",
          "cc5329aad02d9745cc3ae9cdb185bfa1aad242a7bf89b8c471280002ec40f98a", 226539455),
    Wheel("12", "win_amd64", "nvidia-cuda-nvrtc-cu12",
          "https://files.pythonhosted.org/packages/52/de/823919be3b9d0ccbf1f784035423c5f18f4267fb0123558d58b813c6ec86/nvidia_cuda_nvrtc_cu12-12.9.86-py3-none-win_amd64.whl",
          "72972ebdcf504d69462d3bcd67e7b81edd25d0fb85a2c46d3ea3517666636349", 76408187),
    Wheel("12", "win_amd64", "nvidia-cuda-runtime-cu12",
          "https://files.pythonhosted.org/packages/59/df/e7c3a360be4f7b93cee39271b792669baeb3846c58a4df6dfcf187a7ffab/nvidia_cuda_runtime_cu12-12.9.79-py3-none-win_amd64.whl",
          "8e018af8fa02363876860388bd10ccb89eb9ab8fb0aa749aaf58430a9f7c4891", 3591604),
    Wheel("12", "win_amd64", "nvidia-cudnn-cu12",
          "https://files.pythonhosted.org/packages/f4/a9/5d6d29cce055b51c735f9c400c5fa906574c26f403c102179d5794595ff9/nvidia_cudnn_cu12-9.28.0.42-py3-none-win_amd64.whl",
          "e8eb548c252e95713e81e6fc53c61940d13114d7116908069d018b2d24700620", 693320977),
    Wheel("12", "win_amd64", "nvidia-cufft-cu12",
          "https://files.pythonhosted.org/packages/20/ee/29955203338515b940bd4f60ffdbc073428f25ef9bfbce44c9a066aedc5c/nvidia_cufft_cu12-11.4.1.4-py3-none-win_amd64.whl",
          "8e5bfaac795e93f80611f807d42844e8e27e340e0cde270dcb6c65386d795b80", 200067309),
    Wheel("12", "win_amd64", "nvidia-curand-cu12",
          "https://files.pythonhosted.org/packages/e5/98/1bd66fd09cbe1a5920cb36ba87029d511db7cca93979e635fd431ad3b6c0/nvidia_curand_cu12-10.3.10.19-py3-none-win_amd64.whl",
          "e8129e6ac40dc123bd948e33d3e11b4aa617d87a583fa2f21b3210e90c743cde", 68774847),
    Wheel("12", "win_amd64", "nvidia-cublas-cu12",
          "https://files.pythonhosted.org/packages/20/e2/fc9a0e985249d873150276d5afb02e39a66817fedbf1a385724393e505ed/nvidia_cublas_cu12-12.9.2.10-py3-none-win_amd64.whl",
          "623f43027d40d44ceadf0043f002bd25cf353e8f13ce90b9a87057019f560661", 553162896),
    Wheel("12", "win_amd64", "nvidia-nvjitlink-cu12",
          "https://files.pythonhosted.org/packages/dd/7e/2eecb277d8a98184d881fb98a738363fd4f14577a4d2d7f8264266e82623/nvidia_nvjitlink_cu12-12.9.86-py3-none-win_amd64.whl",
          "cc6fcec260ca843c10e34c936921a1c426b351753587fdd638e8cff7b16bb9db", 35584936),
    Wheel("12", "win_amd64", "onnxruntime-gpu",
          "https://files.pythonhosted.org/packages/a4/e4/9b378a5466ea0bed65e5beb8e09254973c580a6522810a38afbcc45e5105/onnxruntime_gpu-1.26.0-cp312-cp312-win_amd64.whl",
          "5f49c44689894650990e4c8a857d2edafc276fbd79bba57ceb224bd18d25d491", 226548963),
    Wheel("12", "win_amd64", "onnxruntime-gpu",
          "https://files.pythonhosted.org/packages/67/3f/59f1777a394625ecc9a85636de57dc47c25dbb5f888da050f1463955a0ce/onnxruntime_gpu-1.26.0-cp313-cp313-win_amd64.whl",
          "6ab9f9c741d2e239b2e321ab0d389c04329d4ab7f11e3b92dd3aa7db1c59dee4", 226548083),
    Wheel("12", "win_amd64", "onnxruntime-gpu",
          "https://files.pythonhosted.org/packages/41/e7/923298431e669567d7ccc2a4c898b6534a47641a051569fd97165fe6d9b8/onnxruntime_gpu-1.26.0-cp314-cp314-win_amd64.whl",
          "3e592439b0183d303c2374517b5b392599a3d50b2dc9de949b9b15731ac921c9", 229142768),
    Wheel("13", "linux_x86_64", "onnxruntime-gpu",
          "https://files.pythonhosted.org/packages/92/1b/23ae6bfa165cf01f2566aeab3076135d0db8edf5b543c1556fd6b1d93c7f/onnxruntime_gpu-1.31.1-cp311-cp311-manylinux_2_28_x86_64.whl",
          "e26c475fe361b2015f45b4b824bd13f0bb20204e59b62814e6f0acd5f3d491a6", 255560985),
    Wheel("13", "linux_x86_64", "nvidia-cuda-nvrtc",
          "https://files.pythonhosted.org/packages/a9/54/db4e7f650746265f61c05cf1f8f556dd8c6739b58c823fbc9a7d6fda3247/nvidia_cuda_nvrtc-13.5.37-py3-none-manylinux2010_x86_64.manylinux_2_12_x86_64.whl",
          "86b4d68058807988b7d9af5b44917a0601e9c337f35ccd657bfb3c759ff8d8bc", 58185930),
    Wheel("13", "linux_x86_64", "nvidia-cuda-runtime",
          "https://files.pythonhosted.org/packages/0b/7c/14b8f5518f8951e9dca57ea80f44f8ea8bcc8671812e6cc38009f3205e57/nvidia_cuda_runtime-13.5.37-py3-none-manylinux2014_x86_64.manylinux_2_17_x86_64.whl",
          "df2b79a8852f10d1fef8c848489c49eebb5754051bf870202a862831412b179d", 2504024),
    Wheel("13", "linux_x86_64", "nvidia-cudnn-cu13",
          "https://files.pythonhosted.org/packages/ef/6f/94535c450d44a68ef0b43d7a5e54c0e5ecda2ca3db7daec5d54c8d94e0d8/nvidia_cudnn_cu13-9.28.1.4-py3-none-manylinux_2_27_x86_64.whl",
          "a54f205b1db1f2895d99f398754db1369816f0569dd459731f925635cf7b65ec", 516817937),
    Wheel("13", "linux_x86_64", "nvidia-cufft",
          "https://files.pythonhosted.org/packages/c6/8f/f909edaadf9a7acf1b92f805a384b6984193bd595b45005f8e320d4170cf/nvidia_cufft-12.5.0.14-py3-none-manylinux2014_x86_64.manylinux_2_17_x86_64.whl",
          "b8be26837a5abad2b5b74f3e92dd29f622a42934b355be0961a48712cbba23ad", 165072555),
    Wheel("13", "linux_x86_64", "nvidia-curand",
          "https://files.pythonhosted.org/packages/12/63/636e5dc9afb2959bfc0042a357d5567358df829b66c96d9fc36d77dc0596/nvidia_curand-10.4.5.25-py3-none-manylinux_2_27_x86_64.whl",
          "22bb226a857e5888fe6b54ae465fc4371296bcff13a35f79e19691bcf454f529", 77113015),
    Wheel("13", "linux_x86_64", "nvidia-cublas",
          "https://files.pythonhosted.org/packages/b4/12/16628161ed8c109c8c73b38167df50cbc630a8a6e6548e2534d461526c3c/nvidia_cublas-13.10.0.20-py3-none-manylinux1_x86_64.manylinux_2_5_x86_64.whl",
          "dcc6d63884c53d07e267ce7e6feac17b2538cebaafec5db865736c3e28e4dc84", 444289903),
    Wheel("13", "linux_x86_64", "nvidia-nvjitlink",
          "https://files.pythonhosted.org/packages/cc/1f/2321702b8d60b4b4dd18b957f61612dbac9cb1c07e940cf6582106b7c8b8/nvidia_nvjitlink-13.5.37-py3-none-manylinux2010_x86_64.manylinux_2_12_x86_64.whl",
          "280d7cb9649704145f074b8dbde500de04ce02d0872e066e20a83c17bcaa93eb", 46642491),
    Wheel("13", "linux_x86_64", "onnxruntime-gpu",
          "https://files.pythonhosted.org/packages/22/97/9531b4d9e566cf2a0f04b4b5c26a3bc0ef2e2e0b6bc943a02c0eead98cf7/onnxruntime_gpu-1.31.1-cp312-cp312-manylinux_2_28_x86_64.whl",
          "05d548956197b9d01f59b625de740e0d6be3593f874e241a12dc0362650ecdf7", 255569273),
    Wheel("13", "linux_x86_64", "onnxruntime-gpu",
          "https://files.pythonhosted.org/packages/c5/ee/f189d535ccd8967009329682c2e9f9cc2508936d8969b70f2b0ccd29d27b/onnxruntime_gpu-1.31.1-cp313-cp313-manylinux_2_28_x86_64.whl",
          "f659529e07c21ec6b6179fd1bfaf82ffb7c3dc9c0916e18f6f313f9a690891be", 255567609),
    Wheel("13", "linux_x86_64", "onnxruntime-gpu",
          "https://files.pythonhosted.org/packages/fd/56/23015d5deaf361d85eacf5db7d9c2d60552c728f5c1884dbf279a3e42d19/onnxruntime_gpu-1.31.1-cp314-cp314-manylinux_2_28_x86_64.whl",
          "52a9ec263f331678e8fcb4f71a6fa44e5f901f0aac0b61fbe5a61517f2b4cc7d", 255572322),
    Wheel("13", "win_amd64", "onnxruntime-gpu",
          "https://files.pythonhosted.org/packages/dd/29/6e8e0856c085f3068db8199119290acebf8d30cc79634e3442f12b45e065/onnxruntime_gpu-1.31.1-cp311-cp311-win_amd64.whl",
          "fd98341ba71c093153f0dcfc53eb69d57f706866fb45e94e5b0cde5d97a50dbf", 168096711),
    Wheel("13", "win_amd64", "nvidia-cuda-nvrtc",
          "https://files.pythonhosted.org/packages/9f/6c/241c5155199a6de55bad8862213ed64b487dc9526aae817e4af31afea1a4/nvidia_cuda_nvrtc-13.5.37-py3-none-win_amd64.whl",
          "e8e6c10b251385707ae3abd7b4ee118de6736fd7678d0f0f4eab4d759f679c21", 49248991),
    Wheel("13", "win_amd64", "nvidia-cuda-runtime",
          "https://files.pythonhosted.org/packages/35/99/e07dd9565d2e0317c1a62ff39ae9fc0542c048f74bcfc777c8be97710347/nvidia_cuda_runtime-13.5.37-py3-none-win_amd64.whl",
          "f225d3fa5ea6bfbb58fc4979ef72375cbe661d9107f0d8a4ff22cc151525e4a9", 2780254),
    Wheel("13", "win_amd64", "nvidia-cudnn-cu13",
          "https://files.pythonhosted.org/packages/48/9c/26e6bdd31c97c389aa565b49c916be0dec17dd61dad6cd33fee286d1b946/nvidia_cudnn_cu13-9.28.1.4-py3-none-win_amd64.whl",
          "73d874c6bd8a1c75ca040228f77c4e163efe9bab3b65bd85914e2b7334ac68ee", 407065099),
    Wheel("13", "win_amd64", "nvidia-cufft",
          "https://files.pythonhosted.org/packages/94/79/8f2a7125f560b86571c0be3dbf10e33041187bc4a8cf66107541fe8e5cce/nvidia_cufft-12.5.0.14-py3-none-win_amd64.whl",
          "78e7585159ecf37d73af1ce43a5dea7fd3360e1af71cde08f070c07966a336bc", 164476208),
    Wheel("13", "win_amd64", "nvidia-curand",
          "https://files.pythonhosted.org/packages/ee/b6/5b38490991b6875ae60c4f41e190ac91cadd1e6a1324b152999cc4a3f580/nvidia_curand-10.4.5.25-py3-none-win_amd64.whl",
          "f6a02a70f5b9715235df31a164a4bf3237a45be1600a5f435f5e4a0d8682eb22", 77330709),
    Wheel("13", "win_amd64", "nvidia-cublas",
          "https://files.pythonhosted.org/packages/12/39/e1b1b4adb8b171894d9a89035df0596d448cf73dc403802d24dbe30cc0be/nvidia_cublas-13.10.0.20-py3-none-win_amd64.whl",
          "c310b749eea855b88fafb906de08d6819b87216c6711640771764fea5dcd8546", 427284863),
    Wheel("13", "win_amd64", "nvidia-nvjitlink",
          "https://files.pythonhosted.org/packages/a7/53/c43398492e8374880d5e01c23c4dac33ba0c3bd03515d6ecc574254c0967/nvidia_nvjitlink-13.5.37-py3-none-win_amd64.whl",
          "4465d4e8f2212118220b580c82523c5654f93a62906bd51d29d79bdfc12376c1", 41467665),
    Wheel("13", "win_amd64", "onnxruntime-gpu",
          "https://files.pythonhosted.org/packages/05/ec/fe99397c6d6582fe26502b608f132a1c7748381fa72523c8b7a0686b9b14/onnxruntime_gpu-1.31.1-cp312-cp312-win_amd64.whl",
          "2bb1e9373baba88f6415257f5b6a589d23e23c16004f7d89adf4344eada5749e", 168098228),
    Wheel("13", "win_amd64", "onnxruntime-gpu",
          "https://files.pythonhosted.org/packages/23/3a/1a2305f400b97fa401e8249002c04040ce28ae21a96588667bcd1cb83d05/onnxruntime_gpu-1.31.1-cp313-cp313-win_amd64.whl",
          "1a667241591c89c516b43689a0ae38c4d99d0cb45a2220e95a9f822aeb6887c4", 168097596),
    Wheel("13", "win_amd64", "onnxruntime-gpu",
          "https://files.pythonhosted.org/packages/67/c4/0e1452baf0bc9520e1fb7f48e2988cc4bfea9d3ba13d35637254d38e3964/onnxruntime_gpu-1.31.1-cp314-cp314-win_amd64.whl",
          "f7ab9c9c6189b8bc477797148af699fc24f0dc550020c64099e1db7400b44621", 168776491),
)
