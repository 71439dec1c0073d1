"""compat.py is the one place that adapts Blender's API across 4.2 to 5.2.

The source scans need no bpy: they fail when any add-on module other than compat.py, a Blender test or
a script touches a name Blender renamed between those versions, or when another add-on module reads a
strip's timing by a name 5.1 deprecated. The rest runs in each Blender."""

import ast
import warnings
from pathlib import Path

import pytest

from blender_helpers import ROOT, add_movie, compat, select_only


def compat_constant(name: str):
    """A constant of compat.py, read without importing bpy (the scans run in every environment)."""
    tree = ast.parse((ROOT / "blender_addon" / "compat.py").read_text(encoding="utf-8"))
    (value,) = [node.value for node in tree.body if isinstance(node, ast.Assign)
                and getattr(node.targets[0], "id", "") == name]
    return ast.literal_eval(value.args[0] if isinstance(value, ast.Call) else value)  # frozenset({...}) or {...}


RENAMED = compat_constant("RENAMED")
# The timing names 5.1 deprecated, but `frame_start` and `frame_duration`: a scene's frame range, an operator's
# options and a movie clip's length have those names too. The 5.1+ run checks every name
# (test_the_extension_reads_strip_timing_without_deprecated_names).
DEPRECATED_TIMING = set(compat_constant("TIMING_NAMES").values()) - {"frame_start", "frame_duration"}
SCANNED = [*sorted((ROOT / "blender_addon").glob("*.py")), *sorted((ROOT / "tests" / "blender").glob("*.py")),
           *sorted((ROOT / "scripts").glob("*.py"))]
EXEMPT = {ROOT / "blender_addon" / "compat.py", Path(__file__).resolve()}


def renamed_uses(source: str, names=RENAMED) -> list[str]:
    """`line: name` for each attribute, string or import of one of `names`, except through `compat`."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Attribute) and node.attr in names:
            if not (isinstance(node.value, ast.Name) and node.value.id == "compat"):
                found.append(f"{node.lineno}: .{node.attr}")
        elif isinstance(node, ast.Constant) and node.value in names:  # getattr(x, "strips"), hasattr(...)
            found.append(f"{node.lineno}: {node.value!r}")
        elif isinstance(node, ast.ImportFrom) and node.module != "compat":
            found += [f"{node.lineno}: import {a.name}" for a in node.names if a.name in names]
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


def test_only_compat_reads_strip_timing_by_the_names_5_1_deprecated():
    assert {"frame_final_start", "frame_offset_end", "animation_offset_start"} <= DEPRECATED_TIMING
    assert renamed_uses("s.frame_final_end - s.frame_offset_start\n", DEPRECATED_TIMING) == ["1: .frame_final_end",
                                                                                             "1: .frame_offset_start"]
    modules = [path for path in sorted((ROOT / "blender_addon").glob("*.py")) if path.name != "compat.py"]
    offenders = {path.name: uses for path in modules
                 for uses in [renamed_uses(path.read_text(encoding="utf-8"), DEPRECATED_TIMING)] if uses}
    assert offenders == {}, f"read and set strip timing through blender_addon/compat.py: {offenders}"


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


@pytest.mark.blender
@pytest.mark.every_blender
def test_the_extension_reads_strip_timing_without_deprecated_names(bpy, addon, project, clip):
    """Swap, split, trim and update a shot, map its frames through its group and find it under the playhead,
    recording every warning: none is a DeprecationWarning from the extension's own code (5.1 deprecated the
    old timing names, which still work in 5.2 and are to go in 6.0)."""
    folder = Path(addon.compat.__file__).parent
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        strip = add_movie(project, clip, frame_start=1)
        select_only(project, strip)
        assert bpy.ops.faceswap.swap() == {"FINISHED"}
        right_group = strip.parent_meta().split(13, "SOFT")
        right_group.frame_final_end -= 4  # the test's own edits may use the old names
        assert bpy.ops.faceswap.update() == {"FINISHED"}
        assert len(addon.timeline.swapped_strips(project)) == 2
        assert addon.frame_mapping.used_media_frames(strip, range(1, 40)) == set(range(12))
        project.frame_current, project.sequence_editor.active_strip = 14, None
        assert addon.ui.described_strip(project) == (right_group, "under the playhead")
        old_name_read = strip.frame_final_start  # the test's own, to show that the recording sees these warnings
    deprecated = [w for w in caught if issubclass(w.category, DeprecationWarning)]
    ours = [f"{Path(w.filename).name}:{w.lineno}: {w.message}" for w in deprecated
            if Path(w.filename).is_relative_to(folder)]
    assert ours == []
    renamed = "left_handle" in addon.compat.strip_type().bl_rna.properties  # 5.1+
    warned_here = [w for w in deprecated
                   if Path(w.filename) == Path(__file__) and "frame_final_start" in str(w.message)]
    assert len(warned_here) == (1 if renamed else 0)
    assert old_name_read == 1
