"""SessionFactory: provider choice, fallback to CPU with one warning per factory, session reuse."""

import logging
from types import SimpleNamespace

import numpy as np
import pytest

from facecache.errors import FaceCacheError
from facecache.models.runtime import CPU, CUDA, DIRECTML, TENSORRT, SessionFactory, usable_cores
from facecache.models import runtime

from model_helpers import tiny_onnx_model


class FakeSession:
    """A stand-in session: `fails_on_gpu` makes every run on a GPU provider raise, as a CUDA error
    (out of GPU memory, a cuDNN failure) does in the middle of a job."""

    def __init__(self, path, providers, fails_on_gpu=False):
        self.path = path
        self.providers = providers
        self.fails_on_gpu = fails_on_gpu
        self.runs = 0

    def get_providers(self):
        return self.providers

    def run(self, outputs, feeds):
        self.runs += 1
        if self.fails_on_gpu and self.providers[0] != CPU:
            raise RuntimeError("CUDA failure 2: out of memory")
        return [feeds["x"] + 1]


class FakeOrt:
    """Stands in for onnxruntime: `gpu` = 'works', 'silent' (falls back to CPU like onnxruntime-gpu
    without CUDA libraries), 'raises' or 'fails_on_run' (starts, then a run fails)."""

    ExecutionMode = SimpleNamespace(ORT_SEQUENTIAL="sequential")
    GraphOptimizationLevel = SimpleNamespace(ORT_ENABLE_ALL="all")

    def __init__(self, available=(TENSORRT, CUDA, CPU), gpu="silent"):
        self.available = list(available)
        self.gpu = gpu
        self.created = []

    def get_available_providers(self):
        return self.available

    def SessionOptions(self):
        options = SimpleNamespace(config={})
        options.add_session_config_entry = options.config.__setitem__
        return options

    def InferenceSession(self, path, sess_options, providers, provider_options):
        self.created.append((path, tuple(providers), sess_options))
        if providers[0] != CPU and self.gpu == "raises":
            raise RuntimeError("CUDA failure 100: no CUDA-capable device is detected")
        obtained = providers if self.gpu in ("works", "fails_on_run") else [CPU]
        return FakeSession(path, list(obtained), fails_on_gpu=self.gpu == "fails_on_run")


@pytest.fixture
def model_files(tmp_path):
    a, b = tmp_path / "a.onnx", tmp_path / "b.onnx"
    a.write_bytes(b"a")
    b.write_bytes(b"b")
    return a, b


def test_silent_gpu_fallback_warns_once_per_factory(model_files):
    a, b = model_files
    ort = FakeOrt(gpu="silent")
    messages = []
    factory = SessionFactory("cuda", ort=ort, warn=messages.append)
    s1 = factory.session(a)
    assert s1.get_providers() == [CPU]
    assert factory.session(a) is s1  # reused
    factory.session(b)
    assert len(messages) == 1 and "CUDAExecutionProvider" in messages[0] and "CPU" in messages[0]
    assert factory.active_providers == (CPU,)
    # the GPU was tried once; later sessions go straight to CPU
    assert [providers for _, providers, _ in ort.created] == [(CUDA, CPU), (CPU,)]
    # another factory is another setting holder: it tries and warns on its own
    other = []
    SessionFactory("cuda", ort=ort, warn=other.append).session(a)
    assert len(other) == 1


def test_raising_gpu_provider_falls_back_with_one_warning(model_files):
    a, b = model_files
    ort = FakeOrt(gpu="raises")
    messages = []
    factory = SessionFactory("tensorrt", ort=ort, warn=messages.append)
    assert factory.session(a).get_providers() == [CPU]
    factory.session(b)
    assert len(messages) == 1 and "no CUDA-capable device" in messages[0]
    assert factory.fallback.requested == (TENSORRT, CUDA, CPU)


def test_working_gpu_gives_no_warning(model_files, monkeypatch):
    monkeypatch.setattr(runtime, "nvidia_driver_present", lambda: True)
    a, _ = model_files
    messages = []
    factory = SessionFactory("auto", ort=FakeOrt(gpu="works"), warn=messages.append)
    assert factory.session(a).get_providers() == [CUDA, CPU]  # auto = CUDA, not TensorRT
    assert messages == [] and factory.fallback is None


def test_auto_does_not_try_cuda_without_an_nvidia_driver(model_files, monkeypatch):
    monkeypatch.setattr(runtime, "nvidia_driver_present", lambda: False)
    a, _ = model_files
    messages = []
    factory = SessionFactory("auto", ort=FakeOrt(gpu="works"), warn=messages.append)
    assert factory.session(a).get_providers() == [CPU]
    assert messages == []


