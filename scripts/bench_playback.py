#!/usr/bin/env python3
"""Playback of swapped strips in Blender's sequencer (the `bpy` 5.0.1 module): what the overlays
cost where the editor feels it, and what they cost to write.

    ./dev bench-playback [--frames 24] [--faces 6] [--size 1920x1080] [--rounds 5] [--proxy-size 100|50]
                         [--clip-codec mpeg4|h264] [--one-core] [--json]

Set-up (not timed): a clip with `faces` real faces in every frame (`facecache.media.sample_clip`),
swapped by the engine's swap job (every face, the classic swapper) into one overlay a frame, in the
extension's output form ("sequencer"). Each overlay encoding under test is written from the same
overlays into its own folder (the encode time and bytes per frame are the write side of the trade).
Then a scene is built as
the extension builds it: the movie strip, and above it an image strip of the overlays blended
with ALPHA_OVER. For each encoding, sequencer frames 1..frames are rendered (`render.render`,
timed per frame, the render pipeline's own cost included) three ways:

  muted       the swapped strip muted (the movie alone), Blender's sequencer cache emptied
  first_pass  the swapped strip on, the cache emptied: every overlay is read from disk
  cached      the same frames again, the overlays now in Blender's raw cache

The preview's forms (issue 35): beside each overlay with faces the engine writes the composited, opaque
frame as the strip's 100 % and 50 % proxies, which the preview reads and renders never do (`preview_jpeg`). An
opaque top strip hides the movie below it, so Blender does not decode the movie. `render.render` reads no
proxy, so the bench plays those pictures as the strip's own images: the same JPEG reader (imbuf's), the
same occlusion test (an alpha-over strip at full opacity whose image has no alpha). At 100 %, after a job
in the window, the engine also writes the shot's movie, the original strip's proxy, and the pictures it
holds become one transparent pixel (`preview_movie`, `swap.preview_movie`): played as a movie strip above the
clip (the same FFmpeg reader) under a strip of those stand-ins. The figure `swapped_ratio_first_pass` = the
movie alone's median first-pass frame time / the preview form's (`preview_form`: the movie at 100 %, the
pictures at 50 %; goal >= 0.95); `pictures_ratio_first_pass` the same for the pictures, and
`overlay_ratio_first_pass` for the overlays (what a render plays, and the preview before).
`--proxy-size 50` plays everything as a preview at 50 % does: rendered at half the size, the pictures those the
engine writes for that proxy size (half the sides), the movie and the overlays scaled down by Blender.
Where a picture's time goes (a perf profile, docs/benchmarks.md "Where the picture's frame goes"): at 1080p
Blender reads it on the render thread in about 14 ms of CPU, 9 of them imbuf's own copy of each decoded RGB
row into a new RGBA image, whatever the JPEG's form; the movie costs that thread 3 ms, FFmpeg's threads the
rest. Both sides also carry `render.render`'s own two copies of the frame (5-7 ms): the render pipeline's,
not the sequencer's.

The encodings: the engine's sparse PNGs (as shipped), OpenCV's PNG writer (a conventional
full-frame encoder: the other side of the write-speed trade), fully transparent full-frame PNGs (the
floor of any full-frame overlay) and the engine's output for a frame without a face (one transparent
pixel), played twice: as Blender reads any image strip ("faceless_pixel", about 1 ms a frame whatever
the image's size: Blender scales it to the render's size and blends it) and as the extension shows it
("faceless_keyed_out": the swapped strip's opacity keyed to 0 there by the extension's own
`faceless_keys`, so Blender skips the strip). `added_first_pass_ms` = first_pass - muted (wall,
median per frame). The goals, checked in the same run:

  faces_goal_met     frames with faces: the engine's overlays add at most what a fully transparent
                     full-frame overlay adds, plus 2 ms (the full-frame PNG is Blender's own floor:
                     decoding, checksum, copy and AlphaOver of 8 MB whatever it holds), compared in
                     a second measurement of those two with glibc's allocator thresholds held
                     (`faces_comparison`; why below)
  faceless_goal_met  frames without a face, as the extension shows them: `faceless_added_ms` (the
                     keyed-out strip's) <= 1 ms

Under load from other processes read the CPU figures too (`--one-core` makes them count work on one core).

Each pass also counts the process's minor page faults a frame. With glibc's dynamic thresholds (an
editor's default process), Blender's wall times move with them more than with any encoding. Each
full-frame PNG makes OpenImageIO allocate and free a 64 MiB scanline buffer (67,338,240 bytes, the
same whatever the file): glibc serves it from a free region of its heap while one is large enough,
and otherwise maps it fresh (it is over glibc's largest dynamic mmap threshold, 32 MiB) and the
frame faults its pages in. As a first pass fills Blender's raw cache with 8 MB images, that free
region runs out, after a number of frames set by what the pass before it freed: the faults follow
the order of the passes, not the file (docs/benchmarks.md, "Where the miss comes from"). In one run
(2026-12-01) they stuck to one encoding: the engine's overlay at 5138 faults a frame in each of six
rounds (19-26 ms a frame), a transparent one at 842-5051 (15-27 ms), the same transparent PNG with
430 KB of ancillary bytes at 930-1435 in five rounds and 4633 in one; in other runs the pass after
the movie alone faulted most, whatever it played (each round then started at another encoding, but
kept the same cyclic order: the engine's overlay always came after the faceless pixel, whose cache
frees nothing, and faulted 3125 pages a frame against the transparent one's 550; a pair of rounds
now plays one rotation forwards, then backwards). So all figures are measured as the editor runs,
and then the two overlays the faces goal compares are played again with the thresholds held (mmap 32
MiB, trim 1 GiB, through mallopt: the `MALLOC_MMAP_THRESHOLD_` and `MALLOC_TRIM_THRESHOLD_` a user
can set): no pass faults its buffers in again, and the goal compares what the encodings cost. (Held
from the start, they cost the faceless frames 1.3-2.4 ms, against 0.3-1.4 with glibc's own; held
low, at 128 KB, every pass faults all its buffers: 12,000 a frame.)
"""

