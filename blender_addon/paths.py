"""Where the cache, the swapped frames and the models live, and the preferences that say so.

Default: `//faceswap_cache` beside the .blend (a `//` relative path in `scene.faceswap.cache_dir`).
The preferences may override it with an absolute folder, and the environment variable
`FACESWAP_CACHE_DIR` overrides both: render farms set it, because a farm that copies the .blend into a
job folder (Flamenco's copy and Shaman modes) would otherwise read and write a new, empty cache
beside the copy. An unsaved file uses a temporary folder
(with a notice in the panel); the first save moves it beside the new .blend. "Save As" to another
folder rewrites the relative path so that it still points at the same cache (as Blender does for
strip paths).

The models folder: the preferences' Models Folder, else $FACECACHE_MODELS, else the extension's user folder.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import tempfile

import bpy
from bpy.app.handlers import persistent

from . import compat, runtime
from .engine_client import engine_module

layout = engine_module("output_layout")  # the engine's one output layout: folders and frame names
protocol = engine_module("protocol")
remote_support = engine_module("remote_support.layout")  # standard library only: is the S3 client installed?
DEFAULT_CACHE_DIR = "//faceswap_cache"
CACHE_DIR_ENV = "FACESWAP_CACHE_DIR"
MODELS_DIR_ENV = "FACECACHE_MODELS"  # the engine's own names for them (facecache.locations)
GPU_RUNTIME_DIR_ENV = "FACECACHE_GPU_RUNTIME"
REMOTE_CACHE_ENV = remote_support.REMOTE_CACHE_ENV  # a farm's task sets it (the Blender OpenJD bundle, Flamenco)
REMOTE_SUPPORT_NEEDED = "install remote cache support in the preferences"


def prefs():
    """The add-on's preferences (None while it is not enabled)."""
    addon = bpy.context.preferences.addons.get(__package__)
    return addon.preferences if addon else None


def unsaved_cache_dir() -> str:
    """The temporary cache of an unsaved file (one per Blender session and user)."""
    return os.path.join(tempfile.gettempdir(), f"vse_faceswap_unsaved_{os.getpid()}")


def _overridden() -> bool:
    chosen = prefs()
    return bool(os.environ.get(CACHE_DIR_ENV) or (chosen and chosen.cache_dir_override))


def is_temporary(scene) -> bool:
    return not _overridden() and not bpy.data.filepath and scene.faceswap.cache_dir.startswith("//")


def cache_dir(scene) -> str:
    """$FACESWAP_CACHE_DIR, else the preferences' Cache Location, else the scene's Cache setting."""
    if os.environ.get(CACHE_DIR_ENV):
        return os.path.abspath(os.environ[CACHE_DIR_ENV])
    chosen = prefs()
    if chosen and chosen.cache_dir_override:
        return os.path.abspath(bpy.path.abspath(chosen.cache_dir_override))
    setting = scene.faceswap.cache_dir or DEFAULT_CACHE_DIR
    if setting.startswith("//") and not bpy.data.filepath:
        return unsaved_cache_dir()
    return os.path.abspath(bpy.path.abspath(setting))


def max_bytes() -> int:
    chosen = prefs()
    return int((chosen.cache_max_gb if chosen else 10.0) * 1e9)


def models_dir(create: bool = True) -> str:
    """The preferences' Models Folder, else $FACECACHE_MODELS (the engine CLI's variable: a farm node's
    models folder on the NAS), else the extension's user folder (created unless `create` is False:
    drawing only reads)."""
    chosen = prefs()
    if chosen and chosen.models_dir:
        return bpy.path.abspath(chosen.models_dir)
    return os.path.abspath(os.environ[MODELS_DIR_ENV]) if os.environ.get(MODELS_DIR_ENV) else default_models_dir(create)


def default_models_dir(create: bool = True) -> str:
    try:
        return bpy.utils.extension_path_user(__package__, path="models", create=create)
    except (ValueError, AttributeError):  # not installed as an extension (development checkout)
        return os.path.join(bpy.utils.user_resource("DATAFILES", path="vse_faceswap", create=create), "models")


def engine_environment() -> dict:
    """What the preferences add to the engine's environment: the GPU runtime folder, when one is chosen
    (else the engine's own: $FACECACHE_GPU_RUNTIME, else the per-user folder every Blender shares); and, when a
    remote cache is set, its URL and the remote cache support's folder (the engine puts the support on its path)."""
    chosen = prefs()
    folder = getattr(chosen, "gpu_runtime_dir", "") if chosen else ""
    environment = {GPU_RUNTIME_DIR_ENV: bpy.path.abspath(folder)} if folder else {}
    url, _read_only = remote_cache()
    if url:
        environment.update({REMOTE_CACHE_ENV: url, remote_support.SUPPORT_DIR_ENV: remote_support_dir()})
    return environment


