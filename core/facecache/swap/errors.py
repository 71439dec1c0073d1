"""Errors of the swap stage; every message says what to do next."""

from __future__ import annotations

from facecache.errors import FaceCacheError


class SwapInputError(FaceCacheError, ValueError):
    """A face handed to a swapper lacks what the swapper needs (key points, an embedding)."""
