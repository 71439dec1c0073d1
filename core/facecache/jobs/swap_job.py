"""A swap job: (target media, frame range, source set, swapper, selector,
composite params) -> output frames named by media frame index.

Per frame the stages are: analysis (cached by frame content and analysis
models), swap (raw swapped crops, cached by frame, source set, swapper and
selector), composite (cheap, from the cached crops and the original frame).
An output whose manifest key matches is skipped without decoding.

Outputs (`facecache.output_layout`): a still target gives `<stem>_swapped.png`, the
whole picture; a video gives `<stem>/<index>.png` RGBA overlays that hold only the
swapped faces (transparent elsewhere), for the sequencer to lay over the untouched
strip. The output place says which clip it belongs to; another clip of the same
name is refused there. The "sequencer" form (the Blender extension's) writes a
frame without a face as one transparent pixel instead: a full-frame transparent
overlay cost Blender 7-14 ms a frame of playback for nothing, a 1x1 one nothing
measurable, and it is transparent under any transform or crop. Other tools get
one size per clip. Beside each overlay with faces it also writes the composited picture
as the strip's proxy, which only Blender's preview reads (`swap.preview_frame`).
Measured on a 1080p frame: a full-frame PNG costs about 85 ms to encode; an
overlay through OpenCV about 26 ms and a tenth of the bytes; through the sparse
encoder (only the rows crossing the faces are compressed) about half that.
"""

from __future__ import annotations

import errno
import itertools
import json
import os
import tempfile
import threading
import time
from concurrent.futures import Executor, Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import cv2
import numpy as np

from facecache import choices, output_layout, protocol
from facecache.analysis.analyzer import FaceAnalyzer, checked_range, segments
from facecache.analysis.selection import Selector
from facecache.errors import FaceCacheError, OSFault, os_fault
from facecache.files import remove_leftover_temp_files, write_atomic
from facecache.fingerprint import bytes_digest
from facecache.jobs.manifest import OutputManifest
from facecache.jobs.output_stamp import stamp_png
from facecache.jobs.preview_files import previews_read_back, write_preview
from facecache.media.identity import media_identity
from facecache.media.reader import MediaReader
from facecache.permissions import Permissions, make_dir, permissions_for
from facecache.store.cache import FaceCache
from facecache.store.claims import DEFAULT_CLAIM_TTL, DEFAULT_POLL_SECONDS, ClaimBook, work_through
from facecache.store.frame_store import FrameStore, RunStats, group_key
from facecache.store.namespace import Namespace
from facecache.swap.composite import CompositeParams, overlay_patches, paste_back
from facecache.swap.eye_records import TargetEyes
from facecache.swap.factory import BoundSwapper
from facecache.swap.result import SwapResult
from facecache.swap.sources import SourceSet
from facecache.swap.sparse_png import SparseOverlayEncoder
from facecache.swap.swap_records import SWAP_CODEC, SwapRecord, quantise_mask

SWAP_FORMAT_VERSION = 4  # 2: crops of several sizes and fitted colour transfers in a pack;
#                           3: the transfers hold the light's direction; 4: and the lightness top
OUTPUT_FORMS = choices.names(choices.OUTPUT_FORMS)
FACELESS_SIZE = (1, 1)  # (width, height) of a "sequencer" output without a face


def resolved_form(output_form: str, still: bool) -> str:
    """The output form a target gets: "auto" is the whole picture for a still, an overlay for a video."""
    return output_form if output_form != "auto" else ("full" if still else "overlay")


