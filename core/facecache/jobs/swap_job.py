"""A swap job: (target media, frame range, source set, swapper, selector,
composite params) -> output frames named by media frame index.

Per frame the stages are: analysis (cached by frame content and analysis
models), swap (raw swapped crops, cached by frame, source set, swapper and
selector), composite (cheap, from the cached crops and the original frame).
An output whose manifest key matches is skipped without decoding.

Outputs: a still target gives `<stem>_swapped.png`, the whole picture; a video
gives `<stem>/<index>.png` RGBA overlays that hold only the swapped faces
(transparent elsewhere), for the sequencer to lay over the untouched strip.
Measured on a 1080p frame: a full-frame PNG costs about 85 ms to encode, an
overlay about 26 ms and a fifth of the bytes.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from pathlib import Path

import cv2
import numpy as np

from facecache.analysis.analyzer import FaceAnalyzer, checked_range, segments
from facecache.analysis.selection import Selector
from facecache.fingerprint import bytes_digest
from facecache.jobs.manifest import OutputManifest
from facecache.media.identity import media_identity
from facecache.media.reader import DECODER_ID, MediaReader
from facecache.models.files import write_atomic
from facecache.store.frame_store import FrameStore, RunStats, group_key
from facecache.store.namespace import Namespace
from facecache.swap.composite import CompositeParams, overlay, paste_back
from facecache.swap.factory import BoundSwapper
from facecache.swap.overlay_png import encode_overlay
from facecache.swap.sources import SourceSet
from facecache.swap.swap_records import SWAP_CODEC, SwapRecord, quantise_mask

SWAP_FORMAT_VERSION = 1
OUTPUT_FORMS = ("auto", "overlay", "full")


@dataclass
class SwapReport:
    frames: int = 0
    written: int = 0
    skipped: int = 0
    swap_stats: RunStats = field(default_factory=RunStats)
    outputs: list[str] = field(default_factory=list)


class SwapJob:
    def __init__(self, analyzer: FaceAnalyzer, swapper: BoundSwapper, sources: SourceSet,
                 selector: Selector = Selector(), composite: CompositeParams = CompositeParams(),
                 output_form: str = "auto"):
        if output_form not in OUTPUT_FORMS:
            raise ValueError(f"output form must be one of {OUTPUT_FORMS}")
        self.analyzer = analyzer
        self.swapper = swapper
        self.sources = sources
        self.selector = selector
        self.composite = composite
        self.output_form = output_form
        self.namespace = Namespace(
            stage="swap",
            models={**analyzer.models.digests, **swapper.digests},
            settings={"analysis": analyzer.namespace.key, "swapper": swapper.describe,
                      "source": sources.digest, "selector": selector.describe()},
            format_version=SWAP_FORMAT_VERSION,
        )
        self.needed = analyzer.stages(embeddings=selector.needs_embeddings)
        self.report = SwapReport()
        self.store = FrameStore(analyzer.cache, self.namespace, self.report.swap_stats, codec=SWAP_CODEC)
        self._composite_key = json.dumps(composite.describe(), sort_keys=True)

    def run(self, target: str | Path, out_dir: str | Path, frames: range | None = None, progress=None) -> SwapReport:
        target, out_dir = Path(target), Path(out_dir)
        with MediaReader(target) as reader:
            frames = checked_range(frames, reader.info.frame_count, target)
            still = reader.info.is_still
            form = self.output_form if self.output_form != "auto" else ("full" if still else "overlay")
            folder = out_dir if still else out_dir / target.stem
            folder.mkdir(parents=True, exist_ok=True)
            manifest = OutputManifest(folder)
            media_id = media_identity(target, self.analyzer.cache)
            done = 0
            for segment, wanted in segments(frames):
                analysis = self.analyzer.open_segment(media_id, segment)
                swaps = self.store.open_group(group_key(media_id, DECODER_ID, segment))
                todo = []
                for index in wanted:
                    name = _output_name(target, index, still)
                    fingerprint = analysis.fingerprint_at(index)
                    if fingerprint and manifest.is_current(name, self._output_key(fingerprint, form)):
                        self.report.skipped += 1
                    else:
                        todo.append(index)
                for index, frame in reader.frames(todo):
                    name = _output_name(target, index, still)
                    fingerprint, results = self._swap_frame(analysis, swaps, index, frame)
                    image = paste_back(frame, results, self.composite) if form == "full" else None
                    data = (_encode_png(image) if form == "full"
                            else encode_overlay(overlay(frame, results, self.composite)))
                    write_atomic(folder / name, data)
                    manifest.record(name, self._output_key(fingerprint, form))
                    self.report.written += 1
                    self.report.outputs.append(str(folder / name))
                analysis.flush()
                swaps.flush()
                manifest.save()
                done += len(wanted)
                self.report.frames += len(wanted)
                if progress:
                    progress(done, len(frames))
        return self.report

    def _swap_frame(self, analysis, swaps, index: int, frame: np.ndarray):
        record = self.analyzer.cached(analysis, index, self.needed)
        if record is None or not record.has(self.needed):
            record = self.analyzer.ensure(analysis, index, frame, self.needed)
        cached = swaps.lookup(record.fingerprint)
        if cached is None:
            faces = self.selector.select(record.faces, record.width, record.height)
            results = [quantise_mask(self.swapper.swap(frame, face)) for face in faces]
            self.analyzer.inferences.swap += len(faces)
            cached = SwapRecord(record.fingerprint, results)
        if swaps.fingerprint_at(index) != record.fingerprint or cached.fingerprint not in swaps.content.records:
            swaps.put(cached, index)
        return record.fingerprint, cached.results

    def _output_key(self, fingerprint: str, form: str) -> str:
        return bytes_digest(f"{fingerprint}|{self.store.namespace_key}|{self._composite_key}|{form}".encode())


def _output_name(target: Path, index: int, still: bool) -> str:
    return f"{target.stem}_swapped.png" if still else f"{index:06d}.png"


def _encode_png(image: np.ndarray) -> bytes:
    ok, encoded = cv2.imencode(".png", image)
    if not ok:
        raise RuntimeError("OpenCV could not encode a PNG")
    return encoded.tobytes()
