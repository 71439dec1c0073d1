"""Output folder names that every platform of a studio can open (`facecache.output_layout.portable_name`,
used by every <stem> of the layout); the Windows side of it runs under Wine in tests/windows."""

import json

import pytest

from facecache import output_layout
from facecache.output_layout import portable_name


@pytest.mark.parametrize("stem, folder", [
    ("shot_010", "shot_010"), ("long take", "long take"), ("take.v2", "take.v2"), ("café", "café"),
    ("CON", "CON_"), ("con", "con_"), ("nul.backup", "nul_.backup"), ("Aux ", "Aux _"), ("COM1", "COM1_"),
    ("lpt9.final", "lpt9_.final"), ("COM¹", "COM¹_"), ("CONOUT$", "CONOUT$_"), ("console", "console"),
    ("COM10", "COM10"), ("take.", "take._"), ("take ", "take _"), ("a:b", "a_b"), ('what?"*<>|', "what______"),
    ("back\\slash", "back_slash"), ("tab\there", "tab_here"), ("", "_"),
])
def test_names_windows_cannot_use_are_changed_and_no_other(stem, folder):
    assert portable_name(stem) == folder
    assert portable_name(folder) == folder, "a portable name stays as it is"


def test_every_place_of_the_layout_takes_the_portable_stem(tmp_path):
    """Folders, still names and clip markers all go through `output_layout.stem`; frame names and their
    parse do not depend on the stem."""
    out, clip, still = tmp_path / "out", tmp_path / "media" / "CON.mp4", tmp_path / "media" / "take..png"
    assert output_layout.stem(clip) == "CON_" and output_layout.stem(still) == "take._"
    assert output_layout.output_folder(out, clip, still=False) == str(out / "CON_")
    assert output_layout.marker_path(out, clip, still=False) == str(out / "CON_" / output_layout.CLIP_MARKER)
    assert output_layout.output_name(still, 7, still=True) == "take.__swapped.png"
    assert output_layout.marker_path(out, still, still=True) == str(out / ".take.__swapped.png.facecache-clip")
    assert output_layout.output_name(clip, 7, still=False) == "000007.png"
    (out / "CON_").mkdir(parents=True)
    for name in ("000000.png", "000007.png", output_layout.CLIP_MARKER, "CON_.png"):
        (out / "CON_" / name).write_bytes(b"")
    assert output_layout.frames_in(output_layout.output_folder(out, clip, still=False)) == {0, 7}



def test_a_clips_existing_outputs_are_those_in_a_folder_it_owns(tmp_path):
    """`existing_outputs` lists the frames in range found in the clip's folder when the folder's marker names
    this clip (as `claim` tells it: by path or content digest) or no clip; none when it names another clip or
    cannot be read. Only names count: no file is opened."""
    from facecache.jobs.found_outputs import existing_outputs

    out, clip = tmp_path / "out", tmp_path / "A" / "C0001.MP4"
    folder = out / "C0001"
    folder.mkdir(parents=True)
    for index in (0, 2, 9):
        (folder / output_layout.frame_name(index)).write_bytes(b"")
    assert existing_outputs(clip, out, range(5)) == [0, 2]  # no marker yet
    marker = folder / output_layout.CLIP_MARKER
    for owner, found in ((str(clip), [0, 2]), (str(tmp_path / "B" / "C0001.MP4"), [])):
        marker.write_text(json.dumps({"media": owner, "relative": None, "identity": None}))
        assert existing_outputs(clip, out, range(5)) == found
    marker.write_text("{damaged")  # read again for two seconds, then taken as another clip's
    assert existing_outputs(clip, out, range(10)) == []


@pytest.mark.index  # real weights and portraits come from the package index
def test_a_clip_named_after_a_device_gets_its_own_folder_and_marker(tmp_path, portrait_paths, models_dir):
    """`CON.mp4`, made on a Mac or a render node, is swapped into `CON_/` (a folder Windows can open),
    which its clip marker says is its own: another clip whose name becomes `CON_` is refused there, with
    an --out suggestion that is portable too."""
    from facecache.jobs.found_outputs import existing_outputs
    from facecache.media.sample_clip import write_sample_clip
    from facecache.pipeline import Settings, build_pipeline

    (tmp_path / "media").mkdir()
    (tmp_path / "AUX").mkdir()
    clip = write_sample_clip(portrait_paths["grace_hopper"], tmp_path / "media" / "CON.mp4", frames=3,
                             size=(160, 120))
    other = write_sample_clip(portrait_paths["astronaut"], tmp_path / "AUX" / "CON.mp4", frames=3, size=(160, 120))
    settings = Settings(cache_dir=str(tmp_path / "cache"), models_dir=str(models_dir),
                        sources=(str(portrait_paths["astronaut"]),), landmarker="none", recognizer="none")
    out = tmp_path / "out"

    def swap(target, folder):  # a job per run: a job's report adds up its runs
        return build_pipeline(settings).swap_job().run(target, folder)

    report = swap(clip, out)
    assert report.written == 3
    assert sorted(p.name for p in out.iterdir()) == ["CON_"]
    assert output_layout.frames_in(out / "CON_") == {0, 1, 2}
    marker = json.loads((out / "CON_" / output_layout.CLIP_MARKER).read_text())
    assert marker["media"] == str(clip) and marker["relative"] == "../media/CON.mp4"
    assert existing_outputs(clip, out, range(3)) == [0, 1, 2]
    assert swap(clip, out).written == 0  # the same clip is at home there

    def contents(folder):
        return {path.relative_to(folder): path.read_bytes() for path in folder.rglob("*") if path.is_file()}

    made = contents(out / "CON_")
    with pytest.raises(output_layout.OutputTaken) as refused:
        swap(other, out)
    message = str(refused.value)
    assert str(out / "CON_") in message and str(clip) in message and str(out / "AUX_") in message
    assert contents(out / "CON_") == made
    assert existing_outputs(other, out, range(3)) == []  # another clip's frames are none of its own
    assert swap(other, out / "AUX_").written == 3  # what the message suggests
    assert output_layout.frames_in(out / "AUX_" / "CON_") == {0, 1, 2}
