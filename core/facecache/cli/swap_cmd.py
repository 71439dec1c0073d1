"""`facecache swap --source IMG... --target MEDIA --out DIR [...] [--json]`."""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from facecache.analysis.analyzer import FaceAnalyzer
from facecache.analysis.selection import DEFAULT_REFERENCE_THRESHOLD, MODES, Selector
from facecache.cli.analyze_cmd import analyzer_from_args
from facecache.cli.common import (add_cache_options, add_command, add_model_options, parse_frame_range,
                                  print_json)
from facecache.errors import FaceCacheError
from facecache.jobs.run_summary import describe_run, no_face_warning
from facecache.jobs.swap_job import OUTPUT_FORMS, SwapJob
from facecache.models.runtime import SessionFactory
from facecache.models.store import ModelStore
from facecache.progress import ProgressLine
from facecache.swap.composite import CompositeParams
from facecache.swap.factory import SWAPPERS, build_swapper
from facecache.swap.sources import SourceSet


def register(commands) -> None:
    parser = add_command(commands, "swap", "swap source faces onto a target image or video, through the cache")
    parser.add_argument("--source", type=Path, action="append", required=True, metavar="IMG",
                        help="source face image (repeat for a set: embeddings are averaged)")
    parser.add_argument("--source-face", type=int, default=0, metavar="RANK",
                        help="which face of each source image: 0 = largest (default), 1 = next, ...")
    parser.add_argument("--target", type=Path, required=True, metavar="MEDIA", help="target image or video")
    parser.add_argument("--out", type=Path, required=True, metavar="DIR", help="output folder")
    parser.add_argument("--frames", type=parse_frame_range, default=None, help="media frame range A-B of a video")
    parser.add_argument("--swapper", choices=SWAPPERS, default="classic", help="default: classic (no model needed)")
    parser.add_argument("--selector", choices=MODES, default="one",
                        help="which target faces: one (largest, or nearest --position), many, reference")
    parser.add_argument("--position", type=_fractions, default=None, metavar="X,Y",
                        help="for --selector one: the face nearest this point (fractions of width, height)")
    parser.add_argument("--reference", type=Path, action="append", default=[], metavar="IMG",
                        help="for --selector reference: a photo of the person to replace (repeatable)")
    parser.add_argument("--reference-threshold", type=float, default=DEFAULT_REFERENCE_THRESHOLD,
                        help=f"identity distance 0..1 under which a face matches (default {DEFAULT_REFERENCE_THRESHOLD})")
    parser.add_argument("--mask-blur", type=float, default=0.3, help="mask edge fade, 0..1 of the face size (default 0.3)")
    parser.add_argument("--color-match", type=float, default=0.0, help="colour match strength 0..1 (default 0)")
    parser.add_argument("--opacity", type=float, default=1.0, help="0..1 (default 1)")
    parser.add_argument("--output-form", choices=OUTPUT_FORMS, default="auto",
                        help="full frames or RGBA face overlays (default: full for stills, overlay for videos)")
    add_cache_options(parser)
    add_model_options(parser)
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    parser.set_defaults(run=run_swap)


def _fractions(text: str) -> tuple[float, float]:
    try:
        x, y = (float(v) for v in text.split(","))
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a position: {text!r} (example: 0.5,0.4)") from None
    return x, y


def run_swap(args: argparse.Namespace) -> int:
    start = time.perf_counter()
    analyzer = analyzer_from_args(args)
    sources = SourceSet.load(args.source, analyzer, args.source_face)
    selector = Selector(args.selector, args.position, _reference_embeddings(args.reference, analyzer),
                        args.reference_threshold)
    try:
        composite = CompositeParams(mask_blur=args.mask_blur, color_match=args.color_match, opacity=args.opacity)
    except ValueError as exc:
        raise FaceCacheError(f"{exc}: use a value between 0 and 1") from None
    swapper = build_swapper(args.swapper, sources, ModelStore(args.models_dir), SessionFactory(args.providers))
    job = SwapJob(analyzer, swapper, sources, selector, composite, args.output_form)
    bar = ProgressLine(args.target.name)
    report = job.run(args.target, args.out, args.frames, progress=lambda p: bar(
        p.done, p.total, f"{p.written} written, {p.skipped} up to date, {p.frames_per_second:.1f} fps, "
                         f"ETA {p.eta_seconds or 0:.0f} s"))
    summary = {
        **report.as_dict(),
        "inferences": analyzer.inferences.as_dict(("detect", "landmark", "embed", "swap")),
        "analysis_cache": analyzer.stats.as_dict(),
        "seconds": round(time.perf_counter() - start, 3),
        "out": str(args.out),
    }
    warning = no_face_warning(summary, str(args.target))
    if warning:
        summary["warning"] = warning
        print(f"facecache: warning: {warning}", file=sys.stderr)
    if args.json:
        print_json(summary)
    else:
        print(f"{describe_run(summary)}; output in {args.out}")
    return 0


def _reference_embeddings(paths: list[Path], analyzer: FaceAnalyzer) -> tuple:
    if not paths:
        return ()
    references = SourceSet.load(paths, analyzer)
    if not references.has_embeddings:
        raise FaceCacheError("the reference selector needs face embeddings: install a recognizer with "
                             "`facecache models install arcface_w600k_r50`, or use --selector one or many")
    return tuple(face.face.embedding for face in references.faces)
