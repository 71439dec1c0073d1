"""Every Blender command line users are shown or given carries `--python-exit-code 1` before its Python:
Blender reads its arguments in order, and without it a failed script exits 0, so a farm marks the task
done. Checked where such lines live: the README and docs/, what the scripts, the engine and the add-on
print or say, and the farm bundles' argument lists."""

import re
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
PYTHON_OPTION = re.compile(r"--python(?:-expr|-text)?(?=[\s\"',\]]|$)")  # not --python-exit-code
BLENDER_COMMAND = re.compile(r"\bblender(?:\.exe)?\s+(?:-b|--background)\b.*", re.IGNORECASE)


def text_files():
    yield ROOT / "README.md"
    for folder, pattern in (("docs", "*.md"), ("scripts", "*.py"), ("core/facecache", "*.py"),
                            ("blender_addon", "*.py")):
        yield from sorted((ROOT / folder).rglob(pattern))


def command_lines(text: str):
    """Each `blender -b …` command in `text` that runs Python, its shell continuation lines joined."""
    for match in BLENDER_COMMAND.finditer(re.sub(r"\\\s*\n\s*", " ", text)):
        if PYTHON_OPTION.search(match.group()):
            yield match.group()


def exit_code_comes_first(arguments: list[str]) -> bool:
    first_python = next(i for i, argument in enumerate(arguments) if PYTHON_OPTION.fullmatch(argument))
    return any(arguments[i:i + 2] == ["--python-exit-code", "1"] for i in range(first_python))


def test_every_blender_command_line_we_show_fails_when_its_python_fails():
    found = {}
    for path in text_files():
        for line in command_lines(path.read_text(encoding="utf-8")):
            found[f"{path.relative_to(ROOT)}: {line.strip()}"] = exit_code_comes_first(
                [word.strip("\"'`") for word in line.split()])
    assert len(found) >= 4, found  # the README's farm line, docs/, the demo's printed line, ...
    assert [line for line, ok in found.items() if not ok] == []


def yaml_argument_lists(node):
    if isinstance(node, dict):
        if isinstance(node.get("args"), list):
            yield [str(argument) for argument in node["args"]]
        for value in node.values():
            yield from yaml_argument_lists(value)
    elif isinstance(node, list):
        for value in node:
            yield from yaml_argument_lists(value)


def test_every_farm_task_that_runs_python_in_blender_fails_when_it_fails():
    lists = []
    for template in sorted((ROOT / "farm" / "openjd").rglob("template.yaml")):
        lists += yaml_argument_lists(yaml.safe_load(template.read_text(encoding="utf-8")))
    for script in sorted((ROOT / "farm" / "flamenco").glob("*.js")):
        for array in re.findall(r"\bargs:\s*\[([^\]]*)\]", script.read_text(encoding="utf-8")):
            lists.append([item.strip().strip("\"'") for item in array.split(",")])
    running_python = [arguments for arguments in lists if any(PYTHON_OPTION.fullmatch(a) for a in arguments)]
    assert len(running_python) >= 3  # OpenJD's FaceSwap and Render steps, Flamenco's command
    assert all(exit_code_comes_first(arguments) for arguments in running_python), running_python