def test_tensorrt_chain_and_engine_cache_options(model_files, tmp_path):
    a, _ = model_files
    ort = FakeOrt(gpu="works")
    factory = SessionFactory("tensorrt", ort=ort, tensorrt_cache_dir=tmp_path / "trt")
    assert factory.session(a).get_providers() == [TENSORRT, CUDA, CPU]
    options = factory._provider_options((TENSORRT, CUDA, CPU))
    assert options[0]["trt_engine_cache_enable"] and options[0]["trt_engine_cache_path"] == str(tmp_path / "trt")
    # the detector's input shapes change every frame: no exhaustive cuDNN search for each (docs/gpu.md)
    assert options[1]["cudnn_conv_algo_search"] == "HEURISTIC"


def test_cpu_setting_and_cpu_only_runtime_do_not_warn(model_files):
    a, _ = model_files
    messages = []
    assert SessionFactory("cpu", ort=FakeOrt(), warn=messages.append).session(a).get_providers() == [CPU]
    assert SessionFactory("auto", ort=FakeOrt(available=[CPU]), warn=messages.append).session(a).get_providers() == [CPU]
    assert messages == []


def test_gpu_setting_on_a_cpu_only_runtime_warns_once(model_files):
    a, b = model_files
    messages = []
    factory = SessionFactory("cuda", ort=FakeOrt(available=[CPU]), warn=messages.append)
    factory.session(a)
    factory.session(b)
    assert len(messages) == 1 and "does not offer CUDAExecutionProvider" in messages[0]


def test_threads_and_session_options(model_files):
    a, _ = model_files
    ort = FakeOrt(available=[CPU])
    SessionFactory("cpu", ort=ort).session(a)
    options = ort.created[0][2]
    assert options.intra_op_num_threads == usable_cores() >= 1
    assert options.inter_op_num_threads == 1 and options.execution_mode == "sequential"
    assert options.config == {"session.intra_op.allow_spinning": "0"}  # waiting threads sleep
    SessionFactory("cpu", ort=ort, threads=3).session(a)
    assert ort.created[1][2].intra_op_num_threads == 3


def test_changed_file_gets_a_new_session(model_files):
    import os
    a, _ = model_files
    ort = FakeOrt(available=[CPU])
    factory = SessionFactory("cpu", ort=ort)
    first = factory.session(a)
    a.write_bytes(b"a2")
    os.utime(a, ns=(5, 5_000_000_000))
    assert factory.session(a) is not first


def test_bad_setting_and_missing_file_are_clear(tmp_path):
    with pytest.raises(FaceCacheError, match="auto, cpu, cuda, tensorrt, coreml, directml"):
        SessionFactory("gpu", ort=FakeOrt())
    with pytest.raises(FaceCacheError, match="does not exist"):
        SessionFactory("cpu", ort=FakeOrt()).session(tmp_path / "nope.onnx")


def test_real_onnxruntime_runs_and_is_honest_about_the_gpu(tmp_path, caplog):
    """On this machine onnxruntime-gpu lists CUDA without its libraries: the session runs on CPU
    and the factory says so once. On a machine with working CUDA there is no warning."""
    model = tiny_onnx_model(tmp_path / "tiny.onnx")
    x = np.array([[1, 2, 3]], np.float32)
    cpu = SessionFactory("cpu")
    assert cpu.session(model).get_providers() == [CPU]
    assert np.array_equal(cpu.session(model).run(None, {"x": x})[0], x + 1)

    caplog.set_level(logging.WARNING, logger="facecache.models.runtime")
    factory = SessionFactory("cuda")
    session = factory.session(model)
    factory.session(tiny_onnx_model(tmp_path / "tiny2.onnx"))
    assert np.array_equal(session.run(None, {"x": x})[0], x + 1)
    warnings = [r for r in caplog.records if r.name == "facecache.models.runtime"]
    if CUDA in session.get_providers():
        assert warnings == []
    else:
        assert session.get_providers() == [CPU] and len(warnings) == 1
        assert "running on the CPU" in warnings[0].getMessage()


def test_broken_model_file_is_reported(tmp_path):
    bad = tmp_path / "bad.onnx"
    bad.write_bytes(b"this is not onnx")
    with pytest.raises(FaceCacheError, match="cannot load .*bad.onnx"):
        SessionFactory("cpu").session(bad)


