"""Preview: render single frames fast while an editor scrubs the playhead.

A `PreviewSession` keeps what a one-frame job would redo on every call: the
open video (so the next frame is one decode), the media identity, the current
segment's analysis and swap records, and the output manifest. Each `render`
then costs a decode, a composite and an encode; models run only for frames
never analysed or swapped before. An editor waits for each frame, so the
session spreads a frame's faces and its overlay's bands over the cores (a thread
pool). Close the session (or use it as a context
manager) to write the collected records and the manifest.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, Callable

from facecache.analysis.analyzer import checked_range
from facecache import output_layout
from facecache.jobs.preview_files import previews_read_back
from facecache.jobs.swap_job import SwapJob, blank_frame, open_outputs, resolved_form
from facecache.media.identity import media_identity
from facecache.models.runtime import usable_cores
from facecache.store.frame_store import SEGMENT_FRAMES, group_key
from facecache.swap.composite import CompositeParams
from facecache.swap.sparse_png import SparseOverlayEncoder


class PreviewSession:
    def __init__(self, job: SwapJob, target: str | Path, out_dir: str | Path, deinterlace: bool = False):
        self.job = job
        self.target = Path(target)
        self.reader = job.analyzer.open_reader(self.target, deinterlace)
        info = self.reader.info
        self.form = resolved_form(job.output_form, info.is_still)
        self.media_id = media_identity(self.target, job.analyzer.cache)
        self.folder, self.manifest = open_outputs(self.target, Path(out_dir), info.is_still, self.media_id,
                                                  job.analyzer.cache, deinterlace)
        self._previews_read = previews_read_back(self.folder, self.form)
        self._segment: int | None = None
        self._groups = None
        self._decoded: tuple[int, object] | None = None  # the last frame decoded: a slider moves on one frame
        self._blank_frame = None
        cores = usable_cores()
        self._pool = ThreadPoolExecutor(cores, thread_name_prefix="facecache-preview") if cores > 1 else None
        self._encoder = SparseOverlayEncoder(pool=self._pool)

    def render(self, index: int, composite: CompositeParams | None = None) -> Path:
        """Make sure the output of media frame `index` exists and is current (with `composite`, the blend
        settings, when given: a blend change recomposites from the cached swap); returns its path."""
        checked_range(range(index, index + 1), self.reader.info.frame_count, self.target)
        if composite is not None and composite != self.job.composite:
            self.job.set_composite(composite)
        analysis, swaps = self._groups_for(index // SEGMENT_FRAMES)
        name = output_layout.output_name(self.target, index, self.reader.info.is_still)
        key = self.job.output_key(self.media_id, self.reader.decoder_id, index, self.form)
        if self.manifest.is_current(name, key):
            return self.folder / name
        size = self.job.size_without_pixels(analysis, swaps, index, self.form)
        frame = self._frame(analysis, index) if size is None else self._blank(size)
        results = self.job.swap_frame(analysis, swaps, index, frame, self._pool)
        # No fsync: measured at a fifth of a preview's time under load; a lost preview is made again.
        self.job.write_output(self.folder / name, frame, results, self.form, key, self.manifest.perms.file_mode,
                              self.job.picture_key(self.media_id, self.reader.decoder_id, index)
                              if self._previews_read else None,
                              durable=False, encoder=self._encoder, pool=self._pool)
        self.manifest.record(name, key)
        self.job.report.written += 1
        return self.folder / name

    def _frame(self, analysis, index: int):
        """The decoded frame `index`, detected (with tracking, the frames before it in its segment are
        detected first: see FaceAnalyzer.frames); the last one is kept, since going back in a video means
        seeking to a key frame and decoding forward again, and blend tweaks remake the same frame over
        and over."""
        if self._decoded is None or self._decoded[0] != index:
            ((_, frame),) = self.job.analyzer.frames(analysis, self.reader, [index])
            self._decoded = (index, frame)
        return self._decoded[1]

    def _blank(self, size: tuple[int, int]):
        """The frame of zeros that stands in for a frame made without its pixels, kept: clearing a new
        one was a tenth of a 4K blend change."""
        if self._blank_frame is None or self._blank_frame.shape[:2] != size:
            self._blank_frame = blank_frame(size)
        return self._blank_frame

    def _groups_for(self, segment: int):
        if segment != self._segment:
            self._flush()
            decoder_id = self.reader.decoder_id
            self._groups = (self.job.analyzer.open_segment(self.media_id, decoder_id, segment, legacy=True),
                            self.job.store.open_group(group_key(self.media_id, decoder_id, segment)))
            self._segment = segment
        return self._groups

    def _flush(self) -> None:
        if self._groups is not None:
            for group in self._groups:
                group.flush()
        self.job.flush_eyes()
        self.manifest.save()

    def close(self) -> None:
        self._flush()
        self.reader.close()
        if self._pool is not None:
            self._pool.shutdown()

    def __enter__(self) -> "PreviewSession":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


class PreviewSessions:
    """Open preview sessions of one long-lived process, one per (media file, its Deinterlace option, output
    folder, settings other than the blend), the most recently used first; the oldest is closed beyond `limit`. A blend
    change reuses its session: the frame is recomposited from the cached swap."""

    def __init__(self, swap_job: Callable[[Any], SwapJob], limit: int = 4):
        self.swap_job = swap_job  # settings (facecache.pipeline.Settings) -> their swap job (the engine's)
        self.limit = limit
        self._sessions: dict[tuple, PreviewSession] = {}

    def session(self, settings, target: str | Path, out_dir: str | Path, deinterlace: bool = False) -> PreviewSession:
        key = (str(target), deinterlace, str(out_dir), settings.without_composite().key())
        session = self._sessions.pop(key, None)
        if session is None:
            session = PreviewSession(self.swap_job(settings), target, out_dir, deinterlace)
        self._sessions[key] = session  # now the most recent
        while len(self._sessions) > self.limit:
            self._sessions.pop(next(iter(self._sessions))).close()
        return session

    def close_all(self) -> None:
        """Write what the sessions collected and close them (a job changed outputs or models)."""
        sessions, self._sessions = list(self._sessions.values()), {}
        for session in sessions:
            session.close()