@dataclass
class SwapReport:
    frames: int = 0
    written: int = 0
    skipped: int = 0
    cancelled: bool = False
    swap_stats: RunStats = field(default_factory=RunStats)
    faces_found: int = 0     # faces detected in the frames this run made
    faces_swapped: int = 0   # of those, the faces swapped
    faces_turned_away: int = 0  # and the faces left untouched, turned past the swapper's yaw limit
    turned_away_frames: list[int] = field(default_factory=list)  # media frames holding such faces

    def as_dict(self) -> dict:
        """The CLI's and the worker's summary keys for this report."""
        return {protocol.FRAMES: self.frames, protocol.WRITTEN: self.written, protocol.SKIPPED: self.skipped,
                protocol.FACES_FOUND: self.faces_found, protocol.FACES_SWAPPED: self.faces_swapped,
                protocol.FACES_TURNED_AWAY: self.faces_turned_away,
                protocol.TURNED_AWAY_FRAMES: sorted(set(self.turned_away_frames))[:10000],
                protocol.SWAP_CACHE: self.swap_stats.as_dict()}


@dataclass(frozen=True)
class JobProgress:
    """What a progress callback receives after each frame."""

    done: int
    total: int
    written: int
    skipped: int
    frames_per_second: float
    eta_seconds: float | None


# Compositing, encoding and writing run on this many threads (they release the GIL), overlapping
# the main thread's decoding and models; a warm run is bound by them, so use every core.
_WRITERS = max(1, min(4, os.cpu_count() or 1))
# Frames waiting for the writers; bounds the frames held in memory.
_MAX_PENDING_WRITES = 2 * _WRITERS + 2


