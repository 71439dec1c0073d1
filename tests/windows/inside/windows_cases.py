"""Run by Windows Python under Wine (tests/windows/test_windows_cases.py): the Windows cases of the engine's
store, each with what the user gets. Another Windows process (this script with `hold PATH SECONDS`) holds a
file open where a case needs one: the hold Windows enforces (no FILE_SHARE_DELETE) is the real one.

Usage: python.exe windows_cases.py WORK_FOLDER    prints one JSON object a line: {"case": ..., ...}
       python.exe windows_cases.py hold PATH SECONDS   (the holder: opens PATH, says "held", waits)
"""

from __future__ import annotations

import errno
import json
import os
import shutil
import socket
import subprocess
import sys
import time
import traceback
from pathlib import Path

import msgpack
import numpy as np

from facecache.errors import FaceCacheError, os_fault
from facecache.files import DIR_FD, OPEN_READ, write_atomic
from facecache.processes import local_process_is_gone
from facecache.store import cache as cache_module
from facecache.store.cache import FaceCache
from facecache.store.claims import ClaimBook
from facecache.store.lease import Lease
from wine_spawn import run, spawn

NS, GROUP = "0" * 32, "1" * 32


def say(case: str, **facts) -> None:
    print(json.dumps({"case": case, **facts}, default=str), flush=True)


def hold(path: str, seconds: float, mode: str = "rb") -> subprocess.Popen:
    """Another process that opens `path` and keeps it open for `seconds`."""
    holder = spawn([sys.executable, __file__, "hold", path, str(seconds), mode], stdout=subprocess.PIPE, text=True)
    assert holder.stdout.readline().strip() == "held"
    return holder


def write_some_packs(cache: FaceCache, count: int) -> list[Path]:
    names = []
    for n in range(count):
        arrays = {"a": np.arange(n, n + 64, dtype=np.uint8)}
        names.append(cache.write_pack(NS, GROUP, {"n": n}, arrays, 1))
    return [cache.group_dir(NS, GROUP) / f"{name}.fcp" for name in names]


def case_no_dir_fd(work: Path) -> None:
    """No dir_fd and no O_DIRECTORY: groups are listed by name instead, and read back whole."""
    cache = FaceCache(work / "dirfd")
    written = write_some_packs(cache, 3)
    packs = cache.read_group(NS, GROUP)
    say("no_dir_fd", dir_fd=DIR_FD, supports=os.open in os.supports_dir_fd, written=len(written),
        read=sorted(p.content.meta["n"] for p in packs))


def case_o_binary(work: Path) -> None:
    """Bytes that text mode would change (CR LF, Ctrl-Z) survive a pack's write and read."""
    cache = FaceCache(work / "binary")
    tricky = np.frombuffer(b"\r\n\x1a\n\r" * 40, dtype=np.uint8).copy()
    cache.write_pack(NS, GROUP, {"kind": "tricky"}, {"bytes": tricky}, 1)
    (pack,) = cache.read_group(NS, GROUP)
    say("o_binary", o_binary=bool(OPEN_READ & getattr(os, "O_BINARY", 0)),
        same=bytes(pack.content.arrays["bytes"]) == bytes(tricky), quarantined=len(os.listdir(cache.root / "quarantine")))


def case_rename_onto_existing(work: Path) -> None:
    """Two writers of one pack: the loser's rename finds the winner's file (FileExistsError on Windows,
    where POSIX would replace it); it counts as written by the other, its temp file goes."""
    cache = FaceCache(work / "race")
    (first,) = write_some_packs(cache, 1)
    real_lexists = os.path.lexists

    def not_yet(path):  # the loser looked just before the winner's rename
        return False if Path(path) == first else real_lexists(path)

    cache_module.os.path.lexists = not_yet
    try:
        again = write_some_packs(cache, 1)
    finally:
        cache_module.os.path.lexists = real_lexists
    plain = work / "plain.txt"
    plain.write_text("a")
    (work / "new.txt").write_text("b")
    try:
        os.rename(work / "new.txt", plain)
        os_rename = "replaced"
    except FileExistsError as exc:
        os_rename = f"FileExistsError winerror {exc.winerror}"
    say("rename_onto_existing", os_rename=os_rename, same_name=again == [first],
        files=sorted(os.listdir(first.parent)), writes=cache.io.packs_written)


