"""The sidebar panels' and the preferences' draw code runs in each Blender, in the states an editor sees.

A real `UILayout` exists only inside a window, and the bpy module has none, so the panels draw into
`CheckedLayout`, a stand-in held to the real contract: every call is checked against this Blender's own
`UILayout` RNA (the function exists, its arguments are its parameters, required ones are given, icons
and enum values are this Blender's, `prop` names a property of its data, `operator` a registered operator).
A panel that calls something this Blender lacks fails here on that Blender."""

import importlib
from types import SimpleNamespace

import pytest

from blender_helpers import MODULE, add_movie, select_only

pytestmark = [pytest.mark.blender, pytest.mark.index, pytest.mark.every_blender]

PROPERTY_OF = {"property": "data", "propname": "dataptr", "active_propname": "active_dataptr"}


class CheckedLayout:
    def __init__(self, bpy, calls: list):
        object.__setattr__(self, "_bpy", bpy)
        object.__setattr__(self, "_calls", calls)

    def __setattr__(self, name, value):  # layout.enabled, .alert, .use_property_split, ...
        assert name in self._bpy.types.UILayout.bl_rna.properties, f"UILayout has no property {name!r}"
        object.__setattr__(self, name, value)

    def __getattr__(self, name):
        functions = self._bpy.types.UILayout.bl_rna.functions
        assert name in functions, f"UILayout has no {name}() in Blender {self._bpy.app.version_string}"
        function = functions[name]

        def call(*args, **kwargs):
            inputs = [p for p in function.parameters if not p.is_output]
            assert len(args) <= len(inputs), f"{name}() takes {len(inputs)} arguments"
            bound = dict(zip((p.identifier for p in inputs), args))
            unknown = set(kwargs) - {p.identifier for p in inputs}
            assert not unknown, f"{name}() has no parameter {unknown}"
            bound.update(kwargs)
            missing = [p.identifier for p in inputs if p.is_required and p.identifier not in bound]
            assert not missing, f"{name}() needs {missing}"
            for key, value in bound.items():
                parameter = function.parameters[key]
                if parameter.type == "ENUM" and isinstance(value, str) and len(parameter.enum_items):
                    assert value in parameter.enum_items.keys(), f"{name}({key}={value!r}): not in this Blender"
                if key in PROPERTY_OF and value:
                    data = bound[PROPERTY_OF[key]]
                    assert value in data.bl_rna.properties, f"{name}(): {type(data).__name__} has no {value!r}"
            self._calls.append((name, bound))
            if name == "operator":
                family, op = bound["operator"].split(".")
                return CheckedOperatorProperties(getattr(getattr(self._bpy.ops, family), op).get_rna_type())
            outputs = [p for p in function.parameters if p.is_output]
            if outputs and getattr(getattr(outputs[0], "fixed_type", None), "identifier", "") == "UILayout":
                return type(self)(self._bpy, self._calls)
            return None

        return call


class CheckedOperatorProperties:
    """What `layout.operator()` returns: the button's operator settings, checked against the operator's RNA."""

    def __init__(self, rna):
        object.__setattr__(self, "_rna", rna)

    def __setattr__(self, name, value):
        assert name in self._rna.properties, f"{self._rna.identifier} has no property {name!r}"
        prop = self._rna.properties[name]
        if prop.type == "ENUM" and len(prop.enum_items):
            assert value in prop.enum_items.keys(), f"{self._rna.identifier}.{name} = {value!r}"
        object.__setattr__(self, name, value)


class SettingsLayout(CheckedLayout):
    """A `CheckedLayout` that also records what is set on it (`enabled`, `active`, ...) as ("set", {name: value})."""

    def __setattr__(self, name, value):
        super().__setattr__(name, value)
        self._calls.append(("set", {name: value}))


def draw(bpy, panel, context=None, layout=CheckedLayout) -> list:
    """Run the panel's poll and draw; returns the layout calls."""
    context = context or bpy.context
    assert panel.poll(context)
    calls = []
    panel.draw(SimpleNamespace(layout=layout(bpy, calls)), context)
    return calls


def texts(calls) -> list[str]:
    return [bound.get("text", "") for name, bound in calls if name == "label"]


