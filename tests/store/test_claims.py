"""Claims on local disk: several at once, all or none; the retry order of work_through."""

import threading

from facecache.store.cache import FaceCache
from facecache.store.claims import ClaimBook, work_through

A, B, C = "a" * 32, "b" * 32, "c" * 32


def test_claims_are_taken_all_or_none(tmp_path):
    mine, theirs = ClaimBook(FaceCache(tmp_path / "c")), ClaimBook(FaceCache(tmp_path / "c"))
    held = theirs.try_claim(B, C)
    assert mine.try_claim_all((A, C), (B, C)) is None
    assert not mine.path(A, C).exists()  # the first one was given back
    held.release()
    both = mine.try_claim_all((A, C), (B, C))
    assert both is not None and theirs.try_claim(A, C) is None and theirs.try_claim(B, C) is None
    both.release()
    assert not list(mine.folder.glob("*.claim"))


def test_work_through_retries_held_items_after_the_others():
    attempts, free = [], {1: False}
    retries = []

    def attempt(item):
        attempts.append(item)
        if item == 1 and not free[1]:
            free[1] = len([a for a in attempts if a == 1]) >= 3  # the holder lets go after a while
            return False
        return True

    work_through([0, 1, 2], attempt, poll_seconds=0.01, before_retry=lambda: retries.append(len(attempts)))
    assert attempts[:3] == [0, 1, 2] and attempts[3:] == [1, 1, 1] and len(retries) == 3


def test_work_through_stops_when_cancelled():
    cancel = threading.Event()
    attempts = []

    def attempt(item):
        attempts.append(item)
        cancel.set()
        return False  # held forever: only cancel ends the wait

    work_through([0, 1], attempt, poll_seconds=5, cancel=cancel)
    assert attempts == [0]
