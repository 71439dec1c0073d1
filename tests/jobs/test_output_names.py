"""Output folder names that every platform of a studio can open (`facecache.output_names`); the Windows
side of it runs under Wine in tests/windows."""

import pytest

from facecache.output_names import portable_name


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


def test_a_clip_named_after_a_device_gets_its_own_folder(tmp_path, portrait_paths, models_dir):
    """`CON.mp4`, made on a Mac or a render node, is swapped into `CON_/` (a folder Windows can open)."""
    from facecache.media.sample_clip import write_sample_clip
    from facecache.pipeline import Settings, build_pipeline

    clip = write_sample_clip(portrait_paths["grace_hopper"], tmp_path / "CON.mp4", frames=3, size=(160, 120))
    settings = Settings(cache_dir=str(tmp_path / "cache"), models_dir=str(models_dir),
                        sources=(str(portrait_paths["astronaut"]),), landmarker="none", recognizer="none")
    report = build_pipeline(settings).swap_job().run(clip, tmp_path / "out")
    assert report.written == 3
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == ["CON_"]
