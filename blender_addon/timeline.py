"""Originals and their swapped strips: identities, placement, and the media frames a job must cover.

An original is a movie strip the user swapped (role ORIGINAL). Its swapped strip is an image strip of
the engine's RGBA overlays (`<cache>/swaps/<media digest>/<stem>/<media frame:06d>.png`, the engine's
`output_layout`; its "sequencer" form: a frame without a face is one transparent pixel), alpha-over, one channel above it inside a face swap group (`shot_group`: a meta strip
that carries the shot's opacity, blend mode, modifiers and transitions). The swapped strip holds one
element per timeline frame the original shows - the media frame Blender shows there (`frame_mapping`), so reversed,
strobed and retimed strips line up - and mirrors the original's transform, crop and flip. Its own opacity is keyed
to 0 over the frames without a face, which playback then skips (`faceless_keys`). The preview shows, where it
may, the composited frames the engine writes as the strip's proxy (`preview_form`); renders show the overlays.
Everything here is plain data work on the main thread: no engine, no decoding.
"""

from __future__ import annotations

import os
import uuid

import bpy

from . import (compat, faceless_keys, frame_mapping, paths, pending_frame, preview_form, runtime, shot_group,
               strip_copy, strip_elements)
from .engine_client import engine_module

protocol = engine_module("protocol")  # the engine's items

SUFFIX = ".swap"
REPLACED = " (replaced)"  # a swapped strip's name for the moment Update makes it anew
# What places the picture, per image: mirrored from the original onto its swapped strip (the two
# images have the same size, so the same values put them on the same pixels).
GEOMETRY = (("transform", "offset_x"), ("transform", "offset_y"), ("transform", "scale_x"),
            ("transform", "scale_y"), ("transform", "rotation"), ("transform", "origin"),
            ("transform", "filter"), ("crop", "min_x"), ("crop", "max_x"), ("crop", "min_y"),
            ("crop", "max_y"), (None, "use_flip_x"), (None, "use_flip_y"))


def editor(scene):
    return scene.sequence_editor or scene.sequence_editor_create()


def top_strips(scene):
    return compat.top_strips(editor(scene))


def all_strips(scene):
    return compat.all_strips(scene.sequence_editor)


def movie_strips(scene):
    """Movie strips at every level (inside meta strips too)."""
    return [s for s in all_strips(scene) if s.type == "MOVIE"]


def current_level(scene):
    """The strips where the user is editing: inside the meta strip they opened (Tab), else the top level."""
    ed = editor(scene)
    return compat.meta_contents(ed.meta_stack[-1]) if compat.in_meta_strip(ed) else compat.top_strips(ed)


def movies_in(strip) -> list:
    """A movie strip itself; for a meta strip, every movie strip inside it, at any depth."""
    if strip.type == "MOVIE":
        return [strip]
    if strip.type == "META":
        return [movie for inner in compat.meta_contents(strip) for movie in movies_in(inner)]
    return []


def originals(scene):
    return [s for s in movie_strips(scene) if s.faceswap.role == "ORIGINAL"]


def swapped_strips(scene):
    return [s for s in all_strips(scene) if s.type == "IMAGE" and s.faceswap.role == "SWAPPED"]


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
    for strip in sorted(originals(scene), key=lambda s: (compat.left_handle(s), s.channel, s.name)):
        if not strip.faceswap.uid or strip.faceswap.uid in seen:
            strip.faceswap.uid = new_uid()
            fixed += 1
        seen.add(strip.faceswap.uid)
    return fixed


def overlay_of(original):
    """The original's swapped strip, in its group."""
    group = shot_group.group_of(original)
    return shot_group.pairs_in(group)[0].get(original) if group is not None else None


def outputs_root(scene, original, checked: bool = True) -> str:
    """Where the engine writes the swapped frames of the original's picture (`paths.output_root`; `checked`
    False while drawing)."""
    swapped = overlay_of(original)
    shown = bpy.path.abspath(swapped.directory) if swapped is not None else ""
    return paths.output_root(scene, paths.media_path(original), paths.deinterlaced(original), shown, checked)


def placement(scene, original, checked: bool = True) -> dict:
    """Where the swapped strip goes and what it holds (`checked` False while drawing: no file is read); raises
    UnsupportedStrip for unreadable timing."""
    media = paths.media_path(original)
    return {"folder": paths.layout.output_folder(outputs_root(scene, original, checked), media, still=False),
            "layout": frame_mapping.layout(original),
            "channel": original.channel + 1}


