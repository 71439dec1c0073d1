"""Claims on chunks of work, so processes sharing a cache (a studio NAS, a render farm) do not
compute the same segment at once.

A claim is a `Lease` (O_EXCL file with an expiry) under `<cache>/locks/claims/`, named after
what it covers (e.g. the swap namespace and the segment's group). The holder renews it while it
works; a holder that dies stops renewing, its claim expires after `ttl` seconds and the next
claimant takes it over. A claim only prevents duplicate work: correctness never depends on it
(packs are write-once and content-addressed; outputs are written atomically).
"""

from __future__ import annotations

import logging
import time
from pathlib import Path

from facecache.fingerprint import is_digest
from facecache.store.cache import FaceCache
from facecache.store.lease import Lease
from facecache.store.permissions import make_dir

log = logging.getLogger("facecache.claims")

DEFAULT_CLAIM_TTL = 60.0
CLAIM_SUFFIX = ".claim"


class HeldClaim:
    """A claim this process holds; `keep_alive()` renews it once a third of its ttl has passed."""

    def __init__(self, lease: Lease, ttl: float):
        self._lease = lease
        self._ttl = ttl
        self._renewed = time.monotonic()
        self.lost = False

    def keep_alive(self) -> None:
        if self.lost or time.monotonic() - self._renewed < self._ttl / 3:
            return
        try:
            renewed = self._lease.renew()
        except OSError as exc:
            log.warning("could not renew the claim %s (%s); will retry", self._lease.path, exc)
            return
        self._renewed = time.monotonic()
        if not renewed:
            # We stalled past the ttl and someone took the chunk over: our results are still
            # correct (write-once), the work may just be done twice.
            self.lost = True
            log.warning("the claim %s expired while this process worked on it", self._lease.path.name)

    def release(self) -> None:
        try:
            self._lease.release()
        except OSError as exc:  # it expires on its own
            log.warning("could not release the claim %s (%s)", self._lease.path, exc)

    def __enter__(self) -> "HeldClaim":
        return self

    def __exit__(self, *exc) -> None:
        self.release()


class ClaimBook:
    """Claims under one cache folder."""

    def __init__(self, cache: FaceCache, ttl: float = DEFAULT_CLAIM_TTL):
        if ttl <= 0:
            raise ValueError("a claim's ttl must be positive")
        self.cache = cache
        self.ttl = float(ttl)
        self.folder = cache.root / "locks" / "claims"
        make_dir(self.folder, cache.perms)

    def path(self, *keys: str) -> Path:
        if not all(is_digest(key) for key in keys):
            raise ValueError("claim keys must be 32 hex digits")
        return self.folder / ("-".join(keys) + CLAIM_SUFFIX)

    def try_claim(self, *keys: str) -> HeldClaim | None:
        """The claim on `keys`, or None while another live process holds it."""
        lease = Lease.acquire(self.path(*keys), self.ttl, self.cache.perms)
        return None if lease is None else HeldClaim(lease, self.ttl)
