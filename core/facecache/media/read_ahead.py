"""Frames decoded on a helper thread a few frames ahead of the one that uses them.

A warm run (the analysis cached, a new source face) decodes each frame on the main thread, then swaps
its faces there: with one face, the decode was a third of the main thread's time, the core beside it
idle meanwhile. Read ahead, the decode of the next frames overlaps the swap of this one. Only a plain
decode may run ahead: the frames come out the same, in the same order.

    for index, frame in read_ahead(reader.frames(indices)):
        ...
"""

from __future__ import annotations

import queue
import threading
from typing import Iterator, TypeVar

Item = TypeVar("Item")

# Frames held ahead: enough to cover one slow decode, few enough for 4K frames (25 MB each).
DEPTH = 2
_DONE = object()


def read_ahead(items: Iterator[Item], depth: int = DEPTH) -> Iterator[Item]:
    """`items`, each taken from `items` on a helper thread up to `depth` ahead of the consumer; an
    error is raised where the item it stopped would have come. Closing the result early (a cancel, a
    failed write) stops the thread and closes `items` there before returning."""
    ready: queue.Queue = queue.Queue(depth)
    stop = threading.Event()

    def produce() -> None:
        try:
            for item in items:
                ready.put((item, None))
                if stop.is_set():
                    return
            ready.put((_DONE, None))
        except BaseException as error:  # handed to the consumer, raised there
            ready.put((_DONE, error))
        finally:
            close = getattr(items, "close", None)
            if close is not None:
                close()

    thread = threading.Thread(target=produce, name="facecache-read-ahead", daemon=True)
    thread.start()
    try:
        while True:
            item, error = ready.get()
            if error is not None:
                raise error
            if item is _DONE:
                return
            yield item
    finally:
        stop.set()
        while thread.is_alive():  # a producer blocked on a full queue sees the stop once it can put
            try:
                ready.get_nowait()
            except queue.Empty:
                pass
            thread.join(0.01)
