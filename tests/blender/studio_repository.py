"""A workstation's Blender and a studio's extension repository, in a fresh Blender process (blender_helpers'
`fresh_blender`: the bpy module, or `blender -b --python studio_repository.py -- URL ACTION`).

    python studio_repository.py URL install   # add the repository (once), sync it, install vse_faceswap from it
    python studio_repository.py URL upgrade   # sync it, then update every extension that has a newer version

Blender's user folders are $BLENDER_USER_RESOURCES (the caller's temporary folder), so the repository and the
installed extension stay there between the two runs, as on a workstation between two Blender sessions.
Prints one JSON object: the updates Blender saw after syncing, the installed version, whether it is enabled,
and the onnxruntime wheel Blender unpacked for its Python.
"""

import json
import sys
import tomllib
from pathlib import Path

import bpy

REPO_MODULE = "studio"
EXTENSION = "vse_faceswap"


def studio_repo(url: str):
    repos = bpy.context.preferences.extensions.repos
    for repo in repos:
        if repo.module == REPO_MODULE:
            return repo
    return repos.new(name="Studio", module=REPO_MODULE, remote_url=url)


def unpacked_onnxruntime() -> list[str]:
    """The `Tag:` lines of the onnxruntime wheel Blender unpacked into the extensions' shared site-packages."""
    site = Path(bpy.utils.user_resource("EXTENSIONS", path=".local")) / "lib" / \
        "python{}.{}".format(*sys.version_info[:2]) / "site-packages"
    tags = []
    for info in site.glob("onnxruntime-*.dist-info"):
        tags += [line.split(":", 1)[1].strip() for line in (info / "WHEEL").read_text().splitlines()
                 if line.startswith("Tag:")]
    return tags


def main(url: str, action: str) -> None:
    import bl_pkg  # Blender's extension manager (an add-on of its own, enabled from the start)

    bpy.ops.wm.read_userpref()  # Blender starts with the user's preferences (repositories, enabled extensions)
    preferences = bpy.context.preferences
    repo = studio_repo(url)
    index = list(preferences.extensions.repos).index(repo)
    assert bpy.ops.extensions.repo_sync(repo_index=index) == {"FINISHED"}
    # What the status bar counts as updates (Blender skips that count in background mode, so ask for it here)
    updates = bl_pkg.repo_stats_calc_outdated_for_repo_directory(bl_pkg.repo_cache_store_ensure(), repo.directory)
    preferences.system.use_online_access = True  # installing from a remote repository asks for it (file:// too)
    if action == "install":
        result = bpy.ops.extensions.package_install(repo_index=index, pkg_id=EXTENSION, enable_on_install=True)
    else:
        result = bpy.ops.extensions.package_upgrade_all()
    assert result == {"FINISHED"}, result
    bpy.ops.wm.save_userpref()
    manifest = Path(repo.directory) / EXTENSION / "blender_manifest.toml"
    print(json.dumps({
        "updates": updates,
        "installed": tomllib.loads(manifest.read_text())["version"] if manifest.is_file() else None,
        "enabled": f"bl_ext.{REPO_MODULE}.{EXTENSION}" in preferences.addons,
        "onnxruntime_tags": unpacked_onnxruntime(),
    }))


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).parent))
    from blender_helpers import script_arguments

    main(*script_arguments()[:2])
