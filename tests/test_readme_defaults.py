"""The defaults the README and docs/ state are the CLI's own: every "`--option …` (default V" in them is
checked against the option's default in `facecache`'s parsers (what `--help` prints), its panel name against
`facecache.choices`, and the per-user cache folder docs/cli.md (the options' page) names on each platform
against `facecache.locations`."""

import argparse
import re
from pathlib import Path

import platformdirs
import platformdirs.macos
import platformdirs.unix
import platformdirs.windows

from facecache import choices, locations
from facecache.cli import build_parser
from facecache.cli.common import parse_size

ROOT = Path(__file__).resolve().parents[1]


def flat(path: Path) -> str:
    return re.sub(r"\s+", " ", path.read_text(encoding="utf-8"))  # a claim may wrap onto the next line


TEXT = " ".join(flat(path) for path in [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))])
OPTIONS_PAGE = flat(ROOT / "docs" / "cli.md")  # where every option is listed with its default
STATED = re.compile(r"`(--[a-z-]+)(?: [^`]*)?` \(default `?([^\s,;:)`]+)`?(?:, \*([^*]+)\* in the panel)?")


def options() -> dict[str, list[argparse.Action]]:
    """Each option string -> its action in every (sub-)command that offers it."""
    found: dict[str, list[argparse.Action]] = {}

    def walk(parser: argparse.ArgumentParser) -> None:
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                for sub in action.choices.values():
                    walk(sub)
            for flag in action.option_strings:
                found.setdefault(flag, []).append(action)

    walk(build_parser())
    return found


def states(stated: str, default) -> bool:
    """Whether the README's `stated` value is `default` ("45°" is 45, "10G" is 10**10 bytes)."""
    stated = stated.rstrip("°")
    if isinstance(default, (int, float)) and not isinstance(default, bool):
        try:
            return float(stated) == default
        except ValueError:
            return parse_size(stated) == default
    return stated == str(default)


def panel_label(action: argparse.Action, name: str) -> str:
    """The panel's label of choice `name` of an option offering a `facecache.choices` list."""
    offered = next(value for value in vars(choices).values() if isinstance(value, tuple) and value
                   and isinstance(value[0], choices.Choice) and choices.names(value) == tuple(action.choices))
    return next(choice.label for choice in offered if choice.name == name)


def test_every_default_the_readme_states_is_the_clis():
    offered = options()
    claims = STATED.findall(TEXT)
    listed = STATED.findall(OPTIONS_PAGE)
    assert len(listed) >= 10, listed  # blend settings, yaw, providers, models, selector, threshold
    wrong = []
    for option, value, label in claims:
        assert option in offered, f"the README states a default for {option}, which no command offers"
        if not any(states(value, action.default) for action in offered[option]):
            wrong.append(f"{option}: README {value}, CLI {[action.default for action in offered[option]]}")
        elif label and label != panel_label(offered[option][0], value):
            wrong.append(f"{option} {value}: README *{label}*, panel {panel_label(offered[option][0], value)}")
    assert wrong == []


def test_the_selector_default_is_the_largest_face():
    """Decided on issue 27: an editor replaces one person in a shot, the largest face by default."""
    assert ("--selector", "one", "Largest Face") in STATED.findall(OPTIONS_PAGE)
    assert ("--selector", "one", "Largest Face") in STATED.findall(flat(ROOT / "README.md"))
    assert choices.DEFAULTS["selector"] == "one"


def test_the_per_user_cache_folder_the_readme_names_on_each_platform(monkeypatch, tmp_path):
    named = dict((system, path) for path, system in re.findall(r"`([^`]+)` on (Linux|macOS|Windows)", OPTIONS_PAGE))
    assert set(named) == {"Linux", "macOS", "Windows"}
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.delenv("XDG_CACHE_HOME", raising=False)
    monkeypatch.delenv(locations.CACHE_DIR_ENV, raising=False)
    # Windows' folder API cannot run here: its answer for LOCALAPPDATA is stood in for, the rest is platformdirs'.
    monkeypatch.setattr(platformdirs.windows, "get_win_folder", lambda csidl: "%LOCALAPPDATA%")
    for system, rules in (("Linux", platformdirs.unix.Unix), ("macOS", platformdirs.macos.MacOS),
                          ("Windows", platformdirs.windows.Windows)):
        monkeypatch.setattr(platformdirs, "PlatformDirs", rules)
        folder = str(locations.resolve_cache_dir()).replace(str(tmp_path), "~")
        assert folder.replace("/", "\\" if system == "Windows" else "/") == named[system], system
