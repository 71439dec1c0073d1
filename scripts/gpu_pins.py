"""Print the pinned wheels of the NVIDIA GPU runtime (core/facecache/gpu/pins.py's WHEELS) from the index.

For each CUDA major and platform, pip resolves `onnxruntime-gpu[cuda,cudnn]==VERSION` as it would install
it (`pip install --dry-run --report`, with `--use-feature=fast-deps` so that only each wheel's metadata is
read through HTTP range requests: nothing is downloaded), which names every wheel with its URL and SHA-256;
the sizes come from the index's JSON page of each package (PEP 691). numpy and the pure-Python dependencies
of onnxruntime are left out: the engine's own environment has them.

    python -m venv /tmp/pins && /tmp/pins/bin/pip install -U pip
    /tmp/pins/bin/python scripts/gpu_pins.py > /tmp/wheels.txt    # then paste it into pins.py

Needs a recent pip (fast-deps; 26.3 was used) and the index (pypi.org).
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
import urllib.request
from pathlib import Path

SETS = {"12": "1.26.0", "13": "1.31.1"}  # CUDA major -> onnxruntime-gpu (1.26.0: the last CUDA 12 build)
PLATFORMS = {"linux_x86_64": ["manylinux_2_28_x86_64", "manylinux_2_27_x86_64", "manylinux_2_17_x86_64",
                              "manylinux2014_x86_64"],
             "win_amd64": ["win_amd64"]}
PYTHONS = ("3.11", "3.12", "3.13", "3.14")
SKIPPED = ("numpy", "flatbuffers", "packaging", "protobuf")  # in the engine's own environment


def resolve(cuda: str, platform: str, python: str) -> list[dict]:
    with tempfile.TemporaryDirectory() as tmp:
        report = Path(tmp) / "report.json"
        command = [sys.executable, "-m", "pip", "install", "--dry-run", "--ignore-installed", "--quiet",
                   "--use-feature=fast-deps", "--report", str(report), "--only-binary=:all:",
                   "--python-version", python, "--target", str(Path(tmp) / "t")]
        command += [f"--platform={tag}" for tag in PLATFORMS[platform]]
        command.append(f"onnxruntime-gpu[cuda,cudnn]=={SETS[cuda]}")
        subprocess.run(command, check=True)
        found = []
        for item in json.loads(report.read_text())["install"]:
            name = item["metadata"]["name"].lower().replace("_", "-")
            if name in SKIPPED:
                continue
            info = item["download_info"]
            found.append({"name": name, "url": info["url"], "sha256": info["archive_info"]["hashes"]["sha256"]})
        return found


def size(url: str, sizes: dict) -> int:
    filename = url.rsplit("/", 1)[1]
    project = filename.split("-", 1)[0].lower().replace("_", "-")
    if project not in sizes:
        request = urllib.request.Request(f"https://pypi.org/simple/{project}/",
                                         headers={"Accept": "application/vnd.pypi.simple.v1+json"})
        with urllib.request.urlopen(request, timeout=60) as response:
            sizes[project] = {f["filename"]: f["size"] for f in json.load(response)["files"]}
    return sizes[project][filename]


def main() -> None:
    sizes: dict = {}
    print("WHEELS = (")
    for cuda in SETS:
        for platform in PLATFORMS:
            seen = set()
            for python in PYTHONS:
                for wheel in resolve(cuda, platform, python):
                    if wheel["url"] in seen:
                        continue  # a library wheel: the same for every Python
                    seen.add(wheel["url"])
                    print(f'    Wheel("{cuda}", "{platform}", "{wheel["name"]}",\n'
                          f'          "{wheel["url"]}",\n'
                          f'          "{wheel["sha256"]}", {size(wheel["url"], sizes)}),')
    print(")")


if __name__ == "__main__":
    main()
