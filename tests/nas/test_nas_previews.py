"""A preview made again on a share: its old file is not read back (through sshfs that moved as many bytes as
writing it), so it is encoded whole; in a local folder the old file's bands are kept."""

import numpy as np
import pytest

from facecache.jobs import preview_files
from facecache.swap import jpeg_bands


def test_previews_are_read_back_in_local_folders_alone(nas, tmp_path):
    assert preview_files.previews_read_back(tmp_path, "sequencer")
    assert not preview_files.previews_read_back(nas.a, "sequencer")
    assert not preview_files.previews_read_back(nas.a / "clip", "sequencer")


def test_only_the_sequencer_form_has_previews_to_read_back(tmp_path):  # the others write none
    assert not preview_files.previews_read_back(tmp_path, "overlay")
    assert not preview_files.previews_read_back(tmp_path, "full")


@pytest.mark.parametrize("read_back", [True, False])
def test_a_preview_made_again_reads_its_old_file_where_it_is_read_back(tmp_path, monkeypatch, read_back):
    rng = np.random.default_rng(3)
    frame = rng.integers(0, 256, (64, 96, 3), dtype=np.uint8)
    patch = np.dstack([rng.integers(0, 256, (20, 30, 3), dtype=np.uint8), np.full((20, 30), 255, np.uint8)])
    overlay = tmp_path / "clip" / "000001.png"
    overlay.parent.mkdir()
    picture = "movie|rules|1" if read_back else None
    preview_files.write_preview(overlay, frame, [(10, 5, patch)], 0o644, picture)
    read = []
    monkeypatch.setattr(preview_files, "_read_or_none", lambda path: read.append(path) or path.read_bytes())
    preview_files.write_preview(overlay, frame, [(40, 30, patch)], 0o644, picture)
    assert len(read) == (2 if read_back else 0)  # both sizes' files, or none
    made = jpeg_bands.parse((tmp_path / "clip" / "BL_proxy" / "images" / "100" / "000001.png_proxy.jpg").read_bytes())
    assert made is not None and len(made.bands) == 4
