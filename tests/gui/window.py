"""What a GUI scenario does to Blender's real window, from inside Blender (Debian's 4.3.2 under Xvfb):
where areas and regions are on the screen, screenshots of the X display, the pointer and the keyboard
through `xdotool` (real X events, handled by Blender's own event loop), OCR of a screen rectangle with
tesseract, and timestamps of every redraw of a region.

The window fills the X screen at (0, 0) (Xvfb runs no window manager, so it has no frame): a region's
Blender rectangle (origin bottom left) maps to X coordinates (origin top left) by flipping y.
"""

from __future__ import annotations

import csv
import io
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

import bpy


@dataclass(frozen=True)
class Rect:
    """A rectangle in X screen coordinates (origin top left)."""

    x: int
    y: int
    width: int
    height: int

    @property
    def center(self) -> tuple[int, int]:
        return self.x + self.width // 2, self.y + self.height // 2

    def as_list(self) -> list[int]:
        return [self.x, self.y, self.width, self.height]


@dataclass(frozen=True)
class Word:
    text: str
    rect: Rect
    confidence: float


class Window:
    def __init__(self, out: Path):
        self.out = out
        self.shots: list[str] = []
        self._draws: dict[str, list[float]] = {}
        self._handlers: list[tuple] = []

    @property
    def window(self):
        return bpy.context.window_manager.windows[0]

    def area(self, view_type: str):
        """The sequencer area showing `view_type` ("SEQUENCER": the timeline, "PREVIEW")."""
        for area in self.window.screen.areas:
            if area.type == "SEQUENCE_EDITOR" and area.spaces.active.view_type == view_type:
                return area
        raise LookupError(f"no sequencer area of type {view_type} in the window")

    @staticmethod
    def region(area, kind: str):
        return next(region for region in area.regions if region.type == kind)

    def rect(self, region) -> Rect:
        return Rect(region.x, self.window.height - (region.y + region.height), region.width, region.height)

    def point(self, region, x: float, y: float) -> tuple[int, int]:
        """X screen coordinates of a point given in region pixels (origin bottom left)."""
        return int(round(region.x + x)), int(round(self.window.height - (region.y + y)))

    def override(self, area, region_type: str = "WINDOW"):
        """A context for operators that act on `area` (timers run without one)."""
        return bpy.context.temp_override(window=self.window, screen=self.window.screen, area=area,
                                         region=self.region(area, region_type))

    # -- screenshots, pointer, keyboard, OCR
    def screenshot(self, name: str) -> Path:
        """The whole X display as Blender last drew it."""
        path = self.out / f"{len(self.shots):02d}_{name}.png"
        subprocess.run(["import", "-window", "root", str(path)], check=True, capture_output=True)
        self.shots.append(path.name)
        return path

    @staticmethod
    def xdotool(*args) -> None:
        subprocess.run(["xdotool", *map(str, args)], check=True, capture_output=True)

    # Generators (`yield from window.click(x, y)`): Blender must handle the pointer's arrival (it makes the
    # region under it active) before a button press counts; a click sent with the move is lost.
    def hover(self, x: int, y: int):
        self.xdotool("mousemove", "--sync", x, y)
        yield 0.25

    def click(self, x: int, y: int, button: int = 1):
        yield from self.hover(x, y)
        self.xdotool("click", button)
        yield 0.1

    def scroll(self, x: int, y: int, notches: int):
        """Turn the wheel over (x, y): positive notches scroll down."""
        yield from self.hover(x, y)
        self.xdotool("click", "--repeat", abs(notches), "--delay", 30, 5 if notches > 0 else 4)
        yield 0.2

    def drag(self, start: tuple[int, int], dx: int, steps: int = 10):
        """Press at `start`, move `dx` pixels sideways in `steps`, release. The moves are relative: while a
        number is dragged, Blender wraps the pointer (it warps it back), so absolute positions would jump."""
        yield from self.hover(*start)
        self.xdotool("mousedown", 1)
        yield 0.1
        for i in range(steps):
            self.xdotool("mousemove_relative", "--", dx * (i + 1) // steps - dx * i // steps, 0)
            yield 0.03
        self.xdotool("mouseup", 1)
        yield 0.1

    def keys(self, x: int, y: int, *keys: str):
        """Keys pressed with the pointer at (x, y): Blender sends them to the region under it."""
        yield from self.hover(x, y)
        self.xdotool("key", *keys)
        yield 0.1

    def ocr(self, shot: Path, rect: Rect, name: str, rotate: int = 0) -> list[Word]:
        """Words tesseract reads in `rect` of a screenshot, with their rectangles on the screen. The crop is
        enlarged 3x first (Blender's interface text is about 11 px high at scale 1); `rotate=-90` turns it a
        quarter anticlockwise first (the sidebar's tabs are written top to bottom)."""
        scale = 3
        crop = self.out / f"ocr_{name}.png"
        convert = ["convert", str(shot), "-crop", f"{rect.width}x{rect.height}+{rect.x}+{rect.y}", "+repage"]
        if rotate:
            convert += ["-rotate", str(rotate)]
        # Light text on Blender's dark theme and on sliders' blue fill: black text on white after the threshold.
        convert += ["-colorspace", "Gray", "-resize", f"{scale * 100}%", "-threshold", "45%", "-negate", str(crop)]
        subprocess.run(convert, check=True, capture_output=True)
        tsv = subprocess.run(["tesseract", str(crop), "stdout", "--psm", "11", "tsv"], check=True,
                             capture_output=True, text=True).stdout
        (self.out / f"ocr_{name}.tsv").write_text(tsv, encoding="utf-8")
        words = []
        for row in csv.DictReader(io.StringIO(tsv), delimiter="\t", quoting=csv.QUOTE_NONE):
            text = (row.get("text") or "").strip()
            if not text:
                continue
            left, top, w, h = (int(row[k]) / scale for k in ("left", "top", "width", "height"))
            if rotate == -90:  # the crop turned anticlockwise: its x runs down the screen, its y leftwards
                left, top, w, h = rect.width - top - h, left, h, w
            words.append(Word(text, Rect(int(rect.x + left), int(rect.y + top), max(1, int(w)), max(1, int(h))),
                              float(row["conf"])))
        return words

    # -- redraws
    def add_draw_handler(self, space_type, callback, region_type: str) -> None:
        """Call `callback` after every redraw of the regions of `region_type` in spaces of `space_type` (removed
        when the scenario ends)."""
        handle = space_type.draw_handler_add(callback, (), region_type, "POST_PIXEL")
        self._handlers.append((space_type, handle, region_type))

    def count_draws(self, name: str, space_type, region_type: str) -> None:
        """Record the time of every redraw of the regions of `region_type` in spaces of `space_type`."""
        stamps = self._draws.setdefault(name, [])
        self.add_draw_handler(space_type, lambda: stamps.append(time.perf_counter()), region_type)

    def draws(self, name: str) -> list[float]:
        return self._draws[name]

    def redraw_all(self) -> None:
        for area in self.window.screen.areas:
            area.tag_redraw()

    def close(self) -> None:
        for space_type, handle, region_type in self._handlers:
            space_type.draw_handler_remove(handle, region_type)
        self._handlers.clear()


def find(words: list[Word], text: str, after: Word | None = None) -> Word | None:
    """The first word reading `text` (case-insensitive, trailing punctuation ignored), below `after`."""
    wanted = text.lower()
    for word in words:
        if word.text.lower().strip(".,:;|") == wanted and (after is None or word.rect.y > after.rect.y):
            return word
    return None


def phrase(words: list[Word], text: str) -> Word | None:
    """The words of `text` read in a row on one line: a Word spanning them, or None."""
    parts = text.lower().split()
    lines: dict[int, list[Word]] = {}
    for word in words:
        lines.setdefault(round(word.rect.y / 6), []).append(word)
    for line in lines.values():
        line.sort(key=lambda w: w.rect.x)
        texts = [w.text.lower().strip(".,:;|") for w in line]
        for i in range(len(texts) - len(parts) + 1):
            if texts[i:i + len(parts)] == parts:
                first, last = line[i], line[i + len(parts) - 1]
                return Word(text, Rect(first.rect.x, first.rect.y, last.rect.x + last.rect.width - first.rect.x,
                                       max(w.rect.height for w in line[i:i + len(parts)])), first.confidence)
    return None
