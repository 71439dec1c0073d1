"""Where swapped outputs go: the one definition shared by the engine (`jobs/swap_job.py`, the CLI's
`--out`), the Blender add-on (`timeline.py`, `paths.py`) and the farm bundles (which run one or the other).

    <out>/<stem>_swapped.png                 a still target: the whole picture
    <out>/.<stem>_swapped.png.facecache-clip   which image that file belongs to
    <out>/<stem>/NNNNNN.png                  a video (or a folder of frames): one RGBA overlay per media
                                             frame, by index from 0, six digits (more past 999999)
    <out>/<stem>/.facecache-clip             which clip that folder belongs to
    <out>/<stem>/BL_proxy/images/100/NNNNNN.png_proxy.jpg
                                             the "sequencer" form's preview of a frame with faces: the
                                             composited, opaque picture, where Blender looks for the image
                                             strip's proxy at 100 % (`preview_path`)
    <out>/<stem>/BL_proxy/images/50/NNNNNN.png_proxy.jpg
                                             the same picture at half its size, for a preview at 50 %

The add-on's <out> is `<cache>/swaps/<digest of the media path>` (`SWAPS_FOLDER`): one per media file,
so its clips never share a folder. Given `--out` by hand, two clips with one name do: cameras restart
their numbering on every card, so `A/C0001.MP4` and `B/C0001.MP4` are common. So the first run into
`<out>/C0001/` writes there which clip it belongs to (the clip marker), and a run of another clip into
it is refused with a message that says what to do, before anything is written. A marker is created
in one step, complete or not at all (a hard link to a finished temp file; where the file system has
no hard links, an exclusive create), so of two runs at once exactly one takes the folder.

A clip is the same when its absolute path, its path relative to the output folder (a NAS project seen
at another mount point) or its content digest (a copy) matches the marker's. Outputs inside a cache
folder are refused outside its `swaps/` folder: the cache's clear and prune delete what they manage.

Every <stem> is the media's file name without its extension made valid on every platform
(`portable_name`): a studio's output folders are shared, and a Linux render node writes what a Windows
workstation reads. A stem may be fine where the clip was made and still name no usable folder on
Windows: `aux`, `CON` or `nul.backup` are devices there, `a:b` holds a character Windows refuses, and
`take.` loses its trailing dot (so `take..mp4` and `take.mp4` would share a folder). Only such stems
change, the same way on every platform, so every machine agrees on where a clip's outputs are.

Standard library only: the add-on imports it in Blender's own process (as `choices`).
"""

from __future__ import annotations

import errno
import json
import os
import re
import secrets
import time

from .errors import FaceCacheError  # relative: in Blender this is the add-on's vendored copy, standard library only

SWAPS_FOLDER = "swaps"
CLIP_MARKER = ".facecache-clip"
_MARKER_BYTES = 64 * 1024
_NO_HARD_LINKS = (errno.EPERM, errno.EOPNOTSUPP, errno.ENOTSUP, errno.ENOSYS, errno.EXDEV, errno.EMLINK)
_MARKER_RETRIES = 20  # reads of a marker caught mid-write (the exclusive-create fallback), 0.1 s apart
# Windows' reserved device names: with any extension ("nul.txt"), in any case, with trailing spaces.
_DEVICES = frozenset({"CON", "PRN", "AUX", "NUL", "CONIN$", "CONOUT$"}
                     | {f"{port}{n}" for port in ("COM", "LPT") for n in (*"123456789", "¹", "²", "³")})
_NOT_ON_WINDOWS = re.compile(r'[<>:"/\\|?*\x00-\x1f]')


class OutputTaken(FaceCacheError):
    """The output place belongs to another clip (or cannot be claimed); the message says what to do."""


def frame_name(index: int) -> str:
    return f"{index:06d}.png"


# The preview's proxy sizes (percent) the engine writes pictures for: 100, the Video Editing workspace's
# default, and 50, where an editor plays a shot on a slow machine (a quarter of the pixels to read).
PREVIEW_SIZES = (100, 50)


def preview_path(overlay: str | os.PathLike, size: int = 100) -> str:
    """The preview picture of the overlay at `overlay` (`<folder>/NNNNNN.png`) at the preview's proxy size `size`
    (percent): where Blender 4.2-5.2 reads an image strip element's proxy, relative to the strip's folder
    (per-strip storage, no custom folder: the sequencer's proxy.cc; checked against Blender's own
    `sequencer.rebuild_proxy` in tests/blender/test_blender_edits.py)."""
    folder, name = os.path.split(os.fspath(overlay))
    return os.path.join(folder, "BL_proxy", "images", str(size), f"{name}_proxy.jpg")


