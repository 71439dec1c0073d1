"""Who may read what holds faces: face embeddings and swapped faces of real people are biometric data.

One rule for the cache, the output folders, the output manifest's journal and the swapped frames:
never world-readable. Inside a group-writable parent (a team folder on a NAS) they are shared with
that group: folders setgid 2770 so new entries inherit the group, files 0660, so a teammate can
update and prune another member's work. Otherwise they are private: 0700 and 0600. Modes are set
explicitly after each create, so the umask does not matter. A world-writable parent such as /tmp
is nobody's team folder: private there. The parent that decides is the nearest one that exists.

An existing folder more open than the rule (made by an older version, by hand, or with a loose
umask) is found by `loose_entries`, and tightened where this user owns it.
"""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass, field
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
    """Team mode when the nearest existing folder above `root` is group- but not world-writable."""
    parent = Path(os.path.abspath(root)).parent
    while True:
        try:
            mode = parent.stat().st_mode
            break
        except FileNotFoundError:
            if parent == parent.parent:
                return PRIVATE
            parent = parent.parent
        except OSError:
            return PRIVATE
    return TEAM if mode & stat.S_IWGRP and not mode & stat.S_IWOTH else PRIVATE


@dataclass
class LooseEntries:
    """Entries more open than the rule: how many, how many of them world-readable, how many were
    tightened, and a few examples of those left as they are (not ours to change)."""

    found: int = 0
    world_readable: int = 0
    tightened: int = 0
    examples: list[str] = field(default_factory=list)

    def as_dict(self) -> dict:
        return {"found": self.found, "world_readable": self.world_readable, "tightened": self.tightened,
                "examples": self.examples}


def loose_entries(root: Path, perms: Permissions, tighten: bool, include_root: bool = True) -> LooseEntries:
    """Walk a folder (without following symlinks) for folders and files more open than `perms`;
    with `tighten`, set the rule's mode on those this user owns. `include_root=False`: the folder
    itself is left out (a folder the user gave keeps its own mode; what is made inside it follows the rule).
    None on Windows: its modes carry only the read-only flag, and who may read a folder is its access
    control list (inherited from the folder it is in: the user's profile is private, a share has the ACL
    its administrator gave it)."""
    report = LooseEntries()
    if os.name == "nt":
        return report
    for path, is_dir in _entries(root, include_root):
        try:
            info = os.lstat(path)
        except OSError:
            continue
        if stat.S_ISLNK(info.st_mode):
            continue
        wanted = perms.dir_mode if is_dir else perms.file_mode
        extra = stat.S_IMODE(info.st_mode) & 0o777 & ~wanted
        if not extra:
            continue
        report.found += 1
        report.world_readable += bool(extra & stat.S_IROTH)
        if tighten and secure(path, info, wanted):
            report.tightened += 1
        elif len(report.examples) < 5:
            report.examples.append(f"{path} ({stat.filemode(info.st_mode)})")
    return report


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


def secure(path: str | Path, info: os.stat_result, mode: int) -> bool:
    """Set `mode` on an entry this user owns; False when it is not ours (or cannot be changed)."""
    if hasattr(os, "getuid") and info.st_uid != os.getuid():
        return False
    try:
        os.chmod(path, mode)
    except OSError:
        return False
    return True


def _entries(root: Path, include_root: bool = True):
    """(path, is folder) for a folder (with `include_root`) and everything under it, symlinks not followed."""
    if include_root:
        yield str(root), True
    for dirpath, dirnames, filenames in os.walk(root):
        for name in dirnames:
            yield os.path.join(dirpath, name), True
        for name in filenames:
            yield os.path.join(dirpath, name), False
