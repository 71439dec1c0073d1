"""HTTP downloads that resume: bytes go to `NAME.part`; an interrupted download continues
from where it stopped with an HTTP Range request (immediately, a few times, and again on the
next run), and only a complete file is handed back.

Uses urllib only (proxy variables are honoured as urllib does).
"""

from __future__ import annotations

import http.client
import os
import re
import socket
import urllib.error
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from facecache import __version__
from facecache.errors import DownloadError
from facecache.files import make_folders

CHUNK = 256 * 1024
USER_AGENT = f"facecache/{__version__}"


@dataclass(frozen=True)
class Progress:
    """One progress report: `done` of `total` bytes of `file` (total is None when the server does not say)."""

    file: str
    done: int
    total: int | None
    resumed_from: int = 0
    model: str = ""


ProgressCallback = Callable[[Progress], None]

_CONTENT_RANGE = re.compile(r"bytes (\d+)-(\d+)/(\d+|\*)")
_NETWORK_ERRORS = (urllib.error.URLError, http.client.HTTPException, ConnectionError, socket.timeout, TimeoutError)


def fetch_small(url: str, timeout: float = 30.0, limit: int = 4096) -> bytes:
    """GET a small resource (a hash sidecar) into memory."""
    request = urllib.request.Request(url, headers={"User-Agent": USER_AGENT})
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            data = response.read(limit + 1)
    except urllib.error.HTTPError as exc:
        raise DownloadError(f"{url} answered HTTP {exc.code} {exc.reason}; check the URL "
                            "(FACECACHE_MODELS_URL if you set it) and try again") from None
    except _NETWORK_ERRORS as exc:
        raise DownloadError(f"cannot download {url} ({_reason(exc)}); check your network and try again") from None
    if len(data) > limit:
        raise DownloadError(f"{url} is larger than {limit} bytes; it is not a hash sidecar, check the URL")
    return data


def download_resumable(url: str, part: Path, progress: ProgressCallback | None = None,
                       retries: int = 3, timeout: float = 60.0) -> Path:
    """Download `url` into the file `part` (conventionally `NAME.part`), resuming it when it exists.

    Returns `part` once the whole body has arrived (length checked against the server's
    Content-Length / Content-Range); the caller verifies it and renames it into place.
    After `retries` failed resumptions a `DownloadError` says to run the command again;
    the part file is kept so that run resumes.
    """
    part = Path(part)
    make_folders(part.parent)
    last_error = ""
    for _attempt in range(retries + 1):
        try:
            if _transfer(url, part, progress, timeout):
                return part
            last_error = "the connection closed before the end of the file"
        except _NETWORK_ERRORS as exc:
            if isinstance(exc, urllib.error.HTTPError):
                raise DownloadError(f"{url} answered HTTP {exc.code} {exc.reason}; check the URL "
                                    "(FACECACHE_MODELS_URL if you set it) and try again") from None
            last_error = _reason(exc)
    have = part.stat().st_size if part.exists() else 0
    raise DownloadError(f"download of {url} stopped ({last_error}) after {have} bytes; the part is kept in "
                        f"{part}, run the same command again to resume")


def _transfer(url: str, part: Path, progress: ProgressCallback | None, timeout: float) -> bool:
    """One request. True when `part` now holds the complete body."""
    offset = part.stat().st_size if part.exists() else 0
    headers = {"User-Agent": USER_AGENT, "Accept-Encoding": "identity"}
    if offset:
        headers["Range"] = f"bytes={offset}-"
    request = urllib.request.Request(url, headers=headers)
    try:
        response = urllib.request.urlopen(request, timeout=timeout)
    except urllib.error.HTTPError as exc:
        if exc.code == 416 and offset:  # our part is as long as (or longer than) the file
            total = _total_from_content_range(exc.headers.get("Content-Range", ""))
            exc.close()
            if total is not None and total == offset:
                return True
            part.unlink()  # longer than the file or unknown: start over
            return False
        raise
    with response:
        status = response.status
        if status == 206:
            match = _CONTENT_RANGE.match(response.headers.get("Content-Range", ""))
            if not match or int(match.group(1)) != offset:
                part.unlink()  # the server answered another range than asked: start over
                return False
            total = None if match.group(3) == "*" else int(match.group(3))
            mode = "ab"
        else:  # 200: the server sent the whole file (it ignores Range, or we asked for none)
            offset = 0
            length = response.headers.get("Content-Length")
            total = int(length) if length and length.isdigit() else None
            mode = "wb"
        done = offset
        resumed_from = offset
        if progress:
            progress(Progress(_file_name(part), done, total, resumed_from))
        with open(part, mode) as out:
            try:
                while chunk := response.read(CHUNK):
                    out.write(chunk)
                    done += len(chunk)
                    if progress:
                        progress(Progress(_file_name(part), done, total, resumed_from))
            except http.client.IncompleteRead as exc:  # keep what arrived before the drop
                out.write(exc.partial)
                raise
            finally:
                out.flush()
                os.fsync(out.fileno())
    if total is None:
        return True  # no length to check against: a clean end of stream is the end
    if done > total:
        part.unlink()
        return False
    return done == total


def _file_name(part: Path) -> str:
    return part.name[: -len(".part")] if part.name.endswith(".part") else part.name


def _total_from_content_range(value: str) -> int | None:
    match = re.match(r"bytes \*/(\d+)", value)
    return int(match.group(1)) if match else None


def _reason(exc: BaseException) -> str:
    reason = getattr(exc, "reason", None)
    return str(reason or exc or type(exc).__name__)
