"""Where the remote cache support lives, whether it is installed, and putting it on the engine's path.

    <folder>/                 $FACECACHE_REMOTE_SUPPORT (the add-on sets it: a folder of its user data)
      installed.json          the manifest, written last: {"format": 1, "wheels": {file name: SHA-256}}
      site/                   the wheels unpacked (botocore/, jmespath/, dateutil/, six.py, urllib3/)
      downloads/              wheels pip fetched, kept until the install is complete (facecache.gpu.wheels)
      locks/install.lock      held by the one install or removal at work
      logs/pip.log            what pip said during the last install

Nothing here is used unless the manifest names exactly the pinned wheels, so a half-done install, a removal
or an older pin set is never put on the path. Standard library only: the add-on reads `is_installed`.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import MutableSequence
from pathlib import Path

from . import pins  # relative: in Blender this is the add-on's vendored copy, standard library only

SUPPORT_DIR_ENV = "FACECACHE_REMOTE_SUPPORT"
REMOTE_CACHE_ENV = "FACECACHE_REMOTE_CACHE"  # the engine puts the support on its path only when one is set
MANIFEST = "installed.json"
SITE = "site"
FORMAT = 1


def support_folder(explicit: str | os.PathLike | None = None) -> Path | None:
    """`explicit`, else $FACECACHE_REMOTE_SUPPORT; None when neither names one."""
    chosen = explicit if explicit is not None else os.environ.get(SUPPORT_DIR_ENV)
    return Path(chosen).expanduser().absolute() if chosen else None


def manifest(wheels=pins.WHEELS) -> dict:
    return {"format": FORMAT, "wheels": {filename: sha256 for _project, filename, sha256, _size in wheels}}


def is_installed(folder: str | os.PathLike | None, wheels=pins.WHEELS) -> bool:
    """Whether `folder` holds the support for these pins: its manifest names exactly them, and site/ is there."""
    if folder is None:
        return False
    try:
        found = json.loads((Path(folder) / MANIFEST).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    return found == manifest(wheels) and (Path(folder) / SITE).is_dir()


def use_support(explicit: str | os.PathLike | None = None, path: MutableSequence[str] = sys.path,
                environ=os.environ, wheels=pins.WHEELS) -> Path | None:
    """At the engine process's start: when a remote cache is set ($FACECACHE_REMOTE_CACHE) and the support is
    installed, its site folder goes first on `path` (its pinned botocore and urllib3 win over any other copy);
    returns that folder, else None. Only the path changes: nothing is imported until the tier is used."""
    folder = support_folder(explicit)
    if not environ.get(REMOTE_CACHE_ENV, "").strip() or not is_installed(folder, wheels):
        return None
    site = str(folder / SITE)
    while site in path:
        path.remove(site)
    path.insert(0, site)
    return folder / SITE
