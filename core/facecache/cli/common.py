"""Options and output helpers shared by several sub-commands."""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

from facecache import choices
from facecache.locations import CACHE_DIR_ENV, MODELS_DIR_ENV, resolve_cache_dir
from facecache.store.cache import DEFAULT_MAX_BYTES, FaceCache
from facecache.store.remote import REMOTE_CACHE_ENV, remote_from

# Option names are the pipeline settings' names (`facecache.pipeline.Settings`), so a parsed
# command line turns into settings field by field.


def add_command(commands, name: str, summary: str) -> argparse.ArgumentParser:
    """A sub-command whose one-line summary shows both in `facecache -h` and in its own `-h`."""
    return commands.add_parser(name, help=summary, description=summary[:1].upper() + summary[1:] + ".")


def add_cache_options(parser: argparse.ArgumentParser, size_cap: bool = True) -> None:
    """--cache-dir, and --max-size where the command writes to the cache (or prunes it)."""
    parser.add_argument("--cache-dir", type=Path, default=None, metavar="DIR",
                        help=f"cache folder (default: ${CACHE_DIR_ENV}, else the per-user cache folder)")
    if size_cap:
        parser.add_argument("--max-size", dest="max_bytes", type=parse_size, default=DEFAULT_MAX_BYTES,
                            metavar="SIZE", help="size cap of the cache, e.g. 10G or 500M (default 10G)")


def add_remote_cache_option(parser: argparse.ArgumentParser, what: str) -> None:
    """--remote-cache, its default from FACECACHE_REMOTE_CACHE (the command line's alone: see remote.remote_from)."""
    parser.add_argument("--remote-cache", default=os.environ.get(REMOTE_CACHE_ENV) or None, metavar="s3://BUCKET/PREFIX",
                        help=f"{what} (default: ${REMOTE_CACHE_ENV})")


def add_remote_options(parser: argparse.ArgumentParser) -> None:
    """--remote-cache and --remote-read-only, on the commands that read the cache's packs."""
    add_remote_cache_option(parser, "a remote cache tier in an S3-compatible bucket, read after the cache folder; "
                            "credentials and endpoint from the AWS configuration (AWS_PROFILE, ~/.aws, AWS_ENDPOINT_URL)")
    parser.add_argument("--remote-read-only", action="store_true", default=None,
                        help="read the remote cache, never upload to it (render nodes)")


def open_cache(args: argparse.Namespace, create: bool = True) -> FaceCache:
    """The cache of --cache-dir, with the remote tier of --remote-cache where the command has it
    (`create=False`: only looked at, nothing created or changed)."""
    return FaceCache(resolve_cache_dir(args.cache_dir), max_bytes=getattr(args, "max_bytes", DEFAULT_MAX_BYTES),
                     create=create, remote=remote_from(args.remote_cache, read_only=not create)
                     if hasattr(args, "remote_cache") else None)


_UNITS = {"": 1, "B": 1, "K": 1000, "M": 1000**2, "G": 1000**3, "T": 1000**4}


def parse_size(text: str) -> int:
    """'10G', '500M', '1.5T' or a plain byte count."""
    cleaned = text.strip().upper().removesuffix("B") if text.strip().upper() != "B" else ""
    unit = cleaned[-1:] if cleaned[-1:] in _UNITS else ""
    try:
        value = float(cleaned[: len(cleaned) - len(unit)])
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a size: {text!r} (examples: 10G, 500M, 1048576)") from None
    if value < 0:
        raise argparse.ArgumentTypeError("a size cannot be negative")
    return int(value * _UNITS[unit])


_DURATION_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800}


def parse_duration(text: str) -> float:
    """'30d', '12h', '90m', '45s' or plain seconds."""
    text = text.strip().lower()
    unit = text[-1:] if text[-1:] in _DURATION_UNITS else "s"
    number = text[:-1] if text[-1:] in _DURATION_UNITS else text
    try:
        value = float(number)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a duration: {text!r} (examples: 30d, 12h, 90m)") from None
    return value * _DURATION_UNITS[unit]


def print_json(args: argparse.Namespace, obj, indent: int | None = None) -> None:
    """A JSON document (or one line of JSON Lines) of a `--json` command, on the stdout kept for it
    (`cli.main`, `stdout_guard`)."""
    out = getattr(args, "json_out", None) or sys.stdout
    json.dump(obj, out, sort_keys=True, indent=indent)
    out.write("\n")


def add_choice(parser: argparse.ArgumentParser, option: str, options: tuple[choices.Choice, ...], what: str) -> None:
    """An option offering `options` (from facecache.choices), its help saying what each does."""
    dest = option.lstrip("-").replace("-", "_")
    default = choices.DEFAULTS[dest]
    parser.add_argument(option, choices=choices.names(options), default=default,
                        help=f"{what} (default {default}). {choices.help_text(options)}")


def add_number(parser: argparse.ArgumentParser, number: choices.Number, metavar: str = "F") -> None:
    kind = int if isinstance(number.default, int) else float
    parser.add_argument(f"--{number.name.replace('_', '-')}", type=kind, default=number.default, metavar=metavar,
                        help=f"{number.description} ({number.minimum:g}..{number.maximum:g}, default {number.default:g})")


def add_model_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--models-dir", type=Path, default=None, metavar="DIR",
                        help=f"models folder (default: ${MODELS_DIR_ENV}, else the per-user data folder)")
    add_choice(parser, "--providers", choices.PROVIDERS, "ONNX Runtime execution providers")
    add_choice(parser, "--detector", choices.DETECTORS, "face detector")
    add_choice(parser, "--tracking", choices.TRACKING, "how MTCNN finds the faces of a movie")
    add_choice(parser, "--landmarker", choices.LANDMARKERS, "68-point landmarker")
    add_choice(parser, "--recognizer", choices.RECOGNIZERS, "identity recognizer")


def add_picture_option(parser: argparse.ArgumentParser) -> None:
    add_choice(parser, "--picture-rules", choices.PICTURE_RULES, "whose picture of a movie to analyse and swap "
               "(the Blender that will show it)")
    parser.add_argument("--deinterlace", action="store_true",
                        help="a movie's picture as a strip with Blender's Deinterlace option shows it (its fields "
                             "filtered; cached apart from the woven picture)")


def parse_frame_range(text: str) -> range:
    """'A-B' (inclusive), 'A-' (from A to the last frame) or 'N' -> range of media frame indices; an open
    end is `analyzer.TO_THE_END`, cut to the media's length when the file is opened."""
    from facecache.analysis.analyzer import TO_THE_END

    first, dash, last = text.strip().partition("-")
    try:
        start = int(first)
        stop = int(last) + 1 if last.strip() else TO_THE_END if dash else start + 1
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a frame range: {text!r} (examples: 0-99, 42, 10- for 10 to the end)") from None
    if start < 0 or stop <= start:
        raise argparse.ArgumentTypeError(f"frame range {text!r} must be A-B with 0 <= A <= B (or A- for A to the end)")
    return range(start, stop)
