"""An install that stops part-way (issue 36): Ctrl-C, the add-on's Cancel (the engine job's cancel), a download
that stalls (an index that accepts and never answers, one that stops mid-wheel) and a pip that fails. Each
ends in one line that says what is left, stops pip, and leaves nothing half-installed; the wheels that arrived
whole are kept for the next run. The command runs as a user runs it, in its own process, with the real pip
against a local index on 127.0.0.1 (conftest); only its pin table is swapped for the stand-ins, so that the
wheels are small. Every wait is bounded: an install that did not stop would hang on the stalled server."""

from __future__ import annotations

import json
import os
import queue
import re
import signal
import socket
import subprocess
import sys
import threading
import time
from dataclasses import asdict
from pathlib import Path

import pytest

from facecache.engine import error_message, run_job
from facecache.errors import Cancelled
from facecache.gpu_runtime import pins
from facecache.gpu.install import GpuRuntimeInstaller
from facecache.gpu.wheels import STALL_ENV
from facecache.gpu_runtime.layout import RuntimeFolder
from facecache.gpu_runtime.pins import this_python

BOUND_S = 120  # for anything to happen; a stalled server holds its answer for much longer
HELD_S = 600  # how long the stalled server holds a wheel's second half

# The real command line, with the pins swapped for the stand-ins (a JSON list of pins.Wheel fields).
CLI = """
import json, sys
from facecache.gpu_runtime import pins
wheels = [pins.Wheel(**fields) for fields in json.load(open(sys.argv[1]))]
pins.runtime_set = lambda cuda, platform: pins.RuntimeSet(
    cuda, platform, tuple(w for w in wheels if w.is_library), {w.python: w for w in wheels if not w.is_library})
from facecache.cli import main
raise SystemExit(main(sys.argv[2:]))
"""


@pytest.fixture
def two_wheels(standin_set, pip_index) -> pins.RuntimeSet:
    """The stand-in set with an onnxruntime-gpu wheel large enough for pip to write part of it (256 KB of
    padding, like the library wheel's): a download cut off in its middle has bytes on disk."""
    import random

    standin, _ = standin_set
    python = this_python()
    pinned = pins.runtime_set("12", standin.platform).onnxruntime[python]
    onnxruntime = pip_index.publish_standin(pinned, {"onnxruntime/__init__.py": b'__version__ = "1.26.0"\n',
                                                     "onnxruntime/padding.bin": random.Random(36).randbytes(256 << 10)})
    return pins.RuntimeSet("12", standin.platform, standin.libraries, {python: onnxruntime})


def run_cli(tmp_path: Path, standin: pins.RuntimeSet, *args: str, env: dict | None = None) -> subprocess.Popen:
    """`facecache gpu install ARGS` with the stand-in pins, in its own process group, its stderr piped."""
    table = tmp_path / "pins.json"
    table.write_text(json.dumps([asdict(w) for w in standin.libraries + tuple(standin.onnxruntime.values())]))
    return subprocess.Popen([sys.executable, "-c", CLI, str(table), "gpu", "install", "--cuda", "12", *args],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env or dict(os.environ),
                            start_new_session=True)


def stop(process: subprocess.Popen) -> None:
    """End a command a failed test left running, with its pip."""
    if process.poll() is None:
        if hasattr(os, "killpg"):
            os.killpg(process.pid, signal.SIGKILL)
        else:
            process.kill()
        process.wait()


class Lines:
    """A process's stderr lines as they come, read on a thread (so that a wait for one is bounded)."""

    def __init__(self, stream):
        self.seen: list[str] = []
        self._queue: queue.Queue = queue.Queue()
        threading.Thread(target=self._read, args=(stream,), daemon=True).start()

    def _read(self, stream) -> None:
        for line in stream:
            self._queue.put(line.rstrip("\n"))
        self._queue.put(None)

    def wait_for(self, wanted, timeout: float = BOUND_S) -> str:
        deadline = time.monotonic() + timeout
        while True:
            try:
                line = self._queue.get(timeout=max(0.0, deadline - time.monotonic()))
            except queue.Empty:
                raise AssertionError(f"no such line within {timeout} s; seen: {self.seen}") from None
            if line is None:
                raise AssertionError(f"the command ended without such a line; seen: {self.seen}")
            self.seen.append(line)
            if wanted(line):
                return line

    def rest(self, timeout: float = BOUND_S) -> list[str]:
        """Every line up to the end of the stream."""
        deadline = time.monotonic() + timeout
        while (line := self._queue.get(timeout=max(0.0, deadline - time.monotonic()))) is not None:
            self.seen.append(line)
        return self.seen


def wait_until(condition, what: str, timeout: float = BOUND_S) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"{what}: not within {timeout} s")
        time.sleep(0.05)