def frame_index(name: str) -> int | None:
    """The media frame of an overlay's file name, or None for any other name."""
    stem, dot, suffix = name.partition(".")
    return int(stem) if dot and suffix == "png" and len(stem) >= 6 and stem.isascii() and stem.isdigit() else None


def portable_name(name: str) -> str:
    """`name` as a file or folder name valid on every platform: characters Windows refuses become `_`,
    a name ending in a dot or a space (which Windows drops) gets a `_` appended, and a device name gets
    a `_` after its base (`CON` -> `CON_`, `nul.backup` -> `nul_.backup`). Other names are unchanged."""
    name = _NOT_ON_WINDOWS.sub("_", name) or "_"
    if name.endswith((".", " ")):
        name += "_"
    base, dot, rest = name.partition(".")
    if base.rstrip(" ").upper() in _DEVICES:
        name = f"{base}_{dot}{rest}"
    return name


def stem(media: str | os.PathLike) -> str:
    """The media's file name without its extension, valid on every platform (`portable_name`)."""
    return portable_name(os.path.splitext(os.path.basename(os.path.normpath(os.fspath(media))))[0])


def still_name(media: str | os.PathLike) -> str:
    return f"{stem(media)}_swapped.png"


def output_folder(out_dir: str | os.PathLike, media: str | os.PathLike, still: bool) -> str:
    """The folder a target's outputs go in: `out_dir` for a still, `out_dir/<stem>` for a video."""
    return os.fspath(out_dir) if still else os.path.join(os.fspath(out_dir), stem(media))


def output_name(media: str | os.PathLike, index: int, still: bool) -> str:
    return still_name(media) if still else frame_name(index)


def marker_path(out_dir: str | os.PathLike, media: str | os.PathLike, still: bool) -> str:
    if still:
        return os.path.join(os.fspath(out_dir), f".{still_name(media)}.facecache-clip")
    return os.path.join(output_folder(out_dir, media, still), CLIP_MARKER)


def frames_in(folder: str | os.PathLike) -> set[int]:
    """The media frames whose overlay exists in a clip's folder (one listing; nothing is opened)."""
    try:
        names = os.listdir(folder)
    except OSError:
        return set()
    return {index for index in map(frame_index, names) if index is not None}


def clip_record(media: str | os.PathLike, out_dir: str | os.PathLike, identity: str | None,
                deinterlace: bool = False) -> dict:
    """What a clip marker says: the media's absolute path, its path relative to the output folder, its
    content digest, and which of its pictures the outputs show (`picture`, only for the Deinterlace option's:
    markers written before it was recorded are all of the woven picture)."""
    path = os.path.abspath(os.fspath(media))
    try:
        relative = os.path.relpath(path, os.path.abspath(os.fspath(out_dir))).replace(os.sep, "/")
    except ValueError:  # another drive on Windows
        relative = None
    record = {"media": path, "relative": relative, "identity": identity}
    return {**record, "picture": DEINTERLACED} if deinterlace else record


DEINTERLACED = "deinterlaced"


def same_clip(a: dict, b: dict) -> bool:
    def equal(key, normal=lambda v: v) -> bool:
        return isinstance(a.get(key), str) and isinstance(b.get(key), str) and normal(a[key]) == normal(b[key])
    return equal("media", os.path.normcase) or equal("relative") or equal("identity")


def owner(marker: str) -> dict | None:
    """The clip a marker names; None when there is no marker. OutputTaken when it cannot be read."""
    for attempt in range(_MARKER_RETRIES):
        try:
            with open(marker, "rb") as handle:
                data = handle.read(_MARKER_BYTES + 1)
        except FileNotFoundError:
            return None
        except OSError as exc:
            raise OutputTaken(f"cannot read {marker} ({exc.strerror}), which says which clip its folder "
                              "belongs to: fix its permissions or choose another output folder") from None
        try:
            record = json.loads(data.decode("utf-8"))
            if isinstance(record, dict) and isinstance(record.get("media"), str):
                return record
        except ValueError:
            pass
        time.sleep(0.1)  # caught between the exclusive create and its write: read it again
    raise OutputTaken(f"{marker}, which says which clip its folder belongs to, is damaged: delete it if the "
                      "outputs beside it belong to this clip, else choose another output folder")


