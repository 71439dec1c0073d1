"""Concurrency: several processes writing the same groups and frames, readers and
maintenance running at the same time, and concurrent pruners.

Processes are forked (multiprocessing "fork" context): cheap to start, and each
one has its own FaceCache object as separate programs would.
"""

from __future__ import annotations

import logging
import os
import queue
import random
import time
import traceback

import msgpack

from facecache.store import eviction as cache_module
from facecache.store.cache import FaceCache
from facecache.store.frame_store import FrameStore
from facecache.store.lease import Lease

from stress_helpers import FORK, LEVEL_OF, NS, fingerprint_for, group_id, group_problems, make_record, tree_files

N_GROUPS = 3
FRAMES = 32
# Only a deadlock may stop a round: a round of 4 writers took over 60 s on 2 cores while a benchmark
# ran beside the suite (2026-12-03), so the bound is generous.
TIMEOUT = 300


class WarningCounter(logging.Handler):
    def __init__(self):
        super().__init__(logging.WARNING)
        self.messages: list[str] = []

    def emit(self, record):
        self.messages.append(record.getMessage())


def _count_warnings() -> WarningCounter:
    handler = WarningCounter()
    logging.getLogger("facecache.cache").addHandler(handler)
    return handler


def _guarded(target):
    """Run a child body; report an exception as a result instead of dying silently."""
    def run(out, name, *args):
        try:
            target(out, name, *args)
        except BaseException:
            out.put((name, "crash", traceback.format_exc()))
            raise
    return run


def _write_some(store, rng, groups=N_GROUPS, frames=FRAMES):
    """One open -> check -> put -> flush cycle; returns (committed, problems)."""
    key = group_id(rng.randrange(groups))
    group = store.open_group(key)
    problems = group_problems(group)
    committed = []
    for frame in rng.sample(range(frames), rng.randint(2, 8)):
        fp = fingerprint_for(key, frame)
        have = group.content.records.get(fp)
        level = max(rng.randrange(4), LEVEL_OF[int(have.stages)] if have else 0)
        group.put(make_record(fp, level), frame)
        committed.append((key, frame, level))
    group.flush()
    return committed, problems


def _reader_loop(out, name, root, stop, groups=N_GROUPS, seen_records=None):
    warnings = _count_warnings()
    store = FrameStore(FaceCache(root), NS)
    reads, problems, records_seen = 0, [], 0
    while not stop.is_set():
        for g in range(groups):
            group = store.open_group(group_id(g))
            problems += group_problems(group)
            records_seen += len(group.content.records)
            reads += 1
        if seen_records is not None and records_seen:
            seen_records.set()
    out.put((name, "reader", {"reads": reads, "records": records_seen, "problems": problems[:10],
                              "warnings": warnings.messages[:10]}))


def _scanner_loop(out, name, root, stop):
    """Maintenance that walks the tree while writers add and remove packs."""
    warnings = _count_warnings()
    cache = FaceCache(root)
    passes, bad = 0, []
    while not stop.is_set():
        cache.prune(max_bytes=10**15, grace_seconds=0)  # walks every pack, removes nothing
        cache.stats()
        bad += cache.verify(temp_grace_seconds=3600).bad
        passes += 1
    out.put((name, "scanner", {"passes": passes, "bad": bad[:10], "warnings": warnings.messages[:10]}))


def _writer_rounds(out, name, root, seed, rounds, flushes, barrier):
    warnings = _count_warnings()
    rng = random.Random(seed)
    store = FrameStore(FaceCache(root), NS)
    for r in range(rounds):
        barrier.wait(TIMEOUT)
        committed, problems = [], []
        for _ in range(flushes):
            c, p = _write_some(store, rng)
            committed += c
            problems += p
        out.put((name, "round", {"round": r, "committed": committed, "problems": problems[:10],
                                 "warnings": warnings.messages[:10]}))
        barrier.wait(TIMEOUT)