def test_sessions_are_made_from_the_bytes_whose_digest_was_checked(model_files):
    from facecache.errors import ModelChanged
    from facecache.fingerprint import bytes_digest

    a, _ = model_files
    ort = FakeOrt(available=[CPU])
    factory = SessionFactory("cpu", ort=ort)
    session = factory.session(a, bytes_digest(b"a"))
    assert ort.created[-1][0] == b"a"  # onnxruntime got the very bytes that were hashed
    assert factory.session(a, bytes_digest(b"a")) is session
    with pytest.raises(ModelChanged, match=f"a.onnx changed after it was checked .*expected {bytes_digest(b'x')}"):
        factory.session(a, bytes_digest(b"x"))
    assert len(ort.created) == 1


def test_cpu_sessions_of_marked_files_get_their_cpu_form_and_gpu_sessions_the_file_as_it_is(tmp_path):
    from facecache.fingerprint import bytes_digest
    from facecache.models.blocked_prelu import blocked_prelu
    from facecache.models.convert.onnx_writer import OnnxGraph
    from facecache.models.prelu_split import split_prelu

    graph = OnnxGraph("prelu")
    x = graph.input("x", (1, 2, 1, 1))
    graph.output(graph.node("PRelu", [x, graph.constant("slope", np.full((2, 1, 1), 0.5, np.float32))]), (1, 2, 1, 1))
    path = tmp_path / "prelu.onnx"
    path.write_bytes(graph.to_bytes())
    digest = bytes_digest(path.read_bytes())
    cpu, gpu = FakeOrt(available=[CPU]), FakeOrt(available=[CUDA, CPU], gpu="works")
    factory = SessionFactory("cpu", ort=cpu)
    factory.session(path, digest, cpu_graph="prelu_split")
    assert cpu.created[-1][0] == split_prelu(path.read_bytes()) != path.read_bytes()
    factory.session(path, digest, cpu_graph="blocked_prelu")  # another form: a session of its own
    assert cpu.created[-1][0] == blocked_prelu(path.read_bytes()) not in (path.read_bytes(), cpu.created[0][0])
    factory.session(path, digest)  # a file the catalog does not mark: as it is, in a session of its own
    assert cpu.created[-1][0] == path.read_bytes() and len(cpu.created) == 3
    SessionFactory("cuda", ort=gpu).session(path, digest, cpu_graph="blocked_prelu")
    assert gpu.created[-1][0] == path.read_bytes()  # the GPU providers' own PRelu kernels are left alone


def test_a_gpu_session_whose_run_fails_goes_on_on_the_cpu_and_is_reported_once(model_files):
    a, b = model_files
    ort = FakeOrt(gpu="fails_on_run")
    messages = []
    factory = SessionFactory("cuda", ort=ort, warn=messages.append)
    session = factory.session(a)
    assert session.get_providers() == [CUDA, CPU] and factory.placements == {"a.onnx": (CUDA, CPU)}
    x = np.zeros((1, 3), np.float32)
    assert np.array_equal(session.run(None, {"x": x})[0], x + 1)  # repeated on the CPU
    assert session.get_providers() == [CPU] and factory.placements["a.onnx"] == (CPU,)
    assert ort.created[-1][0] == b"a" and ort.created[-1][1] == (CPU,)  # made again from the file's bytes
    assert len(messages) == 1 and "a.onnx failed on CUDAExecutionProvider during a run (CUDA failure 2" in messages[0]
    assert factory.session(b).get_providers() == [CPU]  # later sessions go straight to the CPU
    assert factory.take_fallback_message() == messages[0]
    assert factory.take_fallback_message() is None  # a job's report carries it once
    assert len(messages) == 1


def test_a_cpu_run_that_fails_is_raised_as_it_is(model_files):
    a, _ = model_files
    factory = SessionFactory("cpu", ort=FakeOrt(available=[CPU]))
    with pytest.raises(KeyError):
        factory.session(a).run(None, {})