def case_replace_onto_open_file(work: Path) -> None:
    """An output replaced while another process reads it (Blender, a viewer): a brief hold is waited out;
    a long one is one message."""
    target = work / "000003.png"
    target.write_bytes(b"old")
    brief = hold(str(target), 0.6)
    started = time.monotonic()
    write_atomic(target, b"new")
    waited = time.monotonic() - started
    brief.wait()
    long_hold = hold(str(target), 20)
    try:
        write_atomic(target, b"newer")
        message = code = winerror = None
    except OSError as exc:
        fault = os_fault(exc, "write the outputs in", work)
        message, code, winerror = str(fault), fault.exit_code, exc.winerror
    finally:
        long_hold.kill()
        long_hold.wait()
    say("replace_onto_open_file", brief_waited=round(waited, 2), content=target.read_bytes().decode(),
        message=message, exit_code=code, winerror=winerror,
        temp_left=[n for n in os.listdir(work) if ".tmp-" in n])


def case_reader_holds_a_pack(work: Path) -> None:
    """A teammate's job reads a pack while this machine prunes, compacts and clears the cache. (Wine renames
    a folder that holds an open file, which Windows refuses: there `clear` says the cache is in use.)"""
    cache = FaceCache(work / "shared")
    packs = write_some_packs(cache, 3)
    reader = hold(str(packs[0]), 30)
    try:
        pruned = cache.prune(max_bytes=0, grace_seconds=0)
        cache.remove_packs(NS, GROUP, [packs[0].stem])  # as a merge does with the packs it folded in
        storing = cache.storing
        try:
            cache.clear()
            cleared = None
        except FaceCacheError as exc:
            cleared = {"message": str(exc), "exit_code": exc.exit_code}
        left = sorted(p.name for p in cache.root.rglob("*.fcp"))  # a cleared folder's open pack stays in .del-*
    finally:
        reader.kill()
        reader.wait()
    cache.clear()
    say("reader_holds_a_pack", prune=pruned.as_dict(), held_pack_kept=packs[0].name in left, storing=storing,
        clear=cleared, after_clear=sorted(p.name for p in cache.root.rglob("*.fcp")))


def case_claims(work: Path) -> None:
    """Claims on Windows: a dead holder of this machine is known at once (psutil: no signal 0 to send), a
    live one is not taken over, and renewing while a contender reads the claim works."""
    cache = FaceCache(work / "claims")
    book = ClaimBook(cache, ttl=60)
    dead = run([sys.executable, "-c", "import os; print(os.getpid())"])
    dead_pid = int(dead.stdout)
    path = book.path("2" * 32)
    path.write_bytes(msgpack.packb({"owner": f"{socket.gethostname()}:{dead_pid}:x", "expires": time.time() + 600}))
    taken = book.try_claim("2" * 32)
    contender = book.try_claim("2" * 32)
    reader = hold(str(path), 0.5)
    reader_is_gone = local_process_is_gone(reader.pid)  # alive: it holds the claim open
    renewed = taken._leases[0].renew()  # waits out the reader's hold
    reader.wait()
    taken.release()
    say("claims", dead_is_gone=local_process_is_gone(dead_pid), me_is_gone=local_process_is_gone(os.getpid()),
        reader_is_gone=reader_is_gone, took_dead_claim=taken is not None and bool(taken._leases),
        contender_refused=contender is None, renewed=renewed, released=not path.exists(), storing=cache.storing)


def case_modes(work: Path) -> None:
    """fchmod exists on Windows from Python 3.13 only; either way packs and claims are left writable (no
    read-only flag), so they can be replaced and pruned."""
    cache = FaceCache(work / "modes")
    (pack,) = write_some_packs(cache, 1)
    lease = Lease.acquire(cache.root / "locks" / "x.lease", 60, cache.perms)
    writable = os.access(pack, os.W_OK) and os.access(lease.path, os.W_OK)
    lease.release()
    pruned = cache.prune(max_bytes=0, grace_seconds=0)
    say("modes", fchmod=hasattr(os, "fchmod"), perms=oct(cache.perms.file_mode), writable=writable,
        pruned=pruned.removed_packs, loose=cache.stats().loose_permissions.found)


