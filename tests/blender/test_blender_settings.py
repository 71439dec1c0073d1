"""One list of choices: every option of `facecache swap` is a property of the add-on (or listed as
command-line only on purpose), and the add-on's settings are what the engine accepts."""

import pytest

pytestmark = [pytest.mark.blender, pytest.mark.index]


def _swap_options() -> set[str]:
    from facecache.cli import build_parser

    parser = build_parser()
    commands = next(a for a in parser._actions if a.dest == "command")
    return {a.dest for a in commands.choices["swap"]._actions if a.dest != "help"}


def _other_value(owner, prop):
    """A value of `prop` other than the current one (None where the property is not a plain value)."""
    current = getattr(owner, prop.identifier)
    if prop.type == "ENUM":
        return next(item.identifier for item in prop.enum_items if item.identifier != current)
    if prop.type == "BOOLEAN":
        return not current
    if prop.type in ("FLOAT", "INT") and getattr(prop, "array_length", 0):
        return [prop.hard_min + (prop.hard_max - prop.hard_min) * 0.25] * prop.array_length
    if prop.type in ("FLOAT", "INT"):
        value = prop.hard_min + (prop.hard_max - prop.hard_min) / 4
        return int(value) + 1 if prop.type == "INT" else value
    if prop.type == "STRING":
        return "/tmp/some/other/folder/"
    return None


def _reached(bpy, addon, owner, base: dict) -> set[str]:
    """The engine settings that changing each property of `owner` changes, from the state `base`."""
    scene = bpy.context.scene
    props = scene.faceswap
    reached = set()
    for prop in owner.bl_rna.properties:
        if prop.identifier in ("rna_type", "name") or prop.is_readonly and prop.type != "COLLECTION":
            continue
        for key, value in base.items():
            setattr(props, key, value)
        before = addon.jobs.engine_settings(scene)
        if prop.type == "COLLECTION":
            collection = getattr(owner, prop.identifier)
            item = collection.add()
            if hasattr(item, "filepath"):
                item.filepath = "/tmp/another_face.png"
            after = addon.jobs.engine_settings(scene)
            collection.remove(len(collection) - 1)
        else:
            value = _other_value(owner, prop)
            if value is None:
                continue
            saved = getattr(owner, prop.identifier)
            saved = list(saved) if hasattr(saved, "__len__") and not isinstance(saved, str) else saved
            setattr(owner, prop.identifier, value)
            after = addon.jobs.engine_settings(scene)
            setattr(owner, prop.identifier, saved)
        reached |= {key for key in after if after[key] != before.get(key)}
    return reached


def test_every_cli_swap_option_is_a_property_or_cli_only_on_purpose(bpy, addon, project):
    from facecache.pipeline import Settings

    props_module = __import__(f"{addon.jobs.__package__}.props", fromlist=["CLI_ONLY"])
    reached = set()
    for base in ({}, {"selector": "reference"}, {"selector": "one", "use_position": True}):
        reached |= _reached(bpy, addon, project.faceswap, base)
        reached |= _reached(bpy, addon, addon.prefs, base)
    options = _swap_options()
    missing = options - reached - set(props_module.CLI_ONLY)
    assert not missing, f"`facecache swap` options the add-on cannot set: {sorted(missing)}"
    assert set(props_module.CLI_ONLY) <= options  # nothing listed that the command line does not have
    assert {"references", "source_face", "position", "detector", "swapper", "mask_blur"} <= reached


def test_the_engine_accepts_the_addons_settings(bpy, addon, project):
    from facecache import choices
    from facecache.pipeline import Settings

    props = project.faceswap
    props.selector, props.use_position = "one", True
    settings = Settings.from_dict(addon.jobs.engine_settings(project))
    assert settings.position == (0.5, 0.5) and settings.output_form == "sequencer"
    props.selector = "reference"
    props.references.add().filepath = "/tmp/reference.png"
    settings = Settings.from_dict(addon.jobs.engine_settings(project))
    assert settings.references == ("/tmp/reference.png",) and settings.position is None
    # the menus are the engine's choices
    for prop, options in (("swapper", choices.SWAPPERS), ("selector", choices.SELECTORS),
                          ("detector", choices.DETECTORS), ("tracking", choices.TRACKING),
                          ("landmarker", choices.LANDMARKERS),
                          ("recognizer", choices.RECOGNIZERS)):
        items = [item.identifier for item in props.bl_rna.properties[prop].enum_items]
        assert items == list(choices.names(options))
    assert [i.identifier for i in addon.prefs.bl_rna.properties["execution_provider"].enum_items] == \
        list(choices.names(choices.PROVIDERS))
    assert props.bl_rna.properties["mask_blur"].hard_max == choices.COMPOSITE[0].maximum


def test_the_addon_sends_every_engine_setting_and_nothing_else(bpy, addon, project):
    """The add-on's settings come from the engine's `Settings` fields (facecache.protocol.SETTINGS_NAMES): each is
    sent, by the scene or the preferences, and the scene's part is all the settings key of a swapped strip holds."""
    import dataclasses

    from facecache.pipeline import Settings

    fields = [field.name for field in dataclasses.fields(Settings)]
    assert sorted(addon.jobs.engine_settings(project)) == sorted(fields)
    scene_part = project.faceswap.engine_settings()
    assert sorted(scene_part) == sorted(set(fields) - set(addon.props.FROM_PREFERENCES))
    assert scene_part["max_yaw"] == round(project.faceswap.max_yaw, 6) and scene_part["sources"]
    project.faceswap.limit_yaw = False
    assert project.faceswap.engine_settings()["max_yaw"] is None