def claim(out_dir: str | os.PathLike, media: str | os.PathLike, still: bool, identity: str | None,
          mode: int = 0o600, deinterlace: bool = False) -> None:
    """Make the output place of `media` in `out_dir` this clip's, or raise OutputTaken naming the clip
    it belongs to and what to do. The folder must exist. A folder already this clip's stays marked with the
    picture it was first made of."""
    marker = marker_path(out_dir, media, still)
    mine = clip_record(media, out_dir, identity, deinterlace)
    for _attempt in range(3):
        found = owner(marker)
        if found is None:
            if _create(marker, json.dumps(mine).encode(), mode):
                return
            continue  # another run created it meanwhile: read whose it is
        if same_clip(found, mine):
            return
        place = os.path.join(os.fspath(out_dir), still_name(media)) if still else os.path.dirname(marker)
        raise OutputTaken(f"{place} holds the swapped frames of {found['media']}, another clip with the same "
                          f"name as {mine['media']}: give this clip another output folder (--out), e.g. "
                          f"{os.path.join(os.fspath(out_dir), _parent_name(media))}")
    raise OutputTaken(f"could not mark {marker} as this clip's: run the command again")


def own_frames(out_dir: str | os.PathLike, media: str | os.PathLike) -> set[int]:
    """The media frames whose overlay exists in a video's folder in `out_dir` (one listing; nothing is
    opened, so an overlay may still be stale); none when the folder's marker names another clip, as
    `claim` tells it, or cannot be read."""
    try:
        found = owner(marker_path(out_dir, media, still=False))
    except OutputTaken:
        return set()
    if found is not None and not same_clip(found, clip_record(media, out_dir, None)):
        return set()
    return frames_in(output_folder(out_dir, media, still=False))


def holds_clip(out_dir: str | os.PathLike, media: str | os.PathLike, deinterlace: bool) -> bool:
    """Whether `out_dir` holds the outputs of this video's picture (woven, or through the Deinterlace option),
    as its folder's marker says: a marker that cannot be read holds nothing."""
    try:
        found = owner(marker_path(out_dir, media, still=False))
    except OutputTaken:
        return False
    mine = clip_record(media, out_dir, None, deinterlace)
    return found is not None and same_clip(found, mine) and found.get("picture") == mine.get("picture")


def _parent_name(media: str | os.PathLike) -> str:
    parent = os.path.basename(os.path.dirname(os.path.abspath(os.fspath(media))))
    return portable_name(parent) if parent else "other"


def _create(marker: str, data: bytes, mode: int) -> bool:
    """Create `marker` holding `data` in one step; False when it exists already."""
    temp = f"{marker}.tmp-{secrets.token_hex(6)}-{os.getpid()}"
    fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0), mode)
    try:
        try:
            _set_mode(fd, temp, mode)  # the umask must not narrow it: a teammate reads it
            os.write(fd, data)
            os.fsync(fd)
        finally:
            os.close(fd)
        try:
            os.link(temp, marker)
            return True
        except FileExistsError:
            return False
        except OSError as exc:
            if os.path.lexists(marker):  # sshfs answers a lost race EPERM
                return False
            if exc.errno not in _NO_HARD_LINKS:
                raise
        return _create_exclusive(marker, data, mode)  # no hard links on this file system
    finally:
        try:
            os.unlink(temp)
        except OSError:
            pass


def _create_exclusive(marker: str, data: bytes, mode: int) -> bool:
    try:
        fd = os.open(marker, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0), mode)
    except FileExistsError:
        return False
    except PermissionError:
        if os.path.lexists(marker):
            return False
        raise
    try:
        _set_mode(fd, marker, mode)
        os.write(fd, data)
    finally:
        os.close(fd)
    return True


def _set_mode(fd: int, path: str, mode: int) -> None:
    if hasattr(os, "fchmod"):
        os.fchmod(fd, mode)
    else:  # Windows before Python 3.13
        os.chmod(path, mode)


def real_path(path: str | os.PathLike) -> str:
    """`os.path.realpath`, or the absolute path where the system cannot resolve it: Wine refuses paths past
    260 characters there (ERROR_MORE_DATA), and Windows without long paths enabled refuses them too."""
    try:
        return os.path.realpath(path)
    except OSError:
        return os.path.abspath(path)


def inside_cache(folder: str | os.PathLike, cache_root: str | os.PathLike) -> bool:
    """True when `folder` lies in the cache folder but outside its `swaps/` folder (symlinks resolved):
    there the cache's clear and prune would delete outputs."""
    real, root = real_path(folder), real_path(cache_root)
    try:
        if os.path.commonpath([real, root]) != root:
            return False
        return os.path.commonpath([real, os.path.join(root, SWAPS_FOLDER)]) != os.path.join(root, SWAPS_FOLDER)
    except ValueError:  # another drive on Windows
        return False
