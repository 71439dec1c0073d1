"""The store on a shared cache through two sshfs mounts: eviction (one pruner at a time, a grace
period, no half-deleted pack ever read) and team permissions."""

from __future__ import annotations

import logging
import os
import stat
import sys
import time
from pathlib import Path

from facecache.store.cache import FaceCache
from facecache.store.frame_store import FrameStore
from facecache.store.lease import Lease

sys.path.insert(0, str(Path(__file__).parents[1] / "store"))
from stress_helpers import FORK, NS, fingerprint_for, group_id, group_problems, make_record  # noqa: E402

GROUPS = 4
FRAMES = 16


def _fill(root: Path, groups: int = GROUPS, level: int = 3) -> None:
    store = FrameStore(FaceCache(root), NS)
    for g in range(groups):
        group = store.open_group(group_id(g))
        for frame in range(FRAMES):
            group.put(make_record(fingerprint_for(group.key, frame), level), frame)
        group.flush()


def _age(cache: FaceCache, seconds: float, count: int) -> list[Path]:
    """Make `count` packs look unused for `seconds` (as if written long ago)."""
    packs = sorted(info.path for info in cache.iter_packs())[:count]
    for path in packs:
        os.utime(path, (time.time() - seconds, time.time() - seconds))
    return packs


def test_one_pruner_at_a_time_across_workstations(share):
    a, b, server = share
    _fill(a / "cache")
    cache_a, cache_b = FaceCache(a / "cache"), FaceCache(b / "cache")
    _age(cache_a, 3600, GROUPS)
    held = Lease.acquire(a / "cache" / "locks" / "prune.lease", 600, cache_a.perms)  # A is pruning
    assert held is not None
    busy = cache_b.prune(max_bytes=0)
    assert busy.busy and busy.removed_packs == 0
    assert len(list(cache_b.iter_packs())) == GROUPS
    held.release()
    done = cache_b.prune(max_bytes=0)
    assert not done.busy and done.removed_packs == GROUPS
    assert list(FaceCache(server / "cache").iter_packs()) == []  # (mount A may list them for its 1 s cache)


def test_prune_never_removes_packs_younger_than_the_grace(share):
    a, b, server = share
    _fill(a / "cache")
    old = _age(FaceCache(a / "cache"), 3600, 2)
    report = FaceCache(b / "cache").prune(max_bytes=0)  # over the cap: evict all it may
    assert report.removed_packs == 2 and report.skipped_young == GROUPS - 2
    left = {info.path.name for info in FaceCache(server / "cache").iter_packs()}
    assert len(left) == GROUPS - 2 and not left & {path.name for path in old}


def _prune_loop(root: Path, rounds: int, done) -> None:
    """Workstation A: write every group afresh, then evict everything, again and again."""
    cache = FaceCache(root)
    try:
        for round_ in range(rounds):
            _fill(root, level=round_ % 4)
            time.sleep(0.7)  # long enough for B's listing (cached up to 1 s) to show the packs
            cache.prune(max_bytes=0, grace_seconds=0)
    finally:
        done.set()


def test_readers_on_another_mount_never_see_a_half_deleted_pack(share):
    a, b, _server = share
    FaceCache(a / "cache")
    warnings = []
    handler = logging.Handler(logging.WARNING)
    handler.emit = lambda record: warnings.append(record.getMessage())
    logging.getLogger("facecache.cache").addHandler(handler)
    done = FORK.Event()
    pruner = FORK.Process(target=_prune_loop, args=(a / "cache", 8, done))
    pruner.start()
    store = FrameStore(FaceCache(b / "cache"), NS)  # workstation B reads all along
    problems, reads, records = [], 0, 0
    try:
        while not done.is_set():
            for g in range(GROUPS):
                group = store.open_group(group_id(g))
                problems += group_problems(group)
                reads += 1
                records += len(group.content.records)
    finally:
        pruner.join(timeout=120)
        logging.getLogger("facecache.cache").removeHandler(handler)
    assert pruner.exitcode == 0
    assert not problems, problems[:5]
    assert not warnings, warnings[:5]  # nothing unreadable, nothing set aside
    assert reads > GROUPS and records > 0  # it did read while packs came and went
    assert FaceCache(b / "cache").verify(temp_grace_seconds=0).clean


def _mode(path: Path) -> int:
    return stat.S_IMODE(os.lstat(path).st_mode)


def test_team_permissions_hold_through_the_mount(share):
    a, b, server = share
    team = server / "team"
    team.mkdir()
    os.chown(team, -1, 100)  # the studio's group (here: "users")
    os.chmod(team, 0o2770)  # a team folder: group-writable, not world-writable, setgid
    _fill(a / "team" / "cache", groups=1)
    cache = FaceCache(b / "team" / "cache")
    assert cache.perms.shared
    pack = next(cache.iter_packs()).path
    folders = [b / "team" / "cache", b / "team" / "cache" / "ns", pack.parent]
    for folder in folders:  # as a workstation sees them, and as the NAS holds them
        assert _mode(folder) == 0o2770, folder
        assert _mode(server / folder.relative_to(b)) == 0o2770
        assert os.lstat(server / folder.relative_to(b)).st_gid == 100
    for path in (pack, server / pack.relative_to(b)):
        assert _mode(path) == 0o660 and os.lstat(path).st_gid == 100
    claim = Lease.acquire(a / "team" / "cache" / "locks" / "prune.lease", 60, cache.perms)
    assert _mode(server / "team" / "cache" / "locks" / "prune.lease") == 0o660
    claim.release()


