"""compat.py is the one place that adapts Blender's API across 4.2, 4.5 and 5.0.

The source scan needs no bpy: it fails when any add-on module other than compat.py, a Blender test or
a script touches a name Blender renamed between those versions. The rest runs in each Blender."""

import ast
from pathlib import Path

import pytest

from blender_helpers import ROOT, add_movie, compat


def compat_renamed() -> set:
    """compat.RENAMED, read without importing bpy (the scan runs in every environment)."""
    tree = ast.parse((ROOT / "blender_addon" / "compat.py").read_text(encoding="utf-8"))
    (listed,) = [ast.literal_eval(node.value.args[0]) for node in tree.body if isinstance(node, ast.Assign)
                 and getattr(node.targets[0], "id", "") == "RENAMED"]
    return listed


RENAMED = compat_renamed()
SCANNED = [*sorted((ROOT / "blender_addon").glob("*.py")), *sorted((ROOT / "tests" / "blender").glob("*.py")),
           *sorted((ROOT / "scripts").glob("*.py"))]
EXEMPT = {ROOT / "blender_addon" / "compat.py", Path(__file__).resolve()}


def renamed_uses(source: str) -> list[str]:
    """`line: name` for each attribute, string or import of a renamed name, except through `compat`."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Attribute) and node.attr in RENAMED:
            if not (isinstance(node.value, ast.Name) and node.value.id == "compat"):
                found.append(f"{node.lineno}: .{node.attr}")
        elif isinstance(node, ast.Constant) and node.value in RENAMED:  # getattr(x, "strips"), hasattr(...)
            found.append(f"{node.lineno}: {node.value!r}")
        elif isinstance(node, ast.ImportFrom) and node.module != "compat":
            found += [f"{node.lineno}: import {a.name}" for a in node.names if a.name in RENAMED]
    return found


def test_scan_finds_renamed_names():
    assert {"strips", "strips_all", "sequences", "sequences_all", "Strip", "Sequence", "sequencer_scene"} <= RENAMED
    source = ("ed.strips.new_movie()\nx = getattr(ed, 'sequences_all')\nbpy.types.Sequence\n"
              "from bpy.types import Strip\nc.sequencer_scene\n")
    assert len(renamed_uses(source)) == 5
    assert renamed_uses("compat.sequencer_scene(c)\nfrom .compat import sequencer_scene\n"
                        "timeline.top_strips(s)\n'strips are here'\n") == []


def test_only_compat_touches_renamed_names():
    assert (ROOT / "blender_addon" / "compat.py").is_file() and len(SCANNED) > 10
    offenders = {path.relative_to(ROOT).as_posix(): uses for path in SCANNED if path.resolve() not in EXEMPT
                 for uses in [renamed_uses(path.read_text(encoding="utf-8"))] if uses}
    assert offenders == {}, f"use blender_addon/compat.py instead of Blender's renamed names: {offenders}"


@pytest.mark.blender
@pytest.mark.every_blender
def test_compat_on_this_blender(bpy, addon, project, clip):
    adapt = compat()
    editor = project.sequence_editor
    strip = add_movie(project, clip, frame_start=5)
    assert isinstance(strip, adapt.strip_type()) and hasattr(adapt.strip_type(), "faceswap")
    assert [s.name for s in adapt.top_strips(editor)] == [strip.name]
    meta = adapt.top_strips(editor).new_meta("Meta", 3, 1)
    assert not adapt.in_meta_strip(editor)
    assert {s.name for s in adapt.all_strips(editor)} == {strip.name, meta.name}
    assert adapt.all_strips(None) == []
    assert adapt.sequencer_scene(bpy.context) == project
    other = bpy.data.scenes.new("other")
    adapt.set_sequencer_scene(bpy.context, other)
    assert adapt.sequencer_scene(bpy.context) == (other if adapt.has_sequencer_scene() else project)
    assert adapt.has_sequencer_scene() == (bpy.app.version >= (5, 0, 0))
    adapt.set_sequencer_scene(bpy.context, project)
    assert len(adapt.retiming_keys(strip)) <= 2
    strip.move_to_meta(meta)
    assert [s.name for s in adapt.meta_contents(meta)] == [strip.name]
    assert adapt.animation_curves(project) == []
    strip.transform.keyframe_insert("offset_x", frame=1)
    (curve,) = adapt.animation_curves(project)
    assert curve.data_path == strip.transform.path_from_id("offset_x")
    adapt.remove_animation_curve(project, curve)
    assert adapt.animation_curves(project) == []