def _collect(out, count):
    results = []
    deadline = time.monotonic() + TIMEOUT
    while len(results) < count:
        try:
            item = out.get(timeout=max(0.1, deadline - time.monotonic()))
        except queue.Empty:
            raise AssertionError(f"only {len(results)} of {count} results arrived: {results}") from None
        assert item[1] != "crash", f"{item[0]} crashed:\n{item[2]}"
        results.append(item)
    return results


def _join_all(procs):
    for p in procs:
        p.join(TIMEOUT)
        if p.is_alive():
            p.kill()
            p.join()
    assert [p.exitcode for p in procs] == [0] * len(procs)


def _abandon(procs, stop=None, barrier=None):
    """On a failure: stop every child now rather than waiting for timeouts."""
    if stop is not None:
        stop.set()
    if barrier is not None:
        barrier.abort()
    for p in procs:
        p.kill()
        p.join()


def check_committed(root, committed: dict) -> list[str]:
    store = FrameStore(FaceCache(root), NS)
    problems = []
    for g in range(N_GROUPS):
        key = group_id(g)
        group = store.open_group(key)
        problems += group_problems(group)
        for (k, frame), level in committed.items():
            if k != key:
                continue
            record = group.content.records.get(fingerprint_for(key, frame))
            if record is None or group.content.index.get(frame) != record.fingerprint:
                problems.append(f"committed {key}/{frame} is not readable")
            elif LEVEL_OF[int(record.stages)] < level:
                problems.append(f"committed {key}/{frame} at level {level} reads back poorer")
    return problems


def test_writers_on_overlapping_keys_with_readers_and_maintenance(tmp_path):
    root = tmp_path / "cache"
    FaceCache(root)
    writers, rounds, flushes = 4, 4, 10
    out = FORK.Queue()
    stop = FORK.Event()
    barrier = FORK.Barrier(writers + 1)
    procs = [FORK.Process(target=_guarded(_writer_rounds), args=(out, f"w{i}", root, 1000 + i, rounds, flushes, barrier))
             for i in range(writers)]
    procs += [FORK.Process(target=_guarded(_reader_loop), args=(out, f"r{i}", root, stop)) for i in range(2)]
    procs += [FORK.Process(target=_guarded(_scanner_loop), args=(out, "s0", root, stop))]
    for p in procs:
        p.start()
    committed: dict[tuple[str, int], int] = {}
    try:
        for r in range(rounds):
            barrier.wait(TIMEOUT)  # all writers start the round together
            barrier.wait(TIMEOUT)  # ... and have all flushed
            for name, _, result in _collect(out, writers):
                assert result["round"] == r
                assert result["problems"] == [], f"{name} read a bad record: {result['problems']}"
                assert result["warnings"] == [], f"{name}: {result['warnings']}"
                for key, frame, level in result["committed"]:
                    committed[(key, frame)] = max(level, committed.get((key, frame), -1))
            # readers are still running; writers wait for the next round
            assert check_committed(root, committed) == [], f"after round {r}"
        stop.set()
        results = _collect(out, 3)
        _join_all(procs)
    except BaseException:
        _abandon(procs, stop, barrier)
        raise
    for name, kind, result in results:
        if kind == "reader":
            assert result["reads"] > 0 and result["records"] > 0
            assert result["problems"] == [] and result["warnings"] == [], (name, result)
        else:
            assert result["passes"] > 0 and result["bad"] == [] and result["warnings"] == [], (name, result)

    assert len(committed) > N_GROUPS * FRAMES // 2
    assert check_committed(root, committed) == []
    assert os.listdir(root / "quarantine") == []
    report = FaceCache(root).verify(temp_grace_seconds=0)
    assert report.bad == [] and report.temp_set_aside == 0 and report.temp_in_flight == 0
    assert not [f for f in tree_files(root / "ns") if f.name.startswith((".tmp-", ".del-"))]


# -- pruning --------------------------------------------------------------------------------------