def group_alive(group: int) -> bool:
    """Whether a live process (not a zombie) is left in the process group (Linux: read from /proc)."""
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[2]) == group and fields[0] != "Z":
            return True
    return False


def downloads_left(runtime_dir: Path) -> list[str]:
    folder = runtime_dir / "downloads"
    return sorted(p.name for p in folder.iterdir()) if folder.is_dir() else []


def partial_bytes(runtime_dir: Path) -> int:
    """Bytes pip has written of the wheel it is fetching (its working folder's files below tmp/ and dist/)."""
    work = runtime_dir / "downloads"
    return sum(p.stat().st_size for folder in work.glob(".fetching-*") for sub in ("tmp", "dist")
               for p in (folder / sub).rglob("*") if p.is_file()) if work.is_dir() else 0


def nothing_half_installed(runtime_dir: Path, platform: str) -> None:
    assert RuntimeFolder.resolve().installed() is None and not (runtime_dir / platform).exists()
    assert not [p for p in runtime_dir.iterdir() if p.name.startswith(".")]  # no staging folder
    assert not (runtime_dir / "locks" / "install.lock").exists()  # the lock was released


@pytest.mark.skipif(sys.platform != "linux", reason="signals to a process group; the group read from /proc")
def test_ctrl_c_exits_130_in_one_line_saying_what_is_kept(two_wheels, runtime_dir, asset_server, tmp_path):
    library, onnxruntime = two_wheels.libraries[0], two_wheels.onnxruntime[this_python()]
    asset_server.stall_after[f"/wheels/{onnxruntime.filename}"] = (onnxruntime.size // 2, HELD_S)
    # pip's own timeout (15 s) must not end the stalled wheel before Ctrl-C on a loaded machine
    install = run_cli(tmp_path, two_wheels, env={**os.environ, "PIP_DEFAULT_TIMEOUT": str(HELD_S)})
    try:
        lines = Lines(install.stderr)
        # progress in bytes while the second wheel arrives, and part of it on disk: then Ctrl-C (the whole group)
        lines.wait_for(lambda line: line.startswith("installing the NVIDIA GPU runtime: ") and " of " in line
                       and f"2/2 {onnxruntime.filename}" in line)
        wait_until(lambda: partial_bytes(runtime_dir) > 0, "part of the second wheel on disk")
        os.killpg(install.pid, signal.SIGINT)
        assert install.wait(timeout=BOUND_S) == 130
        seen = lines.rest()
    finally:
        stop(install)
    errors = [line for line in seen if line.startswith("facecache: error:")]
    assert errors == [seen[-1]] and not any("Traceback" in line or "ERROR" in line for line in seen), seen
    assert errors[0].startswith("facecache: error: interrupted: nothing was installed and no partial download is "
                                f"kept; 1 wheel downloaded whole ("), errors[0]
    assert f"is kept in {runtime_dir / 'downloads'}, so installing again" in errors[0]
    # and it is so: the first wheel kept, the second's part gone, pip gone, nothing installed
    assert downloads_left(runtime_dir) == [library.filename]
    nothing_half_installed(runtime_dir, two_wheels.platform)
    wait_until(lambda: not group_alive(install.pid), "pip ended with the command")
    # the next run fetches only the second wheel
    del asset_server.stall_after[f"/wheels/{onnxruntime.filename}"]
    again = run_cli(tmp_path, two_wheels)
    out, err = again.communicate(timeout=BOUND_S)
    assert again.returncode == 0, err
    assert len(asset_server.served(library.filename)) == 1 and RuntimeFolder.resolve().installed() is not None


class SilentIndex:
    """A server on 127.0.0.1 that accepts connections and never answers (nor closes them)."""

    def __init__(self):
        self.socket = socket.create_server(("127.0.0.1", 0))
        self.socket.settimeout(0.2)
        self.accepted: list[socket.socket] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._accept, daemon=True)
        self._thread.start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.socket.getsockname()[1]}/simple/"

    def _accept(self) -> None:
        while not self._stop.is_set():
            try:
                self.accepted.append(self.socket.accept()[0])
            except (TimeoutError, OSError):
                continue

    def close(self) -> None:
        self._stop.set()
        self._thread.join(timeout=BOUND_S)
        for connection in self.accepted:
            connection.close()
        self.socket.close()


@pytest.fixture
def silent_index(pip_index, monkeypatch):
    index = SilentIndex()
    # pip's own settings would wait ten minutes and never give up (as a user's PIP_DEFAULT_TIMEOUT can)
    monkeypatch.setenv("PIP_INDEX_URL", index.url)
    monkeypatch.setenv("PIP_DEFAULT_TIMEOUT", str(HELD_S))
    monkeypatch.setenv("PIP_RETRIES", "0")
    yield index
    index.close()


