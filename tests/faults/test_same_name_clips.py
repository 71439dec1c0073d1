"""Two clips that share a file name (cameras restart their numbering on every card: A/C0001.MP4 and
B/C0001.MP4) swapped into one --out, one after the other and at once: the output folder says which
clip it belongs to (`facecache.output_layout`), the other clip is refused with one line that says
what to do, and no output of the first is ever overwritten. Stills of one name likewise. The CLI
runs as a user runs it, in separate processes."""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from facecache import output_layout

pytestmark = pytest.mark.index


@pytest.fixture(scope="module")
def cards(tmp_path_factory, portrait_paths):
    """Two cards, each with a clip named C0001.mp4 of different footage, and a source face."""
    from facecache.media.sample_clip import write_sample_clip

    root = tmp_path_factory.mktemp("cards")
    clips = {}
    for card, portrait in (("A", "grace_hopper"), ("B", "astronaut")):
        (root / card).mkdir()
        clips[card] = write_sample_clip(portrait_paths[portrait], root / card / "C0001.mp4", frames=6,
                                        size=(160, 120))
        shutil.copy(portrait_paths[portrait], root / card / "face.png")
    return {"clips": clips, "stills": {card: root / card / "face.png" for card in "AB"},
            "source": portrait_paths["astronaut"]}


def swap_command(target: Path, out: Path, cache: Path, models_dir: Path, source: Path) -> list[str]:
    return [sys.executable, "-m", "facecache", "swap", "--source", str(source), "--target", str(target),
            "--out", str(out), "--cache-dir", str(cache), "--models-dir", str(models_dir), "--providers", "cpu",
            "--selector", "many"]


def swap(*args) -> subprocess.CompletedProcess:
    return subprocess.run(swap_command(*args), capture_output=True, text=True, timeout=600)


def digests(folder: Path) -> dict:
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(folder.iterdir()) if p.is_file()}


def assert_refused(result: subprocess.CompletedProcess, first_clip: Path) -> None:
    assert result.returncode == 2, result.stderr
    (line,) = [line for line in result.stderr.splitlines() if not line.startswith("libpng warning")]  # the photo's
    assert str(first_clip) in line and "another clip with the same name" in line and "--out" in line
    assert "Traceback" not in result.stderr


def test_one_after_the_other_the_second_clip_is_refused_and_the_first_kept(cards, tmp_path, models_dir):
    a, b = cards["clips"]["A"], cards["clips"]["B"]
    out, cache = tmp_path / "out", tmp_path / "cache"
    first = swap(a, out, cache, models_dir, cards["source"])
    assert first.returncode == 0, first.stderr
    made = digests(out / "C0001")
    assert len([name for name in made if name.endswith(".png")]) == 6
    assert_refused(swap(b, out, cache, models_dir, cards["source"]), a)
    assert digests(out / "C0001") == made
    again = swap(a, out, cache, models_dir, cards["source"])  # the same clip is at home there
    assert again.returncode == 0 and digests(out / "C0001") == made
    elsewhere = swap(b, out / "B", cache, models_dir, cards["source"])  # what the message suggests
    assert elsewhere.returncode == 0, elsewhere.stderr
    assert output_layout.frames_in(out / "B" / "C0001") == set(range(6))


