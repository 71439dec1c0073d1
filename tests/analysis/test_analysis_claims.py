"""Analysis claims: a segment another process is analysing is left for later, then read from
the cache; a claim whose holder stalls expires. Real MTCNN on a small clip; the other process
is played by this test holding the claim and writing the segment's records itself."""

import threading
import time

import pytest

from facecache.media.identity import media_identity
from facecache.media.movie import stream_tags
from facecache.media.reader import MediaReader, decoder_id_for
from facecache.store.claims import ClaimBook

from test_analyzer import _clip, analyzer

pytestmark = pytest.mark.index  # real weights and portraits come from the package index

FRAMES = 192  # three segments


@pytest.fixture
def clip_and_reference(tmp_path, models_dir, portraits):
    clip = _clip(tmp_path / "clip.mp4", portraits["grace_hopper"], FRAMES)
    reference = analyzer(tmp_path / "reference", models_dir)
    faces = {r.index: len(r.record.faces) for r in reference.analyze_media(clip)}
    return clip, faces, reference.inferences.detect


def _hold_segment(cache_dir, models_dir, clip, segment, ttl):
    """Claim a segment's analysis as another process would; returns (its analyzer, the claim)."""
    other = analyzer(cache_dir, models_dir)
    group = other.open_segment(media_identity(clip, other.cache), decoder_id_for(clip, other.picture_rules, lambda: stream_tags(clip)), segment)
    claim = ClaimBook(other.cache, ttl).try_claim(other.namespace.key, group.key)
    assert claim is not None
    return other, claim


def _keep_alive(claim) -> threading.Event:
    """Renew a held claim in the background, as a live holder does, until the event is set: the test
    must not depend on how fast this machine analyses the other segments (a 60 s ttl ran out once
    on a busy machine and the waiting job took the segment over)."""
    stop = threading.Event()

    def renew():
        while not stop.wait(0.2):
            claim.keep_alive()

    threading.Thread(target=renew, daemon=True).start()
    return stop


def _analyse_in_thread(job, clip):
    progress, result = [], {}
    thread = threading.Thread(target=lambda: result.update(records=job.analyze_media(clip, progress=lambda d, t: progress.append(d))))
    thread.start()
    return thread, progress, result


def test_a_claimed_segment_is_left_for_later_and_read_from_the_cache(tmp_path, models_dir, clip_and_reference):
    clip, faces, reference_detects = clip_and_reference
    other, claim = _hold_segment(tmp_path / "c", models_dir, clip, 1, ttl=3)
    holding = _keep_alive(claim)
    job = analyzer(tmp_path / "c", models_dir)
    job.claim_poll_seconds = 0.05
    thread, progress, result = _analyse_in_thread(job, clip)
    deadline = time.monotonic() + 600  # only a bound on a hung test, not a measure of speed
    while (not progress or progress[-1] < 128) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert progress[-1] == 128, "segments 0 and 2 first, while segment 1 is claimed"
    runs = job.inferences.detect
    time.sleep(0.3)
    assert thread.is_alive() and job.inferences.detect == runs  # waiting for segment 1, not analysing it

    # The holder analyses segment 1 and lets go; the waiting job then finds it in the cache.
    group = other.open_segment(media_identity(clip, other.cache), decoder_id_for(clip, other.picture_rules, lambda: stream_tags(clip)), 1)
    with MediaReader(clip) as reader:
        for index, frame in reader.frames(range(64, 128)):
            other.ensure(group, index, frame, other.stages())
    group.flush()
    holding.set()
    claim.release()
    thread.join(600)
    assert progress[-1] == FRAMES
    assert {r.index: len(r.record.faces) for r in result["records"]} == faces
    assert job.inferences.detect + other.inferences.detect == reference_detects  # each frame analysed once
    assert job.inferences.detect < reference_detects


def test_the_claim_of_a_stalled_holder_expires_and_is_taken_over(tmp_path, models_dir, clip_and_reference):
    clip, faces, reference_detects = clip_and_reference
    _other, _claim = _hold_segment(tmp_path / "c", models_dir, clip, 1, ttl=1.5)  # never renewed
    job = analyzer(tmp_path / "c", models_dir)
    job.claim_poll_seconds = 0.05
    records = job.analyze_media(clip)
    assert {r.index: len(r.record.faces) for r in records} == faces
    assert job.inferences.detect == reference_detects
