"""The `facecache` command line. Each sub-command lives in its own module with a
`register(subparsers)` function that adds its parser and sets `run`.

Every failure ends in one line on stderr and a documented exit code (`facecache.errors`), never a
traceback. With `--json` (or `analyze --pretty`), stdout carries JSON only: one document, or for `analyze
--json` JSON Lines (`stdout_guard`: whatever ONNX Runtime or OpenCV print goes to stderr); an error is a JSON
object too, `{"error", "exit_code"}`. A closed pipe (`| head`) ends the command quietly."""

from __future__ import annotations

import argparse
import contextlib
import logging
import sys

from facecache import __version__, protocol
from facecache.cli import analyze_cmd, bench_cmd, cache_cmd, demo_cmd, gpu_cmd, models_cmd, swap_cmd
from facecache.cli.common import print_json
from facecache.errors import EXIT_CLOSED_PIPE, EXIT_INTERRUPTED, FaceCacheError, os_fault
from facecache.gpu_runtime.activate import use_runtime
from facecache.stdout_guard import silence_stdout, stdout_reserved

COMMAND_MODULES = [demo_cmd, swap_cmd, analyze_cmd, models_cmd, cache_cmd, bench_cmd, gpu_cmd]


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
    use_runtime()  # the NVIDIA GPU runtime's onnxruntime first on the path, when installed
    logging.basicConfig(level=logging.INFO if args.verbose else logging.WARNING,
                        format="facecache: %(levelname)s: %(message)s")
    json_mode = bool(getattr(args, "json", False) or getattr(args, "pretty", False))
    try:
        with stdout_reserved() if json_mode else contextlib.nullcontext(sys.stdout) as out:
            args.json_out = out
            code, error = _run(args)
            if error:
                print(f"facecache: error: {error}", file=sys.stderr)
                if json_mode:  # stdout still JSON only: the error as one object
                    print_json(args, {protocol.ERROR: error, protocol.EXIT_CODE: code})
            sys.stdout.flush()
        return code
    except BrokenPipeError:
        silence_stdout()
        return EXIT_CLOSED_PIPE


def _run(args: argparse.Namespace) -> tuple[int, str]:
    """(exit code, one-line error or "")."""
    try:
        return int(args.run(args) or 0), ""
    except BrokenPipeError:
        raise
    except FaceCacheError as exc:
        return exc.exit_code, str(exc)
    except OSError as exc:  # one that no layer below said more about
        fault = os_fault(exc)
        return fault.exit_code, str(fault)
    except KeyboardInterrupt:
        return EXIT_INTERRUPTED, "interrupted; finished work is kept in the cache, run the same command again to continue"