def test_a_private_cache_stays_private_through_the_mount(share):
    a, _b, server = share
    os.chmod(server, 0o755)
    _fill(a / "cache", groups=1)
    pack = next(FaceCache(server / "cache").iter_packs()).path
    assert not FaceCache(a / "cache").perms.shared
    assert _mode(server / "cache") == _mode(pack.parent) == 0o700
    assert _mode(pack) == 0o600


def test_a_claim_of_a_dead_workstation_expires_and_is_taken_over(share):
    import msgpack

    from facecache.store.claims import ClaimBook

    a, b, _server = share
    keys = ("1" * 32, "2" * 32)
    book_a = ClaimBook(FaceCache(a / "cache"), ttl=2)
    # Left by a render node that lost power (another machine: its pid cannot be checked here).
    book_a.path(*keys).write_bytes(msgpack.packb({"owner": "render-node-7:4242:abcd", "expires": time.time() + 2}))
    book_b = ClaimBook(FaceCache(b / "cache"), ttl=2)
    assert book_b.try_claim(*keys) is None  # still live: B takes other work meanwhile
    claim, deadline = None, time.monotonic() + 10
    while claim is None and time.monotonic() < deadline:
        time.sleep(0.2)
        claim = book_b.try_claim(*keys)
    assert claim is not None, "a dead workstation's claim must expire"
    assert book_a.try_claim(*keys) is None  # now B's
    claim.release()
    assert book_a.try_claim(*keys) is not None


def test_a_claim_of_a_dead_process_on_this_machine_is_taken_over_at_once(share, tmp_path):
    import subprocess
    import sys as _sys

    from facecache.store.claims import ClaimBook

    a, b, _server = share
    keys = ("3" * 32, "4" * 32)
    script = ("import sys; from facecache.store.cache import FaceCache; from facecache.store.claims import ClaimBook;"
              f"assert ClaimBook(FaceCache(sys.argv[1]), ttl=3600).try_claim('{keys[0]}', '{keys[1]}')")
    subprocess.run([_sys.executable, "-c", script, str(a / "cache")], check=True)  # exits holding it
    assert ClaimBook(FaceCache(b / "cache"), ttl=3600).try_claim(*keys) is not None


def test_claims_raced_from_two_mounts_have_one_winner_and_no_fault(share):
    """sshfs answers the loser of two simultaneous exclusive creates with EPERM, not EEXIST (CI
    once stopped a survivor's storing on it): a lost race must read as "someone holds it"."""
    import threading

    from facecache.store.claims import ClaimBook

    a, b, _server = share
    caches = [FaceCache(a / "cache"), FaceCache(b / "cache")]
    books = [ClaimBook(cache, ttl=60) for cache in caches]
    races = 200
    winners = [[None, None] for _ in range(races)]

    def claim_all(side: int) -> None:
        for race in range(races):
            winners[race][side] = books[side].try_claim(f"{race:032x}", "5" * 32)

    threads = [threading.Thread(target=claim_all, args=(side,)) for side in (0, 1)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert all(cache.storing for cache in caches) and all(book.usable for book in books)
    assert all(sum(claim is not None for claim in pair) == 1 for pair in winners)


def test_a_group_opened_fresh_lists_what_the_other_mount_just_wrote(share):
    """sshfs serves a folder's listing from its cache for dcache_timeout (1 s here, 20 s by default).
    A holder on mount A writes its segment's pack (folding the group's packs into one); mount B, which
    listed the group while A held it, still lists the old pack, which is gone: B sees fewer records,
    and would analyse them again. Opened `fresh` (as a job does after taking a segment's claim), B
    lists the group as the server has it."""
    a, b, _server = share
    writer, reader = FrameStore(FaceCache(a / "cache"), NS), FrameStore(FaceCache(b / "cache"), NS)
    key = group_id(0)
    behind = []
    for frame in range(3):
        time.sleep(1.2)  # B's cached listing has expired
        reader.open_group(key)  # B looks at the segment while A holds it...
        group = writer.open_group(key)  # ...A writes its pack and releases...
        group.put(make_record(fingerprint_for(key, frame), 3), frame)
        group.flush()
        behind.append(len(reader.open_group(key).content.records) < frame + 1)  # ...B's listing is old
        assert len(reader.open_group(key, fresh=True).content.records) == frame + 1
    assert any(behind)  # the race this guards against did happen
    assert FaceCache(b / "cache").verify(temp_grace_seconds=0).clean  # no probe file left behind
