"""The output manifest (a journal of write-once files shared by every writer of an output folder),
the key stamped into each output, and the cleanup of temp files of writers that died."""

import os
import subprocess
import sys
import time

import cv2
import numpy as np
import pytest

from facecache.files import remove_leftover_temp_files, write_atomic
from facecache.jobs import manifest as manifest_module
from facecache.jobs.manifest import JOURNAL_FOLDER, OutputManifest
from facecache.jobs.output_stamp import read_stamp, stamp_png
from facecache.processes import host_tag


def _output(folder, name, data=b"png"):
    write_atomic(folder / name, data)
    return name


def _journal(folder):
    return sorted((folder / JOURNAL_FOLDER).iterdir())


def test_a_recorded_output_is_current_until_its_file_or_key_changes(tmp_path):
    manifest = OutputManifest(tmp_path)
    manifest.record(_output(tmp_path, "000001.png"), "key-a")
    manifest.save()
    again = OutputManifest(tmp_path)
    assert again.is_current("000001.png", "key-a")
    assert not again.is_current("000001.png", "key-b")  # other settings: stale
    assert not again.is_current("000002.png", "key-a")  # never recorded
    _output(tmp_path, "000001.png", b"a longer file written by hand")
    assert not again.is_current("000001.png", "key-a")  # the file no longer is what was recorded
    (tmp_path / "000001.png").unlink()
    assert not again.is_current("000001.png", "key-a")


def test_writers_that_never_saw_each_other_lose_nothing(tmp_path):
    first, second = OutputManifest(tmp_path), OutputManifest(tmp_path)
    first.record(_output(tmp_path, "a.png"), "key-a")
    second.record(_output(tmp_path, "b.png"), "key-b")
    first.save()
    second.save()  # knows nothing of the first's save: nothing of it is overwritten
    merged = OutputManifest(tmp_path)
    assert merged.is_current("a.png", "key-a") and merged.is_current("b.png", "key-b")
    assert first.refresh() and first.is_current("b.png", "key-b")
    assert not first.refresh()  # nothing new since


def test_the_later_save_of_an_output_wins(tmp_path):
    first, second = OutputManifest(tmp_path), OutputManifest(tmp_path)
    first.record(_output(tmp_path, "a.png"), "old-settings")
    first.save()
    second.record(_output(tmp_path, "a.png"), "new-settings")
    second.save()
    merged = OutputManifest(tmp_path)
    assert merged.is_current("a.png", "new-settings") and not merged.is_current("a.png", "old-settings")


def test_saves_add_files_and_never_rewrite_one(tmp_path):
    """Network clients cache sizes: a rewritten file would read truncated on another workstation."""
    manifest = OutputManifest(tmp_path)
    seen = {}
    for i in range(5):
        manifest.record(_output(tmp_path, f"{i}.png"), "key")
        manifest.save()
        files = _journal(tmp_path)
        for path in files:
            data = path.read_bytes()
            assert seen.setdefault(path.name, data) == data, "a journal file changed after it was written"
        assert len(files) == i + 1
    manifest.save()  # nothing new: no file
    assert len(_journal(tmp_path)) == 5


def test_a_long_journal_is_folded_into_one_file_without_losing_entries(tmp_path, monkeypatch):
    monkeypatch.setattr(manifest_module, "_FOLD_AT", 4)
    reader = OutputManifest(tmp_path)  # a teammate who read the journal before the fold
    writer = OutputManifest(tmp_path)
    for i in range(3):
        writer.record(_output(tmp_path, f"{i}.png"), f"key-{i}")
        writer.save()
    assert reader.refresh() and len(_journal(tmp_path)) == 3
    writer.record(_output(tmp_path, "3.png"), "key-3")
    writer.save()
    assert len(_journal(tmp_path)) == 1  # folded
    for manifest in (reader, writer, OutputManifest(tmp_path)):
        manifest.refresh()
        assert all(manifest.is_current(f"{i}.png", f"key-{i}") for i in range(4))


def test_damaged_or_foreign_journal_files_only_make_outputs_stale(tmp_path):
    manifest = OutputManifest(tmp_path)
    manifest.record(_output(tmp_path, "a.png"), "key")
    manifest.record(_output(tmp_path, "b.png"), "key")
    manifest.save()
    (path,) = _journal(tmp_path)
    path.write_bytes(path.read_bytes()[:20])  # damaged
    stamp = f"{time.time_ns():020d}-{host_tag()}-1-00000000"
    (tmp_path / JOURNAL_FOLDER / f"{stamp}.json").write_text('{"version": 99, "outputs": {"b.png": ["key", 3, 0]}}')
    (tmp_path / JOURNAL_FOLDER / "notes.txt").write_text("not a journal file")
    again = OutputManifest(tmp_path)
    assert not again.is_current("a.png", "key") and not again.is_current("b.png", "key")


