"""The small part of an ONNX Runtime session the adapters rely on, and its checks.

Adapters take sessions already created (by the engine's session factory, or
a test), so anything with ``get_inputs()``, ``get_outputs()`` (items with a
``.name``) and ``run(output_names, feeds)`` works.
"""

from __future__ import annotations

from typing import Any, Mapping, Protocol, Sequence

import numpy as np

from facecache.analysis.errors import ModelContractError, ModelRunError


class OnnxSession(Protocol):
    def get_inputs(self) -> Sequence[Any]: ...

    def get_outputs(self) -> Sequence[Any]: ...

    def run(self, output_names: Sequence[str] | None, input_feed: Mapping[str, np.ndarray]) -> Sequence[Any]: ...


_REINSTALL = "the file is not that model or is damaged: reinstall the model and check its catalog entry"


def input_names(session: OnnxSession) -> list[str]:
    return [item.name for item in session.get_inputs()]


def output_names(session: OnnxSession) -> list[str]:
    return [item.name for item in session.get_outputs()]


def require_inputs(session: OnnxSession, model: str, expected: Sequence[str]) -> None:
    """Raise ModelContractError unless the session's inputs are exactly ``expected``."""
    found = input_names(session)
    if sorted(found) != sorted(expected):
        raise ModelContractError(f"{model}: the ONNX graph has inputs {found}, expected {list(expected)}; {_REINSTALL}")


def require_outputs(session: OnnxSession, model: str, expected: Sequence[str]) -> None:
    """Raise ModelContractError unless every name in ``expected`` is an output."""
    found = output_names(session)
    missing = [name for name in expected if name not in found]
    if missing:
        raise ModelContractError(f"{model}: the ONNX graph lacks outputs {missing} (it has {found}); {_REINSTALL}")


def require_output_count(session: OnnxSession, model: str, count: int) -> list[str]:
    """Return the output names, raising ModelContractError unless there are ``count``."""
    found = output_names(session)
    if len(found) != count:
        raise ModelContractError(f"{model}: the ONNX graph has {len(found)} outputs {found}, expected {count}; {_REINSTALL}")
    return found


def run_model(session: OnnxSession, model: str, outputs: Sequence[str], feeds: Mapping[str, np.ndarray]) -> list[np.ndarray]:
    """Run the session and return its outputs as numpy float32 arrays."""
    try:
        results = session.run(list(outputs), dict(feeds))
    except Exception as error:  # ONNX Runtime raises its own exception types
        raise ModelRunError(
            f"{model}: ONNX Runtime failed ({error}); if the model file was replaced or damaged, reinstall it, "
            "otherwise try the CPU execution provider"
        ) from error
    return [np.asarray(result, dtype=np.float32) for result in results]


def contract_error(model: str, what: str) -> ModelContractError:
    """A ModelContractError for an output of unexpected shape or content."""
    return ModelContractError(f"{model}: {what}; {_REINSTALL}")


def static_input_hw(session: OnnxSession, name: str) -> tuple[int | None, int | None]:
    """(height, width) of an NCHW input when the graph fixes them, else None for each."""
    for item in session.get_inputs():
        if item.name == name:
            shape = list(getattr(item, "shape", None) or [])
            if len(shape) == 4:
                return tuple(dim if isinstance(dim, int) and dim > 0 else None for dim in shape[2:4])  # type: ignore[return-value]
    return None, None


def has_batch_axis(session: OnnxSession, name: str) -> bool:
    """Whether the graph leaves the input's first (batch) dimension open, so several faces can
    go through one run; a graph fixing it (to 1) takes one face a run."""
    for item in session.get_inputs():
        if item.name == name:
            shape = list(getattr(item, "shape", None) or [])
            return bool(shape) and not (isinstance(shape[0], int) and shape[0] > 0)
    return False


def run_batched(session: OnnxSession, model: str, outputs: Sequence[str], name: str, blobs: np.ndarray,
                batched: bool) -> list[np.ndarray]:
    """`run_model` over (N, ...) inputs: one run when the graph has a batch axis (`has_batch_axis`),
    else one run per item with the results stacked; outputs are (N, ...) either way."""
    if batched or len(blobs) == 1:
        return run_model(session, model, outputs, {name: blobs})
    runs = [run_model(session, model, outputs, {name: blobs[i:i + 1]}) for i in range(len(blobs))]
    return [np.concatenate([run[k] for run in runs]) for k in range(len(outputs))]
