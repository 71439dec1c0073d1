"""Cache operations stay inside the cache: a symlink below the cache root (where `ns/`, `media/`,
`quarantine/`, `locks/` or a folder inside them belongs) is never followed by clear, prune, verify,
stats or a write; it is set aside (moved into quarantine as the link it is) and reported. Each case
checks a folder outside the cache, full of names the cache would act on, byte for byte afterwards.
Also: an existing folder given as --cache-dir or --out keeps its own mode, `cache stats` changes
nothing, and an output folder inside the cache (outside its swaps/ folder) is refused."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import pytest

from facecache.cli import main
from facecache.jobs.swap_job import OutputInsideCache, check_outside_cache
from facecache.store.cache import FaceCache
from facecache.store.claims import ClaimBook
from facecache.store.frame_store import FrameStore, group_key
from facecache.store.namespace import Namespace
from facecache.store.records import FrameRecord, Stage

NS = Namespace("analysis", {"detector": "1" * 32}, {"s": 1}, 1)
KEY = "ab" * 16


def outside_folder(root: Path) -> Path:
    """A teammate's folder holding names that each cache operation acts on inside the cache."""
    root.mkdir()
    group = root / KEY / KEY[:2] / KEY
    group.mkdir(parents=True)
    (group / ("cd" * 16 + ".fcp")).write_bytes(b"not a pack, but named like one")
    (root / KEY / "namespace.msgpack").write_bytes(b"\x80")
    (root / KEY[:2]).mkdir(exist_ok=True)
    (root / KEY[:2] / (KEY + ".msgpack")).write_bytes(b"\x80")
    (root / "claims").mkdir()
    for name in ("old.claim", "prune.lease", ".tmp-1-2-3", ".del-0123", "claims/x.claim", "notes.txt"):
        (root / name).write_bytes(b"the teammate's " + name.encode())
        os.utime(root / name, (1, 1))  # as old as can be: every clean-up would take it
    return root


def snapshot(root: Path) -> dict:
    """Every entry under `root`: its type, mode and bytes."""
    entries = {}
    for path in [root, *root.rglob("*")]:
        info = os.lstat(path)
        content = path.read_bytes() if stat.S_ISREG(info.st_mode) else os.readlink(path) if path.is_symlink() else None
        entries[str(path.relative_to(root))] = (stat.S_IFMT(info.st_mode), stat.S_IMODE(info.st_mode), content)
    return entries


def filled_cache(root: Path) -> FaceCache:
    cache = FaceCache(root)
    store = FrameStore(cache, NS)
    group = store.open_group(group_key("m" * 32, "dec", 0))
    group.put(FrameRecord("ef" * 16, Stage.DETECT, 8, 8), 0)
    group.flush()
    cache.remember("media", "12" * 16, {"digest": "x"})
    return cache


def cli(*args) -> int:
    return main([str(a) for a in args])


LINKED = ["ns", "media", "quarantine", "locks", "locks/claims", f"ns/{NS.key}", "ns/{key}/{fan}"]


def link_in(cache_root: Path, where: str, target: Path) -> Path:
    group_folder = next(cache_root.glob("ns/*/*/*"))
    where = where.format(key=group_folder.parent.parent.name, fan=group_folder.parent.name)
    link = cache_root / where
    if link.is_dir():
        os.rename(link, cache_root / f"moved-{where.replace('/', '-')}")  # keep the real one out of the way
    link.parent.mkdir(parents=True, exist_ok=True)
    os.symlink(target, link)
    return link


@pytest.mark.parametrize("where", LINKED)
@pytest.mark.parametrize("action", ["clear", "prune", "verify", "stats"])
def test_cache_maintenance_never_follows_a_symlink_below_the_root(tmp_path, caplog, where, action):
    cache_root = tmp_path / "cache"
    filled_cache(cache_root)
    outside = outside_folder(tmp_path / "teammate")
    before = snapshot(outside)
    link = link_in(cache_root, where, outside)
    extra = ["--max-size", "0", "--stale", "0s"] if action == "prune" else []
    code = cli("cache", action, "--cache-dir", cache_root, *extra)
    assert snapshot(outside) == before
    assert code == 0 or action == "verify" and code == 1  # verify: 1 when it set aside a link below ns/
    outcome = what_happens_to_the_link(action, where)
    assert link.is_symlink() == (outcome in ("left alone", "not looked at"))
    assert (str(link) in caplog.text) == (outcome != "not looked at" and outcome != "removed")


def what_happens_to_the_link(action: str, where: str) -> str:
    """Every command but stats opens the cache, which sets aside a link where ns/, media/, quarantine/ or
    locks/ belongs; verify and prune clean locks/claims/ (a link there is set aside); verify also sets
    aside links inside ns/, which prune lists and leaves alone; clear removes them as the links they
    are; stats only reports what it lists."""
    deep = where.startswith("ns/")
    if action == "stats":
        return "not looked at" if where == "locks/claims" else "left alone"
    if not deep and where != "locks/claims":
        return "set aside"
    if where == "locks/claims":
        return "not looked at" if action == "clear" else "set aside"
    return {"clear": "removed", "prune": "left alone", "verify": "set aside"}[action]