def test_auto_uses_the_cpu_quietly_where_the_cuda_libraries_do_not_load(model_files, monkeypatch):
    """A CUDA build of onnxruntime (`cuda_version`) on a machine without NVIDIA's libraries: the loader's
    real answers. `auto` runs on the CPU without a warning; `cuda` warns once, naming the libraries."""
    monkeypatch.setattr(runtime, "nvidia_driver_present", lambda: True)
    a, _ = model_files
    ort = FakeOrt(gpu="works")
    ort.cuda_version = "12.8"
    messages = []
    auto = SessionFactory("auto", ort=ort, warn=messages.append)
    assert auto.session(a).get_providers() == [CPU] and messages == []
    assert auto.cuda_load.failures and [p for _, p, _ in ort.created] == [(CPU,)]
    SessionFactory("cuda", ort=ort, warn=messages.append).session(a)
    assert len(messages) == 1 and "the CUDA libraries did not load: libcublasLt.so.12 did not load" in messages[0]
    assert "facecache gpu install" in messages[0]


def test_directml_has_a_session_per_thread_and_runs_one_at_a_time(model_files):
    import threading

    a, _ = model_files
    ort = FakeOrt(available=[DIRECTML, CPU], gpu="works")
    factory = SessionFactory("directml", ort=ort)
    here = factory.session(a)
    assert factory.session(a) is here and here.get_providers() == [DIRECTML, CPU]
    assert ort.created[0][2].enable_mem_pattern is False
    there = []
    thread = threading.Thread(target=lambda: there.append(factory.session(a)))
    thread.start()
    thread.join()
    assert there[0] is not here and len(ort.created) == 2
    inside, most = [0], [0]

    class Counting(FakeSession):
        def run(self, outputs, feeds):
            inside[0] += 1
            most[0] = max(most[0], inside[0])
            threading.Event().wait(0.01)
            inside[0] -= 1
            return []

    here.inner = Counting(b"a", [DIRECTML, CPU])  # one session shared by threads, as a preview's swapper does
    runners = [threading.Thread(target=here.run, args=(None, {})) for _ in range(4)]
    for runner in runners:
        runner.start()
    for runner in runners:
        runner.join()
    assert most[0] == 1


def test_a_mac_too_old_for_the_shipped_onnxruntime_is_told_so():
    """Blender 5.1+ on macOS 11-12: the zip's ONNX Runtime for Python 3.13 needs macOS 13 (no build for it runs
    on older macOS), Blender unpacks it anyway and the import fails with a loader error. The engine names the
    cause from the wheel's tags and the Mac's version (both given here: this machine is no Mac)."""
    from facecache.models.runtime_import import onnxruntime_import_problem

    loader_error = ImportError("dlopen(onnxruntime_pybind11_state.so): Symbol not found: _objc_msgSend$...")
    wheel = ("1.23.2", ["cp313-cp313-macosx_13_0_arm64"])
    message = onnxruntime_import_problem(loader_error, mac_version="12.7.4", machine="arm64", installed=wheel)
    assert message.startswith("ONNX Runtime 1.23.2 (for Python 3.")
    assert "needs macOS 13.0 or later, and this Mac runs macOS 12.7.4: update macOS, or use Blender 4.2 to 5.0" in message
    assert "\n" not in message
    # a Mac new enough, or no Mac at all: the loader's own error, with what to install
    for mac in ("13.6", ""):
        other = onnxruntime_import_problem(loader_error, mac_version=mac, machine="arm64", installed=wheel)
        assert other.startswith("onnxruntime cannot be imported (dlopen(") and "pip install onnxruntime" in other
    # the universal2 build of 1.19.2 (Python 3.11) runs on macOS 11 on either processor
    older = ("1.19.2", ["cp311-cp311-macosx_11_0_universal2"])
    assert "needs macOS 11.0" in onnxruntime_import_problem(loader_error, mac_version="10.15", machine="x86_64",
                                                             installed=older)


def test_the_installed_onnxruntime_wheel_tags_are_read_from_its_metadata():
    from facecache.models.runtime_import import installed_wheel_tags

    import onnxruntime

    version, tags = installed_wheel_tags("onnxruntime")
    assert version == onnxruntime.__version__ and tags and all(tag.count("-") == 2 for tag in tags)
    assert installed_wheel_tags("no-such-distribution") == ("", [])


def test_a_wheel_that_needs_a_newer_macos_is_named_with_both_versions():
    """PyAV on Apple silicon needs macOS 13: a Mac on 12 is told so (media.movie.import_av says what to do)."""
    from facecache.models.runtime_import import newer_macos_needed

    wheel = ("15.1.0", ["cp311-cp311-macosx_13_0_arm64"])
    assert newer_macos_needed("av", "12.6", "arm64", wheel) == ("15.1.0", "13.0", "12.6")
    assert newer_macos_needed("av", "13.1", "arm64", wheel) is None
    assert newer_macos_needed("av", "", "x86_64", wheel) is None  # not a Mac
