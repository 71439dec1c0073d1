"""Print the pinned wheels of the NVIDIA GPU runtime (core/facecache/gpu_runtime/pins.py's WHEELS) from a package index.

    python -m venv /tmp/pins && /tmp/pins/bin/pip install -U pip
    /tmp/pins/bin/python scripts/gpu_pins.py INDEX_URL > /tmp/wheels.txt    # then paste it into pins.py

INDEX_URL is the root of the index's simple API (the URL pip's --index-url takes). For each CUDA major and
platform, pip resolves `onnxruntime-gpu[cuda,cudnn]==VERSION` against that index alone, as it would install
it (`pip install --dry-run --report`, with `--use-feature=fast-deps` so that only each wheel's metadata is
read, through HTTP range requests: no wheel is downloaded), which names every wheel. Each wheel's SHA-256 and
size then come from the index's JSON page of its project (PEP 691 and PEP 700), its SHA-256 checked against
pip's report. The printed pins name no host. numpy and the pure-Python dependencies of onnxruntime are left
out: the engine's own environment has them. Needs a recent pip (fast-deps; 26.3 was used).
"""

from __future__ import annotations

import argparse
import json
import os
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
OTHER_SOURCES = ("PIP_INDEX_URL", "PIP_EXTRA_INDEX_URL", "PIP_FIND_LINKS", "PIP_NO_INDEX")


def resolve(index_url: str, cuda: str, platform: str, python: str) -> list[dict]:
    """[{"project", "filename", "sha256"}] of the wheels pip would install, from INDEX_URL only."""
    # no configuration file (it may add other indexes or find-links); proxies and certificates from the
    # environment still apply
    env = {k: v for k, v in os.environ.items() if k.upper() not in OTHER_SOURCES}
    env["PIP_CONFIG_FILE"] = os.devnull
    with tempfile.TemporaryDirectory() as tmp:
        report = Path(tmp) / "report.json"
        command = [sys.executable, "-m", "pip", "install", "--dry-run", "--ignore-installed", "--quiet",
                   "--use-feature=fast-deps", "--report", str(report), "--only-binary=:all:",
                   "--index-url", index_url, "--python-version", python, "--target", str(Path(tmp) / "t")]
        command += [f"--platform={tag}" for tag in PLATFORMS[platform]]
        command.append(f"onnxruntime-gpu[cuda,cudnn]=={SETS[cuda]}")
        subprocess.run(command, check=True, env=env)
        found = []
        for item in json.loads(report.read_text())["install"]:
            project = item["metadata"]["name"].lower().replace("_", "-")
            if project in SKIPPED:
                continue
            info = item["download_info"]
            found.append({"project": project, "filename": info["url"].rsplit("/", 1)[1].split("#", 1)[0],
                          "sha256": info["archive_info"]["hashes"]["sha256"]})
        return found


def index_files(index_url: str, project: str) -> dict[str, dict]:
    """{file name: {"sha256", "size"}} from the index's JSON page of `project`."""
    request = urllib.request.Request(f"{index_url.rstrip('/')}/{project}/",
                                     headers={"Accept": "application/vnd.pypi.simple.v1+json"})
    with urllib.request.urlopen(request, timeout=60) as response:
        page = json.load(response)
    return {f["filename"]: {"sha256": f["hashes"].get("sha256", ""), "size": f.get("size")} for f in page["files"]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("index_url", help="the index's simple API root (what pip's --index-url takes)")
    index_url = parser.parse_args().index_url
    pages: dict[str, dict] = {}
    print("WHEELS = (")
    for cuda in SETS:
        for platform in PLATFORMS:
            seen = set()
            for python in PYTHONS:
                for wheel in resolve(index_url, cuda, platform, python):
                    if wheel["filename"] in seen:
                        continue  # a library wheel: the same for every Python
                    seen.add(wheel["filename"])
                    if wheel["project"] not in pages:
                        pages[wheel["project"]] = index_files(index_url, wheel["project"])
                    listed = pages[wheel["project"]].get(wheel["filename"])
                    if not listed or listed["sha256"] != wheel["sha256"] or not listed["size"]:
                        raise SystemExit(f"gpu_pins: the index's JSON page of {wheel['project']} does not list "
                                         f"{wheel['filename']} with pip's SHA-256 and a size (PEP 700); is "
                                         f"{index_url} the index pip resolved against?")
                    print(f'    Wheel("{cuda}", "{platform}", "{wheel["project"]}",\n'
                          f'          "{wheel["filename"]}",\n'
                          f'          "{wheel["sha256"]}", {listed["size"]}),')
    print(")")


if __name__ == "__main__":
    main()
