"""File operations that stay safe on network filesystems."""

from __future__ import annotations

import os
import secrets
from pathlib import Path

DOOMED_PREFIX = ".del-"


def delete_file(path: Path) -> None:
    """Rename first, then unlink: unlink is not atomic on NFS (a reader once got a truncated
    object), a rename is. A file already gone is fine."""
    doomed = path.with_name(f"{DOOMED_PREFIX}{secrets.token_hex(6)}")
    try:
        os.rename(path, doomed)
    except FileNotFoundError:
        return
    try:
        os.unlink(doomed)
    except FileNotFoundError:
        pass
