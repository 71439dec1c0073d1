"""Per-user folders where the engine keeps downloaded things (models, samples).

Nothing here is cached in module state: each call reads the environment again, so
tests and callers can point the engine elsewhere with an argument or a variable.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

MODELS_DIR_ENV = "FACECACHE_MODELS"
SAMPLES_DIR_ENV = "FACECACHE_DATA"


def user_data_dir() -> Path:
    """The per-user data folder of facecache (not the cache: these files are not evictable).

    Linux and other Unix: $XDG_DATA_HOME/facecache, else ~/.local/share/facecache.
    Windows: %LOCALAPPDATA%\\facecache. macOS: ~/Library/Application Support/facecache.
    """
    if sys.platform == "win32":
        base = os.environ.get("LOCALAPPDATA") or os.path.join(Path.home(), "AppData", "Local")
    elif sys.platform == "darwin":
        base = os.path.join(Path.home(), "Library", "Application Support")
    else:
        base = os.environ.get("XDG_DATA_HOME") or os.path.join(Path.home(), ".local", "share")
    return Path(base) / "facecache"


def resolve_models_dir(explicit: str | os.PathLike | None = None) -> Path:
    """--models-dir (or an argument), else $FACECACHE_MODELS, else <user data>/models."""
    if explicit is not None:
        return Path(explicit)
    if os.environ.get(MODELS_DIR_ENV):
        return Path(os.environ[MODELS_DIR_ENV])
    return user_data_dir() / "models"


def resolve_samples_dir(explicit: str | os.PathLike | None = None) -> Path:
    """An argument, else $FACECACHE_DATA, else <user data>/samples. Sample files lie directly in it."""
    if explicit is not None:
        return Path(explicit)
    if os.environ.get(SAMPLES_DIR_ENV):
        return Path(os.environ[SAMPLES_DIR_ENV])
    return user_data_dir() / "samples"