def case_paths(work: Path, second_drive: str) -> None:
    """A cache on another drive letter, on an extended-length (\\\\?\\) path deeper than 260 characters, on an
    unreachable UNC share; and what a path too long for Windows is told as."""
    on_d = FaceCache(second_drive + "\\cache")
    write_some_packs(on_d, 1)
    deep_folder = "\\\\?\\" + str(work / ("d" * 60) / ("e" * 60) / ("f" * 60) / ("g" * 60) / "cache")
    deep = FaceCache(deep_folder)
    (deep_pack,) = write_some_packs(deep, 1)
    deep_read = len(deep.read_group(NS, GROUP))
    plain_deep = str(work / ("h" * 60) / ("i" * 60) / ("j" * 60) / ("k" * 60) / "cache")
    plain = FaceCache(plain_deep)
    write_some_packs(plain, 1)
    try:
        FaceCache(r"\\nas-that-is-not-there\share\faceswap_cache")
        unc = None
    except FaceCacheError as exc:
        unc = {"message": str(exc), "exit_code": exc.exit_code}
    too_long = OSError(errno.ENOENT, "The system cannot find the path specified", "C:\\" + "x\\" * 140 + "0.png", 3)
    fault = os_fault(too_long, "write the outputs in", "C:\\" + "x\\" * 140)
    say("paths", second_drive=len(on_d.read_group(NS, GROUP)), deep_length=len(str(deep_pack)), deep_read=deep_read,
        plain_deep_length=len(plain_deep) + 110, plain_read=len(plain.read_group(NS, GROUP)), unc=unc,
        too_long={"message": str(fault), "exit_code": fault.exit_code})


def case_watch(work: Path) -> None:
    """The add-on's coverage watcher on a Windows disk (polling its folders: watchdog's native observer
    would hold the folder open): a pack another process writes shows up, and the watched cache can be
    deleted."""
    import threading

    from facecache.watch import CacheWatcher

    cache = FaceCache(work / "watched")
    write_some_packs(cache, 1)
    changed = threading.Event()
    with CacheWatcher(cache.root, changed.set, debounce_seconds=0.1) as watcher:
        started_mode = watcher.mode
        time.sleep(0.5)
        writer = run([sys.executable, "-c", "import sys; from windows_cases import *; "
                      "write_some_packs(FaceCache(sys.argv[1]), 3)", str(cache.root)], cwd=os.path.dirname(__file__))
        seen = changed.wait(10)
        shutil.rmtree(cache.root)  # an editor deletes the cache (or moves the project) while it is watched
        deleted = not cache.root.exists()
    say("watch", mode=started_mode, fs_type=watcher.fs_type, seen=seen, writer=writer.returncode,
        writer_err=writer.stderr[-500:], deleted_while_watched=deleted)


def main() -> None:
    if sys.argv[1] == "hold":
        with open(sys.argv[2], sys.argv[4] if len(sys.argv) > 4 else "rb"):
            print("held", flush=True)
            time.sleep(float(sys.argv[3]))
        return
    work, second_drive = Path(sys.argv[1]), sys.argv[2]
    cases = [case_no_dir_fd, case_o_binary, case_rename_onto_existing, case_replace_onto_open_file,
             case_reader_holds_a_pack, case_claims, case_modes, case_watch, case_paths]
    for number, case in enumerate(cases):
        folder = work / f"case{number}"
        folder.mkdir(parents=True)
        try:
            case(folder, second_drive) if case is case_paths else case(folder)
        except Exception:  # noqa: BLE001 - reported to the Linux side, which fails that case's test
            say(case.__name__.removeprefix("case_"), crashed=traceback.format_exc())


if __name__ == "__main__":
    main()
