"""FaceCache and FrameStore behaviour: write-once, namespaces, groups, eviction,
set-aside, permissions."""

import logging
import os
import stat
import time
from pathlib import Path

import numpy as np
import pytest

from facecache.errors import CacheError, FaceCacheError
from facecache.permissions import PRIVATE, TEAM
from facecache.store.cache import FaceCache
from facecache.store.frame_store import FrameStore, group_key
from facecache.store.lease import Lease
from facecache.store.namespace import Namespace
from facecache.store import tier_hits
from facecache.store.records import Face, FrameRecord, Stage
from stress_helpers import FORK

NS = Namespace("analysis", {"detector": "1" * 32}, {"size": 640, "threshold": 0.5})
GROUP = group_key("media", "decoder", 0)


def face(seed=0, embedding=True):
    rng = np.random.default_rng(seed)
    return Face(rng.random(4, dtype=np.float32), 0.9, rng.random((5, 2), dtype=np.float32),
                embedding=rng.random(512, dtype=np.float32) if embedding else None)


def record(i, stages=Stage.DETECT | Stage.EMBED, faces=None):
    return FrameRecord(f"{i:032x}", stages, 1080, 1920, [face(i)] if faces is None else faces)


def write(cache, namespace=NS, group=GROUP, frames=range(10), **kw):
    g = FrameStore(cache, namespace).open_group(group)
    for i in frames:
        g.put(record(i, **kw), i)
    g.flush()
    return g


def pack_files(cache):
    return sorted(p.path for p in cache.iter_packs())


def test_records_survive_a_new_process_view(tmp_path):
    write(FaceCache(tmp_path / "c"))
    store = FrameStore(FaceCache(tmp_path / "c"), NS)
    g = store.open_group(GROUP)
    assert g.fingerprint_at(3) == f"{3:032x}"
    rec = g.lookup(f"{3:032x}", Stage.DETECT)
    np.testing.assert_array_equal(rec.faces[0].embedding, face(3).embedding)
    assert store.stats.as_dict() == {"hits": 1, "misses": 0, "partial_hits": 0}
    assert store.cache.io.files_opened == 1


def test_existing_pack_is_not_written_again(tmp_path):
    cache = FaceCache(tmp_path / "c")
    write(cache)
    before = pack_files(cache)
    mtime = os.stat(before[0]).st_mtime_ns
    write(FaceCache(tmp_path / "c"))  # same content: same name, nothing rewritten
    assert pack_files(cache) == before
    assert os.stat(before[0]).st_mtime_ns >= mtime


def test_partial_hit_then_fuller_record_replaces_the_pack(tmp_path):
    cache = FaceCache(tmp_path / "c")
    write(cache, stages=Stage.DETECT)
    store = FrameStore(FaceCache(tmp_path / "c"), NS)
    g = store.open_group(GROUP)
    rec = g.lookup(f"{1:032x}", Stage.DETECT | Stage.EMBED)
    assert not rec.has(Stage.EMBED)
    assert store.stats.partial_hits == 1
    g.put(record(1, stages=Stage.DETECT | Stage.EMBED), 1)
    g.flush()
    assert len(pack_files(cache)) == 1  # the old pack was folded into the new one
    g2 = FrameStore(FaceCache(tmp_path / "c"), NS).open_group(GROUP)
    assert g2.lookup(f"{1:032x}", Stage.EMBED).has(Stage.EMBED)
    assert len(g2.content.records) == 10


def test_two_writers_of_one_group_merge_on_read(tmp_path):
    a, b = FaceCache(tmp_path / "c"), FaceCache(tmp_path / "c")
    ga = FrameStore(a, NS).open_group(GROUP)
    gb = FrameStore(b, NS).open_group(GROUP)
    for i in range(5):
        ga.put(record(i), i)
        gb.put(record(i + 5), i + 5)
    ga.flush()
    gb.flush()
    assert len(pack_files(a)) == 2
    g = FrameStore(FaceCache(tmp_path / "c"), NS).open_group(GROUP)
    assert sorted(g.content.index) == list(range(10))