def remote_cache() -> tuple[str, bool]:
    """The remote cache tier (s3://bucket/prefix, "" for none) and whether it is read only: the preferences'
    Remote Cache, else $FACECACHE_REMOTE_CACHE (a farm's task), with the preferences' Read Only. Credentials
    never come from here: the engine reads the standard AWS configuration."""
    chosen = prefs()
    url = (getattr(chosen, "remote_cache", "") or "").strip() if chosen else ""
    read_only = bool(getattr(chosen, "remote_read_only", False)) if chosen else False
    return url or os.environ.get(REMOTE_CACHE_ENV, "").strip(), read_only


def remote_support_dir() -> str:
    """Where the remote cache support (botocore) is installed: a folder of the extension's user data."""
    try:
        return bpy.utils.extension_path_user(__package__, path="remote-support", create=False)
    except (ValueError, AttributeError):  # not installed as an extension (development checkout)
        data = bpy.utils.user_resource("DATAFILES", path="vse_faceswap", create=False)
        return os.path.join(data, "remote-support")


def remote_support_missing() -> str:
    """One line when a remote cache is set but its S3 client is not installed, as last looked at ("" otherwise)."""
    return REMOTE_SUPPORT_NEEDED if remote_cache()[0] and not runtime.STATE.remote_support else ""


def media_path(strip) -> str:
    return os.path.abspath(bpy.path.abspath(strip.filepath))


def picture(strip) -> str:
    """The key of the picture the strip shows in the engine's coverage answers (`protocol.picture_key`)."""
    return protocol.picture_key(media_path(strip), deinterlaced(strip))


def deinterlaced(strip) -> bool:
    """Whether the strip shows its file through Blender's Deinterlace option (movie and image strips have
    it, under this name in every Blender the add-on supports): another picture, analysed and swapped apart."""
    return bool(getattr(strip, "use_deinterlace", False))


def output_root(scene, media: str, deinterlace: bool = False, shown: str = "", checked: bool = True) -> str:
    """Swapped frames of one media file's picture: `<cache>/swaps/<name digest>`; the engine adds `<stem>/`.
    Media inside the .blend's folder is named by its path relative to the .blend, so the folder
    name survives moving the project or opening it from a teammate's mount at another path. Its
    deinterlaced picture (`deinterlace`) has a folder of its own.

    `shown` is the folder the swapped strip shows now. A copy of the project whose clip is stored by its
    absolute path inside the original's folder names that clip by another path than the original did (it
    now lies outside the copy's folder); its swapped strip still shows the copied cache's folder, named
    from the original's folder. That folder is kept when its name is one this media's picture gets from
    some folder holding it, and (`checked`: not while drawing, which never touches the file system) when
    its clip marker names this clip and picture."""
    swaps = os.path.join(cache_dir(scene), layout.SWAPS_FOLDER)
    named = os.path.join(swaps, _folder_name(_blend_relative(media) or media, deinterlace))
    kept = os.path.dirname(os.path.normpath(shown)) if shown else named
    if (_same_folder(kept, named) or not _same_folder(os.path.dirname(kept), swaps)
            or os.path.basename(kept) not in _names_from_folders_holding(media, deinterlace)):
        return named
    return kept if not checked or layout.holds_clip(kept, media, deinterlace) else named


def _folder_name(name: str, deinterlace: bool) -> str:
    name = os.path.normcase(name) + (" deinterlaced" if deinterlace else "")
    return hashlib.sha256(name.encode()).hexdigest()[:16]


def _names_from_folders_holding(media: str, deinterlace: bool) -> set[str]:
    """The folder names `output_root` gives this media's picture from a .blend in any folder above it."""
    names, folder = set(), os.path.dirname(os.path.abspath(media))
    while True:
        names.add(_folder_name(_relative_to(media, os.path.join(folder, "edit.blend")), deinterlace))
        if os.path.dirname(folder) == folder:
            return names
        folder = os.path.dirname(folder)


def _same_folder(a: str, b: str) -> bool:
    return os.path.normcase(os.path.abspath(a)) == os.path.normcase(os.path.abspath(b))


def _blend_relative(path: str, blend_path: str | None = None) -> str | None:
    """`//…` for a path inside the folder of the .blend (the saved one by default), else None."""
    blend_path = blend_path or bpy.data.filepath
    if not blend_path:
        return None
    folder = os.path.dirname(os.path.abspath(blend_path))
    try:
        inside = os.path.commonpath([folder, os.path.abspath(path)]) == folder
    except ValueError:  # another drive on Windows
        return None
    return _relative_to(path, blend_path) if inside else None


