"""A workstation's Blender session and a studio's extension repository, in a fresh Blender process (the bpy
module, or a binary: blender_helpers' `fresh_blender`).

    python studio_repository.py URL                   # or: blender -b --python studio_repository.py -- URL

Reads actions from stdin, one a line, and answers each with one line `RESULT {json}` on stdout:
    install   add the repository (its index.json URL), sync it, install vse_faceswap from it
    upgrade   sync it again (Blender's "Check for Updates"), then update every extension that has a newer version
The JSON holds the updates Blender counted after syncing, the installed version, whether it is enabled, and the
`Tag:` lines of the onnxruntime wheel Blender unpacked for its Python. Blender's user folders are
$BLENDER_USER_RESOURCES (the caller's temporary folder).
"""

import json
import os
import shutil
import sys
import tomllib
from pathlib import Path

import bpy

REPO_MODULE = "studio"
EXTENSION = "vse_faceswap"


def unpacked_onnxruntime() -> list[str]:
    site = Path(bpy.utils.user_resource("EXTENSIONS", path=".local")) / "lib" / \
        "python{}.{}".format(*sys.version_info[:2]) / "site-packages"
    tags = []
    for info in site.glob("onnxruntime-*.dist-info"):
        tags += [line.split(":", 1)[1].strip() for line in (info / "WHEEL").read_text().splitlines()
                 if line.startswith("Tag:")]
    return tags


def act(repo, action: str) -> dict:
    import bl_pkg  # Blender's extension manager (an add-on of its own, enabled from the start)

    preferences = bpy.context.preferences
    index = list(preferences.extensions.repos).index(repo)
    assert bpy.ops.extensions.repo_sync(repo_index=index) == {"FINISHED"}
    # What the status bar counts as updates (Blender skips that count in background mode, so ask for it here)
    updates = bl_pkg.repo_stats_calc_outdated_for_repo_directory(bl_pkg.repo_cache_store_ensure(), repo.directory)
    if action == "install":
        result = bpy.ops.extensions.package_install(repo_index=index, pkg_id=EXTENSION, enable_on_install=True)
    else:
        result = bpy.ops.extensions.package_upgrade_all()
    assert result == {"FINISHED"}, result
    manifest = Path(repo.directory) / EXTENSION / "blender_manifest.toml"
    return {
        "updates": updates,
        "installed": tomllib.loads(manifest.read_text())["version"] if manifest.is_file() else None,
        "enabled": f"bl_ext.{REPO_MODULE}.{EXTENSION}" in preferences.addons,
        "onnxruntime_tags": unpacked_onnxruntime(),
    }


def main(url: str) -> None:
    repo = bpy.context.preferences.extensions.repos.new(name="Studio", module=REPO_MODULE, remote_url=url)
    bpy.context.preferences.system.use_online_access = True  # installing from a remote repository asks for it
    for line in sys.stdin:
        print("RESULT " + json.dumps(act(repo, line.strip())), flush=True)


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).parent))
    from blender_helpers import script_arguments

    main(script_arguments()[0])
    # The bpy 4.2 module crashes while Python shuts down once an add-on with property callbacks was enabled
    # (tests/blender/conftest.py); every answer is printed, so end here, with what Blender's exit removes.
    shutil.rmtree(bpy.app.tempdir, ignore_errors=True)
    os._exit(0)
