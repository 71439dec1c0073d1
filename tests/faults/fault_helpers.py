"""Helpers for the fault-injection tests (imported by name: pytest puts this folder on sys.path).

`cli` runs `facecache` in a new process; as another user, that process starts as root, loads the engine,
then drops root the way `setpriv --reuid --regid --groups` does (setgroups, setgid, setuid, then the
umask) and calls the command line's `main`. Not `setpriv python ...`: here the interpreter lives under
/root (mode 0700), which another user cannot execute. Not a fork of the test process either: it may hold
ONNX Runtime's threads and locks, and a forked child hung on them.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT_ONLY = "needs root: it mounts file systems or switches to other users"
TEAM_GID = 61000
ALICE, BOB, EVE = 61001, 61002, 61003  # Alice and Bob share the team's group; Eve does not


@dataclass
class Result:
    code: int
    out: str
    err: str

    @property
    def summary(self) -> dict:
        """The last line of stdout as JSON: the summary of `analyze --json` (JSON Lines), or its error."""
        return json.loads(self.out.splitlines()[-1])


# The child as another user: a new interpreter, started as root, loads the engine, then drops root the way
# `setpriv --reuid --regid --groups` does (setgroups, setgid, setuid, then the umask) and runs `main`.
_AS_USER = """
import json, os, sys
import facecache.cli, facecache.jobs.swap_job, facecache.pipeline
uid, gid, groups, umask, args = json.loads(sys.argv[1])
os.setgroups(groups)
os.setgid(gid)
os.setuid(uid)
if umask is not None:
    os.umask(umask)
sys.exit(facecache.cli.main(args))
"""


def cli(*args, uid: int | None = None, gid: int | None = None, groups: tuple[int, ...] = (),
        umask: int | None = None, timeout: float = 600) -> Result:
    """`facecache ARGS` in a new process, as `uid`/`gid` with supplementary `groups` when given."""
    args = [str(a) for a in args]
    if uid is None and gid is None and not groups:
        command = [sys.executable, "-m", "facecache", *args]
    else:
        switch = [uid if uid is not None else os.getuid(), gid if gid is not None else uid, list(groups), umask, args]
        command, umask = [sys.executable, "-c", _AS_USER, json.dumps(switch)], None
    done = subprocess.run(command, capture_output=True, umask=-1 if umask is None else umask, timeout=timeout)
    return Result(done.returncode, done.stdout.decode(errors="replace"), done.stderr.decode(errors="replace"))


def require_root() -> None:
    if os.geteuid() != 0:
        pytest.skip(ROOT_ONLY)


def shared_temp_dir(mode: int = 0o755) -> Path:
    """A folder other users can reach (pytest's own temp folders are 0700)."""
    folder = Path(tempfile.mkdtemp(prefix="facecache-faults-"))
    os.chmod(folder, mode)
    return folder


def mount(*args: str) -> None:
    result = subprocess.run(["mount", *args], capture_output=True, text=True)
    if result.returncode:
        pytest.skip(f"cannot mount here (mount {' '.join(args)}: {result.stderr.strip()})")


def unmount(folder: Path) -> None:
    subprocess.run(["umount", "-l", str(folder)], capture_output=True)


def fill(folder: Path, leave: int = 0) -> Path:
    """Fill the file system of `folder` until at most `leave` bytes are free; returns the filler."""
    filler = folder / "filler"
    with open(filler, "ab") as handle:
        while True:
            free = shutil.disk_usage(folder).free
            if free <= leave:
                break
            try:
                handle.write(b"\0" * min(free - leave, 1 << 20))
                handle.flush()
            except OSError:
                break
    return filler


def leftovers(folder: Path) -> list[str]:
    """Temp files and claims a job must not leave behind."""
    found = []
    for dirpath, _dirs, files in os.walk(folder):
        for name in files:
            if ".tmp-" in name or name.startswith(".tmp-") or name.endswith(".claim") or ".facecache-probe" in name:
                found.append(os.path.join(dirpath, name))
    return found


def tree_modes(folder: Path) -> dict[str, int]:
    return {os.path.relpath(os.path.join(d, n), folder): os.lstat(os.path.join(d, n)).st_mode
            for d, dirs, files in os.walk(folder) for n in dirs + files}


def setpriv(uid: int, gid: int, groups: tuple[int, ...], *command: str) -> subprocess.CompletedProcess:
    """A plain command (not Python) run as another user through `setpriv` itself."""
    group_option = f"--groups={','.join(map(str, groups))}" if groups else "--clear-groups"
    return subprocess.run(["setpriv", f"--reuid={uid}", f"--regid={gid}", group_option, "--", *command],
                          capture_output=True, text=True, timeout=60)
