"""Crash safety: writers SIGKILLed at random moments leave a cache that reads clean.

Each round forks two writer processes that loop over a few shared groups through
FrameStore (open_group -> put -> flush, so packs are written, merged and the packs
they replace are removed). One is SIGKILLed by the parent after a random delay;
the other SIGKILLs itself at a random filesystem call (before or after it), which
reaches the narrow windows too: between temp write and fsync, fsync and rename,
rename and removal of the replaced packs, rename-to-.del and unlink. A second test
kills writers between creating a folder and setting its mode.

After every round, with no writer alive: every record read back is exactly what
some writer wrote for its fingerprint, every record a writer reported as flushed
is still there (at its level or richer), and nothing was set aside. At the end
`verify(temp_grace_seconds=0)` finds no bad pack; it only sets aside temp files.
"""

from __future__ import annotations

import json
import logging
import os
import random
import signal
import stat
import time
from pathlib import Path

from facecache.store.cache import FaceCache
from facecache.store.frame_store import FrameStore

from stress_helpers import FORK, LEVEL_OF, NS, fingerprint_for, group_id, group_problems, make_record, tree_files

ROUNDS = 110          # two kills per round
N_GROUPS = 4          # groups written at once; a fresh set every EPOCH rounds, so that
EPOCH = 10            # writers keep writing new packs instead of finding every record there
FRAMES = 48
MAX_TIMED_DELAY = 0.04
# The self-killing writer dies before or after the k-th call (k random) of one of these,
# taken in turn, so every step of write -> fsync -> rename -> remove replaced packs is hit.
KILL_CALLS = ("open", "write", "fsync", "close", "rename", "unlink", "fchmod")
MAX_KTH_CALL = 6


