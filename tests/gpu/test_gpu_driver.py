"""The driver's answer (nvidia-smi, run through a stand-in runner: no NVIDIA driver exists here) and the
CUDA major chosen from it."""

import subprocess

from facecache.gpu_runtime.driver import Driver, Gpu, choose_cuda, driver_problem, read_driver


def runner(answers: dict):
    """A stand-in for subprocess.run: nvidia-smi's output for the fields asked, or a failure."""
    def run(command, **_kwargs):
        fields = command[1].split("=", 1)[1]
        out = answers.get(fields)
        return subprocess.CompletedProcess(command, 0 if out is not None else 6, out or "", "")
    return run


def test_the_driver_says_its_version_and_each_gpu(monkeypatch):
    monkeypatch.setattr("shutil.which", lambda name: "/usr/bin/nvidia-smi")
    driver = read_driver(runner({"name,driver_version,compute_cap":
                                 "NVIDIA GeForce RTX 3060, 580.65.06, 8.6\nNVIDIA GeForce GTX 1080, 580.65.06, 6.1\n"}),
                         platform="linux")
    assert driver.present and driver.version == "580.65.06" and driver.major == 580
    assert driver.gpus == (Gpu("NVIDIA GeForce RTX 3060", "8.6"), Gpu("NVIDIA GeForce GTX 1080", "6.1"))
    choice = choose_cuda(driver)
    assert choice.cuda == "12" and "GTX 1080 predates Turing" in choice.reason


def test_an_older_driver_without_compute_cap_is_asked_again(monkeypatch):
    monkeypatch.setattr("shutil.which", lambda name: "/usr/bin/nvidia-smi")
    driver = read_driver(runner({"name,driver_version": "Quadro P4000, 470.82.01\n"}), platform="linux")
    assert driver.present and driver.gpus == (Gpu("Quadro P4000", ""),)
    assert choose_cuda(driver).cuda == "12" and "older than 580" in choose_cuda(driver).reason
    assert "older than 525" in driver_problem(driver)


def test_cuda_13_only_with_driver_580_on_turing_or_newer():
    assert choose_cuda(Driver(True, "580.65.06", (Gpu("RTX 2080", "7.5"), Gpu("RTX 4090", "8.9")))).cuda == "13"
    assert choose_cuda(Driver(True, "575.51.03", (Gpu("RTX 4090", "8.9"),))).cuda == "12"
    assert choose_cuda(Driver(True, "580.65.06", (Gpu("RTX 4090", ""),))).cuda == "12"
    assert choose_cuda(Driver(False, problem="none")).cuda == "12"
    assert driver_problem(Driver(True, "550.54.15")) == ""


def test_no_driver_is_said(monkeypatch):
    monkeypatch.setattr("shutil.which", lambda name: None)
    monkeypatch.setattr("os.path.exists", lambda path: False)
    driver = read_driver(runner({}), platform="linux")
    assert not driver.present and "nvidia-smi is not installed" in driver.problem
    assert not read_driver(runner({}), platform="darwin").present