def test_frames_without_faces_are_cached(tmp_path):
    write(FaceCache(tmp_path / "c"), faces=[])
    store = FrameStore(FaceCache(tmp_path / "c"), NS)
    rec = store.open_group(GROUP).lookup(f"{4:032x}", Stage.DETECT)
    assert rec is not None and rec.faces == []
    assert store.stats.hits == 1


def test_changed_settings_or_models_serve_nothing_old(tmp_path):
    cache = FaceCache(tmp_path / "c")
    write(cache)
    for other in (Namespace("analysis", {"detector": "1" * 32}, {"size": 320, "threshold": 0.5}),
                  Namespace("analysis", {"detector": "2" * 32}, {"size": 640, "threshold": 0.5}),
                  Namespace("analysis", {"detector": "1" * 32}, {"size": 640, "threshold": 0.5}, format_version=2)):
        store = FrameStore(cache, other)
        assert store.open_group(GROUP).lookup(f"{1:032x}", Stage.DETECT) is None
        assert store.stats.misses == 1
    assert Namespace("a", {"x": "1"}, {"b": 1, "a": 2}).key == Namespace("a", {"x": "1"}, {"a": 2, "b": 1}).key


def test_stats_counts_entries_bytes_namespaces(tmp_path):
    cache = FaceCache(tmp_path / "c")
    write(cache)
    write(cache, namespace=Namespace("swap", {"swapper": "3" * 32}), frames=range(4))
    stats = cache.stats()
    assert stats.entries == 14
    assert stats.packs == 2
    assert len(stats.namespaces) == 2
    assert stats.bytes >= sum(os.path.getsize(p) for p in pack_files(cache))
    assert {n.description["stage"] for n in stats.namespaces} == {"analysis", "swap"}


def test_corrupt_pack_is_a_miss_logged_once_and_set_aside(tmp_path, caplog):
    cache = FaceCache(tmp_path / "c")
    write(cache)
    path = pack_files(cache)[0]
    data = bytearray(path.read_bytes())
    data[100] ^= 0xFF
    os.chmod(path, 0o600)
    path.write_bytes(bytes(data))
    with caplog.at_level(logging.WARNING, logger="facecache.cache"):
        store = FrameStore(FaceCache(tmp_path / "c"), NS)
        assert store.open_group(GROUP).lookup(f"{1:032x}", Stage.DETECT) is None
    assert sum("set aside" in r.message for r in caplog.records) == 1
    assert not path.exists()
    assert len(list((tmp_path / "c" / "quarantine").iterdir())) == 1


def test_verify_reports_and_sets_aside_bad_packs_and_old_temp_files(tmp_path):
    cache = FaceCache(tmp_path / "c")
    write(cache)
    path = pack_files(cache)[0]
    path.write_bytes(path.read_bytes()[:-5])
    (path.parent / ".tmp-dead-1-1").write_bytes(b"partial")
    report = cache.verify(temp_grace_seconds=0)
    assert report.checked == 1 and len(report.bad) == 1 and report.temp_set_aside == 1
    assert cache.verify(temp_grace_seconds=0).clean


def test_lru_eviction_keeps_recently_used_packs(tmp_path):
    cache = FaceCache(tmp_path / "c")
    groups = [group_key("media", "d", s) for s in range(4)]
    for g in groups:
        write(cache, group=g)
    sizes = {p.path: p.size for p in cache.iter_packs()}
    old = time.time() - 7200
    for i, p in enumerate(pack_files(cache)):
        os.utime(p, (old + i, old + i))
    # A hit on group 0 touches its pack, so it becomes the most recently used.
    FrameStore(FaceCache(tmp_path / "c"), NS).open_group(groups[0])
    budget = sum(sizes.values()) - 1  # forces exactly one eviction
    report = cache.prune(max_bytes=budget)
    assert report.removed_packs == 1
    left = FrameStore(FaceCache(tmp_path / "c"), NS)
    assert left.open_group(groups[0]).content.records  # used recently: kept


def test_prune_never_removes_packs_younger_than_the_grace(tmp_path):
    cache = FaceCache(tmp_path / "c")
    write(cache)
    report = cache.prune(max_bytes=0)
    assert report.removed_packs == 0 and report.skipped_young == 1
    assert cache.prune(max_bytes=0, grace_seconds=0).removed_packs == 1


