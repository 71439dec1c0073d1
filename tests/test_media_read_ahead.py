"""Frames decoded ahead of the caller on a thread of their own: the same frames, in the same order, the same
errors at the same frames, and no thread left decoding once the caller stops or the reader closes."""

import time

import numpy as np
import pytest

from facecache.media.read_ahead import DEPTH, ReadAhead
from facecache.media.reader import MediaError, MediaReader
from footage import frame_number, write_clip


def test_frames_come_in_order_at_most_a_few_ahead_of_the_caller():
    produced = []

    def produce(index):
        produced.append(index)
        return index * 10

    frames = iter(ReadAhead(produce, list(range(20))))
    assert next(frames) == (0, 0)
    # The caller busy with frame 0: the thread decodes ahead meanwhile (however loaded the machine), then waits:
    # DEPTH frames handed over and one more decoded, holding on for room.
    deadline = time.monotonic() + 60
    while len(produced) < 2 + DEPTH and time.monotonic() < deadline:
        time.sleep(0.01)
    time.sleep(0.2)
    assert produced == list(range(2 + DEPTH))
    assert list(frames) == [(index, index * 10) for index in range(1, 20)]


def test_an_error_is_raised_at_its_frame_after_the_frames_before_it_and_nothing_after_is_decoded():
    produced = []

    def produce(index):
        produced.append(index)
        if index == 5:
            raise ValueError("frame 5 is damaged")
        return index

    got = []
    with pytest.raises(ValueError, match="frame 5 is damaged"):
        for index, _ in ReadAhead(produce, list(range(10))):
            got.append(index)
    assert got == [0, 1, 2, 3, 4] and produced == [0, 1, 2, 3, 4, 5]


def test_a_caller_that_stops_early_leaves_no_thread_decoding():
    produced = []
    ahead = ReadAhead(lambda index: produced.append(index) or index, list(range(1000)))
    frames = iter(ahead)
    next(frames)
    frames.close()  # the caller breaks off (a cancelled job)
    assert not ahead._thread.is_alive() and len(produced) <= 2 + DEPTH


def test_a_movie_read_ahead_gives_the_frames_read_one_at_a_time(tmp_path):
    clip = write_clip(tmp_path / "clip.mp4", frames=16, size=(160, 96), codec_options={"g": "5"})
    wanted = [1, 2, 3, 7, 8, 12, 15]  # in order, with jumps over a keyframe
    with MediaReader(clip) as reader:
        ahead = list(reader.frames(wanted))
        alone = [(index, frame) for index in wanted for _, frame in reader.frames([index])]
    assert [index for index, _ in ahead] == wanted and [frame_number(frame) for _, frame in ahead] == wanted
    assert all(np.array_equal(a, b) for (_, a), (_, b) in zip(ahead, alone))


def test_closing_the_reader_while_its_frames_are_read_stops_the_decoding_with_a_message(tmp_path):
    clip = write_clip(tmp_path / "clip.mp4", frames=16, size=(160, 96))
    reader = MediaReader(clip)
    frames = reader.frames(range(16))
    assert frame_number(next(frames)[1]) == 0
    (ahead,) = reader._reading
    reader.close()
    assert not ahead._thread.is_alive()
    with pytest.raises(MediaError, match="was closed while its frames were read"):
        list(frames)