def writer(root: Path, seed: int, log_path: Path, ready, kill_at: tuple[int, bool, str] | None,
           groups: list[str]) -> None:
    """Forked child: write forever (until killed), logging what each flush committed.
    With kill_at=(k, after, name) it SIGKILLs itself before/after its k-th call of os.<name>."""
    rng = random.Random(seed)
    log_fd = os.open(log_path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    log = os.write  # the real one, taken before the calls are instrumented

    if kill_at is not None:
        target, after, counted = kill_at
        calls = [0]

        def instrument(name, real):
            def call(*args, **kwargs):
                calls[0] += 1
                due = calls[0] == target
                if due and not after:
                    log(log_fd, f"K {name} before\n".encode())
                    os.kill(os.getpid(), signal.SIGKILL)
                try:
                    return real(*args, **kwargs)
                finally:  # also after a call that raised (FileExistsError, ENOENT, ...)
                    if due and after:
                        log(log_fd, f"K {name} after\n".encode())
                        os.kill(os.getpid(), signal.SIGKILL)
            return call

        setattr(os, counted, instrument(counted, getattr(os, counted)))

    store = FrameStore(FaceCache(root), NS)
    if ready is not None:
        ready.set()
    while True:
        key = rng.choice(groups)
        group = store.open_group(key)
        problems = group_problems(group)
        if problems:
            log(log_fd, ("BAD " + json.dumps(problems[:5]) + "\n").encode())
            os._exit(3)
        committed = []
        for frame in rng.sample(range(FRAMES), rng.randint(1, 6)):
            fp = fingerprint_for(key, frame)
            have = group.content.records.get(fp)
            # like the pipeline: a record is only ever replaced by a fuller one
            level = max(rng.randrange(4), LEVEL_OF[int(have.stages)] if have else 0)
            group.put(make_record(fp, level), frame)
            committed.append([frame, level])
        group.flush()
        log(log_fd, ("C " + json.dumps([key, committed]) + "\n").encode())


def read_logs(folder: Path) -> tuple[dict, list[str], list[str]]:
    """(committed {(group, frame): max level}, kill points, problems reported by writers)."""
    committed: dict[tuple[str, int], int] = {}
    kills, problems = [], []
    for path in sorted(folder.glob("*.log")):
        for line in path.read_bytes().decode().splitlines():
            kind, _, rest = line.partition(" ")
            if kind == "C":
                try:
                    key, items = json.loads(rest)
                except ValueError:
                    continue  # a line cut by the kill (never seen in practice)
                for frame, level in items:
                    committed[(key, frame)] = max(level, committed.get((key, frame), -1))
            elif kind == "K":
                kills.append(rest)
            elif kind == "BAD":
                problems.append(rest)
    return committed, kills, problems


def epoch_groups(epoch: int) -> list[str]:
    return [group_id(epoch * N_GROUPS + g) for g in range(N_GROUPS)]


def check_cache(root: Path, committed: dict, groups: list[str]) -> list[str]:
    """Read every group with a fresh cache object; list every problem found."""
    store = FrameStore(FaceCache(root), NS)
    problems = []
    for key in groups:
        group = store.open_group(key)
        problems += group_problems(group)
        for frame in range(FRAMES):
            level = committed.get((key, frame))
            if level is None:
                continue
            fp = fingerprint_for(key, frame)
            record = group.content.records.get(fp)
            if record is None or group.content.index.get(frame) != fp:
                problems.append(f"committed {key}/{frame} lost")
            elif LEVEL_OF[int(record.stages)] < level:
                problems.append(f"committed {key}/{frame} at level {level}, read back at a lower level")
    return problems


def leftovers(root: Path) -> dict[str, int]:
    files = tree_files(root / "ns")
    packs_per_group: dict[Path, int] = {}
    for f in files:
        if f.name.endswith(".fcp") and not f.name.startswith("."):
            packs_per_group[f.parent] = packs_per_group.get(f.parent, 0) + 1
    return {
        "temp": sum(f.name.startswith(".tmp-") for f in files),
        "doomed": sum(f.name.startswith(".del-") for f in files),
        "multi_pack_groups": sum(n > 1 for n in packs_per_group.values()),
    }


def test_writers_killed_at_random_moments_leave_a_clean_cache(tmp_path, caplog):
    root = tmp_path / "cache"
    logs = tmp_path / "logs"
    logs.mkdir()
    FaceCache(root)
    rng = random.Random(20240601)
    caplog.set_level(logging.WARNING, logger="facecache.cache")
    kills = 0
    seen = {"temp": 0, "doomed": 0, "multi_pack_groups": 0}
    for r in range(ROUNDS):
        ready = FORK.Event()
        kill_at = (rng.randint(1, MAX_KTH_CALL), r // len(KILL_CALLS) % 2 == 1, KILL_CALLS[r % len(KILL_CALLS)])
        groups = epoch_groups(r // EPOCH)
        self_killer = FORK.Process(target=writer, args=(root, rng.getrandbits(32), logs / f"{r}-a.log", None, kill_at,
                                                        groups))
        timed = FORK.Process(target=writer, args=(root, rng.getrandbits(32), logs / f"{r}-b.log", ready, None, groups))
        self_killer.start()
        timed.start()
        try:
            assert ready.wait(30), "writer never started"
            time.sleep(rng.uniform(0, MAX_TIMED_DELAY))
            os.kill(timed.pid, signal.SIGKILL)
            self_killer.join(60)
        finally:
            for p in (self_killer, timed):
                if p.is_alive():
                    p.kill()
                p.join()
        assert timed.exitcode == -signal.SIGKILL, f"round {r}: timed writer exited {timed.exitcode}"
        assert self_killer.exitcode == -signal.SIGKILL, f"round {r}: self-killing writer exited {self_killer.exitcode}"
        kills += 2

        for name, value in leftovers(root).items():
            seen[name] += value > 0
        committed, _, writer_problems = read_logs(logs)
        assert writer_problems == [], f"round {r}: a writer read a bad record: {writer_problems}"
        assert check_cache(root, committed, groups) == [], f"round {r}"
        assert caplog.records == [], f"round {r}: something was set aside: {caplog.records[0].getMessage()}"
        assert os.listdir(root / "quarantine") == []

    committed, kill_points, _ = read_logs(logs)
    assert kills >= 200
    all_groups = [g for e in range((ROUNDS - 1) // EPOCH + 1) for g in epoch_groups(e)]
    assert len(committed) > len(all_groups) * FRAMES // 4  # writers got real work done between kills
    # the kills landed everywhere that matters
    assert {f"{name} {when}" for name in KILL_CALLS for when in ("before", "after")} == set(kill_points)
    assert seen["temp"] and seen["doomed"] and seen["multi_pack_groups"], seen

    # nothing a crash leaves behind is more readable than the cache's modes allow
    perms = FaceCache(root).perms
    for dirpath, dirs, files in os.walk(root):
        for d in dirs:
            assert stat.S_IMODE(os.lstat(Path(dirpath) / d).st_mode) & 0o777 & ~perms.dir_mode == 0, d
        for f in files:
            assert stat.S_IMODE(os.lstat(Path(dirpath) / f).st_mode) & 0o777 & ~perms.file_mode == 0, f

    temp_files = leftovers(root)["temp"]
    cache = FaceCache(root)
    report = cache.verify(temp_grace_seconds=0)
    assert report.bad == []
    assert report.temp_set_aside == temp_files
    assert leftovers(root) == {"temp": 0, "doomed": 0, "multi_pack_groups": leftovers(root)["multi_pack_groups"]}
    assert all(".tmp-" in name for name in os.listdir(root / "quarantine"))
    again = FaceCache(root).verify(temp_grace_seconds=0)
    assert again.bad == [] and again.temp_set_aside == 0 and again.checked == report.checked
    assert check_cache(root, committed, all_groups) == []
    assert [r for r in caplog.records if "temp file" not in r.getMessage()] == []

    # and the cache keeps working: one more flush per group folds the leftovers into one pack
    store = FrameStore(FaceCache(root), NS)
    for key in all_groups:
        group = store.open_group(key)
        group.put(make_record(fingerprint_for(key, 0), 3), 0)
        group.flush()
    assert leftovers(root)["multi_pack_groups"] == 0
    assert check_cache(root, committed, all_groups) == []


def test_a_kill_between_mkdir_and_chmod_leaves_no_folder_more_open_than_the_cache(tmp_path):
    """Folders are created, then chmod-ed; a kill in between must not leave a folder
    more permissive than the cache's mode (face embeddings are biometric data)."""
    for k in range(1, 9):
        root = tmp_path / f"cache{k}"
        child = FORK.Process(target=writer, args=(root, k, tmp_path / f"{k}.log", None, (k, True, "mkdir"),
                                                  epoch_groups(0)))
        child.start()
        child.join(60)
        if child.is_alive():
            child.kill()
            child.join()
        assert child.exitcode == -signal.SIGKILL
        perms = FaceCache(root).perms
        for dirpath, dirs, _files in os.walk(root):
            for d in dirs:
                mode = stat.S_IMODE(os.lstat(Path(dirpath) / d).st_mode)
                assert mode & 0o777 & ~perms.dir_mode == 0, (k, d, oct(mode))
