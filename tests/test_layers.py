"""The layers of the engine and of the Blender add-on hold: no module imports from a layer above its own,
and no import cycle exists anywhere in either package. Function-level (lazy) imports count as much as the
ones at the top.

The layers are import-linter's contracts in pyproject.toml ([tool.importlinter]); docs/architecture.md
explains them. The add-on is no installed package: it is found from the repository root (grimp reads its
sources, so bpy need not be importable). Cycles are found on the same import graph (grimp's, which
import-linter builds on): a cycle is a direct import a -> b with a chain of imports from b back to a.
"""

from __future__ import annotations

import subprocess
import sys
import tomllib
from pathlib import Path

import grimp
import pytest

import facecache

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = {"facecache": Path(facecache.__file__).parent, "blender_addon": ROOT / "blender_addon"}


def test_no_module_imports_from_a_layer_above_its_own():
    # its own process: import-linter configures logging, which disables every logger made before it
    # run in the repository root, which lint-imports puts on its path: there it finds blender_addon
    done = subprocess.run([Path(sys.executable).with_name("lint-imports"), "--no-cache", "--no-logo",
                           ROOT / "pyproject.toml"], capture_output=True, text=True, cwd=ROOT)
    assert done.returncode == 0, done.stdout + done.stderr


@pytest.mark.parametrize("package", PACKAGES)
def test_every_module_has_a_layer(package):
    """A new module or package of the engine or the add-on must be placed in a layer (the contract is not
    exhaustive by itself: a module it does not name would escape it)."""
    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["importlinter"]
    named = {name.strip() for contract in config["contracts"] for layer in contract["layers"]
             for name in layer.split(":")}
    top = {f"{package}.{path.stem}" for path in PACKAGES[package].iterdir()
           if path.suffix == ".py" and path.stem != "__init__" or (path / "__init__.py").is_file()}
    assert sorted(top - named) == []


def test_every_package_sits_in_one_layer():
    """A layer names whole packages: one whose modules were spread over two layers would hide imports
    between them from the contract."""
    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["importlinter"]
    named = [name.strip() for contract in config["contracts"] for layer in contract["layers"]
             for name in layer.split(":")]
    assert [name for name in named if name.count(".") > 1] == []


@pytest.mark.parametrize("package", PACKAGES)
def test_no_import_cycles(package, monkeypatch):
    monkeypatch.syspath_prepend(str(ROOT))  # where blender_addon is found
    graph = grimp.build_graph(package, cache_dir=None)
    cycles = set()
    for module in graph.modules:
        for imported in graph.find_modules_directly_imported_by(module):
            back = graph.find_shortest_chain(importer=imported, imported=module)
            if back:
                cycles.add(" -> ".join((module, *back)))
    assert sorted(cycles) == []
