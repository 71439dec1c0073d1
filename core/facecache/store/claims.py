"""Claims on chunks of work, so processes sharing a cache (a studio NAS, a render farm) do not
compute the same segment at once.

A claim is a `Lease` (O_EXCL file with an expiry) under `<cache>/locks/claims/`, named after
what it covers (a namespace and a segment's group). The holder renews it while it works; a
holder that dies stops renewing, its claim expires after `ttl` seconds and the next claimant
takes it over. A claim only prevents duplicate work: correctness never depends on it (packs
are write-once and content-addressed; outputs are written atomically).

Analysis and swapping claim separately: a swap job holds the segment's swap claim and its
analysis claim, so two teammates swapping different faces onto one shot, or a render node
running `facecache analyze`, do not analyse the same frames at once either.

With a remote tier that may be written, each claim is also taken in the bucket (`remote_claims.py`), so
nodes that share only the bucket split the work the same way.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import deque
from pathlib import Path
from typing import Callable, Iterable, TypeVar

from facecache.errors import cannot_write
from facecache.fingerprint import is_digest
from facecache.permissions import make_dir
from facecache.store.cache import FaceCache
from facecache.store.lease import Lease
from facecache.store.remote_claims import RemoteClaim, try_remote_claim

log = logging.getLogger("facecache.claims")

DEFAULT_CLAIM_TTL = 60.0
DEFAULT_POLL_SECONDS = 0.5
CLAIM_SUFFIX = ".claim"

Item = TypeVar("Item")


class HeldClaim:
    """Claims this process holds; `keep_alive()` renews them once a third of their ttl has passed."""

    def __init__(self, leases: list[Lease | RemoteClaim], ttl: float):
        self._leases = leases  # local leases and claims in the remote tier's bucket, renewed alike
        self._ttl = ttl
        self._renewed = time.monotonic()
        self.lost = False

    def keep_alive(self) -> None:
        if self.lost or time.monotonic() - self._renewed < self._ttl / 3:
            return
        for lease in self._leases:
            try:
                renewed = lease.renew()
            except OSError as exc:
                log.warning("could not renew the claim %s (%s); will retry", lease.path, exc)
                return
            if not renewed:
                # We stalled past the ttl and someone took the chunk over: our results are still
                # correct (write-once), the work may just be done twice.
                self.lost = True
                log.warning("the claim %s expired while this process worked on it", lease.path.name)
        self._renewed = time.monotonic()

    def release(self) -> None:
        for lease in self._leases:
            try:
                lease.release()
            except OSError as exc:  # it expires on its own
                log.warning("could not release the claim %s (%s)", lease.path, exc)

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
        folder = cache.inside("locks", "claims") if cache.storing else None  # never through a symlink
        self.folder = folder or cache.root / "locks" / "claims"
        self.usable = folder is not None  # without claims, work goes on (they only prevent duplicate work)
        if self.usable:
            try:
                make_dir(self.folder, cache.perms)
            except OSError as exc:
                self._give_up(exc)

    def _give_up(self, exc: OSError) -> None:
        """Claims cannot be written where the cache is: the cache cannot take new files either (one
        warning, from the cache); work goes on without claims."""
        if not cannot_write(exc):
            raise exc
        self.usable = False
        self.cache.stop_storing(exc)

    def path(self, *keys: str) -> Path:
        if not all(is_digest(key) for key in keys):
            raise ValueError("claim keys must be 32 hex digits")
        return self.folder / ("-".join(keys) + CLAIM_SUFFIX)

    def try_claim(self, *keys: str) -> HeldClaim | None:
        """The claim on `keys`, or None while another live process holds it."""
        return self.try_claim_all(keys)

    def try_claim_all(self, *claims: tuple[str, ...]) -> HeldClaim | None:
        """All of `claims` (each a tuple of keys) or none: None while another live process holds
        any of them (those taken meanwhile are released again)."""
        taken: list[Lease | RemoteClaim] = []
        for keys in claims:
            if not self.usable:
                break
            try:
                lease = Lease.acquire(self.path(*keys), self.ttl, self.cache.perms)
            except OSError as exc:
                self._give_up(exc)
                break
            if lease is None:
                HeldClaim(taken, self.ttl).release()
                return None
            taken.append(lease)
        if not self.usable:  # claims became impossible: hold none rather than some
            HeldClaim(taken, self.ttl).release()
            taken = []
        remote = self.cache.remote
        for keys in claims if remote is not None and remote.writable else ():
            claim = try_remote_claim(remote, keys, self.ttl)
            if claim is None:  # another node holds it
                HeldClaim(taken, self.ttl).release()
                return None
            taken.append(claim)
        return HeldClaim(taken, self.ttl)


def work_through(items: Iterable[Item], attempt: Callable[[Item], bool], poll_seconds: float = DEFAULT_POLL_SECONDS,
                 cancel: threading.Event | None = None, before_retry: Callable[[], None] | None = None) -> None:
    """Call `attempt` on every item. An attempt that returns False (another live process holds
    the item's claim) is tried again after the other items, waiting `poll_seconds` whenever
    only such items are left: the holder's results then show up in the cache, and a dead
    holder's claim expires, so nothing is waited on forever. Stops early when `cancel` is set."""
    queue: deque[Item] = deque(items)
    held: list[Item] = []
    while queue or held:
        if cancel is not None and cancel.is_set():
            return
        if not queue:
            if cancel is not None and cancel.wait(poll_seconds):
                return
            if cancel is None:
                time.sleep(poll_seconds)
            if before_retry is not None:
                before_retry()
            queue.extend(held)
            held.clear()
        item = queue.popleft()
        if not attempt(item):
            held.append(item)
