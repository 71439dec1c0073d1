"""VSE Face Swap: a Blender extension over the `facecache` engine (which runs in its own process).

Modules: compat (the API differences of Blender 4.2-5.0), props (settings), prefs, paths (cache location),
frame_mapping (strip <-> media frames), timeline (originals and swapped strips), engine_client (the process
boundary), jobs, ops, ui, preview (playhead), coverage_overlay (bars under strips), coverage_watch (live
refresh from the cache folder).
"""

from . import coverage_overlay, coverage_watch, jobs, ops, paths, prefs, preview, props, ui

_modules = (props, prefs, ops, ui, paths, preview, coverage_overlay, coverage_watch)


def register():
    for module in _modules:
        module.register()


def unregister():
    jobs.reset()
    for module in reversed(_modules):
        module.unregister()