def _populate(root, groups=12, frames=6):
    store = FrameStore(FaceCache(root), NS)
    for g in range(groups):
        group = store.open_group(group_id(g))
        for f in range(frames):
            group.put(make_record(fingerprint_for(group_id(g), f), 3), f)
        group.flush()
    return sum(1 for _ in FaceCache(root).iter_packs())


def _held_pruner(out, name, root, barrier, hold):
    """Prunes; if it gets the lease, keeps it (inside the first delete) until `hold` is set."""
    real_delete = cache_module.delete_file
    first = [True]

    def delete(path):
        if first[0]:
            first[0] = False
            out.put((name, "holding", None))
            hold.wait(TIMEOUT)
        return real_delete(path)

    cache_module.delete_file = delete  # the name eviction.py calls
    cache = FaceCache(root)
    barrier.wait(TIMEOUT)
    out.put((name, "report", cache.prune(max_bytes=0, grace_seconds=0).as_dict()))


def test_one_pruner_at_a_time_others_are_busy(tmp_path):
    root = tmp_path / "cache"
    n = 5
    for round_ in range(3):
        packs = _populate(root)
        assert packs == 12
        out = FORK.Queue()
        barrier = FORK.Barrier(n)
        hold = FORK.Event()
        procs = [FORK.Process(target=_guarded(_held_pruner), args=(out, f"p{i}", root, barrier, hold)) for i in range(n)]
        for p in procs:
            p.start()
        try:
            # the holder says so, the other n-1 come back busy while it holds the lease
            early = _collect(out, n)
            assert sorted(kind for _, kind, _ in early) == ["holding"] + ["report"] * (n - 1)
            assert all(r["busy"] and r["removed_packs"] == 0 for _, kind, r in early if kind == "report")
            hold.set()
            (last,) = _collect(out, 1)
            _join_all(procs)
        except BaseException:
            _abandon(procs, hold, barrier)
            raise
        assert last[1] == "report" and not last[2]["busy"] and last[2]["removed_packs"] == packs
        assert list(FaceCache(root).iter_packs()) == []
        assert not (root / "locks" / "prune.lease").exists()


def _contending_pruner(out, name, root, holders, peak, prunes, readers_reading):
    """Loops prune(); counts how many processes hold the prune lease at once."""
    real_acquire = Lease.acquire.__func__
    real_release = Lease.release

    def acquire(cls, *args, **kwargs):
        lease = real_acquire(cls, *args, **kwargs)
        if lease is not None:
            with holders.get_lock():
                holders.value += 1
                peak.value = max(peak.value, holders.value)
        return lease

    def release(self):
        with holders.get_lock():
            holders.value -= 1
        real_release(self)

    Lease.acquire = classmethod(acquire)
    Lease.release = release
    real_delete = cache_module.delete_file

    def slow_delete(path):  # widen the window in which the lease is held
        time.sleep(0.001)
        return real_delete(path)

    cache_module.delete_file = slow_delete
    cache = FaceCache(root)
    for reading in readers_reading:  # every reader is reading packs that are about to be deleted
        reading.wait(TIMEOUT)
    busy = done = removed = attempts = 0
    while done < prunes and attempts < 20_000:  # each pruner gets its turns, in some order
        attempts += 1
        report = cache.prune(max_bytes=0, grace_seconds=0)
        busy += report.busy
        done += not report.busy
        removed += report.removed_packs
        time.sleep(0.005)  # let the others in, and the writers write
    out.put((name, "pruner", {"busy": busy, "done": done, "removed": removed}))


def _writer_loop(out, name, root, seed, stop):
    rng = random.Random(seed)
    store = FrameStore(FaceCache(root), NS)
    flushes, problems = 0, []
    while flushes < 3 or not stop.is_set():
        problems += _write_some(store, rng)[1]
        flushes += 1
    out.put((name, "writer", {"flushes": flushes, "problems": problems[:10]}))


