"""The opt-in NVIDIA GPU runtime as the engine finds and loads it: onnxruntime-gpu with NVIDIA's CUDA and
cuDNN libraries, pinned, hash-checked wheels unpacked into one folder that every Blender version and the CLI
share. It sits on the engine's floor, below the models, whose sessions load it (`models.runtime`); the add-on
reads `pins` (standard library only) in Blender's own process. Installing it and reporting on it is
`facecache.gpu`, a layer above.

- `pins`: the pinned wheels (CUDA 12 and 13, linux x86-64 and Windows x64) and their sizes;
- `driver`: the NVIDIA driver and GPUs as the driver reports them, and which CUDA major fits;
- `layout`: where the runtime lives and what is installed there (its manifest);
- `activate`: put the runtime first on the engine process's path, load its libraries, say what failed.

The engine's CPU onnxruntime stays the one used wherever this runtime is not installed.
"""
