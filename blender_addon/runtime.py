"""What this Blender session holds at run time and never saves in the .blend, and the one place where the
add-on keeps module-level state.

Why module-level: Blender calls the add-on's operators, handlers, timers and draw callbacks as plain
functions with no object of the add-on's to pass along, and none of this may be saved in the .blend (a file
saved during a job and opened again shows no job running). So each thing that must outlive one call is one
instance here, and nowhere else:

    STATE     what the engine's answers taught (job status, coverage, cache size, last preview, GPU):
              panels and overlays only read it, so drawing never touches the file system
    ENGINE    the engine process of this Blender session (engine_client.EngineSession)
    JOB       the one job in flight (jobs)
    PREVIEW   the live preview request in flight (preview)
    COVERAGE  the cache folder's watcher and the coverage query in flight (coverage_watch)
    BARS      the coverage bars' draw handler (coverage_overlay)

The flow is one way: the engine answers, the module that asked applies the answer here, drawing reads it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

from .cache_watcher import CoverageWatcher
from .engine_client import EngineSession, Request, engine_module

protocol = engine_module("protocol")


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
    # by picture (`paths.picture`: the media path, a file's Deinterlace picture apart)
    analysed: dict[str, set[int]] = field(default_factory=dict)  # picture -> media frames in the cache
    swapped: dict[str, set[int]] = field(default_factory=dict)  # picture -> frames with an output file
    faceless: dict[str, set[int]] = field(default_factory=dict)  # those of them written without a face
    turned_away: dict[str, set[int]] = field(default_factory=dict)  # frames with a face left as it was (yaw limit)
    cache_bytes: int | None = None  # measured by the engine on each coverage refresh
    last_preview: dict = field(default_factory=dict)  # the last preview's summary (frames, written, model runs)
    gpu: dict = field(default_factory=dict)  # the engine's last GPU status (facecache.gpu.status), for the preferences
    gpu_notice: str = ""  # a GPU fallback a job reported, shown in the panel until the engine starts afresh
    # the remote cache support is installed: looked at when the add-on starts, when the Remote Cache preference
    # changes and after an install or removal (remote_ops.look_at_support), never while drawing
    remote_support: bool = False

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


@dataclass
class JobInFlight:
    """The one job this Blender session runs: its request to the engine session, the scene that asked,
    what to call when it ends, and the items it covers (the frames its answer speaks for)."""
    job: Request | None = None
    scene: str = ""
    on_done: Callable | None = None
    items: list[dict] = field(default_factory=list)
    line_before: str | None = None  # a follow-up job's (`jobs.FOLLOW_UPS`): the status line it shows again

    def ended(self) -> None:
        """The job ended (its scene stays: the answer is applied to it)."""
        self.job, self.on_done, self.items, self.line_before = None, None, [], None


@dataclass
class PreviewFlight:
    """The preview request in flight (at most one), the scene it is for and its swapped strips' names,
    and the scene whose playhead moved meanwhile (asked for when the answer comes)."""
    request: Request | None = None
    scene: str = ""
    names: list[str] = field(default_factory=list)
    pending: str = ""
    ui: bool | None = None  # None: previews follow `not bpy.app.background`; tests and benchmarks set True


@dataclass
class DrawHandler:
    handle: object = None  # what draw_handler_add returned, while the handler is added


STATE = Runtime()
ENGINE = EngineSession()
JOB = JobInFlight()
PREVIEW = PreviewFlight()
COVERAGE = CoverageWatcher()
BARS = DrawHandler()


def asked_frames(items: list[dict]) -> dict[str, set[int]]:
    """{picture: media frames} that a request's items cover (`protocol.picture`)."""
    asked: dict[str, set[int]] = {}
    for item in items:
        asked.setdefault(protocol.picture(item), set()).update(protocol.frame_range(item))
    return asked