def test_size_cap_is_enforced_while_writing(tmp_path):
    cache = FaceCache(tmp_path / "c", max_bytes=1)
    write(cache)
    os.utime(pack_files(cache)[0], (time.time() - 3600,) * 2)
    cache.enforce_size_cap()
    assert pack_files(cache) == []


def test_stale_namespaces_are_pruned_whole(tmp_path):
    cache = FaceCache(tmp_path / "c")
    write(cache)
    fresh = Namespace("analysis", {"detector": "9" * 32})
    write(cache, namespace=fresh)
    marker = cache.root / "ns" / NS.key / "namespace.msgpack"
    os.utime(marker, (time.time() - 40 * 86400,) * 2)
    report = FaceCache(tmp_path / "c").prune(stale_seconds=30 * 86400)
    assert report.removed_namespaces == 1
    assert not (cache.root / "ns" / NS.key).exists()
    assert (cache.root / "ns" / fresh.key).exists()


def test_one_pruner_at_a_time(tmp_path):
    cache = FaceCache(tmp_path / "c")
    held = Lease.acquire(cache.root / "locks" / "prune.lease", 60, cache.perms)
    assert cache.prune(max_bytes=0).busy
    held.release()
    assert not cache.prune(max_bytes=0).busy


def test_stale_lease_is_taken_over(tmp_path):
    cache = FaceCache(tmp_path / "c")
    path = cache.root / "locks" / "x.lease"
    first = Lease.acquire(path, -1, cache.perms)  # already expired: its owner "died"
    second = Lease.acquire(path, 60, cache.perms)
    assert second is not None and second.held() and not first.held()
    assert Lease.acquire(path, 60, cache.perms) is None


def test_clear_removes_everything(tmp_path):
    cache = FaceCache(tmp_path / "c")
    write(cache)
    cache.clear()
    assert cache.stats().entries == 0 and pack_files(cache) == []


def test_symlinked_pack_is_never_followed(tmp_path):
    cache = FaceCache(tmp_path / "c")
    write(cache)
    real = pack_files(cache)[0]
    outside = tmp_path / "outside.fcp"
    outside.write_bytes(real.read_bytes())
    os.unlink(real)
    os.symlink(outside, real)
    store = FrameStore(FaceCache(tmp_path / "c"), NS)
    assert store.open_group(GROUP).lookup(f"{1:032x}", Stage.DETECT) is None
    assert outside.exists()


@pytest.mark.parametrize("parent_mode, expected", [(0o755, PRIVATE), (0o2775, TEAM), (0o1777, PRIVATE)])
def test_permissions_follow_the_parent_folder(tmp_path, parent_mode, expected):
    parent = tmp_path / "projects"
    parent.mkdir()
    os.chmod(parent, parent_mode)
    old_umask = os.umask(0o022)
    try:
        cache = FaceCache(parent / "cache")
        write(cache)
    finally:
        os.umask(old_umask)
    assert cache.perms == expected
    for dirpath, dirnames, filenames in os.walk(cache.root):
        assert stat.S_IMODE(os.stat(dirpath).st_mode) == expected.dir_mode, dirpath
        for name in filenames:
            mode = stat.S_IMODE(os.stat(os.path.join(dirpath, name)).st_mode)
            assert mode == expected.file_mode, name
            assert not mode & stat.S_IRWXO  # never world-readable


def test_an_existing_root_keeps_its_mode_and_what_the_cache_makes_in_it_is_private(tmp_path):
    root = tmp_path / "c"
    root.mkdir()
    os.chmod(root, 0o755)  # the user's own folder, given as --cache-dir
    FaceCache(root).verify()
    assert stat.S_IMODE(root.stat().st_mode) == 0o755
    assert all(stat.S_IMODE((root / sub).stat().st_mode) == 0o700 for sub in ("ns", "media", "quarantine", "locks"))


def test_a_file_as_cache_location_is_a_clear_error(tmp_path):
    (tmp_path / "f").write_text("x")
    with pytest.raises(CacheError, match="--cache-dir"):
        FaceCache(tmp_path / "f")