from __future__ import annotations

import argparse
import ctypes
import importlib
import json
import os
import platform
import statistics
import sys
import tempfile
import time
import types
from pathlib import Path

import cv2
import numpy as np
import psutil

FACES_MARGIN_MS = 2.0  # frames with faces: at most a transparent full-frame overlay's cost plus this
FACELESS_GOAL_MS = 1.0  # frames without a face: at most this added a frame
HELD_THRESHOLDS = {-3: 32 << 20, -1: 1 << 30}  # glibc's mallopt: M_MMAP_THRESHOLD, M_TRIM_THRESHOLD
SWAPPED_RATIO_GOAL = 0.95  # the preview form's first pass: at least this share of the movie alone's frame rate
FACES_COMPARED = ("sparse_png", "transparent_png")  # played again, thresholds held, for the faces goal
PICTURES = "preview_jpeg"  # the engine's composited pictures, which the preview reads as the strip's proxy
MOVIE = "preview_movie"  # the shot's movie as the original's proxy, under the pictures' stand-ins (at 100 %)
KEYED_OUT = "faceless_keyed_out"  # the faceless pixels' strip with its opacity keyed out, as the extension shows it
ROOT = Path(__file__).resolve().parents[1]


def addon_module(name: str):
    """A module of the extension (`compat`: Blender's API across 4.2-5.0; `faceless_keys`), loaded from the
    source tree inside a package of its own, for its relative imports (the package's __init__, which
    registers the add-on, is not run)."""
    package = sys.modules.get("vse_faceswap_source")
    if package is None:
        package = types.ModuleType("vse_faceswap_source")
        package.__path__ = [str(ROOT / "blender_addon")]
        sys.modules[package.__name__] = package
    return importlib.import_module(f"{package.__name__}.{name}")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--frames", type=int, default=24)
    parser.add_argument("--faces", type=int, default=6)
    parser.add_argument("--size", default="1920x1080")
    parser.add_argument("--workdir", type=Path, default=None, help="keep the clip and overlays here")
    parser.add_argument("--rounds", type=int, default=5, help="passes of each kind (default 5)")
    parser.add_argument("--proxy-size", type=int, choices=(100, 50), default=100,
                        help="the preview's proxy size to play at, percent (default 100)")
    parser.add_argument("--clip-codec", choices=("mpeg4", "h264"), default="mpeg4",
                        help="the clip's codec: OpenCV's MPEG-4 part 2 (default), or H.264 High as cameras write it")
    parser.add_argument("--one-core", action="store_true",
                        help="run on one core (CPU figures then count work, little disturbed by other processes)")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    if args.one_core:  # before bpy starts its thread pool
        os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})
    width, height = (int(v) for v in args.size.lower().split("x"))
    with tempfile.TemporaryDirectory(prefix="facecache-playback-") as temp:
        work = (args.workdir or Path(temp)).absolute()
        os.environ.setdefault("BLENDER_USER_RESOURCES", str(work / "blender_user"))  # before bpy is imported
        result = run(work, args.frames, args.faces, (width, height), args.rounds,
                     say=lambda m: print(f"bench: {m}", file=sys.stderr), proxy_size=args.proxy_size,
                     clip_codec=args.clip_codec)
    if args.json:
        print(json.dumps(result, indent=2))
    else:
        print(f"muted (the movie alone): {result['muted_ms']} ms, {result['muted_cpu_ms']} ms CPU, "
              f"{result['muted_page_faults']} page faults a frame")
        for name, figures in result["encodings"].items():
            print(f"{name}:")
            for key, value in figures.items():
                print(f"  {key:<28} {value}")
        print(f"frames with faces: {result['faces_added_ms']} ms added, goal <= {result['faces_goal_ms']} "
              f"(transparent full frame + {FACES_MARGIN_MS}): {'met' if result['faces_goal_met'] else 'MISSED'}")
        print(f"the swapped shot as the preview plays it: {result['swapped_ratio_first_pass']} of the movie alone's "
              f"frame rate, goal >= {SWAPPED_RATIO_GOAL}: {'met' if result['swapped_ratio_goal_met'] else 'MISSED'} "
              f"({result['preview_form']}; the pictures: {result['pictures_ratio_first_pass']}, the overlays: "
              f"{result['overlay_ratio_first_pass']})")
        print(f"frames without a face: {result['faceless_added_ms']} ms added, goal <= {FACELESS_GOAL_MS}: "
              f"{'met' if result['faceless_goal_met'] else 'MISSED'}")
        comparison = result["faces_comparison"]
        print(f"faces goal compared with glibc's allocator thresholds held ({comparison['thresholds_held']}): "
              + ", ".join(f"{name} {comparison[name]['added_first_pass_ms']} ms added "
                          f"({comparison[name]['added_first_pass_cpu_ms']} CPU, {comparison[name]['first_pass_page_faults']}"
                          " page faults a frame)" for name in FACES_COMPARED))
        print(f"machine: {result['machine']}")
    return 0