def test_concurrent_pruners_never_overlap_and_readers_never_see_half_deleted_packs(tmp_path):
    root = tmp_path / "cache"
    _populate(root, groups=12, frames=FRAMES)
    out = FORK.Queue()
    stop = FORK.Event()
    reading = [FORK.Event() for _ in range(2)]  # each reader's: it has read records (the pruners wait for all)
    holders, peak = FORK.Value("i", 0), FORK.Value("i", 0)
    pruners = [FORK.Process(target=_guarded(_contending_pruner), args=(out, f"p{i}", root, holders, peak, 8, reading))
               for i in range(4)]
    others = [FORK.Process(target=_guarded(_writer_loop), args=(out, f"w{i}", root, 50 + i, stop)) for i in range(2)]
    others += [FORK.Process(target=_guarded(_reader_loop), args=(out, f"r{i}", root, stop, 12, reading[i]))
               for i in range(2)]
    for p in pruners + others:
        p.start()
    try:
        pruned = _collect(out, len(pruners))
        stop.set()
        rest = _collect(out, len(others))
        _join_all(pruners + others)
    except BaseException:
        _abandon(pruners + others, stop)
        raise
    assert peak.value == 1, f"{peak.value} pruners held the lease at once"
    assert [r["done"] for _, _, r in pruned] == [8] * len(pruners)
    assert sum(r["busy"] for _, _, r in pruned) > 0  # they did contend
    assert sum(r["removed"] for _, _, r in pruned) >= 12
    assert sum(r["records"] for _, kind, r in rest if kind == "reader") > 0
    for name, kind, result in rest:
        assert result["problems"] == [], (name, result["problems"])
        if kind == "reader":
            assert result["reads"] > 0 and result["warnings"] == [], (name, result)
        else:
            assert result["flushes"] >= 3
    assert os.listdir(root / "quarantine") == []
    assert FaceCache(root).verify(temp_grace_seconds=0).bad == []


def _stale_claimant(out, name, path, perms, rounds, barrier):
    real_read = os.read

    def slow_read(fd, n):  # a slow share: every read answers a few ms late
        data = real_read(fd, n)
        time.sleep(0.003)
        return data

    os.read = slow_read
    for _ in range(rounds):
        barrier.wait(TIMEOUT)  # the parent has just planted an expired claim
        lease = Lease.acquire(path, 600.0, perms)
        out.put((name, "claim", lease is not None))
        barrier.wait(TIMEOUT)  # everyone has tried
        if lease is not None:
            lease.release()
        barrier.wait(TIMEOUT)


def test_an_expired_claim_is_taken_over_by_exactly_one_process(tmp_path):
    """A pruner that died leaves an expired claim; when several processes find it at
    once, exactly one may take it over (the others are busy), even when reads are slow
    enough that another contender's takeover happens between a check and the next step."""
    root = tmp_path / "cache"
    cache = FaceCache(root)
    path = root / "locks" / "prune.lease"
    n, rounds = 6, 30
    out = FORK.Queue()
    barrier = FORK.Barrier(n + 1)
    procs = [FORK.Process(target=_guarded(_stale_claimant), args=(out, f"c{i}", path, cache.perms, rounds, barrier))
             for i in range(n)]
    for p in procs:
        p.start()
    winners = []
    try:
        for r in range(rounds):
            if r % 2:
                path.write_bytes(msgpack.packb({"owner": "dead:1:x", "expires": time.time() - 5}))
            else:  # a claimant that died between create and write: empty, judged by age
                path.write_bytes(b"")
                os.utime(path, (time.time() - 3600, time.time() - 3600))
            barrier.wait(TIMEOUT)
            results = _collect(out, n)
            barrier.wait(TIMEOUT)
            barrier.wait(TIMEOUT)
            winners.append(sum(got for _, _, got in results))
        _join_all(procs)
    except BaseException:
        _abandon(procs, barrier=barrier)
        raise
    assert winners == [1] * rounds, winners
