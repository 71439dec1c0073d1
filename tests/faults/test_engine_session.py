"""The engine session (`python -m facecache.worker --serve`) survives any line: every line that is not a
usable request gets one error answer and the next request is answered; duplicate ids are refused and a
cancel reaches only its target; settings of the wrong type are settings errors (exit code 2), never a
bug's traceback; the session exits when its input ends and, as an orphan, when its client is gone.

The lines that stopped the session or were answered as a bug in round 3 are kept as regular cases; a
bounded fuzz run (hypothesis) sends random lines, each followed by a request that must still be answered."""

from __future__ import annotations

import json
import os
import queue
import signal
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings as hypothesis_settings, strategies as st

from facecache.serve import Server

EXIT_BUG = 1


class Session:
    """A real Server on a real pipe, in this process: lines in, answers collected."""

    def __init__(self):
        read_end, self._write_end = os.pipe()
        self.answers: queue.Queue = queue.Queue()
        self.server = Server(os.fdopen(read_end, "rb"), self._collect)
        self.thread = threading.Thread(target=self.server.serve, daemon=True)
        self.thread.start()
        self._sentinels = 0

    def _collect(self, message: dict) -> bool:
        self.answers.put(json.loads(json.dumps(message, default=str)))  # as the pipe would carry it
        return True

    def send_line(self, line: bytes | str) -> None:
        data = line.encode() if isinstance(line, str) else line
        os.write(self._write_end, data + b"\n")

    def send(self, message: dict) -> None:
        self.send_line(json.dumps(message))

    def answers_until(self, request_id, timeout: float = 60) -> list[dict]:
        """Every answer up to and including `request_id`'s final one."""
        seen = []
        deadline = time.monotonic() + timeout
        while True:
            message = self.answers.get(timeout=max(0.1, deadline - time.monotonic()))
            seen.append(message)
            if message.get("id") == request_id and message.get("type") in ("result", "error"):
                return seen

    def after(self, line: bytes | str, cache_dir: Path) -> list[dict]:
        """The answers a line brings, up to a job request sent after it (jobs run in order, and quick
        requests go ahead of them, so by then the line's request has been answered)."""
        self._sentinels += 1
        sentinel = f"sentinel-{self._sentinels}"
        self.send_line(line)
        self.send({"id": sentinel, "kind": "cache_prune", "settings": {"cache_dir": str(cache_dir)}})
        answers = self.answers_until(sentinel)
        assert answers[-1]["type"] == "result", answers[-1]
        return answers[:-1]

    def close(self) -> None:
        os.close(self._write_end)
        self.thread.join(30)


@pytest.fixture
def session(tmp_path, monkeypatch):
    # Settings left out fall back to these, never to the user's own folders.
    monkeypatch.setenv("FACECACHE_DIR", str(tmp_path / "default-cache"))
    monkeypatch.setenv("FACECACHE_MODELS", str(tmp_path / "no-models"))
    session = Session()
    yield session
    session.close()


def final_answers(answers: list[dict]) -> list[dict]:
    return [m for m in answers if m.get("type") in ("result", "error")]


# Lines that stopped the session or were answered as a bug (exit code 1, a traceback) in round 3,
# and their neighbours.
STOPPED_THE_SESSION = [
    '{"id": [1, 2], "kind": "cache_stats"}',
    '{"id": {"a": 1}, "kind": "cache_stats"}',
    '{"id": 1.5, "kind": "cache_stats"}',
    '{"id": true, "kind": "cache_stats"}',
    '{"id": 9, "kind": "cancel", "target": {"id": 7}}',
    '{"id": 9, "kind": "cancel", "target": [7]}',
    '{"id": 9, "kind": ["swap"]}',
    '{"id": 9, "kind": {"a": 1}}',
    "[" * 100_000 + "]" * 100_000,
    '{"id": 1, "x": ' + "[" * 100_000 + "]" * 100_000 + "}",
    b"\xff\xfe{\"id\": 1}",
    "not json",
    '"a string"',
    "[1, 2]",
    "null",
    '{"kind": "cache_stats"}',
    '{"id": 3, "kind": "cache_stats", "settings": [1]}',
]


@pytest.mark.parametrize("line", STOPPED_THE_SESSION, ids=lambda line: repr(line[:40]))
def test_a_bad_line_is_answered_once_and_the_session_goes_on(session, tmp_path, line):
    answers = session.after(line, tmp_path / "cache")
    (answer,) = final_answers(answers)
    assert answer["type"] == "error" and answer["exit_code"] == 2, answer
    assert "\n" not in answer["message"] and len(answer["message"]) < 400