def stored_path(folder: str, blend_path: str | None = None) -> str:
    """How a swapped strip stores its folder: relative to the .blend (`//…/`) when the folder is inside
    the .blend's folder, as the default cache is, else absolute."""
    relative = _blend_relative(folder, blend_path)
    return relative.rstrip("/") + "/" if relative else os.path.join(os.path.abspath(folder), "")


def output_folder(scene, media: str, deinterlace: bool = False) -> str:
    return layout.output_folder(output_root(scene, media, deinterlace), media, still=False)


def check_location() -> str | None:
    """None when $FACESWAP_CACHE_DIR is unset or absolute, else a message (a relative one would
    depend on the folder Blender was started in)."""
    value = os.environ.get(CACHE_DIR_ENV)
    if value and not os.path.isabs(value):
        return f"{CACHE_DIR_ENV} must be an absolute folder (it is {value!r}): set it to the shared cache's full path"
    return None


def check_writable(folder: str) -> str | None:
    """None when the folder can be created and written, else the engine's one-line message (what
    happened, what to do). A folder created here is private; the engine makes it a team folder's
    group-shared one where that is the rule (`facecache.permissions`)."""
    try:
        os.makedirs(folder, mode=0o700, exist_ok=True)
        probe = tempfile.NamedTemporaryFile(dir=folder, prefix=".probe", delete=True)
        probe.close()
    except OSError as exc:
        return str(os_fault(exc, "write the cache folder", folder, hint=CHOOSE_ANOTHER))
    return None


CHOOSE_ANOTHER = "choose another Cache Location in the add-on preferences, or fix the folder's permissions"


def os_fault(exc: OSError, doing: str, path: str, hint: str = ""):
    """The engine's one mapping of operating-system faults to messages (`facecache.errors`)."""
    try:
        from .facecache import errors  # standard library only: safe to import in Blender's process
    except ImportError:
        from facecache import errors
    return errors.os_fault(exc, doing, path, hint)


def _relative_to(target_abs: str, blend_path: str) -> str:
    try:
        return "//" + os.path.relpath(target_abs, os.path.dirname(blend_path)).replace(os.sep, "/")
    except ValueError:  # another drive on Windows
        return target_abs


@persistent
def on_save_pre(filepath, *_args):
    """Keep each scene's cache where it is across Save As; move an unsaved file's cache beside it."""
    if _overridden():
        return
    for scene in bpy.data.scenes:
        props = getattr(scene, "faceswap", None)
        if props is None or not props.cache_dir.startswith("//"):
            continue
        old = cache_dir(scene)
        if not bpy.data.filepath:
            new = os.path.abspath(os.path.join(os.path.dirname(filepath), props.cache_dir[2:]))
            if os.path.isdir(old) and old != new:
                try:
                    _move_tree(old, new)
                except OSError as exc:  # a handler cannot report to the window: the console line must do
                    print(f"VSE Face Swap: {os_fault(exc, 'move the cache beside the saved file', new, CHOOSE_ANOTHER)}; "
                          f"the cache stays in {old}")
                    continue
                _repoint_swapped_strips(old, new, filepath)
        elif os.path.isdir(old) and os.path.dirname(os.path.abspath(filepath)) != os.path.dirname(
                os.path.abspath(bpy.data.filepath)):
            props.cache_dir = _relative_to(old, filepath)


def _move_tree(old: str, new: str) -> None:
    os.makedirs(new, exist_ok=True)
    for name in os.listdir(old):
        source, target = os.path.join(old, name), os.path.join(new, name)
        if os.path.exists(target):
            if os.path.isdir(source):
                _move_tree(source, target)
            continue
        shutil.move(source, target)
    shutil.rmtree(old, ignore_errors=True)


def _repoint_swapped_strips(old: str, new: str, blend_path: str) -> None:
    for scene in bpy.data.scenes:
        for strip in compat.all_strips(scene.sequence_editor):
            if strip.type == "IMAGE" and strip.faceswap.role == "SWAPPED":
                directory = os.path.abspath(bpy.path.abspath(strip.directory))
                if directory.startswith(old):
                    strip.directory = stored_path(new + directory[len(old):], blend_path)


def register():
    bpy.app.handlers.save_pre.append(on_save_pre)
    tempfile.gettempdir()  # found (by writing probe files) once now, so the panel's cache path is string work


def unregister():
    if on_save_pre in bpy.app.handlers.save_pre:
        bpy.app.handlers.save_pre.remove(on_save_pre)
