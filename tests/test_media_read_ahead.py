"""Frames read ahead on a helper thread (media/read_ahead.py): the same items in the same order, errors
where they happened, a bounded lead, and a clean stop when the consumer stops early; and a clip's frames
decoded ahead equal to those decoded in line (held together: the reader hands out no buffer it reuses)."""

from __future__ import annotations

import threading

import numpy as np
import pytest

from facecache.media.read_ahead import read_ahead
from facecache.media.reader import MediaError, MediaReader
from footage import write_clip


class Source:
    """Numbers 0..count-1 from a generator that notes what was taken, on which thread, and its closing."""

    def __init__(self, count: int, fail_at: int | None = None) -> None:
        self.count, self.fail_at = count, fail_at
        self.taken: list[int] = []
        self.threads: set[str] = set()
        self.closed = threading.Event()

    def items(self):
        try:
            for number in range(self.count):
                if number == self.fail_at:
                    raise MediaError(f"item {number} is damaged")
                self.taken.append(number)
                self.threads.add(threading.current_thread().name)
                yield number
        finally:
            self.closed.set()


def test_the_items_come_in_order_from_a_helper_thread():
    source = Source(50)
    assert list(read_ahead(source.items())) == list(range(50))
    assert source.threads == {"facecache-read-ahead"} and source.closed.is_set()


def test_an_error_is_raised_after_the_items_before_it():
    source = Source(10, fail_at=6)
    got = []
    with pytest.raises(MediaError, match="item 6 is damaged"):
        for item in read_ahead(source.items()):
            got.append(item)
    assert got == [0, 1, 2, 3, 4, 5]


def test_the_lead_is_bounded_and_an_early_stop_ends_the_thread_and_closes_the_source():
    source = Source(1000)
    ahead = read_ahead(source.items(), depth=2)
    assert next(ahead) == 0
    for _ in range(100):  # let the helper fill the queue
        if len(source.taken) >= 4:
            break
        threading.Event().wait(0.01)
    assert len(source.taken) <= 4  # the one handed out, two in the queue, one waiting to be put
    before = {thread.name for thread in threading.enumerate()}
    assert "facecache-read-ahead" in before
    ahead.close()
    assert source.closed.is_set() and len(source.taken) <= 5
    assert "facecache-read-ahead" not in {thread.name for thread in threading.enumerate()}


def test_a_clips_frames_decoded_ahead_are_the_frames_decoded_in_line(tmp_path):
    clip = write_clip(tmp_path / "clip.mp4", frames=20)
    with MediaReader(clip) as reader:
        in_line = [(index, frame.copy()) for index, frame in reader.frames(range(3, 17))]
        ahead = list(read_ahead(reader.frames(range(3, 17))))
    assert [index for index, _ in ahead] == list(range(3, 17))
    assert all(np.array_equal(a, b) for (_, a), (_, b) in zip(in_line, ahead))
