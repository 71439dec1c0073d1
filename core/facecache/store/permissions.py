"""Who may read the cache: face embeddings are biometric data.

The cache is never world-readable. Inside a group-writable parent (a team
folder on a NAS) it is shared with that group: folders setgid 2770 so new
entries inherit the group, files 0660. Otherwise it is private: 0700 and 0600.
Modes are set explicitly after each create, so the umask does not matter.
A world-writable parent such as /tmp is nobody's team folder: private there.
"""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Permissions:
    dir_mode: int
    file_mode: int

    @property
    def shared(self) -> bool:
        return bool(self.dir_mode & stat.S_IRWXG)


PRIVATE = Permissions(dir_mode=0o700, file_mode=0o600)
TEAM = Permissions(dir_mode=0o2770, file_mode=0o660)


def permissions_for(root: Path) -> Permissions:
    """Team mode when the cache folder's parent is group- but not world-writable."""
    parent = root.resolve().parent
    try:
        mode = parent.stat().st_mode
    except OSError:
        return PRIVATE
    return TEAM if mode & stat.S_IWGRP and not mode & stat.S_IWOTH else PRIVATE


def make_dir(path: Path, perms: Permissions) -> None:
    """Create a folder (and missing parents inside the cache) with the cache's mode."""
    # Created with the mode already (the umask can only narrow it), so a crash before the
    # chmod never leaves a folder more open than the cache; the chmod adds what umask took.
    try:
        os.mkdir(path, perms.dir_mode & 0o777)
    except FileExistsError:
        return
    except FileNotFoundError:
        make_dir(path.parent, perms)
        try:
            os.mkdir(path, perms.dir_mode & 0o777)
        except FileExistsError:
            return
    os.chmod(path, perms.dir_mode)
