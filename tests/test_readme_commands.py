"""What the README shows works as shown: every `facecache …` command in it is one the CLI's parser accepts,
and the cheap ones (help, listings, status) really run; every `./dev X` is a command `dev` has, and `./dev`
alone lists them all; every link and picture in the README and in docs/ points at a file, and a heading,
that exists."""

import contextlib
import io
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from facecache.cli import build_parser

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text(encoding="utf-8")
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
FENCED = re.compile(r"^```[^\n]*\n(.*?)^```", re.MULTILINE | re.DOTALL)
# Commands that neither compute nor download: run for real, in a cache, models and GPU runtime folder of the test.
CHEAP = (["--help"], ["--version"], ["models", "list"], ["cache", "stats"], ["gpu", "status"])


def facecache_commands(text: str) -> list[list[str]]:
    """The arguments of each `facecache …` command in `text`: lines of its code blocks (continuations joined,
    comments dropped) and inline code."""
    commands = []
    for block in FENCED.findall(text):
        for line in re.sub(r"\\\n\s*", " ", block).splitlines():
            words = shlex.split(line, comments=True)
            if words[:1] == ["facecache"]:
                commands.append(words[1:])
    prose = FENCED.sub("", text)
    commands += [shlex.split(span)[1:] for span in re.findall(r"`(facecache [^`]+)`", prose)]
    return commands


def parse(arguments: list[str]) -> int:
    """The exit status argparse gives `arguments` (0: accepted), its output swallowed."""
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        try:
            build_parser().parse_args(arguments)
        except SystemExit as stop:  # --help and --version exit 0 once printed; a bad argument exits 2
            return stop.code or 0
    return 0


def test_the_readme_shows_facecache_commands_of_every_kind():
    shown = {tuple(arguments[:1]) for arguments in facecache_commands(README)}
    assert {("swap",), ("analyze",), ("models",), ("cache",), ("gpu",), ("--help",)} <= shown, shown


def test_every_facecache_command_in_the_readme_is_accepted_by_the_cli():
    refused = [arguments for arguments in facecache_commands(README) if parse(arguments) != 0]
    assert refused == []


def test_a_command_the_cli_refuses_is_caught():  # the check above can fail
    assert parse(["swap", "--source", "face.jpg", "--opacity", "a lot"]) == 2
    assert facecache_commands("```sh\nfacecache models list   # a comment\n```\nthen `facecache gpu status`") == [
        ["models", "list"], ["gpu", "status"]]


def test_the_cheap_readme_commands_run(tmp_path):
    cheap = [arguments for arguments in facecache_commands(README) if arguments[:2] in CHEAP
             or arguments[:1] in CHEAP]
    assert len(cheap) >= 4, cheap  # --help, models list, cache stats, gpu status
    environment = dict(os.environ, FACECACHE_DIR=str(tmp_path / "cache"), FACECACHE_MODELS=str(tmp_path / "models"),
                       FACECACHE_GPU_RUNTIME=str(tmp_path / "gpu-runtime"))
    for arguments in cheap:
        run = subprocess.run([sys.executable, "-m", "facecache", *arguments], capture_output=True, text=True,
                             env=environment, timeout=120)
        assert run.returncode == 0, (arguments, run.stderr)
        assert run.stdout.strip() and "Traceback" not in run.stderr, (arguments, run.stdout, run.stderr)


def dev_commands() -> set[str]:
    """The commands of `dev`: the labels of its last `case`."""
    script = (ROOT / "dev").read_text(encoding="utf-8")
    return set(re.findall(r"^    ([a-z][a-z0-9-]*)\)$", script[script.rindex('case "${1:-}" in'):], re.MULTILINE))


def test_every_dev_command_the_readme_names_exists():
    named = set(re.findall(r"\./dev ([a-z][a-z0-9-]*)", README))
    assert {"demo", "test"} <= named
    assert named - dev_commands() == set()


def test_dev_alone_lists_every_command():
    run = subprocess.run(["bash", str(ROOT / "dev")], capture_output=True, text=True, timeout=60)
    assert run.returncode == 2  # a usage, not a run
    listed = set(re.findall(r"\./dev ([a-z][a-z0-9-]*)", run.stderr))
    assert len(dev_commands()) >= 8 and listed == dev_commands()


def anchors(page: Path) -> set[str]:
    """The anchors GitHub gives the headings of `page`."""
    headings = re.findall(r"^#+ (.+)$", FENCED.sub("", page.read_text(encoding="utf-8")), re.MULTILINE)
    return {re.sub(r"[^\w\- ]", "", heading.lower()).replace(" ", "-") for heading in headings}


def broken_links(page: Path, root: Path = ROOT) -> list[str]:
    broken = []
    for target in re.findall(r"\]\(([^)\s]+)\)", FENCED.sub("", page.read_text(encoding="utf-8"))):
        if re.match(r"[a-z]+:", target):  # https:, mailto:: not this repository's
            continue
        path, _, anchor = target.partition("#")
        linked = (page.parent / path).resolve() if path else page
        if not linked.is_file():
            broken.append(f"{page.relative_to(root)}: {target} (no such file)")
        elif anchor and linked.suffix == ".md" and anchor not in anchors(linked):
            broken.append(f"{page.relative_to(root)}: {target} (no such heading)")
    return broken


def test_every_link_and_picture_resolves():
    assert len(re.findall(r"\]\((?:docs/)", README)) >= 10  # the README is a front door to docs/
    assert [link for page in PAGES for link in broken_links(page)] == []


def test_a_broken_link_is_caught(tmp_path):  # the check above can fail
    (tmp_path / "a.md").write_text("# A page\n[b](b.md) [here](#a-page) [gone](#nowhere) ![p](p.png)\n")
    (tmp_path / "b.md").write_text("## The `every_blender` tests: cost\n")
    assert broken_links(tmp_path / "a.md", tmp_path) == ["a.md: #nowhere (no such heading)",
                                                         "a.md: p.png (no such file)"]
    assert anchors(tmp_path / "b.md") == {"the-every_blender-tests-cost"}


@pytest.mark.parametrize("heading, anchor", [
    ("The pipeline: what the cache saves (`facecache bench --json`)",
     "the-pipeline-what-the-cache-saves-facecache-bench---json"),
    ("Chunks and parallel runners (`scripts/farm_bench.py`)", "chunks-and-parallel-runners-scriptsfarm_benchpy"),
])
def test_anchors_are_githubs(tmp_path, heading, anchor):
    (tmp_path / "page.md").write_text(f"## {heading}\n")
    assert anchors(tmp_path / "page.md") == {anchor}