WRONG_SETTINGS = [
    ({"max_bytes": float("inf")}, "cache size cap"),
    ({"max_bytes": 1e400}, "cache size cap"),
    ({"max_bytes": 1.5}, "cache size cap"),
    ({"max_bytes": True}, "cache size cap"),
    ({"cache_dir": 5}, "cache dir"),
    ({"cache_dir": "a\u0000b"}, "cache dir"),
    ({"models_dir": ["x"]}, "models dir"),
    ({"source_face": 1.5}, "source face"),
    ({"source_face": "1"}, "source face"),
    ({"limit_yaw": "no"}, "limit yaw"),
    ({"limit_yaw": 0}, "limit yaw"),
    ({"mask_blur": float("nan")}, "mask blur"),
    ({"opacity": True}, "opacity"),
    ({"max_yaw": float("-inf")}, "max yaw"),
    ({"detector": ["mtcnn"]}, "detector"),
    ({"swapper": {"a": 1}}, "swapper"),
    ({"sources": "face.png"}, "sources"),
    ({"sources": [5]}, "sources"),
    ({"references": {"a": "b"}}, "references"),
    ({"position": [0.5]}, "position"),
    ({"position": [0.5, float("inf")]}, "position"),
    ({"position": "0.5,0.5"}, "position"),
]


@pytest.mark.parametrize("values, named", WRONG_SETTINGS, ids=lambda v: repr(v)[:40])
def test_a_setting_of_the_wrong_type_is_a_settings_error(session, tmp_path, values, named):
    request = {"id": 1, "kind": "cache_stats", "settings": {"cache_dir": str(tmp_path / "cache"), **values}}
    line = json.dumps(request)  # Infinity and NaN as Python's json writes them (and reads them back)
    (answer,) = final_answers(session.after(line, tmp_path / "cache"))
    assert (answer["type"], answer["kind"], answer["exit_code"]) == ("error", "SettingsError", 2), answer
    assert named in answer["message"]


@pytest.mark.parametrize("job, named", [
    ({"kind": "import_models", "folder": 5}, "folder"),
    ({"kind": "import_models", "folder": "a\u0000b"}, "folder"),
    ({"kind": "install_models", "models": "default"}, "models"),
    ({"kind": "install_models", "models": [1]}, "models"),
    ({"kind": "coverage", "items": [{"media": 5, "start": 0, "stop": 1}]}, "media"),
    ({"kind": "coverage", "items": [{"media": "x.mp4", "start": 0, "stop": 10**15}]}, "frames"),
    ({"kind": "coverage", "items": [{"media": "x.mp4", "start": -5, "stop": 1}]}, "frames"),
    ({"kind": "coverage", "items": "x.mp4"}, "items"),
])
def test_job_fields_of_the_wrong_type_are_bad_input(session, tmp_path, job, named):
    request = {"id": 1, "settings": {"cache_dir": str(tmp_path / "cache")}, **job}
    (answer,) = final_answers(session.after(json.dumps(request), tmp_path / "cache"))
    assert answer["type"] == "error" and answer["exit_code"] == 2, answer
    assert named in answer["message"]


def test_a_cancel_of_no_request_is_answered_with_its_own_id(session, tmp_path):
    (answer,) = final_answers(session.after('{"id": "c1", "kind": "cancel", "target": 77}', tmp_path / "cache"))
    assert answer["id"] == "c1" and answer["type"] == "error" and "77" in answer["message"]


def test_an_overlong_line_is_refused_and_the_next_is_read(session, tmp_path, monkeypatch):
    monkeypatch.setattr("facecache.serve.MAX_REQUEST_BYTES", 1000)
    (answer,) = final_answers(session.after('{"id": 1, "pad": "' + "x" * 5000 + '"}', tmp_path / "cache"))
    assert answer["type"] == "error" and "longer than 1000 bytes" in answer["message"]


# -- bounded fuzzing of the protocol -----------------------------------------------------------------

SETTING_NAMES = ("max_bytes", "providers", "detector", "landmarker", "recognizer", "swapper", "selector",
                 "sources", "source_face", "position", "references", "reference_threshold", "mask_blur",
                 "color_match", "opacity", "output_form", "limit_yaw", "max_yaw", "nonsense")
# Kinds a random request may name: not install_models (it would download), and jobs find no models.
FUZZ_KINDS = ("analyze", "swap", "update", "preview", "coverage", "import_models", "cache_stats", "cache_prune",
              "cancel", "bogus")

scalars = st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=12)
junk = st.recursive(scalars, lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner,
                                                                                           max_size=3), max_leaves=6)
not_text = st.recursive(st.none() | st.booleans() | st.integers() | st.floats(),
                        lambda inner: st.lists(inner, max_size=2), max_leaves=4)


