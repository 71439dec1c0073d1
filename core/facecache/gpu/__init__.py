"""Installing the opt-in NVIDIA GPU runtime and saying how it runs (what it is, where it lies and how the
engine loads it: `facecache.gpu_runtime`).

- `wheels`: each pinned wheel downloaded by pip (the user's pip settings), kept across runs until installed;
- `install`: check and unpack, one install or removal at a time; remove;
- `status`: what is usable here and why not (`facecache gpu status`, the add-on's preferences);
- `jobs`: the engine's gpu_status, gpu_install and gpu_uninstall jobs.
"""