def test_panels_draw_in_every_state(bpy, addon, project, clip):
    ui = importlib.import_module(f"{MODULE}.ui")
    main, strip_panel, cache = ui.FACESWAP_PT_main, ui.FACESWAP_PT_strip, ui.FACESWAP_PT_cache
    editor = project.sequence_editor

    calls = draw(bpy, main)
    assert {"template_list", "operator", "prop", "column", "row"} <= {name for name, _ in calls}
    assert texts(draw(bpy, strip_panel)) == ["Click a movie strip or a face swap group"]
    assert any(text.startswith("Size ") for text in texts(draw(bpy, cache)))

    strip = add_movie(project, clip)
    strip.frame_offset_end = 20
    select_only(project, strip)
    assert bpy.ops.faceswap.swap() == {"FINISHED"}
    group = strip.parent_meta()
    assert editor.active_strip == group and group.select  # the swapped shot, as the timeline shows it
    editor.active_strip = None  # a project just opened: the panel describes the group under the playhead
    text = texts(draw(bpy, strip_panel))
    assert text[0] == f"{group.name} (under the playhead)" and text[-1] == "Swapped strip up to date"
    # the 320x240 clip in the 1920x1080 scene shows a border: the panel says so and offers to match the scene
    calls = draw(bpy, strip_panel)
    assert "Clip 320 x 240, scene 1920 x 1080" in texts(calls)
    assert ("operator", {"operator": "faceswap.match_scene_size"}) in calls
    assert bpy.ops.faceswap.match_scene_size(strip=strip.name) == {"FINISHED"}
    assert (project.render.resolution_x, project.render.resolution_y) == (320, 240)
    assert not any(t.startswith("Clip ") for t in texts(draw(bpy, strip_panel)))
    editor.active_strip = strip
    assert texts(draw(bpy, strip_panel))[-1] == "Swapped strip up to date"
    editor.active_strip = addon.timeline.swapped_strips(project)[0]
    assert "Analysed 4 / 4 frames" in texts(draw(bpy, strip_panel))
    strip.frame_offset_end = 19  # a trim the swapped strip does not follow yet
    editor.active_strip = strip
    assert texts(draw(bpy, strip_panel))[-1] == "Swapped strip out of date: press Update"

    addon.runtime.STATE.job = addon.runtime.JobStatus(True, "swap", 0.5, "swap: 2/4")  # runtime state
    try:
        calls = draw(bpy, main)
    finally:
        addon.runtime.STATE.job = addon.runtime.JobStatus()
    assert ("progress", {"factor": 0.5, "text": "swap: 2/4"}) in calls
    assert ("operator", {"operator": "faceswap.cancel", "text": "", "icon": "CANCEL"}) in calls
    assert not any(bound.get("operator") == "faceswap.swap" for _, bound in calls)  # the bar stands in its place


def test_the_panels_offer_what_the_chosen_swapper_and_detector_use(bpy, addon, project):
    """The yaw limit shows for a swapper that uses it, the tracking menu is live for a detector that follows
    faces: the panels read it from the swapper's and the detector's choice, the records the engine reads."""
    ui = importlib.import_module(f"{MODULE}.ui")
    props = project.faceswap
    with_yaw_limit, tracking = [], []
    for swapper in ui.choices.SWAPPERS:
        props.swapper = swapper.name
        shown = {bound["property"] for name, bound in draw(bpy, ui.FACESWAP_PT_main) if name == "prop"}
        assert ("limit_yaw" in shown) == ("max_yaw" in shown) == swapper.uses_yaw_limit, swapper.name
        with_yaw_limit += [swapper.name] if "max_yaw" in shown else []
    for detector in ui.choices.DETECTORS:
        props.detector = detector.name
        calls = draw(bpy, ui.FACESWAP_PT_models, layout=SettingsLayout)
        menu = calls.index(("prop", {"data": props, "property": "tracking"}))
        assert calls[menu - 1][0] == "set" and calls[menu - 1][1]["enabled"] == detector.tracks, detector.name
        tracking += [detector.name] if calls[menu - 1][1]["enabled"] else []
    assert (with_yaw_limit, tracking) == (["classic", "classic_eyes"], ["mtcnn"])  # the classic swaps warp by pose


def test_unsaved_file_and_preferences_draw(bpy, addon):
    bpy.ops.wm.read_homefile(use_empty=True)
    addon.jobs.reset()
    ui = importlib.import_module(f"{MODULE}.ui")
    assert "Unsaved file: temporary cache, moved on first save" in texts(draw(bpy, ui.FACESWAP_PT_cache))

    prefs = addon.prefs
    saved = prefs.models_dir
    prefs.models_dir = ""
    try:
        calls = []
        view = SimpleNamespace(layout=CheckedLayout(bpy, calls), bl_rna=prefs.bl_rna,
                               **{name: getattr(prefs, name) for name in prefs.bl_rna.properties.keys()})
        type(prefs).draw(view, bpy.context)
    finally:
        prefs.models_dir = saved
    assert any(text.startswith("Using ") for text in texts(calls))
    assert ("operator", {"operator": "faceswap.install_models", "icon": "IMPORT"}) in calls


def test_the_preferences_wrap_the_gpu_status_to_their_width(bpy, addon):
    """A long line of the GPU status (a reason, what to do) is wrapped to the preferences' width, as the
    sidebar's lines are to the sidebar's, so its end is not cut off in a narrow window."""
    problem = ("the NVIDIA runtime in /studio/gpu-runtime/linux_x86_64 has no onnxruntime-gpu for this Python "
               "(cp313; it has cp311): run `facecache gpu install` with this Python, or press Install NVIDIA "
               "GPU Runtime")
    addon.runtime.STATE.gpu = {"driver": {"present": False, "problem": "nvidia-smi is not installed"},
                               "runtime": {"installed": False, "folder": "/studio/gpu-runtime", "problem": problem}}
    prefs = addon.prefs
    narrow = SimpleNamespace(region=SimpleNamespace(width=350), preferences=bpy.context.preferences)
    calls = []
    try:
        view = SimpleNamespace(layout=CheckedLayout(bpy, calls), bl_rna=prefs.bl_rna,
                               **{name: getattr(prefs, name) for name in prefs.bl_rna.properties.keys()})
        type(prefs).draw(view, narrow)
    finally:
        addon.runtime.STATE.gpu = {}
    lines = texts(calls)
    status = lines[lines.index("GPU") + 1:]
    assert max(len(line) for line in status) <= 350 / (7 * bpy.context.preferences.view.ui_scale)
    assert problem.replace(" ", "") in "".join(status).replace(" ", "")  # all of it (lines break after a "-" too)