def outputs_folder(scene, original) -> str:
    """The folder of the original's swapped frames (raises UnsupportedStrip for unreadable timing)."""
    return _folder_and_shown(placement(scene, original))[0]


def _folder_and_shown(place) -> tuple[str, list[int]]:
    """(the outputs' folder, the media frames shown) of a placement."""
    return place["folder"], place["layout"].media


frame_name = paths.layout.frame_name


def element_names(scene, original, place) -> list[str]:
    """The file each element of the original's swapped strip names: its media frame's overlay where it exists
    (as the engine last said; a shot the engine was never asked about: its folder listed, which only operators
    do), else the transparent stand-in (`pending_frame`, in Blender's window). Where the stand-in cannot be
    written, every element names its overlay."""
    media = place["layout"].media
    made = runtime.STATE.swapped.get(paths.picture(original))
    if made is None:
        made = paths.layout.frames_in(place["folder"])
    if set(media) <= made or not pending_frame.in_use() or not pending_frame.ensure(place["folder"]):
        return [frame_name(i) for i in media]
    return [frame_name(i) if i in made else pending_frame.NAME for i in media]


def _matches(strip, place) -> bool:
    layout = place["layout"]
    return (layout is not None
            and os.path.normpath(bpy.path.abspath(strip.directory)) == os.path.normpath(place["folder"])
            and compat.handle_offsets(strip) == (0, 0)
            and int(compat.content_start(strip)) == layout.first and strip.channel == place["channel"]
            and len(strip.elements) == len(layout.media)
            and all(e.filename in (frame_name(i), pending_frame.NAME) for e, i in zip(strip.elements, layout.media)))


def point_elements(scene) -> int:
    """Point each swapped strip's elements at the overlays the engine said exist, the others at the stand-in
    (after a job, a preview, a coverage refresh). Returns the strips changed; they re-read their images."""
    changed = 0
    for original in originals(scene):
        swapped = overlay_of(original)
        try:
            place = placement(scene, original)
        except frame_mapping.UnsupportedStrip:
            continue
        if swapped is None or not _matches(swapped, place):
            continue  # Update re-places it
        names = element_names(scene, original, place)
        if [e.filename for e in swapped.elements] != names:
            for element, name in zip(swapped.elements, names):
                element.filename = name
            swapped.directory = swapped.directory  # drops the strip's cached images and missing-media flag
            changed += 1
        key_faceless(scene, original, swapped, place)
        preview_form.follow(scene, original, swapped)
        preview_form.follow_movie(original, swapped, *_folder_and_shown(place))
    return changed


def key_faceless(scene, original, swapped, place, unknown=None) -> str | None:
    """Key the swapped strip's opacity to 0 over the frames the engine last said hold no face
    (`faceless_keys`); where it has not said, `unknown` keys (None: the keys stay as they are). An opacity
    the editor set on the swapped strip is kept, and what that costs is returned, with what to do."""
    if faceless_keys.set_by_hand(scene, swapped):
        return (f"opacity of {swapped.name!r}, set by hand: its frames without a face are not skipped in playback "
                "while it is; the shot's opacity belongs on its face swap group, the swap's in the Face Swap panel")
    faceless = runtime.STATE.faceless.get(paths.picture(original))
    layout = place["layout"]
    if faceless is not None:
        faceless_keys.key_opacity(scene, swapped, faceless_keys.opacity_keys(layout.first, layout.media, faceless))
    elif unknown is not None:
        faceless_keys.key_opacity(scene, swapped, unknown)
    return None


def mirror_geometry(scene, original, swapped) -> list[str]:
    """Give the swapped strip the original's transform, crop and flip, keyframes included. Returns what
    cannot be mirrored (drivers), with what to do."""
    problems = []
    for part, prop in GEOMETRY:
        source = getattr(original, part) if part else original
        target = getattr(swapped, part) if part else swapped
        strip_copy.mirror_property(scene, source, target, prop)
        if strip_copy.driven(scene, source, prop):
            label = f"{part}.{prop}" if part else prop
            problems.append(f"{label} of {original.name!r} is driven by a driver, which the swapped face does "
                            f"not follow: bake it to keyframes (or remove the driver)")
    return problems


