"""The `facecache` command line. Each sub-command lives in its own module with a
`register(subparsers)` function that adds its parser and sets `run`."""

from __future__ import annotations

import argparse
import logging
import sys

from facecache import __version__
from facecache.cli import analyze_cmd, bench_cmd, cache_cmd, demo_cmd, models_cmd, swap_cmd
from facecache.errors import FaceCacheError

COMMAND_MODULES = [demo_cmd, swap_cmd, analyze_cmd, models_cmd, cache_cmd, bench_cmd]


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="facecache", description="Face analysis with a persistent frame-level cache.")
    parser.add_argument("--version", action="version", version=f"facecache {__version__}")
    parser.add_argument("-v", "--verbose", action="store_true", help="log details to stderr")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for module in COMMAND_MODULES:
        module.register(commands)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    logging.basicConfig(level=logging.INFO if args.verbose else logging.WARNING,
                        format="facecache: %(levelname)s: %(message)s")
    try:
        return int(args.run(args) or 0)
    except FaceCacheError as exc:
        print(f"facecache: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("facecache: interrupted; finished work is kept in the cache, run the same command again to continue", file=sys.stderr)
        return 130