def page_faults() -> int:
    """This process's page faults so far: minor ones where `resource` exists; Windows (without it)
    counts soft and hard faults together."""
    try:
        import resource
    except ImportError:
        return psutil.Process().memory_info().num_page_faults
    return resource.getrusage(resource.RUSAGE_SELF).ru_minflt


def hold_allocator_thresholds() -> bool:
    """Fixes glibc's mmap and trim thresholds (see the module's docstring); False where the C library
    is not glibc."""
    if platform.libc_ver()[0] != "glibc":  # the comparison then runs with the allocator as it is
        return False
    libc = ctypes.CDLL(None)
    return all(libc.mallopt(option, value) == 1 for option, value in HELD_THRESHOLDS.items())


def run(work: Path, frames: int, faces: int, size: tuple[int, int], rounds: int, say, proxy_size: int = 100,
        clip_codec: str = "mpeg4") -> dict:
    overlays = make_overlays(work, frames, faces, size, say, clip_codec)
    encodings = write_encodings(work, overlays, say)
    encodings[PICTURES] = write_previews(work / "clip.mp4", overlays, say, proxy_size)
    movies = {}
    if proxy_size == 100:  # the movie is the original's 100 % proxy alone
        movie, stand_ins, figures = write_preview_movie(work, overlays, say)
        encodings[MOVIE], movies[MOVIE] = (stand_ins, figures), movie
    preview = MOVIE if movies else PICTURES  # what the preview plays at this size once the movie is written
    encodings[KEYED_OUT] = encodings["faceless_pixel"]  # the same files, the strip keyed out
    say(f"playback: {rounds} rounds of muted / first pass / cached over {len(encodings)} encodings")
    played = measure_playback(work / "clip.mp4", {name: folder for name, (folder, _) in encodings.items()},
                              frames, size, rounds, proxy_size, movies)
    results = {name: {**write, **added(played[name], played["muted"])} for name, (_, write) in encodings.items()}
    say(f"faces goal: {rounds} rounds of {' and '.join(FACES_COMPARED)} again, glibc's allocator thresholds held")
    held = hold_allocator_thresholds()
    compared = measure_playback(work / "clip.mp4", {name: encodings[name][0] for name in FACES_COMPARED},
                                frames, size, rounds, proxy_size)
    comparison = {"thresholds_held": held, **compared["muted"],
                  **{name: added(compared[name], compared["muted"]) for name in FACES_COMPARED}}
    faces_added = comparison["sparse_png"]["added_first_pass_ms"]
    faces_goal = round(comparison["transparent_png"]["added_first_pass_ms"] + FACES_MARGIN_MS, 2)
    faceless_added = results[KEYED_OUT]["added_first_pass_ms"]
    swapped_ratio = round(played["muted"]["muted_ms"] / results[preview]["first_pass_ms"], 3)
    return {"frames": frames, "faces": faces, "size": f"{size[0]}x{size[1]}", "rounds": rounds,
            "proxy_size": proxy_size, "clip_codec": clip_codec, "preview_form": preview,
            "pictures_ratio_first_pass": round(played["muted"]["muted_ms"] / results[PICTURES]["first_pass_ms"], 3),
            **played["muted"], "encodings": results, "faces_comparison": comparison,
            "swapped_ratio_first_pass": swapped_ratio, "swapped_ratio_goal": SWAPPED_RATIO_GOAL,
            "swapped_ratio_goal_met": swapped_ratio >= SWAPPED_RATIO_GOAL,
            "overlay_ratio_first_pass": round(played["muted"]["muted_ms"] / results["sparse_png"]["first_pass_ms"], 3),
            "faces_added_ms": faces_added, "faces_goal_ms": faces_goal, "faces_goal_met": faces_added <= faces_goal,
            "faceless_added_ms": faceless_added, "faceless_goal_ms": FACELESS_GOAL_MS,
            "faceless_goal_met": faceless_added <= FACELESS_GOAL_MS, "machine": machine()}


