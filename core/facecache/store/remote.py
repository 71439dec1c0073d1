"""The remote tier: packs in an S3-compatible bucket (AWS S3, SeaweedFS, MinIO, Ceph), behind the local cache.

Packs are write-once and named by their content digest, so they map one to one onto objects:

    s3://<bucket>/<prefix>/ns/<namespace>/<group>/<digest>.fcp

A group is listed with one LIST request; packs the local cache lacks are fetched, their digest checked
by the caller (`FaceCache.read_group`), and kept locally. New packs are uploaded with `If-None-Match: *`:
an object that exists is never replaced, and an S3 PUT is atomic (a cancelled or killed upload leaves
no object at all, never a partial one), so no object ever claims to be whole when it is not.

Requests are signed by botocore (the AWS SDK's core), which also reads the standard AWS configuration:
the environment, `~/.aws/config` and `credentials`, `AWS_PROFILE`, and `AWS_ENDPOINT_URL` for
S3-compatible servers. Nothing of it is stored or printed here.

Faults never stop a job. A remote that cannot be reached, is slow or answers with server errors is
dropped for the rest of the run with one warning; wrong credentials, a missing bucket or no permission
give one line that says what to fix (no write permission stops uploads only).
"""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass, field
from typing import Any, Callable

from facecache.errors import BadValue
from facecache.fingerprint import is_digest
from facecache.store import packfile
from facecache.store.layout import PACK_SUFFIX

log = logging.getLogger("facecache.remote")

REMOTE_CACHE_ENV = "FACECACHE_REMOTE_CACHE"
INSTALL_HINT = ("install the engine's remote extra: pip install 'facecache[remote]' (botocore); in Blender, "
                "install remote cache support in the preferences")
_BUCKET_NAME = re.compile(r"^[a-z0-9][a-z0-9.\-]{1,61}[a-z0-9]\Z")
# Short timeouts and few retries: a slow remote must cost a job seconds, not minutes, before it is dropped.
_CONNECT_SECONDS = 5
_READ_SECONDS = 30
_ATTEMPTS = 2
_BAD_CREDENTIALS = {"InvalidAccessKeyId", "SignatureDoesNotMatch", "InvalidToken", "ExpiredToken",
                    "AuthorizationHeaderMalformed", "InvalidClientTokenId"}
_DENIED = {"AccessDenied", "AllAccessDisabled", "Forbidden", "403"}
_NO_BUCKET = {"NoSuchBucket"}
_MISSING = {"NoSuchKey", "404", "NotFound"}
_EXISTS = {"PreconditionFailed", "412", "ConditionalRequestConflict"}


@dataclass(frozen=True)
class RemoteURL:
    """`s3://bucket/prefix`, checked."""

    bucket: str
    prefix: str  # without slashes at either end; may be empty

    @classmethod
    def parse(cls, text: str) -> "RemoteURL":
        scheme, sep, rest = text.strip().partition("://")
        bucket, _, prefix = rest.partition("/")
        if not sep or scheme.lower() != "s3" or not _BUCKET_NAME.match(bucket):
            raise BadValue(f"not a remote cache URL: {text!r}: write s3://bucket/prefix (a bucket name of "
                           "3-63 lowercase letters, digits, dots and dashes)")
        return cls(bucket, prefix.strip("/"))

    def __str__(self) -> str:
        return f"s3://{self.bucket}/{self.prefix}" if self.prefix else f"s3://{self.bucket}"

    def key(self, *parts: str) -> str:
        return "/".join((self.prefix, *parts) if self.prefix else parts)


def remote_from(url: str | None, read_only: bool = False) -> "RemoteTier | None":
    """The remote tier of a URL (a job's `remote_cache` setting); None when it is unset or empty. The command
    line fills the setting from FACECACHE_REMOTE_CACHE; the extension sends it in each job's settings (its
    Remote Cache preference, else that variable on a farm). The engine reads no variable for it: a job reaches
    a bucket only when its settings name one."""
    return RemoteTier(RemoteURL.parse(url), read_only=read_only) if url and url.strip() else None


@dataclass
class RemoteCounters:
    """What this run took from and gave to the remote tier (a job's summary and report)."""

    groups_listed: int = 0
    packs_fetched: int = 0
    bytes_fetched: int = 0
    packs_uploaded: int = 0
    bytes_uploaded: int = 0
    packs_set_aside: int = 0

    def as_dict(self) -> dict[str, int]:
        return dict(self.__dict__)


@dataclass(frozen=True)
class RemoteInventory:
    """The packs the bucket holds under the prefix (`facecache cache stats`); reachable: False after a fault."""

    packs: int
    bytes: int
    reachable: bool

    def as_dict(self) -> dict:
        return dict(self.__dict__)


