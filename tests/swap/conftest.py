"""Fixtures for the swap tests; the real portraits come from tests/conftest.py."""

from __future__ import annotations

import numpy as np
import pytest


@pytest.fixture
def noise_frame() -> np.ndarray:
    """A 480x640 BGR frame of reproducible noise: any changed pixel shows."""
    return np.random.default_rng(7).integers(0, 256, (480, 640, 3), dtype=np.uint8)


@pytest.fixture
def rows_asked(monkeypatch) -> list:
    """The rows each movie frame is converted in (`Movie.converted`'s `rows`: None for all of them), in order."""
    from facecache.media.movie import Movie

    asked = []
    converted = Movie.converted
    monkeypatch.setattr(Movie, "converted", lambda self, frame, rows=None: asked.append(rows) or
                        converted(self, frame, rows))
    return asked
