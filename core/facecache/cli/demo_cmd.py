"""`facecache demo [--workdir DIR]`."""

from __future__ import annotations

import argparse
from pathlib import Path

from facecache.cli.common import add_command, print_json
from facecache.demo import run_demo


def register(commands) -> None:
    parser = add_command(commands, "demo", "the main job end to end on the embedded default models: "
                                           "a sample clip, two source faces, a blend tweak")
    parser.add_argument("--workdir", type=Path, default=Path("demo-output"),
                        help="where the sample clip, cache and outputs go (default: ./demo-output)")
    parser.add_argument("--models-dir", type=Path, default=None, help="models folder (default: per-user data folder)")
    parser.add_argument("--frames", type=int, default=48, help="frames in the sample clip (default 48)")
    parser.add_argument("--json", action="store_true", help="print one JSON object at the end")
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    result = run_demo(args.workdir, args.models_dir, args.frames, say=(lambda *_: None) if args.json else print)
    if args.json:
        print_json(args, result)
    return 0
