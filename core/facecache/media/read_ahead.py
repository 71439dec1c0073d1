"""Frames decoded a few ahead, on a thread of their own, while the caller works on the last one.

FFmpeg's frame threads do not decode ahead of their caller: on an H.264 stream of one slice a frame one of them
does nearly all the decoding, and it waits while the caller converts the last frame to Blender's picture (a
caller that did nothing for 3 ms a frame made the decoding 1.7 ms a frame slower). So a movie's next frames are
decoded on a thread of their own meanwhile (figures: docs/benchmarks.md, *Reading movies*). The order, the
pictures and the errors are the same as reading on the caller's thread: an error is raised where its frame
would have been, after the frames before it.
"""

from __future__ import annotations

import queue
import threading
from typing import Callable, Generic, Iterator, TypeVar

Picture = TypeVar("Picture")

DEPTH = 2  # frames held decoded ahead of the caller (a 4K 4:2:0 frame is 12 MB)
_END = object()


class Stopped(Exception):
    """Raised to a caller still reading when the frames were stopped (their reader was closed)."""


class ReadAhead(Generic[Picture]):
    """`produce(index)` for each of `indices` in order, on one thread, at most DEPTH ahead of the caller.
    Iterate it once; `stop` (also at the end of the iteration, or when it is abandoned early) waits for the
    thread, so whatever `produce` uses may then be closed."""

    def __init__(self, produce: Callable[[int], Picture], indices: list[int], depth: int = DEPTH):
        self._produce = produce
        self._indices = indices
        self._queue: queue.Queue = queue.Queue(depth)
        self._stopping = threading.Event()
        self._thread = threading.Thread(target=self._work, name="facecache-read-ahead", daemon=True)

    def __iter__(self) -> Iterator[tuple[int, Picture]]:
        self._thread.start()
        try:
            while (item := self._next()) is not _END:
                index, picture, error = item
                if error is not None:
                    raise error
                yield index, picture
        finally:
            self.stop()

    def _next(self):
        while True:
            try:
                return self._queue.get(timeout=0.1)  # returns as soon as an item is put
            except queue.Empty:
                if self._stopping.is_set() and not self._thread.is_alive() and self._queue.empty():
                    raise Stopped from None

    def stop(self) -> None:
        self._stopping.set()
        if self._thread.is_alive():
            self._thread.join()

    def _work(self) -> None:
        for index in self._indices:
            if self._stopping.is_set():
                return
            try:
                item = (index, self._produce(index), None)
            except BaseException as error:  # handed to the caller, raised at its frame
                item = (index, None, error)
            if not self._put(item) or item[2] is not None:
                return
        self._put(_END)

    def _put(self, item) -> bool:
        """Hand `item` over once the caller has room for it; False when stopped meanwhile."""
        while not self._stopping.is_set():
            try:
                self._queue.put(item, timeout=0.1)
                return True
            except queue.Full:
                continue
        return False
