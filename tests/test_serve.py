"""`python -m facecache.worker --serve`: one engine process answers many requests (ids on every answer),
keeps models and preview sessions warm, lets previews go ahead of a running job, and cancels by message."""

import json
import os
import queue
import subprocess
import sys
import threading
import time

import pytest

pytestmark = pytest.mark.index


class Engine:
    """The test's end of the pipe: requests out, answers sorted by id."""

    def __init__(self):
        self.process = subprocess.Popen([sys.executable, "-m", "facecache.worker", "--serve"], stdin=subprocess.PIPE,
                                        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        self.answers: queue.Queue = queue.Queue()
        self.log: list[dict] = []
        threading.Thread(target=self._read, daemon=True).start()
        self._next = 0

    def _read(self):
        for line in self.process.stdout:
            self.answers.put(json.loads(line))

    def send(self, message: dict) -> int:
        self._next += 1
        message = {"id": self._next, **message}
        self.process.stdin.write(json.dumps(message) + "\n")
        self.process.stdin.flush()
        return message["id"]

    def until(self, predicate, timeout=300) -> dict:
        deadline = time.monotonic() + timeout
        while True:
            message = self.answers.get(timeout=max(0.1, deadline - time.monotonic()))
            self.log.append(message)
            if predicate(message):
                return message

    def final(self, request_id, timeout=300) -> dict:
        return self.until(lambda m: m.get("id") == request_id and m["type"] in ("result", "error"), timeout)

    def close(self):
        self.process.stdin.close()
        return self.process.wait(60)


@pytest.fixture(scope="module")
def clip(tmp_path_factory, portrait_paths):
    from facecache.media.sample_clip import write_sample_clip

    return write_sample_clip(portrait_paths["grace_hopper"], tmp_path_factory.mktemp("clip") / "clip.mp4",
                             frames=40, size=(320, 240))


@pytest.fixture
def engine():
    engine = Engine()
    yield engine
    if engine.process.poll() is None:
        engine.process.kill()


def settings(tmp_path, models_dir, portrait_paths, **extra):
    return {"cache_dir": str(tmp_path / "cache"), "models_dir": str(models_dir), "providers": "cpu",
            "sources": [str(portrait_paths["astronaut"])], "output_form": "overlay", **extra}


def item(clip, tmp_path, start, stop):
    return {"media": str(clip), "start": start, "stop": stop, "out": str(tmp_path / "out")}


def test_one_process_answers_many_requests_with_their_ids(engine, tmp_path, models_dir, portrait_paths, clip):
    first = engine.send({"kind": "swap", "settings": settings(tmp_path, models_dir, portrait_paths),
                         "items": [item(clip, tmp_path, 0, 4)]})
    summary = engine.final(first)["summary"]
    assert (summary["written"], summary["swapped"]) == (4, {str(clip): [0, 1, 2, 3]})
    assert all(m["id"] == first for m in engine.log)
    # a blend change: the frame is recomposited from the cache, one file written, no model runs
    out = tmp_path / "out" / "clip"
    before = {p.name: p.stat().st_mtime_ns for p in out.glob("*.png")}
    preview = engine.send({"kind": "preview", "settings": settings(tmp_path, models_dir, portrait_paths, opacity=0.5),
                           "items": [item(clip, tmp_path, 2, 3)]})
    answer = engine.final(preview)["summary"]
    assert answer["written"] == 1 and sum(answer["inferences"].values()) == 0
    assert answer["faceless"] == {str(clip): []}  # its frame's header read, no folder listed
    after = {p.name: p.stat().st_mtime_ns for p in out.glob("*.png")}
    assert [name for name in after if after[name] != before[name]] == ["000002.png"]
    # a bad request is an answer too, and the session goes on
    bad = engine.send({"kind": "swap", "settings": {"mask_blurr": 1}, "items": []})
    assert "unknown setting" in engine.final(bad)["message"]
    again = engine.send({"kind": "coverage", "settings": settings(tmp_path, models_dir, portrait_paths),
                         "items": [item(clip, tmp_path, 0, 8)]})
    coverage = engine.final(again)["summary"]
    assert coverage["analysed"] == {str(clip): [0, 1, 2, 3]} and coverage["swapped"] == {str(clip): [0, 1, 2, 3]}
    assert coverage["faceless"] == {str(clip): []}  # the overlay form: one size per clip, a face or not
    assert engine.close() == 0  # stdin closed: the session ends


def test_a_preview_goes_ahead_of_a_running_job_and_cancel_is_a_message(engine, tmp_path, models_dir,
                                                                        portrait_paths, clip):
    job = engine.send({"kind": "swap", "settings": settings(tmp_path, models_dir, portrait_paths),
                       "items": [item(clip, tmp_path, 0, 40)]})
    engine.until(lambda m: m.get("id") == job and m["type"] == "progress" and m["done"] >= 1)
    preview = engine.send({"kind": "preview", "settings": settings(tmp_path, models_dir, portrait_paths),
                           "items": [item(clip, tmp_path, 35, 36)]})
    answered = engine.final(preview)
    assert answered["type"] == "result" and answered["summary"]["written"] == 1
    assert not any(m.get("id") == job and m["type"] == "result" for m in engine.log)  # the job still runs
    queued = engine.send({"kind": "swap", "settings": settings(tmp_path, models_dir, portrait_paths),
                          "items": [item(clip, tmp_path, 0, 40)]})
    engine.send({"kind": "cancel", "target": queued})  # waiting behind the running job
    engine.send({"kind": "cancel", "target": job})
    result = engine.final(job)["summary"]
    assert result["cancelled"] and result["written"] < 40
    assert engine.final(queued)["kind"] == "Cancelled"
    assert engine.process.poll() is None  # messages, not signals: the session lives on
    rest = engine.send({"kind": "swap", "settings": settings(tmp_path, models_dir, portrait_paths),
                        "items": [item(clip, tmp_path, 0, 40)]})
    resumed = engine.final(rest)["summary"]
    assert resumed["written"] + resumed["skipped"] == 40 and not resumed["cancelled"]
    assert resumed["skipped"] >= result["written"]  # the frames finished before the cancel were kept


def test_a_request_whose_input_ends_names_the_one_job_mode(tmp_path):
    """The session ends with its input (that is how the add-on ends it), so a request piped in alone is not run;
    its answer says so and names the mode that runs one job from a pipe, which then answers it."""
    request = json.dumps({"id": 3, "kind": "cache_stats", "settings": {"cache_dir": str(tmp_path / "cache")}})
    served = subprocess.run([sys.executable, "-m", "facecache.worker", "--serve"], input=request + "\n",
                            capture_output=True, text=True, timeout=120)
    (answer,) = [json.loads(line) for line in served.stdout.splitlines()]
    assert (answer["id"], answer["type"], answer["kind"]) == (3, "error", "Cancelled")
    assert answer["message"].startswith("cancelled before it started: the engine session ends when its input ends")
    assert "`echo JOB | python -m facecache.worker` (without --serve)" in answer["message"]
    one_job = subprocess.run([sys.executable, "-m", "facecache.worker"], input=request + "\n",
                             capture_output=True, text=True, timeout=120)
    assert one_job.returncode == 0 and json.loads(one_job.stdout.splitlines()[-1])["type"] == "result"