def _open_as_unprivileged_user(root, queue):
    if os.geteuid() == 0:
        os.setgid(65534)
        os.setuid(65534)  # root can write anywhere; "nobody" cannot write here
    try:
        FaceCache(root)
        queue.put("opened")
    except FaceCacheError as exc:
        queue.put(f"{exc} (exit code {exc.exit_code})")


def test_read_only_location_is_a_clear_error(tmp_path):
    import shutil
    import tempfile

    # Outside pytest's 0700 tmp folder, so that only the read-only folder stops the user.
    base = Path(tempfile.mkdtemp())
    try:
        os.chmod(base, 0o755)
        (base / "ro").mkdir(mode=0o555)
        os.chmod(base / "ro", 0o555)
        queue = FORK.Queue()
        child = FORK.Process(target=_open_as_unprivileged_user, args=(base / "ro" / "c", queue))
        child.start()
        child.join(30)
        message = queue.get(timeout=5)
    finally:
        shutil.rmtree(base)
    assert "cannot create the cache folder" in message and "permission denied" in message
    assert "--cache-dir" in message and "(exit code 3)" in message


def read_back(cache, frames=range(10)):
    """A job that reads the frames back: each complete record is a hit of the tier that served it."""
    g = FrameStore(cache, NS).open_group(GROUP)
    for i in frames:
        g.lookup(f"{i:032x}", Stage.DETECT)
    cache.keep_hits()


def test_the_hits_of_every_run_are_kept_in_files_of_their_own_and_summed(tmp_path):
    write(FaceCache(tmp_path / "c"))
    first, second = FaceCache(tmp_path / "c"), FaceCache(tmp_path / "c")  # two processes' caches
    read_back(first)
    read_back(second, range(4))
    read_back(first, range(3))  # a second job of the first: its file rewritten with the totals
    assert first.hits.as_dict() == {"local": 13, "remote": 0}
    assert len(os.listdir(tmp_path / "c" / "hits")) == 2
    assert FaceCache(tmp_path / "c", create=False).stats().hits.as_dict() == {"local": 17, "remote": 0}
    (tmp_path / "c" / "hits" / "garbage.msgpack").write_bytes(b"\xc1not msgpack")
    assert FaceCache(tmp_path / "c").stats().as_dict()["hits"] == {"local": 17, "remote": 0}
    first.clear()
    assert first.stats().hits.as_dict() == {"local": 0, "remote": 0}


def test_a_prune_folds_old_hits_files_into_one_and_nothing_is_counted_twice(tmp_path):
    """A farm's many runs leave one file each: a prune folds those untouched for a week into one file of their
    sum. A cache object still alive then writes only what it served since (its earlier totals are in the sum)."""
    write(FaceCache(tmp_path / "c"))
    alive, ended = FaceCache(tmp_path / "c"), FaceCache(tmp_path / "c")
    read_back(alive, range(5))
    read_back(ended, range(3))
    young = FaceCache(tmp_path / "c")
    read_back(young, range(2))
    week_ago = time.time() - tier_hits.FOLD_AFTER_SECONDS - 60
    for name in (alive._hits_file.name, ended._hits_file.name):
        os.utime(tmp_path / "c" / "hits" / name, (week_ago, week_ago))
    assert alive.prune().hits_files_folded == 2
    assert len(os.listdir(tmp_path / "c" / "hits")) == 2  # the sum and the young file
    assert FaceCache(tmp_path / "c").stats().hits.as_dict() == {"local": 10, "remote": 0}
    read_back(alive, range(4))  # alive again: 9 in all, of which 5 are in the folded sum
    assert FaceCache(tmp_path / "c").stats().hits.as_dict() == {"local": 14, "remote": 0}
    assert alive.prune().hits_files_folded == 0  # nothing old enough, nothing folded


def test_a_run_without_hits_and_a_cache_that_does_not_store_write_no_hits_file(tmp_path):
    write(FaceCache(tmp_path / "c"))
    FaceCache(tmp_path / "c").keep_hits()
    looking = FaceCache(tmp_path / "c", create=False)
    read_back(looking)
    assert looking.hits.local == 10 and not (tmp_path / "c" / "hits").exists()
