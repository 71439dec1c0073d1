"""The output manifest shared by two workstations through the real sshfs mounts.

Why it is a journal of write-once files: once a file's attributes are in mount B's cache (any
stat of it: a file browser, `ls -l`, a lookup), a file *replaced* through mount A reads through
B with its new bytes cut to the old size (39 of 40 replacements here). The first manifest (one
JSON file, re-read, merged and replaced on every save) then read as damaged on B, and B's next
save dropped every entry it had not made itself: a rerun remade outputs that were current
(CI caught it). This test fails on that design."""

import os
import time

from facecache.files import write_atomic
from facecache.jobs.manifest import OutputManifest


def _record(manifest: OutputManifest, folder, name: str) -> None:
    write_atomic(folder / name, name.encode() * 10)
    manifest.record(name, f"key-{name}")
    manifest.save()


def _browse(folder) -> None:
    """What a teammate's file browser does: stat everything under the output folder."""
    for parent, _folders, files in os.walk(folder):
        for name in files:
            os.stat(os.path.join(parent, name))


def test_saves_on_one_mount_are_never_lost_on_the_other(share):
    a, b, _server = share
    on_a, on_b = OutputManifest(a), OutputManifest(b)
    names = []
    for i in range(20):  # b looks at the folder, a saves, b saves on what it reads
        _browse(b)
        names.append(f"a{i:03d}.png")
        _record(on_a, a, names[-1])
        names.append(f"b{i:03d}.png")
        _record(on_b, b, names[-1])
    # Folder listings are cached too (1 s on these mounts): a teammate's newest save may show up
    # a moment late, but everything shows up and nothing saved is ever dropped.
    deadline = time.monotonic() + 5
    while True:
        fresh_a, fresh_b = OutputManifest(a), OutputManifest(b)
        missing = [n for m in (fresh_a, fresh_b) for n in names if not m.is_current(n, f"key-{n}")]
        if not missing or time.monotonic() > deadline:
            break
        time.sleep(0.2)
    assert not missing