def requests(folder: Path):
    """Random requests whose paths never leave `folder` (a text path may only be read, never written)."""
    cache = st.just(str(folder / "cache")) | not_text | st.text(max_size=5).map(lambda t: t + "\0")
    places = st.just(str(folder / "out")) | not_text
    settings = st.fixed_dictionaries({}, optional={"cache_dir": cache, "models_dir": cache,
                                                   **{name: junk for name in SETTING_NAMES}})
    item = st.fixed_dictionaries({}, optional={"media": junk, "start": junk | st.integers(-2, 5),
                                               "stop": junk | st.integers(-2, 10**13), "out": places})
    return st.fixed_dictionaries({}, optional={
        "id": junk, "kind": st.sampled_from(FUZZ_KINDS) | not_text, "target": junk, "settings": settings | not_text,
        "items": st.lists(item, max_size=2) | not_text, "folder": st.just(str(folder / "none")) | not_text,
        "models": not_text})


def lines(folder: Path):
    deep = st.integers(1, 200_000).map(lambda n: "[" * n + "]" * n)
    raw = st.binary(max_size=64).map(lambda b: b.replace(b"\n", b" "))
    return st.one_of(requests(folder).map(json.dumps), raw, deep, junk.map(json.dumps))


def test_fuzzed_lines_are_each_answered_once_and_never_as_a_bug(session, tmp_path):
    @hypothesis_settings(max_examples=150, deadline=None, derandomize=True, database=None,
                         suppress_health_check=list(HealthCheck))
    @given(line=lines(tmp_path))
    def one_line(line):
        data = line.encode() if isinstance(line, str) else line
        answers = session.after(data, tmp_path / "cache")
        finals = final_answers(answers)
        assert not [a for a in answers if a.get("exit_code") == EXIT_BUG], answers
        assert len(finals) == (1 if data.strip() else 0), (data[:200], answers)

    one_line()
    assert not any(p.name not in ("cache", "default-cache", "no-models", "out") for p in tmp_path.iterdir())


# -- ids, cancels and the end of the session, in a real process -----------------------------------------

class Process:
    def __init__(self, tmp_path: Path, env: dict | None = None):
        self.process = subprocess.Popen([sys.executable, "-m", "facecache.worker", "--serve"], stdin=subprocess.PIPE,
                                        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
                                        env={**os.environ, "FACECACHE_DIR": str(tmp_path / "c"), **(env or {})})
        self.answers: queue.Queue = queue.Queue()
        threading.Thread(target=lambda: [self.answers.put(json.loads(line)) for line in self.process.stdout],
                         daemon=True).start()

    def send(self, message: dict) -> None:
        self.process.stdin.write(json.dumps(message) + "\n")
        self.process.stdin.flush()

    def until(self, predicate, timeout: float = 300) -> list[dict]:
        seen, deadline = [], time.monotonic() + timeout
        while True:
            seen.append(self.answers.get(timeout=max(0.1, deadline - time.monotonic())))
            if predicate(seen[-1]):
                return seen


@pytest.fixture(scope="module")
def long_clip(tmp_path_factory, portrait_paths):
    from facecache.media.sample_clip import write_sample_clip

    return write_sample_clip(portrait_paths["grace_hopper"], tmp_path_factory.mktemp("clip") / "clip.mp4",
                             frames=40, size=(320, 240))


@pytest.mark.index
def test_a_duplicate_id_is_refused_and_a_cancel_reaches_only_its_target(tmp_path, models_dir, portrait_paths,
                                                                         long_clip):
    engine = Process(tmp_path)
    try:
        swap = {"kind": "swap", "settings": {"cache_dir": str(tmp_path / "cache"), "models_dir": str(models_dir),
                                             "providers": "cpu", "sources": [str(portrait_paths["astronaut"])]},
                "items": [{"media": str(long_clip), "start": 0, "stop": 40, "out": str(tmp_path / "out")}]}
        engine.send({"id": 7, **swap})
        engine.until(lambda m: m.get("id") == 7 and m["type"] == "progress" and m["done"] >= 1)
        engine.send({"id": 7, **swap, "items": [{**swap["items"][0], "out": str(tmp_path / "other")}]})
        refused = engine.until(lambda m: m.get("refused_id") == 7)[-1]
        assert refused["id"] is None and refused["exit_code"] == 2 and "already used" in refused["message"]
        engine.send({"id": "stop", "kind": "cancel", "target": 7})
        finals = engine.until(lambda m: m.get("id") == 7 and m["type"] in ("result", "error"))
        assert finals[-1]["type"] == "result" and finals[-1]["summary"]["cancelled"]  # the running job stopped
        assert finals[-1]["summary"]["written"] < 40
        engine.send({"id": 8, "kind": "cache_stats", "settings": {"cache_dir": str(tmp_path / "cache")}})
        answered = engine.until(lambda m: m.get("id") == 8)
        assert not [m for m in answered if m.get("id") == 7]  # nothing else was ever answered as 7
        assert not (tmp_path / "other").exists()  # the refused request did nothing
        engine.process.stdin.close()
        assert engine.process.wait(60) == 0
    finally:
        engine.process.kill()


