"""The engine protocol is spelled in one place (`facecache.protocol`): no module that builds or reads its
messages writes one of its keys as a string literal, the settings it names are the engine's `Settings`
fields, and the module needs nothing beyond the standard library (the add-on loads it inside Blender)."""

from __future__ import annotations

import ast
import dataclasses
import sys
from pathlib import Path

from facecache import protocol
from facecache.pipeline import Settings

ROOT = Path(__file__).resolve().parent.parent
ENGINE = ROOT / "core" / "facecache"
# The engine's modules that build or read protocol messages, and every module of the add-on.
SPEAKERS = [ENGINE / name for name in ("engine.py", "serve.py", "worker.py", "jobs/run_summary.py", "gpu/jobs.py",
                                       "jobs/swap_job.py", "pipeline.py", "cli/__init__.py", "cli/analyze_cmd.py",
                                       "cli/swap_cmd.py", "demo.py")]
SPEAKERS += sorted((ROOT / "blender_addon").glob("*.py"))
# Where a protocol key's word names something else, said once here with what it is.
OTHER_VOCABULARIES = {
    **{("blender_addon/props.py", key): "CLI_ONLY: an option of the command line" for key in ("target", "out", "frames")},
    **{("blender_addon/prefs.py", key): "the GPU status's own fields (facecache.gpu.status)"
       for key in ("cuda", "folder", "installed", "models", "providers", "sessions")},
    ("blender_addon/timeline.py", "folder"): "where a swapped strip goes (its place)",
    **{("core/facecache/engine.py", key): "JOB_KINDS: a job kind (its summary's key is named after it)"
       for key in ("gpu_install", "gpu_uninstall", "remote_support_install", "remote_support_uninstall")},
    ("core/facecache/engine.py", "folder"): "the removed remote cache support's folder, in its summary",
    ("core/facecache/gpu/jobs.py", "folder"): "the removed GPU runtime's folder, in the summary's gpu_uninstall",
    **{("core/facecache/jobs/swap_job.py", key): "the swap records' cache namespace (its key must not change)"
       for key in ("swapper", "selector")},
    **{("core/facecache/demo.py", key): "the blend tweak: Settings fields by name (dataclasses.replace)"
       for key in ("mask_blur", "opacity")},
    **{("core/facecache/pipeline.py", key): "choices.DEFAULTS and the models' settings, by the settings' own names"
       for key in ("providers", "detector", "tracking", "landmarker", "recognizer", "swapper", "selector",
                   "output_form", "picture_rules")},
}
MESSAGES = (protocol.Request, protocol.Item, protocol.Progress, protocol.Result, protocol.Error, protocol.Summary,
            protocol.JobSettings)
KEYS = {key for message in MESSAGES for key in message.__annotations__}
VALUES = {protocol.PROGRESS, protocol.RESULT, protocol.ERROR, protocol.CANCEL, protocol.CANCELLED_KIND,
          protocol.DEINTERLACED_PICTURE}


def literal_keys(source: str):
    """(string, line) for each string literal used as a key: a subscript, the first argument of
    get/pop/setdefault, a dict display's key, or the left side of `in` / `not in`."""
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Subscript):
            candidates = [node.slice]
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.args:
            candidates = [node.args[0]] if node.func.attr in ("get", "pop", "setdefault") else []
        elif isinstance(node, ast.Dict):
            candidates = [key for key in node.keys if key is not None]
        elif isinstance(node, ast.Compare) and isinstance(node.ops[0], (ast.In, ast.NotIn)):
            candidates = [node.left]
        else:
            continue
        for candidate in candidates:
            if isinstance(candidate, ast.Constant) and isinstance(candidate.value, str):
                yield candidate.value, candidate.lineno


def protocol_literals(path: Path, root: Path = ROOT) -> list[str]:
    """Where the module at `path` writes a protocol key as a literal (but where its word means another thing)."""
    name = path.relative_to(root).as_posix()
    return [f"{name}:{line}: {key!r}" for key, line in literal_keys(path.read_text(encoding="utf-8"))
            if key in KEYS and (name, key) not in OTHER_VOCABULARIES]


def test_no_module_that_speaks_the_protocol_spells_a_key_itself():
    found = [hit for path in SPEAKERS for hit in protocol_literals(path)]
    assert not found, "use facecache.protocol's constant for these keys:\n" + "\n".join(found)


def test_the_scan_finds_a_key_put_back_as_a_literal(tmp_path):
    put_back = ('summary["analysed"]\nmessage.get("kind")\n{"media": path, "start": 0}\n'
                'if "id" in message: pass\nreport.pop("turned_away", {})\n')
    assert sorted(key for key, _line in literal_keys(put_back)) == ["analysed", "id", "kind", "media", "start",
                                                                     "turned_away"]
    module = tmp_path / "blender_addon" / "jobs.py"
    module.parent.mkdir()
    module.write_text('status = job.result.get("cancelled")\nreport = {protocol.WRITTEN: 0}\n', encoding="utf-8")
    assert protocol_literals(module, tmp_path) == ["blender_addon/jobs.py:1: 'cancelled'"]
    other = tmp_path / "blender_addon" / "props.py"
    other.write_text('CLI_ONLY = {"out": "...", "sources": "..."}\n', encoding="utf-8")
    assert protocol_literals(other, tmp_path) == ["blender_addon/props.py:1: 'sources'"]  # "out" is the CLI's


def test_every_key_constant_is_in_a_message_and_every_message_key_is_a_constant():
    constants = {value for name, value in vars(protocol).items() if name.isupper() and isinstance(value, str)}
    assert constants - VALUES == KEYS


def test_the_settings_are_the_engines_settings_fields():
    assert protocol.SETTINGS_NAMES == tuple(field.name for field in dataclasses.fields(Settings))


def test_messages_are_made_with_the_protocols_keys():
    assert protocol.item("clip.mp4", 2, 5, "out") == {"media": "clip.mp4", "start": 2, "stop": 5, "out": "out"}
    assert "out" not in protocol.item("clip.mp4", 2, 5)
    assert protocol.frame_range(protocol.item("clip.mp4", 2, 5)) == range(2, 5)
    assert protocol.progress(3, 24, "clip.mp4") == {"type": "progress", "done": 3, "total": 24, "label": "clip.mp4"}
    assert protocol.result({"frames": 1}) == {"type": "result", "summary": {"frames": 1}}
    assert protocol.error("no", "ModelMissing", 2) == {"type": "error", "message": "no", "kind": "ModelMissing",
                                                       "exit_code": 2}
    assert "exit_code" not in protocol.error("stopped", "EngineDied")
    assert protocol.cancel(7) == {"kind": "cancel", "target": 7}


def test_the_protocol_needs_only_the_standard_library():
    tree = ast.parse((ENGINE / "protocol.py").read_text(encoding="utf-8"))
    imported = {alias.name.split(".")[0] for node in ast.walk(tree) if isinstance(node, ast.Import)
                for alias in node.names}
    imported |= {node.module.split(".")[0] for node in ast.walk(tree)
                 if isinstance(node, ast.ImportFrom) and node.module and node.level == 0}
    assert imported - {"__future__"} <= set(sys.stdlib_module_names)
