"""Claims never leak: a renewal that fails (the disk filled up meanwhile) leaves no temp file, and
`cache verify` and `cache prune` remove what dead holders left in locks/, never a live claim."""

import errno
import os
import socket
import subprocess
import sys
import time

import msgpack
import pytest

from facecache.processes import host_tag
from facecache.store import lease as lease_module
from facecache.store.cache import FaceCache
from facecache.store.claims import ClaimBook

KEY_A, KEY_B, KEY_C = "a" * 32, "b" * 32, "c" * 32


def dead_pid() -> int:
    process = subprocess.Popen([sys.executable, "-c", "pass"])
    process.wait()
    return process.pid


def test_a_renewal_that_fails_leaves_no_temp_file(tmp_path, monkeypatch):
    book = ClaimBook(FaceCache(tmp_path / "cache"), ttl=3)
    claim = book.try_claim(KEY_A)
    (held,) = claim._leases

    def full_disk(*_args):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(lease_module.os, "replace", full_disk)
    with pytest.raises(OSError):
        held.renew()
    assert sorted(p.name for p in book.folder.iterdir()) == [f"{KEY_A}.claim"]
    monkeypatch.undo()
    claim.release()
    assert list(book.folder.iterdir()) == []


@pytest.mark.parametrize("maintenance", ["verify", "prune"])
def test_verify_and_prune_clean_locks(tmp_path, maintenance):
    cache = FaceCache(tmp_path / "cache")
    book = ClaimBook(cache, ttl=60)
    live = book.try_claim(KEY_A)  # ours, alive: kept
    gone = dead_pid()
    stale = book.path(KEY_B)  # a crashed job's claim on this machine
    stale.write_bytes(msgpack.packb({"owner": f"{socket.gethostname()}:{gone}:x", "expires": time.time() + 60}))
    expired = book.path(KEY_C)  # a render node's claim that expired long ago
    expired.write_bytes(msgpack.packb({"owner": "node7:123:x", "expires": time.time() - 3600}))
    leftovers = [book.folder / f".{KEY_B}.claim.tmp-{host_tag()}-{gone}-abcd",  # a dead writer's renewal
                 book.folder / f".tmp-0123456789abcdef-{gone}",  # the old temp name, an hour old
                 book.folder / ".del-0123456789ab"]  # a takeover that died between rename and unlink
    for path in leftovers:
        path.write_bytes(b"x")
    os.utime(leftovers[1], (time.time() - 7200,) * 2)
    os.utime(leftovers[2], (time.time() - 120,) * 2)

    report = cache.verify() if maintenance == "verify" else cache.prune(max_bytes=None)
    assert report.locks_cleaned == 5
    assert sorted(p.name for p in book.folder.iterdir() if not p.name.startswith(".takeover-")) == [f"{KEY_A}.claim"]
    live.release()
