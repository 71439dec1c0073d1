"""Errors of the analysis stage; every message says what to do next."""

from __future__ import annotations

from facecache.errors import FaceCacheError


class ModelContractError(FaceCacheError):
    """An ONNX session does not have the inputs or outputs its adapter expects.

    Usually the wrong file was installed under a model's name, or the file is
    damaged: the message names the model and what was expected.
    """


class ModelRunError(FaceCacheError):
    """ONNX Runtime failed while running a model."""


class FrameError(FaceCacheError, ValueError):
    """A frame handed to an analysis step is not a BGR uint8 image."""
