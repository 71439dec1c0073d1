"""The opt-in NVIDIA GPU runtime: onnxruntime-gpu with NVIDIA's CUDA and cuDNN libraries, downloaded as
pinned, hash-checked wheels into one folder that every Blender version and the CLI share.

- `pins`: the pinned wheels (CUDA 12 and 13, linux x86-64 and Windows x64) and their sizes;
- `driver`: the NVIDIA driver and GPUs as the driver reports them, and which CUDA major fits;
- `layout`: where the runtime lives and what is installed there (its manifest);
- `wheels`: each pinned wheel downloaded by pip (the user's pip settings), kept across runs until installed;
- `install`: check and unpack, one install or removal at a time; remove;
- `activate`: put the runtime first on the engine process's path, load its libraries, say what failed;
- `status`: what is usable here and why not (`facecache gpu status`, the add-on's preferences).

The engine's CPU onnxruntime stays the one used wherever this runtime is not installed.
"""
