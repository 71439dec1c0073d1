"""Preview: render single frames fast while an editor scrubs the playhead.

A `PreviewSession` keeps what a one-frame job would redo on every call: the
open video (so the next frame is one decode), the media identity, the current
segment's analysis and swap records, and the output manifest. Each `render`
then costs a decode, a composite and an encode; models run only for frames
never analysed or swapped before. Close the session (or use it as a context
manager) to write the collected records and the manifest.
"""

from __future__ import annotations

from pathlib import Path

from facecache.analysis.analyzer import checked_range
from facecache.jobs.manifest import OutputManifest
from facecache.jobs.swap_job import SwapJob, output_name
from facecache.media.identity import media_identity
from facecache.media.reader import DECODER_ID, MediaReader
from facecache.store.frame_store import SEGMENT_FRAMES, group_key


class PreviewSession:
    def __init__(self, job: SwapJob, target: str | Path, out_dir: str | Path):
        self.job = job
        self.target = Path(target)
        self.reader = MediaReader(self.target)
        info = self.reader.info
        self.form = job.output_form if job.output_form != "auto" else ("full" if info.is_still else "overlay")
        self.folder = Path(out_dir) if info.is_still else Path(out_dir) / self.target.stem
        self.folder.mkdir(parents=True, exist_ok=True)
        self.manifest = OutputManifest(self.folder)
        self.media_id = media_identity(self.target, job.analyzer.cache)
        self._segment: int | None = None
        self._groups = None

    def render(self, index: int) -> Path:
        """Make sure the output of media frame `index` exists and is current; returns its path."""
        checked_range(range(index, index + 1), self.reader.info.frame_count, self.target)
        analysis, swaps = self._groups_for(index // SEGMENT_FRAMES)
        name = output_name(self.target, index, self.reader.info.is_still)
        key = self.job.output_key(self.media_id, index, self.form)
        if self.manifest.is_current(name, key):
            return self.folder / name
        ((_, frame),) = self.reader.frames([index])
        results = self.job.swap_frame(analysis, swaps, index, frame)
        self.job.write_output(self.folder / name, frame, results, self.form, key)
        self.manifest.record(name, key)
        self.job.report.written += 1
        return self.folder / name

    def _groups_for(self, segment: int):
        if segment != self._segment:
            self._flush()
            self._groups = (self.job.analyzer.open_segment(self.media_id, segment),
                            self.job.store.open_group(group_key(self.media_id, DECODER_ID, segment)))
            self._segment = segment
        return self._groups

    def _flush(self) -> None:
        if self._groups is not None:
            for group in self._groups:
                group.flush()
        self.manifest.save()

    def close(self) -> None:
        self._flush()
        self.reader.close()

    def __enter__(self) -> "PreviewSession":
        return self

    def __exit__(self, *exc) -> None:
        self.close()
