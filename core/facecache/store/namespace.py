"""Namespaces: what a cached result depends on besides the frame itself.

A namespace is the digest of the stage name, the exact model files' digests,
the settings that change results and the record format version. Change any of
them and the results live in a new namespace folder: nothing old is served,
and the old folder is pruned when it goes stale, never mixed with the new.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping

import msgpack

from facecache.fingerprint import bytes_digest


@dataclass(frozen=True)
class Namespace:
    stage: str
    models: Mapping[str, str] = field(default_factory=dict)
    settings: Mapping[str, Any] = field(default_factory=dict)
    format_version: int = 1

    def describe(self) -> dict:
        """A plain, canonical description (sorted keys), stored beside the packs."""
        return {
            "stage": self.stage,
            "models": dict(sorted(self.models.items())),
            "settings": _canonical(self.settings),
            "format_version": self.format_version,
        }

    @property
    def key(self) -> str:
        return bytes_digest(msgpack.packb(self.describe(), use_bin_type=True))


def _canonical(value: Any) -> Any:
    """Sorted maps and lists, so equal settings always give equal bytes."""
    if isinstance(value, Mapping):
        return {str(k): _canonical(v) for k, v in sorted(value.items(), key=lambda kv: str(kv[0]))}
    if isinstance(value, (list, tuple)):
        return [_canonical(v) for v in value]
    return value