def sync_swapped(scene, original, existing, group, problems: list) -> tuple:
    """Create or refresh the swapped strip of one original inside its group. Returns (swapped strip or None,
    problems: edits it does not follow, each with what to do; kept: what the editor set on the swapped strip
    itself, kept, and what that costs)."""
    try:
        place = placement(scene, original)
    except frame_mapping.UnsupportedStrip as exc:
        if existing is not None:
            existing.mute = True  # a face on the wrong frames is worse than none
        return existing, problems + [str(exc)], []
    layout = place["layout"]
    if existing is not None and existing.parent_meta() == group and _matches(existing, place):
        existing.mute = original.mute
        existing.faceswap.link = original.faceswap.uid
        kept = key_faceless(scene, original, existing, place)
        preview_form.follow(scene, original, existing)
        preview_form.follow_movie(original, existing, *_folder_and_shown(place))
        return existing, problems + mirror_geometry(scene, original, existing), [kept] if kept else []
    settings_key = existing.faceswap.settings_key if existing is not None else ""
    if existing is not None:
        existing.name += REPLACED  # its curves follow the name; the new strip takes the name
    if layout is None:
        if existing is not None:
            shot_group.siblings(scene, existing).remove(existing)
        return None, problems, []
    names = element_names(scene, original, place)
    strip = compat.meta_contents(group).new_image(original.name + SUFFIX, os.path.join(place["folder"], names[0]),
                                                  place["channel"], layout.first)
    # Overlays with faces have the movie's size (a frame without one is a transparent pixel); recording it
    # keeps a missing frame from crashing the render.
    movie = original.elements[0] if len(original.elements) else None
    strip_elements.append_frames(strip, names[1:], (movie.orig_width, movie.orig_height) if movie else (0, 0))
    strip.directory = paths.stored_path(place["folder"])  # `//…` beside the .blend: moves with the project
    strip.blend_type = "ALPHA_OVER"
    strip.mute = original.mute
    strip.faceswap.role = "SWAPPED"
    strip.faceswap.uid = new_uid()
    strip.faceswap.link = original.faceswap.uid
    strip.faceswap.settings_key = settings_key
    if existing is not None:
        carry_own_settings(scene, existing, strip)
        shot_group.siblings(scene, existing).remove(existing)
        strip.channel = place["channel"]  # Blender put it above while the old strip was there
    kept = key_faceless(scene, original, strip, place, unknown=[])  # no keys of ours a strip of that name left
    preview_form.follow(scene, original, strip)
    preview_form.follow_movie(original, strip, *_folder_and_shown(place))
    return strip, problems + mirror_geometry(scene, original, strip), [kept] if kept else []


def carry_own_settings(scene, old, new) -> None:
    """What the editor set on a swapped strip itself, given to the strip made anew in its place: blend mode,
    saturation, multiply, colour modifiers and an opacity set by hand, keyframes included (the rest is the
    original's, or the extension's)."""
    new.blend_type = old.blend_type
    carried = [prop for prop, _ in shot_group.COMPOSITE if prop != faceless_keys.PROPERTY]
    if faceless_keys.set_by_hand(scene, old):
        carried.append(faceless_keys.PROPERTY)
    for prop in carried:
        setattr(new, prop, getattr(old, prop))
        strip_copy.move_curves(scene, old.path_from_id(prop), new.path_from_id(prop))
    if len(old.modifiers):
        strip_copy.move_modifiers(scene, old, new)


def sync_all(scene, only=None) -> dict:
    """Re-sync swapped strips with their originals (all, or those in `only`): groups made or refreshed,
    swapped strips placed; swapped strips and groups whose original is gone are removed. Records on
    each original what its swapped strip does not follow (`faceswap.not_followed`) and what the editor set on
    the swapped strip itself that is kept (`faceswap.kept`). Returns {"originals": [...], "created_or_moved": n,
    "removed": n, "not_followed": {name: [problem]}, "kept": {name: [note]}}."""
    adopt_same_media(scene)
    fix_identities(scene)
    targets = [s for s in originals(scene) if only is None or s.name in only]
    grouped = [(original, *shot_group.ensure(scene, original)) for original in targets]
    for group in {g.as_pointer(): g for _, g, _ in grouped}.values():
        shot_group.fit(group)
    removed = _remove_strays(scene)
    changed, not_followed, kept_notes = 0, {}, {}
    for original, group, problems in grouped:
        before = overlay_of(original)
        before_uid = before.faceswap.uid if before is not None else None
        strip, problems, kept = sync_swapped(scene, original, before, group, problems)
        original.faceswap.not_followed, original.faceswap.kept = "\n".join(problems), "\n".join(kept)
        if problems:
            not_followed[original.name] = problems
        if kept:
            kept_notes[original.name] = kept
        if strip is None or strip.faceswap.uid != before_uid:
            changed += 1
    return {"originals": targets, "created_or_moved": changed, "removed": removed, "not_followed": not_followed,
            "kept": kept_notes}


