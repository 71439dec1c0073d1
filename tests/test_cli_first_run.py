"""What a new user sees: progress off a terminal, one-line help everywhere, only options that mean
something, and one vocabulary for what a run did."""

import argparse
import io
import subprocess
import sys
import time

import pytest

from facecache.cli import build_parser
from facecache.jobs.run_summary import describe_run, no_face_warning
from facecache.progress import ProgressLine, still_working


class Clock:
    def __init__(self):
        self.now = 0.0

    def __call__(self):
        return self.now


def test_off_a_terminal_a_line_every_few_seconds_and_one_at_the_end():
    stream, clock = io.StringIO(), Clock()
    bar = ProgressLine("clip.mp4", stream=stream, interval=5.0, clock=clock, terminal=False)
    for done in range(1, 25):
        clock.now += 0.9  # a frame every 0.9 s: 21.6 s in all
        bar(done, 24, f"{done} written, 0 up to date")
    lines = stream.getvalue().splitlines()
    assert len(lines) == 4 and "\r" not in stream.getvalue()  # at 5.4, 10.8, 16.2 s and the end
    assert lines[0].startswith("clip.mp4: 6/24 frames 6 written, 0 up to date (5 s)")
    assert lines[-1].startswith("clip.mp4: 24/24 frames")


def test_a_short_step_prints_nothing_off_a_terminal():
    stream, clock = io.StringIO(), Clock()
    bar = ProgressLine("still.png", stream=stream, clock=clock, terminal=False)
    clock.now = 1.0
    bar(1, 1)
    assert stream.getvalue() == ""


def test_on_a_terminal_the_bar_counts_frames():
    stream = io.StringIO()
    bar = ProgressLine("clip.mp4", stream=stream, terminal=True)
    bar(12, 24, "12 written, 0 up to date")
    bar(24, 24, "24 written, 0 up to date")
    shown = stream.getvalue()
    assert "\r" in shown and "12/24 12 written" in shown and shown.endswith("\n")
    assert "hits" not in shown and "misses" not in shown


def test_a_step_without_counts_says_it_is_still_working():
    stream = io.StringIO()
    with still_working("installing", stream=stream, interval=0.05):
        deadline = time.monotonic() + 30  # two beats, however busy the machine (a fixed sleep was flaky)
        while stream.getvalue().count("still working") < 2 and time.monotonic() < deadline:
            time.sleep(0.01)
    lines = stream.getvalue().splitlines()
    assert len(lines) >= 3 and lines[0].startswith("installing: still working")
    assert lines[-1].startswith("installing: done in")
    quiet = io.StringIO()
    with still_working("quick", stream=quiet, interval=10):
        pass
    assert quiet.getvalue() == ""


def _commands(parser, path=()):
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            helps = {choice.dest: choice.help for choice in action._choices_actions}
            for name, sub in action.choices.items():
                yield path + (name,), sub, helps.get(name)
                yield from _commands(sub, path + (name,))


def test_every_command_has_a_one_line_help_shown_in_its_own_help_too():
    commands = list(_commands(build_parser()))
    assert {path for path, _, _ in commands} >= {("swap",), ("demo",), ("analyze",), ("cache", "clear"),
                                                 ("models", "install"), ("bench",)}
    for path, parser, summary in commands:
        assert summary and "\n" not in summary, path
        assert parser.description and summary.lower() in parser.description.lower(), path


def test_only_prune_and_the_commands_that_write_offer_a_size_cap():
    def options(*path):
        parser = dict((p, sub) for p, sub, _ in _commands(build_parser()))[path]
        return {flag for action in parser._actions for flag in action.option_strings}

    for action in ("clear", "verify", "stats"):
        assert "--max-size" not in options("cache", action)
        assert "--cache-dir" in options("cache", action)
    assert "--max-size" in options("cache", "prune")
    assert "--max-size" in options("swap") and "--max-size" in options("analyze")
    refused = subprocess.run([sys.executable, "-m", "facecache", "cache", "clear", "--max-size", "1G"],
                             capture_output=True, text=True)
    assert refused.returncode == 2 and "unrecognized arguments: --max-size" in refused.stderr


def test_one_vocabulary_for_what_a_run_did():
    summary = {"frames": 48, "written": 0, "skipped": 48, "analysis_cache": {"hits": 0, "misses": 0},
               "inferences": {"detect": 0, "swap": 0}, "seconds": 0.52}
    assert describe_run(summary) == ("48 frames: 0 frames written, 48 frames up to date; analyses from cache 0; "
                                     "model runs: detect 0, swap 0; 0.52 s")
    new_source = {**summary, "written": 48, "skipped": 0, "analysis_cache": {"hits": 48}}
    assert "48 frames written, 0 frames up to date; analyses from cache 48" in describe_run(new_source)
    one = {**summary, "frames": 2, "written": 1, "skipped": 1, "faces_turned_away": 1}  # the singular where it applies
    assert describe_run(one).startswith("2 frames: 1 frame written, 1 frame up to date; analyses from cache 0")
    assert "; 1 face turned past the yaw limit left as it was" in describe_run(one)


@pytest.mark.parametrize("summary, expected", [
    ({"written": 1, "faces_found": 0, "faces_swapped": 0}, "no face found in shot.png"),
    ({"written": 3, "faces_found": 2, "faces_swapped": 0}, "matched the selector"),
    ({"written": 3, "faces_found": 2, "faces_swapped": 2}, None),
    ({"written": 0, "faces_found": 0, "faces_swapped": 0}, None),  # all up to date: said the first time
])
def test_a_target_with_no_face_gets_a_warning(summary, expected):
    warning = no_face_warning(summary, "shot.png")
    assert warning is None if expected is None else expected in warning