@dataclass
class RemoteTier:
    """One bucket and prefix. `usable` turns off for the run on the first fault (one warning);
    `writable` turns off when uploads are refused, or from the start for read-only render nodes."""

    url: RemoteURL
    read_only: bool = False
    counters: RemoteCounters = field(default_factory=RemoteCounters)
    usable: bool = True
    warnings: list[str] = field(default_factory=list)  # said once each in the log, and in the job's summary
    _client: Any = field(default=None, init=False, repr=False)
    _bad: set[str] = field(default_factory=set, init=False, repr=False)  # corrupt objects' keys: never fetched again

    @property
    def writable(self) -> bool:
        return self.usable and not self.read_only

    # -- the client ------------------------------------------------------------------------------

    def _s3(self):
        """botocore's S3 client, made on first use (reading the AWS configuration then)."""
        if self._client is None:
            import botocore.session
            from botocore.config import Config

            session = botocore.session.get_session()
            # Path-style addressing works with every S3-compatible server; AWS S3 accepts it too.
            config = Config(connect_timeout=_CONNECT_SECONDS, read_timeout=_READ_SECONDS,
                            retries={"max_attempts": _ATTEMPTS, "mode": "standard"},
                            s3={"addressing_style": "path"})
            self._client = session.create_client("s3", config=config)
        return self._client

    # -- reading ---------------------------------------------------------------------------------

    def list_group(self, namespace_key: str, group: str) -> list[str]:
        """The names (digests) of the group's packs in the bucket; none when the tier is off."""
        if not self.usable:
            return []
        folder = self.url.key("ns", namespace_key, group) + "/"
        names: list[str] = []
        found = self._list(folder)
        if found is None:
            return []
        self.counters.groups_listed += 1
        for item in found:
            name = item["Key"][len(folder):]
            if name.endswith(PACK_SUFFIX) and is_digest(name[:-len(PACK_SUFFIX)]) and item["Key"] not in self._bad:
                names.append(name[:-len(PACK_SUFFIX)])
        return names

    def fetch(self, namespace_key: str, group: str, name: str) -> bytes | None:
        """A pack's bytes as the bucket holds them (unchecked: the caller checks the digest); None when
        it is gone (replaced by a merged pack meanwhile) or the tier is off."""
        key = self._pack_key(namespace_key, group, name)
        # one byte over the limit is enough for the check to refuse an oversized object
        data = self._call("read", lambda s3: s3.get_object(Bucket=self.url.bucket, Key=key)["Body"].read(
            packfile.MAX_PACK_BYTES + 1))
        if data is not None:
            self.counters.packs_fetched += 1
            self.counters.bytes_fetched += len(data)
        return data

    def set_aside(self, namespace_key: str, group: str, name: str, reason: str) -> None:
        """A fetched pack failed its checks: never served, never fetched again in this run, and removed
        from the bucket where this node may write (its content is computed again, and uploaded under its
        true digest). The caller keeps its bytes in the local quarantine."""
        key = self._pack_key(namespace_key, group, name)
        self._bad.add(key)
        self.counters.packs_set_aside += 1
        self._warn(f"set aside the remote pack {self.url.bucket}/{key}: {reason}; its frames are computed again")
        self.delete(key)

    def inventory(self) -> "RemoteInventory":
        """The packs under the prefix and their bytes (`facecache cache stats`)."""
        found = self._list(self.url.key("ns") + "/")
        packs = [item for item in found or () if item["Key"].endswith(PACK_SUFFIX)]
        return RemoteInventory(len(packs), sum(int(item["Size"]) for item in packs), found is not None)

    def _list(self, prefix: str) -> list[dict] | None:
        """Every object under a prefix (`Key`, `Size`, ...); None on a fault."""
        found = self._call("list", lambda s3: s3.get_paginator("list_objects_v2").paginate(
            Bucket=self.url.bucket, Prefix=prefix).build_full_result())
        return None if found is None else found.get("Contents", [])

    # -- writing ---------------------------------------------------------------------------------

    def upload(self, namespace_key: str, group: str, name: str, data: bytes) -> None:
        """Upload a new pack, write-once (`create`)."""
        if self.writable and self.create(self._pack_key(namespace_key, group, name), data):
            self.counters.packs_uploaded += 1
            self.counters.bytes_uploaded += len(data)

    def remove(self, namespace_key: str, group: str, names: list[str]) -> None:
        """Delete packs whose records now live in a pack this node uploaded (a group's merged pack), so a
        node fetching the group downloads them once. A reader that listed one gets nothing for it and
        reads the merged pack."""
        for name in names:
            self.delete(self._pack_key(namespace_key, group, name))

    # -- single objects (packs, claims) -------------------------------------------------------------

    def create(self, key: str, data: bytes) -> bool:
        """Write an object that must not exist yet (`If-None-Match: *`); False when it exists, or on a fault."""
        return self.writable and self._call("write", lambda s3: s3.put_object(
            Bucket=self.url.bucket, Key=key, Body=bytes(data), IfNoneMatch="*")) is not None

    def put(self, key: str, data: bytes) -> None:
        if self.writable:
            self._call("write", lambda s3: s3.put_object(Bucket=self.url.bucket, Key=key, Body=bytes(data)))

    def delete(self, key: str) -> None:
        if self.writable:
            self._call("write", lambda s3: s3.delete_object(Bucket=self.url.bucket, Key=key))

    def read(self, key: str, limit: int) -> tuple[bytes, str] | None:
        """A small object's bytes (at most `limit`) and its ETag; None when missing or on a fault."""
        def get(s3):
            answer = s3.get_object(Bucket=self.url.bucket, Key=key)
            return answer["Body"].read(limit), answer.get("ETag", "")

        return self._call("read", get)

    def _pack_key(self, namespace_key: str, group: str, name: str) -> str:
        if not (is_digest(namespace_key) and is_digest(group) and is_digest(name)):
            raise ValueError("namespace, group and pack names must be 32 hex digits")
        return self.url.key("ns", namespace_key, group, name + PACK_SUFFIX)

    # -- faults ----------------------------------------------------------------------------------

    def _call(self, doing: str, request: Callable[[Any], Any]):
        """`request(client)`; a fault is reported once and turns the tier (or its uploads) off: None then.
        A key that is missing (or, on a write-once upload, already there) is None without a fault."""
        if not self.usable:
            return None
        try:
            from botocore.exceptions import (BotoCoreError, ClientError, ConnectionError, HTTPClientError,
                                             NoCredentialsError, PartialCredentialsError)
        except ImportError:
            self._turn_off(f"the remote cache {self.url} needs botocore: {INSTALL_HINT}; going on with the "
                           "local cache only")
            return None
        try:
            return request(self._s3())  # the client is made here: a profile that does not exist is found now
        except ClientError as exc:
            code = str(exc.response.get("Error", {}).get("Code", ""))
            status = exc.response.get("ResponseMetadata", {}).get("HTTPStatusCode")
            if code in _MISSING or (doing == "write" and code in _EXISTS):
                return None
            self._refused(doing, code, status)
        except (NoCredentialsError, PartialCredentialsError):
            self._turn_off(f"the remote cache {self.url} has no AWS credentials: set AWS_ACCESS_KEY_ID and "
                           "AWS_SECRET_ACCESS_KEY, or AWS_PROFILE with a profile in ~/.aws/credentials; "
                           "going on with the local cache only")
        except (ConnectionError, HTTPClientError, OSError) as exc:
            self._turn_off(f"the remote cache {self.url} cannot be reached ({type(exc).__name__}); "
                           "going on with the local cache only")
        except BotoCoreError as exc:  # the AWS configuration itself (a missing profile, ...): its own words
            self._turn_off(f"the remote cache {self.url} cannot be used: {exc}; fix the AWS configuration "
                           "(AWS_PROFILE, ~/.aws/config); going on with the local cache only")
        return None

    def _refused(self, doing: str, code: str, status: int | None) -> None:
        if code in _BAD_CREDENTIALS:
            self._turn_off(f"the remote cache {self.url} refused the AWS credentials ({code}): check "
                           "AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY (or the profile in ~/.aws/credentials, "
                           "AWS_PROFILE) and AWS_ENDPOINT_URL; going on with the local cache only")
        elif code in _NO_BUCKET:
            self._turn_off(f"the bucket of the remote cache {self.url} does not exist: create it, or fix "
                           f"--remote-cache / {REMOTE_CACHE_ENV} (and AWS_ENDPOINT_URL); going on with the local "
                           "cache only")
        elif code in _DENIED and doing == "write":
            if not self.read_only:
                self.read_only = True
                self._warn(f"no permission to write to the remote cache {self.url} ({code}): grant s3:PutObject "
                           "and s3:DeleteObject on it, or run read-only (--remote-read-only); its packs are "
                           "still read")
        elif code in _DENIED:
            self._turn_off(f"no permission to read the remote cache {self.url} ({code}): grant s3:ListBucket "
                           "and s3:GetObject on it; going on with the local cache only")
        else:  # server errors (500, 503 SlowDown, ...): as good as unreachable for this run
            self._turn_off(f"the remote cache {self.url} answered with an error ({code or status}); going on "
                           "with the local cache only")

    def _turn_off(self, message: str) -> None:
        if self.usable:
            self.usable = False
            self._warn(message)

    def _warn(self, message: str) -> None:
        """Said in the log (the command line's stderr) and kept for the job's summary, which is all an editor
        in Blender sees of the engine."""
        log.warning(message)
        self.warnings.append(message)
