"""Per-user folders, the one place that knows each platform's conventions (through `platformdirs`):

- cache (evictable analyses): Linux $XDG_CACHE_HOME/facecache (~/.cache/facecache), macOS
  ~/Library/Caches/facecache, Windows %LOCALAPPDATA%\\facecache\\Cache;
- data (models, sample photos, the NVIDIA GPU runtime; not evictable): Linux $XDG_DATA_HOME/facecache
  (~/.local/share/facecache), macOS ~/Library/Application Support/facecache, Windows
  %LOCALAPPDATA%\\facecache.

Each has an environment variable and an explicit argument that win over the default. Nothing is
kept in module state: every call reads the environment again.
"""

from __future__ import annotations

import os
from pathlib import Path

import platformdirs

APP = "facecache"
CACHE_DIR_ENV = "FACECACHE_DIR"
MODELS_DIR_ENV = "FACECACHE_MODELS"
SAMPLES_DIR_ENV = "FACECACHE_DATA"
GPU_RUNTIME_DIR_ENV = "FACECACHE_GPU_RUNTIME"


def user_cache_dir() -> Path:
    return Path(platformdirs.user_cache_dir(APP, appauthor=False))


def user_data_dir() -> Path:
    return Path(platformdirs.user_data_dir(APP, appauthor=False))


def _resolve(explicit: str | os.PathLike | None, variable: str, default: Path) -> Path:
    if explicit is not None:
        return Path(explicit)
    if os.environ.get(variable):
        return Path(os.environ[variable])
    return default


def resolve_cache_dir(explicit: str | os.PathLike | None = None) -> Path:
    """--cache-dir (or an argument), else $FACECACHE_DIR, else the per-user cache folder."""
    return _resolve(explicit, CACHE_DIR_ENV, user_cache_dir())


def resolve_models_dir(explicit: str | os.PathLike | None = None) -> Path:
    """--models-dir (or an argument), else $FACECACHE_MODELS, else <user data>/models."""
    return _resolve(explicit, MODELS_DIR_ENV, user_data_dir() / "models")


def resolve_samples_dir(explicit: str | os.PathLike | None = None) -> Path:
    """An argument, else $FACECACHE_DATA, else <user data>/samples. Sample files lie directly in it."""
    return _resolve(explicit, SAMPLES_DIR_ENV, user_data_dir() / "samples")


def resolve_gpu_runtime_dir(explicit: str | os.PathLike | None = None) -> Path:
    """An argument, else $FACECACHE_GPU_RUNTIME, else <user data>/gpu-runtime (the models folder's sibling):
    one folder for every Blender version and the CLI (facecache.gpu)."""
    return _resolve(explicit, GPU_RUNTIME_DIR_ENV, user_data_dir() / "gpu-runtime")
