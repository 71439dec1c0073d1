"""Where the preview's movie (`swap.preview_movie`) and the pictures it stands in for are, and how they are put
back: the files alone, shared by the engine and the add-on.

The original strip's proxy, in a custom folder (`proxy_folder`: one a version of the movie), makes Blender read
`<that folder>/<the movie's file name>/proxy_100.avi` (`movie_path`); `current` says which version is the
clip's movie and how many media frames it holds. Where the movie holds a frame's 100 % picture,
that picture's place holds `STAND_IN`, one transparent pixel as a PNG (Blender reads an image by its content,
whatever its name), and the picture is kept on a shelf (`shelf_path`).

Standard library only: the add-on imports it in Blender's own process (as `output_layout`).
"""

from __future__ import annotations

import os
import shutil

from . import output_layout  # relative: in Blender this is the add-on's vendored copy

PROXY_FILE = "proxy_100.avi"  # Blender's name for a movie's 100 % proxy (its movie_proxy_indexer.cc)
RECORD = "current"  # in the movies' folder: "<version> <media frames the movie holds>"
SHELF = "shelf"  # in the movies' folder: the pictures the movie stands in for
# A 1x1 RGBA PNG, fully transparent (as OpenCV encodes it; tests/swap/test_preview_movie.py decodes it).
STAND_IN = (b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00\x00\x01\x00\x00\x00\x01\x08\x06\x00\x00\x00\x1f\x15\xc4"
            b"\x89\x00\x00\x00\nIDAT\x08\x1dc\x00\x01\x00\x00\x05\x00\x01\x8am\xbc \x00\x00\x00\x00IEND\xaeB`\x82")
_PICTURE_SUFFIX = "_proxy.jpg"


def movies_folder(folder: str | os.PathLike) -> str:
    """Where the movies of the clip whose outputs are in `folder` are, each in a folder of its version."""
    return os.path.join(os.fspath(folder), "BL_proxy", "movie")


def proxy_folder(folder: str | os.PathLike, version: str) -> str:
    """The custom proxy folder the original strip names for one version of the movie. Each movie written is a new
    version in a new folder: Blender keeps a proxy it read open (Windows refuses to replace an open file), and a
    new folder makes it open the new movie."""
    return os.path.join(movies_folder(folder), version)


def movie_path(folder: str | os.PathLike, media: str | os.PathLike, version: str) -> str:
    return os.path.join(proxy_folder(folder, version), os.path.basename(os.fspath(media)), PROXY_FILE)


def current(folder: str | os.PathLike, media: str | os.PathLike) -> tuple[str, int] | None:
    """(version, media frames it holds: 0 to that, less one) of the clip's movie; None where there is none, it was
    forgotten (`forget_movies`), or its record or file is missing or unreadable."""
    try:
        with open(record_path(folder), encoding="ascii") as file:
            version, frames = file.read().split()
        held = int(frames)
    except (OSError, ValueError):
        return None
    if not version.isalnum() or version == SHELF or not os.path.isfile(movie_path(folder, media, version)):
        return None
    return version, held


def record_path(folder: str | os.PathLike) -> str:
    return os.path.join(movies_folder(folder), RECORD)


def record_bytes(version: str, frames: int) -> bytes:
    """What `current` reads: the engine writes it atomically once the movie is in place."""
    return f"{version} {frames}\n".encode("ascii")


def old_versions(folder: str | os.PathLike, keep: str | None = None) -> list[str]:
    """The movies' version folders other than `keep`."""
    base = movies_folder(folder)
    try:
        names = os.listdir(base)
    except OSError:
        return []
    return [os.path.join(base, name) for name in names
            if name not in (keep, SHELF) and os.path.isdir(os.path.join(base, name))]


def shelf_path(overlay: str | os.PathLike) -> str:
    """Where the 100 % picture of the overlay at `overlay` is kept while `STAND_IN` stands in its place."""
    folder = os.path.dirname(os.fspath(overlay))
    return os.path.join(movies_folder(folder), SHELF, os.path.basename(output_layout.preview_path(overlay)))


def is_stand_in(path: str | os.PathLike) -> bool:
    try:
        if os.path.getsize(path) != len(STAND_IN):
            return False
        with open(path, "rb") as file:
            return file.read() == STAND_IN
    except OSError:
        return False


def forget_movies(folder: str | os.PathLike) -> None:
    """Say that no movie of the clip whose outputs are in `folder` holds its frames any more (a frame the movie
    holds lost its faces: its strip is keyed out there, so no picture can cover the movie): the add-on then
    turns the movie off and puts the pictures back (`restore`) until the movie is written again."""
    try:
        os.remove(record_path(folder))
    except FileNotFoundError:
        pass


def stood_in(folder: str | os.PathLike) -> bool:
    """Whether the clip has a movie on record or pictures on the shelf: something `restore` would put back. A
    movie being written has neither until it is in place, so it is never taken away while it is written."""
    if os.path.isfile(record_path(folder)):
        return True
    try:
        with os.scandir(os.path.join(movies_folder(folder), SHELF)) as shelved:  # closed at once, on Windows too
            return any(shelved)
    except OSError:
        return False


def restore(folder: str | os.PathLike) -> int:
    """Put back every shelved picture whose place holds `STAND_IN`, and remove the movies (where they cannot be
    shown; one Blender still holds open stays until the next). Returns the pictures put back."""
    shelf = os.path.join(movies_folder(folder), SHELF)
    try:
        names = sorted(name for name in os.listdir(shelf) if name.endswith(_PICTURE_SUFFIX))
    except OSError:
        names = []
    put_back = 0
    for name in names:
        kept = os.path.join(shelf, name)
        place = output_layout.preview_path(os.path.join(os.fspath(folder), name[:-len(_PICTURE_SUFFIX)]))
        if is_stand_in(place):
            os.replace(kept, place)
            put_back += 1
        else:
            os.remove(kept)  # a newer picture is there, or none
    forget_movies(folder)
    remove_folders(old_versions(folder))
    return put_back


def remove_folders(paths: list[str]) -> None:
    """Remove each folder and what it holds, leaving any that cannot go yet (a movie Blender holds open on Windows:
    the next call removes it)."""
    for path in paths:
        shutil.rmtree(path, ignore_errors=True)