def added(figures: dict, muted: dict) -> dict:
    """An encoding's pass figures with what its passes add to the movie alone's (wall and CPU)."""
    figures = dict(figures)
    for what in ("first_pass", "cached"):
        figures[f"added_{what}_ms"] = round(figures[f"{what}_ms"] - muted["muted_ms"], 2)
        figures[f"added_{what}_cpu_ms"] = round(figures[f"{what}_cpu_ms"] - muted["muted_cpu_ms"], 2)
    return figures


def make_overlays(work: Path, frames: int, faces: int, size: tuple[int, int], say, clip_codec: str = "mpeg4") -> Path:
    """The engine's own overlays of the clip (a swap job, every face, the extension's output form). The clip:
    OpenCV's MPEG-4 part 2 (`mpeg4`, cheap to decode), or H.264 High as cameras and phones write it (`h264`)."""
    from facecache.media.sample_clip import write_group_clip
    from facecache.models.store import ModelStore
    from facecache.pipeline import Settings, build_pipeline
    from facecache.samples import sample_image

    ModelStore().install(["default"])
    portraits = [sample_image("grace_hopper"), sample_image("astronaut")]
    clip = write_group_clip(portraits[:1] if faces == 1 else portraits, work / "clip.mp4", faces, frames, size,
                            empty_every=0)  # faces in every frame: frames without one are the faceless strip's
    if clip_codec == "h264":
        as_camera_writes(clip)
    say(f"swapping {frames} frames with {faces} faces (not timed)")
    settings = Settings(cache_dir=str(work / "cache"), providers="cpu", sources=(str(portraits[1]),), selector="many",
                        output_form="sequencer")
    report = build_pipeline(settings).swap_job().run(clip, work / "out")
    if report.written != frames:
        raise SystemExit(f"the swap job wrote {report.written} of {frames} overlays")
    return work / "out" / clip.stem