def test_temp_files_of_dead_writers_are_removed_and_live_ones_kept(tmp_path):
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    dead_pid = int(dead.stdout)
    live = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        names = {
            "dead_here": f".000001.png.tmp-{host_tag()}-{dead_pid}-abc_12",
            "live_here": f".000002.png.tmp-{host_tag()}-{live.pid}-abc_12",
            "mine": f".000003.png.tmp-{host_tag()}-{os.getpid()}-abc_12",
            "elsewhere_recent": f".000004.png.tmp-0123abcd-{dead_pid}-abc_12",
            "elsewhere_old": f".000005.png.tmp-0123abcd-{live.pid}-abc_12",
            "not_a_temp_file": "000006.png",
        }
        for name in names.values():
            (tmp_path / name).write_bytes(b"partial")
        hours_ago = time.time() - 2 * 3600
        os.utime(tmp_path / names["elsewhere_old"], (hours_ago, hours_ago))
        assert remove_leftover_temp_files(tmp_path) == 2
        left = {p.name for p in tmp_path.iterdir()}
        assert left == {names[k] for k in ("live_here", "mine", "elsewhere_recent", "not_a_temp_file")}
    finally:
        live.kill()
        live.wait()


@pytest.mark.parametrize("broken", ["missing", "file"])
def test_no_journal_folder_means_every_output_is_stale(tmp_path, broken):
    _output(tmp_path, "a.png")
    if broken == "file":
        (tmp_path / JOURNAL_FOLDER).write_text("a file where the journal folder belongs")
    manifest = OutputManifest(tmp_path)
    assert not manifest.is_current("a.png", "key") and not manifest.refresh()


def _stamped_png(folder, name, key):
    ok, png = cv2.imencode(".png", np.full((4, 6, 4), 200, np.uint8))
    assert ok
    write_atomic(folder / name, stamp_png(png.tobytes(), key))
    return name


def test_a_stamped_png_decodes_to_the_same_pixels_and_names_its_key(tmp_path):
    pixels = np.random.default_rng(1).integers(0, 255, (5, 7, 4), dtype=np.uint8)
    png = cv2.imencode(".png", pixels)[1].tobytes()
    key = "0123456789abcdef0123456789abcdef"
    (tmp_path / "a.png").write_bytes(stamp_png(png, key))
    assert np.array_equal(cv2.imread(str(tmp_path / "a.png"), cv2.IMREAD_UNCHANGED), pixels)
    assert read_stamp(tmp_path / "a.png") == key
    (tmp_path / "plain.png").write_bytes(png)
    assert read_stamp(tmp_path / "plain.png") is None
    damaged = bytearray(stamp_png(png, key))
    damaged[70] ^= 1  # inside the key: the chunk crc no longer matches
    (tmp_path / "damaged.png").write_bytes(bytes(damaged))
    assert read_stamp(tmp_path / "damaged.png") is None
    (tmp_path / "short.png").write_bytes(stamp_png(png, key)[:50])
    assert read_stamp(tmp_path / "short.png") is None
    assert read_stamp(tmp_path / "missing.png") is None
    with pytest.raises(ValueError):
        stamp_png(b"GIF89a" + bytes(40), key)


def test_an_output_missing_from_the_manifest_is_current_by_its_stamp_and_gets_an_entry(tmp_path):
    """A teammate's journal file this client does not list yet: the output itself says what it is."""
    key = "0123456789abcdef0123456789abcdef"
    _stamped_png(tmp_path, "000001.png", key)
    manifest = OutputManifest(tmp_path)
    assert manifest.is_current("000001.png", key)
    assert not manifest.is_current("000001.png", "f" * 32)  # made from other inputs
    manifest.save()  # the entry is written, so the next reader needs no file opened
    assert OutputManifest(tmp_path).is_current("000001.png", key)
    assert len(_journal(tmp_path)) == 1


def test_new_settings_are_answered_from_the_entry_without_opening_outputs(tmp_path, monkeypatch):
    key = "0123456789abcdef0123456789abcdef"
    manifest = OutputManifest(tmp_path)
    manifest.record(_stamped_png(tmp_path, "000001.png", key), key)
    manifest.save()
    opened = []
    monkeypatch.setattr(manifest_module, "read_stamp", lambda path: opened.append(path))
    again = OutputManifest(tmp_path)
    assert not again.is_current("000001.png", "f" * 32) and opened == []  # the entry describes the file
    _stamped_png(tmp_path, "000001.png", "e" * 32 + "0")  # replaced: the entry no longer matches it
    assert not again.is_current("000001.png", "f" * 32) and len(opened) == 1