class SwapJob:
    def __init__(self, analyzer: FaceAnalyzer, swapper: BoundSwapper, sources: SourceSet,
                 selector: Selector = Selector(), composite: CompositeParams = CompositeParams(),
                 output_form: str = "auto", claim_ttl: float = DEFAULT_CLAIM_TTL,
                 claim_poll_seconds: float = DEFAULT_POLL_SECONDS):
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
        self._encoder = SparseOverlayEncoder()  # shared by the writer threads: its empty rows are made once
        # Claims per (swap namespace, segment group) and (analysis namespace, segment group):
        # processes sharing the cache take other segments while one is being made, and come back
        # to it later.
        self.claims = ClaimBook(analyzer.cache, claim_ttl)
        self.claim_poll_seconds = claim_poll_seconds
        # The target's eyes, for a swapper they steer: read once a frame whatever the source, selection
        # or blend (swap.eye_records), in the same groups as the analysis.
        self.eyes = None if swapper.read_eyes is None else TargetEyes(analyzer.cache, analyzer.namespace.key,
                                                                     swapper.digests, swapper.read_eyes)

    def set_composite(self, composite: CompositeParams) -> None:
        """New blend settings for the outputs made from now on (a preview recomposites from the cache)."""
        self.composite = composite
        self._composite_key = json.dumps(composite.describe(), sort_keys=True)

    def run(self, target: str | Path, out_dir: str | Path, frames: range | None = None,
            progress: Callable[[JobProgress], None] | None = None,
            cancel: threading.Event | None = None, deinterlace: bool = False) -> SwapReport:
        """Make every missing or stale output of `frames` (`deinterlace`: of the picture a strip with the
        Deinterlace option shows); stops cleanly, keeping all finished work, when `cancel` is set.
        Compositing, encoding and writing run on a second thread, overlapping the next frame's decoding and
        models."""
        target, out_dir = Path(target), Path(out_dir)
        started = time.perf_counter()
        with self.analyzer.open_reader(target, deinterlace) as reader, \
                ThreadPoolExecutor(_WRITERS, thread_name_prefix="facecache-writer") as writer:
            frames = checked_range(frames, reader.info.frame_count, target)
            still = reader.info.is_still
            form = resolved_form(self.output_form, still)
            media_id = media_identity(target, self.analyzer.cache)
            folder, manifest = open_outputs(target, out_dir, still, media_id, self.analyzer.cache, deinterlace)
            previews_read = previews_read_back(folder, form)

            def report_progress() -> None:
                if progress is None:
                    return
                done = self.report.written + self.report.skipped
                rate = done / max(time.perf_counter() - started, 1e-9)
                progress(JobProgress(done, len(frames), self.report.written, self.report.skipped, rate,
                                     (len(frames) - done) / rate if rate > 0 else None))

            def attempt(item: tuple[int, list[int]]) -> bool:
                segment, wanted = item
                context = _Segment(reader, writer, target, folder, manifest, media_id, segment, wanted, form, still,
                                   previews_read)
                return self._run_segment(context, report_progress, cancel)

            # Segments claimed by others come last (their outputs may show up in the manifest meanwhile).
            work_through(segments(frames), attempt, self.claim_poll_seconds, cancel, before_retry=manifest.refresh)
            manifest.save()  # entries taken from the outputs' own stamps (see OutputManifest.is_current)
        return self.report

    def _run_segment(self, seg: "_Segment", report_progress, cancel) -> bool:
        """Make the missing outputs of one segment under a claim; False (nothing done) while
        another live process holds the claim."""
        todo = self._todo(seg)
        swap_group = group_key(seg.media_id, seg.reader.decoder_id, seg.segment)
        claim = None
        if todo:  # the analysis group of a segment has the same key as its swap group
            claim = self.claims.try_claim_all((self.store.namespace_key, swap_group),
                                              (self.analyzer.namespace.key, swap_group))
            if claim is None:
                return False
        if claim is not None and seg.manifest.refresh():
            todo = self._todo(seg)  # someone finished outputs here since we looked
        try:
            self.report.skipped += len(seg.wanted) - len(todo)
            report_progress()
            if todo:
                self._make_outputs(seg, swap_group, todo, claim, report_progress, cancel)
        finally:
            if claim is not None:
                claim.release()
        self.report.frames += len(seg.wanted)
        report_progress()
        return True

    def _todo(self, seg: "_Segment") -> list[int]:
        """The frames of a segment whose output is missing or stale (no cache read, no decoding)."""
        return [index for index in seg.wanted
                if not seg.manifest.is_current(output_layout.output_name(seg.target, index, seg.still),
                                               self.output_key(seg.media_id, seg.reader.decoder_id, index,
                                                               seg.form))]

    def _make_outputs(self, seg: "_Segment", swap_group: str, todo: list[int], claim,
                      report_progress, cancel) -> None:
        # Under a claim, as the file server lists the groups now: with what a previous holder wrote.
        analysis = self.analyzer.open_segment(seg.media_id, seg.reader.decoder_id, seg.segment,
                                              fresh=claim is not None, legacy=True)
        swaps = self.store.open_group(swap_group, fresh=claim is not None)
        pending: list[tuple[str, str, Future]] = []
        failed: BaseException | None = None
        # Frames whose faces are all in the cache, ready to composite, are not decoded (a blend change).
        sizes = {index: self.size_without_pixels(analysis, swaps, index, seg.form) for index in todo}
        # One read-only frame of zeros per size stands in for them all: a fresh one per frame cost a
        # 4K blend change a tenth of its time (the allocator recycles and clears 25 MB each time).
        stand_ins = {size: blank_frame(size) for size in set(sizes.values()) if size is not None}
        cached = ((index, stand_ins[size]) for index, size in sizes.items() if size is not None)
        decoded = self.analyzer.frames(analysis, seg.reader, [index for index, size in sizes.items() if size is None],
                                       rows=lambda index: self.rows_read(analysis, swaps, index, seg.form))
        try:
            for index, frame in itertools.chain(cached, decoded):
                name = output_layout.output_name(seg.target, index, seg.still)
                results = self.swap_frame(analysis, swaps, index, frame, seg.writer)
                key = self.output_key(seg.media_id, seg.reader.decoder_id, index, seg.form)
                picture = (self.picture_key(seg.media_id, seg.reader.decoder_id, index) if seg.previews_read
                           else None)
                pending.append((name, key, seg.writer.submit(self.write_output, seg.folder / name, frame, results,
                                                             seg.form, key, seg.manifest.perms.file_mode, picture)))
                if len(pending) >= _MAX_PENDING_WRITES:
                    failed = self._finish_writes(pending, seg.manifest, keep=_MAX_PENDING_WRITES // 2)
                if claim is not None:
                    claim.keep_alive()
                report_progress()
                if failed is not None:
                    break  # e.g. the output disk is full: stop making frames, keep what is done
                if cancel is not None and cancel.is_set():
                    self.report.cancelled = True
                    break
        finally:
            # Whatever happens (cancel, a full disk, an error), finished work is kept: every output
            # written is recorded and every record made is stored (where the cache can take it).
            failed = self._finish_writes(pending, seg.manifest, keep=0) or failed
            analysis.flush()
            swaps.flush()
            self.flush_eyes()
            seg.manifest.save()
        if failed is not None:
            raise self._output_fault(failed, seg.folder)

    def _output_fault(self, failed: BaseException, folder: Path) -> BaseException:
        """The error a failed output write ends the job with: for an OSError, one line that says
        what was kept."""
        if not isinstance(failed, OSError):
            return failed
        fault = os_fault(failed, "write the outputs in", folder, hint="choose another output folder (--out)")
        return OSFault(f"{fault}. The {self.report.written} outputs written are kept and everything computed is "
                       "in the cache: run the same command again to make the rest", fault.exit_code, fault.errno,
                       fault.path)

    def write_output(self, path: Path, frame: np.ndarray, results, form: str, key: str, mode: int,
                     picture: str | None, durable: bool = True, encoder: SparseOverlayEncoder | None = None,
                     pool: Executor | None = None) -> None:
        """Encode and write one output (file mode `mode`), stamped with the key it is made from (`durable=False`:
        no fsync, for previews; an output a power cut emptied fails its manifest and stamp checks and is remade);
        `picture` names the frame's pixels (`picture_key`), for the "sequencer" form's previews (`write_preview`).
        Overlays go through `encoder` when given, else through the job's own; with `pool`, an overlay's
        groups of faces are composited on its threads (a preview's one frame; a job's frames are already
        side by side)."""
        if form == "full":
            data = _encode_png(paste_back(frame, results, self.composite))
        else:
            encoder = encoder or self._encoder
            patches = overlay_patches(frame, results, self.composite, pool)
            width, height = FACELESS_SIZE if form == "sequencer" and not patches else frame.shape[1::-1]
            # a preview's picture is made beside its overlay's encoding: the editor waits for both
            preview = (pool.submit(write_preview, path, frame, patches, mode, picture)
                       if form == "sequencer" and pool else None)
            data = encoder.encode(width, height, patches)
            if preview is not None:
                preview.result()
            elif form == "sequencer":
                write_preview(path, frame, patches, mode, picture)
        write_atomic(path, stamp_png(data, key), mode=mode, durable=durable)

    def _finish_writes(self, pending: list, manifest: OutputManifest, keep: int) -> BaseException | None:
        """Wait for all but the newest `keep` writes; record each finished output in the manifest.
        Returns the first failed write (its output is not recorded), else None."""
        failed = None
        while len(pending) > keep:
            name, key, future = pending.pop(0)
            error = future.exception()
            if error is not None:
                failed = failed or error
                continue
            manifest.record(name, key)
            self.report.written += 1
        return failed

    def size_without_pixels(self, analysis, swaps, index: int, form: str) -> tuple[int, int] | None:
        """(height, width) of media frame `index` when its output can be made without its pixels: an
        overlay whose analysis and swap are cached, each face with its fitted colour transfer (or
        colour matching off), reads no pixel of the frame, so a `blank_frame` of its size stands in for
        it (a 4K frame's decode was a third of a blend change's time). None when the frame must be
        decoded: the "full" form and the "sequencer" form's preview (`write_preview`) show its pixels.
        Reads the cache without counting it."""
        fingerprint = analysis.fingerprint_at(index)
        record = analysis.content.records.get(fingerprint) if form == "overlay" and fingerprint else None
        if record is None or not record.has(self.needed):
            return None
        cached = swaps.content.records.get(record.fingerprint)
        if cached is None or (self.composite.color_match > 0 and any(r.color is None for r in cached.results)):
            return None
        return record.height, record.width

    def rows_read(self, analysis, swaps, index: int, form: str) -> list[tuple[int, int]] | None:
        """The only spans of rows of media frame `index` that its output reads, or None for all: an overlay
        whose analysis (and eyes, for a swapper they steer) is cached and whose faces are swapped now reads their
        crops alone, where the swapper says which rows it reads (the bench's one-face 1080p frames: 43 % of
        their rows). Reads the cache without counting it."""
        fingerprint = analysis.fingerprint_at(index)
        record = analysis.content.records.get(fingerprint) if form == "overlay" and fingerprint else None
        if record is None or not record.has(self.needed) or swaps.content.records.get(record.fingerprint) is not None:
            return None  # the frame is analysed, or its swap is cached: all of it
        faces, _ = self.swapper.split_turned(self.selector.select(record.faces, record.width, record.height))
        if self.eyes is not None and not self.eyes.known(swaps.key, record, faces):
            return None  # its eyes are read
        spans = [self.swapper.rows_read(face, record.height) for face in faces]
        return None if None in spans else spans

    def swap_frame(self, analysis, swaps, index: int, frame: np.ndarray, pool: Executor | None = None) -> list:
        """The swap results of a decoded frame: from the cache, else analysed (as needed) and swapped
        (the faces of a frame side by side on `pool`'s threads when given)."""
        record = self.analyzer.cached(analysis, index, self.needed)
        if record is None or not record.has(self.needed):
            record = self.analyzer.ensure(analysis, index, frame, self.needed)
        cached = swaps.lookup(record.fingerprint)
        if cached is None:
            faces, turned = self.swapper.split_turned(self.selector.select(record.faces, record.width,
                                                                            record.height))
            eyes = None if self.eyes is None else self._target_eyes(swaps.key, record, frame, faces)
            results = self._swap_faces(frame, faces, pool, eyes)
            self.analyzer.inferences.swap += len(faces)
            cached = SwapRecord(record.fingerprint, results, len(turned))
        self.report.faces_found += len(record.faces)
        self.report.faces_swapped += len(cached.results)
        self.report.faces_turned_away += cached.turned_away
        if cached.turned_away:
            self.report.turned_away_frames.append(index)
        if swaps.fingerprint_at(index) != record.fingerprint or cached.fingerprint not in swaps.content.records:
            swaps.put(cached, index)
        return cached.results

    def _swap_faces(self, frame: np.ndarray, faces: list, pool: Executor | None, eyes: list | None = None) -> list:
        def swap(face_and_eyes) -> SwapResult:
            return quantise_mask(self.swapper.swap(frame, *face_and_eyes))

        work = list(zip(faces, eyes or [None] * len(faces)))
        if pool is None or len(work) < 2:
            return [swap(item) for item in work]
        first = swap(work[0])  # builds the swapper, once, before threads share it
        return [first, *pool.map(swap, work[1:])]

    def _target_eyes(self, group: str, record, frame: np.ndarray, faces: list) -> list:
        """Each of ``faces``' eyes, from the cache or read now (counted as model runs)."""
        reads = self.eyes.reads
        found = self.eyes.of_faces(group, record, frame, faces)
        self.analyzer.inferences.eyes += self.eyes.reads - reads
        return found

    def flush_eyes(self) -> None:
        """Store the eye readings made since their group was read."""
        if self.eyes is not None:
            self.eyes.flush()

    def output_key(self, media_id: str, decoder_id: str, index: int, form: str) -> str:
        """What an output is made from: the media's content and frame index under its decoder
        (which fix the frame's pixels, hence its fingerprint), the swap namespace (models,
        sources, selector), the blend settings and the output form. Known from the manifest
        alone, so an up-to-date output is skipped without reading the cache or decoding."""
        return bytes_digest(f"{self.picture_key(media_id, decoder_id, index)}|{self.store.namespace_key}|"
                            f"{self._composite_key}|{form}".encode())

    @staticmethod
    def picture_key(media_id: str, decoder_id: str, index: int) -> str:
        """What fixes a frame's pixels: the media's content, its decoder (Blender's rules, the Deinterlace
        option) and the frame's index."""
        return f"{media_id}|{decoder_id}|{index}"


def blank_frame(size: tuple[int, int]) -> np.ndarray:
    """A read-only frame of zeros of (height, width) `size`: what stands in for the frames an output is
    made of without their pixels (see `SwapJob.size_without_pixels`), one shared by many."""
    frame = np.zeros((*size, 3), np.uint8)
    frame.flags.writeable = False
    return frame


@dataclass(frozen=True)
class _Segment:
    """One segment of a run and what its frames go through."""

    reader: MediaReader
    writer: ThreadPoolExecutor
    target: Path
    folder: Path
    manifest: OutputManifest
    media_id: str
    segment: int
    wanted: list[int]
    form: str
    still: bool
    previews_read: bool  # the old previews read back (`previews_read_back`)


class OutputInsideCache(FaceCacheError):
    """An output folder inside the cache, where the cache's clear and prune would delete outputs."""


def check_outside_cache(folder: str | Path, cache_root: str | Path) -> None:
    if output_layout.inside_cache(folder, cache_root):
        raise OutputInsideCache(f"the output folder {folder} is inside the cache folder {cache_root}, whose clear "
                                "and prune delete what they find there: choose an output folder outside the cache")


def open_outputs(target: Path, out_dir: Path, still: bool, media_id: str,
                 cache: FaceCache, deinterlace: bool = False) -> tuple[Path, OutputManifest]:
    """The output folder of `target` (`facecache.output_layout`), ready: outside the cache, created,
    writable, marked as this clip's and picture's (OutputTaken when it is another clip's), cleaned of the temp
    files of a job killed mid-write; and its manifest."""
    folder = Path(output_layout.output_folder(out_dir, target, still))
    check_outside_cache(folder, cache.root)
    perms = prepare_output_folder(folder)  # before any work: a folder we cannot write is a message
    try:
        output_layout.claim(out_dir, target, still, media_id, perms.file_mode, deinterlace)
    except OSError as exc:
        raise os_fault(exc, "write the outputs in", folder, hint="choose another output folder (--out)") from None
    remove_leftover_temp_files(folder)
    return folder, OutputManifest(folder, perms)


def prepare_output_folder(folder: Path) -> Permissions:
    """Create the output folder with the permission rule of everything that holds faces (team folder
    or private, `facecache.permissions`; an existing folder keeps its own mode) and make sure a file can
    be written in it; returns the rule. Else an OSFault naming the folder, what is wrong and what to do."""
    perms = permissions_for(folder)
    try:
        make_dir(folder, perms)
        if not folder.is_dir():
            raise NotADirectoryError(errno.ENOTDIR, os.strerror(errno.ENOTDIR), str(folder))
        fd, probe = tempfile.mkstemp(prefix=".facecache-probe-", dir=folder)
        os.close(fd)
        os.unlink(probe)
    except OSError as exc:
        raise os_fault(exc, "write the outputs in", folder, hint="choose another output folder (--out)",
                       name_file=False) from None
    return perms


def _encode_png(image: np.ndarray) -> bytes:
    ok, encoded = cv2.imencode(".png", image)
    if not ok:
        raise RuntimeError("OpenCV could not encode a PNG")
    return encoded.tobytes()
