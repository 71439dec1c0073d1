"""The forms a model file's graph can run in on ONNX Runtime's CPU provider (`ModelFile.cpu_graph`).

- "" : the file as it is;
- "prelu_split": PRelu as faster element-wise nodes, the same numbers to the bit (`prelu_split`);
- "blocked_prelu": PRelu and zero channel padding as nodes ONNX Runtime keeps in its blocked layout,
  faster still, with numbers that differ in the last bits (`blocked_prelu`).
A form whose numbers differ is part of the analysis namespace (`analysis.factory`), so records made
with the file as it is are never served for it, nor the other way round. GPU providers get the file
as it is: their own kernels have no such slow paths.
"""

from __future__ import annotations

from facecache.models.blocked_prelu import blocked_prelu
from facecache.models.prelu_split import split_prelu

FORMS = {"": lambda model: model, "prelu_split": split_prelu, "blocked_prelu": blocked_prelu}
SAME_NUMBERS = frozenset({"", "prelu_split"})


def cpu_form(model: bytes, form: str) -> bytes:
    """The model's bytes in `form` (one of the names above)."""
    return FORMS[form](model)