def _remove_strays(scene) -> int:
    """Swapped strips of no original (outside a group, or left when their original was deleted or
    separated) and groups left empty. Returns how many swapped strips went."""
    loose = [s for s in swapped_strips(scene) if shot_group.group_of(s) is None]
    for group in shot_group.groups(scene):
        loose += shot_group.pairs_in(group)[1]
    for strip in loose:
        shot_group.siblings(scene, strip).remove(strip)
    for group in shot_group.groups(scene):
        if not len(compat.meta_contents(group)):
            shot_group.siblings(scene, group).remove(group)
    return len(loose)


def work_items(scene, strips, frames: range | None = None) -> list[dict]:
    """One engine item per contiguous run of media frames, per media file and picture (strips sharing both
    share frames; the Deinterlace option's picture is another); with `frames` (timeline frames), only the
    media frames the strips show on those."""
    wanted: dict[tuple[str, bool], set] = {}
    roots: dict[tuple[str, bool], str] = {}
    for strip in strips:
        try:
            used = frame_mapping.used_media_frames(strip, frames)
        except frame_mapping.UnsupportedStrip:
            continue  # reported by the caller (check_media, or the update's not-followed list)
        picture = (paths.media_path(strip), paths.deinterlaced(strip))
        wanted.setdefault(picture, set()).update(used)
        roots.setdefault(picture, outputs_root(scene, strip))
    items = []
    for (media, deinterlace), used in wanted.items():
        for start, stop in runs(sorted(used)):
            items.append(protocol.item(media, start, stop, roots[media, deinterlace], deinterlace))
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


def swapped_on_disk(scene, media: str, deinterlace: bool = False) -> set[int]:
    return paths.layout.frames_in(paths.output_folder(scene, media, deinterlace))


def is_up_to_date(scene, original) -> bool | None:
    """Whether the swapped strip shows the current settings' faces on every frame, placed as the
    original is now (timing, geometry, and no composite property left to move to the group). Its frames
    come from the engine's last answer (runtime state): no folder is listed. None while the engine has
    not said yet which frames exist (a file just opened: the coverage refresh answers within a second)."""
    swapped = overlay_of(original)
    if swapped is None or original.faceswap.not_followed:
        return False
    try:
        place = placement(scene, original, checked=False)
    except frame_mapping.UnsupportedStrip:
        return False
    if (not _matches(swapped, place) or swapped.faceswap.settings_key != scene.faceswap.settings_key()
            or not _geometry_matches(original, swapped) or shot_group.has_composite_edits(original)):
        return False
    known = runtime.STATE.swapped.get(paths.picture(original))
    return None if known is None else set(place["layout"].used) <= known


def _geometry_matches(original, swapped) -> bool:
    def values(strip):
        return [_plain(getattr(getattr(strip, part) if part else strip, prop)) for part, prop in GEOMETRY]
    return values(original) == values(swapped)


def _plain(value):
    return tuple(value) if hasattr(value, "__len__") and not isinstance(value, str) else value


def swapped_for_uid(scene, uid: str):
    original = next((s for s in originals(scene) if s.faceswap.uid == uid), None)
    return overlay_of(original) if original is not None else None


def original_for(scene, strip):
    """The original of a swapped strip or of a face swap group."""
    if strip.faceswap.role == shot_group.ROLE:
        inner = shot_group.originals_in(strip)
        return inner[0] if inner else None
    group = shot_group.group_of(strip)
    pairs = shot_group.pairs_in(group)[0] if group is not None else {}
    return next((o for o, s in pairs.items() if s == strip), None)