def test_at_once_one_clip_takes_the_folder_and_the_other_is_refused(cards, tmp_path, models_dir):
    out, cache = tmp_path / "out", tmp_path / "cache"
    runs = {card: subprocess.Popen(swap_command(cards["clips"][card], out, cache, models_dir, cards["source"]),
                                   stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for card in "AB"}
    results = {card: subprocess.CompletedProcess(run.args, run.wait(600), *run.communicate())
               for card, run in runs.items()}
    codes = sorted(result.returncode for result in results.values())
    assert codes == [0, 2], {card: r.stderr for card, r in results.items()}
    winner = next(card for card, result in results.items() if result.returncode == 0)
    loser = "B" if winner == "A" else "A"
    assert_refused(results[loser], cards["clips"][winner])
    alone = swap(cards["clips"][winner], tmp_path / "alone", cache, models_dir, cards["source"])
    assert alone.returncode == 0, alone.stderr
    frames = {name: digest for name, digest in digests(out / "C0001").items() if name.endswith(".png")}
    assert frames == {name: digest for name, digest in digests(tmp_path / "alone" / "C0001").items()
                      if name.endswith(".png")}  # every frame is the winner's


def test_stills_of_one_name_into_one_folder(cards, tmp_path, models_dir):
    a, b = cards["stills"]["A"], cards["stills"]["B"]
    out, cache = tmp_path / "out", tmp_path / "cache"
    assert swap(a, out, cache, models_dir, cards["source"]).returncode == 0
    made = (out / "face_swapped.png").read_bytes()
    assert_refused(swap(b, out, cache, models_dir, cards["source"]), a)
    assert (out / "face_swapped.png").read_bytes() == made


def test_a_copy_of_the_clip_elsewhere_is_the_same_clip(cards, tmp_path, models_dir):
    copy = tmp_path / "copy" / "C0001.mp4"
    copy.parent.mkdir()
    shutil.copy(cards["clips"]["A"], copy)
    out, cache = tmp_path / "out", tmp_path / "cache"
    assert swap(cards["clips"]["A"], out, cache, models_dir, cards["source"]).returncode == 0
    result = swap(copy, out, cache, models_dir, cards["source"])
    assert result.returncode == 0, result.stderr  # same content: its outputs are the same frames


def test_the_clip_marker_is_taken_by_exactly_one_of_many_at_once(tmp_path):
    """The marker itself, raced by eight processes with eight different clips of one name."""
    folder = tmp_path / "out" / "C0001"
    folder.mkdir(parents=True)
    script = ("import sys; from facecache import output_layout as l\n"
              "try:\n    l.claim(sys.argv[1], sys.argv[2], False, None); print('won')\n"
              "except l.OutputTaken: print('refused')\n")
    runs = [subprocess.Popen([sys.executable, "-c", script, str(tmp_path / "out"), str(tmp_path / f"card{n}" /
                              "C0001.mp4")], stdout=subprocess.PIPE, text=True) for n in range(8)]
    answers = sorted(run.communicate(timeout=120)[0].strip() for run in runs)
    assert answers == ["refused"] * 7 + ["won"]
    assert [name for name in os.listdir(folder)] == [output_layout.CLIP_MARKER]  # no temp file left


@pytest.mark.parametrize("deinterlace", [False, True])
def test_a_folder_holds_the_picture_its_marker_names_and_no_other(tmp_path, deinterlace):
    """What a copied project's add-on asks of the folder its swapped strip shows (`holds_clip`): this clip, in
    the picture it was made of (woven or deinterlaced); not another clip, not the other picture."""
    clip, other = tmp_path / "A" / "C0001.mp4", tmp_path / "B" / "C0001.mp4"
    (tmp_path / "out" / "C0001").mkdir(parents=True)
    assert not output_layout.holds_clip(tmp_path / "out", clip, deinterlace)  # no marker yet
    output_layout.claim(tmp_path / "out", clip, False, None, deinterlace=deinterlace)
    assert output_layout.holds_clip(tmp_path / "out", clip, deinterlace)
    assert not output_layout.holds_clip(tmp_path / "out", clip, not deinterlace)
    assert not output_layout.holds_clip(tmp_path / "out", other, deinterlace)
    output_layout.claim(tmp_path / "out", clip, False, None, deinterlace=not deinterlace)  # the same clip: allowed
    assert output_layout.holds_clip(tmp_path / "out", clip, deinterlace)  # the marker keeps its first picture
    (tmp_path / "out" / "C0001" / output_layout.CLIP_MARKER).write_bytes(b"\x00damaged")
    assert not output_layout.holds_clip(tmp_path / "out", clip, deinterlace)


def test_the_layout_module_needs_only_the_standard_library():
    """The add-on imports it in Blender's own process, as it imports `choices`."""
    code = ("import sys; import facecache.output_layout, facecache.choices; "
            "print(sorted(m for m in sys.modules if m.split('.')[0] in "
            "('numpy', 'cv2', 'onnxruntime', 'msgpack', 'xxhash', 'psutil', 'watchdog', 'platformdirs')))")
    assert subprocess.run([sys.executable, "-c", code], capture_output=True, text=True).stdout.strip() == "[]"
