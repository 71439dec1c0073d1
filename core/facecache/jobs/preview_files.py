"""The "sequencer" form's preview files (`swap.preview_frame`): written beside each overlay with faces, where
Blender's preview reads the swapped strip's proxies, and the old ones read back to keep their bands."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from facecache import output_layout
from facecache.files import write_atomic
from facecache.permissions import make_dir, permissions_for
from facecache.preview_movie_files import STAND_IN, forget_movies, is_stand_in, shelf_path
from facecache.swap import preview_frame
from facecache.watch import is_network_fs, mount_type


def write_preview(overlay: Path, frame: np.ndarray, patches: list, mode: int, picture: str | None) -> None:
    """The "sequencer" form's previews of the overlay at `overlay` (`swap.preview_frame`), one a proxy size,
    written before the overlay, so no overlay is newer than its previews; `picture`: `SwapJob.picture_key`, or
    None where the files there are not read back (`previews_read_back`): they are encoded whole.
    Never fsynced: an emptied file fails to load and Blender's preview falls back to the overlay (and is
    encoded whole the next time). A frame without a face has none (its strip is keyed out there): those left
    from earlier settings go. A picture written where the shot's movie stood in for it (`swap.preview_movie`)
    covers the movie; a frame the movie holds that lost its faces has the movie forgotten (nothing can cover it).
    """
    previews = preview_frame.Preview(frame, patches, picture) if patches else None
    if previews is None and is_stand_in(output_layout.preview_path(overlay)):
        forget_movies(overlay.parent)  # the shot's movie holds this frame's old faces
    for size in output_layout.PREVIEW_SIZES:
        preview = Path(output_layout.preview_path(overlay, size))
        if previews is None:
            preview.unlink(missing_ok=True)
            continue
        if not preview.parent.is_dir():  # faces: private or the team's, as the overlays' (not write_atomic's 0755)
            make_dir(preview.parent, permissions_for(preview.parent))
        old = None if picture is None else _read_or_none(preview)
        if old == STAND_IN:  # the shot's movie holds the frame: its picture, on the shelf, is the one to splice
            old = _read_or_none(Path(shelf_path(overlay)))
        write_atomic(preview, previews.jpeg(size, old), mode=mode, durable=False)


def previews_read_back(folder: Path, form: str) -> bool:
    """Whether a frame made again reads its old previews to keep their bands: only the "sequencer" form has
    previews, and not on a network filesystem, where reading them back moved as many bytes as writing them
    (sshfs, measured)."""
    return form == "sequencer" and not is_network_fs(mount_type(folder))


def _read_or_none(path: Path) -> bytes | None:
    try:
        return path.read_bytes()
    except OSError:  # none yet, or unreadable: the preview is made whole (and its write says what is wrong)
        return None
