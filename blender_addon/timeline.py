"""Originals and their swapped strips: identities, placement, and the media frames a job must cover.

An original is a movie strip the user swapped (role ORIGINAL); its swapped strip is an image strip of
the engine's RGBA overlays (`<cache>/swaps/<media digest>/<stem>/<media frame:06d>.png`) one channel
above, alpha-over, placed on exactly the frames the original shows. Everything here is plain data work
on the main thread: no engine, no decoding.
"""

from __future__ import annotations

import os
import uuid

import bpy

from . import compat, frame_mapping, paths

SUFFIX = ".swap"


def editor(scene):
    return scene.sequence_editor or scene.sequence_editor_create()


def top_strips(scene):
    return compat.top_strips(editor(scene))


def all_strips(scene):
    return compat.all_strips(scene.sequence_editor)


def movie_strips(scene):
    return [s for s in top_strips(scene) if s.type == "MOVIE"]


def originals(scene):
    return [s for s in movie_strips(scene) if s.faceswap.role == "ORIGINAL"]


def swapped_strips(scene):
    return [s for s in top_strips(scene) if s.type == "IMAGE" and s.faceswap.role == "SWAPPED"]


def new_uid() -> str:
    return uuid.uuid4().hex[:16]


def mark_original(strip) -> None:
    if strip.faceswap.role != "ORIGINAL" or not strip.faceswap.uid:
        strip.faceswap.role = "ORIGINAL"
        strip.faceswap.uid = strip.faceswap.uid or new_uid()


def adopt_same_media(scene) -> list:
    """New movie strips of a media file that already has an original become originals too."""
    known = {paths.media_path(s) for s in originals(scene)}
    adopted = [s for s in movie_strips(scene) if s.faceswap.role == "NONE" and paths.media_path(s) in known]
    for strip in adopted:
        mark_original(strip)
    return adopted


def fix_identities(scene) -> int:
    """Split and duplicate copy strip properties: give every copy its own identity. Returns copies fixed."""
    seen, fixed = set(), 0
    for strip in sorted(originals(scene), key=lambda s: (s.frame_final_start, s.channel, s.name)):
        if not strip.faceswap.uid or strip.faceswap.uid in seen:
            strip.faceswap.uid = new_uid()
            fixed += 1
        seen.add(strip.faceswap.uid)
    return fixed


def swapped_for(scene) -> dict:
    """{original uid: swapped strip}; extra swapped strips for one uid are removed."""
    found = {}
    for strip in swapped_strips(scene):
        if strip.faceswap.link in found:
            top_strips(scene).remove(strip)
        else:
            found[strip.faceswap.link] = strip
    return found


def placement(scene, original) -> dict:
    media = paths.media_path(original)
    used = frame_mapping.used_media_range(original)
    return {"folder": paths.output_folder(scene, media), "range": used,
            "frame_start": frame_mapping.timeline_frame(original, used.start) if used else original.frame_final_start,
            "channel": original.channel + 1}


def frame_name(index: int) -> str:
    return f"{index:06d}.png"


def _matches(strip, place) -> bool:
    used = place["range"]
    return (os.path.normpath(bpy.path.abspath(strip.directory)) == os.path.normpath(place["folder"])
            and len(strip.elements) == len(used) and strip.elements[0].filename == frame_name(used.start)
            and strip.frame_offset_start == 0 and strip.frame_offset_end == 0
            and int(strip.frame_start) == place["frame_start"] and strip.channel == place["channel"])


def sync_swapped(scene, original, existing=None):
    """Create or refresh the swapped strip of one original; returns it (None for an empty range)."""
    place = placement(scene, original)
    used = place["range"]
    if existing is not None and used and _matches(existing, place):
        existing.mute = original.mute
        return existing
    settings_key = existing.faceswap.settings_key if existing is not None else ""
    if existing is not None:
        top_strips(scene).remove(existing)
    if not used:
        return None
    strip = top_strips(scene).new_image(original.name + SUFFIX, os.path.join(place["folder"], frame_name(used.start)),
                                        place["channel"], place["frame_start"])
    for index in used[1:]:
        strip.elements.append(frame_name(index))
    strip.blend_type = "ALPHA_OVER"
    strip.mute = original.mute
    strip.faceswap.role = "SWAPPED"
    strip.faceswap.uid = new_uid()
    strip.faceswap.link = original.faceswap.uid
    strip.faceswap.settings_key = settings_key
    return strip


def sync_all(scene, only=None) -> dict:
    """Re-sync swapped strips with their originals (all, or those in `only`). Removes swapped strips
    whose original is gone. Returns {"originals": [...], "created_or_moved": n, "removed": n}."""
    adopt_same_media(scene)
    fix_identities(scene)
    found = swapped_for(scene)
    live = {s.faceswap.uid for s in originals(scene)}
    removed = 0
    for uid, strip in list(found.items()):
        if uid not in live:
            top_strips(scene).remove(strip)
            del found[uid]
            removed += 1
    targets = [s for s in originals(scene) if only is None or s.name in only]
    changed = 0
    for original in targets:
        before = found.get(original.faceswap.uid)
        before_uid = before.faceswap.uid if before is not None else None
        strip = sync_swapped(scene, original, before)
        if strip is None or strip.faceswap.uid != before_uid:
            changed += 1
    return {"originals": targets, "created_or_moved": changed, "removed": removed}


def work_items(scene, strips, frames: range | None = None) -> list[dict]:
    """One engine item per contiguous run of media frames, per media file (strips sharing media share
    frames); with `frames` (timeline frames), only the media frames the strips show on those."""
    wanted: dict[str, set] = {}
    for strip in strips:
        wanted.setdefault(paths.media_path(strip), set()).update(frame_mapping.used_media_range(strip, frames))
    items = []
    for media, frames in wanted.items():
        for start, stop in runs(sorted(frames)):
            items.append({"media": media, "start": start, "stop": stop, "out": paths.output_root(scene, media)})
    return items


def runs(indices: list[int]):
    start = prev = None
    for i in indices:
        if start is None:
            start = prev = i
        elif i == prev + 1:
            prev = i
        else:
            yield start, prev + 1
            start = prev = i
    if start is not None:
        yield start, prev + 1


def swapped_on_disk(scene, media: str) -> set[int]:
    folder = paths.output_folder(scene, media)
    try:
        names = os.listdir(folder)
    except OSError:
        return set()
    return {int(n[:6]) for n in names if len(n) == 10 and n.endswith(".png") and n[:6].isdigit()}


def is_up_to_date(scene, original) -> bool:
    swapped = swapped_for_uid(scene, original.faceswap.uid)
    if swapped is None:
        return False
    try:
        place = placement(scene, original)
    except frame_mapping.UnsupportedStrip:
        return False
    if not _matches(swapped, place) or swapped.faceswap.settings_key != scene.faceswap.settings_key():
        return False
    return set(place["range"]) <= swapped_on_disk(scene, paths.media_path(original))


def swapped_for_uid(scene, uid: str):
    return next((s for s in swapped_strips(scene) if s.faceswap.link == uid), None)


def original_for(scene, swapped):
    return next((s for s in originals(scene) if s.faceswap.uid == swapped.faceswap.link), None)