def test_the_session_exits_when_its_input_ends_with_a_request_queued(tmp_path):
    engine = Process(tmp_path)
    try:
        for number in range(3):
            engine.send({"id": number, "kind": "cache_stats", "settings": {"cache_dir": str(tmp_path / "cache")}})
        engine.send({"id": "bad", "kind": "cancel", "target": {"x": 1}})
        engine.process.stdin.close()
        assert engine.process.wait(60) == 0
    finally:
        engine.process.kill()


ORPHANING_CLIENT = textwrap.dedent("""
    import subprocess, sys, time
    # The engine session's client: it starts the session, then a helper that inherits the write end
    # of the session's stdin (as a child Blender starts might), and dies without closing anything.
    engine = subprocess.Popen([sys.executable, "-m", "facecache.worker", "--serve"], stdin=subprocess.PIPE,
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    holder = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"], pass_fds=[engine.stdin.fileno()],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    engine.stdin.write(b'{"id": 1, "kind": "cache_stats", "settings": {"cache_dir": "' + sys.argv[1].encode() + b'"}}\\n')
    engine.stdin.flush()
    print(engine.pid, holder.pid, flush=True)
    time.sleep(600)
""")


@pytest.mark.skipif(sys.platform != "linux", reason="reads the process state from /proc")
def test_an_orphaned_session_exits_within_seconds(tmp_path):
    client = subprocess.Popen([sys.executable, "-c", ORPHANING_CLIENT, str(tmp_path / "cache")],
                              stdout=subprocess.PIPE, text=True)
    engine_pid, holder_pid = (int(v) for v in client.stdout.readline().split())
    try:
        time.sleep(1)
        assert _alive(engine_pid)
        client.kill()  # the client is gone; its stdin pipe to the session stays open in the holder
        client.wait()
        assert _ends_within(engine_pid, 20), "the orphaned session still runs 20 s after its client died"
    finally:
        _kill(engine_pid, holder_pid)


# The same client, but the session's imports are held until the client is gone (a `sitecustomize` on the
# session's path blocks the import of `facecache.engine` until the client has died), as a loaded machine makes
# them last: the session must still know its caller, from when it started.
SLOW_IMPORTS = textwrap.dedent("""
    import importlib.abc, os, sys, time

    class HoldEngine(importlib.abc.MetaPathFinder):
        def find_spec(self, name, path=None, target=None):
            if name == "facecache.engine":
                open(os.environ["IMPORT_REACHED"], "w").close()
                while os.path.exists(os.environ["IMPORT_HELD"]):
                    time.sleep(0.05)
            return None

    sys.meta_path.insert(0, HoldEngine())
""")


@pytest.mark.skipif(sys.platform != "linux", reason="reads the process state from /proc")
def test_a_session_orphaned_while_it_starts_exits_within_seconds(tmp_path):
    (tmp_path / "site").mkdir()
    (tmp_path / "site" / "sitecustomize.py").write_text(SLOW_IMPORTS)
    reached, held = tmp_path / "reached", tmp_path / "held"
    held.touch()
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path / "site"), os.environ.get("PYTHONPATH", "")]),
           "IMPORT_REACHED": str(reached), "IMPORT_HELD": str(held)}
    client = subprocess.Popen([sys.executable, "-c", ORPHANING_CLIENT, str(tmp_path / "cache")],
                              stdout=subprocess.PIPE, text=True, env=env)
    engine_pid, holder_pid = (int(v) for v in client.stdout.readline().split())
    try:
        # No deadline: held there, the session either reaches the engine's import or dies, however busy the machine.
        while not reached.exists() and _alive(engine_pid):
            time.sleep(0.05)
        assert reached.exists() and _alive(engine_pid)
        client.kill()  # gone while the session still imports
        client.wait()
        held.unlink()  # the imports go on
        # bounds a hang: the session notices within a second or two, and ends at most 10 s later
        assert _ends_within(engine_pid, 60), "the session orphaned while it started still runs"
    finally:
        _kill(engine_pid, holder_pid)


def _ends_within(pid: int, seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while _alive(pid) and time.monotonic() < deadline:
        time.sleep(0.2)
    return not _alive(pid)


def _kill(*pids: int) -> None:
    for pid in pids:
        if _alive(pid):
            os.kill(pid, signal.SIGKILL)


def _alive(pid: int) -> bool:
    """True while the process runs (an exited child of a dead parent is reaped by init, or a zombie)."""
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False
