"""VSE Face Swap: a Blender extension over the `facecache` engine (which runs in its own process).

Modules: compat (the API differences of Blender 4.2-5.0), props (settings), prefs, paths (cache location),
frame_mapping (strip <-> media frames), timeline (originals and swapped strips), pending_frame (the stand-in for
frames not made yet), faceless_keys (frames without a face keyed out of playback), engine_client (the process
boundary: one engine session, speaking the engine's `protocol`), runtime (what the session knows, never saved:
the one place for module-level state), redraw, jobs, ops, gpu_ops (the NVIDIA GPU runtime from the preferences),
remote_ops (the remote cache's S3 client from the preferences),
ui, preview (live preview under the playhead), coverage_overlay (bars under strips), coverage_watch and
cache_watcher (live refresh from the cache folder), scene_size (match the scene's frame to a clip).
"""

from . import (coverage_overlay, coverage_watch, gpu_ops, jobs, ops, paths, prefs, preview, props, remote_ops,
               runtime, scene_size, ui)

_modules = (props, prefs, ops, gpu_ops, remote_ops, scene_size, ui, paths, jobs, preview, coverage_overlay,
            coverage_watch)


def register():
    for module in _modules:
        module.register()


def unregister():
    for module in reversed(_modules):
        module.unregister()
    runtime.ENGINE.stop()  # the engine process ends with the add-on
