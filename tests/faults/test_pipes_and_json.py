"""Pipes closed early end quietly, and the stdout of a `--json` command is JSON only (`analyze --json`: JSON
Lines, a line a frame and the summary; `--pretty`: one document), whatever ONNX Runtime prints (its TensorRT error banner goes through Python's print and C's stdout)."""

import json
import subprocess
import sys

import pytest

from fault_helpers import cli

pytestmark = pytest.mark.index  # real MTCNN weights and portraits


def closed_pipe(*command):
    """Run a command whose stdout is a pipe nobody reads (closed before it writes)."""
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    process.stdout.close()
    _, err = process.communicate(timeout=300)
    return process.returncode, err.decode()


def test_closed_pipes_end_quietly(tmp_path):
    for command in (["models", "list", "--models-dir", tmp_path / "m"],
                    ["models", "list", "--models-dir", tmp_path / "m", "--json"],
                    ["cache", "stats", "--cache-dir", tmp_path / "c", "--json"]):
        code, err = closed_pipe(sys.executable, "-m", "facecache", *map(str, command))
        assert (code, err) == (141, ""), (command, err)  # like a process stopped by SIGPIPE, nothing said


def test_json_stdout_is_json_only_whatever_onnx_runtime_prints(tmp_path, models_dir, fault_media):
    result = cli("analyze", fault_media["portrait"], "--providers", "tensorrt", "--cache-dir", tmp_path / "c",
                 "--models-dir", models_dir, "--json")
    assert result.code == 0, result.err
    frame, summary = map(json.loads, result.out.splitlines())  # every line of stdout parses
    assert (frame["type"], frame["face_count"], summary["type"], summary["faces"]) == ("frame", 1, "summary", 1)
    pretty = cli("analyze", fault_media["portrait"], "--providers", "tensorrt", "--cache-dir", tmp_path / "c",
                 "--models-dir", models_dir, "--pretty")
    assert pretty.code == 0 and json.loads(pretty.out)["faces"] == 1  # the whole of stdout is one document
    failed = cli("analyze", tmp_path / "missing.mp4", "--cache-dir", tmp_path / "c", "--models-dir", models_dir,
                 "--json")
    assert failed.code == 2 and json.loads(failed.out)["exit_code"] == 2  # an error is one document too


def test_the_worker_ends_quietly_when_its_caller_is_gone(tmp_path):
    process = subprocess.Popen([sys.executable, "-m", "facecache.worker"], stdin=subprocess.PIPE,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    process.stdout.close()
    _, err = process.communicate(json.dumps({"kind": "cache_stats", "settings": {"cache_dir": str(tmp_path)}}).encode()
                                 + b"\n", timeout=300)
    assert "Traceback" not in err.decode() and "BrokenPipe" not in err.decode()
