"""`facecache demo` (`./dev engine-demo`) says where to look: a file that exists and shows a swapped face."""

import cv2
import pytest

from facecache.demo import run_demo

pytestmark = pytest.mark.index  # the default models and the portraits from the package index


def test_the_engine_demo_ends_with_where_to_look(tmp_path, default_models_dir):
    said = []
    result = run_demo(tmp_path / "demo", default_models_dir, frames=3, say=said.append)
    look = next(line for line in said if line.startswith("look at "))
    shown = look.split()[2]
    assert shown == f"{result['overlays']}/000000.png"  # frame 0's overlay, named in full
    overlay = cv2.imread(shown, cv2.IMREAD_UNCHANGED)
    assert overlay.shape[2] == 4 and 1000 < (overlay[..., 3] > 0).sum() < overlay[..., 3].size / 4  # a face, alone
    assert len(list((tmp_path / "demo").glob("swap_astronaut_mirrored/sample_clip/*.png"))) == 3
    assert any(line.startswith("composited") and "./dev demo" in line for line in said)
