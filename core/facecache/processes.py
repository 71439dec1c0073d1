"""Who wrote a file: this machine's tag and whether a process on it still exists.

Leases and temp files name their writer, so that leftovers of a process that died on this
machine can be cleaned up at once. Writers on other machines (a teammate on the NAS) cannot
be asked; their leftovers are judged by age alone.
"""

from __future__ import annotations

import os
import socket

import xxhash


def host_tag() -> str:
    """8 hex digits naming this machine, safe in file names on every OS."""
    return xxhash.xxh3_64_hexdigest(socket.gethostname().encode("utf-8"))[:8]


def local_process_is_gone(pid: int) -> bool:
    """True when no process `pid` exists on this machine. A reused pid reads as alive (the
    caller then waits for an expiry: the safe side); so does our own pid."""
    if pid <= 0 or pid == os.getpid():
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except OSError:
        return False  # alive, owned by another user (or a platform that cannot tell)
    return False
