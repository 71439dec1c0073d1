"""`facecache bench [SUITE] [--json]`: measured figures for the README."""

from __future__ import annotations

import argparse
from pathlib import Path

from facecache.bench import cache_bench
from facecache.cli.common import print_json

SUITES = {"cache": cache_bench.run}


def register(commands) -> None:
    parser = commands.add_parser("bench", help="measure what the cache saves and costs")
    parser.add_argument("suite", nargs="?", choices=sorted(SUITES), default="cache",
                        help="which benchmark to run (default: cache)")
    parser.add_argument("--frames", type=int, default=300, help="frames in the benchmark clip (default 300)")
    parser.add_argument("--cache-dir", type=Path, default=None,
                        help="run in a temporary folder under this one (e.g. a network mount)")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    parser.set_defaults(run=run_bench)


def run_bench(args: argparse.Namespace) -> int:
    if args.frames < 1:
        raise SystemExit("facecache bench: --frames must be at least 1")
    result = SUITES[args.suite](frames=args.frames, cache_dir=args.cache_dir)
    if args.json:
        print_json(result)
        return 0
    for key, value in result.items():
        if key in ("goals", "goals_met"):
            continue
        goal = result.get("goals", {}).get(key)
        mark = "" if goal is None else f"   (goal <= {goal}: {'met' if result['goals_met'][key] else 'MISSED'})"
        print(f"{key:<30} {value:.4g}{mark}" if isinstance(value, float) else f"{key:<30} {value}{mark}")
    return 0