def test_an_index_that_never_answers_is_a_stall_said_in_one_line(two_wheels, runtime_dir, silent_index, tmp_path):
    install = run_cli(tmp_path, two_wheels, env={**os.environ, "FACECACHE_GPU_STALL_SECONDS": "2"})
    try:
        out, err = install.communicate(timeout=BOUND_S)
    finally:
        stop(install)
    library = two_wheels.libraries[0]
    assert install.returncode == 2 and silent_index.accepted  # pip did ask the index
    errors = [line for line in err.splitlines() if line.startswith("facecache:")]
    assert errors == [err.splitlines()[-1]] and "Traceback" not in err and "ERROR" not in err, err
    assert errors[0] == (
        f"facecache: error: the download of {library.project} {library.version} stalled: no byte arrived for 2 s "
        "(not one byte of it had arrived), so pip was stopped and nothing was installed; check the network and "
        "pip's index settings (`pip config list`) and run the install again (the wheels already downloaded whole "
        "are kept), or allow a slower index longer (FACECACHE_GPU_STALL_SECONDS or --stall-timeout)")
    nothing_half_installed(runtime_dir, two_wheels.platform)
    assert downloads_left(runtime_dir) == []  # pip's working folder is gone


def test_progress_off_a_terminal_is_in_bytes_and_a_stall_mid_wheel_stops(two_wheels, runtime_dir, asset_server,
                                                                         tmp_path):
    library = two_wheels.libraries[0]
    asset_server.stall_after[f"/wheels/{library.filename}"] = (library.size // 2, HELD_S)
    # a stall bound longer than the progress lines' interval (5 s), so a line comes before the stall is found,
    # and than pip takes to start on a loaded machine; pip's own timeout longer still (it would end it itself)
    install = run_cli(tmp_path, two_wheels, "--stall-timeout", "15",
                      env={**os.environ, "PIP_DEFAULT_TIMEOUT": str(HELD_S), "PIP_RETRIES": "0"})
    try:
        out, err = install.communicate(timeout=BOUND_S)
    finally:
        stop(install)
    lines = err.splitlines()
    assert install.returncode == 2, err
    # bytes of the whole download, every 5 s while the first wheel arrives and then stalls; one line at least
    # after its first half arrived (the stall is found 15 s after it, a line is due every 5 s)
    total = f"{two_wheels.download_bytes(this_python()) / 1000:.1f} KB"
    pattern = re.compile(rf"installing the NVIDIA GPU runtime: (\d+ B|[\d.]+ KB) of {re.escape(total)} "
                         rf"1/2 {re.escape(library.filename)} \(\d+ s\)")
    progress = [line for line in lines if line.startswith("installing the NVIDIA GPU runtime: ")]
    assert progress and all(pattern.fullmatch(line) for line in progress), lines
    assert any(pattern.fullmatch(line).group(1).endswith(" KB") for line in progress), lines
    assert lines[-1].startswith(f"facecache: error: the download of {library.project} {library.version} stalled: "
                                "no byte arrived for 15 s (") and " had arrived), so pip was stopped" in lines[-1]
    assert "not one byte" not in lines[-1] and "Traceback" not in err
    nothing_half_installed(runtime_dir, two_wheels.platform)
    assert downloads_left(runtime_dir) == []


def test_pips_failure_is_one_line_naming_its_log(two_wheels, runtime_dir, pip_index, tmp_path):
    onnxruntime = two_wheels.onnxruntime[this_python()]
    pip_index.withdraw(onnxruntime.filename)
    install = run_cli(tmp_path, two_wheels)
    out, err = install.communicate(timeout=BOUND_S)
    log = runtime_dir / "logs" / f"pip-{two_wheels.platform}.log"
    assert install.returncode == 2
    assert [line for line in err.splitlines() if "error" in line.lower()] == [err.splitlines()[-1]], err
    assert err.splitlines()[-1] == (
        f"facecache: error: pip could not download onnxruntime-gpu==1.26.0 (wheel; pip's output is in {log}): "
        f"check that the Python package index is reachable (`{sys.executable} -m pip download --no-deps "
        "onnxruntime-gpu==1.26.0`) and try again")
    assert "ERROR: No matching distribution found for onnxruntime-gpu==1.26.0" in log.read_text()


def test_cancelling_the_engines_install_job_stops_pip_and_keeps_the_whole_wheels(two_wheels, runtime_dir,
                                                                                  asset_server, monkeypatch):
    """The add-on's Cancel is a cancel request to the engine session, which sets the job's cancel event."""
    library, onnxruntime = two_wheels.libraries[0], two_wheels.onnxruntime[this_python()]
    asset_server.stall_after[f"/wheels/{onnxruntime.filename}"] = (onnxruntime.size // 2, HELD_S)
    monkeypatch.setattr(pins, "runtime_set", lambda cuda, platform: two_wheels)
    monkeypatch.setenv("PIP_DEFAULT_TIMEOUT", str(HELD_S))  # pip's own timeout does not end it before Cancel
    monkeypatch.setenv(STALL_ENV, str(HELD_S))  # nor the installer's stall bound, however slowly a loaded pip starts
    cancel, messages, ended = threading.Event(), [], {}

    def job() -> None:
        try:
            ended["summary"] = run_job({"kind": "gpu_install", "cuda": "12"}, messages.append, cancel)
        except Exception as exc:  # noqa: BLE001 - the test reads it
            ended["error"] = exc

    worker = threading.Thread(target=job, daemon=True)
    worker.start()
    # the second wheel is arriving (progress in bytes), part of it on disk: Cancel. No deadline but the stalled
    # server's: the job either gets there or ends, with the reason the assert shows, however busy the machine.
    wait_until(lambda: (any(m["done"] > library.size for m in list(messages)) and partial_bytes(runtime_dir) > 0)
               or not worker.is_alive(), "part of the second wheel on disk", timeout=HELD_S)
    assert worker.is_alive(), f"the install ended before Cancel: {ended}; progress: {messages[-3:]}"
    cancel.set()
    worker.join(timeout=BOUND_S)  # the server holds the rest for HELD_S: only a stopped pip ends it sooner
    assert not worker.is_alive() and "summary" not in ended
    answer = error_message(ended["error"])
    assert answer["kind"] == "Cancelled" and "\n" not in answer["message"]
    assert answer["message"].startswith("cancelled: nothing was installed and no partial download is kept; 1 wheel "
                                        "downloaded whole ("), answer["message"]
    assert downloads_left(runtime_dir) == [library.filename]
    nothing_half_installed(runtime_dir, two_wheels.platform)
    assert {m["total"] for m in messages} == {two_wheels.download_bytes(this_python())}


def test_cancel_while_unpacking_leaves_the_runtime_as_it_was(two_wheels, runtime_dir):
    def cancel_at_unpacking(event) -> None:
        """Cancel once the first wheel is unpacked into the staging folder and the second is next."""
        if event.file.startswith("unpacking"):
            unpacking.append(event.file)
            if len(unpacking) == 2:
                assert [p for p in runtime_dir.iterdir() if ".partial-" in p.name]  # the staging folder, filled
                cancel.set()

    cancel, unpacking = threading.Event(), []
    with pytest.raises(Cancelled) as caught:  # a first install, cancelled while it unpacks
        GpuRuntimeInstaller(sets=lambda cuda, platform: two_wheels).install("12", progress=cancel_at_unpacking,
                                                                             cancel=cancel)
    assert len(unpacking) == 2
    assert str(caught.value).startswith("cancelled: nothing was installed and no partial download is kept; 2 wheels "
                                        "downloaded whole (")
    nothing_half_installed(runtime_dir, two_wheels.platform)
    assert downloads_left(runtime_dir) == sorted(w.filename for w in two_wheels.wheels_for(this_python()))

    # installed, then another CUDA set cancelled while it unpacks: the installed one stays, untouched
    installed = GpuRuntimeInstaller(sets=lambda cuda, platform: two_wheels).install("12")
    other = pins.RuntimeSet("13", two_wheels.platform, two_wheels.libraries, two_wheels.onnxruntime)
    cancel.clear()
    unpacking.clear()
    with pytest.raises(Cancelled, match=r"^cancelled: the NVIDIA GPU runtime installed before \(CUDA 12\) is "
                                        "unchanged and no partial download is kept; 2 wheels"):
        GpuRuntimeInstaller(sets=lambda cuda, platform: other).install("13", progress=cancel_at_unpacking,
                                                                        cancel=cancel)
    assert RuntimeFolder.resolve().installed().cuda == "12" and len(unpacking) == 2
    assert RuntimeFolder.resolve().disk_bytes() == installed.disk_bytes
    assert not [p for p in runtime_dir.iterdir() if p.name.startswith(".")]


@pytest.mark.parametrize("setting", [("--stall-timeout", "0"), ("--stall-timeout", "-5"), ("env", "soon")])
def test_a_bad_stall_timeout_is_one_line(two_wheels, tmp_path, setting):
    env = {**os.environ, "FACECACHE_GPU_STALL_SECONDS": setting[1]} if setting[0] == "env" else None
    install = run_cli(tmp_path, two_wheels, *(setting if setting[0] != "env" else ()), env=env)
    out, err = install.communicate(timeout=BOUND_S)
    assert install.returncode == 2 and err.splitlines()[-1].startswith("facecache: error: ") and "Traceback" not in err
    assert "FACECACHE_GPU_STALL_SECONDS" in err.splitlines()[-1] and "seconds" in err.splitlines()[-1]
