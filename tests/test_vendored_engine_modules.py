"""The engine modules the add-on imports into Blender's own process (`engine_client.engine_module`) work as the
built extension holds them: a copy of the engine inside the add-on's package, where no top-level `facecache`
can be imported. An absolute `from facecache...` import in one of them works in a development checkout and
fails only in the shipped extension (the coverage watcher did so, silently falling back to manual refresh)."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
LOADED = re.compile(r'engine_module\("([a-z_.]+)"\)')


def modules_loaded_in_blender() -> list[str]:
    return sorted({name for path in (ROOT / "blender_addon").glob("*.py") for name in LOADED.findall(path.read_text())})


def test_the_add_on_loads_engine_modules():
    assert {"protocol", "watch"} <= set(modules_loaded_in_blender())  # the scan below sees what it should


@pytest.mark.parametrize("name", modules_loaded_in_blender())
def test_an_engine_module_imports_as_the_extension_vendors_it(tmp_path, name):
    shutil.copytree(ROOT / "core" / "facecache", tmp_path / "extension" / "facecache",
                    ignore=shutil.ignore_patterns("__pycache__"))
    (tmp_path / "extension" / "__init__.py").write_text("")
    script = ("import sys, importlib; sys.modules['facecache'] = None  # no top-level engine, as in Blender\n"
              f"sys.path.insert(0, {str(tmp_path)!r}); importlib.import_module('extension.facecache.{name}')")
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-1500:]