def as_camera_writes(clip: Path) -> None:
    """Re-encode `clip` in place as H.264 High (CABAC, B-frames: x264's `medium`, CRF 18), as cameras write it."""
    import av

    encoded = clip.with_name(f"h264_{clip.name}")
    with av.open(str(clip)) as source, av.open(str(encoded), "w") as out:
        stream = out.add_stream("libx264", rate=source.streams.video[0].average_rate)
        stream.width, stream.height, stream.pix_fmt = source.streams.video[0].width, source.streams.video[0].height, \
            "yuv420p"
        stream.options = {"crf": "18", "preset": "medium", "profile": "high"}
        for frame in source.decode(video=0):
            for packet in stream.encode(frame.reformat(format="yuv420p")):
                out.mux(packet)
        for packet in stream.encode():
            out.mux(packet)
    os.replace(encoded, clip)


def write_encodings(work: Path, overlays: Path, say) -> dict[str, tuple[Path, dict]]:
    """{name: (folder of 000000.png..., write-side figures)}: the engine's sparse PNGs (the files
    the swap job wrote, re-encoded from their face patches for the timing), OpenCV's PNG writer
    (a conventional full-frame encoder), fully transparent PNGs (what any full-frame overlay costs
    Blender whatever it holds) and the engine's output for a frame without a face."""
    from facecache.jobs.swap_job import FACELESS_SIZE
    from facecache.swap.sparse_png import SparseOverlayEncoder

    images = [cv2.imread(str(path), cv2.IMREAD_UNCHANGED) for path in sorted(overlays.glob("*.png"))]
    patches = {id(image): _patches(image) for image in images}  # as the composite hands them over: not timed
    sparse = SparseOverlayEncoder()
    encoders = {
        "sparse_png": lambda image: sparse.encode(image.shape[1], image.shape[0], patches[id(image)]),
        "opencv_png": lambda image: _imencode(".png", image, []),
        "transparent_png": lambda image: sparse.encode(image.shape[1], image.shape[0], []),
        "faceless_pixel": lambda image: sparse.encode(*FACELESS_SIZE, []),  # as the job writes it
    }
    out = {}
    for name, encode in encoders.items():
        folder = overlays if name == "sparse_png" else work / "encodings" / name
        folder.mkdir(parents=True, exist_ok=True)
        times, sizes = [], []
        for index, image in enumerate(images):
            start = time.thread_time()
            data = encode(image)
            times.append((time.thread_time() - start) * 1000)
            if name == "sparse_png":
                sizes.append((folder / f"{index:06d}.png").stat().st_size)
            else:
                sizes.append(len(data))
                (folder / f"{index:06d}.png").write_bytes(data)
        if name in ("sparse_png", "opencv_png"):
            decoded = cv2.imread(str(folder / "000000.png"), cv2.IMREAD_UNCHANGED)
            if not np.array_equal(decoded, images[0]):
                raise SystemExit(f"the {name} encoding does not give the overlay's pixels back")
        out[name] = (folder, {"encode_cpu_ms": round(statistics.median(times), 2),
                              "bytes_per_frame": int(statistics.mean(sizes))})
        say(f"{name}: encode {out[name][1]['encode_cpu_ms']} ms CPU, {out[name][1]['bytes_per_frame']} bytes a frame")
    return out


def write_previews(clip: Path, overlays: Path, say, proxy_size: int = 100) -> tuple[Path, dict]:
    """(the folder of the swap job's composited pictures at `proxy_size`, their write-side figures: compositing
    and encoding each from its frame and overlay at that size, as the job does, timed again here)."""
    from facecache import output_layout
    from facecache.media.reader import MediaReader
    from facecache.swap import preview_frame

    paths = sorted(overlays.glob("*.png"))
    times = []
    with MediaReader(clip) as reader:
        for (index, frame), path in zip(reader.frames(range(len(paths))), paths):
            patches = _patches(cv2.imread(str(path), cv2.IMREAD_UNCHANGED))
            start = time.thread_time()
            preview_frame.Preview(frame, patches, f"{clip.name}|{index}").jpeg(proxy_size)  # encoded whole
            times.append((time.thread_time() - start) * 1000)
    written = [Path(output_layout.preview_path(path, proxy_size)) for path in paths]
    figures = {"encode_cpu_ms": round(statistics.median(times), 2),
               "bytes_per_frame": int(statistics.mean(p.stat().st_size for p in written))}
    say(f"{PICTURES}: composite and encode {figures['encode_cpu_ms']} ms CPU, {figures['bytes_per_frame']} bytes "
        "a frame")
    return written[0].parent, figures


