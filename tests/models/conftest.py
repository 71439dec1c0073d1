"""Fixtures for the models tests."""

from __future__ import annotations

import pytest

from model_helpers import asset_server  # noqa: F401 - the local HTTP server fixture


@pytest.fixture(autouse=True)
def no_real_model_downloads(monkeypatch):
    """Model downloads in tests go to 127.0.0.1 only: by default to a closed port, so a test that
    forgets to start the local server fails fast instead of reaching GitHub."""
    monkeypatch.setenv("FACECACHE_MODELS_URL", "http://127.0.0.1:9/no-downloads-in-tests")





@pytest.fixture
def isolated_env(monkeypatch, tmp_path):
    """No inherited FACECACHE_* settings; the per-user folders point inside tmp_path."""
    for name in ("FACECACHE_MODELS", "FACECACHE_MODELS_URL", "FACECACHE_DATA"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg-data"))
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    return tmp_path
