"""Is a file the ONNX model its catalog name claims?

onnxruntime itself loads the bytes (the `onnx` package is not needed at run time), then the
graph's inputs and outputs are compared with the catalog's contract for that name. Used when a
folder is imported and whenever a file without a reference hash is checked.
"""

from __future__ import annotations

from facecache.models.catalog import Contract
from facecache.models.runtime_import import import_onnxruntime


def contract_problem(data: bytes, name: str, contract: Contract) -> str | None:
    """None when `data` loads as ONNX and fits `contract`, else why not (one short clause)."""
    ort = import_onnxruntime()
    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL  # only the interface matters
    options.intra_op_num_threads = 1
    options.log_severity_level = 4  # the reason is reported here, not in onnxruntime's own log
    try:
        session = ort.InferenceSession(data, sess_options=options, providers=["CPUExecutionProvider"])
    except Exception as exc:  # onnxruntime raises its own exception types
        detail = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        return f"it does not load as an ONNX model ({detail[:160]})"
    inputs = [item.name for item in session.get_inputs()]
    outputs = [item.name for item in session.get_outputs()]
    if sorted(inputs) != sorted(contract.inputs):
        return f"its inputs are {inputs}, but {name} has {list(contract.inputs)}"
    missing = [output for output in contract.outputs if output not in outputs]
    if missing:
        return f"it lacks the outputs {missing} of {name} (it has {outputs})"
    if contract.output_count is not None and len(outputs) != contract.output_count:
        return f"it has {len(outputs)} outputs, but {name} has {contract.output_count}"
    return None