def write_preview_movie(work: Path, overlays: Path, say) -> tuple[Path, Path, dict]:
    """(the shot's movie, the folder of the stand-ins for its pictures, write-side figures): `preview_movie.write`
    over a copy of the overlays' 100 % pictures, as the engine's `preview_movie` job writes it after a swap."""
    import shutil
    from fractions import Fraction

    from facecache import output_layout
    from facecache import preview_movie_files as movie_files
    from facecache.media.reader import MediaReader
    from facecache.swap import preview_movie

    folder = work / "movie_form" / overlays.name
    paths = sorted(overlays.glob("*.png"))
    for path in paths:
        place = Path(output_layout.preview_path(folder / path.name))
        place.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(output_layout.preview_path(path), place)
    clip = work / "clip.mp4"
    with MediaReader(clip) as reader:
        start, cpu = time.perf_counter(), time.process_time()
        size = preview_movie.write(folder, clip, list(range(len(paths))), reader.frames,
                                   Fraction(reader.info.fps).limit_denominator(1001),
                                   (reader.info.width, reader.info.height))
        wall, cpu = time.perf_counter() - start, time.process_time() - cpu
    figures = {"encode_ms": round(1000 * wall / len(paths), 2), "encode_cpu_ms": round(1000 * cpu / len(paths), 2),
               "bytes_per_frame": size // len(paths)}
    say(f"{MOVIE}: the pictures read and encoded {figures['encode_ms']} ms a frame ({figures['encode_cpu_ms']} CPU, "
        f"every thread), {figures['bytes_per_frame']} bytes a frame")
    movie = Path(movie_files.movie_path(folder, clip, movie_files.current(folder, clip)[0]))
    return movie, Path(output_layout.preview_path(folder / paths[0].name)).parent, figures


def measure_playback(clip: Path, folders: dict[str, Path], frames: int, size: tuple[int, int],
                     rounds: int, proxy_size: int = 100, movies: dict[str, Path] | None = None) -> dict:
    """Per encoding: wall ms a frame (median over rounds of each pass's median) and CPU ms a frame
    (all threads; the least over rounds, the figure least disturbed by other processes) of the
    first and the cached pass; and the same for the movie alone ("muted"). An encoding in `movies` plays that
    movie as a movie strip under its folder's images: the clip's proxy, as Blender's preview reads it (the same
    FFmpeg reader; an opaque strip hides the clip below it, as the proxy replaces it)."""
    import bpy

    bpy.ops.wm.read_homefile(use_empty=True)
    scene = bpy.context.scene
    scene.render.resolution_x, scene.render.resolution_y = size
    scene.render.resolution_percentage = proxy_size
    scene.frame_start, scene.frame_end = 1, frames
    editor = scene.sequence_editor_create()
    top_strips = addon_module("compat").top_strips(editor)
    faceless_keys = addon_module("faceless_keys")
    top_strips.new_movie("clip", str(clip), 1, 1)
    strips, movie_strips, channel = {}, {}, 1
    for name, folder in folders.items():
        channel += 1
        if name in (movies or {}):
            movie_strips[name] = top_strips.new_movie(f"clip.{name}.movie", str(movies[name]), channel, 1)
            channel += 1
        files = sorted(folder.glob("*.png") if name not in (PICTURES, MOVIE) else folder.glob("*.jpg"))[:frames]
        strip = top_strips.new_image(f"clip.{name}", str(files[0]), channel, 1)
        for path in files[1:]:
            strip.elements.append(path.name)
        strip.blend_type = "ALPHA_OVER"  # as the extension's timeline.sync_swapped
        if name == KEYED_OUT:  # every frame is without a face: keyed out as the extension keys it
            shown = list(range(len(files)))
            faceless_keys.key_opacity(scene, strip, faceless_keys.opacity_keys(1, shown, set(shown)))
        strips[name] = strip

    def one_pass(empty_cache: bool) -> tuple[float, float, float]:
        """(median wall ms, mean CPU ms, minor page faults) a frame."""
        if empty_cache:  # changing the cache settings frees Blender's sequencer cache
            editor.use_cache_raw = editor.use_cache_final = False
            editor.use_cache_raw = True
        wall, cpu = [], []
        faults_before = page_faults()
        for frame in range(1, frames + 1):
            scene.frame_set(frame)
            start, cpu_start = time.perf_counter(), time.process_time()
            bpy.ops.render.render(scene=scene.name)
            wall.append((time.perf_counter() - start) * 1000)
            cpu.append((time.process_time() - cpu_start) * 1000)
        faults = page_faults() - faults_before
        return statistics.median(wall), statistics.mean(cpu), faults / frames

    def show(only: str | None) -> None:
        for name, strip in strips.items():
            strip.mute = name != only
        for name, strip in movie_strips.items():
            strip.mute = name != only

    show(None)
    one_pass(True)  # warms the render pipeline and the file system cache
    passes: dict[str, dict[str, list]] = {name: {"first_pass": [], "cached": []} for name in strips}
    muted = []
    order = list(strips)
    for round_ in range(rounds):
        show(None)
        muted.append(one_pass(True))
        # a pair of rounds plays a rotation of the encodings forwards, then backwards: a pass's page
        # faults follow the pass before it (see the module's docstring), and each encoding comes first
        # and after each of its neighbours as often as the others
        start = round_ // 2 % len(order)
        rotated = order[start:] + order[:start]
        for name in rotated[::-1] if round_ % 2 else rotated:
            show(name)
            passes[name]["first_pass"].append(one_pass(True))
            passes[name]["cached"].append(one_pass(False))

    def summary(samples: list, key: str) -> dict:
        return {f"{key}_ms": round(statistics.median(w for w, _, _ in samples), 2),
                f"{key}_cpu_ms": round(min(c for _, c, _ in samples), 2),
                f"{key}_page_faults": round(statistics.median(f for _, _, f in samples))}

    result = {"muted": summary(muted, "muted")}
    for name, kinds in passes.items():
        result[name] = {**summary(kinds["first_pass"], "first_pass"), **summary(kinds["cached"], "cached")}
    return result


def _patches(image: np.ndarray) -> list[tuple[int, int, np.ndarray]]:
    """The overlay's faces as non-overlapping (x, y, bgra) boxes, as the engine hands them over."""
    count, _, stats, _ = cv2.connectedComponentsWithStats((image[..., 3] > 0).astype(np.uint8))
    boxes = [[int(x), int(y), int(x + w), int(y + h)] for x, y, w, h, _ in stats[1:count]]
    merged = True
    while merged:  # boxes of separate blobs may still overlap: join them
        merged = False
        for i in range(len(boxes)):
            for j in range(i + 1, len(boxes)):
                a, b = boxes[i], boxes[j]
                if a[0] < b[2] and b[0] < a[2] and a[1] < b[3] and b[1] < a[3]:
                    boxes[i] = [min(a[0], b[0]), min(a[1], b[1]), max(a[2], b[2]), max(a[3], b[3])]
                    del boxes[j]
                    merged = True
                    break
            if merged:
                break
    return [(x0, y0, image[y0:y1, x0:x1]) for x0, y0, x1, y1 in boxes]


def _imencode(suffix: str, image: np.ndarray, params: list[int]) -> bytes:
    ok, data = cv2.imencode(suffix, image, params)
    if not ok:
        raise RuntimeError(f"OpenCV could not encode {suffix}")
    return data.tobytes()


def machine() -> dict:
    from facecache.bench.timing import load_average

    return {"cpus": os.cpu_count(), "platform": platform.platform(terse=True), "python": platform.python_version(),
            "numpy": np.__version__, "opencv": cv2.__version__, "loadavg_1min": (load_average() or [None])[0]}


if __name__ == "__main__":
    sys.exit(main())
