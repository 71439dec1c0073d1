"""facecache: the face analysis engine behind vse_faceswap, built around a
persistent, frame-level cache of analyses.

The engine never imports bpy; the Blender add-on talks to it through its API
or its CLI.
"""

__version__ = "0.1.0"
