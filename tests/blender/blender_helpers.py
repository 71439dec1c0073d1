"""Helpers for the Blender tests (importable: pytest puts this folder on sys.path)."""

import json
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
MODULE = "bl_ext.user_default.vse_faceswap"


def add_movie(scene, path, frame_start=1, channel=1, name="clip"):
    strip = scene.sequence_editor.strips.new_movie(name, str(path), channel, frame_start)
    return strip


def select_only(scene, *strips):
    for strip in scene.sequence_editor.strips:
        strip.select = any(strip == s for s in strips)


def report(scene) -> dict:
    return json.loads(scene.faceswap.last_report)
