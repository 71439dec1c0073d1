"""Fixtures for the fault-injection tests: a tiny tmpfs, read-only bind mounts, a small clip and the
models, all readable by the other users the tests switch to."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from fault_helpers import mount, require_root, shared_temp_dir, unmount


@pytest.fixture
def shared_dir():
    """A 0755 folder outside pytest's 0700 temp folder, removed afterwards."""
    folder = shared_temp_dir()
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture
def small_disk(shared_dir):
    """A 4 MB tmpfs mounted by the test (root only)."""
    require_root()
    folder = shared_dir / "small-disk"
    folder.mkdir()
    mount("-t", "tmpfs", "-o", "size=4m,mode=0755", "tmpfs", str(folder))
    yield folder
    unmount(folder)


@pytest.fixture
def read_only_view(shared_dir):
    """`view(folder)`: a read-only bind mount of `folder` (root only)."""
    require_root()
    mounted = []

    def view(folder: Path) -> Path:
        target = shared_dir / f"read-only-{len(mounted)}"
        target.mkdir()
        mount("--bind", str(folder), str(target))
        mounted.append(target)
        mount("-o", "remount,bind,ro", str(target))
        return target

    yield view
    for target in reversed(mounted):
        unmount(target)


@pytest.fixture(scope="session")
def fault_media(portrait_paths):
    """An 8-frame 160x120 clip of a real portrait and a source face, in a folder every user can read."""
    from facecache.media.sample_clip import write_sample_clip

    folder = shared_temp_dir()
    clip = write_sample_clip(portrait_paths["grace_hopper"], folder / "clip.mp4", frames=8, size=(160, 120))
    source = folder / "source.png"
    shutil.copy(portrait_paths["astronaut"], source)
    yield {"clip": clip, "source": source, "portrait": portrait_paths["grace_hopper"]}
    shutil.rmtree(folder, ignore_errors=True)
