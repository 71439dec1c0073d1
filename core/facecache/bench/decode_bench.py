"""`facecache bench decode`: what reading a movie as Blender shows it costs, against OpenCV's decoder (the
engine's before it read movies by Blender's rules), measured in one run on the same files.

Three clips are written with FFmpeg's encoders: 1080p H.264 tagged BT.709 (a camera's) twice, with two slices a
frame (x264's sliced threads, as its library writes by default on 2 cores) and with one (frame threads, as
the `ffmpeg` command writes), and 4K HEVC. For each, the median time of a frame read in order (and its CPU
time, all threads) and of a frame reached by a jump (a seek), through the engine's MediaReader under each
picture rule and through cv2.VideoCapture. Goals: the engine in order is no slower than OpenCV, and a jump
lands on the exact frame (checked against the frame read in order).
"""

from __future__ import annotations

import random
import statistics
import tempfile
import time
from pathlib import Path

import av
import cv2
import numpy as np

from facecache.fingerprint import frame_fingerprint
from facecache.media.picture_rules import RULES as ALL_RULES
from facecache.media.reader import MediaReader

# The rules measured: 4.2 on Windows reads this 4:2:0 clip by 4.2's own path, so it is not measured again.
RULES = {name: rules for name, rules in ALL_RULES.items() if not rules.paired_rows}

# name: (encoder, size, frames, colour tag, encoder options)
CLIPS = {"1080p_h264": ("libx264", (1920, 1080), 48, 1, {"g": "12", "x264-params": "sliced-threads=0:slices=2"}),
         "1080p_h264_one_slice": ("libx264", (1920, 1080), 48, 1, {"g": "12", "x264-params": "sliced-threads=0"}),
         "4k_hevc": ("libx265", (3840, 2160), 24, 1, {"x265-params": "log-level=error"})}


def run(work: Path | None = None) -> dict:
    with tempfile.TemporaryDirectory(prefix="facecache-bench-decode-", dir=work) as folder:
        results = {name: _measure(_write(Path(folder) / f"{name}.mp4", *spec)) for name, spec in CLIPS.items()}
    figures: dict = {}
    goals, met = {}, {}
    for name, result in results.items():
        for key, value in result.items():
            figures[f"{name}_{key}"] = value
        ratio = f"{name}_in_order_vs_opencv"
        figures[ratio] = round(result["in_order_ms_blender-5"] / result["in_order_ms_opencv"], 3)
        goals[ratio], met[ratio] = 1.0, figures[ratio] <= 1.0
        goals[f"{name}_seeks_exact"], met[f"{name}_seeks_exact"] = "true", result["seeks_exact"]
    return {**figures, "goals": goals, "goals_met": met}


def _write(path: Path, codec: str, size: tuple[int, int], frames: int, colorspace: int, options: dict) -> Path:
    """A clip of a textured, moving picture (noise over gradients: the encoder has detail to code)."""
    width, height = size
    rng = np.random.default_rng(7)
    texture = rng.integers(0, 60, (height, width + frames * 8, 3), np.uint8)
    ramp = np.linspace(0, 190, width + frames * 8, dtype=np.float32)[None, :, None].astype(np.uint8)
    with av.open(str(path), "w") as container:
        stream = container.add_stream(codec, rate=25, options=options)
        stream.width, stream.height, stream.pix_fmt = width, height, "yuv420p"
        stream.codec_context.colorspace = stream.codec_context.color_primaries = colorspace
        for index in range(frames):
            picture = texture[:, index * 8:index * 8 + width] + ramp[:, index * 8:index * 8 + width]
            frame = av.VideoFrame.from_ndarray(np.ascontiguousarray(picture), format="rgb24")
            container.mux(stream.encode(frame.reformat(format="yuv420p", dst_colorspace=colorspace)))
        container.mux(stream.encode())
    return path


def _measure(clip: Path, rounds: int = 3) -> dict:
    """Per rules and for OpenCV: the median over `rounds` interleaved rounds of a frame read in order (the
    machine's other load falls on all of them alike), wall time and the CPU time of all the process's threads,
    and the median of 8 jumps."""
    in_order: dict[str, list[float]] = {name: [] for name in (*RULES, "opencv")}
    cpu: dict[str, list[float]] = {name: [] for name in in_order}
    pictures = {}
    for _ in range(rounds):
        for name, rules in RULES.items():
            with MediaReader(clip, rules) as reader:  # frames dropped as read, as the jobs drop them
                count = reader.info.frame_count
                started, cpu_started = time.perf_counter(), time.process_time()
                for _ in reader.frames(range(count)):
                    pass
                in_order[name].append((time.perf_counter() - started) * 1000 / count)
                cpu[name].append((time.process_time() - cpu_started) * 1000 / count)
        capture = cv2.VideoCapture(str(clip))
        started, cpu_started, count = time.perf_counter(), time.process_time(), 0
        while capture.read()[0]:
            count += 1
        in_order["opencv"].append((time.perf_counter() - started) * 1000 / max(count, 1))
        cpu["opencv"].append((time.process_time() - cpu_started) * 1000 / max(count, 1))
        capture.release()
    result = {f"in_order_ms_{name}": round(statistics.median(times), 2) for name, times in in_order.items()}
    result.update({f"in_order_cpu_ms_{name}": round(statistics.median(times), 2) for name, times in cpu.items()})
    exact = True
    for name, rules in RULES.items():
        with MediaReader(clip, rules) as reader:
            pictures[name] = [frame_fingerprint(frame) for _, frame in reader.frames(range(reader.info.frame_count))]
        seek_ms = []
        for index in random.Random(3).sample(range(len(pictures[name])), min(8, len(pictures[name]))):
            with MediaReader(clip, rules) as reader:  # each from a fresh reader, after its first frame
                list(reader.frames([0]))
                started = time.perf_counter()
                ((_, frame),) = reader.frames([index])
                seek_ms.append((time.perf_counter() - started) * 1000)
                exact = exact and frame_fingerprint(frame) == pictures[name][index]
        result[f"seek_ms_{name}"] = round(statistics.median(seek_ms), 2)
    result["seeks_exact"] = exact
    seek_ms = []
    for index in random.Random(3).sample(range(len(pictures["blender-5"])), min(8, len(pictures["blender-5"]))):
        capture = cv2.VideoCapture(str(clip))
        capture.read()
        started = time.perf_counter()
        capture.set(cv2.CAP_PROP_POS_FRAMES, index)
        capture.read()
        seek_ms.append((time.perf_counter() - started) * 1000)
        capture.release()
    result["seek_ms_opencv"] = round(statistics.median(seek_ms), 2)
    return result
