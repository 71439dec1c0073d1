"""What this Blender session knows at run time and never saves in the .blend: the running job's progress
and status, coverage (analysed and swapped media frames of each media file), the cache size and the
last preview. The engine session fills it (with every job's answer, on watcher events, after each
preview); panels and overlays only read it, so drawing never touches the file system. A file saved
during a job and opened again shows no job running: nothing of this is in it.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class JobStatus:
    running: bool = False
    kind: str = ""
    progress: float = 0.0  # 0..1
    text: str = ""  # the status line: progress while running, then the summary or the error
    done: int = 0  # frames done of `total`, while running
    total: int = 0
    media: frozenset[str] = frozenset()  # the media paths the job works on

    def works_on(self, media: str) -> bool:
        """Whether a running job is making this media file's frames (its panel then shows the job)."""
        return self.running and media in self.media


@dataclass
class Runtime:
    job: JobStatus = field(default_factory=JobStatus)
    analysed: dict[str, set[int]] = field(default_factory=dict)  # media path -> media frames in the cache
    swapped: dict[str, set[int]] = field(default_factory=dict)  # media path -> frames with an output file
    faceless: dict[str, set[int]] = field(default_factory=dict)  # those of them written without a face
    turned_away: dict[str, set[int]] = field(default_factory=dict)  # frames with a face left as it was (yaw limit)
    cache_bytes: int | None = None  # measured by the engine on each coverage refresh
    last_preview: dict = field(default_factory=dict)  # the last preview's summary (frames, written, model runs)
    gpu: dict = field(default_factory=dict)  # the engine's last GPU status (facecache.gpu.status), for the preferences
    gpu_notice: str = ""  # a GPU fallback a job reported, shown in the panel until the engine starts afresh

    def replace(self, kind: str, answered: dict, asked: dict[str, set[int]]) -> bool:
        """The engine answered `answered` ({media: [frames]}) for the media frames `asked`: frames it
        no longer reports drop out, the others are added (kind: "analysed", "swapped" or "faceless").
        Returns whether that changed what was known."""
        known, changed = getattr(self, kind), False
        for media, frames in asked.items():
            mine = known.setdefault(media, set())
            now = {int(f) for f in answered.get(media, ())}
            changed = changed or mine & frames != now
            mine.difference_update(frames)
            mine.update(now)
        return changed

    def add(self, kind: str, answered: dict) -> None:
        for media, frames in answered.items():
            getattr(self, kind).setdefault(media, set()).update(int(f) for f in frames)

    def forget(self) -> None:
        """A new file or a cleared cache: nothing is known until the engine answers again."""
        self.analysed.clear()
        self.swapped.clear()
        self.faceless.clear()
        self.turned_away.clear()
        self.cache_bytes = None
        self.last_preview = {}


STATE = Runtime()


def asked_frames(items: list[dict]) -> dict[str, set[int]]:
    """{media: media frames} that a request's items cover."""
    asked: dict[str, set[int]] = {}
    for item in items:
        asked.setdefault(item["media"], set()).update(range(int(item["start"]), int(item["stop"])))
    return asked