@pytest.mark.parametrize("where", ["ns", "media", "locks", "locks/claims", f"ns/{NS.key}", "ns/{key}/{fan}"])
def test_writes_never_go_through_a_symlink_below_the_root(tmp_path, where):
    cache_root = tmp_path / "cache"
    filled_cache(cache_root)
    outside = outside_folder(tmp_path / "teammate")
    before = snapshot(outside)
    link_in(cache_root, where, outside)
    cache = FaceCache(cache_root)
    group = FrameStore(cache, NS).open_group(group_key("m" * 32, "dec", 0))
    group.put(FrameRecord("01" * 16, Stage.DETECT, 8, 8), 1)
    group.flush()
    cache.remember("media", "34" * 16, {"digest": "y"})
    claim = ClaimBook(cache).try_claim(NS.key, "56" * 16)
    claim.release()
    assert snapshot(outside) == before
    assert list(cache_root.glob("ns/*/*/*/*.fcp")), "the write went into the cache itself"


def test_a_symlinked_quarantine_is_moved_beside_it_and_a_real_one_made(tmp_path, caplog):
    cache_root = tmp_path / "cache"
    filled_cache(cache_root)
    outside = outside_folder(tmp_path / "teammate")
    before = snapshot(outside)
    os.rmdir(cache_root / "quarantine")
    os.symlink(outside, cache_root / "quarantine")
    os.symlink(outside, cache_root / "ns" / ("99" * 16))  # something to set aside into quarantine
    FaceCache(cache_root).clear()
    assert snapshot(outside) == before
    assert (cache_root / "quarantine").is_dir() and not (cache_root / "quarantine").is_symlink()
    (aside,) = cache_root.glob("quarantine.not-a-folder-*")
    assert aside.is_symlink() and "quarantine" in caplog.text


def test_an_existing_cache_and_output_folder_keep_their_modes(tmp_path):
    for folder in (tmp_path / "cache", tmp_path / "out"):
        folder.mkdir()
        os.chmod(folder, 0o755)
    filled_cache(tmp_path / "cache")
    for action in ("stats", "verify", "prune", "clear"):
        assert cli("cache", action, "--cache-dir", tmp_path / "cache") in (0, 1)
    from facecache.jobs.swap_job import prepare_output_folder

    prepare_output_folder(tmp_path / "out")
    assert [stat.S_IMODE(os.stat(f).st_mode) for f in (tmp_path / "cache", tmp_path / "out")] == [0o755, 0o755]
    assert stat.S_IMODE(os.stat(tmp_path / "cache" / "ns").st_mode) == 0o700  # what the engine made: private


def test_cache_stats_changes_nothing(tmp_path, capsys):
    missing = tmp_path / "none" / "cache"
    assert cli("cache", "stats", "--cache-dir", missing, "--json") == 0
    assert json.loads(capsys.readouterr().out)["entries"] == 0
    assert not (tmp_path / "none").exists()
    root = tmp_path / "cache"
    filled_cache(root)
    os.chmod(root, 0o755)
    os.chmod(next(root.glob("ns/*")), 0o755)  # looser than the rule: stats reports it, never changes it
    before = {str(p): (os.lstat(p).st_mode, os.lstat(p).st_mtime_ns, os.lstat(p).st_size)
              for p in [root, *root.rglob("*")]}
    assert cli("cache", "stats", "--cache-dir", root, "--json") == 0
    assert json.loads(capsys.readouterr().out)["loose_permissions"]["found"] == 1
    after = {str(p): (os.lstat(p).st_mode, os.lstat(p).st_mtime_ns, os.lstat(p).st_size)
             for p in [root, *root.rglob("*")]}
    assert after == before


@pytest.mark.parametrize("out", ["cache", "cache/ns/renders", "cache/media", "cache/renders", "link-into-cache/ns"])
def test_an_output_folder_inside_the_cache_is_refused(tmp_path, capsys, out):
    FaceCache(tmp_path / "cache")
    os.symlink(tmp_path / "cache", tmp_path / "link-into-cache")
    code = cli("swap", "--source", "face.png", "--target", "clip.mp4", "--out", tmp_path / out,
               "--cache-dir", tmp_path / "cache")
    (line,) = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and "inside the cache folder" in line and "outside the cache" in line
    assert not (tmp_path / "cache" / "ns" / "renders").exists()


def test_the_caches_swaps_folder_takes_outputs(tmp_path):
    check_outside_cache(tmp_path / "cache" / "swaps" / "0123" / "clip", tmp_path / "cache")  # the add-on's place
    check_outside_cache(tmp_path / "renders", tmp_path / "cache")
    with pytest.raises(OutputInsideCache):
        check_outside_cache(tmp_path / "cache" / "swapsx", tmp_path / "cache")
