#!/usr/bin/env python3
"""Print pyproject.toml's requirements, one a line, for a pip install -r: the engine's dependencies and
the named extras' (for test environments that cannot install the project with its extras in one go).

    python scripts/requirements.py --extras test farm [--no-onnxruntime]

--no-onnxruntime leaves ONNX Runtime out (the caller adds the build it wants, or none: Blender's test
environments run the add-on's engine on the wheels the built zip vendors)."""

from __future__ import annotations

import argparse
import tomllib
from pathlib import Path

PYPROJECT = Path(__file__).resolve().parents[1] / "pyproject.toml"


def requirements(extras: list[str], onnxruntime: bool) -> list[str]:
    project = tomllib.loads(PYPROJECT.read_text(encoding="utf-8"))["project"]
    found = list(project["dependencies"])
    for extra in extras:
        found += project["optional-dependencies"][extra]
    return [r for r in found if onnxruntime or not r.startswith("onnxruntime")]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--extras", nargs="*", default=[], help="optional-dependencies groups to add")
    parser.add_argument("--no-onnxruntime", action="store_true", help="leave ONNX Runtime out")
    args = parser.parse_args()
    print("\n".join(requirements(args.extras, not args.no_onnxruntime)))


if __name__ == "__main__":
    main()
