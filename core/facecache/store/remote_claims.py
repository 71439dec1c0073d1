"""Claims in the remote tier's bucket, so nodes that share only the bucket (no folder) do not compute the
same segment at once: the object protocol of `lease.py`'s files.

    s3://<bucket>/<prefix>/claims/<keys>.claim                 {"owner", "expires"} (msgpack)
    s3://<bucket>/<prefix>/claims/<keys>.claim.takeover-<etag> who took over that stale claim

A claim is created with a conditional PUT (`If-None-Match: *`): of two nodes, one gets it and the other
gets 412. A claim past its expiry (its holder died) is taken over by the one node that creates, also
conditionally, the takeover marker named after that claim's ETag: it deletes the stale claim and creates
its own; the others are busy. Markers are never deleted by the protocol (a late contender could otherwise
take over the new claim): a bucket lifecycle rule on `claims/` removes them (docs/cache.md).

Where the server ignores `If-None-Match`, two nodes may both think they hold a claim: a segment is then
computed twice, never served wrongly (packs are write-once and content-named). Expiry compares wall clocks
of different machines; a skew of seconds against the 60 s ttl only shortens or lengthens a wait.
"""

from __future__ import annotations

import secrets
import socket
import time
from dataclasses import dataclass
from pathlib import PurePosixPath

import msgpack

from facecache.fingerprint import is_digest
from facecache.store.remote import RemoteTier

_MAX_CLAIM_BYTES = 4096


@dataclass
class RemoteClaim:
    """A claim this node holds in the bucket."""

    tier: RemoteTier
    key: str
    owner: str
    ttl: float
    holds: bool = True  # False: a claim of nothing, where the tier cannot take claims

    @property
    def path(self) -> PurePosixPath:
        """Where it is in the bucket (what HeldClaim's messages name, as a lease's file)."""
        return PurePosixPath(self.tier.url.bucket, self.key)

    def renew(self) -> bool:
        """Push the expiry forward; False when the claim was taken over meanwhile (we stalled past the ttl)."""
        if not self.holds:
            return True
        current = _read(self.tier, self.key)
        if current is None or current[0].get("owner") != self.owner:
            return False
        self.tier.put(self.key, _claim_bytes(self.owner, self.ttl))
        return True

    def release(self) -> None:
        if not self.holds:
            return
        current = _read(self.tier, self.key)
        if current is not None and current[0].get("owner") == self.owner:
            self.tier.delete(self.key)


def claim_key(tier: RemoteTier, keys: tuple[str, ...]) -> str:
    if not all(is_digest(key) for key in keys):
        raise ValueError("claim keys must be 32 hex digits")
    return tier.url.key("claims", "-".join(keys) + ".claim")


def try_remote_claim(tier: RemoteTier, keys: tuple[str, ...], ttl: float) -> RemoteClaim | None:
    """The claim on `keys` in the bucket, or None while another live node holds it. A tier that cannot
    take claims (read-only, or off after a fault) gives a claim of nothing: work goes on without one."""
    key = claim_key(tier, keys)
    owner = f"{socket.gethostname()}:{secrets.token_hex(6)}"
    for _attempt in range(2):
        if not tier.writable:
            return RemoteClaim(tier, key, owner, ttl, holds=False)
        if tier.create(key, _claim_bytes(owner, ttl)):
            return RemoteClaim(tier, key, owner, ttl)
        current = _read(tier, key)
        if current is None:
            continue  # released meanwhile: try again
        claim, etag = current
        expires = claim.get("expires")
        if isinstance(expires, (int, float)) and expires > time.time():
            return None  # held by a live node
        # Stale: only the node that creates this claim's takeover marker replaces it.
        marker = f"{key}.takeover-" + etag.strip('"')  # ETags come quoted
        if not tier.create(marker, owner.encode()):
            return None
        tier.delete(key)
    return None


def _claim_bytes(owner: str, ttl: float) -> bytes:
    return msgpack.packb({"owner": owner, "expires": time.time() + ttl})


def _read(tier: RemoteTier, key: str) -> tuple[dict, str] | None:
    """The claim's content and ETag; an unreadable claim reads as expired (its holder wrote nothing whole)."""
    found = tier.read(key, _MAX_CLAIM_BYTES)
    if found is None:
        return None
    data, etag = found
    try:
        claim = msgpack.unpackb(data, raw=False, strict_map_key=True)
    except Exception:
        claim = None
    return (claim if isinstance(claim, dict) else {}), etag
